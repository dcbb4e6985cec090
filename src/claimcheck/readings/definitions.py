"""Every published tok/s definition, recomputed from one token timeline (pure functions).

Each definition has a name, a unit, a scope (``aggregate``: summed over the streams, per
stream = value / streams running at once, :func:`per_stream`; ``per_stream``: one stream's
speed, aggregate = value x streams), what it divides by and what it leaves out. Those are
data, in :data:`DEFINITIONS`, shared by the CLI, the figure and the reports;
:data:`REGISTRY_METRIC` maps each to the claims registry's metric name
(:mod:`claimcheck.claims.metrics`).

Times are seconds on the benchmark client's clock; speeds are tokens/s (tok/s); energy in J.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

from claimcheck.readings.timeline import (
    Timeline,
    count_in,
    decoding_intervals,
    intervals_with_at_least,
)


@dataclass(frozen=True)
class Definition:
    """One way of turning a run into a tok/s figure."""

    name: str
    unit: str
    scope: str  # "aggregate" | "per_stream"
    phase: str  # "end_to_end" | "decode" | "prefill"
    label: str
    divides_by: str
    leaves_out: str
    sums_over: str = "running"
    """What an aggregate sums over, and so what its per-stream reading divides by:
    "running", tokens of the streams that ran at once; "asked", one request's speed
    multiplied by the streams asked (a published formula: its per-stream reading is that
    one request's speed whether or not every stream ran)."""


DEFINITIONS: dict[str, Definition] = {d.name: d for d in [
    Definition("e2e_aggregate_tok_s", "tok/s", "aggregate", "end_to_end", "end to end",
               "all output tokens / (first send to last token)",
               "nothing: prefill, ramp, waves and tail are all in the wall time"),
    Definition("decode_aggregate_tok_s", "tok/s", "aggregate", "decode", "decode aggregate",
               "output tokens after each request's first / time at least one request was "
               "decoding (union of first-token-to-last-token intervals)",
               "each request's first token and the time to it when nothing else decodes "
               "(the first wave's prefill and any gap between waves); later prefills that "
               "share steps with decode stay in"),
    Definition("streams_x_1000_over_median_tpot_tok_s", "tok/s", "aggregate", "decode",
               "streams x 1000 / median TPOT",
               "streams x 1000 / median over requests of (last - first token) / "
               "(tokens - 1) in ms",
               "each request's first token and TTFT; assumes all streams decode all the "
               "time (ramp, waves and tail)", sums_over="asked"),
    Definition("streams_x_1000_over_mean_tpot_tok_s", "tok/s", "aggregate", "decode",
               "streams x 1000 / mean TPOT",
               "streams x 1000 / mean over requests of TPOT in ms",
               "as the median form (the mean weights slow requests more)",
               sums_over="asked"),
    Definition("all_streams_decoding_tok_s", "tok/s", "aggregate", "decode",
               "all N decoding",
               "decode tokens arriving while all N streams decode / the union of the "
               "intervals with all N decoding",
               "every moment with fewer than N decoding: ramp, refills between waves, "
               "tail; null when all N never decode at once"),
    Definition("fastest_second_tok_s", "tok/s", "aggregate", "decode", "fastest second",
               "most tokens (not chunks) arriving in any 1 s window / 1 s",
               "everything but the best second"),
    Definition("engine_log_steady_tok_s", "tok/s", "aggregate", "decode",
               "engine-log steady state",
               "median of vLLM's 10-s 'Avg generation throughput' lines with all N running "
               "and no prompt tokens",
               "every 10-s window with a prefill or fewer than N running; null when none"),
    Definition("per_request_decode_tok_s", "tok/s", "per_stream", "decode",
               "per-request decode (median)",
               "median over requests of (tokens - 1) / (last token - first token)",
               "the first token and TTFT of each request"),
    Definition("prefill_tok_s", "prompt tok/s", "aggregate", "prefill", "prefill rate",
               "median over requests of prompt tokens / TTFT, at one stream only",
               "decode; TTFT also holds scheduling and the first token's sampling; "
               "null above one stream"),
    Definition("tokens_per_joule", "tok/J", "aggregate", "end_to_end",
               "tokens per measured joule",
               "all output tokens / board energy over the step's wall window "
               "(NVML power, trapezoid)",
               "host and other components' power; null without telemetry"),
]}

REGISTRY_METRIC: dict[str, str | None] = {
    "e2e_aggregate_tok_s": "e2e_aggregate",
    "decode_aggregate_tok_s": "decode_aggregate",
    "streams_x_1000_over_median_tpot_tok_s": "streams_x_1000_over_median_tpot",
    "streams_x_1000_over_mean_tpot_tok_s": "streams_x_1000_over_mean_tpot",
    "all_streams_decoding_tok_s": "all_n_decoding_intervals",
    "fastest_second_tok_s": "fastest_second",
    "engine_log_steady_tok_s": "engine_log_steady",
    "per_request_decode_tok_s": "per_request_decode",
    "prefill_tok_s": "prefill",
    "tokens_per_joule": None,
}


class LogLine(Protocol):
    """The fields of a parsed vLLM stats line these definitions read (tok/s, requests)."""

    prompt_tok_s: float
    generation_tok_s: float
    running: int


# ------------------------------------------------------------------ the definitions


HELD_PREFILL_MAX_OUTPUT = 2
"""A step whose requests each ask for at most this many output tokens measures prefill: its
one inter-token gap is no decode rate, so no decode definition is shown or compared for it."""


def max_output_tokens(tl: Timeline | None) -> int | None:
    """The most output tokens any request of the step produced (None without requests)."""
    return max((r.output_tokens for r in tl.requests), default=None) if tl is not None \
        else None


def is_held_prefill(requested: int | None, observed: int | None = None) -> bool:
    """True for a step that measures prefill only, the one rule every reader calls.

    ``requested``: the output tokens each request asked for (the protocol's data, the
    step's own length where it has one); ``observed``: the most any request produced
    (:func:`max_output_tokens`, the measurement's). The rule: held when either is at most
    :data:`HELD_PREFILL_MAX_OUTPUT`. The protocol's length says what the step was built to
    measure; the observed tokens say whether a decode rate can be read at all (a step asked
    for 128 tokens whose requests each stopped at 2 has one gap per request, no decode
    rate). A recorded step never produces more than it asked (the run checks refuse it),
    so the two disagree only that way. None: not known, that side says nothing."""
    return any(n is not None and n <= HELD_PREFILL_MAX_OUTPUT for n in (requested, observed))


def running_at_once(streams: int, max_num_seqs: int | None) -> int:
    """Streams that run at once: the step's streams, or the engine's slots (max-num-seqs)
    when it asked for more; the rest queue. No slot count known: every stream runs."""
    return min(streams, int(max_num_seqs)) if max_num_seqs else streams


def is_queued(streams: int, max_num_seqs: int | None) -> bool:
    """Whether a step asked for more streams than the engine runs at once (the one
    "queued" rule: :func:`running_at_once` below its streams)."""
    return running_at_once(streams, max_num_seqs) < streams


def row_never_all_decoded(row: Mapping[str, Any]) -> bool:
    """Whether a step row's requests never all decoded at once (``most_decoding_at_once``
    below its streams: the others waited for a first token inside the engine); False for a
    row without the column."""
    return (row.get("most_decoding_at_once") or row["streams"]) < row["streams"]


def row_is_held_prefill(row: Mapping[str, Any]) -> bool:
    """:func:`is_held_prefill` of a step row (``output_len`` asked, ``max_output_tokens``
    observed; a row without the latter, a failed step's, is decided by the former)."""
    return is_held_prefill(row.get("output_len"), row.get("max_output_tokens"))


def e2e_aggregate_tok_s(tl: Timeline) -> float:
    """All output tokens / (first send to last token), tok/s summed over the streams."""
    return tl.output_tokens / tl.wall_s


def decode_window_s(tl: Timeline) -> float:
    """Length of the union of the requests' (first token, last token] intervals, s."""
    return sum(b - a for a, b in intervals_with_at_least(decoding_intervals(tl), 1))


def decode_aggregate_tok_s(tl: Timeline) -> float | None:
    """Output tokens after each request's first / time with at least one request decoding.

    Leaves out each request's first token and the time before it while nothing else decodes;
    None when no request has a second token.
    """
    window = decode_window_s(tl)
    tokens = tl.output_tokens - len(tl.requests)
    return tokens / window if window > 0 else None


def tpots_ms(tl: Timeline) -> list[float]:
    """Per request time per output token after the first, ms: (last - first) / (n - 1).

    The same arithmetic as ``vllm bench serve``'s TPOT (latency - TTFT over tokens - 1).
    """
    return [(r.last_token_s - r.first_token_s) * 1e3 / (r.output_tokens - 1)
            for r in tl.requests if r.output_tokens > 1]


def streams_x_1000_over_tpot(streams: int, tpot_ms: float) -> float | None:
    """Streams x 1000 / TPOT in ms: the aggregate if every stream decoded all the time; None
    at a TPOT of 0 (a step of held prefills whose requests got their tokens in one chunk,
    no decode time to divide by)."""
    return streams * 1000.0 / tpot_ms if tpot_ms > 0 else None


def streams_x_1000_over_median_tpot(tl: Timeline) -> float | None:
    t = tpots_ms(tl)
    return streams_x_1000_over_tpot(tl.streams, statistics.median(t)) if t else None


def streams_x_1000_over_mean_tpot(tl: Timeline) -> float | None:
    t = tpots_ms(tl)
    return streams_x_1000_over_tpot(tl.streams, statistics.fmean(t)) if t else None


def all_decoding_spans(tl: Timeline, n: int | None = None) -> list[tuple[float, float]]:
    """The spans (a, b] with all ``n`` streams decoding (default: the step's streams).

    A request decodes on (its first token, its last token]. The union of all such spans is
    used, not only "last first token to first finish": with several waves each wave's
    plateau counts.
    """
    return intervals_with_at_least(decoding_intervals(tl), n or tl.streams)


def all_streams_decoding_tok_s(tl: Timeline, n: int | None = None) -> float | None:
    """Decode tokens arriving inside the all-N spans / their total length; None if none.

    First tokens are left out (a request's first token opens its span and is not in it).
    """
    spans = all_decoding_spans(tl, n)
    length = sum(b - a for a, b in spans)
    if length <= 0:
        return None
    return count_in(tl.sorted_token_times, spans) / length


def fastest_window(tl: Timeline, window_s: float = 1.0) -> tuple[float, int]:
    """(start, tokens) of the window [t, t + window_s) holding the most tokens (not chunks).

    The best window always starts at a token's arrival, so only those starts are tried.
    """
    return window_with_most(tl.sorted_token_times, window_s)


def window_with_most(times: Sequence[float], window_s: float) -> tuple[float, int]:
    """(start, count) of the first window [t, t + window_s) starting at a time of the sorted
    ``times`` (s) that holds the most of them; (times[0], 0) when none holds any."""
    arr = np.asarray(times, dtype=np.float64)
    idx = np.arange(arr.size)
    # Index of the first time >= t + window_s, never before t's own index.
    ends = np.maximum(np.searchsorted(arr, arr + window_s, side="left"), idx)
    counts = ends - idx
    best = int(np.argmax(counts)) if arr.size else 0
    if not arr.size or counts[best] <= 0:
        return float(times[0]), 0
    return float(times[best]), int(counts[best])


def fastest_second_tok_s(tl: Timeline, window_s: float = 1.0) -> float:
    """Most tokens in any ``window_s`` window / ``window_s``, tok/s summed over streams."""
    return fastest_window(tl, window_s)[1] / window_s


def per_request_decode_tok_s(tl: Timeline) -> float | None:
    """Median over requests of (tokens - 1) / (last - first token), tok/s for one stream."""
    rates = per_request_decode_rates(tl)
    return statistics.median(rates) if rates else None


def per_request_decode_rates(tl: Timeline) -> list[float]:
    """Each request's (tokens - 1) / (last - first token), tok/s."""
    return [1000.0 / t for t in tpots_ms(tl) if t > 0]


def prefill_tok_s(tl: Timeline) -> float | None:
    """Median of prompt tokens / TTFT over requests, tok/s; None above one stream."""
    if tl.streams != 1:
        return None
    return statistics.median(r.prompt_tokens / r.ttft_s for r in tl.requests)


def engine_log_steady_tok_s(lines: Sequence[LogLine], streams: int) -> float | None:
    """Median generation tok/s of log lines with all ``streams`` running and no prompt tokens.

    HyperQwen's batch README definition. None when no line qualifies.
    """
    ok = [s.generation_tok_s for s in lines
          if s.running >= streams and s.prompt_tok_s == 0 and s.generation_tok_s > 0]
    return statistics.median(ok) if ok else None


def energy_j(samples: Sequence[tuple[float, float]], t0: float, t1: float) -> float | None:
    """Energy in J over [t0, t1] from (time s, power W) samples, trapezoid rule.

    Power is linearly interpolated at t0 and t1; None when the samples do not cover both.
    """
    pts = sorted(samples)
    if len(pts) < 2 or pts[0][0] > t0 or pts[-1][0] < t1 or t1 <= t0:
        return None

    def p_at(t: float) -> float:
        i = bisect.bisect_right([x for x, _ in pts], t)
        (ta, pa), (tb, pb) = pts[max(i - 1, 0)], pts[min(i, len(pts) - 1)]
        return pa if tb == ta else pa + (pb - pa) * (t - ta) / (tb - ta)

    inner = [(t, p) for t, p in pts if t0 < t < t1]
    xs = [(t0, p_at(t0)), *inner, (t1, p_at(t1))]
    pairs = zip(xs[:-1], xs[1:], strict=True)
    return sum((xb - xa) * (pa + pb) / 2 for (xa, pa), (xb, pb) in pairs)


def tokens_per_joule(tokens: int, energy: float | None) -> float | None:
    """Output tokens per measured joule (tok/J); None without an energy figure."""
    return tokens / energy if energy else None


@dataclass(frozen=True)
class LanesLine:
    """The lanes tools' stats line, rebuilt. Tokens, seconds and tok/s (aggregate)."""

    lanes: int
    total_tokens: int
    wall_s: float
    decode_tok_s: float | None
    e2e_tok_s: float
    plan_s: float
    tail_s: float
    fastest_second_tok_s: float
    per_lane_tok_s: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def lanes_line(tl: Timeline) -> LanesLine:
    """Total, wall, decode, e2e, plan, tail, fastest second and per-lane rate of a step.

    ``plan_s``: first send to the first moment all N lanes decode (with one wave, the last
    lane's first token); when they never all decode, to the last request's first token.
    ``tail_s``: the last moment all N decode to the last token (with one wave, first finish to
    last token); without such a moment, the last request's first token to the last token.
    ``decode_tok_s`` is :func:`decode_aggregate_tok_s`; per lane = decode / N.
    """
    spans = all_decoding_spans(tl)
    last_first = tl.last_first_token_s
    all_from = spans[0][0] if spans else last_first
    all_to = spans[-1][1] if spans else last_first
    decode = decode_aggregate_tok_s(tl)
    return LanesLine(
        lanes=tl.streams, total_tokens=tl.output_tokens, wall_s=tl.wall_s,
        decode_tok_s=decode, e2e_tok_s=e2e_aggregate_tok_s(tl),
        plan_s=all_from - tl.first_send_s, tail_s=tl.last_token_s - all_to,
        fastest_second_tok_s=fastest_second_tok_s(tl),
        per_lane_tok_s=decode / tl.streams if decode is not None else None)


def all_definitions(tl: Timeline, log_lines: Sequence[LogLine] = (),
                    energy: float | None = None, requested_output_len: int | None = None
                    ) -> dict[str, float | None]:
    """Every definition in :data:`DEFINITIONS` for one step (aggregate scope as listed).

    A held-prefill step (:func:`is_held_prefill`) gets None for every decode definition: its
    one inter-token gap per request is no decode rate (1000 / that gap read 100 tok/s on an
    H200 whose decode runs at 65). ``requested_output_len``: tokens each request asked for.
    """
    vals = {
        "e2e_aggregate_tok_s": e2e_aggregate_tok_s(tl),
        "decode_aggregate_tok_s": decode_aggregate_tok_s(tl),
        "streams_x_1000_over_median_tpot_tok_s": streams_x_1000_over_median_tpot(tl),
        "streams_x_1000_over_mean_tpot_tok_s": streams_x_1000_over_mean_tpot(tl),
        "all_streams_decoding_tok_s": all_streams_decoding_tok_s(tl),
        "fastest_second_tok_s": fastest_second_tok_s(tl),
        "engine_log_steady_tok_s": engine_log_steady_tok_s(log_lines, tl.streams),
        "per_request_decode_tok_s": per_request_decode_tok_s(tl),
        "prefill_tok_s": prefill_tok_s(tl),
        "tokens_per_joule": tokens_per_joule(tl.output_tokens, energy),
    }
    if is_held_prefill(requested_output_len, max_output_tokens(tl)):
        vals.update({k: None for k in vals if DEFINITIONS[k].phase == "decode"})
    return vals


def per_stream(value: float | None, streams: int, max_num_seqs: int | None) -> float | None:
    """One stream's share of an aggregate (tok/s summed over the streams): the one
    per-stream rule, for every table, figure and sentence. The divisor is the streams that
    ran at once (:func:`running_at_once`: the step's streams, or the engine's slots when it
    asked for more): a queued stream produced nothing while it waited, so dividing by the
    streams asked would report a speed no running stream had."""
    return None if value is None else value / running_at_once(streams, max_num_seqs)


def has_per_stream_column(name: str) -> bool:
    """Whether a step table holds a definition's per-stream reading beside it
    (``NAME_per_stream``): for an aggregate in tok/s. A per-stream definition is its own
    per-stream reading (one column per quantity), and energy has no per-stream share."""
    return DEFINITIONS[name].scope == "aggregate" and DEFINITIONS[name].unit.endswith("tok/s")


def definition_per_stream(name: str, value: float | None, streams: int,
                          max_num_seqs: int | None) -> float | None:
    """The per-stream reading of a definition's value: :func:`per_stream` of an aggregate
    of tokens, the aggregate over the streams asked for one that multiplies a request's
    speed by them (``sums_over`` "asked"), the value itself for a per-stream definition;
    None for definitions whose unit is not tok/s (energy has no per-stream share here)."""
    if value is None or not DEFINITIONS[name].unit.endswith("tok/s"):
        return None
    if DEFINITIONS[name].scope == "aggregate":
        return (value / streams if DEFINITIONS[name].sums_over == "asked"
                else per_stream(value, streams, max_num_seqs))
    return value


def aggregate(name: str, value: float | None, streams: int,
              max_num_seqs: int | None) -> float | None:
    """The aggregate reading of a definition's value: itself, or a per-stream value times
    the streams that ran at once (:func:`running_at_once`, the inverse of
    :func:`per_stream`)."""
    if value is None:
        return None
    if DEFINITIONS[name].scope == "aggregate":
        return value
    return value * running_at_once(streams, max_num_seqs)
