"""The speculation table (data/derived/speculation.csv): every step of every drafting run
beside the hand prediction kept before it (data/raw/predictions/hand/speculation-<engine>.json),
the verify-rows model (:mod:`claimcheck.predict.specpredict`) and the measured plain steps at
the same streams and at the same rows (streams x verify rows).

The plain steps are those of the runs the hand prediction names (``inputs.plain_runs``:
the BF16 ladder at 1-64 streams and the 256-stream bend at 96-256, 128 + 512 tokens, vLLM
0.26.0), median TPOT per step; a stream count between two measured ones is interpolated
linearly in streams and said so in ``*_source``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from claimcheck.calibration.layout import run_version
from claimcheck.files.errors import InputError
from claimcheck.files.frames import to_frame
from claimcheck.predict.specpredict import predict_drafting
from claimcheck.runs.run import Run

COLUMNS = (
    "run", "engine", "weights", "acceptance", "vllm_version", "streams",
    "verify_rows_per_stream", "rows_per_step", "tokens_kept_per_verify",
    "measured_median_tpot_ms", "measured_step_ms", "hand_step_ms", "hand_tpot_ms",
    "hand_step_error", "model_step_ms", "model_tpot_ms", "model_step_error",
    "model_loo_step_ms", "model_loo_step_error", "model_fitted_on", "model_bend",
    "model_draft_pass_overhead_ms", "model_other_step_ms", "model_other_step_error",
    "model_other_fitted_on",
    "plain_step_same_streams_ms", "plain_same_streams_source", "plain_step_same_rows_ms",
    "plain_same_rows_source", "step_over_plain_same_streams", "step_over_plain_same_rows")


def plain_points(runs: list[Run], names: list[str]) -> list[tuple[int, float, str]]:
    """(streams, median TPOT ms, run) of every completed step of the named plain runs, by
    streams; ValueError naming a run that is not committed."""
    by = {r.name: r for r in runs}
    out = []
    for n in names:
        if n not in by:
            raise ValueError(f"data/raw/runs/{n}: named by a hand prediction's "
                             "inputs.plain_runs, not committed")
        for row in by[n].table.to_dict("records"):
            if row.get("status") == "complete" and row.get("median_tpot_ms"):
                out.append((int(row["streams"]), float(row["median_tpot_ms"]), n))
    return sorted(out)


def plain_at(points: list[tuple[int, float, str]], streams: int) -> tuple[float | None, str]:
    """The plain step (ms) at ``streams``: measured, or linear between the nearest measured
    stream counts; (None, why) outside them (never extrapolated)."""
    for s, v, n in points:
        if s == streams:
            return v, f"{n} at {s} streams"
    lo = [p for p in points if p[0] < streams]
    hi = [p for p in points if p[0] > streams]
    if not lo or not hi:
        return None, f"no plain step at or around {streams} streams"
    (s0, v0, n0), (s1, v1, n1) = lo[-1], hi[0]
    v = v0 + (v1 - v0) * (streams - s0) / (s1 - s0)
    return v, f"interpolated between {n0} at {s0} and {n1} at {s1} streams"


def hand_prediction(hand_dir: Path, engine: str) -> dict[str, Any] | None:
    p = hand_dir / f"speculation-{engine}.json"
    return json.loads(p.read_text()) if p.is_file() else None


def _without(runs: list[Run], run: Run, card: str, engine: str, proto: Any,
             engines: dict[str, Any]) -> dict[str, Any] | None:
    """The drafting model of ``engine`` with ``run`` left out (its draft pass overhead then
    fitted on the engine's other drafting runs, else borrowed from the other engines
    drafting for its plain twin): a test of the fitted term on a run it never saw; None
    when no other drafting run is left to fit it on."""
    try:
        return predict_drafting([r for r in runs if r.name != run.name], card, engine,
                                proto, engines)
    except InputError:
        return None


def speculation_table(runs: list[Run], engines: dict[str, Any], protos: dict[str, Any],
                      hand_dir: Path, card: str = "h200") -> pd.DataFrame:
    """One row per step of every drafting run on ``card`` (columns :data:`COLUMNS`)."""
    rows = []
    for run in sorted((r for r in runs if r.drafts), key=lambda r: r.name):
        engine = run.provenance.engine_config.name
        hand = hand_prediction(hand_dir, engine)
        if hand is None:
            raise ValueError(f"{hand_dir}/speculation-{engine}.json: no hand prediction "
                             f"kept for the drafting run {run.name}")
        hand_steps = {int(s["streams"]): s for s in hand["steps"]}
        points = plain_points(runs, list(hand["inputs"]["plain_runs"]))
        model = predict_drafting(runs, card, engine, protos[run.protocol.name], engines)
        msteps = {int(s["streams"]): s for s in model["steps"]}
        other = _without(runs, run, card, engine, protos[run.protocol.name], engines)
        osteps = {int(s["streams"]): s for s in (other or {}).get("steps", [])}
        for row in run.table.to_dict("records"):
            if row.get("status") != "complete":
                continue
            b, r = int(row["streams"]), int(row["verify_rows_per_stream"])
            kept, tpot = float(row["tokens_kept_per_verify"]), float(row["median_tpot_ms"])
            step = tpot * kept
            h, m = hand_steps.get(b), msteps.get(b)
            ps, pss = plain_at(points, b)
            pr, prs = plain_at(points, b * r)
            rows.append({
                "run": run.name, "engine": engine, "weights": f"{engines[engine].weights} weights",
                "acceptance": row.get("spec_acceptance_set"), "vllm_version": run_version(run),
                "streams": b, "verify_rows_per_stream": r, "rows_per_step": b * r,
                "tokens_kept_per_verify": kept, "measured_median_tpot_ms": tpot,
                "measured_step_ms": step,
                "hand_step_ms": h and h["predicted_step_ms"],
                "hand_tpot_ms": h and h["predicted_median_tpot_ms"],
                "hand_step_error": h and h["predicted_step_ms"] / step - 1,
                "model_step_ms": m and m["predicted_step_ms"],
                "model_tpot_ms": m and m["predicted_median_tpot_ms"],
                "model_step_error": m and m["predicted_step_ms"] / step - 1,
                "model_loo_step_ms": m and m["loo_step_ms"],
                "model_loo_step_error": m and m["loo_step_ms"] and m["loo_step_ms"] / step - 1,
                "model_fitted_on": "; ".join(model["fitted_on"]),
                "model_bend": m and m["bend"],
                "model_draft_pass_overhead_ms": model["draft_pass_overhead_ms"],
                "model_other_step_ms": (o := osteps.get(b)) and o["predicted_step_ms"],
                "model_other_step_error": o and o["predicted_step_ms"] / step - 1,
                "model_other_fitted_on": other and "; ".join(other["fitted_on"]),
                "plain_step_same_streams_ms": ps, "plain_same_streams_source": pss,
                "plain_step_same_rows_ms": pr, "plain_same_rows_source": prs,
                "step_over_plain_same_streams": ps and step / ps,
                "step_over_plain_same_rows": pr and step / pr})
    if not rows:
        return pd.DataFrame(columns=list(COLUMNS))
    return to_frame([{c: r[c] for c in COLUMNS} for r in rows])  # typed: string, Int64
