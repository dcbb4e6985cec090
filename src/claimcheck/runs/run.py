"""The one run type: a run directory read once into typed provenance and one step table.

:class:`Run` is what every report, figure, model comparison and verdict reads. Its
``table`` is a pandas DataFrame, one row per step and repeat, one column per quantity with
its unit in the name (:mod:`claimcheck.runs.steprow`: every metric definition and its
per-stream reading, vLLM's own figures under ``vllm_*``, the engine log and telemetry over
the step's load window); the token timeline of each step that has one is kept beside it
(``traces``). A run is built from its files (:func:`load_run`) or from its run record, the
JSON the pipeline writes once per run with the table's rows (:func:`to_record`,
:func:`from_record`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from claimcheck.config.engines import acceptance_words
from claimcheck.config.protocols import Protocol, step_context
from claimcheck.files.errors import InputError
from claimcheck.files.frames import records, to_frame
from claimcheck.model.model import EngineShape
from claimcheck.physics.cardfiles import load_cards
from claimcheck.physics.cards import Card
from claimcheck.physics.engine_inputs import EngineInputs
from claimcheck.physics.geometry import Geometry
from claimcheck.readings import definitions as d
from claimcheck.readings import serverlog
from claimcheck.readings.energy import StepEnergy, step_energy
from claimcheck.readings.enginetimes import engine_time_columns
from claimcheck.readings.speculation import speculation_columns
from claimcheck.readings.telemetry import power_samples
from claimcheck.readings.timeline import Timeline
from claimcheck.runs import runchecks
from claimcheck.runs.engine_shape import engine_shape
from claimcheck.runs.records import validate_provenance
from claimcheck.runs.runload import (
    RunStep,
    read_provenance,
    read_steps,
    read_steps_json,
    read_telemetry,
    read_text_or_empty,
    run_engine_inputs,
)
from claimcheck.runs.runrecord import Provenance, protocol_from_record
from claimcheck.runs.steprow import (
    load_window,
    record_columns,
    reported,
    step_log_lines,
    step_row,
    timeline_columns,
)


@dataclass(frozen=True)
class StepTrace:
    """What a step's row cannot hold, kept beside the table: the step's record as
    provenance.json has it, its token timeline, the engine's stats lines of its load window,
    that window (unix s), its one energy (J, :func:`claimcheck.readings.energy.step_energy`) and
    the energy's source, and the output tokens each request asked for."""

    record: dict[str, Any]
    timeline: Timeline
    log_lines: list[serverlog.StatsLine]
    energy_j: float | None
    window_unix_s: tuple[float, float]
    energy_source: str | None = None
    output_len: int | None = None

    @property
    def held_prefill(self) -> bool:
        """:func:`claimcheck.readings.definitions.is_held_prefill`: asked, and observed."""
        return d.is_held_prefill(self.output_len, d.max_output_tokens(self.timeline))

    @property
    def label(self) -> str:
        r = self.record
        n = r["streams"]
        return f"step {r['step']} repeat {r['repeat']}: {n} stream{'s' if n != 1 else ''}"


@dataclass(frozen=True, eq=False)
class Run:
    """One run: its directory, typed provenance, the protocol it ran, its step table (one
    row per step and repeat; failed steps keep their status and reason), the timeline of
    each step that has one (``traces``; ``skipped``: the steps without, each "DIR: why"),
    and what the engine said about itself at start (weights GiB, the quantized linear
    kernel it chose, KV pool tokens, its inputs to the arithmetic). A run read back from
    its run record has no traces."""

    path: Path
    provenance: Provenance
    protocol: Protocol
    table: pd.DataFrame = field(repr=False)
    traces: tuple[StepTrace, ...] = field(default=(), repr=False)
    skipped: tuple[str, ...] = ()
    weights_gib: float | None = None
    linear_kernel: str | None = None
    int8_activations: str | None = None
    """The int8-activation scheme the engine's start log names
    (:func:`~claimcheck.readings.serverlog.int8_activation_scheme`); None: none."""
    kv_pool_tokens: int | None = None
    engine_inputs: EngineInputs | None = None
    geometry: Geometry | None = field(default=None, repr=False)
    start_log: str = field(default="", repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def gemm_kernel(self) -> str | None:
        """The kernel the engine's linear layers ran, as its start log names it
        (:func:`~claimcheck.readings.serverlog.gemm_kernel`); None: none named."""
        return serverlog.gemm_kernel(self.start_log)

    @property
    def dummy(self) -> bool:
        return self.provenance.dummy

    @property
    def drafts(self) -> bool:
        """True when the run's engine drafts (speculative decoding): each step verifies
        k + 1 positions per stream and keeps a variable number of tokens, which the plain
        step model and the plain-decode findings do not read."""
        return self.provenance.engine_config.speculative is not None

    @property
    def year(self) -> int:
        return int(self.provenance.started_utc[:4])

    @property
    def label(self) -> str:
        """Short description: card, engine, weights (and "acceptance forced" where the
        engine drafts with forced acceptance: :meth:`acceptance` says how), engine
        version."""
        p = self.provenance
        spec = p.engine_config.speculative
        forced = "acceptance forced" if spec and spec.get("acceptance") else "drafting"
        weights = f"{p.weights_label}, {forced}" if spec else p.weights_label
        return f"{p.card} · {p.engine} · {weights} · vLLM {p.sw('vllm')}"

    @property
    def acceptance(self) -> str | None:
        """How the engine drafts and acceptance was set, in words; None without a drafter."""
        return acceptance_words(self.provenance.engine_config.speculative)

    @cached_property
    def rows(self) -> list[dict[str, Any]]:
        """The step table as dict rows of Python values (None where missing), read once."""
        return records(self.table)

    @property
    def reported(self) -> list[dict[str, Any]]:
        """The rows the protocol reports (:func:`claimcheck.runs.steprow.reported`), never a
        failed one, by level."""
        rows = self.rows
        return [rows[i] for i in reported(self.protocol.report, rows)]

    def row_of(self, trace: StepTrace) -> dict[str, Any]:
        """The table row of the step a trace belongs to."""
        return self._by_step[(trace.record["step"], trace.record["repeat"])]

    @cached_property
    def _by_step(self) -> dict[tuple[int, int], dict[str, Any]]:
        return {(r["step"], r["repeat"]): r for r in self.rows}

    @property
    def engine(self) -> tuple[EngineShape, dict[str, Any]]:
        """The model's view of the run's engine and where each input came from
        (:func:`claimcheck.runs.engine_shape.engine_shape`), worked out once per run (the
        dict a fresh copy each call); refused for a run whose model config is not in the
        checkout."""
        shape, info = self._engine
        return shape, dict(info)

    @cached_property
    def _engine(self) -> tuple[EngineShape, dict[str, Any]]:
        return engine_shape(self.geometry, self.engine_inputs, self.provenance,
                            self.start_log, str(self.path))


def _trace(st: RunStep, tl: Timeline, proto: Protocol, lines: list[serverlog.StatsLine],
           power: list[tuple[float, float]], year: int) -> StepTrace:
    """A step's trace: its timeline ``tl``, the log lines and energy of its load window."""
    rec = st.raw
    t0, t1 = load_window(rec["start_unix_s"], rec["end_unix_s"],
                         st.bench.get("duration") if st.bench else None)
    t0, t1 = float(t0), float(t1)  # type: ignore[arg-type]  # a step.json has both
    e = step_energy(rec, power, t0, t1)
    return StepTrace(record=rec, timeline=tl,
                     log_lines=step_log_lines(lines, t0, t1 + 5, year), energy_j=e.joules,
                     window_unix_s=(t0, t1), energy_source=e.source,
                     output_len=step_context(proto, st.record.step)["output_len"])


def load_run(path: str | Path, cards: Mapping[str, Card] | None = None) -> Run:
    """Read one run directory once (provenance.json and steps.json validated, each step's
    step.json and bench result, server.log, server-start.log and telemetry.csv, the model
    config) into its run; its card checked against ``cards`` (None: the registry alone; a
    user cards file merged is the caller's, :func:`claimcheck.physics.cardfiles.load_cards`).
    Every error names the file."""
    p = Path(path)
    prov = read_provenance(p)
    read_steps_json(p)
    proto = protocol_from_record(prov.protocol_config)
    tel = read_telemetry(p / "telemetry.csv")
    lines = serverlog.stats_lines(read_text_or_empty(p / "server.log"))
    start = p / "server-start.log"
    start_text = read_text_or_empty(start)
    steps = read_steps(p, prov, proto)
    weights_gib = serverlog.weights_gib(start_text)
    runchecks.check_run(prov, dir_name=p.name, cards=load_cards() if cards is None else cards,
                        telemetry_rows=tel, weights_gib=weights_gib,
                        provenance_source=str(p / "provenance.json"),
                        telemetry_source=str(p / "telemetry.csv"), start_log_source=str(start))
    ei, geom = run_engine_inputs(prov, start_text, str(p / "provenance.json"))
    year = int(prov.started_utc[:4])
    power = power_samples(tel)
    seqs = prov.engine_config.max_num_seqs
    rows, traces, skipped = [], [], []
    for st in steps:
        tr = _trace(st, st.timeline, proto, lines, power, year) if st.timeline else None
        if tr is None:
            skipped.append(st.skip or f"{st.record.dir}: no timeline")
        else:
            traces.append(tr)
        cols = (timeline_columns(tr.record, tr.timeline, tr.log_lines,
                                 StepEnergy(tr.energy_j, tr.energy_source), tr.output_len,
                                 seqs) if tr else None)
        rows.append({**step_row(record_columns(st.record, proto, st.bench, st.timeline,
                                               lines, tel, year), cols),
                     **speculation_columns(prov.engine_config.speculative,
                                           st.raw.get("server_counters")),
                     **_engine_times(st.raw, p)})
    return Run(path=p, provenance=prov, protocol=proto, table=to_frame(rows),
               traces=tuple(traces), skipped=tuple(skipped),
               weights_gib=weights_gib, linear_kernel=serverlog.linear_kernel(start_text),
               int8_activations=serverlog.int8_activation_scheme(start_text),
               kv_pool_tokens=serverlog.kv_pool_tokens(start_text), engine_inputs=ei,
               geometry=geom, start_log=start_text)


def _engine_times(step: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """The step's engine-time columns (:func:`~claimcheck.readings.enginetimes.
    engine_time_columns`); an impossible reading is an InputError naming the run's
    provenance.json, the step and ``server_counters``."""
    try:
        return engine_time_columns(step.get("server_counters"))
    except ValueError as e:
        raise InputError(str(run_dir / "provenance.json"), f"step {step.get('dir')}: {e}",
                         key="server_counters") from None


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


def load_runs(root: str | Path, cards: Mapping[str, Card] | None = None) -> list[Run]:
    """Every run under ``root`` (:func:`find_runs`), by name: the runs a calibration is
    chosen among; each checked against ``cards`` (:func:`load_run`)."""
    cards = load_cards() if cards is None else cards
    return [load_run(p, cards) for p in find_runs(root)]


def to_record(run: Run) -> dict[str, Any]:
    """The run as one JSON object (the run record the figures read): the validated
    provenance, the engine's own report and its inputs, and the step table's rows once."""
    ei = run.engine_inputs.as_dict() if run.engine_inputs else None
    return {"path": str(run.path), "provenance": run.provenance.as_recorded,
            "weights_gib": run.weights_gib, "linear_kernel": run.linear_kernel,
            "int8_activations": run.int8_activations,
            "kv_pool_tokens": run.kv_pool_tokens,
            "engine_inputs": ei, "steps": run.rows}


def from_record(obj: dict[str, Any], source: str) -> Run:
    """A run back from :func:`to_record`'s object (no traces: the timelines stay in the
    run directory)."""
    try:
        prov = validate_provenance(obj["provenance"], source)
        return Run(path=Path(obj["path"]), provenance=prov,
                   protocol=protocol_from_record(prov.protocol_config),
                   table=to_frame(obj["steps"]), weights_gib=obj["weights_gib"],
                   linear_kernel=obj.get("linear_kernel"),
                   int8_activations=obj.get("int8_activations"),
                   kv_pool_tokens=obj["kv_pool_tokens"],
                   engine_inputs=EngineInputs(**obj["engine_inputs"])
                   if obj.get("engine_inputs") else None)
    except (KeyError, TypeError) as e:
        raise InputError(source, f"not a run record ({e})") from None
