"""The findings on decode against the bandwidth line, each a pure function of the step
frame (:func:`claimcheck.findings.stepframe.step_frame`): each format's share of its line,
what the smaller format buys, what context costs, and where the step grows. Each returns a
:class:`~claimcheck.findings.stepframe.Finding`: its numbers, one sentence built from them
and the condition that makes the sentence true, checked on the same numbers.

Units: tok/s, ms, GB = 1e9 bytes, GB/s, ns per token of context.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from claimcheck.calibration import context_cost as CC
from claimcheck.findings.stepframe import (
    KERNEL_SEP,
    Finding,
    and_list,
    decode_levels,
    failed,
    fmt_name,
    levels,
    main_context,
    pct,
    row_dicts,
    span,
)
from claimcheck.physics.units import GB


def bandwidth_share(f: pd.DataFrame) -> Finding:
    """Each weight format's share of its bandwidth line across streams and context (every
    step where all streams decode at once), its lowest and highest, and whether the
    formats' bands, highest first, do not overlap at any context both were measured at (a
    format measured at one context only is said so; a format's kernels,
    :func:`~claimcheck.findings.stepframe.series_format`, make one band; η falls with
    context, so bands of different contexts are not set against each other)."""
    cond = "the formats' bands do not overlap"
    d = decode_levels(f)
    if d.empty:
        return failed("bandwidth share", cond, "no step where every stream decodes at once")
    parts, nums = [], {}
    for fm, g in sorted(d.groupby("weight_format"), key=lambda kv: -kv[1]["share"].max()):
        lo, hi = g["share"].min(), g["share"].max()
        ctx = sorted(g["context_tokens_per_stream"].unique())
        nums |= {f"{fm}_min": lo, f"{fm}_max": hi}
        at = (f"at {ctx[0]:,.0f} to {ctx[-1]:,.0f} tokens of context per stream"
              if len(ctx) > 1 else f"at {ctx[0]:,.0f} tokens of context per stream only")
        parts.append(f"{fmt_name(fm)} decodes at {span(g['share'])} of its bandwidth line "
                     f"from {g['streams'].min():,.0f} to {g['streams'].max():,.0f} streams, "
                     + at)
    # one band per weight format, its kernels together (series_format): two kernels of one
    # format are not two formats
    d = d.assign(base=d["weight_format"].astype(str).str.partition(KERNEL_SEP)[0])
    band = d.groupby(["base", "context_tokens_per_stream"])["share"].agg(["min", "max"])
    order = list(d.groupby("base")["share"].max().sort_values(ascending=False).index)
    why = []
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            for c in sorted(set(band.loc[a].index) & set(band.loc[b].index)):
                lo, hi = band.loc[(a, c), "min"], band.loc[(b, c), "max"]
                if lo <= hi:
                    why.append(f"{fmt_name(a)} {lo:.0%} and {fmt_name(b)} {hi:.0%} overlap at "
                               f"{c:,.0f} tokens of context per stream")
    return Finding("bandwidth share", "; ".join(parts) + ".", nums, cond, not why,
                   "; ".join(why), row_dicts(d))


def step_bytes(fm: Any, streams: float, ctx: float, g: pd.DataFrame) -> float:
    """GB one step moves at ``streams`` and ``ctx`` with the engine columns of ``g``."""
    r = g.iloc[0]
    return (r["weight_bytes"] + streams * (2 * r["state_bytes"] + ctx
                                           * r["kv_bytes_per_token"])) / GB


def fp8_buys(f: pd.DataFrame, fast: str = "fp8", base: str = "bf16") -> Finding:
    """What the smaller weight format buys over the larger at the same streams and context
    (decode with all streams decoding), against the ratio of the bytes each step moves."""
    cond = (f"at every level both formats ran, {fmt_name(fast)} is faster than "
            f"{fmt_name(base)} but by less than the ratio of their bytes per step")
    d = decode_levels(f)
    a = d[d["weight_format"] == fast].set_index(["context_tokens_per_stream", "streams"])
    b = d[d["weight_format"] == base].set_index(["context_tokens_per_stream", "streams"])
    both = a.index.intersection(b.index)
    if len(both) == 0:
        return failed("what FP8 buys", cond, f"no level run on both {fast} and {base}")
    gain = a.loc[both, "decode"] / b.loc[both, "decode"]
    ratio = pd.Series([b.loc[i, "weights_gb"] + b.loc[i, "state_gb"] + b.loc[i, "kv_gb"]
                       for i in both], index=both) / pd.Series(
        [a.loc[i, "weights_gb"] + a.loc[i, "state_gb"] + a.loc[i, "kv_gb"] for i in both],
        index=both)
    nums = {"gain_min": gain.min(), "gain_max": gain.max(), "bytes_min": ratio.min(),
            "bytes_max": ratio.max(), "levels": float(len(both)),
            "gain_median": gain.median(), "bytes_median": ratio.median()}
    x = lambda v: f"{v:.2f}×"  # noqa: E731
    text = (f"At the same streams and context {fmt_name(fast)} decodes "
            f"{span(gain, x)} as fast as {fmt_name(base)} while each of its steps moves "
            f"{span(ratio, x)} fewer bytes, so it buys {span(gain / ratio)} of its byte "
            f"ratio ({len(both)} levels)")
    bad = [f"{i}: gain {g:.2f}× against bytes {r:.2f}×" for i, g, r
           in zip(both, gain, ratio, strict=True) if not 1 < g < r]
    return Finding("what FP8 buys", text + ".", nums, cond, not bad, "; ".join(bad))


RESIDUAL_MS = 0.5
"""How far (ms) a step may sit from its format's KV line for the context finding."""


def _trend(ln: CC.ContextLine) -> str:
    return f"{pct(ln.share[0])} to {pct(ln.share[-1])} at {ln.streams:,} streams"


def context_cost(f: pd.DataFrame) -> Finding:
    """What context costs decode: per weight format measured at three or more contexts at
    the same streams (:mod:`claimcheck.calibration.context_cost`), how its η moves with context,
    the rate its step reads its KV cache at (the KV bytes a step adds over the time it
    adds), the time one token of context per stream adds, and the faster format's lead at
    its shortest and longest context."""
    cond = ("one run measured a format at three or more contexts at the same streams, one "
            f"wave each, and every step lies within {RESIDUAL_MS} ms of its KV line")
    one = f[(f["waves"] == 1) & f["decode"].notna()]
    lines = [ln for _, g in one.groupby("run")
             for ln in CC.context_lines(levels(g, ["weight_format",
                                                   "context_tokens_per_stream", "streams"]))]
    if not lines:
        return failed("context", cond, "no run measured a format at three or more contexts "
                     "at the same streams in one wave")
    by: dict[str, list[CC.ContextLine]] = {}
    for ln in lines:
        by.setdefault(ln.fmt, []).append(ln)
    order = sorted(by, key=lambda k: -max(max(ln.share) for ln in by[k]))
    lo = min(ln.contexts[0] for ln in lines)
    hi = max(ln.contexts[-1] for ln in lines)
    streams = sorted({ln.streams for ln in lines})
    eta = []
    for fm in order:
        shares = [v for ln in by[fm] for v in ln.share]
        if max(shares) - min(shares) <= 0.03:
            eta.append(f"{fmt_name(fm)}'s η holds at {span(shares)}")
        else:
            ends = sorted(by[fm], key=lambda ln: ln.streams)
            moves = "falls" if ends[-1].share[-1] < ends[-1].share[0] else "moves"
            eta.append(f"{fmt_name(fm)}'s η {moves} from {_trend(ends[0])}"
                       + (f" and from {_trend(ends[-1])}" if len(ends) > 1 else ""))
    gbs = lambda v: f"{v:,.0f}"  # noqa: E731
    rates = " and ".join(f"{span([ln.kv_gb_s for ln in by[fm]], gbs)} GB/s for "
                         f"{fmt_name(fm)}" for fm in order)
    top = max(streams)
    at_top = {fm: next((ln for ln in by[fm] if ln.streams == top), None) for fm in order}
    ns = " against ".join(f"{at_top[fm].ns_per_token():.1f} ns for {fmt_name(fm)}"
                          for fm in order if at_top[fm])
    worst = max(ln.worst_residual_ms for ln in lines)
    text = (f"From {lo:,} to {hi:,} tokens of context per stream (one wave at "
            f"{and_list([f'{n:,}' for n in streams])} streams), " + "; ".join(eta)
            + f". Each step grows in a straight line with the KV cache it reads (every step "
            f"within {worst:.2f} ms of its line): the KV bytes a step adds over the time it "
            f"adds put the KV read at {rates}, so one more token of context per stream costs "
            f"a step {ns} per stream at {top:,} streams")
    nums = {f"{ln.fmt}_{ln.streams}_kv_gb_s": ln.kv_gb_s for ln in lines}
    both = [at_top[fm] for fm in order if at_top[fm]]
    if len(both) == 2 and both[0].contexts == both[1].contexts:
        slow, fast = sorted(both, key=lambda ln: ln.decode[0])
        g0, g1 = fast.decode[0] / slow.decode[0], fast.decode[-1] / slow.decode[-1]
        nums |= {"lead_short": g0, "lead_long": g1}
        text += (f"; at {top:,} streams {fmt_name(fast.fmt)}'s lead over "
                 f"{fmt_name(slow.fmt)} goes from {g0:.2f}× at {fast.contexts[0]:,} tokens "
                 f"to {g1:.2f}× at {fast.contexts[-1]:,}")
    nums["worst_residual_ms"] = worst
    why = "" if worst <= RESIDUAL_MS else f"a step lies {worst:.2f} ms from its line"
    return Finding("context", text + ".", nums, cond, not why, why, CC.lines_frame(lines))


def state_crossover(f: pd.DataFrame) -> dict[str, float]:
    """Per weight format, the streams at which the recurrent state one step reads and
    writes (2 x S per stream, bytes from the geometry) equals the weights it reads (W):
    W / (2 S), streams (fractional). The first run of each format gives W and S; a format
    on another kernel (:func:`~claimcheck.findings.stepframe.series_format`) is left to its
    format's (the same weights and state)."""
    return {k: r["weight_bytes"] / (2 * r["state_bytes"])
            for k, r in f.groupby("weight_format").first().iterrows()
            if r["state_bytes"] and KERNEL_SEP not in str(k)}


def step_growth(f: pd.DataFrame) -> Finding:
    """Where the step grows, for the format measured to the most streams at its shortest
    context: the step at its fewest, middle and most streams against the bytes each moves
    (weights, state read and written, KV), the streams where state bytes pass weight bytes,
    and whether the plain roofline calls every such step memory-bound."""
    cond = ("every step is memory-bound by the plain roofline, the step grows by no more "
            "than 1.25 times its bytes, and η falls past the last level that holds it")
    d = decode_levels(f)
    if d.empty:
        return failed("step growth", cond, "no step where every stream decodes at once")
    short = main_context(d)
    fm = short.groupby("weight_format")["streams"].max().idxmax()
    g = short[short["weight_format"] == fm].sort_values("streams")
    if len(g) < 3:
        return failed("step growth", cond, f"{fm}: fewer than 3 levels")
    lo, hi = g.iloc[0], g.iloc[-1]
    follows = g[g["share"] >= lo["share"] - 0.02]
    mid = follows.iloc[-1]
    total = lambda r: r["weights_gb"] + r["state_gb"] + r["kv_gb"]  # noqa: E731
    grow, bgrow = hi["step_ms"] / lo["step_ms"], total(hi) / total(lo)
    cross = state_crossover(f)
    bounds = set(f.loc[f["decode"].notna(), "roofline_bound"])
    text = (f"The {fmt_name(fm)} step follows its bytes from {lo['step_ms']:.1f} ms at "
            f"{lo['streams']:,.0f} stream{'s' if lo['streams'] != 1 else ''} to "
            f"{mid['step_ms']:.1f} ms at {mid['streams']:,.0f} (η {lo['share']:.0%} and "
            f"{mid['share']:.0%}) and grows a little faster than them past that, to "
            f"{hi['step_ms']:.1f} ms at {hi['streams']:,.0f} (η {hi['share']:.0%}; "
            f"{grow:.2f}× in all while the bytes it moves grow {bgrow:.2f}×; "
            f"at {hi['streams']:,.0f} streams {hi['weights_gb']:.1f} GB of weights, "
            f"{hi['state_gb']:.1f} GB of recurrent state read and written and "
            f"{hi['kv_gb']:.1f} GB of KV). The state read and written passes the weights at "
            + " and ".join(f"{v:,.0f} streams ({fmt_name(k)})" for k, v in sorted(cross.items()))
            + "; the plain roofline keeps every measured step on the memory-bound side, but "
            "at the engine's measured rates compute is not excluded, and the steps at the "
            "power cap ran at a lower clock")
    why = []
    if bounds != {"memory"}:
        why.append(f"bounds {sorted(map(str, bounds))}")
    if not hi["share"] < mid["share"] - 0.02:
        why.append(f"η {hi['share']:.0%} at most streams does not fall")
    if grow > 1.25 * bgrow:
        why.append(f"step grows {grow:.2f}× against bytes {bgrow:.2f}×")
    nums = {"step_lo_ms": lo["step_ms"], "step_hi_ms": hi["step_ms"], "growth": grow,
            "bytes_growth": bgrow, **{f"cross_{k}": v for k, v in cross.items()}}
    return Finding("step growth", text + ".", nums, cond, not why, "; ".join(why), row_dicts(g))
