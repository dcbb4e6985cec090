"""Read a recorded run directory into tidy per-step metrics (pure parsing, no GPU).

Every tok/s here is named for what it is, and computed by :mod:`claimcheck.core.definitions`
on the step's token timeline (vLLM's own figures are kept as ``vllm_*``, a cross-check):
``per_stream_tok_s`` = 1000 / median TPOT (decode; first token excluded),
``aggregate_tpot_tok_s`` = streams x per_stream_tok_s (assumes all streams decode),
``e2e_output_tok_s`` = all output tokens / first send to last token (prefill, ramp, tail in),
``aggregate_mean_tpot_tok_s`` = streams x 1000 / mean TPOT (decode),
``engine_log_steady_tok_s`` = median of vLLM's 10-s generation-throughput lines with all
streams running and no prompt tokens (None when no window qualifies).
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimcheck.core import definitions as d
from claimcheck.core import runchecks, serverlog, telemetry
from claimcheck.core.bench import summarize
from claimcheck.core.engine_inputs import EngineInputs
from claimcheck.core.errors import InputError
from claimcheck.core.protocols import Protocol
from claimcheck.core.runrecord import (
    Provenance,
    StepRecord,
    protocol_from_record,
    validate_provenance,
)
from claimcheck.core.timeline import Timeline
from claimcheck.runio import runfiles, runload
from claimcheck.runio.runload import LoadedRun, RunStep


@dataclass(frozen=True)
class Run:
    """One run directory, read once: typed provenance, the protocol it ran, one tidy row
    of metrics per step (failed steps keep their status and reason and no metrics), and
    what the engine said about itself at start."""

    path: Path
    provenance: Provenance
    protocol: Protocol
    steps: list[dict[str, Any]]
    weights_gib: float | None = None
    kv_pool_tokens: int | None = None
    engine_inputs: EngineInputs | None = None
    files: LoadedRun | None = field(default=None, repr=False, compare=False)
    """The run directory as read (None for a run rebuilt from its run-record JSON)."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def dummy(self) -> bool:
        return self.provenance.dummy

    @property
    def label(self) -> str:
        """Short description: card, engine, weights, engine version."""
        p = self.provenance
        return f"{p.card} · {p.engine} · {p.weights_label} · vLLM {p.sw('vllm')}"


def step_context(proto: Protocol, index: int) -> dict[str, int]:
    """Prompt, output and context tokens per stream of step ``index`` of a protocol: the
    one place they are worked out (the step's own lengths where it has them)."""
    st = proto.steps[index] if 0 <= index < len(proto.steps) else None
    in_len = getattr(st, "input_len", None) or proto.input_len
    out_len = runload.step_output_len(proto, index)
    return {"input_len": in_len, "output_len": out_len,
            "context_tokens_per_stream": in_len + out_len}


def _log_time(line: serverlog.StatsLine, year: int) -> float | None:
    """Unix time of a log line's 'MM-DD HH:MM:SS' stamp, read as UTC (the runner's hosts)."""
    if not line.time:
        return None
    t = dt.datetime.strptime(f"{year}-{line.time}", "%Y-%m-%d %H:%M:%S")
    return t.replace(tzinfo=dt.UTC).timestamp()


def step_log_lines(lines: list[serverlog.StatsLine], start: float, end: float,
                   year: int) -> list[serverlog.StatsLine]:
    """Stats lines stamped within [start, end] (whole seconds, so 1 s of slack each side)."""
    out = []
    for s in lines:
        t = _log_time(s, year)
        if t is not None and start - 1 <= t <= end + 1:
            out.append(s)
    return out


def check_bench(bench: dict[str, Any], rec: StepRecord, proto: Protocol, source: str
                ) -> None:
    """Refuse measured values that cannot be (:func:`claimcheck.core.runchecks.check_bench`)."""
    runchecks.check_bench(bench, requests=rec.requests, step_ok=rec.ok, source=source,
                          output_len=step_context(proto, rec.step)["output_len"])


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


def _step_row(lr: LoadedRun, st: RunStep) -> dict[str, Any]:
    """The tidy metrics of one step (only status, reason and window for a failed step)."""
    rec, proto = st.record, lr.protocol
    m: dict[str, Any] = {"streams": rec.streams, "requests": rec.requests,
                         "repeat": rec.repeat, "step": rec.step, "status": rec.status,
                         "reason": rec.reason, "seed": rec.seed}
    t0, t1 = rec.start_unix_s, rec.end_unix_s
    if rec.ok:
        raw = st.bench
        if raw is None:  # a complete step must have its result
            raise InputError(str(lr.path / "steps" / rec.dir / runfiles.BENCH),
                             "no such file")
        check_bench(raw, rec, proto, str(st.bench_path))
        vllm = summarize(raw, rec.streams)
        mean_tpot = raw.get("mean_tpot_ms")
        vllm["aggregate_mean_tpot_tok_s"] = (rec.streams * 1000 / mean_tpot if mean_tpot
                                             else None)
        m.update(vllm)
        m.update({f"vllm_{k}": vllm[k] for k in VLLM_CROSS_CHECK})
        if st.timeline is not None:
            m.update(timeline_speeds(st.timeline))
        t0, t1 = load_window(t0, t1, raw.get("duration"))
    m["window_start_unix_s"], m["window_end_unix_s"] = t0, t1
    if rec.ok and t0 is not None and t1 is not None:
        sel = step_log_lines(lr.stats_lines, t0, t1 + 5, lr.year)
        steady = serverlog.steady_lines(sel, rec.streams)
        m["engine_log_lines"] = len(sel)
        m["engine_log_steady_lines"] = len(steady)
        m["engine_log_steady_tok_s"] = serverlog.steady_state_tok_s(sel, rec.streams)
        m["preemptions"] = max((s.preemptions for s in sel), default=0)
        m.update({f"telemetry_{k}": v
                  for k, v in telemetry.summarize(lr.telemetry, t0, t1).items()})
    ctx = step_context(proto, rec.step)
    m["context_tokens_per_stream"] = ctx["context_tokens_per_stream"]
    m["input_len"] = ctx["input_len"]
    m["output_len"] = ctx["output_len"]
    if rec.ok and st.timeline is not None:
        m["max_output_tokens"] = d.max_output_tokens(st.timeline)
    if d.row_is_held_prefill(m):  # one gap per request: no decode rate to read
        m.update(per_stream_tok_s=None, aggregate_tpot_tok_s=None,
                 aggregate_mean_tpot_tok_s=None, vllm_aggregate_tpot_tok_s=None,
                 vllm_aggregate_mean_tpot_tok_s=None)
    return m


VLLM_CROSS_CHECK = ("e2e_output_tok_s", "median_tpot_ms", "mean_tpot_ms",
                    "aggregate_tpot_tok_s", "aggregate_mean_tpot_tok_s")
"""vLLM's own figures, kept beside the timeline's as ``vllm_*`` columns (a cross-check)."""


def timeline_speeds(tl: Timeline) -> dict[str, float | None]:
    """The step row's reported speeds, each by :mod:`claimcheck.core.definitions` on the
    step's timeline: end to end (all output tokens / first send to last token), median and
    mean TPOT (ms), streams x 1000 / median and mean TPOT (aggregate, decode) and 1000 /
    median TPOT (per stream)."""
    t = d.tpots_ms(tl)
    med = statistics.median(t) if t else None
    return {"e2e_output_tok_s": d.e2e_aggregate_tok_s(tl), "median_tpot_ms": med,
            "mean_tpot_ms": statistics.fmean(t) if t else None,
            "per_stream_tok_s": 1000.0 / med if med else None,
            "aggregate_tpot_tok_s": d.streams_x_1000_over_median_tpot(tl),
            "aggregate_mean_tpot_tok_s": d.streams_x_1000_over_mean_tpot(tl)}


def load_run(path: str | Path) -> Run:
    """Read one run directory once (:func:`claimcheck.runio.runload.load_run`: provenance.json
    and steps.json validated, each step's step.json and bench result, server.log,
    server-start.log and telemetry.csv) into tidy step rows. Every error names the file."""
    lr = runload.load_run(path)
    steps = [_step_row(lr, st) for st in lr.steps]
    return Run(path=lr.path, provenance=lr.provenance, protocol=lr.protocol, steps=steps,
               weights_gib=lr.weights_gib, kv_pool_tokens=lr.kv_pool_tokens,
               engine_inputs=lr.engine_inputs, files=lr)


def reported_steps(run: Run) -> list[dict[str, Any]]:
    """The steps the protocol reports, never a failed one. For ``report: last``, the last
    repeat of each level, and nothing for a level whose last repeat failed (an earlier pass
    is not promoted in its place). For ``report: median``, per level the completed repeat
    whose end-to-end aggregate is the median (the lower middle one of an even count);
    otherwise every completed step."""
    if run.protocol.report == "median":
        by_level: dict[int, list[dict[str, Any]]] = {}
        for s in run.steps:
            if s["status"] == "complete":
                by_level.setdefault(s["step"], []).append(s)
        return [median_step(by_level[k]) for k in sorted(by_level)]
    if run.protocol.report != "last":
        return [s for s in run.steps if s["status"] == "complete"]
    last: dict[int, dict[str, Any]] = {}
    for s in run.steps:
        last[s["step"]] = s
    return [last[k] for k in sorted(last) if last[k]["status"] == "complete"]


def median_step(steps: list[dict[str, Any]], key: str = "e2e_output_tok_s"
                ) -> dict[str, Any]:
    """The step whose ``key`` is the median of the given steps (the lower middle one of an
    even count; a step without the value sorts first)."""
    ranked = sorted(steps, key=lambda s: (s.get(key) is not None, s.get(key) or 0.0))
    return ranked[(len(ranked) - 1) // 2]


def engine_facts(run: Run) -> dict[str, Any]:
    """What the engine said about itself at start: weight GiB and KV pool tokens."""
    return {"weights_gib": run.weights_gib, "kv_pool_tokens": run.kv_pool_tokens}


def find_runs(root: str | Path) -> list[Path]:
    """Run directories under ``root``, sorted: the one run discovery every reader calls
    (the pipeline, the CLI, the calibration's runs). Every folder not starting with '.' is a
    run; files (the manifest, notes) and hidden entries are not. A folder without
    provenance.json is refused, naming it (the runs folder holds runs only)."""
    runs = sorted(p for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith("."))
    for p in runs:
        if not (p / "provenance.json").is_file():
            raise InputError(str(p / "provenance.json"), "missing: every run directory needs "
                             f"its provenance.json (move the folder out of {root} if it is "
                             "not a run)")
    return runs


def run_to_json(run: Run, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The run as one JSON object (the run record the figures read): the validated
    provenance, the engine's own report, the step metrics and the table rows."""
    ei = run.engine_inputs.as_dict() if run.engine_inputs else None
    return {"path": str(run.path), "provenance": run.provenance.raw,
            "weights_gib": run.weights_gib, "kv_pool_tokens": run.kv_pool_tokens,
            "engine_inputs": ei, "steps": run.steps, "rows": rows}


def run_from_json(obj: dict[str, Any], source: str) -> tuple[Run, list[dict[str, Any]]]:
    """A run and its table rows back from :func:`run_to_json`'s object."""
    try:
        prov = validate_provenance(obj["provenance"], source)
        run = Run(path=Path(obj["path"]), provenance=prov,
                  protocol=protocol_from_record(prov.protocol_config), steps=obj["steps"],
                  weights_gib=obj["weights_gib"], kv_pool_tokens=obj["kv_pool_tokens"],
                  engine_inputs=EngineInputs(**obj["engine_inputs"])
                  if obj.get("engine_inputs") else None)
        return run, obj["rows"]
    except (KeyError, TypeError) as e:
        raise InputError(source, f"not a run record ({e})") from None
