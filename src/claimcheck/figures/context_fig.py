"""The Update's context figure: decode while every stream decodes against context per
stream, each format at each stream count of the context finding, beside its bandwidth
line, and η against context.

Every number is a row of the context finding (:func:`claimcheck.findings.findings_decode.
context_cost`): the same levels its sentence and the body's context table print. Units:
tok/s summed over the streams; tokens of context per stream (prompt + output)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt

from claimcheck.figures import figstyle as fs
from claimcheck.findings import findings_decode as FD
from claimcheck.findings import stepframe as SF
from claimcheck.figures.h200_fig import card_frame, release_words
from claimcheck.figures.plot_common import eta_axis, format_colours
from claimcheck.runs.run import Run


def context_rows(runs: list[Run], card: str) -> list[dict[str, Any]]:
    """The context finding's rows for one card's runs (empty where it has none)."""
    _, frame = card_frame(runs, card)
    return FD.context_cost(frame).rows


def draw(rows: list[dict[str, Any]], title: str, caption: str, source: str) -> Any:
    """Left: tok/s summed while every stream decodes (markers) and the bandwidth line
    (dashed) against context per stream, one colour per format, one marker per streams;
    right: η (measured / line) against context."""
    fig, (a1, a2) = fs.new(9.4, 4.0, ncols=2)
    colour = format_colours(sorted({r["weight_format"] for r in rows}))
    streams = sorted({r["streams"] for r in rows})
    marker = {n: fs.MARKERS[i % len(fs.MARKERS)] for i, n in enumerate(streams)}
    for fm, col in colour.items():
        for n in streams:
            g = sorted((r for r in rows if r["weight_format"] == fm and r["streams"] == n),
                       key=lambda r: r["context_tokens_per_stream"])
            if not g:
                continue
            x = [r["context_tokens_per_stream"] for r in g]
            a1.plot(x, [r["decode"] for r in g], marker=marker[n], color=col, lw=1.1,
                    ms=4.5, label=f"{SF.fmt_name(fm)}, {n} streams")
            a1.plot(x, [r["roofline_tok_s"] for r in g], ls="--", color=col, lw=0.8,
                    alpha=0.7)
            a2.plot(x, [r["share"] for r in g], marker=marker[n], color=col, lw=1.1,
                    ms=4.5, label=f"{SF.fmt_name(fm)}, {n} streams")
    ctx = sorted({r["context_tokens_per_stream"] for r in rows})
    for ax in (a1, a2):
        ax.set_xscale("log")
        ax.set_xticks(ctx)
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("context per stream, tokens (prompt + output; log scale)")
    a1.set_yscale("log")
    a1.set_ylabel("all streams decoding, tok/s summed (log)")
    a1.set_title("Decode (markers) and bandwidth line (dashed)", loc="left")
    eta_axis(a2, "Share of the bandwidth line")
    # beside the panels, not over them: with four formats at three stream counts the
    # legend's 12+ lines covered the η curves (2026-12-05)
    a2.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=6.5, ncol=1,
              title="both panels", title_fontsize=6.5)
    fig.suptitle(title, x=0.0, ha="left", fontsize=10)
    fs.caption_and_source(fig, caption, source)
    return fig


def context_figure(runs: list[Run], card: str, card_name: str) -> Any:
    """The context figure of one card's runs, or a notice where no run measured a format
    at three or more contexts at the same streams."""
    rows = context_rows(runs, card)
    if not rows:
        return fs.notice(f"No run on the {card_name} measured a weight format at three or "
                         "more contexts at the same streams: nothing to draw.")
    used = sorted({n for r in rows for n in str(r["runs"]).split(", ")})
    return draw(
        rows, title=f"Decode against context on one {card_name} (dummy weights)",
        caption=("Each point: tok/s summed over the window in which every stream decodes "
                 "(the last request's first token to the first request's last), one wave "
                 "per step, so every prompt is prefilled before the decode that is read; "
                 "per stream = the sum divided by the streams. Dashed: the bandwidth line "
                 "(plain roofline, η = 1) at the same streams and context: the weights once, "
                 "each stream's recurrent state twice and its KV cache once per step, at "
                 f"the {card_name}'s datasheet bandwidth. Each point the median of its level "
                 "over repeats."),
        source=("runs " + ", ".join(used) + f" (dummy weights, {release_words(runs, used)}) "
                "in data/raw/runs, read through data/derived/runs/*.json; KV bytes per "
                "token from each engine's KV dtype and the model's config.json"))
