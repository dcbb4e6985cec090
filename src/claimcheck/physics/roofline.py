"""The article's batching roofline (shared/seeds/000, "One weight read, shared by every stream").

    t_step(B) = max( (W + B (2S + kappa L)) / (eta BW),  B r F / P )
    aggregate = B tau / t_step,   per stream = tau / t_step

W weight bytes read per step, S recurrent-state bytes per stream (read and written each
step, hence 2S), kappa KV bytes per token of context, L context tokens per stream, BW
memory bandwidth in bytes/s, eta the fraction of it achieved, F FLOPs per verified
position, P compute ceiling in FLOP/s, r positions verified per stream per step, tau
tokens kept per stream per step. Pure functions; SI units (bytes, seconds, FLOP).

The two terms are plain functions of numbers (:func:`memory_seconds`,
:func:`compute_seconds`, :func:`stream_bytes_moved`), written once: the :class:`Roofline`'s
times and points call them, and so does the step model (:mod:`claimcheck.model.model`) for
every simulated step, without building (and validating) a :class:`Roofline` per step. The
inputs are checked where they enter: :class:`Roofline`'s constructor here, the model's
``EngineShape`` and ``Calibration``.

Mixture of experts: W is not fixed. With k of E routed experts per token and B streams
each choosing its experts uniformly and independently, the expected fraction of routed
experts touched in one step is

    c(B) = 1 - (1 - k/E)^B

so W(B) = W_all - R (1 - c(B)), where W_all is every weight a step can read (all experts)
and R the bytes of all routed experts. B = 1 reads only the active experts
(W_all - R (1 - k/E)); large B reads every expert (W_all). Shared experts, the router,
attention and the head are read every step. Real routers are not uniform (popular experts
make c(B) smaller), so this is the expected read under that stated assumption.

Tensor parallel over n cards (Megatron-style, as vLLM's ``--tensor-parallel-size``): each
card holds 1/n of every layer's weights and of every stream's state and KV, so the memory
term reads (W(B) + B(2S + kappa L)) / n per card at the same time (bandwidth summed), and
the arithmetic term is B r F / (n P) (compute summed). Each layer then all-reduces its
activations twice (after attention/mixer and after the MLP): A = 2 N h a bytes per
verified position (N layers, hidden size h, a activation bytes). A ring all-reduce of M
bytes over n cards moves 2 (n - 1) / n M bytes each way per card over the card link of
X bytes/s each way, and is not overlapped with the step:

    t_step(B) = max(memory / n, compute / n) + 2 (n - 1) / n  B r A / X

At n = 1 the link term is 0 and every value equals the one-card formula exactly. Link
latency per all-reduce is left out (it only adds at small B).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, replace
from typing import Any


class RooflineInputError(ValueError):
    """An input the formula cannot take; ``field`` names the :class:`Roofline` field (the
    memory check names ``weight_bytes``, or ``free_bytes`` for free memory)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(reason)


@dataclass(frozen=True)
class Roofline:
    """Inputs of the formula, in bytes, bytes/s, FLOP and FLOP/s.

    ``weight_bytes`` is every weight byte a step can read (all experts of a MoE);
    ``routed_expert_bytes`` the part of it that is routed experts, of which each token uses
    ``experts_per_token`` of ``num_experts`` (all three 0 for a dense model). When
    ``memory_bytes`` (the card's memory) is given, the weights plus one stream's state and
    KV must fit in it, and the weights plus ``free_bytes`` (memory left for streams) too:
    this is the one memory check. Every input is refused with a
    :class:`RooflineInputError` naming its field and the bound.
    """

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
    routed_expert_bytes: float = 0.0
    experts_per_token: int = 0
    num_experts: int = 0
    memory_bytes: float | None = None
    cards: int = 1
    allreduce_bytes_per_row: float = 0.0
    link_bytes_s: float | None = None
    free_bytes: float | None = None

    def __post_init__(self) -> None:
        for name in ("weight_bytes", "bandwidth_bytes_s", "flops_per_row", "peak_flops_s",
                     "eta", "rows", "tau"):
            v = getattr(self, name)
            if not (isinstance(v, numbers.Real) and math.isfinite(v) and v > 0):
                raise RooflineInputError(name, f"{name} must be a finite number > 0, got {v!r}")
        for name in ("state_bytes", "kv_bytes_per_token", "context_tokens",
                     "routed_expert_bytes"):
            v = getattr(self, name)
            if not (isinstance(v, numbers.Real) and math.isfinite(v) and v >= 0):
                raise RooflineInputError(name, f"{name} must be a finite number >= 0, "
                                         f"got {v!r}")
        if self.eta > 1:
            raise RooflineInputError("eta", f"eta (fraction of bandwidth achieved) must be "
                                     f"<= 1, got {self.eta!r}")
        if self.rows < 1:
            raise RooflineInputError("rows", f"rows (positions verified per stream per step) "
                                     f"must be >= 1, got {self.rows!r}")
        if self.tau > self.rows:
            raise RooflineInputError("tau", f"tau ({self.tau:g} tokens kept per stream per "
                                     f"step) cannot exceed rows ({self.rows:g} positions "
                                     "verified)")
        if self.routed_expert_bytes:
            if self.routed_expert_bytes > self.weight_bytes:
                raise RooflineInputError("routed_expert_bytes", f"routed_expert_bytes "
                                         f"{self.routed_expert_bytes:g} exceeds weight_bytes "
                                         f"{self.weight_bytes:g}")
            if not 1 <= self.experts_per_token <= self.num_experts:
                raise RooflineInputError("experts_per_token", f"experts_per_token must be in "
                                         f"[1, num_experts = {self.num_experts}], got "
                                         f"{self.experts_per_token}")
        if not (isinstance(self.cards, int) and self.cards >= 1):
            raise RooflineInputError("cards", f"cards must be an integer >= 1, got "
                                     f"{self.cards!r}")
        if self.cards > 1:
            for name in ("allreduce_bytes_per_row", "link_bytes_s"):
                v = getattr(self, name)
                if not (isinstance(v, numbers.Real) and math.isfinite(v) and v > 0):
                    raise RooflineInputError(name, f"{name} must be a finite number > 0 for "
                                             f"{self.cards} cards, got {v!r}")
        if self.free_bytes is not None and not (isinstance(self.free_bytes, numbers.Real)
                                                and math.isfinite(self.free_bytes)
                                                and self.free_bytes > 0):
            raise RooflineInputError("free_bytes", f"free memory must be a finite number of "
                                     f"bytes > 0, got {self.free_bytes!r}")
        if self.memory_bytes is not None:
            self._check_fits()

    def _check_fits(self) -> None:
        """Weights plus one stream, and weights plus the free memory, within the card's
        memory (per card under tensor parallel: 1/n of each)."""
        n = self.cards
        mem = self.memory_bytes / 2**30  # type: ignore[operator]
        w = self.weight_bytes / n / 2**30
        one = (self.state_bytes + self.kv_bytes_per_token * self.context_tokens) / n / 2**30
        per = f" per card (1/{n} of each)" if n > 1 else ""
        if w + one > mem:
            raise RooflineInputError(
                "weight_bytes", f"{w:.2f} GiB of weights plus one stream's state and KV "
                f"({one:.2f} GiB){per} do not fit in the card's {mem:g} GiB")
        if self.free_bytes is not None and self.free_bytes / 2**30 + w > mem:
            raise RooflineInputError(
                "free_bytes", f"{self.free_bytes / 2**30:g} GiB free plus {w:.2f} GiB of "
                f"weights{per} exceeds the card's {mem:g} GiB")

    @property
    def per_stream_bytes(self) -> float:
        """Bytes moved per stream per step: state read + written, plus its KV cache
        (:func:`stream_bytes_moved`)."""
        return stream_bytes_moved(self.state_bytes, self.kv_bytes_per_token,
                                  self.context_tokens)

    @property
    def stream_memory_bytes(self) -> float:
        """Bytes one stream holds in memory (not moved): its state plus kappa L of KV, for
        the whole model (1/cards of it on each card)."""
        return self.state_bytes + self.kv_bytes_per_token * self.context_tokens

    @property
    def moe(self) -> bool:
        """True when the weights hold routed experts."""
        return self.routed_expert_bytes > 0

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


def stream_bytes_moved(state_bytes: float, kv_bytes_per_token: float,
                       context_tokens: float) -> float:
    """Bytes one stream moves per step: 2 S + kappa L (its state read and written, its KV
    cache of L tokens read). Bytes."""
    return 2 * state_bytes + kv_bytes_per_token * context_tokens


def memory_seconds(weight_bytes: float, streams: float, per_stream_bytes: float,
                   bandwidth_bytes_s: float, cards: int = 1) -> float:
    """The bandwidth term of one step: (W + B s) / BW seconds, for W weight bytes read, B
    streams each moving s bytes (:func:`stream_bytes_moved`) and BW bytes/s achieved (the
    roofline's eta BW). Over n cards each reads 1/n at the same time: divided by n. Inputs
    are not checked (the callers' constructors check them once)."""
    t = (weight_bytes + streams * per_stream_bytes) / bandwidth_bytes_s
    return t if cards == 1 else t / cards


def compute_seconds(streams: float, rows: float, flops_per_row: float, flops_s: float,
                    cards: int = 1) -> float:
    """The arithmetic term of one step: B r F / P seconds, for B streams of r positions
    each, F FLOP per position and P FLOP/s. Over n cards: B r F / (n P). Inputs are not
    checked (the callers' constructors check them once)."""
    t = streams * rows * flops_per_row / flops_s
    return t if cards == 1 else t / cards


def for_model(geom: Any, *, weight_bytes: float, bandwidth_bytes_s: float, tflops: float,
              eta: float = 1.0, state_dtype: str = "fp32", kv_dtype: str = "bf16",
              context_tokens: float = 0.0, rows: float = 1.0, tau: float = 1.0,
              memory_bytes: float | None = None, cards: int = 1,
              link_bytes_s: float | None = None,
              activation_bytes: float = 2.0, free_bytes: float | None = None) -> Roofline:
    """The inputs for a model geometry (:class:`claimcheck.physics.geometry.Geometry`): F from its
    FLOPs per token, S and kappa from its state and KV sizes at the given dtypes.

    ``weight_bytes`` is every weight byte a step can read (for a MoE: all experts, as a
    checkpoint holds them); the routed experts' share of it is the geometry's
    ``routed_expert_weights / weights_all_experts``. ``tflops`` is the compute ceiling in
    TFLOP/s; ``memory_bytes`` the card's memory and ``free_bytes`` the memory left for
    streams (checked against it when given). ``cards`` > 1 splits
    the model over that many cards joined by a link of ``link_bytes_s`` bytes/s each way;
    activations of ``activation_bytes`` bytes (2: bf16) are all-reduced twice per layer.
    """
    tp: dict[str, Any] = {}
    if cards > 1:
        tp = {"cards": cards, "link_bytes_s": link_bytes_s,
              "allreduce_bytes_per_row": allreduce_bytes_per_row(geom, activation_bytes)}
    routed = 0.0
    if getattr(geom, "num_experts", 0):
        routed = weight_bytes * geom.routed_expert_weights / geom.weights_all_experts
    return Roofline(weight_bytes=weight_bytes, bandwidth_bytes_s=bandwidth_bytes_s,
                    flops_per_row=geom.flops_per_token, peak_flops_s=tflops * 1e12, eta=eta,
                    state_bytes=geom.state_bytes_per_stream(state_dtype),
                    kv_bytes_per_token=geom.kv_bytes_per_token(kv_dtype),
                    context_tokens=context_tokens, rows=rows, tau=tau,
                    routed_expert_bytes=routed,
                    experts_per_token=getattr(geom, "experts_per_token", 0),
                    num_experts=getattr(geom, "num_experts", 0), memory_bytes=memory_bytes,
                    free_bytes=free_bytes, **tp)


def allreduce_bytes_per_row(geom: Any, activation_bytes: float = 2.0) -> float:
    """Bytes all-reduced per verified position under tensor parallel: 2 N h a (two
    all-reduces of the hidden state per layer, N layers, hidden size h, a bytes each)."""
    return 2.0 * geom.num_layers * geom.hidden_size * activation_bytes


def allreduce_time_s(m: Roofline, streams: float) -> float:
    """The link term: ring all-reduce of B r A bytes, 2 (n - 1) / n of it each way per
    card over X bytes/s; 0 at one card. Seconds."""
    if m.cards == 1:
        return 0.0
    return (2 * (m.cards - 1) / m.cards * streams * m.rows * m.allreduce_bytes_per_row
            / m.link_bytes_s)  # type: ignore[operator]


def expert_coverage(experts_per_token: int, num_experts: int, streams: float) -> float:
    """Expected fraction of routed experts touched in one step: 1 - (1 - k/E)^B.

    Assumes each of B streams picks its k of E experts uniformly and independently
    (one token per stream per step). B = 1 gives k/E; large B tends to 1.
    """
    if not 1 <= experts_per_token <= num_experts:
        raise ValueError(f"need 1 <= k <= E, got k = {experts_per_token}, E = {num_experts}")
    return 1.0 - (1.0 - experts_per_token / num_experts) ** streams


def weight_read_bytes(m: Roofline, streams: float) -> float:
    """Weight bytes read in one step at B streams: W for a dense model; for a MoE,
    W - R (1 - c(B)) with c(B) from :func:`expert_coverage` (shared parts always read)."""
    if not m.moe:
        return m.weight_bytes
    c = expert_coverage(m.experts_per_token, m.num_experts, streams)
    return m.weight_bytes - m.routed_expert_bytes * (1.0 - c)


def memory_time_s(m: Roofline, streams: float) -> float:
    """The bandwidth term: (W(B) + B(2S + kappa L)) / (eta BW), seconds (over n cards:
    each reads 1/n, at the same time): :func:`memory_seconds` of ``m``'s inputs."""
    return memory_seconds(weight_read_bytes(m, streams), streams, m.per_stream_bytes,
                          m.eta * m.bandwidth_bytes_s, m.cards)


def compute_time_s(m: Roofline, streams: float) -> float:
    """The arithmetic term: B r F / P, seconds (over n cards: B r F / (n P)):
    :func:`compute_seconds` of ``m``'s inputs."""
    return compute_seconds(streams, m.rows, m.flops_per_row, m.peak_flops_s, m.cards)


def _step_s(m: Roofline, streams: float, memory_s: float, compute_s: float) -> float:
    """t_step from its two terms: the larger, plus the link term over n cards, seconds."""
    t = max(memory_s, compute_s)
    return t if m.cards == 1 else t + allreduce_time_s(m, streams)


def step_time_s(m: Roofline, streams: float) -> float:
    """t_step(B): the larger of the two terms, plus the link term over n cards, seconds."""
    return _step_s(m, streams, memory_time_s(m, streams), compute_time_s(m, streams))


def point(m: Roofline, streams: int) -> Point:
    """Evaluate the roofline at B streams, keeping both terms inspectable."""
    if streams < 1:
        raise ValueError(f"streams must be >= 1, got {streams}")
    mem, comp = memory_time_s(m, streams), compute_time_s(m, streams)
    step = _step_s(m, streams, mem, comp)
    return Point(streams=streams, step_ms=step * 1e3, memory_ms=mem * 1e3,
                 compute_ms=comp * 1e3, bound="memory" if mem >= comp else "compute",
                 aggregate_tok_s=streams * m.tau / step, per_stream_tok_s=m.tau / step)


def ceiling_b1_tok_s(m: Roofline) -> float:
    """The pocket-calculator line at one stream: eta BW / W(1) tokens/s (weights only;
    for a MoE the active experts only). Over n cards: tau / (W(1) / (n eta BW) + link)."""
    if m.cards > 1:
        return m.tau / (weight_read_bytes(m, 1) / (m.cards * m.eta * m.bandwidth_bytes_s)
                        + allreduce_time_s(m, 1))
    return m.tau * m.eta * m.bandwidth_bytes_s / weight_read_bytes(m, 1)


def bend_streams(m: Roofline) -> float:
    """Stream count where the memory and compute terms meet (inf if they never do).

    Dense: closed form. MoE: the memory term grows with the expert coverage, so the
    crossing is found by bisection (compute minus memory is convex in B, negative at 0
    and grows without bound when the slope below is positive: one crossing). Over n
    cards both terms shrink by n, so the crossing is the one-card one (the link term is
    added to both sides).
    """
    slope = m.rows * m.flops_per_row / m.peak_flops_s - m.per_stream_bytes / (
        m.eta * m.bandwidth_bytes_s)
    if slope <= 0:
        return math.inf
    if not m.moe:
        return m.weight_bytes / (m.eta * m.bandwidth_bytes_s) / slope

    def gap(b: float) -> float:
        return compute_time_s(m, b) - memory_time_s(m, b)

    lo, hi = 0.0, 1.0
    while gap(hi) < 0:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def compute_plateau_tok_s(m: Roofline) -> float:
    """Aggregate far past the bend: tau P / (r F) tokens/s; over n cards
    tau / (r F / (n P) + link seconds per stream)."""
    if m.cards > 1:
        return m.tau / (m.rows * m.flops_per_row / (m.cards * m.peak_flops_s)
                        + allreduce_time_s(m, 1))
    return m.tau * m.peak_flops_s / (m.rows * m.flops_per_row)


def memory_wall_streams(free_bytes: float, state_bytes: float, kv_bytes_per_token: float,
                        context_tokens: float) -> int:
    """Most streams that fit in ``free_bytes``, each holding its state plus kappa L
    (ValueError when a stream needs no memory: there is no wall)."""
    if not (math.isfinite(free_bytes) and free_bytes > 0):
        raise ValueError(f"free memory must be a finite number of bytes > 0, got {free_bytes!r}")
    per = state_bytes + kv_bytes_per_token * context_tokens
    if per <= 0:
        raise ValueError("a stream must need some memory (state or KV)")
    return math.floor(free_bytes / per)


def memory_wall(m: Roofline) -> tuple[int, float] | None:
    """(most streams that fit beside the weights, bytes free for them on each card): the
    free bytes are ``m.free_bytes`` when given, else the card's memory (``m.memory_bytes``)
    less its 1/cards of the weights; each stream holds 1/cards of its state and KV there.
    None when a stream needs no memory (no wall); ValueError when neither memory is given.
    The one memory check (:class:`Roofline`'s) has already refused weights plus one stream
    that do not fit."""
    if m.stream_memory_bytes <= 0:
        return None
    if m.free_bytes is not None:
        free = m.free_bytes
    elif m.memory_bytes is not None:
        free = m.memory_bytes - m.weight_bytes / m.cards
    else:
        raise ValueError("a memory wall needs the card's memory_bytes or free_bytes")
    return memory_wall_streams(free, m.state_bytes / m.cards,
                               m.kv_bytes_per_token / m.cards, m.context_tokens), free


def tau_needed(m: Roofline, streams: int, aggregate_tok_s: float) -> float:
    """Tokens each stream must keep per step for ``aggregate_tok_s`` at B streams; ``inf``
    when no number of tokens kept per step reaches it.

    With ``m.rows`` positions verified: tau = target t_step / B. Where that exceeds the rows
    (a kept token must be verified), the rows rise with tau: the memory term M stays, the
    compute and link terms grow by C and L per row, and tau = k M / (1 - k L) with
    k = target / B, reachable only while k (C + L) <= 1, i.e. below the compute plateau
    B / (C + L) tok/s. On one card L = 0 and tau = k M, the first formula. tau in ``m`` is
    ignored.
    """
    if not (math.isfinite(aggregate_tok_s) and aggregate_tok_s > 0):
        raise ValueError(f"target aggregate tok/s must be finite and > 0, got "
                         f"{aggregate_tok_s!r}")
    k = aggregate_tok_s / streams
    tau = k * step_time_s(m, streams)
    if tau <= m.rows:
        return tau
    per_row = m.with_(rows=1.0, tau=1.0)
    c = compute_time_s(per_row, streams)
    link = allreduce_time_s(per_row, streams)
    if k * (c + link) > 1:
        return math.inf
    return k * memory_time_s(m, streams) / (1 - k * link)


def curve(m: Roofline, streams: list[int]) -> list[Point]:
    """Points for several stream counts."""
    return [point(m, b) for b in streams]
