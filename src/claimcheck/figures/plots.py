"""The claims and roofline figures, drawn in the one style of
:mod:`claimcheck.figures.figstyle`: the claim map, a roofline preset, the verdict figure.

Each function takes plain rows (dicts) and returns a matplotlib figure; saving is the
caller's (``figstyle.save``). Axes carry units; every figure gets a source line. The run
figures are :mod:`claimcheck.figures.run_plots`, the decode and long-prompt figures
:mod:`claimcheck.figures.decode_plots`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from claimcheck.physics import roofline as rl
from claimcheck.figures import figstyle as fs

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


RATIO_TICKS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def kind_label(rows: list[dict[str, Any]], kind: str, key: str) -> str:
    """A verdict kind's tick label: the verdict table's count of that kind, then how many of
    them have the panel's ratio (``key``) where fewer do ("not comparable (6; 1 drawn)")."""
    n = sum(1 for r in rows if r["verdict"] == kind)
    drawn = sum(1 for r in rows if r["verdict"] == kind and r.get(key))
    return f"{kind} ({n})" if drawn == n else f"{kind} ({n}; {drawn} drawn)"


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
            (a2, "claim_over_source", "floor_over_source", "claim ÷ the model it was read "
             "against: carried from this card, else its source's (ratio, log scale)")):
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
        ax.set_yticks(range(len(kinds)), [kind_label(rows, k, key) for k in reversed(kinds)])
        ax.set_ylim(-0.6, len(kinds) - 0.4)
        ax.grid(axis="y", visible=False)
        if not pts:
            ax.annotate("no figure has this ratio\nin the verdicts table yet", (0.03, 0.5),
                        xycoords="axes fraction", ha="left", va="center", fontsize=8,
                        color=fs.MUTED, bbox={"facecolor": "white", "edgecolor": "none"})
    a1.set_title("Against the card's plain roofline", loc="left")
    a2.set_title("Against its model" + ("" if have_source else " (none yet)"), loc="left")
    a2.tick_params(labelleft=True)
    fig.suptitle("Each published figure on its band (grey: no-overlap floor to overlap "
                 "ceiling), by verdict (in brackets: the verdict table's count, and how many "
                 "of them the panel can draw where fewer)", x=0.0, ha="left", fontsize=10)
    fig.tight_layout()
    fs.source_line(fig, source)
    return fig
