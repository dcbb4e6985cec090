"""Read a recorded run directory into tidy per-step metrics (pure parsing, no GPU).

Every tok/s here is named for what it is:
``per_stream_tok_s`` = 1000 / median TPOT (decode; first token excluded),
``aggregate_tpot_tok_s`` = streams x per_stream_tok_s (assumes all streams decode),
``e2e_output_tok_s`` = all output tokens / benchmark wall time (prefill, ramp, tail in),
``engine_log_steady_tok_s`` = median of vLLM's 10-s generation-throughput lines with all
streams running and no prompt tokens (None when no window qualifies).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claimcheck.measure import serverlog, telemetry
from claimcheck.measure.bench import load_bench, summarize


@dataclass(frozen=True)
class Run:
    path: Path
    provenance: dict[str, Any]
    steps: list[dict[str, Any]]

    @property
    def dummy(self) -> bool:
        return self.provenance.get("weights") == "dummy"

    @property
    def label(self) -> str:
        """Short description: card, engine, weights, engine version."""
        p = self.provenance
        sw = p.get("software", {})
        return (f"{p['card']} · {p['engine']} · {p['weights_label']} · "
                f"vLLM {sw.get('vllm', '?')}")


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


def load_run(path: str | Path) -> Run:
    """Parse provenance, bench results, server log and telemetry of one run directory."""
    p = Path(path)
    prov_path = p / "provenance.json"
    if not prov_path.exists():
        raise FileNotFoundError(f"{p}: not a run directory (no provenance.json)")
    prov = json.loads(prov_path.read_text())
    tel = telemetry.read_telemetry(p / "telemetry.csv")
    log_text = (p / "server.log").read_text() if (p / "server.log").exists() else ""
    lines = serverlog.stats_lines(log_text)
    year = int(prov["started_utc"][:4])
    proto = prov["protocol_config"]
    steps = []
    for rec in prov.get("steps", []):
        bench_path = p / "steps" / rec["dir"] / "bench.json"
        m: dict[str, Any] = {"streams": rec["streams"], "requests": rec["requests"],
                             "repeat": rec["repeat"], "step": rec["step"],
                             "status": rec["status"], "reason": rec.get("reason"),
                             "seed": rec["seed"]}
        t0, t1 = rec["start_unix_s"], rec["end_unix_s"]
        if bench_path.exists():
            raw = load_bench(bench_path)
            m.update(summarize(raw, rec["streams"]))
            if raw.get("duration"):
                # The load itself, without the client's start-up (~10 s of importing):
                # the bench's start_times are on a monotonic clock, so the window is the
                # last `duration` seconds before the client exited (less 1 s for writing
                # its results), never earlier than the client's start.
                t1 = rec["end_unix_s"] - 1.0
                t0 = max(rec["start_unix_s"], t1 - raw["duration"])
        m["window_start_unix_s"], m["window_end_unix_s"] = t0, t1
        sel = step_log_lines(lines, t0, t1 + 5, year)
        steady = serverlog.steady_lines(sel, rec["streams"])
        m["engine_log_lines"] = len(sel)
        m["engine_log_steady_lines"] = len(steady)
        m["engine_log_steady_tok_s"] = serverlog.steady_state_tok_s(sel, rec["streams"])
        m["preemptions"] = max((s.preemptions for s in sel), default=0)
        m.update({f"telemetry_{k}": v for k, v in telemetry.summarize(tel, t0, t1).items()})
        m["context_tokens_per_stream"] = proto["input_len"] + proto["output_len"]
        m["input_len"] = proto["input_len"]
        m["output_len"] = proto["output_len"]
        steps.append(m)
    return Run(path=p, provenance=prov, steps=steps)


def reported_steps(run: Run) -> list[dict[str, Any]]:
    """The steps the protocol reports: the last repeat of each level for ``report: last``."""
    mode = run.provenance["protocol_config"].get("report", "last")
    if mode != "last":
        return run.steps
    last: dict[int, dict[str, Any]] = {}
    for s in run.steps:
        last[s["step"]] = s
    return [last[k] for k in sorted(last)]


def engine_facts(run: Run) -> dict[str, Any]:
    """What the engine said about itself at start: weight GiB and KV pool tokens."""
    start = run.path / "server-start.log"
    text = start.read_text() if start.exists() else ""
    return {"weights_gib": serverlog.weights_gib(text),
            "kv_pool_tokens": serverlog.kv_pool_tokens(text)}


def find_runs(root: str | Path) -> list[Path]:
    """Run directories under ``root`` (those holding a provenance.json), sorted."""
    return sorted(p.parent for p in Path(root).glob("*/provenance.json"))
