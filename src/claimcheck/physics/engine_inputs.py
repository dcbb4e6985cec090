"""What one engine, as a run configured it, puts into the arithmetic: the one road for the
roofline of a measured step, the calibrated model and the roofline presets drawn from a run.

- W, weight bytes read per step: the engine's own "Model loading took X GiB" (start log)
  less the input embedding at the model dtype (read by lookup, a few rows per token, not
  streamed every step); without that line, the weight format applied to the weights read
  per token (:func:`claimcheck.physics.weights.weight_bytes`).
- S, state bytes per stream: the recurrent (DeltaNet) state at the engine's state dtype plus
  the short-convolution state at the model dtype; both are read and written every step
  (:func:`claimcheck.physics.inputs.state_bytes`, the one rule for claims and steps).
- kappa, KV bytes per token of context at the engine's KV dtype.
- dtype names go through :mod:`claimcheck.physics.inputs`' engine tables; "auto" state is the
  config's ``mamba_ssm_dtype`` (vLLM's rule), else the table's; "auto" KV is the model dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from claimcheck.physics.formats import state_dtype_bytes
from claimcheck.physics.geometry import Geometry
from claimcheck.physics.inputs import (
    COMPUTE_DTYPE,
    ENGINE_KV_DTYPE,
    ENGINE_STATE_DTYPE,
    engine_dtype,
    state_bytes,
)
from claimcheck.physics.units import GB, GIB
from claimcheck.physics.weights import weight_bytes as format_weight_bytes


@dataclass(frozen=True)
class EngineInputs:
    """One engine's inputs to the arithmetic; bytes are bytes (GB = 1e9 only in labels)."""

    weight_bytes: float
    """W: bytes read per step (input embedding left out)."""
    weights_source: str
    engine_weights_gib: float | None
    """What the engine reported at start, GiB (embedding included), or None."""
    embed_bytes: float
    model_dtype: str
    state_dtype: str
    conv_state_dtype: str
    kv_dtype: str
    compute_dtype: str
    state_bytes_per_stream: float
    """S: recurrent state at ``state_dtype`` + conv state at ``conv_state_dtype``, bytes."""
    kv_bytes_per_token: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def model_dtype(config: Mapping[str, Any]) -> str:
    """The model's dtype in the roofline's names (bf16, fp16, fp32): config.json's ``dtype``
    or ``torch_dtype`` (the older key), at the top or in ``text_config`` (a multimodal
    wrapper's), default bfloat16; ValueError naming an unknown one."""
    text = config.get("text_config") or {}
    raw = next((c[k] for c in (config, text) for k in ("dtype", "torch_dtype") if c.get(k)),
               "bfloat16")
    return engine_dtype(ENGINE_KV_DTYPE, str(raw), "model")


def embed_bytes(geom: Geometry, dtype: str) -> float:
    """Bytes of the input embedding at ``dtype``."""
    return geom.components.get("embed", 0) * state_dtype_bytes(dtype)


def weights_read_per_step(geom: Geometry, dtype: str, engine_gib: float | None,
                          weight_format: str | None) -> tuple[float, str]:
    """W in bytes and where it came from: the engine's GiB less the input embedding at the
    model ``dtype``; else ``weight_format`` (else the model dtype) x weights per token."""
    if engine_gib is not None:
        emb = embed_bytes(geom, dtype)
        w = engine_gib * GIB - emb
        return w, (f"engine log: weights {engine_gib * GIB / GB:.2f} GB (the log's figure, "
                   f"converted) less input embedding {emb / GB:.2f} GB ({dtype}) = "
                   f"{w / GB:.2f} GB read per step")
    return format_weight_bytes(geom, fmt=weight_format or dtype)


def engine_inputs(geom: Geometry, config: Mapping[str, Any], engine: Mapping[str, Any],
                  engine_gib: float | None) -> EngineInputs:
    """The inputs for an engine configuration (``engine_config`` of a run's provenance: its
    ``weight_format``, ``kv_cache_dtype``, ``mamba_ssm_cache_dtype``) serving a model of
    ``config`` (config.json) and ``geom``, with the weight GiB the engine reported (or None).
    ValueError naming an unknown dtype."""
    mdt = model_dtype(config)
    ssm = engine.get("mamba_ssm_cache_dtype") or "auto"
    state = engine_dtype(ENGINE_STATE_DTYPE,
                         (geom.mamba_ssm_dtype or "auto") if ssm == "auto" else ssm, "state")
    kv_name = engine.get("kv_cache_dtype") or "auto"
    kv = mdt if kv_name == "auto" else engine_dtype(ENGINE_KV_DTYPE, kv_name, "KV")
    fmt = engine.get("weight_format") or None
    w, src = weights_read_per_step(geom, mdt, engine_gib, fmt)
    return EngineInputs(
        weight_bytes=w, weights_source=src, engine_weights_gib=engine_gib,
        embed_bytes=embed_bytes(geom, mdt), model_dtype=mdt, state_dtype=state,
        conv_state_dtype=mdt, kv_dtype=kv, compute_dtype=COMPUTE_DTYPE.get(fmt or "", mdt),
        state_bytes_per_stream=state_bytes(geom, state, mdt),
        kv_bytes_per_token=geom.kv_bytes_per_token(kv))
