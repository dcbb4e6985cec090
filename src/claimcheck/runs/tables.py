"""Derived tables: measured runs with each step's roofline (a claim's own roofline is
:func:`claimcheck.claims.claim_roofline.claim_roofline`).

Pure functions over loaded data; the tables are written by :mod:`claimcheck.files.framefiles`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from claimcheck.files.framefiles import write_table
from claimcheck.files.frames import to_frame
from claimcheck.physics import roofline as rl
from claimcheck.physics.cards import Card, Ceiling
from claimcheck.physics.engine_inputs import EngineInputs
from claimcheck.physics.geometry import Geometry
from claimcheck.physics.inputs import Weights, roofline_for
from claimcheck.physics.units import GB, GIB
from claimcheck.runs.run import Run


def engine_roofline(ei: EngineInputs, geom: Geometry, card: Card,
                    ceilings: dict[str, Ceiling] | None = None, *, context_tokens: float,
                    eta: float = 1.0, state_dtype: str | None = None,
                    kv_dtype: str | None = None, ceiling: str | None = None,
                    source: str = "engine log") -> tuple[rl.Roofline, dict[str, Any]]:
    """The roofline of an engine's inputs (:mod:`claimcheck.physics.engine_inputs`: W without
    the input embedding, S with the conv state) by
    :func:`claimcheck.physics.inputs.roofline_for` for the ceiling; W, S and kappa are the
    engine's exactly. ``state_dtype``/``kv_dtype`` (a preset's) replace the engine's."""
    state = state_dtype or ei.state_dtype
    kv = kv_dtype or ei.kv_dtype
    model, src = roofline_for(
        geom, card, weights=Weights(size=ei.weight_bytes / GB, unit="GB", source=source),
        ceilings=ceilings or {}, weight_rows={}, compute_dtype=ei.compute_dtype,
        ceiling=ceiling, state_dtype=state, kv_dtype=kv, context_tokens=context_tokens, eta=eta,
        conv_state_dtype=ei.conv_state_dtype)
    model = dataclasses.replace(model, weight_bytes=ei.weight_bytes)  # W exactly, not via GB
    src.update(weights=ei.weights_source, weight_bytes=ei.weight_bytes)
    return model, src


def step_roofline(run: Run, step: dict[str, Any], geom: Geometry, card: Card,
                  ceilings: dict[str, Ceiling] | None = None,
                  eta: float = 1.0) -> dict[str, Any]:
    """The roofline for one measured step (:func:`engine_roofline` of the run's engine
    inputs), context = prompt + output. ``roofline_weights_gib`` is W, the weights read per
    step (the engine's GiB less the input embedding), in GiB."""
    ei = run.engine_inputs
    if ei is None or run.weights_gib is None:
        return {"roofline_tok_s": None}
    model, src = engine_roofline(ei, geom, card, ceilings,
                                 context_tokens=step["context_tokens_per_stream"], eta=eta)
    p = rl.point(model, step["streams"])
    return {"roofline_tok_s": p.aggregate_tok_s, "roofline_per_stream_tok_s":
            p.per_stream_tok_s, "roofline_bound": p.bound,
            "roofline_state_dtype": ei.state_dtype, "roofline_kv_dtype": ei.kv_dtype,
            "roofline_weights_gib": ei.weight_bytes / GIB,
            "roofline_state_bytes": ei.state_bytes_per_stream,
            "roofline_tflops": src["tflops"], "roofline_eta": eta}


def measured_over(measured: float | None, predicted: float | None) -> float | None:
    """Measured / predicted (both tok/s), or None when either is missing or zero."""
    return measured / predicted if measured and predicted else None


def run_rows(runs: Iterable[Run], geom: Geometry, cards: dict[str, Card],
             all_steps: bool = True, ceilings: dict[str, Ceiling] | None = None
             ) -> list[dict[str, Any]]:
    """One row per step, joined with the run's provenance and, for completed steps, its
    roofline. Failed steps keep their status and reason and get no roofline."""
    rows = []
    for run in runs:
        p = run.provenance
        kept = {id(s) for s in run.reported}
        for s in run.rows:
            if not all_steps and id(s) not in kept:
                continue
            row = {"run": run.name, "card": p.card, "engine": p.engine,
                   "protocol": p.protocol, "weights": p.weights,
                   "weights_label": p.weights_label, "run_status": p.status,
                   "reported": id(s) in kept, "gpu_name": p.gpu.name,
                   "max_num_seqs": p.engine_config.max_num_seqs,
                   "power_limit_w": p.gpu.power_limit_enforced_w,
                   "driver": p.driver_version,
                   "vllm": p.software.get("vllm"), "vllm_commit": p.software.get("vllm_commit"),
                   "torch": p.software.get("torch"), "stream_relation": "independent_requests",
                   **s}
            if p.card in cards and s["status"] == "complete":
                row.update(step_roofline(run, s, geom, cards[p.card], ceilings))
                row["bandwidth_fraction"] = measured_over(
                    s.get("streams_x_1000_over_median_tpot_tok_s_per_stream"),
                    row.get("roofline_per_stream_tok_s"))
            rows.append(row)
    return rows


def with_rooflines(run: Run, geom: Geometry, cards: dict[str, Card],
                   ceilings: dict[str, Ceiling] | None = None) -> Run:
    """The run with its step table joined to its provenance and, for completed steps, each
    step's roofline (:func:`run_rows`): the table its run record holds."""
    return dataclasses.replace(run, table=to_frame(run_rows([run], geom, cards,
                                                            ceilings=ceilings)))


write_csv = write_table
"""Derived tables are written from typed DataFrames
(:func:`claimcheck.files.framefiles.write_table`: CSV plus its dtypes; read back with
:func:`claimcheck.files.framefiles.read_table`)."""
