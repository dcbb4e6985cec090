"""The metrics a protocol may list (``config/protocols.yaml`` ``metrics``) as the Update
shows them: each one's column (the step-row key it reads, its header with unit and
definition, its format, what kind of speed it is), a protocol's headline metric, and a
step's streams running at once, queueing and per-stream reading under a column.

Every tok/s printed says how many streams and how they relate, the per-stream speed, the
context per stream, and whether it is decode (which excludes each request's first token
and prefill) or end to end (which includes prefill, ramp and tail).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from claimcheck.config.protocols import Protocol
from claimcheck.files.errors import InputError
from claimcheck.readings import definitions as d
from claimcheck.runs.run import Run


@dataclass(frozen=True)
class Column:
    """How one metric of a protocol's ``metrics`` list is shown: the step-row key it reads,
    its header (with its unit and definition) and its number format."""

    key: str
    header: str
    fmt: str
    speed: str | None = None
    """What the value is: "aggregate" (tok/s summed over the streams), "per_stream" (one
    stream's tok/s), "prefill" (prompt tok/s) or None (not a speed: ms, W, shares)."""
    streams_times_tpot: bool = False
    """Streams x 1000 / a TPOT: an aggregate only where every stream runs at once."""
    holds_claims_per_stream: bool = False
    """The column where a replayed claim's own per-stream figure (its tok/s over its
    streams) is printed beside its figure: a per-stream reading of an aggregate, never one
    request's own speed."""


# Every metric name a protocol may list (config/protocols.yaml ``metrics``). Claim metric
# definitions (claims/metrics.py) that a run can measure map to the step value of the same
# definition; the others are per-step quantities.
REPORT_METRICS: dict[str, Column] = {
    "e2e_aggregate": Column("e2e_aggregate_tok_s", "End to end, tok/s (prefill, ramp, tail in)",
                            "{:,.1f}", "aggregate"),
    "streams_x_1000_over_median_tpot": Column(
        "streams_x_1000_over_median_tpot_tok_s",
        "Streams × 1000 / median TPOT, tok/s (decode)", "{:,.1f}", "aggregate", True),
    "engine_log_steady": Column("engine_log_steady_tok_s",
                                "Engine log, all running, no prefill, tok/s", "{:,.1f}",
                                "aggregate"),
    "median_tpot_ms": Column("median_tpot_ms", "Median TPOT", "{:.2f} ms"),
    "per_stream_tok_s": Column("streams_x_1000_over_median_tpot_tok_s_per_stream",
                               "Per stream, 1000 / median TPOT, tok/s", "{:,.1f}", "per_stream",
                               holds_claims_per_stream=True),
    "mean_ttft_ms": Column("mean_ttft_ms", "Mean TTFT", "{:,.0f} ms"),
    "median_ttft_ms": Column("median_ttft_ms", "Median TTFT", "{:,.0f} ms"),
    "mean_power_w": Column("telemetry_mean_power_w", "Mean power", "{:.0f} W"),
    "mean_tpot_ms": Column("mean_tpot_ms", "Mean TPOT", "{:.2f} ms"),
    "streams_x_1000_over_mean_tpot": Column(
        "streams_x_1000_over_mean_tpot_tok_s", "Streams × 1000 / mean TPOT, tok/s (decode)",
        "{:,.1f}", "aggregate", True),
    # Read from the token timeline of each step (the step row's key, when it has one;
    # "not computed" otherwise).
    "decode_aggregate": Column("decode_aggregate_tok_s",
                               "Decode aggregate, tok/s (prefill and ramp out)", "{:,.1f}",
                               "aggregate"),
    "all_streams_decoding": Column("all_streams_decoding_tok_s",
                                   "All streams decoding, tok/s", "{:,.1f}", "aggregate"),
    "fastest_second": Column("fastest_second_tok_s", "Fastest second, tok/s", "{:,.1f}",
                             "aggregate"),
    "per_request_tok_s": Column("per_request_decode_tok_s",
                                "Per request decode, tok/s (median, first token out)",
                                "{:,.1f}", "per_stream"),
    "per_request_decode": Column("per_request_decode_tok_s",
                                 "Per request decode, (tokens − 1) / (last − first token), "
                                 "tok/s (median)", "{:,.1f}", "per_stream"),
    "prefill_tok_s": Column("prefill_tok_s", "Prefill, prompt tok/s", "{:,.0f}", "prefill"),
    "tok_s_per_measured_w": Column("tokens_per_joule",
                                   "Output tokens per measured J (board power over the load "
                                   "window, else the NVML counter), tok/s per W",
                                   "{:.2f}"),
    "lanes_stats": Column("lanes_stats", "Lanes", "{}"),
    "bandwidth_fraction": Column("bandwidth_fraction",
                                 "Per stream ÷ roofline per stream (η = 1, share of the "
                                 "bandwidth ceiling)", "{:.0%}"),
}


def metric_columns(proto: Protocol, source: str) -> list[Column]:
    """The columns of a protocol's table, in the order of its ``metrics`` list; a name the
    report does not know is refused, naming the protocol's key."""
    unknown = [m for m in proto.metrics if m not in REPORT_METRICS]
    if unknown:
        raise InputError(source, f"unknown metric(s) {unknown}; known: "
                         f"{', '.join(sorted(REPORT_METRICS))}",
                         key=f"protocols.{proto.name}.metrics")
    return [REPORT_METRICS[m] for m in proto.metrics]


def headline_metric(proto: Protocol) -> str:
    """The one metric a protocol answers with: the first entry of its ``metrics`` that is a
    decode or end-to-end speed (aggregate, tok/s summed over the streams); a per-stream
    speed counts only when every step runs one stream (there it is the aggregate). Every
    table, paragraph and figure of the protocol headlines this one (one number, one road).
    A protocol with no such metric is refused, naming its key."""
    one = all(st.streams == 1 for st in proto.steps)
    for m in proto.metrics:
        col = REPORT_METRICS.get(m)
        if col and (col.speed == "aggregate" or (one and col.speed == "per_stream")):
            return m
    raise InputError("config/protocols.yaml", "no decode or end-to-end speed among "
                     f"{list(proto.metrics)}: nothing to headline",
                     key=f"protocols.{proto.name}.metrics")


def running_at_once(run: Run, s: dict[str, Any]) -> int:
    """Streams that ran at once in a step: its streams, or the server's max-num-seqs when
    the step asked for more (the rest queue)."""
    return d.running_at_once(s["streams"], run.provenance.engine_config.max_num_seqs)


def is_queued(run: Run, s: dict[str, Any]) -> bool:
    """Whether a step asked for more streams than the server runs at once."""
    return d.is_queued(s["streams"], run.provenance.engine_config.max_num_seqs)


def per_stream(run: Run, s: dict[str, Any], col: Column) -> float | None:
    """One stream's speed under a column's definition (tok/s): a per-stream value itself,
    an aggregate's share by :func:`claimcheck.readings.definitions.per_stream` (over the streams
    that ran at once; the table's own ``*_per_stream`` column where it has one, by that same
    rule)."""
    v = s.get(col.key)
    if v is None or col.speed != "aggregate":
        return v if col.speed == "per_stream" else None
    own = s.get(f"{col.key}_per_stream")
    return own if own is not None else d.per_stream(
        v, s["streams"], run.provenance.engine_config.max_num_seqs)


def metric_name(col: Column) -> str:
    """A column's definition without its unit (its header less ", tok/s")."""
    return col.header.replace(", tok/s", "")


def in_prose(col: Column) -> str:
    """A column's definition as a sentence says it (first letter lower case)."""
    name = metric_name(col)
    return name[:1].lower() + name[1:]
