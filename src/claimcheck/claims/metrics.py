"""Metric definitions: what a tok/s figure divides by, and whether it is a sum over streams.

``scope`` is ``aggregate`` (summed over the streams: per stream = value / streams) or
``per_stream`` (already one stream's speed: aggregate = value x streams).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    scope: str  # "aggregate" | "per_stream"
    phase: str  # "decode" | "end_to_end" | "prefill" | "unspecified"
    label: str
    definition: str


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("decode_aggregate", "aggregate", "decode", "decode aggregate",
           "output tokens of all streams over a decode window (prefill and ramp left out; "
           "what else is left out is the publisher's)"),
    Metric("e2e_aggregate", "aggregate", "end_to_end", "end-to-end aggregate",
           "all output tokens over the wall time of the run, prefill, ramp and tail included"),
    Metric("engine_log_steady", "aggregate", "decode", "engine-log steady state",
           "median of vLLM's 10-s 'Avg generation throughput' lines with all N running and "
           "no prompt tokens in the window"),
    Metric("engine_log_line", "aggregate", "decode", "one engine-log line",
           "a single 10-s vLLM log line with no prompt tokens in it"),
    Metric("streams_x_1000_over_median_tpot", "aggregate", "decode",
           "streams x 1000 / median TPOT",
           "concurrency x 1000 / median time per output token (ms); excludes each request's "
           "first token and assumes all streams decode all the time"),
    Metric("streams_x_1000_over_mean_tpot", "aggregate", "decode",
           "streams x 1000 / mean TPOT", "concurrency x 1000 / mean time per output token (ms)"),
    Metric("fastest_second", "aggregate", "decode", "fastest second",
           "the best one-second window of the run, all streams summed"),
    Metric("all_n_decoding_intervals", "aggregate", "decode", "intervals with all N decoding",
           "tokens over only the intervals in which all N streams were decoding (tail removed)"),
    Metric("per_request_decode", "per_stream", "decode", "per-request decode",
           "one request's tokens over the time between its first and last chunk (mean)"),
    Metric("per_request", "per_stream", "unspecified", "per request",
           "one request's speed as the publisher reports it; its window is not stated"),
    Metric("single_stream_decode", "per_stream", "decode", "single-stream decode",
           "one stream alone; decode rate"),
    Metric("prefill", "aggregate", "prefill", "prefill (prompt tok/s)",
           "prompt tokens processed per second; not generation"),
    Metric("headline", "aggregate", "unspecified", "headline",
           "the number as posted; definition not given with it"),
    Metric("unspecified", "aggregate", "unspecified", "unspecified",
           "a figure whose window and definition were not stated"),
    Metric("sse_chunks_per_s", "per_stream", "decode", "SSE chunks counted as tokens",
           "a measurement trap: streamed chunks per second, not tokens (wrong under speculation)"),
]}
