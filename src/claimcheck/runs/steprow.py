"""A step's row of a run's step table, from what the run's files held (pure: no file is
opened here; :mod:`claimcheck.runs.run` reads the files and builds the table).

One row per step and repeat. Its columns, each with its unit in its name (tok/s, ms, s, W,
J, MHz, MiB; ``*_per_stream``: tok/s for one stream, :func:`claimcheck.readings.definitions.
per_stream`):

- the step record (step, repeat, streams, requests, status, reason, seed) and the step's
  lengths (``input_len``, ``output_len``, ``context_tokens_per_stream``, tokens);
- vLLM's own summary (:func:`claimcheck.readings.bench.summarize`) as ``vllm_*`` columns (a
  cross-check), but for the step's counts;
- every metric definition of :mod:`claimcheck.readings.definitions` on the step's token
  timeline, with its per-stream reading, the lanes line (``lanes_*``) and the step's energy;
- the engine log's steady state and the telemetry over the step's load window.

A held-prefill step (:func:`claimcheck.readings.definitions.is_held_prefill`) has no decode
rate: its decode columns are None.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from claimcheck.config.protocols import Protocol, step_context
from claimcheck.readings import definitions as d
from claimcheck.readings import serverlog, telemetry
from claimcheck.readings.bench import summarize
from claimcheck.readings.energy import StepEnergy
from claimcheck.readings.timeline import Timeline, decoding_intervals, most_at_once
from claimcheck.runs.runrecord import StepRecord

RECORD_COUNTS = ("streams", "requests", "completed", "failed")
"""vLLM's summary fields that are the step's record (its counts), kept unprefixed; every
other figure of vLLM's own summary is a ``vllm_*`` column (a cross-check)."""

HELD_PREFILL_NONE = ("vllm_per_stream_tok_s", "vllm_aggregate_tpot_tok_s",
                     "vllm_aggregate_mean_tpot_tok_s")
"""vLLM's decode speeds a held-prefill step's row leaves empty (one gap per request: no
decode rate to read; the definitions' own decode columns are empty already)."""


def load_window(start: float | None, end: float | None, duration: float | None
                ) -> tuple[float | None, float | None]:
    """A step's load window, unix s: the load itself, without the client's start-up (~10 s
    of importing). The bench's start times are on a monotonic clock, so the window is the
    last ``duration`` s (the bench's) before the client exited, less 1 s for writing its
    results, never earlier than the client's start; without a duration, start to end."""
    if not duration or end is None:
        return start, end
    t1 = end - 1.0
    return max(start if start is not None else t1, t1 - duration), t1


def _log_time(line: serverlog.StatsLine, year: int) -> float | None:
    """Unix time of a log line's 'MM-DD HH:MM:SS' stamp, read as UTC (the runner's hosts)."""
    if not line.time:
        return None
    t = dt.datetime.strptime(f"{year}-{line.time}", "%Y-%m-%d %H:%M:%S")
    return t.replace(tzinfo=dt.UTC).timestamp()


def step_log_lines(lines: Sequence[serverlog.StatsLine], start: float, end: float,
                   year: int) -> list[serverlog.StatsLine]:
    """Stats lines stamped within [start, end] (whole seconds, so 1 s of slack each side)."""
    out = []
    for s in lines:
        t = _log_time(s, year)
        if t is not None and start - 1 <= t <= end + 1:
            out.append(s)
    return out


def timeline_latencies(tl: Timeline) -> dict[str, float | None]:
    """The step row's latencies on the step's timeline, ms: median and mean TPOT
    (:func:`claimcheck.readings.definitions.tpots_ms`, vLLM's arithmetic) and median and mean
    TTFT (send to first token) over its completed requests."""
    t = d.tpots_ms(tl)
    ttft = [r.ttft_s * 1e3 for r in tl.requests]
    return {"median_tpot_ms": statistics.median(t) if t else None,
            "mean_tpot_ms": statistics.fmean(t) if t else None,
            "median_ttft_ms": statistics.median(ttft) if ttft else None,
            "mean_ttft_ms": statistics.fmean(ttft) if ttft else None}


def per_request_span_tok_s(tl: Timeline) -> float | None:
    """Mean over requests of tokens / (last chunk - first chunk), tok/s for one stream: the
    closed-loop clients' per-request definition (all tokens over the span from the first
    streamed chunk to the last; TTFT left out). None when no request spans any time."""
    rates = [r.output_tokens / (r.last_token_s - r.first_token_s) for r in tl.requests
             if r.last_token_s > r.first_token_s]
    return sum(rates) / len(rates) if rates else None


def lanes_text(line: Mapping[str, Any]) -> str:
    """The lanes tools' stats line, rebuilt from a :class:`~claimcheck.readings.definitions.
    LanesLine` dict: lanes, total tokens in wall s, decode / e2e tok/s, plan and tail ms,
    fastest second and per lane (tok/s)."""
    dec = line["decode_tok_s"]
    per = line["per_lane_tok_s"]
    return (f"{line['lanes']} lanes · {line['total_tokens']:,} tok in {line['wall_s']:.2f}s · "
            f"{'n/a' if dec is None else f'{dec:,.1f}'} tok/s decode / "
            f"{line['e2e_tok_s']:,.1f} tok/s e2e · plan {line['plan_s'] * 1e3:,.0f}ms · "
            f"tail {line['tail_s'] * 1e3:,.0f}ms · fastest second "
            f"{line['fastest_second_tok_s']:,.0f} tok/s · "
            f"{'n/a' if per is None else f'{per:,.1f}'} tok/s per lane")


LANES_ELSEWHERE = ("lanes", "total_tokens", "wall_s", "e2e_tok_s")
"""The lanes line's figures the row holds already (streams, ``timeline_output_tokens``,
``timeline_wall_s``, ``e2e_aggregate_tok_s``): not repeated as ``lanes_*``."""


def timeline_columns(rec: Mapping[str, Any], tl: Timeline,
                     log_lines: Sequence[serverlog.StatsLine], energy: StepEnergy,
                     output_len: int | None, max_num_seqs: int | None) -> dict[str, Any]:
    """The columns a step's token timeline gives: every definition (and ``*_per_stream``
    for the aggregates in tok/s, :func:`~claimcheck.readings.definitions.has_per_stream_column`),
    the lanes line's own figures as ``lanes_*`` (those
    no definition or timeline column already holds) and as text in ``lanes_stats``,
    ``per_request_span_tok_s``, ``most_decoding_at_once`` (the most requests between their
    first and last token at one moment: below the streams, some never decoded beside the
    others), ``energy_j`` and ``energy_source`` (the step's one energy,
    :func:`claimcheck.readings.energy.step_energy`; tok/s per measured W is the definition
    ``tokens_per_joule``) and the timeline's own output tokens and wall time (first send to
    last token, s). ``rec``: the step's record (step, repeat, requests); ``output_len``: the
    tokens each request asked for."""
    vals = d.all_definitions(tl, log_lines, energy.joules, output_len)
    out: dict[str, Any] = {"step": rec["step"], "repeat": rec["repeat"], "streams": tl.streams,
                           "requests": rec["requests"], "completed": len(tl.requests),
                           "failed": tl.failed, "decode_window_s": d.decode_window_s(tl)}
    for name, v in vals.items():
        out[name] = v
        if d.has_per_stream_column(name):
            out[f"{name}_per_stream"] = d.definition_per_stream(name, v, tl.streams,
                                                                max_num_seqs)
    lanes = d.lanes_line(tl).as_dict()
    out.update({f"lanes_{k}": v for k, v in lanes.items() if k not in LANES_ELSEWHERE})
    out["lanes_stats"] = lanes_text(lanes)
    out["per_request_span_tok_s"] = per_request_span_tok_s(tl)
    out["most_decoding_at_once"] = most_at_once(decoding_intervals(tl))
    out["energy_j"] = energy.joules
    out["energy_source"] = energy.source
    out["timeline_output_tokens"] = tl.output_tokens
    out["timeline_wall_s"] = tl.wall_s
    return out


def record_columns(rec: StepRecord, proto: Protocol, bench: Mapping[str, Any] | None,
                   tl: Timeline | None, stats_lines: Sequence[serverlog.StatsLine],
                   telemetry_rows: Sequence[Mapping[str, Any]], year: int) -> dict[str, Any]:
    """The columns of a step's record and its bench result: status, reason and load window
    for every step; for a completed one, vLLM's own summary as ``vllm_*`` (but its counts,
    :data:`RECORD_COUNTS`), the engine log's lines and steady state and the telemetry over
    the load window; for one with a timeline, the timeline's latencies
    (:func:`timeline_latencies`); the step's lengths. ``year``: the run's (the log's stamps
    have none)."""
    m: dict[str, Any] = {"streams": rec.streams, "requests": rec.requests,
                         "repeat": rec.repeat, "step": rec.step, "status": rec.status,
                         "reason": rec.reason, "seed": rec.seed}
    t0, t1 = rec.start_unix_s, rec.end_unix_s
    if rec.ok and bench is not None:
        vllm = summarize(dict(bench), rec.streams)
        m.update({k: vllm[k] for k in RECORD_COUNTS})
        m.update({f"vllm_{k}": v for k, v in vllm.items() if k not in RECORD_COUNTS})
        t0, t1 = load_window(t0, t1, bench.get("duration"))
    if tl is not None:  # the reported figures are the timeline's, vLLM's kept beside
        m.update(timeline_latencies(tl))
    m["window_start_unix_s"], m["window_end_unix_s"] = t0, t1
    if rec.ok and t0 is not None and t1 is not None:
        sel = step_log_lines(stats_lines, t0, t1 + 5, year)
        steady = serverlog.steady_lines(sel, rec.streams)
        m["engine_log_lines"] = len(sel)
        m["engine_log_steady_lines"] = len(steady)
        m["engine_log_steady_tok_s"] = serverlog.steady_state_tok_s(sel, rec.streams)
        m["preemptions"] = max((s.preemptions for s in sel), default=0)
        m.update({f"telemetry_{k}": v
                  for k, v in telemetry.summarize(list(telemetry_rows), t0, t1).items()})
    ctx = step_context(proto, rec.step)
    m["context_tokens_per_stream"] = ctx["context_tokens_per_stream"]
    m["input_len"] = ctx["input_len"]
    m["output_len"] = ctx["output_len"]
    if rec.ok and tl is not None:
        m["max_output_tokens"] = d.max_output_tokens(tl)
    if d.row_is_held_prefill(m):  # one gap per request: no decode rate to read
        m.update(dict.fromkeys(HELD_PREFILL_NONE))
    return m


def step_row(record: dict[str, Any], timeline: dict[str, Any] | None) -> dict[str, Any]:
    """A step's row: its timeline's columns (:func:`timeline_columns`, where it has a
    timeline) and its record's (:func:`record_columns`), the record's winning where both
    have a column (streams, requests, completed and failed as recorded)."""
    return {**timeline, **record} if timeline else record


def reported(report: str, rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """The indices of the steps (rows) the protocol reports, never a failed one, in the
    order they are reported. ``report: last``: the last repeat of each level, by level, and
    nothing for a level whose last repeat failed (an earlier pass is not promoted in its
    place); ``report: median``: per level, by level, the completed repeat whose end-to-end
    aggregate is the median (:func:`median_step`); otherwise every completed step."""
    done = [i for i, r in enumerate(rows) if r["status"] == "complete"]
    if report == "median":
        by_level: dict[int, list[int]] = {}
        for i in done:
            by_level.setdefault(rows[i]["step"], []).append(i)
        return [median_step([(i, rows[i]) for i in by_level[k]]) for k in sorted(by_level)]
    if report != "last":
        return done
    last: dict[int, int] = {}
    for i, r in enumerate(rows):
        last[r["step"]] = i
    return [last[k] for k in sorted(last) if rows[last[k]]["status"] == "complete"]


def median_step(steps: Sequence[tuple[int, Mapping[str, Any]]],
                key: str = "e2e_aggregate_tok_s") -> int:
    """The index of the step whose ``key`` is the median of the given (index, row) steps
    (the lower middle one of an even count; a step without the value sorts first)."""
    ranked = sorted(steps, key=lambda s: (s[1].get(key) is not None, s[1].get(key) or 0.0))
    return ranked[(len(ranked) - 1) // 2][0]
