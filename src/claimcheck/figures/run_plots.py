"""The figures of one measured run, drawn in the one style of
:mod:`claimcheck.figures.figstyle`: a run against its roofline, the serving gate, the lanes
timeline, the wave of times to first token; with the published figures the protocol
replays.

Each function takes plain rows (dicts) and returns a matplotlib figure; saving is the
caller's (``figstyle.save``). Axes carry units; every figure gets a source line.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from claimcheck.figures import figstyle as fs
from claimcheck.figures.plot_common import spaced_labels


def measured_figure(points: list[dict[str, Any]], title: str, source: str,
                    headline: str, claims: list[dict[str, Any]] | None = None,
                    queued: list[dict[str, Any]] | None = None,
                    drafts: bool = False) -> Any:
    """One run's steps by the metric its protocol answers with, against the roofline.

    ``points``: per step ``streams``, ``headline`` (aggregate tok/s by the protocol's
    headline definition, named by ``headline``), ``headline_per_stream``, ``e2e`` (end to
    end aggregate, or None when the headline is end to end), ``roofline_tok_s`` and
    ``roofline_per_stream_tok_s`` (eta = 1). ``claims``: the published figures the protocol
    replays (``streams``, ``aggregate_tok_s``, ``per_stream_tok_s``, ``same``: by the
    headline's own definition; ``card``: drawn with a marker of its card, named in the
    legend). ``queued``: levels that asked for more streams than ran at once (``streams``,
    ``running``, ``e2e``, ``roofline_tok_s`` at the streams running), drawn hollow by end
    to end only; those with ``why`` "waited" ran at most ``running`` of their streams at once
    inside the engine (no queue in the server: ``most_decoding_at_once``), drawn hollow
    with no max-num-seqs line. With three or more levels, one step each, a dashed line holds the
    fewest streams' share of the line (η); a level leaving it by more than
    :data:`ETA_HOLDS` has bent and is labelled with its η. Left: aggregate; right: per
    stream; both against streams, or against context per stream (``context``) when every
    step runs the same streams. ``drafts``: the engine drafts, so a step keeps more than one
    token per stream and the plain line (one kept) is drawn as that, with no η read off it."""
    fig, (a1, a2) = fs.new(9.6, 3.9, ncols=2)
    by_context = len({r["streams"] for r in points}) == 1 and len(
        {r.get("context") for r in points}) > 1
    xk = "context" if by_context else "streams"
    s = sorted(points, key=lambda r: r[xk])
    b = [r[xk] for r in s]
    style = "o-" if len(set(b)) == len(b) else "o"  # one step per level: a line joins them
    a1.plot(b, [r["headline"] for r in s], style, color=fs.PALETTE[0],
            label=f"measured: {headline}")
    a2.plot(b, [r["headline_per_stream"] for r in s], style, color=fs.PALETTE[0],
            label=f"measured: {headline}")
    if any(r.get("e2e") for r in s):
        a1.plot(b, [r.get("e2e") for r in s], marker="s", ls="--" if "-" in style else "none",
                color=fs.PALETTE[1], label="measured: end to end (prefill, ramp, tail in)")
    roofed = all(r.get("roofline_tok_s") for r in s)
    if roofed:
        a1.plot(b, [r["roofline_tok_s"] for r in s], color=fs.MUTED, lw=1.2, marker="_",
                ms=14, mew=1.6, ls="-" if "-" in style else "none",
                label="plain roofline, η = 1 (weights as the engine reported)"
                + (", one token kept per stream per step" if drafts else ""))
        a2.plot(b, [r["roofline_per_stream_tok_s"] for r in s], color=fs.MUTED, lw=1.2,
                marker="_", ms=14, mew=1.6, ls="-" if "-" in style else "none",
                label="plain roofline, η = 1")
    if roofed and "-" in style and len(s) >= 3 and not by_context and not drafts:
        eta0 = s[0]["headline"] / s[0]["roofline_tok_s"]
        a1.plot(b, [eta0 * r["roofline_tok_s"] for r in s], color=fs.PALETTE[0], lw=0.9,
                ls=(0, (4, 2)), alpha=0.7,
                label=f"the line × η at {plural_streams(s[0]['streams'])} ({eta0:.0%}): "
                      "where the step keeps its share")
        for r in s:  # the levels that leave the fewest streams' share, with theirs
            if abs(r["headline"] / r["roofline_tok_s"] - eta0) <= ETA_HOLDS:
                continue
            a1.annotate(f"η {r['headline'] / r['roofline_tok_s']:.0%}",
                        (r[xk], r["headline"]), xytext=(-4, 5), textcoords="offset points",
                        ha="right", va="bottom", fontsize=6, color=fs.PALETTE[0])
    q = sorted(queued or [], key=lambda r: r["streams"])
    waited = [r for r in q if r.get("why") == "waited"]  # inside the engine, not queued
    slotq = [r for r in q if r.get("why") != "waited"]
    if waited:
        a1.plot([r["streams"] for r in waited], [r["e2e"] for r in waited], marker="s",
                ls="none", mfc="white", color=fs.PALETTE[1],
                label=f"never all decoding: end to end (at most "
                      f"{max(r['running'] for r in waited):,} at once, the rest wait "
                      "for a first token)")
    if slotq:
        running = slotq[0]["running"]
        a1.plot([r["streams"] for r in slotq], [r["e2e"] for r in slotq], marker="s",
                ls="none", mfc="white", color=fs.PALETTE[1],
                label=f"queued: end to end ({running:,} streams run at once, the rest wait)")
        qr = [(r["streams"], r["roofline_tok_s"]) for r in slotq if r.get("roofline_tok_s")]
        if qr:
            a1.plot(*zip(*qr, strict=True), color=fs.MUTED, lw=0, marker="_", ms=14,
                    mew=1.6, alpha=0.6)
        for ax in (a1, a2):
            ax.axvline(running * 1.12, color=fs.PALETTE[1], lw=0.8, ls=":")
        a1.annotate(f"queued past {running:,} (the server's\nmax-num-seqs; line at "
                    f"{running:,} running)", (running * 1.12, 0.03),
                    xycoords=("data", "axes fraction"), xytext=(3, 0),
                    textcoords="offset points", fontsize=6, color=fs.PALETTE[1])
    claim_markers(a1, a2, claims, xk)
    xs = sorted(set(b) | {r["streams"] for r in q}
                | {c[xk] for c in claims or [] if c.get(xk)})
    for ax in (a1, a2):
        ax.set_xscale("log", base=2)
        ticks = sorted(set(b) | {r["streams"] for r in q})  # the steps' own levels
        ax.set_xticks(ticks, spaced_labels(ticks))
        ax.minorticks_off()
        ax.set_xlim(min(xs) / 1.4, max(xs) * 1.4)
        ax.set_xlabel("context per stream, tokens (prompt + output; "
                      f"{plural_streams(s[0]['streams'])})" if by_context
                      else "concurrent streams")
        ax.set_ylim(bottom=0)
    a1.set_ylabel("aggregate, tok/s summed over the streams")
    a2.set_ylabel("per stream, tok/s")
    a1.set_title("Aggregate", loc="left")
    a2.set_title("What each stream sees", loc="left")
    a2.legend(*a1.get_legend_handles_labels(), loc="upper left",
              bbox_to_anchor=(1.02, 1.0), fontsize=6.5)
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.source_line(fig, source)
    return fig


ETA_HOLDS = 0.02
"""A level whose η is within this of the fewest streams' keeps its share (unlabelled)."""
CARD_MARKERS = ("D", "v", "P", "X", "<", ">", "*")
"""Markers of published figures, one per card in name order."""


def card_words(card: str) -> str:
    """A card registry name as a legend prints it (RTX3090, B200)."""
    return card.upper()


def claim_markers(a1: Any, a2: Any | None, claims: list[dict[str, Any]] | None,
                  xk: str = "streams", key: str = "aggregate_tok_s") -> None:
    """The published figures a protocol replays on other axes than their own card's: one
    marker per card, filled when by the headline's own definition, hollow otherwise, each
    (card, definition) named in the legend (the card in capitals)."""
    cs = [c for c in claims or [] if c.get(xk)]
    cards = sorted({c["card"] for c in cs})
    for i, card in enumerate(cards):
        for same in (True, False):
            g = [c for c in cs if c["card"] == card and bool(c.get("same")) == same]
            if not g:
                continue
            kw = dict(marker=CARD_MARKERS[i % len(CARD_MARKERS)], s=24, zorder=4,
                      edgecolors=fs.PALETTE[2], linewidths=0.9,
                      facecolors=fs.PALETTE[2] if same else "white")
            lab = (f"published on {card_words(card)} (its own card), "
                   + ("same definition" if same else "other definitions"))
            a1.scatter([c[xk] for c in g], [c[key] for c in g], label=lab, **kw)
            if a2 is not None:
                a2.scatter([c[xk] for c in g], [c["per_stream_tok_s"] for c in g], **kw)


def plural_streams(n: int) -> str:
    """'1 stream' or 'N streams'."""
    return "1 stream" if n == 1 else f"{n} streams"


def gate_figure(levels: list[Any], max_num_seqs: int | None, verdict: str, title: str,
                source: str, claims: list[dict[str, Any]] | None = None) -> Any:
    """The serving gate: median end-to-end aggregate per concurrency level with min-max bars
    (reference levels hollow), the roofline at each level (eta = 1), the server's
    max-num-seqs marked and the published figures the protocol replays. ``levels``:
    :class:`claimcheck.readings.gate.Level` rows."""
    fig, ax = fs.new(7.0, 4.2)
    x = [lv.streams for lv in levels]
    med = [lv.median_tok_s for lv in levels]
    err = [[m - lv.min_tok_s for m, lv in zip(med, levels, strict=True)],
           [lv.max_tok_s - m for m, lv in zip(med, levels, strict=True)]]
    ax.errorbar(x, med, yerr=err, fmt="-", color=fs.PALETTE[0], lw=1.2, capsize=3,
                label="measured: median end to end over repeats, min-max bars")
    for lv in levels:
        ax.scatter([lv.streams], [lv.median_tok_s], s=28, zorder=4,
                   facecolors="none" if lv.reference else fs.PALETTE[0],
                   edgecolors=fs.PALETTE[0])
    ax.scatter([], [], s=28, facecolors="none", edgecolors=fs.PALETTE[0],
               label="reference level (not counted by the gate)")
    roof = [(lv.streams, lv.roofline_tok_s) for lv in levels if lv.roofline_tok_s]
    if roof:
        ax.plot(*zip(*roof, strict=True), color=fs.MUTED, lw=1.2, marker="_", ms=14,
                mew=1.6, label="roofline at eta = 1, the level's streams and context")
    if max_num_seqs:
        ax.axvline(max_num_seqs, color=fs.PALETTE[1], ls="--", lw=1.0,
                   label=f"server max-num-seqs = {max_num_seqs}")
    claim_markers(ax, None, claims)
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [str(v) for v in x])
    ax.minorticks_off()
    ax.set_xlabel("concurrency (streams, independent requests; one wave per level)")
    ax.set_ylabel("aggregate, tok/s (all output tokens / wall time)")
    top = max([*med, *(r for _, r in roof), *(c["aggregate_tok_s"] for c in claims or [])])
    ax.set_ylim(0, top * 1.1)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=6.5)
    ax.set_title(verdict, fontsize=7, loc="left")
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.source_line(fig, source)
    return fig


def lanes_figure(lanes: list[tuple[float, float, float]], token_times: list[float],
                 stats: str, title: str, source: str, roofline_tok_s: float | None = None,
                 claims: list[dict[str, Any]] | None = None) -> Any:
    """Lanes of one prompt on one time axis (s from the first send): top, each lane's wait
    (send to first token) and decode (first to last token); bottom, tokens arriving per
    1-s bin (all lanes) against the plain roofline at the step (eta = 1) and the published
    figures the protocol replays (each a line at its aggregate, labelled with its id).
    ``lanes``: (send, first token, last token) per lane."""
    fig, (a1, a2) = _two_rows()
    t0 = min(s for s, _, _ in lanes)
    for i, (s, f, last) in enumerate(sorted(lanes, key=lambda x: x[1])):
        a1.plot([s - t0, f - t0], [i, i], color=fs.MUTED, lw=3, solid_capstyle="butt")
        a1.plot([f - t0, last - t0], [i, i], color=fs.PALETTE[0], lw=3,
                solid_capstyle="butt")
    a1.plot([], [], color=fs.MUTED, lw=3, label="send to first token (prefill, wait)")
    a1.plot([], [], color=fs.PALETTE[0], lw=3, label="first to last token (decode)")
    a1.set_ylabel("lane")
    a1.set_yticks(range(len(lanes)), [str(i + 1) for i in range(len(lanes))])
    a1.set_ylim(-0.7, len(lanes) + 1.3)  # room for the legend above the lanes
    a1.legend(loc="upper left", fontsize=6.5, ncol=2)
    a1.set_title(stats, fontsize=6.5, loc="left")
    end = max(last for _, _, last in lanes) - t0
    bins = np.arange(0.0, np.ceil(end) + 1.0, 1.0)
    counts, _ = np.histogram([t - t0 for t in token_times], bins=bins)
    a2.bar(bins[:-1], counts, width=1.0, align="edge", color=fs.PALETTE[0], alpha=0.8,
           label="measured: tokens per 1-s bin, all lanes")
    top = max(counts) if len(counts) else 1
    if roofline_tok_s:
        a2.axhline(roofline_tok_s, color=fs.INK, lw=1.4, ls="--", zorder=5)
        a2.annotate(f"plain roofline, η = 1, this step: {roofline_tok_s:,.0f} tok/s",
                    (0.01, roofline_tok_s), xycoords=("axes fraction", "data"),
                    xytext=(0, -2), textcoords="offset points", fontsize=6.5, va="top",
                    color=fs.INK, zorder=6)
        top = max(top, roofline_tok_s)
    for c in sorted(claims or [], key=lambda c: c["aggregate_tok_s"]):
        a2.axhline(c["aggregate_tok_s"], color=fs.PALETTE[2], lw=0.8,
                   ls="-" if c.get("same") else ":", zorder=4)
        a2.annotate(f"{c['id']} ({c['card']}): {c['aggregate_tok_s']:,.0f}",
                    (1.0, c["aggregate_tok_s"]), xycoords=("axes fraction", "data"),
                    xytext=(3, 0), textcoords="offset points", fontsize=6, va="center",
                    color=fs.PALETTE[2])
        top = max(top, c["aggregate_tok_s"])
    for same, lab in ((True, "published, same definition"),
                      (False, "published, other definitions")):
        if any(bool(c.get("same")) == same for c in claims or []):
            a2.plot([], [], color=fs.PALETTE[2], lw=0.8, ls="-" if same else ":",
                    label=lab + " (their own cards, labelled right)")
    a2.set_ylim(0, top * 1.3)
    if claims:
        a2.legend(loc="upper left", fontsize=6, ncol=2)
    a2.set_xlabel("time from the first send, s")
    a2.set_ylabel("tok/s: tokens per 1-s bin\n(all lanes; last bin partial)")
    for ax in (a1, a2):
        ax.set_xlim(0, np.ceil(end))
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.source_line(fig, source)
    return fig


def _two_rows() -> tuple[Any, tuple[Any, Any]]:
    """Two stacked axes in the one style (figstyle.new has no rows argument)."""
    fs.apply()
    fig, axes = plt.subplots(2, 1, figsize=(7.0, 4.6), sharex=True,
                             gridspec_kw={"height_ratios": [1.2, 1.0]})
    return fig, tuple(axes)


def wave_figure(series: list[dict[str, Any]], title: str, source: str) -> Any:
    """Time to first token (ms) against the request's place in its wave (1 = sent first),
    one colour per step, every repeat drawn. ``series``: ``label`` (the step in words),
    ``repeat``, ``ttft_ms`` (in send order)."""
    fig, ax = fs.new(7.4, 4.2)
    labels = list(dict.fromkeys(s["label"] for s in series))
    colour = fs.colours(labels)
    for s in series:
        x = range(1, len(s["ttft_ms"]) + 1)
        first = s["repeat"] == min(t["repeat"] for t in series if t["label"] == s["label"])
        ax.plot(x, s["ttft_ms"], marker="o", ms=2.2, lw=0.8, color=colour[s["label"]],
                label=s["label"] if first else None)
    n = sorted({len(t["ttft_ms"]) for t in series})
    ticks = [1, *n]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xlim(0, max(n) + 1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("the request's place in its wave (1 = sent first; requests = streams)")
    ax.set_ylabel("time to first token, ms")
    reps = len({t["repeat"] for t in series})
    ax.legend(title=f"one line per repeat ({reps} per step)", title_fontsize=6.5,
              loc="upper left", fontsize=6.5)
    ax.set_title("Each request's time to first token, in the order the wave was sent",
                 loc="left")
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.source_line(fig, source)
    return fig
