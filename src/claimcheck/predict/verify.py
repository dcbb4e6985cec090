"""Verify mode: measure a sample of a protocol's steps, predict the rest (glue).

For a protocol on an engine + card that already has a calibration (:func:`claimcheck.calibration.
calibrate.choose`), :func:`plan` predicts every step, picks the ``n`` steps
:func:`~claimcheck.predict.protocolpredict.verify_plan` samples (its calibration steps are measured
already, in the runs that calibrate it) and returns the protocol cut down to those steps
(one repeat each) with a record of every prediction, written into the run's provenance
before anything is measured. :func:`compare` sets a finished verify run's measured steps
against those predictions, with the GPU seconds the run took against the whole protocol's
predicted load. All numbers through :mod:`claimcheck.readings.definitions` on the timeline.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.predict.protocolpredict import predict_protocol, verify_plan
from claimcheck.runs.run import Run
from claimcheck.runs.steptable import measured_values
from claimcheck.verdicts.accuracy import error, within_both
from claimcheck.verdicts.verdicts import TOLERANCE

PREDICTED_KEYS = ("predicted_e2e_tok_s", "predicted_decode_tok_s",
                  "predicted_median_tpot_ms", "predicted_median_ttft_s", "predicted_load_s")


def plan(runs: list[Run], card: str, engine: str, proto: Any, n: int,
         engines: dict[str, Any] | None = None, user_cards: str | None = None
         ) -> tuple[Any, dict[str, Any]]:
    """(the protocol cut to its ``n`` sampled steps, one repeat each; the verify record:
    the sampled indices, every step's prediction and the calibration used). Raises
    InputError when nothing is left to measure."""
    prediction = predict_protocol(runs, card, engine, proto, engines, user_cards)
    vp = verify_plan(prediction, n, [proto])
    pred = prediction.report
    picked = vp["sampled_steps"]
    if not picked:
        raise InputError("--verify", f"protocol {proto.name}: no step left to sample on "
                         f"{engine} (every step is a calibration step or does not fit)")
    cut = dataclasses.replace(proto, steps=tuple(proto.steps[i] for i in picked), repeats=1)
    record = {
        "of_protocol": proto.name, "sampled": n, "sampled_steps": picked,
        "predicted_steps": vp["predicted_steps"],
        "calibration_protocol_steps": vp["calibration_protocol_steps"],
        "calibration": {k: v for k, v in pred["calibration"].items()
                        if k.endswith("_source") or k in ("bandwidth_gb_s", "tflops",
                                                           "request_overhead_s")},
        "engine_run": pred["engine_run"],
        "protocol_predicted_load_s": pred["predicted_load_s"],
        "verify_predicted_load_s": vp["verify_load_s"] - sum(
            c["predicted_load_s"] for c in vp["calibration_steps"]),
        "steps": [{"index": r["index"], "streams": r["streams"], "requests": r["requests"],
                   "input_len": r["input_len"], "output_len": r["output_len"],
                   **{k: r.get(k) for k in PREDICTED_KEYS}} for r in pred["steps"]],
    }
    return cut, record


def compare(run: Run, tolerance: float = TOLERANCE) -> dict[str, Any]:
    """A verify run's measured steps against the predictions in its provenance (key
    ``verify``), and its GPU seconds against the whole protocol's predicted load."""
    rec = run.provenance.verify
    if not rec:
        raise InputError(str(run.path / "provenance.json"), "not a verify run (no 'verify' "
                         "record)", key="verify")
    by_index = {s["index"]: s for s in rec["steps"]}
    rows = []
    for s in run.traces:
        k = int(s.record["step"])
        if not 0 <= k < len(rec["sampled_steps"]):
            raise InputError(str(run.path / "provenance.json"), f"its verify record samples "
                             f"{len(rec['sampled_steps'])} step(s), but the run has a step "
                             f"{k}: not the run that record was made for", key="verify")
        idx = rec["sampled_steps"][k]
        p = by_index[idx]
        tl = s.timeline
        got = measured_values(run, s)
        m_e2e, m_dec = got["e2e"], got["decode"]
        row = {"index": idx, "streams": tl.streams, "requests": len(tl.requests),
               "context_tokens": p["input_len"] + p["output_len"],
               "status": s.record.get("status") or "complete",
               "predicted_e2e_tok_s": p["predicted_e2e_tok_s"], "measured_e2e_tok_s": m_e2e,
               "predicted_decode_tok_s": p["predicted_decode_tok_s"],
               "measured_decode_tok_s": m_dec}
        row["e2e_error"] = error(p["predicted_e2e_tok_s"], m_e2e)
        row["decode_error"] = error(p["predicted_decode_tok_s"], m_dec)
        row["within"] = (row["status"] == "complete"
                         and within_both(row["e2e_error"], row["decode_error"], tolerance))
        rows.append(row)
    spent = float(run.provenance.duration_s or 0.0)
    return {"run": run.name, "of_protocol": rec["of_protocol"], "measured": rows,
            "within": sum(r["within"] for r in rows), "tolerance": tolerance,
            "predicted_only": [by_index[i] for i in rec["predicted_steps"]],
            "gpu_s": spent, "protocol_predicted_load_s": rec["protocol_predicted_load_s"],
            "device": "CPU" if run.provenance.card == "cpu" else "GPU"}


def render(c: dict[str, Any]) -> list[str]:
    """Plain-text lines of :func:`compare` (one unit per line's numbers)."""
    out = [f"verify {c['run']} ({c['of_protocol']}): {c['within']} of {len(c['measured'])} "
           f"measured step(s) within {c['tolerance']:.0%} of the prediction made before "
           "measuring"]
    def speed(v: float | None, n: int) -> str:
        """An aggregate with its per-stream share."""
        return "n/a" if v is None else f"{v:,.1f} tok/s ({v / n:,.1f} per stream)"
    for r in c["measured"]:
        n = r["streams"]
        dec = (f"; decode aggregate (first tokens and the time before them left out) predicted "
               f"{speed(r['predicted_decode_tok_s'], n)}, measured "
               f"{speed(r['measured_decode_tok_s'], n)} ({r['decode_error']:+.1%})"
               if r["decode_error"] is not None else "")
        e2e = (f"{r['e2e_error']:+.1%}" if r["e2e_error"] is not None else "n/a")
        out.append(f"  step {r['index']}: {n} independent streams, {r['requests']} requests, up "
                   f"to {r['context_tokens']:,} tokens of context per stream, {r['status']}: "
                   f"end to end (summed over the streams, prefill included) predicted "
                   f"{speed(r['predicted_e2e_tok_s'], n)}, measured "
                   f"{speed(r['measured_e2e_tok_s'], n)} ({e2e}){dec}")
    for p in c["predicted_only"]:
        n = p["streams"]
        out.append(f"  step {p['index']}: {n} independent streams, up to "
                   f"{p['input_len'] + p['output_len']:,} tokens of context per stream, "
                   f"predicted only: end to end (summed over the streams, prefill included) "
                   f"{speed(p['predicted_e2e_tok_s'], n)}")
    out.append(f"{c.get('device', 'GPU')} time: this run {c['gpu_s']:,.0f} s (engine start "
               f"not counted); the whole protocol, predicted: "
               f"{c['protocol_predicted_load_s']:,.0f} s of load")
    return out
