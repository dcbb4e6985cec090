"""Read each step of a run directory into what the definitions need (I/O only).

One small reader so that the definitions, the model and the figure never open files
themselves: per step its token :class:`~claimcheck.core.timeline.Timeline`, the vLLM stats
lines of its window and the board energy over that window. It uses
:mod:`claimcheck.report.record` only through ``load_run(...).path`` / ``.provenance`` and
``step_log_lines``, so it can later be pointed at a typed run record.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claimcheck.core import definitions as d
from claimcheck.core import runfiles, serverlog, telemetry
from claimcheck.core.errors import InputError
from claimcheck.core.formats import STATE_DTYPE_BYTES
from claimcheck.core.geometry import geometry_from_file, load_config
from claimcheck.core.inputs import (
    COMPUTE_DTYPE,
    ENGINE_KV_DTYPE,
    ENGINE_STATE_DTYPE,
    engine_dtype,
)
from claimcheck.core.io import read_json, read_text
from claimcheck.core.model import EngineShape, shape_for
from claimcheck.core.paths import ROOT
from claimcheck.core.timeline import Timeline, from_bench
from claimcheck.core.units import GB, GIB
from claimcheck.core.weights import weight_bytes
from claimcheck.report import record


@dataclass(frozen=True)
class StepData:
    """One recorded step: its record (step.json fields), timeline, log lines, energy (J)."""

    record: dict[str, Any]
    timeline: Timeline
    log_lines: list[serverlog.StatsLine]
    energy_j: float | None
    window_unix_s: tuple[float, float]

    @property
    def label(self) -> str:
        r = self.record
        n = r["streams"]
        return f"step {r['step']} repeat {r['repeat']}: {n} stream{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class RunData:
    """A run directory read back: provenance and its steps that have a bench result."""

    path: Path
    provenance: dict[str, Any]
    steps: list[StepData]
    skipped: tuple[str, ...] = ()
    """Steps left out, each "DIR: why" (no bench result, or no request produced tokens)."""

    @property
    def name(self) -> str:
        return self.path.name


def _window(rec: dict[str, Any], duration: float | None) -> tuple[float, float]:
    """The load's unix-time window: the last ``duration`` s before the client exited, less
    1 s for writing its results (the bench's own clock is monotonic; as report.record)."""
    t1 = rec["end_unix_s"] - 1.0 if duration else rec["end_unix_s"]
    t0 = max(rec["start_unix_s"], t1 - duration) if duration else rec["start_unix_s"]
    return t0, t1


def _power_samples(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(time s, board power W summed over GPUs) from telemetry rows."""
    by_t: dict[float, float] = defaultdict(float)
    for r in rows:
        if isinstance(r.get("power_w"), float) and isinstance(r.get("t_unix_s"), float):
            by_t[r["t_unix_s"]] += r["power_w"]
    return sorted(by_t.items())


def step_energy_j(rec: dict[str, Any], power: list[tuple[float, float]], t0: float,
                  t1: float) -> float | None:
    """Board energy of a step, J: the telemetry's power integrated over the load window
    [t0, t1]; else the step's NVML energy-counter reading (``energy.joules``, which spans
    the whole client call, start-up included); else None."""
    e = d.energy_j(power, t0, t1)
    return e if e is not None else counter_energy_j(rec)


def load(path: str | Path, run: record.Run | None = None) -> RunData:
    """Every step of a run directory with a bench.json; bad files raise InputError.
    ``run``: the directory's record when the caller has read it already (read once)."""
    if run is None:
        if not (Path(path) / "provenance.json").is_file():
            raise InputError(str(path), "not a run directory (no provenance.json)")
        run = record.load_run(path)
    prov = run.provenance.raw
    log_path = run.path / "server.log"
    lines = serverlog.stats_lines(read_text(log_path)) if log_path.exists() else []
    power = _power_samples(telemetry.read_telemetry(run.path / "telemetry.csv"))
    year = int(prov["started_utc"][:4])
    steps, skipped = [], []
    for rec in prov.get("steps", []):
        bench_path = runfiles.bench_path(run.path / "steps" / rec["dir"])
        if bench_path is None:
            skipped.append(f"{rec['dir']}: no bench.json (step {rec.get('status')})")
            continue
        bench = read_json(bench_path)
        if not any(bench.get("output_lens") or []):
            skipped.append(f"{rec['dir']}: no request produced tokens")
            continue
        try:
            tl = from_bench(bench, int(rec["streams"]))
        except ValueError as e:
            raise InputError(str(bench_path), str(e)) from None
        t0, t1 = _window(rec, bench.get("duration"))
        sel = record.step_log_lines(lines, t0, t1 + 5, year)
        steps.append(StepData(record=rec, timeline=tl, log_lines=sel,
                              energy_j=step_energy_j(rec, power, t0, t1),
                              window_unix_s=(t0, t1)))
    return RunData(path=run.path, provenance=prov, steps=steps, skipped=tuple(skipped))


def step_metrics(s: StepData) -> dict[str, Any]:
    """Every definition of one step, aggregate and per stream, with streams and requests."""
    tl = s.timeline
    vals = d.all_definitions(tl, s.log_lines, s.energy_j)
    out: dict[str, Any] = {"step": s.record["step"], "repeat": s.record["repeat"],
                           "streams": tl.streams, "requests": s.record["requests"],
                           "completed": len(tl.requests), "failed": tl.failed,
                           "output_tokens": tl.output_tokens, "wall_s": tl.wall_s,
                           "decode_window_s": d.decode_window_s(tl)}
    for name, v in vals.items():
        out[name] = v
        if d.DEFINITIONS[name].unit.endswith("tok/s"):
            out[f"{name}_per_stream"] = d.per_stream(name, v, tl.streams)
    out["lanes"] = d.lanes_line(tl).as_dict()
    return out



def metrics_table(run: RunData) -> list[dict[str, Any]]:
    """Flat rows (one per step and repeat) for a derived table: run, card, engine, protocol,
    every definition and its per-stream reading, and the lanes line as ``lanes_*``."""
    prov = run.provenance
    rows = []
    for s in run.steps:
        m = step_metrics(s)
        lanes = m.pop("lanes")
        rows.append({"run": run.name, "card": prov.get("card"), "engine": prov.get("engine"),
                     "protocol": prov.get("protocol"), **m,
                     **{f"lanes_{k}": v for k, v in lanes.items()}})
    return rows

def per_request_span_tok_s(tl: Timeline) -> float | None:
    """Mean over requests of tokens / (last chunk - first chunk), tok/s for one stream: the
    closed-loop clients' per-request definition (all tokens over the span from the first
    streamed chunk to the last; TTFT left out). None when no request spans any time."""
    rates = [r.output_tokens / (r.last_token_s - r.first_token_s) for r in tl.requests
             if r.last_token_s > r.first_token_s]
    return sum(rates) / len(rates) if rates else None


def counter_energy_j(rec: dict[str, Any]) -> float | None:
    """The step's NVML energy-counter reading, J (``energy.joules``: the client's whole call,
    its start-up included); None when the step has none."""
    j = (rec.get("energy") or {}).get("joules")
    return float(j) if j else None


def lanes_text(line: dict[str, Any]) -> str:
    """The lanes tools' stats line, rebuilt from a :class:`~claimcheck.core.definitions.
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


def step_columns(s: StepData) -> dict[str, Any]:
    """The timeline columns of one step for the report's step rows: every definition of
    :func:`step_metrics` (aggregate and ``*_per_stream``), ``per_request_tok_s`` (median
    per-request decode), ``per_request_span_tok_s``, ``counter_energy_j`` and
    ``tok_s_per_measured_w`` (output tokens / counter joules = tok/s per measured W), the
    lanes line as ``lanes_*`` and as text in ``lanes_stats``."""
    m = step_metrics(s)
    lanes = m.pop("lanes")
    joules = counter_energy_j(s.record)
    m.update({f"lanes_{k}": v for k, v in lanes.items()})
    m["lanes_stats"] = lanes_text(lanes)
    m["per_request_tok_s"] = m["per_request_decode_tok_s"]
    m["per_request_span_tok_s"] = per_request_span_tok_s(s.timeline)
    m["counter_energy_j"] = joules
    m["tok_s_per_measured_w"] = d.tokens_per_joule(s.timeline.output_tokens, joules)
    m["timeline_output_tokens"] = m.pop("output_tokens")
    m["timeline_wall_s"] = m.pop("wall_s")
    return m


def timeline_columns(run: record.Run) -> dict[tuple[int, int], dict[str, Any]]:
    """:func:`step_columns` of every step of a read run with a bench result, by
    (step, repeat)."""
    return {(s.record["step"], s.record["repeat"]): step_columns(s)
            for s in load(run.path, run).steps}


# ------------------------------------------------------------------ the engine, for the model

BATCHED_TOKENS = re.compile(r"max_num_batched_tokens=(\d+)")
VLLM_DEFAULT_BATCHED_TOKENS = 8192
"""vLLM V1's default token budget for the OpenAI server on a large-memory GPU (assumed when
the start log does not print it)."""


def engine_shape(run: RunData) -> tuple[EngineShape, dict[str, Any]]:
    """The model's view of the run's engine, and where each input came from.

    W = the engine's own "Model loading took X GiB" less the input embedding (read by lookup,
    not per token) at the model dtype, else the weight format applied to the weights read per
    token; S (recurrent state plus the short-convolution state, the latter at the model
    dtype) and kappa at the engine's state and KV dtypes, every dtype name translated by
    :mod:`claimcheck.core.inputs`' engine tables ("auto" state: the config's
    ``mamba_ssm_dtype``; "auto" KV: BF16); token budget from the start log.
    """
    prov = run.provenance
    eng = prov.get("engine_config", {})
    cfg_path = ROOT / prov["model_config"]
    geom = geometry_from_file(cfg_path)
    start = run.path / "server-start.log"
    text = read_text(start) if start.exists() else ""
    where = str(run.path / "provenance.json")
    try:  # dtype names go through core.inputs' engine tables, the one translation
        model_dtype = engine_dtype(ENGINE_KV_DTYPE,
                                   str(load_config(cfg_path).get("torch_dtype", "bfloat16")),
                                   "model")
        ssm = eng.get("mamba_ssm_cache_dtype") or "auto"
        state = engine_dtype(ENGINE_STATE_DTYPE,
                             geom.mamba_ssm_dtype if ssm == "auto" else ssm, "state")
        kv = engine_dtype(ENGINE_KV_DTYPE, eng.get("kv_cache_dtype"), "KV")
        compute = COMPUTE_DTYPE.get(eng.get("weight_format") or "", model_dtype)
    except ValueError as e:
        raise InputError(where, str(e), key="engine_config") from None
    embed_bytes = geom.components.get("embed", 0) * STATE_DTYPE_BYTES[model_dtype]
    gib = serverlog.weights_gib(text)
    if gib is not None:
        w = gib * GIB - embed_bytes
        w_src = (f"engine log: weights {gib:g} GiB less input embedding "
                 f"{embed_bytes / GB:.2f} GB ({model_dtype}) = {w / GB:.2f} GB read per step")
    else:
        w, w_src = weight_bytes(geom, fmt=eng.get("weight_format") or model_dtype)
    m = BATCHED_TOKENS.search(text)
    budget = int(m.group(1)) if m else VLLM_DEFAULT_BATCHED_TOKENS
    seqs = int(eng.get("max_num_seqs") or 256)
    try:
        align = serverlog.mamba_align_block_tokens(text)
    except ValueError as e:
        raise InputError(str(start), str(e)) from None
    shape = shape_for(geom, weight_bytes=w, state_dtype=state, kv_dtype=kv,
                      max_num_batched_tokens=budget, max_num_seqs=seqs,
                      conv_dtype=model_dtype, mamba_align_block_tokens=align)
    info = {"weights": w_src, "weight_bytes": w, "state_dtype": state,
            "conv_state_dtype": model_dtype,
            "state_bytes_per_stream": shape.state_bytes, "kv_dtype": kv,
            "kv_bytes_per_token": shape.kv_bytes_per_token,
            "max_num_batched_tokens": budget,
            "max_num_batched_tokens_source": "server-start.log" if m else
            f"vLLM default {VLLM_DEFAULT_BATCHED_TOKENS} (assumed)",
            "max_num_seqs": seqs, "config": prov["model_config"],
            "mamba_align_block_tokens": align,
            "prefill_chunks": (f"aligned to {align}-token blocks (Mamba cache 'align' mode, "
                               "server-start.log)") if align else "split anywhere",
            "compute_dtype": compute}
    return shape, info

