"""The article's batching roofline (shared/seeds/000, "One weight read, shared by every stream").

    t_step(B) = max( (W + B (2S + kappa L)) / (eta BW),  B r F / P )
    aggregate = B tau / t_step,   per stream = tau / t_step

W weight bytes read per step, S recurrent-state bytes per stream (read and written each
step, hence 2S), kappa KV bytes per token of context, L context tokens per stream, BW
memory bandwidth in bytes/s, eta the fraction of it achieved, F FLOPs per verified
position, P compute ceiling in FLOP/s, r positions verified per stream per step, tau
tokens kept per stream per step. Pure functions; SI units (bytes, seconds, FLOP).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Roofline:
    """Inputs of the formula, in bytes, bytes/s, FLOP and FLOP/s."""

    weight_bytes: float
    bandwidth_bytes_s: float
    flops_per_row: float
    peak_flops_s: float
    eta: float = 1.0
    state_bytes: float = 0.0
    kv_bytes_per_token: float = 0.0
    context_tokens: float = 0.0
    rows: float = 1.0
    tau: float = 1.0

    def __post_init__(self) -> None:
        for name in ("weight_bytes", "bandwidth_bytes_s", "flops_per_row", "peak_flops_s",
                     "eta", "rows", "tau"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("state_bytes", "kv_bytes_per_token", "context_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")

    @property
    def per_stream_bytes(self) -> float:
        """Bytes moved per stream per step: state read + written, plus its KV cache."""
        return 2 * self.state_bytes + self.kv_bytes_per_token * self.context_tokens

    def with_(self, **kw: Any) -> Roofline:
        """A copy with some inputs changed."""
        return replace(self, **kw)


@dataclass(frozen=True)
class Point:
    """One stream count on the roofline. Times in ms, speeds in tok/s."""

    streams: int
    step_ms: float
    memory_ms: float
    compute_ms: float
    bound: str  # "memory" or "compute"
    aggregate_tok_s: float
    per_stream_tok_s: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def for_model(geom: Any, *, weight_bytes: float, bandwidth_bytes_s: float, tflops: float,
              eta: float = 1.0, state_dtype: str = "fp32", kv_dtype: str = "bf16",
              context_tokens: float = 0.0, rows: float = 1.0, tau: float = 1.0) -> Roofline:
    """The inputs for a model geometry (:class:`claimcheck.core.geometry.Geometry`): F from its
    FLOPs per token, S and kappa from its state and KV sizes at the given dtypes.
    ``tflops`` is the compute ceiling in TFLOP/s."""
    return Roofline(weight_bytes=weight_bytes, bandwidth_bytes_s=bandwidth_bytes_s,
                    flops_per_row=geom.flops_per_token, peak_flops_s=tflops * 1e12, eta=eta,
                    state_bytes=geom.state_bytes_per_stream(state_dtype),
                    kv_bytes_per_token=geom.kv_bytes_per_token(kv_dtype),
                    context_tokens=context_tokens, rows=rows, tau=tau)


def memory_time_s(m: Roofline, streams: float) -> float:
    """The bandwidth term: (W + B(2S + kappa L)) / (eta BW), seconds."""
    return (m.weight_bytes + streams * m.per_stream_bytes) / (m.eta * m.bandwidth_bytes_s)


def compute_time_s(m: Roofline, streams: float) -> float:
    """The arithmetic term: B r F / P, seconds."""
    return streams * m.rows * m.flops_per_row / m.peak_flops_s


def step_time_s(m: Roofline, streams: float) -> float:
    """t_step(B): the larger of the two terms, seconds."""
    return max(memory_time_s(m, streams), compute_time_s(m, streams))


def point(m: Roofline, streams: int) -> Point:
    """Evaluate the roofline at B streams, keeping both terms inspectable."""
    if streams < 1:
        raise ValueError(f"streams must be >= 1, got {streams}")
    mem, comp = memory_time_s(m, streams), compute_time_s(m, streams)
    step = max(mem, comp)
    return Point(streams=streams, step_ms=step * 1e3, memory_ms=mem * 1e3,
                 compute_ms=comp * 1e3, bound="memory" if mem >= comp else "compute",
                 aggregate_tok_s=streams * m.tau / step, per_stream_tok_s=m.tau / step)


def ceiling_b1_tok_s(m: Roofline) -> float:
    """The pocket-calculator line at one stream: eta BW / W tokens/s (weights only)."""
    return m.tau * m.eta * m.bandwidth_bytes_s / m.weight_bytes


def bend_streams(m: Roofline) -> float:
    """Stream count where the memory and compute terms meet (inf if they never do)."""
    slope = m.rows * m.flops_per_row / m.peak_flops_s - m.per_stream_bytes / (
        m.eta * m.bandwidth_bytes_s)
    if slope <= 0:
        return math.inf
    return m.weight_bytes / (m.eta * m.bandwidth_bytes_s) / slope


def compute_plateau_tok_s(m: Roofline) -> float:
    """Aggregate far past the bend: tau P / (r F) tokens/s."""
    return m.tau * m.peak_flops_s / (m.rows * m.flops_per_row)


def memory_wall_streams(free_bytes: float, state_bytes: float, kv_bytes_per_token: float,
                        context_tokens: float) -> int:
    """Most streams that fit in ``free_bytes``, each holding its state plus kappa L."""
    per = state_bytes + kv_bytes_per_token * context_tokens
    if per <= 0:
        raise ValueError("a stream must need some memory (state or KV)")
    return math.floor(free_bytes / per)


def tau_needed(m: Roofline, streams: int, aggregate_tok_s: float) -> float:
    """Tokens each stream must keep per step for ``aggregate_tok_s`` at B streams.

    Uses ``m.rows`` for the arithmetic term; tau in ``m`` is ignored.
    """
    return aggregate_tok_s * step_time_s(m, streams) / streams


def curve(m: Roofline, streams: list[int]) -> list[Point]:
    """Points for several stream counts."""
    return [point(m, b) for b in streams]
