"""Calibrate the step model on one run and predict every step of another (thin glue).

Calibration (card-level numbers) comes from a run's 1-stream step; the engine's shape
(weights, state, KV, token budget) comes from the predicted run's own record, so one card's
calibration can predict another engine configuration on that card.
"""

from __future__ import annotations

import statistics
from typing import Any

from claimcheck.core import definitions as d
from claimcheck.core import model as m
from claimcheck.core.cards import get_card
from claimcheck.core.errors import InputError
from claimcheck.core.verdicts import TOLERANCE
from claimcheck.report import steps as run_steps


def _one_stream_steps(run: run_steps.RunData) -> list[run_steps.StepData]:
    return [s for s in run.steps if s.timeline.streams == 1]


def _median_prompt(s: run_steps.StepData) -> float:
    return statistics.median(r.prompt_tokens for r in s.timeline.requests)


def decode_step(calib: run_steps.RunData) -> run_steps.StepData:
    """The 1-stream step that calibrates bandwidth: the one with the shortest prompts (its
    time is decode, not prefill); the last such step on a tie."""
    ones = _one_stream_steps(calib)
    if not ones:
        raise InputError(str(calib.path), "no 1-stream step to calibrate bandwidth from; "
                         "pass --calibrate-from a run with one (e.g. a ladder)")
    shortest = min(_median_prompt(x) for x in ones)
    return [x for x in ones if _median_prompt(x) == shortest][-1]


def compute_step(run: run_steps.RunData) -> run_steps.StepData | None:
    """The 1-stream step that calibrates compute: the last with prompts of at least
    :data:`~claimcheck.core.model.LONG_PROMPT_TOKENS` (the held-prefill step where the
    protocol has one); None when the run has none."""
    long = [x for x in _one_stream_steps(run) if _median_prompt(x) >= m.LONG_PROMPT_TOKENS]
    return long[-1] if long else None


def calibration(calib: run_steps.RunData, target: run_steps.RunData,
                compute_run: run_steps.RunData | None = None) -> m.Calibration:
    """BW_eff and overhead from ``calib``'s 1-stream step with the shortest prompts; P_eff
    from ``compute_run``'s (default ``calib``'s) 1-stream step with prompts of at least
    :data:`~claimcheck.core.model.LONG_PROMPT_TOKENS`
    (prompt x F_body / (median TTFT less the per-request overhead)), else the card's
    datasheet dense rate at the target engine's compute dtype (said in the source)."""
    s = decode_step(calib)
    tl = s.timeline
    shape, _ = run_steps.engine_shape(calib)
    tpot_s = statistics.median(d.tpots_ms(tl)) / 1e3
    ctx = statistics.fmean(r.prompt_tokens + (r.output_tokens - 1) / 2 for r in tl.requests)
    prompt = round(_median_prompt(s))
    ttft = statistics.median(r.ttft_s for r in tl.requests)
    bw_src = (f"{calib.name} step {s.record['step']} repeat {s.record['repeat']} "
              f"(1 stream): median TPOT {tpot_s * 1e3:.3f} ms at {ctx:.0f} tokens of mean "
              f"context")
    crun = compute_run or calib
    x = compute_step(crun)
    if x is not None:
        p = _median_prompt(x)
        t = statistics.median(r.ttft_s for r in x.timeline.requests)
        flops = m.compute_from_prefill(shape, p, t)  # first pass: whole TTFT is compute
        overhead = 0.0
        for _ in range(3):  # the overhead (from the short step) depends little on P_eff
            overhead = m.calibrate(shape, tpot_s=tpot_s, context_tokens=ctx, ttft_s=ttft,
                                   prompt_tokens=prompt, bandwidth_source="",
                                   flops_s=flops, compute_source="").request_overhead_s
            flops = m.compute_from_prefill(shape, p, max(t - overhead, 1e-9))
        c_src = (f"{crun.name} step {x.record['step']} repeat {x.record['repeat']} "
                 f"(1 stream): {p:.0f}-token prompts x {shape.flops_body_per_token / 1e9:.1f} "
                 f"GFLOP/token over median TTFT {t:.3f} s less the {overhead * 1e3:.1f} ms "
                 "per-request overhead")
    else:
        _, info = run_steps.engine_shape(target)
        card = get_card(target.provenance["card"])
        dtype = info["compute_dtype"]
        flops = card.tflops(dtype) * 1e12
        c_src = (f"fallback: {card.name} datasheet dense {dtype} {card.tflops(dtype):g} "
                 f"TFLOP/s (no 1-stream step with prompts of {m.LONG_PROMPT_TOKENS}+ tokens "
                 f"in {crun.name})")
    return m.calibrate(shape, tpot_s=tpot_s, context_tokens=ctx, ttft_s=ttft,
                       prompt_tokens=prompt, bandwidth_source=bw_src, flops_s=flops,
                       compute_source=c_src)


def predict(target: run_steps.RunData, calib: run_steps.RunData,
            compute_run: run_steps.RunData | None = None) -> dict[str, Any]:
    """Predicted and measured end to end and decode aggregate for every step of ``target``
    (compute calibrated on ``compute_run`` when given, see :func:`calibration`)."""
    cal = calibration(calib, target, compute_run)
    shape, info = run_steps.engine_shape(target)
    crun = compute_run or calib
    cstep = compute_step(crun)
    used = {(calib.path.resolve(), decode_step(calib).record["dir"])}
    if cstep is not None:
        used.add((crun.path.resolve(), cstep.record["dir"]))
    rows = []
    for s in target.steps:
        tl = s.timeline
        reqs = tl.requests
        sim = m.simulate(shape, cal, [r.prompt_tokens for r in reqs],
                         [r.output_tokens for r in reqs], tl.streams)
        p_e2e = d.e2e_aggregate_tok_s(sim.timeline)
        p_dec = d.decode_aggregate_tok_s(sim.timeline)
        m_e2e = d.e2e_aggregate_tok_s(tl)
        m_dec = d.decode_aggregate_tok_s(tl)
        p_tpot = statistics.median(d.tpots_ms(sim.timeline))
        m_tpot = statistics.median(d.tpots_ms(tl))
        sh = m.shares(sim)
        # A held-prefill step (1-2 tokens out per request) has no decode to compare.
        held = d.timeline_is_held_prefill(tl)
        if held:
            p_dec = m_dec = None
        rows.append({
            "step": s.record["step"], "repeat": s.record["repeat"], "streams": tl.streams,
            "requests": len(reqs),
            "calibration_step": (target.path.resolve(), s.record["dir"]) in used,
            "predicted_e2e_tok_s": p_e2e, "measured_e2e_tok_s": m_e2e,
            "e2e_error": p_e2e / m_e2e - 1,
            "predicted_decode_tok_s": p_dec, "measured_decode_tok_s": m_dec,
            "decode_error": (p_dec / m_dec - 1) if p_dec and m_dec and not held else None,
            "prefill_held": held,
            "predicted_median_tpot_ms": p_tpot, "measured_median_tpot_ms": m_tpot,
            "predicted_median_ttft_s": statistics.median(r.ttft_s for r in sim.timeline.requests),
            "measured_median_ttft_s": statistics.median(r.ttft_s for r in reqs),
            "bound": sim.bound, "engine_steps": sim.engine_steps, **sh,
        })
    return {"run": target.name, "calibrated_on": calib.name, "calibration": cal.as_dict(),
            "engine": info, "steps": rows}


PREFILL_SHARE = 0.25
"""A missed step whose simulated busy time was compute-bound (prefill chunks) for at least
this share is named for its prefill, even when memory bounded most of it: its TPOT carries
the stalls other prompts' chunks cause."""


def miss_term(row: dict[str, Any], tolerance: float = TOLERANCE) -> str | None:
    """Which term a missed step points at, or None when both aggregates are within
    ``tolerance``.

    The median TPOT isolates the per-step terms: when its speed is off by more than the
    tolerance, the step's memory (or compute) term is named with its largest part; when it
    is not, the miss is in what lies between decode steps: admission and prefill of each
    wave (the ramp), read off the predicted and measured median TTFT.
    """
    e2e, dec = row["e2e_error"], row["decode_error"] or 0.0
    if abs(e2e) <= tolerance and abs(dec) <= tolerance:
        return None
    if row.get("prefill_held"):
        return (f"the prefill (compute) term: predicted median TTFT "
                f"{row['predicted_median_ttft_s']:.3f} s, measured "
                f"{row['measured_median_ttft_s']:.3f} s")
    step_err = row["measured_median_tpot_ms"] / row["predicted_median_tpot_ms"] - 1
    if abs(step_err) > tolerance:
        head = (f"the per-step {row['bound']} term: predicted TPOT "
                f"{row['predicted_median_tpot_ms']:.2f} ms, measured "
                f"{row['measured_median_tpot_ms']:.2f} ms ({step_err:+.1%} speed)")
        share = row.get("compute_bound_share", 0) or 0
        if row["bound"] == "compute" or share >= PREFILL_SHARE:
            return (f"{head}; compute bounded {share:.0%} of the simulated busy time (prefill "
                    "chunks sharing decode steps: a request's TPOT waits on other prompts)")
        part = max(("weights", "state", "kv"),
                   key=lambda k: row.get(f"{k}_share_of_memory", 0.0))
        return (f"{head}; its largest part is {part} "
                f"({row.get(f'{part}_share_of_memory', 0):.0%} of the memory time)")
    return (f"the ramp of each wave (admission and prefill), not the decode step "
            f"({step_err:+.1%} on TPOT): predicted median TTFT "
            f"{row['predicted_median_ttft_s']:.2f} s, measured "
            f"{row['measured_median_ttft_s']:.2f} s")


def _preference(c: run_steps.RunData, target: run_steps.RunData) -> tuple[bool, bool, str]:
    """Sort key for a calibration candidate: the target's engine, then its weight format
    (an FP8 rate is no BF16 one), then the name (deterministic)."""
    def fmt(r: run_steps.RunData) -> Any:
        return r.provenance.get("engine_config", {}).get("weight_format")
    return (c.provenance.get("engine") == target.provenance.get("engine"),
            fmt(c) == fmt(target), c.name)


def calibration_run(target: run_steps.RunData,
                    candidates: list[run_steps.RunData]) -> run_steps.RunData:
    """The run that calibrates ``target``'s card: among ``candidates`` on the same card with
    a 1-stream step, prefer the same engine, then the same weight format, then the name
    (deterministic). Compute comes from :func:`compute_run`."""
    card = target.provenance.get("card")
    ok = [c for c in candidates
          if c.provenance.get("card") == card and _one_stream_steps(c)]
    if not ok:
        raise InputError(str(target.path), f"no run on card {card!r} with a 1-stream step "
                         "to calibrate the model from; pass --calibrate-from a run with one "
                         "(one stream, short prompts)")
    return max(ok, key=lambda c: _preference(c, target))


def compute_run(target: run_steps.RunData,
                candidates: list[run_steps.RunData]) -> run_steps.RunData | None:
    """A run on ``target``'s card with a long-prompt 1-stream step (effective compute is the
    card's, measured once), preferring the same engine, then the same weight format (an FP8
    prefill rate is no BF16 one), then the name; None when none."""
    card = target.provenance.get("card")
    ok = [c for c in candidates if c.provenance.get("card") == card
          and any(_median_prompt(x) >= m.LONG_PROMPT_TOKENS for x in _one_stream_steps(c))]
    if not ok:
        return None

    return max(ok, key=lambda c: _preference(c, target))
