"""The project's figures, drawn in the one style of :mod:`claimcheck.report.figstyle`.

Each function takes plain rows (dicts) and returns a matplotlib figure; saving is the
caller's (``figstyle.save``). Axes carry units; every figure gets a source line.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from claimcheck.core import roofline as rl
from claimcheck.report import figstyle as fs

PER_STREAM_DIAGONALS = (10, 25, 50, 100, 200, 400)


def _diagonals(ax, xlim: tuple[float, float], ylim: tuple[float, float],
               speeds=PER_STREAM_DIAGONALS) -> None:
    """Lines of constant per-stream speed (aggregate = v x streams), labelled where they
    leave the plotted area."""
    x = np.geomspace(xlim[0], xlim[1], 50)
    for v in speeds:
        ax.plot(x, v * x, color=fs.GRID, lw=0.9, zorder=0)
        xe = min(xlim[1], ylim[1] / v) / 1.08
        if xe * v < ylim[0] or xe < xlim[0]:
            continue
        ax.annotate(f"{v}/stream", (xe, v * xe), fontsize=6, color=fs.MUTED,
                    ha="right", va="bottom", xytext=(-2, 1), textcoords="offset points")


CLAIM_MAP_ASSUMED = ("streams", "streams_running", "card", "context_tokens", "prompt_tokens",
                     "output_tokens", "quantization", "checkpoint")
"""Fields whose assumption moves a claim's point or its roofline: ringed on the claim map."""


def claim_map(claims: list[dict[str, Any]], measured: list[dict[str, Any]] | None = None,
              source: str = "", verdicts: list[str] | None = None) -> Any:
    """Every claim: streams sharing it vs aggregate tok/s (log-log), colour = verdict (in
    the order of ``verdicts``; "no verdict" when a row has none), marker = card, hollow =
    reproduction or control, a dashed ring = a field that places it assumed by the registry;
    diagonals are constant per-stream speed."""
    fig, ax = fs.new(7.4, 5.0)
    kinds = list(verdicts or [])
    kinds += sorted({c.get("verdict") or "no verdict" for c in claims} - set(kinds))
    kinds = [k for k in kinds if any((c.get("verdict") or "no verdict") == k for c in claims)]
    colour = fs.colours(kinds)
    cards = sorted({c["card"] for c in claims} | {m["card"] for m in measured or []})
    marker = {c: fs.MARKERS[i % len(fs.MARKERS)] for i, c in enumerate(cards)}

    def streams(c: dict[str, Any]) -> float:
        return c.get("streams_running") or c["streams"]

    xs = [streams(c) for c in claims] + [m["streams"] for m in measured or []]
    ys = [c["aggregate_tok_s"] for c in claims] + [m["aggregate_tok_s"] for m in measured or []]
    # room right of the data for the diagonals' labels (never under a marker)
    xlim, ylim = (0.7, max(xs) * 4.0), (min(ys) / 1.6, max(ys) * 1.8)
    _diagonals(ax, xlim, ylim)
    # jitter identical (streams, value) points a little so each claim stays visible
    seen: dict[tuple[float, float], int] = {}
    ringed = 0
    for c in sorted(claims, key=lambda c: c["id"]):
        key = (streams(c), round(c["aggregate_tok_s"], 1))
        k = seen[key] = seen.get(key, -1) + 1
        x = streams(c) * (1.04 ** k)
        col = colour[c.get("verdict") or "no verdict"]
        hollow = c["kind"] != "claim"
        ax.scatter([x], [c["aggregate_tok_s"]], s=22, marker=marker[c["card"]],
                   facecolors="none" if hollow else col, edgecolors=col, linewidths=0.9,
                   zorder=3)
        assumed = set(filter(None, (c.get("assumed_fields") or "").split(",")))
        if assumed & set(CLAIM_MAP_ASSUMED):
            ringed += 1
            ax.scatter([x], [c["aggregate_tok_s"]], s=80, marker="o", facecolors="none",
                       edgecolors=fs.MUTED, linewidths=0.7, linestyle=(0, (2, 1.5)), zorder=2)
    for m in measured or []:  # under the claims: a measured point never covers a claim
        ax.scatter([m["streams"]], [m["aggregate_tok_s"]], s=40, marker=marker[m["card"]],
                   facecolors="none", edgecolors=fs.INK, linewidths=1.0, zorder=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("streams sharing the aggregate (those running at once where the registry "
                  "says; log scale)")
    ax.set_ylabel("aggregate throughput, tok/s summed over streams (log scale)")
    ax.set_title("Every throughput figure and its verdict: streams vs aggregate (grey "
                 "diagonals: tok/s per stream)", loc="left")
    handles = [ax.scatter([], [], s=22, color=colour[k], marker="o", label=k) for k in kinds]
    handles += [ax.scatter([], [], s=22, facecolors="none", edgecolors=fs.INK,
                           marker=marker[c], label=c) for c in cards]
    handles.append(ax.scatter([], [], s=22, facecolors="none", edgecolors=fs.MUTED,
                              marker="o", label="hollow: reproduction or control"))
    if ringed:
        handles.append(ax.scatter([], [], s=80, facecolors="none", edgecolors=fs.MUTED,
                                  linewidths=0.7, linestyle=(0, (2, 1.5)), marker="o",
                                  label="dashed ring: streams, card, context\nor weights "
                                  "assumed by the registry"))
    if measured:
        handles.append(ax.scatter([], [], s=40, facecolors="none", edgecolors=fs.INK,
                                  linewidths=1.0, marker="s",
                                  label="this project, measured (large, drawn under)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1)
    fs.source_line(fig, source)
    return fig


def roofline_figure(curves: dict[str, list[rl.Point]], bends: dict[str, float],
                    wall: int | None, claims: list[dict[str, Any]], title: str,
                    source: str, measured: list[dict[str, Any]] | None = None) -> Any:
    """Left: aggregate vs streams per eta, with memory and compute terms; right: per-stream.

    ``curves`` maps a label (e.g. 'eta = 0.79') to roofline points; claims are plotted
    at their stream count and aggregate (left) / per-stream speed (right)."""
    fig, (a1, a2) = fs.new(9.0, 4.0, ncols=2)
    top = max(p.aggregate_tok_s for pts in curves.values() for p in pts)
    top = max([top] + [c["aggregate_tok_s"] for c in claims]
              + [m["aggregate_tok_s"] for m in measured or []]) * 1.15
    for i, (label, pts) in enumerate(curves.items()):
        col = fs.PALETTE[i]
        b = [p.streams for p in pts]
        a1.plot(b, [p.aggregate_tok_s for p in pts], color=col, lw=1.8, label=label)
        if any(p.compute_ms > p.memory_ms for p in pts):  # else it lies under the curve
            a1.plot(b, [p.streams / (p.memory_ms / 1e3) for p in pts], color=col, lw=0.8,
                    ls="--", label=f"{label}: memory term alone")
        a2.plot(b, [p.per_stream_tok_s for p in pts], color=col, lw=1.8, label=label)
        bend = bends.get(label)
        if bend and bend < b[-1]:
            for ax in (a1, a2):
                ax.axvline(bend, color=col, lw=0.7, ls=":")
            a1.annotate(f"bend {bend:.0f}", (bend, 0.02), xycoords=("data", "axes fraction"),
                        fontsize=6.5, color=col, rotation=90, ha="right", va="bottom")
    pts0 = next(iter(curves.values()))
    b = [p.streams for p in pts0]
    compute = [p.streams / (p.compute_ms / 1e3) for p in pts0]
    if min(compute) < top:  # drawn only where it shows on the axes
        a1.plot(b, compute, color=fs.INK, lw=0.8, ls="-.", label="compute term alone")
    if wall:
        for ax in (a1, a2):
            ax.axvline(wall, color=fs.PALETTE[3], lw=1.0)
        a2.annotate(f"memory wall: {wall} streams", (wall, 0.97),
                    xycoords=("data", "axes fraction"), fontsize=6.5, color=fs.PALETTE[3],
                    rotation=90, ha="right", va="top")
    for c in claims:
        hollow = c.get("kind") != "claim"
        kw = dict(s=18, marker="o", edgecolors=fs.INK, linewidths=0.8, zorder=4,
                  facecolors="none" if hollow else fs.PALETTE[4])
        a1.scatter([c["streams"]], [c["aggregate_tok_s"]], **kw)
        a2.scatter([c["streams"]], [c["per_stream_tok_s"]], **kw)
    for m in measured or []:  # under the claims
        a1.scatter([m["streams"]], [m["aggregate_tok_s"]], marker="s", s=26,
                   facecolors="none", edgecolors=fs.INK, linewidths=1.1, zorder=3)
        a2.scatter([m["streams"]], [m["per_stream_tok_s"]], marker="s", s=26,
                   facecolors="none", edgecolors=fs.INK, linewidths=1.1, zorder=3)
    if measured:
        a1.scatter([], [], marker="s", s=26, facecolors="none", edgecolors=fs.INK,
                   linewidths=1.1, label="this project, measured (streams x 1000 / median "
                   "TPOT)")
    if any(c.get("kind") == "claim" for c in claims):
        a1.scatter([], [], s=18, facecolors=fs.PALETTE[4], edgecolors=fs.INK,
                   label="published claims (this card)")
    if any(c.get("kind") != "claim" for c in claims):
        a1.scatter([], [], s=18, facecolors="none", edgecolors=fs.INK,
                   label="reproductions and controls (this card)")
    a1.set_xlabel("concurrent streams")
    a1.set_ylabel("aggregate decode throughput, tok/s")
    a2.set_xlabel("concurrent streams")
    a2.set_ylabel("per-stream decode speed, tok/s")
    a1.set_ylim(0, top)
    a2.set_ylim(bottom=0)
    a1.set_title("Aggregate (sum over streams)", loc="left")
    a2.set_title("What each stream sees", loc="left")
    # outside the axes, right of the per-stream panel: never on top of data
    a2.legend(*a1.get_legend_handles_labels(), loc="upper left", bbox_to_anchor=(1.02, 1.0),
              fontsize=6.5)
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.source_line(fig, source)
    return fig


def measured_figure(points: list[dict[str, Any]], title: str, source: str,
                    headline: str, claims: list[dict[str, Any]] | None = None,
                    queued: list[dict[str, Any]] | None = None) -> Any:
    """One run's steps by the metric its protocol answers with, against the roofline.

    ``points``: per step ``streams``, ``headline`` (aggregate tok/s by the protocol's
    headline definition, named by ``headline``), ``headline_per_stream``, ``e2e`` (end to
    end aggregate, or None when the headline is end to end), ``roofline_tok_s`` and
    ``roofline_per_stream_tok_s`` (eta = 1). ``claims``: the published figures the protocol
    replays (``streams``, ``aggregate_tok_s``, ``per_stream_tok_s``, ``same``: by the
    headline's own definition; ``card``: drawn with a marker of its card, named in the
    legend). ``queued``: levels that asked for more streams than ran at once (``streams``,
    ``running``, ``e2e``, ``roofline_tok_s`` at the streams running), drawn hollow by end
    to end only. With three or more levels, one step each, a dashed line holds the
    fewest streams' share of the line (η); a level leaving it by more than
    :data:`ETA_HOLDS` has bent and is labelled with its η. Left: aggregate; right: per
    stream; both against streams, or against context per stream (``context``) when every
    step runs the same streams."""
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
                label="plain roofline, η = 1 (weights as the engine reported)")
        a2.plot(b, [r["roofline_per_stream_tok_s"] for r in s], color=fs.MUTED, lw=1.2,
                marker="_", ms=14, mew=1.6, ls="-" if "-" in style else "none",
                label="plain roofline, η = 1")
    if roofed and "-" in style and len(s) >= 3 and not by_context:
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
    if q:
        running = q[0]["running"]
        a1.plot([r["streams"] for r in q], [r["e2e"] for r in q], marker="s", ls="none",
                mfc="white", color=fs.PALETTE[1],
                label=f"queued: end to end ({running:,} streams run at once, the rest wait)")
        qr = [(r["streams"], r["roofline_tok_s"]) for r in q if r.get("roofline_tok_s")]
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
        ax.set_xticks(ticks, [f"{x:,}" for x in ticks])
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
    :class:`claimcheck.core.gate.Level` rows."""
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


RATIO_TICKS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def verdict_figure(rows: list[dict[str, Any]], kinds: list[str], source: str) -> Any:
    """Each published figure's ratio to its own card's plain roofline (left) and to the
    prediction of a model calibrated on its own source (right), one row per verdict kind,
    log scale, 1 marked. ``rows``: dicts with ``verdict``, ``claim_over_roofline`` and
    (where the verdicts table has it) ``claim_over_source``, as floats or None; with
    ``floor_over_roofline`` / ``floor_over_source`` (the no-overlap floor over the ceiling)
    each point sits on a grey bar from its floor to its ceiling (1): the band its physics
    allows."""
    fig, (a1, a2) = fs.new(13.0, 1.2 + 0.42 * max(len(kinds), 3), ncols=2)
    colour = fs.colours(kinds)
    marker = {k: fs.MARKERS[i % len(fs.MARKERS)] for i, k in enumerate(kinds)}
    have_source = any(r.get("claim_over_source") for r in rows)
    for ax, key, fkey, label in (
            (a1, "claim_over_roofline", "floor_over_roofline", "claim ÷ plain roofline "
             "ceiling of its card (η = 1; ratio, log scale)"),
            (a2, "claim_over_source", "floor_over_source", "claim ÷ its source-calibrated "
             "model's ceiling (ratio, log scale)")):
        pts = [(r[key], kinds.index(r["verdict"]), r.get(fkey)) for r in rows
               if r.get(key) and r["verdict"] in kinds]
        rng = np.random.default_rng(0)  # fixed jitter: the same rows give the same figure
        for x, y, floor in sorted(pts, key=lambda p: (p[0], p[1])):
            k = kinds[y]
            yy = len(kinds) - 1 - y + rng.uniform(-0.22, 0.22)
            if floor:
                ax.plot([floor, 1.0], [yy, yy], color=fs.MUTED, alpha=0.3, lw=3.0,
                        solid_capstyle="butt", zorder=2)
            ax.scatter([x], [yy], s=18,
                       marker=marker[k], facecolors="none", edgecolors=colour[k],
                       linewidths=0.9, zorder=3)
        ax.axvline(1.0, color=fs.INK, lw=0.8, zorder=1)
        ax.set_xscale("log")
        xs = [x for x, _, _ in pts] + [f for _, _, f in pts if f] or [1.0]
        lo, hi = min(min(xs), 0.8) / 1.3, max(max(xs), 1.25) * 1.3
        ax.set_xlim(lo, hi)
        ticks = [t for t in RATIO_TICKS if lo <= t <= hi]
        ax.set_xticks(ticks, [f"{t:g}×" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel(label)
        ax.set_yticks(range(len(kinds)), [
            f"{k} ({sum(1 for r in rows if r['verdict'] == k and r.get(key))})"
            for k in reversed(kinds)])
        ax.set_ylim(-0.6, len(kinds) - 0.4)
        ax.grid(axis="y", visible=False)
        if not pts:
            ax.annotate("no figure has this ratio\nin the verdicts table yet", (0.03, 0.5),
                        xycoords="axes fraction", ha="left", va="center", fontsize=8,
                        color=fs.MUTED, bbox={"facecolor": "white", "edgecolor": "none"})
    a1.set_title("Against the card's plain roofline", loc="left")
    a2.set_title("Against its own source's model" + ("" if have_source else " (none yet)"),
                 loc="left")
    a2.tick_params(labelleft=True)
    fig.suptitle("Each published figure on its band (grey: no-overlap floor to overlap "
                 "ceiling), by verdict (count in brackets)", x=0.0, ha="left", fontsize=10)
    fig.tight_layout()
    fs.source_line(fig, source)
    return fig


FORMAT_ORDER = ("bf16", "fp8")
"""Weight formats in colour order (others after them, alphabetically)."""


def format_colours(fmts: list[str]) -> dict[str, str]:
    """One palette colour per weight format, BF16 and FP8 first, the same in every figure."""
    known = [f for f in FORMAT_ORDER if f in fmts] + sorted(set(fmts) - set(FORMAT_ORDER))
    order = list(FORMAT_ORDER) + [f for f in known if f not in FORMAT_ORDER]
    return {f: fs.PALETTE[order.index(f)] for f in known}


def _fmt(f: str) -> str:
    from claimcheck.report.stepframe import fmt_name
    return fmt_name(f)


def _pow2_axis(ax, lo: float, hi: float) -> None:
    ticks = [2 ** i for i in range(0, 12) if lo <= 2 ** i <= hi]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(lo / 1.25, hi * 1.25)


def decode_lines_figure(panels: dict[int, list[Any]], crossover: dict[str, float],
                        title: str, caption: str, source: str) -> Any:
    """Decode against each format's bandwidth line, one panel per context per stream
    (log-log): the line (η = 1, solid), the format's η band (shaded between its lowest and
    highest η times the line), the measured levels (markers) and, where it falls on the
    axis, the streams at which the format's state read and written passes its weights
    (dotted, labelled). ``panels``: context -> :class:`claimcheck.report.h200_fig.FormatPanel`
    rows; ``crossover``: format -> streams."""
    ctxs = sorted(panels)
    fig, axes = fs.new(4.6 * max(len(ctxs), 1), 4.4, ncols=max(len(ctxs), 1))
    axes = list(np.atleast_1d(axes))
    if not ctxs:
        axes[0].axis("off")
        axes[0].text(0, 0.5, "no step where every stream decodes at once", fontsize=8)
    colour = format_colours(sorted({p.fmt for ps in panels.values() for p in ps}))
    top = max((v for ps in panels.values() for p in ps for _, v in p.line), default=1.0)
    bottom = min((v for ps in panels.values() for p in ps for _, v, _ in p.points),
                 default=1.0)
    for ax, ctx in zip(axes, ctxs, strict=False):
        hi = max(n for p in panels[ctx] for n, _ in p.line)
        for p in panels[ctx]:
            col, name = colour[p.fmt], _fmt(p.fmt)
            x = [n for n, _ in p.line]
            y = np.array([v for _, v in p.line])
            lo_eta, hi_eta = p.eta_band
            ax.plot(x, y, color=col, lw=1.4, label=f"{name}: bandwidth line (η = 1)")
            ax.fill_between(x, lo_eta * y, hi_eta * y, color=col, alpha=0.22, lw=0,
                            label=f"{name}: η {lo_eta:.0%}–{hi_eta:.0%} of its line "
                            "(dashed edges)")
            ax.plot([n for n, _, _ in p.points], [v for _, v, _ in p.points], "o",
                    color=col, ms=4.5, mec="white", mew=0.6, zorder=4,
                    label=f"{name}: measured, all streams decoding")
            ax.plot(x, lo_eta * y, color=col, lw=0.6, ls="--")
            ax.plot(x, hi_eta * y, color=col, lw=0.6, ls="--")
        marks = sorted((c, f) for f, c in crossover.items()
                       if c <= hi and f in {p.fmt for p in panels[ctx]})
        for c, f in marks:
            ax.axvline(c, color=colour[f], lw=0.9, ls=":")
        if marks:  # one label for all: the crossovers lie close together
            ax.annotate("recurrent state read and written\n= weights at "
                        + ", ".join(f"{c:,.0f} ({_fmt(f)})" for c, f in marks)
                        + " streams", (marks[0][0], bottom / 1.4), xytext=(-3, 0),
                        textcoords="offset points", ha="right", va="bottom", fontsize=6.5,
                        color=fs.INK)
        _pow2_axis(ax, 1, hi)
        ax.set_yscale("log")
        ax.set_ylim(bottom / 1.6, top * 1.5)
        ax.set_xlabel("concurrent streams, all decoding (log scale)")
        ax.set_title(f"{ctx:,} tokens of context per stream", loc="left")
    axes[0].set_ylabel("decode, tok/s summed over the streams (log scale)")
    handles, labels = axes[0].get_legend_handles_labels()
    axes[0].legend(handles, labels, loc="upper left", fontsize=6.5)
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.caption_and_source(fig, caption, source)
    return fig


LONG_READINGS = (("decode", "all streams decoding", "o", "-"),
                 ("aggregate_mean_tpot_tok_s", "streams × 1000 / mean TPOT", "s", "--"),
                 ("e2e_output_tok_s", "end to end", "^", ":"))
"""The long-prompt figure's three readings of the same steps: row key, words, marker,
line style."""


def long_prompts_figure(rows: list[dict[str, Any]], title: str, caption: str,
                        source: str) -> Any:
    """Long prompts with a second wave: left, each format's three readings of the same
    steps (tok/s summed) against streams; right, all streams decoding's η against short
    prompts' η at the same streams and format. ``rows``: the long-prompt finding's levels
    (``weight_format``, ``streams``, ``decode``, ``aggregate_mean_tpot_tok_s``,
    ``e2e_output_tok_s``, ``share``, ``short_share``)."""
    fig, (a1, a2) = fs.new(9.4, 4.0, ncols=2)
    colour = format_colours(sorted({r["weight_format"] for r in rows}))
    for fm, col in colour.items():
        g = sorted((r for r in rows if r["weight_format"] == fm), key=lambda r: r["streams"])
        x = [r["streams"] for r in g]
        for key, words, marker, ls in LONG_READINGS:
            a1.plot(x, [r[key] for r in g], marker=marker, ls=ls, color=col, ms=4.5,
                    lw=1.2, label=f"{_fmt(fm)}: {words}")
        a2.plot(x, [r["share"] for r in g], marker="o", ls="-", color=col, ms=4.5, lw=1.2,
                label=f"{_fmt(fm)}, long prompts: all streams decoding")
        sx = [(r["streams"], r["short_share"]) for r in g
              if r.get("short_share") == r.get("short_share") and r.get("short_share")]
        if sx:
            a2.plot(*zip(*sx, strict=True), marker="o", ls="--", color=col, ms=5, lw=1.0,
                    mfc="white", label=f"{_fmt(fm)}, short prompts, same streams")
    xs = [r["streams"] for r in rows]
    for ax in (a1, a2):
        _pow2_axis(ax, min(xs), max(xs))
        ax.set_xlabel("concurrent streams (independent requests)")
    a1.set_ylim(bottom=0)
    a1.set_ylabel("tok/s summed over the streams")
    a1.set_title("Three readings of the same steps", loc="left")
    a2.set_ylim(0, 1)
    a2.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    a2.set_ylabel("η: all streams decoding ÷ bandwidth line")
    a2.set_title("All streams decoding, long vs short prompts", loc="left")
    a1.legend(loc="upper left", fontsize=6.5)
    a2.legend(loc="lower left", fontsize=6.5)
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.caption_and_source(fig, caption, source)
    return fig


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
