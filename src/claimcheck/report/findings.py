"""What the runs found, each finding a pure function of the derived step table
(``data/derived/runs.csv`` as a DataFrame) joined with each run's engine geometry.

A finding returns its numbers, one sentence built from them, and the condition that makes
the sentence true, checked on the same numbers. A finding whose condition fails is not
printed; :func:`report` says which and why (the render's log prints it).

Steps are chosen by their properties only (weight format, prompt length, streams, waves,
whether all streams decode at once), never by a protocol's or an engine's name.

Units: tok/s, ms, GB = 1e9 bytes, tokens per joule (output tokens / measured board energy).
"The bandwidth line" of a step is its plain roofline: the tokens per second the card's
datasheet bandwidth allows at that step's streams and context when every stream keeps one
token per step and each step moves the weights once, each stream's recurrent state twice
(read and written) and its KV cache once (η = 1). η is the share of that line a step
reaches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from claimcheck.core import definitions as d
from claimcheck.core.units import GB
from claimcheck.report import context_cost as CC

FORMAT_WORDS = {"bf16": "BF16", "fp8": "FP8", "w4a16": "W4A16", "nvfp4": "NVFP4",
                "int8": "INT8"}
LONG_PROMPT = 4096
"""A prompt of at least this many tokens is a long prompt (the runs' 7,681 and 8K)."""
SAME_SHARE = 0.05
"""Two shares of the bandwidth line within this many points read as the same line."""
SMALL_COST = 0.05
"""A change of end-to-end speed within this fraction is 'almost nothing'."""


@dataclass(frozen=True)
class Finding:
    """One finding: its numbers, the sentence built from them, the condition that makes the
    sentence true in words, whether it holds on the data, and (when not) why."""

    key: str
    sentence: str
    numbers: dict[str, float]
    condition: str
    holds: bool
    why: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """The steps (one per shown level) the finding reads, for its table."""


def fmt_name(f: str) -> str:
    """A weight format as prose prints it (BF16, FP8)."""
    return FORMAT_WORDS.get(str(f).lower(), str(f).upper())


def pct(x: float) -> str:
    return f"{x:.0%}"


def span(xs: Iterable[float], fmt: Callable[[float], str] = pct) -> str:
    """'lo-hi' (en dash) or one value when both print the same."""
    xs = list(xs)
    lo, hi = fmt(min(xs)), fmt(max(xs))
    return lo if lo == hi else f"{lo}–{hi}"


# ------------------------------------------------------------------ the step frame

ENGINE_COLUMNS = ("kind", "weight_format", "kv_dtype", "state_dtype", "weight_bytes", "state_bytes",
                  "kv_bytes_per_token", "speculative", "ignore_eos", "prefix_caching")


def engine_rows(runs: Iterable[Any]) -> pd.DataFrame:
    """One row per run: its weight format, KV and state dtypes, the bytes the geometry gives
    (W read per step, S per stream, κ per token), whether it drafts tokens and whether its
    protocol ignored EOS. ``runs``: :class:`claimcheck.report.record.Run`."""
    out = []
    for r in runs:
        ec, ei = r.provenance.engine_config, r.engine_inputs
        extra = " ".join(str(a) for a in (getattr(ec, "extra_args", None) or []))
        out.append({"run": r.name, "weight_format": ec.weight_format,
                    "kv_dtype": ei.kv_dtype if ei else None,
                    "state_dtype": ei.state_dtype if ei else None,
                    "weight_bytes": ei.weight_bytes if ei else None,
                    "state_bytes": ei.state_bytes_per_stream if ei else None,
                    "kv_bytes_per_token": ei.kv_bytes_per_token if ei else None,
                    "speculative": "speculative" in extra,
                    "ignore_eos": bool(r.protocol.ignore_eos), "kind": r.protocol.kind,
                    "prefix_caching": bool(ec.prefix_caching)})
    return pd.DataFrame(out, columns=["run", *ENGINE_COLUMNS])


NEEDED = ("run", "status", "reported", "streams", "requests", "max_num_seqs", "input_len",
          "output_len", "context_tokens_per_stream", "all_streams_decoding_tok_s",
          "aggregate_mean_tpot_tok_s", "roofline_tok_s", "roofline_bound", "e2e_output_tok_s",
          "tokens_per_joule", "telemetry_mean_power_w", "total_output_tokens", "vllm",
          "weights_label")



def _known(v: Any) -> int | None:
    """A table cell as tokens, None where missing (NaN, NA)."""
    return None if v is None or pd.isna(v) else int(v)

def step_frame(steps: pd.DataFrame, engines: pd.DataFrame) -> pd.DataFrame:
    """The derived step table with each run's engine columns, and per step: ``waves``
    (requests / streams running at once, rounded up), ``decode`` (tok/s summed while every
    stream decodes, where that was measured and the step neither queued nor held its
    prefill), ``share`` (decode over the bandwidth line), ``step_ms`` (streams x 1000 /
    decode) and the GB each step moves (``weights_gb``, ``state_gb`` read and written,
    ``kv_gb``)."""
    steps = steps.copy()
    for col in NEEDED:  # a table without timeline columns reads them as not measured
        if col not in steps:
            steps[col] = None
    f = steps.merge(engines, on="run", how="left")
    f = f[(f["status"] == "complete") & f["reported"].astype(bool)].copy()
    seqs = f["max_num_seqs"]
    running = pd.Series([d.running_at_once(int(n), _known(s))
                         for n, s in zip(f["streams"], seqs, strict=True)],
                        index=f.index, dtype="int64")
    f["queued"] = f["streams"] > running
    seen = f.get("max_output_tokens", f["output_len"])
    f["held_prefill"] = [d.is_held_prefill(_known(a), _known(b))
                         for a, b in zip(f["output_len"], seen, strict=True)]
    f["waves"] = (f["requests"] / running).apply(math.ceil)
    ok = (~f["queued"]) & ~f["held_prefill"] & f["all_streams_decoding_tok_s"].notna()
    f["decode"] = pd.to_numeric(f["all_streams_decoding_tok_s"].where(ok))
    f["share"] = f["decode"] / f["roofline_tok_s"]
    f["step_ms"] = 1000 * f["streams"] / f["decode"]
    f["weights_gb"] = f["weight_bytes"] / GB
    f["state_gb"] = 2 * f["streams"] * f["state_bytes"] / GB
    f["kv_gb"] = f["streams"] * f["context_tokens_per_stream"] * f["kv_bytes_per_token"] / GB
    f["long"] = f["input_len"] >= LONG_PROMPT
    return f


def levels(f: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The median of each column per level (``keys``), with ``n`` the steps it stands
    for: repeats and runs of the same level read once."""
    num = f.select_dtypes("number").columns.difference(keys)
    g = f.groupby(keys, dropna=False)
    out = g[list(num)].median()
    out["n"] = g.size()
    out["runs"] = g["run"].apply(lambda s: ", ".join(sorted(set(s))))
    return out.reset_index()


def decode_levels(f: pd.DataFrame) -> pd.DataFrame:
    """Steps where every stream decoded at once, one row per (format, context, streams)."""
    d = f[f["decode"].notna()]
    return levels(d, ["weight_format", "context_tokens_per_stream", "streams"])


def main_context(d: pd.DataFrame) -> pd.DataFrame:
    """Per weight format, the levels at its main context: the context per stream measured
    at the most stream counts (the shorter on a tie)."""
    keep = []
    for _, g in d.groupby("weight_format"):
        n = g.groupby("context_tokens_per_stream")["streams"].nunique()
        keep.append(g[g["context_tokens_per_stream"] == n[n == n.max()].index.min()])
    return pd.concat(keep) if keep else d


def long_context(d: pd.DataFrame) -> float | None:
    """The long context shown beside each format's main context (the body's first table,
    the decode figure): of the contexts longer than every main context, the one measured
    at the most stream counts (the longer on a tie); None when there is none."""
    if d.empty:
        return None
    longer = d[d["context_tokens_per_stream"] > main_context(d)["context_tokens_per_stream"]
               .max()]
    if longer.empty:
        return None
    n = longer.groupby("context_tokens_per_stream")["streams"].nunique()
    return float(n[n == n.max()].index.max())


def _fail(key: str, condition: str, why: str) -> Finding:
    return Finding(key, "", {}, condition, False, why)


def _rows(d: pd.DataFrame) -> list[dict[str, Any]]:
    return d.to_dict("records")


# ------------------------------------------------------------------ the findings


def bandwidth_share(f: pd.DataFrame) -> Finding:
    """Each weight format's share of its bandwidth line across streams and context (every
    step where all streams decode at once), its lowest and highest, and whether each
    format holds a band of at most 10 points with the first format above the second."""
    cond = ("each format was measured at two or more contexts and the formats' bands do "
            "not overlap")
    d = decode_levels(f)
    if d.empty:
        return _fail("bandwidth share", cond, "no step where every stream decodes at once")
    parts, nums, bands = [], {}, []
    for fm, g in sorted(d.groupby("weight_format"), key=lambda kv: -kv[1]["share"].max()):
        lo, hi = g["share"].min(), g["share"].max()
        ctx = sorted(g["context_tokens_per_stream"].unique())
        bands.append((fmt_name(fm), lo, hi, len(ctx)))
        nums |= {f"{fm}_min": lo, f"{fm}_max": hi}
        parts.append(f"{fmt_name(fm)} decodes at {span(g['share'])} of its bandwidth line "
                     f"from {g['streams'].min():,.0f} to {g['streams'].max():,.0f} streams, "
                     f"at {ctx[0]:,.0f} to {ctx[-1]:,.0f} tokens of context per "
                     "stream")
    why = [f"{n}: one context only" for n, *_, k in bands if k < 2]
    why += [f"{a[0]} {a[1]:.0%} and {b[0]} {b[2]:.0%} overlap"
            for a, b in zip(bands, bands[1:], strict=False) if a[1] <= b[2]]
    return Finding("bandwidth share", "; ".join(parts) + ".", nums, cond, not why,
                   "; ".join(why), _rows(d))


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
        return _fail("what FP8 buys", cond, f"no level run on both {fast} and {base}")
    gain = a.loc[both, "decode"] / b.loc[both, "decode"]
    ratio = pd.Series([b.loc[i, "weights_gb"] + b.loc[i, "state_gb"] + b.loc[i, "kv_gb"]
                       for i in both], index=both) / pd.Series(
        [a.loc[i, "weights_gb"] + a.loc[i, "state_gb"] + a.loc[i, "kv_gb"] for i in both],
        index=both)
    nums = {"gain_min": gain.min(), "gain_max": gain.max(), "bytes_min": ratio.min(),
            "bytes_max": ratio.max(), "levels": float(len(both))}
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


def and_list(xs: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def _trend(ln: CC.ContextLine) -> str:
    return f"{pct(ln.share[0])} to {pct(ln.share[-1])} at {ln.streams:,} streams"


def context_cost(f: pd.DataFrame) -> Finding:
    """What context costs decode: per weight format measured at three or more contexts at
    the same streams (:mod:`claimcheck.report.context_cost`), how its η moves with context,
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
        return _fail("context", cond, "no run measured a format at three or more contexts "
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
            eta.append(f"{fmt_name(fm)}'s {moves} from {_trend(ends[0])}"
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
            f"{and_list([f'{n:,}' for n in streams])} streams), " + "; ".join(eta).replace(
                "'s falls", "'s η falls").replace("'s moves", "'s η moves")
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
    W / (2 S), streams (fractional). The first run of each format gives W and S."""
    return {k: r["weight_bytes"] / (2 * r["state_bytes"])
            for k, r in f.groupby("weight_format").first().iterrows()
            if r["state_bytes"]}


def step_growth(f: pd.DataFrame) -> Finding:
    """Where the step grows, for the format measured to the most streams at its shortest
    context: the step at its fewest, middle and most streams against the bytes each moves
    (weights, state read and written, KV), the streams where state bytes pass weight bytes,
    and whether the plain roofline calls every such step memory-bound."""
    cond = ("every step is memory-bound by the plain roofline, the step grows by no more "
            "than 1.25 times its bytes, and η falls past the last level that holds it")
    d = decode_levels(f)
    if d.empty:
        return _fail("step growth", cond, "no step where every stream decodes at once")
    short = main_context(d)
    fm = short.groupby("weight_format")["streams"].max().idxmax()
    g = short[short["weight_format"] == fm].sort_values("streams")
    if len(g) < 3:
        return _fail("step growth", cond, f"{fm}: fewer than 3 levels")
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
            + ", and the plain roofline keeps every measured step on the memory-bound side, "
            "so it is the state, not compute, that bends the step")
    why = []
    if bounds != {"memory"}:
        why.append(f"bounds {sorted(map(str, bounds))}")
    if not hi["share"] < mid["share"] - 0.02:
        why.append(f"η {hi['share']:.0%} at most streams does not fall")
    if grow > 1.25 * bgrow:
        why.append(f"step grows {grow:.2f}× against bytes {bgrow:.2f}×")
    nums = {"step_lo_ms": lo["step_ms"], "step_hi_ms": hi["step_ms"], "growth": grow,
            "bytes_growth": bgrow, **{f"cross_{k}": v for k, v in cross.items()}}
    return Finding("step growth", text + ".", nums, cond, not why, "; ".join(why), _rows(g))


def long_prompts(f: pd.DataFrame) -> Finding:
    """What long prompts cost, on runs with more requests than streams (prefills of later
    requests share the steps): all streams decoding against streams x 1000 / mean TPOT of
    the same steps, and its share of the bandwidth line against short prompts' at the same
    streams and format."""
    cond = ("with long prompts, all streams decoding reads above streams × 1000 / mean TPOT "
            f"and its share of the line is within {SAME_SHARE:.0%} points of short prompts' "
            "at the same streams")
    lp = f[f["long"] & (f["waves"] > 1) & f["decode"].notna() & (f["streams"] > 1)]
    if lp.empty:
        return _fail("long prompts", cond, "no multi-wave long-prompt step with decode")
    lpl = levels(lp, ["weight_format", "streams"])
    sd = decode_levels(f[~f["long"]])
    sd = sd.groupby(["weight_format", "streams"])["share"].median()
    lpl["short_share"] = [sd.get((fm, n)) for fm, n in zip(lpl["weight_format"],
                                                          lpl["streams"], strict=True)]
    lpl["over_mean"] = lpl["decode"] / lpl["aggregate_mean_tpot_tok_s"]
    matched = lpl[lpl["short_share"].notna()]
    x = lambda v: f"{v:.1f}×"  # noqa: E731
    text = (f"With {lp['input_len'].min():,.0f}-token prompts and a second wave whose "
            f"prefills share the steps, decode while all streams decode reads "
            f"{span(lpl['over_mean'], x)} what streams × 1000 / mean TPOT of the same steps "
            f"reads ({lpl['streams'].min():,.0f} to {lpl['streams'].max():,.0f} streams), "
            "and reaches the share of its bandwidth line that short prompts reach at the "
            "same streams ("
            + "; ".join(f"{fmt_name(fm)} {span(g['share'])} against {span(g['short_share'])}"
                        for fm, g in matched.groupby("weight_format"))
            + "): the prefills lengthen the mean TPOT, and decode itself stays at the "
            "short prompts' share")
    why = [f"{r.weight_format} {r.streams:.0f}: all decoding {r.over_mean:.2f}× mean TPOT"
           for r in lpl.itertuples() if r.over_mean <= 1]
    why += [f"{r.weight_format} {r.streams:.0f}: {r.share:.0%} against {r.short_share:.0%}"
            for r in matched.itertuples() if abs(r.share - r.short_share) > SAME_SHARE]
    if matched.empty:
        why.append("no short-prompt level at the same streams")
    nums = {"over_mean_min": lpl["over_mean"].min(), "over_mean_max": lpl["over_mean"].max()}
    return Finding("long prompts", text + ".", nums, cond, not why, "; ".join(why), _rows(lpl))


def second_wave(f: pd.DataFrame) -> Finding:
    """What more waves cost: end to end of a step sending several waves of independent
    requests (protocol kind ``bench``) against a one-wave step of the same format, streams
    and output, prompts within 30%."""
    cond = f"every matched pair differs by at most {SMALL_COST:.0%} end to end"
    f = f[f["kind"] == "bench"]  # independent requests: a closed loop has no waves
    one = f[(f["waves"] == 1) & ~f["queued"] & ~f["held_prefill"]]
    many = f[(f["waves"] > 1) & ~f["queued"] & ~f["held_prefill"] & (f["streams"] > 1)]
    pairs = []
    for (fm, n, out, lg), g in many.groupby(["weight_format", "streams", "output_len",
                                             "long"]):
        o = one[(one["weight_format"] == fm) & (one["streams"] == n)
                & (one["output_len"] == out) & (one["long"] == lg)]
        o = o[(o["input_len"] / g["input_len"].median() - 1).abs() <= 0.3]
        if o.empty:
            continue
        pairs.append({"weight_format": fm, "streams": n, "long": lg,
                      "input_len": g["input_len"].median(), "waves": g["waves"].median(),
                      "many": g["e2e_output_tok_s"].median(),
                      "one": o["e2e_output_tok_s"].median()})
    if not pairs:
        return _fail("second wave", cond, "no one-wave step matches a several-wave one")
    p = pd.DataFrame(pairs)
    p["change"] = p["many"] / p["one"] - 1
    sgn = lambda v: f"{v:+.1%}"  # noqa: E731
    parts = []
    for lg, g in p.groupby("long"):
        kind = "long" if lg else "short"
        parts.append(f"{span(g['change'], sgn)} with {kind} prompts "
                     f"({', '.join(sorted({fmt_name(x) for x in g['weight_format']}))} at "
                     f"{', '.join(f'{n:,.0f}' for n in sorted(set(g['streams'])))} streams)")
    text = ("Sending the requests in more than one wave changes the end-to-end speed by "
            + " and ".join(parts) + " against one wave of the same prompts: a second wave "
            "costs almost nothing")
    bad = [f"{r.weight_format} {r.streams:.0f}: {r.change:+.1%}" for r in p.itertuples()
           if abs(r.change) > SMALL_COST]
    return Finding("second wave", text + ".", {"change_min": p["change"].min(),
                                                "change_max": p["change"].max()},
                   cond, not bad, "; ".join(bad), _rows(p))


def energy(f: pd.DataFrame) -> Finding:
    """Output tokens per joule of measured board energy at each format's fewest and most
    streams where all decode at once, at its shortest context."""
    cond = "each format gives more tokens per joule at its most streams than at one"
    d = decode_levels(f)
    d = d[d["tokens_per_joule"].notna()]
    if d.empty:
        return _fail("energy", cond, "no step with measured energy")
    rows, parts, bad = [], [], []
    for fm, g in main_context(d).groupby("weight_format"):
        lo, hi = g.loc[g["streams"].idxmin()], g.loc[g["streams"].idxmax()]
        rows += [lo.to_dict(), hi.to_dict()]
        parts.append(f"{fmt_name(fm)} {lo['tokens_per_joule']:.2f} output tokens per "
                     f"joule at {lo['streams']:,.0f} "
                     f"stream{'s' if lo['streams'] != 1 else ''} "
                     f"({lo['telemetry_mean_power_w']:.0f} W mean draw) and "
                     f"{hi['tokens_per_joule']:.2f} at {hi['streams']:,.0f} streams "
                     f"({hi['telemetry_mean_power_w']:.0f} W)")
        if not hi["tokens_per_joule"] > lo["tokens_per_joule"]:
            bad.append(f"{fm}: {hi['tokens_per_joule']:.2f} at most streams")
    text = ("Counting the measured board energy over each step's load window, the card "
            "gives " + "; ".join(parts))
    return Finding("energy", text + ".", {}, cond, not bad, "; ".join(bad), rows)


def cannot_say(f: pd.DataFrame) -> Finding:
    """What the runs cannot say: no run drafts tokens (and random weights would make any
    drafter's acceptance meaningless), the vLLM versions measured, and whether every request
    that could stop early ran to its cap (answer lengths set by the cap)."""
    cond = ("no run drafts tokens, every run is on one vLLM version, and every request "
            "without --ignore-eos ran to its output cap")
    free = f[~f["ignore_eos"].astype(bool) & ~f["held_prefill"]]
    capped = (free["total_output_tokens"] == free["requests"] * free["output_len"]).all()
    versions = sorted(set(map(str, f["vllm"].dropna())))
    spec = bool(f["speculative"].astype(bool).any())
    dummy = bool(f["weights_label"].astype(str).str.contains("dummy").all())
    text = ("These runs cannot say what speculation does: no run drafts tokens"
            + (", and with random weights a drafter's guesses would not be accepted as on "
               "real text" if dummy else "")
            + f"; they are of one vLLM version ({', '.join(versions)}); and with "
            f"{free['requests'].sum():,.0f} requests free to stop early all running to "
            f"their {span(free['output_len'], lambda v: f'{v:,.0f}')}-token cap, the "
            "answer lengths were set by the cap, not by the text")
    why = []
    if spec:
        why.append("a run drafts tokens")
    if len(versions) != 1:
        why.append(f"vLLM versions {versions}")
    if free.empty or not capped:
        why.append("a request stopped before its cap" if not free.empty
                   else "no request was free to stop early")
    return Finding("cannot say", text + ".", {"versions": float(len(versions))}, cond,
                   not why, "; ".join(why))


FINDINGS: tuple[Callable[[pd.DataFrame], Finding], ...] = (
    bandwidth_share, fp8_buys, context_cost, step_growth, long_prompts, second_wave, energy,
    cannot_say)


def all_findings(f: pd.DataFrame) -> list[Finding]:
    """Every finding of the step frame, in the body's order; a finding the steps are too
    few to compute fails, saying so (never a traceback in the render)."""
    out = []
    for fn in FINDINGS:
        try:
            out.append(fn(f))
        except (ValueError, KeyError, IndexError, ZeroDivisionError) as e:
            key = fn.__name__.replace("_", " ")
            out.append(_fail(key, "its steps exist", f"too few steps to compute it ({e})"))
    return out


def report(found: list[Finding]) -> list[str]:
    """One log line per finding left out: its key, its condition and why it fails."""
    return [f"finding '{x.key}' not printed: {x.condition} does not hold ({x.why})"
            for x in found if not x.holds]
