"""model.csv: every step of every run predicted and measured, and the term a miss points at.

Each run is calibrated by :func:`claimcheck.calibration.calibrate.choose_for` among all the runs
(the calibration arithmetic is :mod:`claimcheck.calibration.calibration`'s); a step is within the
model when both its end-to-end and decode aggregates are (:func:`claimcheck.verdicts.accuracy.
within_both`), and a miss is named for its term by :func:`miss_term`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from claimcheck.calibration.calibrate import Choice, choose, choose_for, run_key
from claimcheck.calibration.calibration import calibration
from claimcheck.calibration.stepsim import predicted_step
from claimcheck.calibration.wavesources import cold_step
from claimcheck.config.configfiles import load_model_terms
from claimcheck.files.errors import InputError
from claimcheck.model import model as m
from claimcheck.runs.run import Run
from claimcheck.runs.steptable import measured_values
from claimcheck.verdicts.accuracy import error, within, within_both
from claimcheck.verdicts.verdicts import TOLERANCE


def predict_run(target: Run, choice: Choice,
                cache: dict[tuple[Any, ...], m.Calibration] | None = None,
                user_cards: str | None = None, as_sent: bool = False) -> dict[str, Any]:
    """Predicted and measured end to end and decode aggregate for every step of ``target``,
    with the calibration ``choice`` (steps it used are marked ``calibration_step``;
    ``user_cards``: a cards file merged over the registry for a datasheet fallback;
    ``as_sent``: each step also at its own send interval, :func:`step_rows`)."""
    shape, info = target.engine
    cal = calibration(choice, info["compute_dtype"], cache, user_cards)
    return {"run": target.name, "calibrated_on": choice.bandwidth.run.name,
            "calibration": cal.as_dict(), "choice": choice.as_dict(), "engine": info,
            "steps": step_rows(target, shape, cal, choice.steps(), as_sent)}


def step_rows(target: Run, shape: m.EngineShape, cal: m.Calibration,
              used: Collection[tuple[str, Any]] = (), as_sent: bool = False
              ) -> list[dict[str, Any]]:
    """Every step of ``target`` predicted with ``shape`` and ``cal`` as its timeline ran
    (its streams, each request's prompt and output tokens, cold where its first wave met a
    freshly started engine; its waves sent at the card's admission interval, as a step
    predicted before it ran: its own send interval is known only once it has) beside what
    it measured; a step of ``used`` (run name, step dir) is marked ``calibration_step``.
    With ``as_sent`` (cross-validation's diagnosis, a second simulation of each step sent
    as a wave), beside it ``as_sent_*``: the same step at its own send interval
    (``Calibration.for_sends``; None where that changes nothing), which no prediction before
    it could know."""
    rows = []
    for s in target.traces:
        tl = s.timeline
        reqs = tl.requests
        sized = ([r.prompt_tokens for r in reqs], [r.output_tokens for r in reqs], tl.streams,
                 cold_step(s))
        pred, _ = predicted_step(shape, cal, *sized)
        sent = cal.for_sends(tl.send_interval_s) if as_sent else cal
        at_sends = predicted_step(shape, sent, *sized)[0] if sent is not cal else {}
        held = s.held_prefill
        got = measured_values(target, s)
        m_e2e, m_dec = got["e2e"], got["decode"]
        p_e2e, p_dec = pred["predicted_e2e_tok_s"], pred["predicted_decode_tok_s"]
        rows.append({
            "step": s.record["step"], "repeat": s.record["repeat"], "streams": tl.streams,
            "requests": len(reqs),
            "calibration_step": (target.name, s.record["dir"]) in used,
            "step_status": s.record.get("status") or "complete",
            "predicted_e2e_tok_s": p_e2e, "measured_e2e_tok_s": m_e2e,
            "e2e_error": error(p_e2e, m_e2e),
            "predicted_decode_tok_s": p_dec, "measured_decode_tok_s": m_dec,
            "decode_error": error(p_dec, m_dec),
            **({"as_sent_e2e_error": error(at_sends.get("predicted_e2e_tok_s"), m_e2e),
                "as_sent_decode_error": error(at_sends.get("predicted_decode_tok_s"), m_dec)}
               if as_sent else {}),
            "prefill_held": held,
            "predicted_median_tpot_ms": pred["predicted_median_tpot_ms"],
            "measured_median_tpot_ms": got["tpot"],
            "predicted_median_ttft_s": pred["predicted_median_ttft_s"],
            "measured_median_ttft_s": got["ttft"],
            **{k: v for k, v in pred.items() if not k.startswith("predicted_")
               and k != "prefill_held"},
        })
    return rows


def predict(target: Run, calib: Run,
            compute_run: Run | None = None) -> dict[str, Any]:
    """:func:`predict_run` calibrated only on the run(s) given (``--calibrate-from``):
    bandwidth, overhead and compute by the module's rule among ``calib`` (and
    ``compute_run``), whatever their engine."""
    card, engine, fmt = run_key(target)
    given = [calib] + ([compute_run] if compute_run and compute_run is not calib else [])
    return predict_run(target, choose(given, card, engine, fmt, explicit=True))


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
    if within_both(row["e2e_error"], row["decode_error"], tolerance):
        return None
    if row.get("prefill_held"):
        return (f"the prefill (compute) term: predicted median TTFT "
                f"{row['predicted_median_ttft_s']:.3f} s, measured "
                f"{row['measured_median_ttft_s']:.3f} s")
    step_err = error(row["measured_median_tpot_ms"], row["predicted_median_tpot_ms"])
    if not within(step_err, tolerance):
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


def table_rows(runs: list[Run], unmodelled: list[str] | None = None,
               user_cards: str | None = None) -> list[dict[str, Any]]:
    """model.csv's rows: predicted / measured for every step of every run, each run
    calibrated by :func:`choose_for` among ``runs``, with the run, step and reason of each
    calibration input and the term a miss of more than 5% points at. A run that cannot be
    calibrated is left out, named with why in ``unmodelled`` (and on stderr)."""
    import sys
    rows = []
    cache: dict[tuple[Any, ...], m.Calibration] = {}
    terms = load_model_terms()  # config/protocols.yaml, read once here
    for target in runs:
        try:
            choice = choose_for(target, runs, terms)
            out = predict_run(target, choice, cache, user_cards)
        except InputError as e:
            why = f"{target.name} not modelled: {e}"
            print(f"claimcheck: model: {why}", file=sys.stderr)
            if unmodelled is not None:
                unmodelled.append(why)
            continue
        cal, prov = out["calibration"], target.provenance
        picks = {"bandwidth": choice.bandwidth, "overhead": choice.overhead,
                 "compute": choice.compute}
        base = {"run": target.name, "card": prov.card, "engine": prov.engine,
                "weight_format": run_key(target)[2],
                "protocol": (prov.protocol_config or {}).get("name"),
                "weights": prov.engine_config.recorded.get("weights"),
                "calibrated_on": choice.bandwidth.run.name,
                "bandwidth_gb_s": cal["bandwidth_gb_s"], "tflops": cal["tflops"],
                "request_overhead_ms": cal["request_overhead_s"] * 1e3,
                "bandwidth_source": cal["bandwidth_source"],
                "compute_source": cal["compute_source"],
                "overhead_source": cal["overhead_source"],
                "row_factors": "; ".join(f"{n}:{f:.4f}" for n, f in cal["row_factors"]),
                "row_factor_source": cal["row_factor_source"],
                "admission_interval_ms": cal["admission_interval_s"] * 1e3,
                "admission_source": cal["admission_source"],
                "kv_bandwidth_gb_s": (cal["kv_bandwidth_bytes_s"] / 1e9
                                      if cal["kv_bandwidth_bytes_s"] else None),
                "kv_source": cal["kv_source"],
                "mixed_prefill_factor": cal["mixed_prefill_factor"],
                "mixed_prefill_source": cal["mixed_prefill_source"]}
        for k, p in picks.items():
            base[f"{k}_step"] = p.label if p else ""
            base[f"{k}_why"] = p.why if p else choice.compute_missing
        for r in out["steps"]:
            rows.append({**base, **r, "miss_term": miss_term(r)})
    return rows

