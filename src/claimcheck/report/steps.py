"""Read each step of a run directory into what the definitions need (I/O only).

One small reader so that the definitions, the model and the figure never open files
themselves: per step its token :class:`~claimcheck.core.timeline.Timeline`, the vLLM stats
lines of its window and the board energy over that window. It uses
:mod:`claimcheck.report.record` only through ``load_run(...).path`` / ``.provenance`` and
``step_log_lines``, so it can later be pointed at a typed run record.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from claimcheck.core import definitions as d
from claimcheck.core import serverlog
from claimcheck.core.energy import step_energy
from claimcheck.core.errors import InputError
from claimcheck.core.geometry import geometry_from_file
from claimcheck.core.model import EngineShape, shape_for
from claimcheck.core.paths import ROOT
from claimcheck.core.timeline import Timeline
from claimcheck.report import record
from claimcheck.runio import runload


@dataclass(frozen=True)
class StepData:
    """One recorded step: its record (step.json fields), timeline, log lines, energy (J, the
    one energy of :func:`claimcheck.core.energy.step_energy`) and where that came from."""

    record: dict[str, Any]
    timeline: Timeline
    log_lines: list[serverlog.StatsLine]
    energy_j: float | None
    window_unix_s: tuple[float, float]
    energy_source: str | None = None
    output_len: int | None = None
    """Output tokens each request asked for (the step's own length, else the protocol's)."""

    @property
    def held_prefill(self) -> bool:
        """:func:`claimcheck.core.definitions.is_held_prefill`: asked, and observed."""
        return d.is_held_prefill(self.output_len, d.max_output_tokens(self.timeline))

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
    files: runload.LoadedRun | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.path.name

    @cached_property
    def engine(self) -> tuple[EngineShape, dict[str, Any]]:
        """:func:`engine_shape` of this run, worked out once (the model table asks for it
        for every step it predicts and every calibration input)."""
        return _engine_shape(self)


def _window(rec: dict[str, Any], duration: float | None) -> tuple[float, float]:
    """The load's unix-time window (:func:`claimcheck.report.record.load_window`)."""
    t0, t1 = record.load_window(rec["start_unix_s"], rec["end_unix_s"], duration)
    return float(t0), float(t1)  # type: ignore[arg-type]  # a step.json has both


def load(path: str | Path, run: record.Run | None = None) -> RunData:
    """Every step of a run directory with a bench result; bad files raise InputError.
    ``run``: the directory's record when the caller has read it already (read once)."""
    lr = run.files if run is not None and run.files is not None else None
    if lr is None:
        if not (Path(path) / "provenance.json").is_file():
            raise InputError(str(path), "not a run directory (no provenance.json)")
        lr = runload.load_run(run.path if run is not None else path)
    power = lr.power_samples()
    steps, skipped = [], []
    for st in lr.steps:
        if st.timeline is None:
            skipped.append(st.skip or f"{st.record.dir}: no timeline")
            continue
        rec = st.raw
        t0, t1 = _window(rec, st.bench.get("duration") if st.bench else None)
        sel = record.step_log_lines(lr.stats_lines, t0, t1 + 5, lr.year)
        e = step_energy(rec, power, t0, t1)
        steps.append(StepData(record=rec, timeline=st.timeline, log_lines=sel,
                              energy_j=e.joules, window_unix_s=(t0, t1),
                              energy_source=e.source,
                              output_len=record.step_context(lr.protocol,
                                                             st.record.step)["output_len"]))
    return RunData(path=lr.path, provenance=lr.provenance.raw, steps=steps,
                   skipped=tuple(skipped), files=lr)


def load_folder(root: str | Path) -> list[RunData]:
    """Every run under ``root`` (:func:`claimcheck.report.record.find_runs`: a folder without
    provenance.json is refused), sorted by name: the runs a calibration is chosen among."""
    return [load(p) for p in record.find_runs(root)]


def measured_values(s: StepData) -> dict[str, float | None]:
    """What a model comparison reads off one measured step (the model table, verify mode
    and the predictions kept before a run): ``e2e`` and ``decode`` aggregate (tok/s summed
    over the streams, :func:`claimcheck.core.definitions.e2e_aggregate_tok_s` and
    :func:`~claimcheck.core.definitions.decode_aggregate_tok_s`; no decode for a held
    prefill, :attr:`StepData.held_prefill`), median ``tpot`` (ms) and ``ttft`` (s),
    ``send_to_last_s`` (first send to last token, s) and ``client_s`` (the client's span
    from its start to its end, s, its start-up included; None where not recorded)."""
    tl = s.timeline
    tpots = d.tpots_ms(tl)
    rec = s.record
    span = (rec["end_unix_s"] - rec["start_unix_s"]
            if rec.get("end_unix_s") is not None and rec.get("start_unix_s") is not None
            else None)
    return {"e2e": d.e2e_aggregate_tok_s(tl),
            "decode": None if s.held_prefill else d.decode_aggregate_tok_s(tl),
            "tpot": statistics.median(tpots) if tpots else None,
            "ttft": statistics.median(r.ttft_s for r in tl.requests) if tl.requests else None,
            "send_to_last_s": tl.wall_s, "client_s": span}


def step_metrics(s: StepData) -> dict[str, Any]:
    """Every definition of one step, aggregate and per stream, with streams and requests."""
    tl = s.timeline
    vals = d.all_definitions(tl, s.log_lines, s.energy_j, s.output_len)
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
    per-request decode), ``per_request_span_tok_s``, ``energy_j`` and ``energy_source``
    (the step's one energy, :func:`claimcheck.core.energy.step_energy`) and
    ``tok_s_per_measured_w`` (output tokens / those joules = tok/s per measured W, the
    ``tokens_per_joule`` definition), the lanes line as ``lanes_*`` and as text in
    ``lanes_stats``."""
    m = step_metrics(s)
    lanes = m.pop("lanes")
    m.update({f"lanes_{k}": v for k, v in lanes.items()})
    m["lanes_stats"] = lanes_text(lanes)
    m["per_request_tok_s"] = m["per_request_decode_tok_s"]
    m["per_request_span_tok_s"] = per_request_span_tok_s(s.timeline)
    m["energy_j"] = s.energy_j
    m["energy_source"] = s.energy_source
    m["tok_s_per_measured_w"] = m["tokens_per_joule"]
    m["timeline_output_tokens"] = m.pop("output_tokens")
    m["timeline_wall_s"] = m.pop("wall_s")
    return m


def timeline_columns(run: record.Run, data: RunData | None = None
                     ) -> dict[tuple[int, int], dict[str, Any]]:
    """:func:`step_columns` of every step of a read run with a bench result, by
    (step, repeat); ``data``: the run's :func:`load` when the caller has it already."""
    return {(s.record["step"], s.record["repeat"]): step_columns(s)
            for s in (data if data is not None else load(run.path, run)).steps}


# ------------------------------------------------------------------ the engine, for the model

BATCHED_TOKENS = re.compile(r"max_num_batched_tokens=(\d+)")
VLLM_DEFAULT_BATCHED_TOKENS = 8192
"""vLLM V1's default token budget for the OpenAI server on a large-memory GPU (assumed when
the start log does not print it)."""


def engine_shape(run: RunData) -> tuple[EngineShape, dict[str, Any]]:
    """The model's view of the run's engine, and where each input came from.

    W, S and kappa and every dtype are the run's
    :class:`~claimcheck.core.engine_inputs.EngineInputs` (the roofline's and the presets'
    too); the token budget is from the start log (else vLLM's default, assumed). Worked out
    once per run (:attr:`RunData.engine`); the dict is a fresh copy each call.
    """
    shape, info = run.engine
    return shape, dict(info)


def _engine_shape(run: RunData) -> tuple[EngineShape, dict[str, Any]]:
    """:func:`engine_shape`, read from the run's files and config.json."""
    prov = run.provenance
    lr = run.files if run.files is not None else runload.load_run(run.path)
    ei = lr.engine_inputs
    if ei is None:
        raise InputError(str(run.path / "provenance.json"), "model config "
                         f"{prov.get('model_config')!r} is not in this checkout",
                         key="model_config")
    eng = prov.get("engine_config", {})
    text = lr.start_log
    m = BATCHED_TOKENS.search(text)
    budget = int(m.group(1)) if m else VLLM_DEFAULT_BATCHED_TOKENS
    seqs = int(eng.get("max_num_seqs") or 256)
    try:
        align = serverlog.mamba_align_block_tokens(text)
    except ValueError as e:
        raise InputError(str(run.path / "server-start.log"), str(e)) from None
    geom = geometry_from_file(ROOT / prov["model_config"])
    shape = shape_for(geom, weight_bytes=ei.weight_bytes, state_dtype=ei.state_dtype,
                      kv_dtype=ei.kv_dtype, max_num_batched_tokens=budget, max_num_seqs=seqs,
                      conv_dtype=ei.conv_state_dtype, mamba_align_block_tokens=align)
    info = {"weights": ei.weights_source, "weight_bytes": ei.weight_bytes,
            "state_dtype": ei.state_dtype, "conv_state_dtype": ei.conv_state_dtype,
            "state_bytes_per_stream": shape.state_bytes, "kv_dtype": ei.kv_dtype,
            "kv_bytes_per_token": shape.kv_bytes_per_token,
            "max_num_batched_tokens": budget,
            "max_num_batched_tokens_source": "server-start.log" if m else
            f"vLLM default {VLLM_DEFAULT_BATCHED_TOKENS} (assumed)",
            "max_num_seqs": seqs, "config": prov["model_config"],
            "mamba_align_block_tokens": align,
            "prefill_chunks": (f"aligned to {align}-token blocks (Mamba cache 'align' mode, "
                               "server-start.log)") if align else "split anywhere",
            "compute_dtype": ei.compute_dtype}
    return shape, info
