"""The plain roofline at a registry claim's own configuration (card, weights, streams,
context): the claims table's and every verdict's, by :func:`claimcheck.physics.inputs.roofline_for`
(pure: loaded registries in, a dict of numbers and their sources out). Speeds in tok/s,
aggregate over the streams given; times in ms.
"""

from __future__ import annotations

from typing import Any

from claimcheck.claims.claims import Claim
from claimcheck.claims.metrics import METRICS
from claimcheck.physics import roofline as rl
from claimcheck.physics.cards import Card, Ceiling
from claimcheck.physics.geometry import Geometry
from claimcheck.physics.inputs import (
    COMPUTE_DTYPE,
    WeightRow,
    Weights,
    fit_reason,
    memory_wall,
    past_wall_reason,
    roofline_for,
)

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
                   tflops: float | None = None, *, conv_state_dtype: str) -> dict[str, Any]:
    """The roofline at a claim's own configuration (card, weights, streams, context), by
    :func:`claimcheck.physics.inputs.roofline_for`.

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
    inputs, :func:`claimcheck.verdicts.sourcemodel.band`); ``tflops`` replaces the ceiling the
    card and power limit pick (a compute range's other end). S is a measured step's
    (:func:`claimcheck.physics.inputs.state_bytes`): the recurrent state at the state dtype plus
    the conv state at ``conv_state_dtype``, the model dtype
    (:func:`claimcheck.physics.engine_inputs.model_dtype` of config.json).
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
    try:  # the one physics check of every road (physics.inputs): a claim that cannot fit
        model, src = roofline_for(  # its card gets no roofline, said in the note
            geom, card, weights=weights, ceilings=ceilings,
            weight_rows=weight_rows or {}, compute_dtype=COMPUTE_DTYPE.get(fmt or "", "bf16"),
            power_limit_w=c["power_limit_w"], eta=eta, context_tokens=c["context_tokens"] or 0,
            tflops=tflops, kv_dtype=c.get("kv_dtype") or None, check_memory=True,
            conv_state_dtype=conv_state_dtype)
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
