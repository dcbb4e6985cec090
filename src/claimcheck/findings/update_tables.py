"""The body's tables of the findings (figures/update.md): decode against the bandwidth
line, decode at each context, the bytes of one step, long prompts, one wave against
several; each read from its finding's rows (:mod:`claimcheck.findings.findings`) and
captioned with its runs, its divisor and its repeat rule, and the words that say what a
table shows. Units: tok/s summed over the streams (per stream in brackets), tokens, GB
(10^9 bytes), ms.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from claimcheck.files import mdtext as md
from claimcheck.findings import stepframe as SF


def ps_cell(v: float | None, n: float) -> str:
    """'summed (per stream)' with per stream = summed / n."""
    return "n/a (not measured)" if v is None or v != v else f"{v:,.1f} ({v / n:,.1f})"


CAPTION_RUNS = 3
"""A caption names at most this many runs; the rest are the appendix's."""


def runs_words(runs: list[str], most: int = CAPTION_RUNS) -> str:
    """At most ``most`` run names, then how many more the appendix lists."""
    if len(runs) <= most:
        return ", ".join(runs)
    rest = len(runs) - most
    return (", ".join(runs[:most]) + f" and {rest} more run{'s' if rest > 1 else ''} "
            "(the appendix lists each)")


def _caption(what: str, rows: list[dict[str, Any]], divisor: str) -> str:
    runs = sorted({r for x in rows for r in str(x.get("runs") or x.get("run", "")).split(", ")
                   if r})
    return (f"*{what} One row per level: the median of each column over the runs of that "
            "level, each run giving the one pass per level its protocol reports (the last or "
            f"the median pass, not every repeat). {divisor} Runs: {runs_words(runs)} "
            "(dummy weights).*")


POWERS = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}


def share_table(x: Any) -> str:
    """Decode against the bandwidth line per format, context and streams."""
    rows = [r for r in x.rows if r["streams"] in POWERS]
    d = SF.main_context(pd.DataFrame(x.rows))
    main = {(r["weight_format"], r["context_tokens_per_stream"]) for r in d.to_dict("records")}
    longest = SF.long_context(pd.DataFrame(x.rows))
    rows = [r for r in rows if (r["weight_format"], r["context_tokens_per_stream"]) in main
            or r["context_tokens_per_stream"] == longest]
    rows.sort(key=lambda r: (r["weight_format"], r["context_tokens_per_stream"], r["streams"]))
    body = [[SF.fmt_name(r["weight_format"]), f"{r['streams']:,.0f}",
             f"{r['context_tokens_per_stream']:,.0f}", ps_cell(r["decode"], r["streams"]),
             f"{r['roofline_tok_s']:,.0f}", f"{r['share']:.0%}"] for r in rows]
    return (md.table(["Weights", "Streams", "Context per stream, tokens",
                      "All streams decoding, tok/s summed (per stream)",
                      "Bandwidth line, tok/s", "η"], body) + "\n\n"
            + _caption("Decode while every stream decodes, against the bandwidth line, at "
                       "powers of two streams.", rows,
                       "Per stream = the sum divided by the streams decoding at once (all "
                       "of them)."))


def share_words(x: Any, buys: bool) -> str:
    """What the first table shows, from the bandwidth-share finding's rows (which holds
    only where the formats' η bands do not overlap): the format lower at every level, and,
    where the what-it-buys finding holds too, that this is why it buys less than its
    bytes."""
    top = {fm: g["share"].max() for fm, g in pd.DataFrame(x.rows).groupby("weight_format")}
    order = [SF.fmt_name(fm) for fm in sorted(top, key=top.get, reverse=True)]
    if len(order) == 2:
        return (f"{order[1]} holds a lower share of its line than {order[0]} at every level"
                + (", which is why it buys less than its bytes." if buys else "."))
    return (f"At every level {order[0]} holds the highest share of its line, then "
            f"{SF.and_list(order[1:])}, in that order" + (
                "; the lower share is why the smaller formats buy less than their bytes."
                if buys else "."))


NO_LINE = "no line"
"""A context table's cell where the format has no KV line at the column's streams."""


def context_table(x: Any) -> str:
    """Decode while every stream decodes at each context of the context finding: one row
    per format and context, one column per stream count (tok/s summed, per stream, η)."""
    rows = x.rows
    streams = sorted({r["streams"] for r in rows})
    cell = {(r["weight_format"], r["context_tokens_per_stream"], r["streams"]): r
            for r in rows}
    keys = sorted({(r["weight_format"], r["context_tokens_per_stream"]) for r in rows})
    body = [[SF.fmt_name(fm), f"{t:,.0f}"]
            + [(f"{ps_cell(c['decode'], n)}, {c['share']:.0%}" if (c := cell.get((fm, t, n)))
                else NO_LINE) for n in streams] for fm, t in keys]
    return (md.table(["Weights", "Context per stream, tokens"]
                     + [f"{n:,.0f} streams, tok/s summed (per stream), η" for n in streams],
                     body)
            + "\n\n" + _caption("All streams decoding at each context per stream (prompt + "
                                  "output tokens at the end of the request) and stream "
                                  "count; one wave per step, every prompt prefilled before "
                                  "the decode that is read.", rows, "Per stream = the sum "
                                  "divided by the streams of the column. "
                                  f"'{NO_LINE}': the format has no run measured at three or "
                                  "more contexts at those streams (a line needs three), "
                                  "whatever was measured there."))


def context_words(x: Any) -> str:
    """What the context table shows, from its rows: per format, η at its shortest and its
    longest context at the most streams."""
    rows = x.rows
    top = max(r["streams"] for r in rows)
    parts = []
    for fm in sorted({r["weight_format"] for r in rows}):
        g = sorted((r for r in rows if r["weight_format"] == fm and r["streams"] == top),
                   key=lambda r: r["context_tokens_per_stream"])
        if g:
            parts.append(f"{SF.fmt_name(fm)} {g[0]['share']:.0%} of its line at "
                         f"{g[0]['context_tokens_per_stream']:,.0f} tokens and "
                         f"{g[-1]['share']:.0%} at {g[-1]['context_tokens_per_stream']:,.0f}")
    return f"At {top:,.0f} streams: " + "; ".join(parts) + "."


def bytes_table(x: Any) -> str:
    """The bytes one step moves and the step measured, per level of the step finding."""
    rows = [r for r in x.rows if r["streams"] in POWERS]
    body = [[f"{r['streams']:,.0f}", f"{r['weights_gb']:.1f}", f"{r['state_gb']:.1f}",
             f"{r['kv_gb']:.1f}", f"{r['step_ms']:.1f}", f"{r['share']:.0%}"] for r in rows]
    return (md.table(["Streams", "Weights, GB", "State read and written, GB", "KV, GB",
                      "Step, ms (streams × 1000 / all streams decoding)", "η"], body)
            + "\n\n" + _caption(f"What one {SF.fmt_name(rows[0]['weight_format'])} step "
                                  f"moves at {rows[0]['context_tokens_per_stream']:,.0f} "
                                  "tokens of context per stream (from the geometry) and how "
                                  "long it takes.", rows,
                                  "The step divides the streams decoding at once by their "
                                  "summed decode speed."))


def long_table(x: Any) -> str:
    """Long prompts with a second wave: all streams decoding, mean TPOT, end to end."""
    rows = sorted(x.rows, key=lambda r: (r["weight_format"], r["streams"]))
    body = [[SF.fmt_name(r["weight_format"]), f"{r['streams']:,.0f}",
             ps_cell(r["decode"], r["streams"]),
             ps_cell(r["streams_x_1000_over_mean_tpot_tok_s"], r["streams"]),
             ps_cell(r["e2e_aggregate_tok_s"], r["streams"]), f"{r['share']:.0%}"] for r in rows]
    return (md.table(["Weights", "Streams", "All streams decoding, tok/s summed (per stream)",
                      "Streams × 1000 / mean TPOT (per stream)",
                      "End to end (per stream)", "η, all streams decoding"], body)
            + "\n\n" + _caption(f"{rows[0]['input_len']:,.0f} tokens in and "
                                  f"{rows[0]['output_len']:,.0f} out, {rows[0]['waves']:.0f} "
                                  "requests per stream (a later wave's prefills land on the "
                                  "decode of the one before); end to end includes prefill, "
                                  "ramp and tail.", rows,
                                  "Every per-stream figure divides by the streams of the "
                                  "row."))


def wave_table(x: Any) -> str:
    """One wave against several, end to end."""
    rows = sorted(x.rows, key=lambda r: (r["long"], r["weight_format"], r["streams"]))
    body = [[SF.fmt_name(r["weight_format"]), f"{r['input_len']:,.0f}", f"{r['streams']:,.0f}",
             ps_cell(r["one"], r["streams"]), ps_cell(r["many"], r["streams"]) +
             f", {r['waves']:.0f} waves", f"{r['change']:+.1%}"] for r in rows]
    return (md.table(["Weights", "Prompt, tokens", "Streams", "One wave, end to end, tok/s "
                      "(per stream)", "Several waves, end to end", "Change"], body)
            + "\n\n*End to end = all output tokens / wall time, prefill, ramp and tail in; "
            "one row per level, the median over repeats and runs of each side. Per stream "
            "= end to end / the streams of the row. The one-wave side is each level's "
            "one-wave steps with prompts within 30% of the other side's (dummy weights).*")
