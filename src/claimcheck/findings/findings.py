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

from collections.abc import Callable

import pandas as pd

from claimcheck.findings.findings_decode import bandwidth_share, context_cost, fp8_buys, step_growth
from claimcheck.findings.stepframe import (
    Finding,
    decode_levels,
    failed,
    fmt_name,
    levels,
    main_context,
    row_dicts,
    span,
)

SAME_SHARE = 0.05
"""Two shares of the bandwidth line within this many points read as the same line."""
SMALL_COST = 0.05
"""A change of end-to-end speed within this fraction is 'almost nothing'."""


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
        return failed("long prompts", cond, "no multi-wave long-prompt step with decode")
    lpl = levels(lp, ["weight_format", "streams"])
    sd = decode_levels(f[~f["long"]])
    sd = sd.groupby(["weight_format", "streams"])["share"].median()
    lpl["short_share"] = [sd.get((fm, n)) for fm, n in zip(lpl["weight_format"],
                                                          lpl["streams"], strict=True)]
    lpl["over_mean"] = lpl["decode"] / lpl["streams_x_1000_over_mean_tpot_tok_s"]
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
            + "): the prefills lengthen the mean TPOT, and decode itself stays within "
            f"{SAME_SHARE:.0%} points of the short prompts' share")
    why = [f"{r.weight_format} {r.streams:.0f}: all decoding {r.over_mean:.2f}× mean TPOT"
           for r in lpl.itertuples() if r.over_mean <= 1]
    why += [f"{r.weight_format} {r.streams:.0f}: {r.share:.0%} against {r.short_share:.0%}"
            for r in matched.itertuples() if abs(r.share - r.short_share) > SAME_SHARE]
    if matched.empty:
        why.append("no short-prompt level at the same streams")
    nums = {"over_mean_min": lpl["over_mean"].min(), "over_mean_max": lpl["over_mean"].max()}
    return Finding("long prompts", text + ".", nums, cond, not why, "; ".join(why), row_dicts(lpl))


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
                      "many": g["e2e_aggregate_tok_s"].median(),
                      "one": o["e2e_aggregate_tok_s"].median()})
    if not pairs:
        return failed("second wave", cond, "no one-wave step matches a several-wave one")
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
                   cond, not bad, "; ".join(bad), row_dicts(p))


def energy(f: pd.DataFrame) -> Finding:
    """Output tokens per joule of measured board energy at each format's fewest and most
    streams where all decode at once, at its shortest context."""
    cond = "each format gives more tokens per joule at its most streams than at one"
    d = decode_levels(f)
    d = d[d["tokens_per_joule"].notna()]
    if d.empty:
        return failed("energy", cond, "no step with measured energy")
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
    cond = ("no run drafts tokens, every step read is of one vLLM release, and every request "
            "without --ignore-eos ran to its output cap")
    free = f[~f["ignore_eos"].astype(bool) & ~f["held_prefill"]]
    if free.empty:
        return failed("cannot say", cond, "no request was free to stop early")
    capped = (free["timeline_output_tokens"] == free["requests"] * free["output_len"]).all()
    versions = sorted(set(map(str, f["vllm"].dropna())))
    spec = bool(f["speculative"].astype(bool).any())
    dummy = bool(f["weights_label"].astype(str).str.contains("dummy").all())
    text = ("These runs cannot say what speculation does: no run drafts tokens"
            + (", and with random weights a drafter's guesses would not be accepted as on "
               "real text" if dummy else "")
            + f"; they read one vLLM release ({', '.join(versions)}), so a finding may "
            "not hold on another; and with every request free to stop early running to "
            f"its {span(free['output_len'], lambda v: f'{v:,.0f}')}-token cap, the "
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

READS: dict[str, tuple[str, ...]] = {
    "bandwidth_share": ("weight_format", "context_tokens_per_stream", "streams", "decode",
                        "share"),
    "fp8_buys": ("weight_format", "context_tokens_per_stream", "streams", "decode",
                 "weight_bytes", "state_bytes", "kv_bytes_per_token"),
    "context_cost": ("weight_format", "context_tokens_per_stream", "streams", "decode",
                     "kv_bytes_per_token"),
    "step_growth": ("weight_format", "streams", "step_ms", "weights_gb", "state_gb", "kv_gb"),
    "long_prompts": ("long", "waves", "decode", "streams", "input_len",
                     "streams_x_1000_over_mean_tpot_tok_s"),
    "second_wave": ("kind", "waves", "queued", "held_prefill", "weight_format", "streams",
                    "output_len", "input_len", "e2e_aggregate_tok_s"),
    "energy": ("tokens_per_joule", "telemetry_mean_power_w", "weight_format", "streams"),
    "cannot_say": ("ignore_eos", "held_prefill", "timeline_output_tokens", "requests",
                   "output_len", "vllm", "speculative", "weights_label"),
}
"""The step-frame columns each finding reads: one missing stops the render, naming both."""

OPTIONAL: dict[str, str] = {}
"""Finding -> why the Update may go without it: an optional finding whose columns are
missing is left out with that reason in the render's log instead of stopping it."""


class FindingError(ValueError):
    """A finding that cannot be computed from its inputs: one line naming the finding and
    the column (or the error) that stopped it."""


def run_finding(fn: Callable[[pd.DataFrame], Finding], f: pd.DataFrame) -> Finding:
    """One finding on the step frame. A column it reads that the frame lacks stops the
    render (:class:`FindingError` naming both), unless the finding is in
    :data:`OPTIONAL`; an error inside it is re-raised naming it, never read as 'too few
    steps'. A finding whose steps are too few says so itself (its ``failed`` return)."""
    name = fn.__name__
    key = name.replace("_", " ")
    if name not in READS:
        raise FindingError(f"finding '{key}' declares no columns it reads (findings.READS)")
    missing = [c for c in READS[name] if c not in f.columns]
    if missing and name in OPTIONAL:
        return failed(key, "its columns exist",
                      f"optional ({OPTIONAL[name]}); column '{missing[0]}' is missing")
    if missing:
        raise FindingError(f"finding '{key}': column '{missing[0]}' is missing from the "
                           "step frame")
    try:
        return fn(f)
    except (KeyError, ValueError, IndexError, ZeroDivisionError) as e:
        raise FindingError(f"finding '{key}' failed on its inputs: {type(e).__name__}: {e}") \
            from e


def all_findings(f: pd.DataFrame) -> list[Finding]:
    """Every finding of the step frame, in the body's order (:func:`run_finding`)."""
    return [run_finding(fn, f) for fn in FINDINGS]


def report(found: list[Finding]) -> list[str]:
    """One log line per finding left out: its key, its condition and why it fails."""
    return [f"finding '{x.key}' not printed: {x.condition} does not hold ({x.why})"
            for x in found if not x.holds]
