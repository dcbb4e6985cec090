"""The figures of a card's decode findings, drawn in the one style of
:mod:`claimcheck.figures.figstyle`: decode against each format's bandwidth line, one panel
per context, and what long prompts cost.

Each function takes plain rows (dicts) and returns a matplotlib figure; saving is the
caller's (``figstyle.save``). Axes carry units (tok/s summed over the streams, streams);
every figure gets a source line.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.lines import Line2D

from claimcheck.figures import figstyle as fs
from claimcheck.figures.plot_common import eta_axis, format_colours, pow2_axis
from claimcheck.findings.stepframe import KERNEL_SEP, fmt_name


def decode_lines_figure(panels: dict[int, list[Any]], crossover: dict[str, float],
                        title: str, caption: str, source: str) -> Any:
    """Decode against each format's bandwidth line, one panel per context per stream
    (log-log): the line (η = 1, solid), the format's η band (shaded between its lowest and
    highest η times the line), the measured levels (markers) and, where it falls on the
    axis, the streams at which the format's state read and written passes its weights
    (dotted, labelled). ``panels``: context -> :class:`claimcheck.figures.h200_fig.FormatPanel`
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
    # room above the lines for the legend's three rows per format (log scale)
    headroom = {1: 1.5, 2: 1.5, 3: 10.0, 4: 150.0}.get(len(colour), 400.0)
    for ax, ctx in zip(axes, ctxs, strict=False):
        hi = max(n for p in panels[ctx] for n, _ in p.line)
        for p in panels[ctx]:
            col, name = colour[p.fmt], fmt_name(p.fmt)
            x = [n for n, _ in p.line]
            y = np.array([v for _, v in p.line])
            lo_eta, hi_eta = p.eta_band
            base = p.fmt.partition(KERNEL_SEP)[0]
            if base == p.fmt or base not in {q.fmt for q in panels[ctx]}:
                ax.plot(x, y, color=col, lw=1.4, label=f"{name}: bandwidth line (η = 1)")
            # a format on another kernel moves its format's bytes: its line is the format's
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
                        + ", ".join(f"{c:,.0f} ({fmt_name(f)})" for c, f in marks)
                        + " streams", (marks[0][0], bottom / 1.4), xytext=(-3, 0),
                        textcoords="offset points", ha="right", va="bottom", fontsize=6.5,
                        color=fs.INK)
        pow2_axis(ax, 1, hi)
        ax.set_yscale("log")
        ax.set_ylim(bottom / 1.6, top * headroom)
        ax.set_xlabel("concurrent streams, all decoding (log scale)")
        ax.set_title(f"{ctx:,} tokens of context per stream", loc="left")
    axes[0].set_ylabel("decode, tok/s summed over the streams (log scale)")
    handles, labels = axes[0].get_legend_handles_labels()
    # in the last panel: its context's lines are the lowest, so the rows clear them there
    axes[-1].legend(handles, labels, loc="upper left", fontsize=6.5,
                    title="both panels" if len(ctxs) > 1 else None, title_fontsize=6.5)
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.caption_and_source(fig, caption, source)
    return fig


LONG_READINGS = (("decode", "all streams decoding", "o", "-"),
                 ("streams_x_1000_over_mean_tpot_tok_s", "streams × 1000 / mean TPOT", "s", "--"),
                 ("e2e_aggregate_tok_s", "end to end", "^", ":"))
"""The long-prompt figure's three readings of the same steps: row key, words, marker,
line style."""
LONG_STYLE = {"marker": "o", "ls": "-", "ms": 4.5, "lw": 1.2}
SHORT_STYLE = {"marker": "o", "ls": "--", "ms": 5, "lw": 1.0, "mfc": "white"}
"""The right panel's long-prompt and short-prompt lines, drawn and keyed alike."""


def long_prompts_figure(rows: list[dict[str, Any]], title: str, caption: str,
                        source: str) -> Any:
    """Long prompts with a second wave: left, each format's three readings of the same
    steps (tok/s summed) against streams; right, all streams decoding's η against short
    prompts' η at the same streams and format. ``rows``: the long-prompt finding's levels
    (``weight_format``, ``streams``, ``decode``, ``streams_x_1000_over_mean_tpot``,
    ``e2e_aggregate_tok_s``, ``share``, ``short_share``)."""
    fig, (a1, a2) = fs.new(9.4, 4.0, ncols=2)
    colour = format_colours(sorted({r["weight_format"] for r in rows}))
    for fm, col in colour.items():
        g = sorted((r for r in rows if r["weight_format"] == fm), key=lambda r: r["streams"])
        x = [r["streams"] for r in g]
        for key, words, marker, ls in LONG_READINGS:
            a1.plot(x, [r[key] for r in g], marker=marker, ls=ls, color=col, ms=4.5,
                    lw=1.2, label=f"{fmt_name(fm)}: {words}")
        a2.plot(x, [r["share"] for r in g], color=col, label=f"{fmt_name(fm)}, long prompts",
                **LONG_STYLE)
        sx = [(r["streams"], r["short_share"]) for r in g
              if r.get("short_share") == r.get("short_share") and r.get("short_share")]
        if sx:
            a2.plot(*zip(*sx, strict=True), color=col, label=f"{fmt_name(fm)}, short prompts",
                    **SHORT_STYLE)
    xs = [r["streams"] for r in rows]
    for ax in (a1, a2):
        pow2_axis(ax, min(xs), max(xs))
        ax.set_xlabel("concurrent streams (independent requests)")
    a1.set_ylim(bottom=0)
    a1.set_ylabel("tok/s summed over the streams")
    a1.set_title("Three readings of the same steps", loc="left")
    eta_axis(a2, "All streams decoding, long vs short prompts")
    # one legend beside the panels, colour for the format and line for the reading, not
    # one entry per line over the data (five formats, 2026-12-05: it covered the lines)
    key = [Line2D([], [], color=col, lw=2.5, label=fmt_name(fm)) for fm, col in colour.items()]
    key += [Line2D([], [], color="0.35", marker=mk, ls=ls, ms=4.5, lw=1.2,
                   label=f"left: {words}") for _, words, mk, ls in LONG_READINGS]
    key += [Line2D([], [], color="0.35", label="right: long prompts", **LONG_STYLE),
            Line2D([], [], color="0.35", label="right: short prompts", **SHORT_STYLE)]
    a2.legend(handles=key, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=6.5)
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.caption_and_source(fig, caption, source)
    return fig
