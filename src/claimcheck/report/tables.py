"""Derived tables: claims with derived speeds, roofline predictions, measured runs.

Pure functions over loaded data; the tables are written by :mod:`claimcheck.core.frames`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from claimcheck.core import roofline as rl
from claimcheck.core.cards import Card, Ceiling
from claimcheck.core.claims import Claim
from claimcheck.core.engine_inputs import EngineInputs, state_bytes
from claimcheck.core.frames import write_table
from claimcheck.core.geometry import Geometry
from claimcheck.core.inputs import (
    COMPUTE_DTYPE,
    WeightRow,
    Weights,
    fit_reason,
    memory_wall,
    past_wall_reason,
    roofline_for,
)
from claimcheck.core.metrics import METRICS
from claimcheck.core.units import GB, GIB
from claimcheck.report.record import Run, reported_steps

# quantization label in the registry -> weight format for the arithmetic (4-bit-weight
# formats with 16-bit group scales are all counted as w4a16).
QUANT_FORMAT = {"w4a16": "w4a16", "int4": "w4a16", "w4a8": "w4a16", "nvfp4": "nvfp4",
                "bf16": "bf16", "fp8": "fp8", "int8": "int8"}


def weight_size_for(c: Claim, rows: dict[str, WeightRow]) -> WeightRow | None:
    """The first weights.csv row whose prefix matches the claim's checkpoint or system."""
    for row in rows.values():
        if (c[row.match_field] or "").startswith(row.match_prefix):
            return row
    return None


def _finite(x: float) -> float | None:
    """``x``, or None when it is infinite (JSON has no infinity)."""
    return None if x == float("inf") else x


def claim_roofline(c: Claim, geom: Geometry, cards: dict[str, Card],
                   ceilings: dict[str, Ceiling], eta: float = 1.0,
                   weight_rows: dict[str, WeightRow] | None = None,
                   tflops: float | None = None) -> dict[str, Any]:
    """The roofline at a claim's own configuration (card, weights, streams, context), by
    :func:`claimcheck.core.inputs.roofline_for`.

    Weights, state and KV dtypes come from the weights.csv row matching the claim, else
    from the quantization's format applied to the weights read per token (FP32 state, BF16
    KV). Returns ``roofline_tok_s`` (aggregate, eta as given, tau = 1),
    ``claim_over_roofline`` and ``tau_needed`` (tokens kept per stream per step the claim
    implies). Claims whose metric is prefill, whose card is unknown or whose weights have
    no byte count get a ``roofline_note`` instead. The KV dtype is the claim's ``kv_dtype``
    when the registry has one, else the weights row's. ``roofline_memory_wall_streams`` is
    the most streams whose state and KV at the claim's context fit beside the weights in the
    card's memory (None when even one does not). ``roofline_memory_ms`` and
    ``roofline_compute_ms`` are the step's two terms at the claim's streams (the band's
    inputs, :func:`claimcheck.core.sourcemodel.band`); ``tflops`` replaces the ceiling the
    card and power limit pick (a compute range's other end).
    """
    m = METRICS[c["metric"]]
    out: dict[str, Any] = {"id": c["id"], "roofline_tok_s": None,
                           "claim_over_roofline": None, "tau_needed": None,
                           "roofline_note": ""}
    fmt = QUANT_FORMAT.get((c["quantization"] or "").lower())
    if m.phase == "prefill":
        out["roofline_note"] = "prefill: the decode roofline does not apply"
        return out
    if c["card"] not in cards:
        out["roofline_note"] = f"card {c['card']} not in the registry"
        return out
    row = weight_size_for(c, weight_rows or {})
    if row:
        weights = Weights(id=row.id)
    elif fmt is not None:
        weights = Weights(format=fmt)
    else:
        out["roofline_note"] = f"no byte count for weights '{c['quantization'] or '?'}'"
        return out
    card = cards[c["card"]]
    try:  # the one physics check of every road (core.inputs): a claim that cannot fit
        model, src = roofline_for(  # its card gets no roofline, said in the note
            geom, card, weights=weights, ceilings=ceilings,
            weight_rows=weight_rows or {}, compute_dtype=COMPUTE_DTYPE.get(fmt or "", "bf16"),
            power_limit_w=c["power_limit_w"], eta=eta, context_tokens=c["context_tokens"] or 0,
            tflops=tflops, kv_dtype=c.get("kv_dtype") or None, check_memory=True)
        wall = memory_wall(model, card)
    except rl.RooflineInputError as e:
        out["roofline_note"] = fit_reason(e, card)
        return out
    b = c["streams"]
    out.update(memory_wall_streams=wall.streams if wall else None,
               memory_check=(past_wall_reason(wall, b, c["context_tokens"] or 0) or "")
               if wall else "")
    p = rl.point(model, b)
    out.update(roofline_tok_s=p.aggregate_tok_s, roofline_bound=p.bound,
               claim_over_roofline=c.aggregate_tok_s / p.aggregate_tok_s,
               tau_needed=rl.tau_needed(model, b, c.aggregate_tok_s),
               roofline_weights=(f"{row.size:g} {row.unit} (weights.csv {row.id})" if row
                                 else f"{fmt} format x weights per token"),
               roofline_state_dtype=src["state_dtype"], roofline_kv_dtype=src["kv_dtype"],
               roofline_compute=src["tflops_source"], roofline_tflops=src["tflops"],
               roofline_compute_dtype=src["compute_dtype"],
               roofline_memory_ms=p.memory_ms, roofline_compute_ms=p.compute_ms,
               roofline_bend_streams=_finite(rl.bend_streams(model)),
               roofline_memory_wall_streams=wall.streams if wall else None)
    return out


def engine_roofline(ei: EngineInputs, geom: Geometry, card: Card,
                    ceilings: dict[str, Ceiling] | None = None, *, context_tokens: float,
                    eta: float = 1.0, state_dtype: str | None = None,
                    kv_dtype: str | None = None, ceiling: str | None = None,
                    source: str = "engine log") -> tuple[rl.Roofline, dict[str, Any]]:
    """The roofline of an engine's inputs (:mod:`claimcheck.core.engine_inputs`: W without
    the input embedding, S with the conv state) by
    :func:`claimcheck.core.inputs.roofline_for` for the ceiling; W, S and kappa are the
    engine's exactly. ``state_dtype``/``kv_dtype`` (a preset's) replace the engine's."""
    state = state_dtype or ei.state_dtype
    kv = kv_dtype or ei.kv_dtype
    model, src = roofline_for(
        geom, card, weights=Weights(size=ei.weight_bytes / GB, unit="GB", source=source),
        ceilings=ceilings or {}, weight_rows={}, compute_dtype=ei.compute_dtype,
        ceiling=ceiling, state_dtype=state, kv_dtype=kv, context_tokens=context_tokens, eta=eta)
    s_bytes = state_bytes(geom, state, ei.conv_state_dtype)
    model = dataclasses.replace(model, weight_bytes=ei.weight_bytes, state_bytes=s_bytes)
    src.update(weights=ei.weights_source, weight_bytes=ei.weight_bytes,
               state_bytes_per_stream=s_bytes, conv_state_dtype=ei.conv_state_dtype)
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
        kept = {id(s) for s in reported_steps(run)}
        for s in run.steps:
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
                row["bandwidth_fraction"] = measured_over(s.get("per_stream_tok_s"),
                                                          row.get("roofline_per_stream_tok_s"))
            rows.append(row)
    return rows


write_csv = write_table
"""Derived tables are written from typed DataFrames (:func:`claimcheck.core.frames.write_table`:
CSV plus its dtypes; read back with :func:`claimcheck.core.frames.read_table`)."""
