"""A calibrated step model of one engine on one card, simulated over a protocol's requests.

Per engine step (one forward pass of the scheduler's batch) the model charges, as the
roofline does (:mod:`claimcheck.physics.roofline`):

    memory  = (W + sum over scheduled requests (2 S + kappa x context)) / BW_eff
    compute = (tokens in the step x F_body + sampled tokens x F_head) / P_eff
    step    = max(memory, compute)

with the roofline's own plain functions (:func:`~claimcheck.physics.roofline.memory_seconds`,
:func:`~claimcheck.physics.roofline.compute_seconds`); no Roofline is built per step:
:class:`EngineShape` and :class:`Calibration` check their inputs once, when built.

W weight bytes read per step, S recurrent-state bytes per stream (read and written), kappa
KV bytes per token of context, F_body = 2 x the weights a token passes through below the
output head, F_head = 2 x the head's weights (only sampled positions reach it). Attention
FLOPs over the context are left out (under 1% at a few thousand tokens on this model).

Two numbers come from measurement on the card: BW_eff from a 1-stream decode step (its
median TPOT and mean context) and P_eff from a 1-stream prefill of a long prompt (or a
documented fallback when no run has one). A third, the per-request overhead (HTTP,
tokenizing, scheduling), is a short-prompt 1-stream step's median TTFT less the model's
prefill.

The simulation (:mod:`claimcheck.model.simulator`) follows vLLM's V1 scheduler: running
requests first (one decode token each, or the next prefill chunk), then waiting requests
admitted while slots, the token budget (``max_num_batched_tokens``) and the KV pool
(``EngineShape.kv_pool_pages``, where the start log gives it) last, their prompts
chunked under the budget; a request's first token comes at the end of the step that finishes its
prompt; with prefix caching on a hybrid model vLLM's Mamba 'align' mode ends chunks on block
boundaries (:func:`aligned_chunk`). Clients are a closed loop of C streams: a new request is
sent when one finishes and reaches the scheduler after the overhead. The simulated requests
become a :class:`~claimcheck.readings.timeline.Timeline`, so the predicted end to end and decode
aggregate use the very definitions the measurement uses. Pure functions; SI units (bytes,
seconds, FLOP).

Which measured steps calibrate an engine (bandwidth, overhead, compute, and the measured
terms: decode rows, admission, KV read, mixed prefill, sequence prefill, cold start, output
lag) is a stated rule over the runs of that engine on its card (then its weight format) in
:mod:`claimcheck.calibration.calibrate`, worked out in
:mod:`claimcheck.calibration.calibration`, and described with what each measured in
docs/model.md ("What the terms measured on the H200").

Terms the model does not have, each named where a step misses by more than 5%:

- long prompts in one wave (prefill side not measured): BF16 long prompts (7,681 tokens)
  read up to +5% on end to end with TPOT within 3%: the wave's prefill, its prompts split
  across steps (the split-prefill term below).
- split prefill (not measured): a prompt continued in a later step costs more than one
  prefilled in a single step (BF16 one-wave 8K prompts: 0.71 s each, 0.59 s alone).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, replace
from typing import Any

from claimcheck.physics import roofline as rl

LONG_PROMPT_TOKENS = 2048
"""A 1-stream step calibrates compute only with prompts at least this long (compute-bound
prefill on any card in the registry)."""


class ModelInputError(ValueError):
    """An :class:`EngineShape` or :class:`Calibration` input the step model cannot take;
    ``field`` names it (``EngineShape.weight_bytes``)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(reason)


def _check_number(owner: str, name: str, v: Any, *, zero_ok: bool) -> None:
    """Refuse ``v`` unless a finite real number > 0 (>= 0 with ``zero_ok``)."""
    if not (isinstance(v, numbers.Real) and math.isfinite(v) and (v >= 0 if zero_ok else v > 0)):
        bound = ">= 0" if zero_ok else "> 0"
        raise ModelInputError(f"{owner}.{name}", f"{owner}.{name} must be a finite number "
                              f"{bound}, got {v!r}")


def _check_count(owner: str, name: str, v: Any) -> None:
    """Refuse ``v`` unless an integer >= 1."""
    if not (isinstance(v, numbers.Integral) and v >= 1):
        raise ModelInputError(f"{owner}.{name}", f"{owner}.{name} must be an integer >= 1, "
                              f"got {v!r}")


def _check_ascending(name: str, counts: Any, whole: Any, order: str) -> None:
    """Refuse ``Calibration.name`` unless its ``counts`` are integers >= 1, strictly
    ascending (``whole``: the field as given, ``order``: how the words say ascending)."""
    last = 0
    for n in counts:
        _check_count("Calibration", name, n)
        if n <= last:
            raise ModelInputError(f"Calibration.{name}", f"Calibration.{name} must be "
                                  f"{order}, got {whole!r}")
        last = n


@dataclass(frozen=True)
class EngineShape:
    """What one engine configuration moves and computes. Bytes, FLOP, tokens."""

    weight_bytes: float
    state_bytes: float
    kv_bytes_per_token: float
    flops_body_per_token: float
    flops_head_per_token: float
    max_num_batched_tokens: int
    max_num_seqs: int
    mamba_align_block_tokens: int | None = None
    """vLLM's Mamba cache 'align' mode (a hybrid model with prefix caching on): prefill chunks
    end on multiples of this block (the attention block size), see :func:`aligned_chunk`;
    None when the engine splits prompts anywhere."""
    kv_pool_pages: int | None = None
    """Pages the engine's KV pool holds in all (:func:`~claimcheck.runs.engine_shape.pool_pages`
    from its start log); a request waits until the running ones leave it room
    (:func:`~.simulator.request_pages`); None: no limit known."""
    kv_page_tokens: int | None = None
    """A page's tokens (the attention block vLLM sizes to a hybrid model's state page); None:
    pages are tokens."""
    kv_attention_groups: int = 1
    """Layer groups whose pages hold a request's tokens (each its tokens in pages)."""
    kv_state_groups: int = 0
    """Layer groups whose pages hold a request's recurrent state (one page each)."""

    def __post_init__(self) -> None:
        """The one check of the shape's inputs (the step cost, priced per simulated step,
        checks nothing): a :class:`ModelInputError` naming the field."""
        for name in ("weight_bytes", "flops_body_per_token"):
            _check_number("EngineShape", name, getattr(self, name), zero_ok=False)
        for name in ("state_bytes", "kv_bytes_per_token", "flops_head_per_token"):
            _check_number("EngineShape", name, getattr(self, name), zero_ok=True)
        for name in ("max_num_batched_tokens", "max_num_seqs"):
            _check_count("EngineShape", name, getattr(self, name))
        for name in ("kv_pool_pages", "kv_page_tokens"):
            if getattr(self, name) is not None:
                _check_count("EngineShape", name, getattr(self, name))
        _check_count("EngineShape", "kv_attention_groups", self.kv_attention_groups)
        if not (isinstance(self.kv_state_groups, numbers.Integral) and self.kv_state_groups >= 0):
            raise ModelInputError("EngineShape.kv_state_groups", "EngineShape.kv_state_groups "
                                  f"must be an integer >= 0, got {self.kv_state_groups!r}")
        if self.mamba_align_block_tokens is not None:
            _check_count("EngineShape", "mamba_align_block_tokens",
                         self.mamba_align_block_tokens)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Calibration:
    """Effective bandwidth (bytes/s), compute (FLOP/s) and per-request overhead (s), and
    the measured decode-row factors (:func:`row_factor`)."""

    bandwidth_bytes_s: float
    flops_s: float
    request_overhead_s: float
    bandwidth_source: str
    compute_source: str
    overhead_source: str = ""
    row_factors: tuple[tuple[int, float], ...] = ()
    """(rows, factor) pairs, rows ascending: a decode-only step of that many rows costs
    factor x the model's step (:func:`row_factor`); empty: no such term measured."""
    row_factor_source: str = ""
    row_buckets: tuple[int, ...] = ()
    """The bounds of the engine's GEMM row buckets on the card (:data:`~claimcheck.physics.
    formats.KERNEL_ROW_BUCKETS`): a decode-row factor is read among the measured row counts
    in the step's own bucket (:func:`~claimcheck.model.simulator.decode_row_factor`); empty:
    none on record, every measured count."""
    admission_interval_s: float = 0.0
    """Seconds between the arrivals of requests sent at the same moment (a wave): the i-th
    of them reaches the scheduler i x this after the first (``Timeline.send_interval_s``)."""
    admission_source: str = ""
    kv_bandwidth_bytes_s: float | None = None
    """Bytes/s at which a step reads its KV cache (:func:`kv_bandwidth_from_decode`); None:
    not measured, KV is read at ``bandwidth_bytes_s`` like the weights."""
    kv_source: str = ""
    mixed_prefill_factor: float = 1.0
    """The compute term of a step in which a prompt chunk shares the step with other
    requests (other prompts, or decode rows: prefill interleaved with decode) costs this x
    the calibrated one, which a lone prompt's held prefill measured (:func:`mixed_cost`);
    1: not measured."""
    mixed_prefill_source: str = ""
    sequence_prefill_s: float = 0.0
    """Seconds each request with a prompt chunk in a step adds to that step (a wave of
    short prompts prefilled together: per-sequence work the FLOP count does not see,
    :func:`sequence_cost`); 0: not measured."""
    sequence_prefill_source: str = ""
    sequence_per_send: float = 0.0
    """The per-sequence cost in the load client's send intervals (CPU work on the same host
    as the client's sends): :meth:`for_sends`; 0: ``sequence_prefill_s`` whatever the sends."""
    prefill_flops_s: float | None = None
    """FLOP/s of the positions of prompt chunks when they multiply at another rate than
    decode (int8 activations on the MLP GEMMs of a prefill, as the article's RTX 3090
    engine); None: every position at ``flops_s``."""
    prefill_flops_source: str = ""
    cold_start_s: float = 0.0
    """Seconds the first wave of several prompts on a freshly started engine reaches its
    first tokens later than on a warm one (:func:`~.simulator.simulate`); 0: not measured."""
    cold_start_source: str = ""
    output_lag: float = 0.0
    """The share of the next engine step that passes before a request's first token,
    sampled at the end of one step, reaches its client when another step follows at once
    (:func:`~.simulator.simulate`): 0 at the step's end, 1 at the next step's end; 0: not
    measured."""
    output_lag_source: str = ""
    bend_exponent: float | None = None
    """A decode-only step with no measured decode-row factor costs
    ``(memory^p + compute^p)^(1/p)`` (:func:`bend_seconds`) with this ``p``: how a kernel
    overlaps its weight reads with its math near the bend, measured on the local card's
    decode rows of the same kernel and carried to another card; None: ``max(memory,
    compute)``."""
    bend_source: str = ""

    def __post_init__(self) -> None:
        """The one check of the calibration's inputs (not repeated per simulated step): a
        :class:`ModelInputError` naming the field."""
        for name in ("bandwidth_bytes_s", "flops_s"):
            _check_number("Calibration", name, getattr(self, name), zero_ok=False)
        if self.prefill_flops_s is not None:
            _check_number("Calibration", "prefill_flops_s", self.prefill_flops_s,
                          zero_ok=False)
        for name in ("request_overhead_s", "admission_interval_s", "sequence_prefill_s",
                     "sequence_per_send", "cold_start_s"):
            _check_number("Calibration", name, getattr(self, name), zero_ok=True)
        _check_number("Calibration", "output_lag", self.output_lag, zero_ok=True)
        if self.output_lag > 1:
            raise ModelInputError("Calibration.output_lag", "Calibration.output_lag is a "
                                  f"share of one step, 0 to 1, got {self.output_lag!r}")
        _check_number("Calibration", "mixed_prefill_factor", self.mixed_prefill_factor,
                      zero_ok=False)
        if self.kv_bandwidth_bytes_s is not None:
            _check_number("Calibration", "kv_bandwidth_bytes_s", self.kv_bandwidth_bytes_s,
                          zero_ok=False)
        if self.bend_exponent is not None:
            _check_number("Calibration", "bend_exponent", self.bend_exponent, zero_ok=False)
            if self.bend_exponent < 1:
                raise ModelInputError("Calibration.bend_exponent", "Calibration.bend_exponent "
                                      f"must be 1 or more, got {self.bend_exponent!r}")
        _check_ascending("row_buckets", self.row_buckets, self.row_buckets, "ascending")
        for _, factor in self.row_factors:
            _check_number("Calibration", "row_factors", factor, zero_ok=False)
        _check_ascending("row_factors", [rows for rows, _ in self.row_factors],
                         self.row_factors, "in ascending rows")

    def for_sends(self, send_interval_s: float | None) -> Calibration:
        """For a step whose wave its client sent at ``send_interval_s`` s between sends: the
        per-sequence cost ``sequence_per_send`` x it; unchanged without a per-send cost or an
        interval (one stream, or a step not yet sent: at the admission interval)."""
        if not self.sequence_per_send or send_interval_s is None:
            return self
        _check_number("Calibration.for_sends", "send_interval_s", send_interval_s, zero_ok=False)
        return replace(self, sequence_prefill_s=self.sequence_per_send * send_interval_s)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bandwidth_gb_s"] = self.bandwidth_bytes_s / 1e9
        d["tflops"] = self.flops_s / 1e12
        return d


@dataclass(frozen=True)
class StepCost:
    """One engine step's two terms and their parts, s."""

    weights_s: float
    state_s: float
    kv_s: float
    compute_s: float

    @property
    def memory_s(self) -> float:
        return self.weights_s + self.state_s + self.kv_s

    @property
    def time_s(self) -> float:
        return max(self.memory_s, self.compute_s)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s >= self.compute_s else "compute"


def step_cost(shape: EngineShape, cal: Calibration, contexts: list[int], tokens: int,
              sampled: int, prefill_tokens: int = 0) -> StepCost:
    """Cost of one step over scheduled requests with these contexts (tokens each, after the
    step), ``tokens`` new positions in all and ``sampled`` of them reaching the head.

    The two terms are the roofline's (:func:`claimcheck.physics.roofline.memory_seconds` and
    :func:`~claimcheck.physics.roofline.compute_seconds`, which the roofline's own times call)
    at B = the scheduled requests, L = their mean context and r = positions per request,
    plus the head for sampled positions. ``prefill_tokens`` of the positions are prompt
    chunks' (priced at ``cal.prefill_flops_s`` when that is set).
    """
    return step_cost_sum(shape, cal, len(contexts), sum(contexts), tokens, sampled,
                         prefill_tokens)


def step_cost_sum(shape: EngineShape, cal: Calibration, b: int, context_sum: int,
                  tokens: int, sampled: int, prefill_tokens: int = 0) -> StepCost:
    """:func:`step_cost` from the number of scheduled requests ``b`` and the sum of their
    contexts (tokens), which is all it depends on.

    The memory term is :func:`claimcheck.physics.roofline.memory_seconds` at B = ``b``, L = the
    mean context, with all its bytes at the weights' rate; the weights' and the state's
    parts are taken out of it and the rest, the KV, is re-priced at
    ``cal.kv_bandwidth_bytes_s`` when that is measured. The compute term is
    :func:`~claimcheck.physics.roofline.compute_seconds` at r = ``tokens / b`` plus the head
    for the sampled positions; when ``cal.prefill_flops_s`` is set, the ``prefill_tokens``
    positions of prompt chunks are priced at it and the rest at ``cal.flops_s``
    (:func:`split_compute_seconds`). Nothing is checked here (``shape`` and ``cal`` were checked
    when built; every scheduled request has at least one position)."""
    bw = cal.bandwidth_bytes_s
    weights_s = shape.weight_bytes / bw
    head_s = sampled * shape.flops_head_per_token / cal.flops_s
    if b == 0 or tokens == 0:
        return StepCost(weights_s=weights_s, state_s=0.0, kv_s=0.0, compute_s=head_s)
    moved = rl.stream_bytes_moved(shape.state_bytes, shape.kv_bytes_per_token,
                                  context_sum / b)
    state_s = b * 2 * shape.state_bytes / bw
    kv_s = rl.memory_seconds(shape.weight_bytes, b, moved, bw) - weights_s - state_s
    if cal.kv_bandwidth_bytes_s:  # KV bytes at their own rate
        kv_s *= bw / cal.kv_bandwidth_bytes_s
    if cal.prefill_flops_s is not None and prefill_tokens:
        compute_s = split_compute_seconds(tokens, prefill_tokens,
                                          shape.flops_body_per_token, cal.flops_s,
                                          cal.prefill_flops_s)
    else:
        compute_s = rl.compute_seconds(b, tokens / b, shape.flops_body_per_token,
                                       cal.flops_s)
    return StepCost(weights_s=weights_s, state_s=state_s, kv_s=kv_s,
                    compute_s=compute_s + head_s)


def bend_seconds(memory_s: float, compute_s: float, p: float) -> float:
    """A step's time when its weight reads and its math overlap only in part:
    ``(memory^p + compute^p)^(1/p)``, the sum at ``p`` = 1 and ``max(memory, compute)`` as
    ``p`` grows (at equal terms, ``2^(1/p)`` x either). Computed from the larger term so no
    power overflows."""
    hi, lo = max(memory_s, compute_s), min(memory_s, compute_s)
    if hi <= 0:
        return 0.0
    return hi * (1.0 + (lo / hi) ** p) ** (1.0 / p)


def split_compute_seconds(tokens: int, prefill_tokens: int, flops_per_token: float,
                          flops_s: float, prefill_flops_s: float) -> float:
    """Seconds of a step's body compute when its ``prefill_tokens`` prompt positions
    multiply at ``prefill_flops_s`` and its other ``tokens - prefill_tokens`` at
    ``flops_s``, F per position each."""
    return flops_per_token * ((tokens - prefill_tokens) / flops_s
                              + prefill_tokens / prefill_flops_s)


def mixed_cost(cost: StepCost, factor: float) -> StepCost:
    """The cost of a step in which a prompt chunk shares the step with other requests: its
    compute term x the measured ``factor`` (``Calibration.mixed_prefill_factor``); the step
    takes the larger of that and its memory term, as any step."""
    return replace(cost, compute_s=cost.compute_s * factor)


def sequence_cost(step_s: float, prefilling: int, per_sequence_s: float) -> float:
    """A step's time with its ``prefilling`` requests (those with a prompt chunk in it) at
    ``per_sequence_s`` each (``Calibration.sequence_prefill_s``) added to it."""
    return step_s + prefilling * per_sequence_s


def row_factor(points: tuple[tuple[int, float], ...], rows: int) -> float:
    """The decode-row term: measured decode-step time over the model's at ``rows`` decode
    rows, from ``points`` ((rows, factor), rows ascending, each measured on a one-wave
    decode step). Linear between measured row counts; 1 outside them (never extrapolated:
    the plain simulation's :func:`~claimcheck.model.simulator.decode_row_factor` extends it)."""
    if not points or rows < points[0][0] or rows > points[-1][0]:
        return 1.0
    for (r0, f0), (r1, f1) in zip(points, points[1:], strict=False):
        if r0 <= rows <= r1:
            return f0 + (f1 - f0) * (rows - r0) / (r1 - r0)
    return points[0][1]  # a single point: rows equals it


def bandwidth_from_decode(shape: EngineShape, tpot_s: float, context_tokens: float) -> float:
    """Effective bytes/s from a 1-stream decode: (W + 2S + kappa L) / TPOT."""
    if tpot_s <= 0:
        raise ValueError(f"TPOT must be > 0 s, got {tpot_s}")
    return (shape.weight_bytes + 2 * shape.state_bytes
            + shape.kv_bytes_per_token * context_tokens) / tpot_s


def kv_bandwidth_from_decode(shape: EngineShape, cal: Calibration, rows: int,
                             context_tokens: float, step_s: float,
                             factor: float = 1.0) -> float:
    """Effective bytes/s at which a decode step of ``rows`` streams reads its KV cache: the
    step's KV bytes (rows x kappa x mean context) over what is left of the measured step
    time ``step_s``, over the decode-row ``factor`` at that row count (which multiplies the
    whole decode step, :func:`row_factor`), once the weights and state are read at
    ``cal``'s bandwidth. The source of the KV-read term (``Calibration.
    kv_bandwidth_bytes_s``): one-wave decode windows with every stream decoding."""
    rest_s = (shape.weight_bytes + rows * 2 * shape.state_bytes) / cal.bandwidth_bytes_s
    kv_bytes = rows * shape.kv_bytes_per_token * context_tokens
    step_s = step_s / factor
    if step_s <= rest_s or kv_bytes <= 0:
        raise ValueError(f"a {step_s * 1e3:.3f} ms step leaves no time for {kv_bytes / 1e9:.2f}"
                         f" GB of KV after {rest_s * 1e3:.3f} ms of weights and state")
    return kv_bytes / (step_s - rest_s)


def compute_from_prefill(shape: EngineShape, prompt_tokens: float, prefill_s: float) -> float:
    """Effective FLOP/s from a 1-stream prefill: prompt x F_body / its time."""
    if prefill_s <= 0:
        raise ValueError(f"prefill time must be > 0 s, got {prefill_s}")
    return prompt_tokens * shape.flops_body_per_token / prefill_s


def aligned_chunk(prompt_tokens: int, done: int, tokens: int, block: int | None) -> int:
    """Prompt tokens a step may take from a request with ``done`` of ``prompt_tokens`` already
    computed and ``tokens`` offered by the budget, under vLLM 0.26's Mamba 'align' mode
    (``Scheduler._mamba_block_aligned_split`` without speculation or partial prefix hits).

    Until the last block boundary of the prompt (``prompt - prompt % block``) a chunk must end
    on a block boundary (possibly taking nothing), and no chunk runs past that boundary: a
    7,681-token prompt with 800-token blocks goes 7,200 then 481. ``block`` None: ``tokens``.
    """
    if block is None or done >= prompt_tokens:
        return tokens
    last = prompt_tokens - prompt_tokens % block
    end = done + tokens
    if end < last:
        end = end // block * block
    nxt = (done // block + 1) * block
    stops = (nxt if done % block and nxt <= last else 0, last)
    end = min((x for x in stops if done < x < end), default=end)
    return max(end - done, 0)


def prefill_time_s(shape: EngineShape, cal: Calibration, prompt_tokens: int) -> float:
    """Model time to prefill one prompt alone, chunked under the token budget, s."""
    done, total = 0, 0.0
    while done < prompt_tokens:
        c = aligned_chunk(prompt_tokens, done,
                          min(shape.max_num_batched_tokens, prompt_tokens - done),
                          shape.mamba_align_block_tokens)
        done += c
        total += step_cost(shape, cal, [done], c, 1 if done == prompt_tokens else 0,
                           c).time_s
    return total
