"""One run directory read once into a typed run: provenance and step records (validated,
older layouts migrated in memory), per step its step.json, bench result (compact or plain)
and token timeline, the server log's stats lines, telemetry, the start log's engine facts
and the engine's inputs to the arithmetic. Every file is opened once; every error names it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimcheck.core import runchecks, serverlog
from claimcheck.core.cards import load_cards
from claimcheck.core.engine_inputs import EngineInputs, engine_inputs
from claimcheck.core.errors import InputError
from claimcheck.core.geometry import Geometry, geometry_from_file, load_config
from claimcheck.core.io import read_json, read_text
from claimcheck.core.paths import ROOT
from claimcheck.core.protocols import Protocol
from claimcheck.core.runrecord import (
    Provenance,
    StepRecord,
    migrate_provenance,
    protocol_from_record,
    validate_provenance,
    validate_step,
    validate_steps,
)
from claimcheck.core.telemetry import parse_telemetry
from claimcheck.core.timeline import Timeline, from_bench
from claimcheck.runio import runfiles


@dataclass(frozen=True)
class RunStep:
    """One step as recorded: its typed record, the raw record dict (provenance), its
    step.json, its bench result and timeline (None with ``skip`` saying why)."""

    record: StepRecord
    raw: dict[str, Any]
    step_json: dict[str, Any] | None
    bench: dict[str, Any] | None
    bench_path: Path | None
    timeline: Timeline | None = None
    skip: str | None = None


@dataclass(frozen=True)
class LoadedRun:
    """A run directory, every file read once."""

    path: Path
    provenance: Provenance
    protocol: Protocol
    steps: tuple[RunStep, ...]
    telemetry: list[dict[str, Any]] = field(repr=False)
    stats_lines: list[serverlog.StatsLine] = field(repr=False)
    start_log: str = field(repr=False)
    weights_gib: float | None = None
    kv_pool_tokens: int | None = None
    engine_inputs: EngineInputs | None = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def year(self) -> int:
        return int(self.provenance.started_utc[:4])

    def power_samples(self) -> list[tuple[float, float]]:
        """(time s, board power W summed over GPUs) from the telemetry rows."""
        by_t: dict[float, float] = defaultdict(float)
        for r in self.telemetry:
            if isinstance(r.get("power_w"), float) and isinstance(r.get("t_unix_s"), float):
                by_t[r["t_unix_s"]] += r["power_w"]
        return sorted(by_t.items())


def step_output_len(proto: Protocol, index: int) -> int | None:
    """The output tokens each request of step ``index`` asked for (the step's own length
    where it has one, else the protocol's; as :func:`claimcheck.report.record.step_context`)."""
    st = proto.steps[index] if 0 <= index < len(proto.steps) else None
    return getattr(st, "output_len", None) or proto.output_len


def _step(p: Path, rec: StepRecord, raw: dict[str, Any], proto: Protocol,
          manifest: dict[str, runfiles.ManifestEntry] | None) -> RunStep:
    """One step read and checked (:func:`claimcheck.core.runchecks.check_bench`): every
    reader of a run (the pipeline, ``metrics``, ``model``, ``predict``, ``measure
    --verify``) gets the same refusals. A complete step without its result is refused; a
    failed one is kept with ``skip`` saying why. With the runs folder's ``manifest``, the
    bytes the step's file gives back must be those it records (a compact file it does not
    list is refused: nothing says what it should hold)."""
    d = p / "steps" / rec.dir
    sj_path = d / "step.json"
    sj = read_json(sj_path) if sj_path.is_file() else None
    if sj is not None:
        validate_step(sj, str(sj_path))
    bpath = runfiles.bench_path(d)
    if bpath is None:
        if rec.ok:
            gone = "its directory is gone" if not d.is_dir() else "its directory has none"
            raise InputError(str(d / runfiles.BENCH), f"no such file, but provenance.json "
                             f"marks the step {rec.status} ({gone})")
        return RunStep(rec, raw, sj, None, None,
                       skip=f"{rec.dir}: no bench.json (step {rec.status})")
    entry = None
    if manifest is not None:
        entry = manifest.get(runfiles.manifest_rel(d))
        if entry is None and bpath.name != runfiles.BENCH:
            raise InputError(str(bpath), f"not listed in {p.parent / runfiles.BENCH_MANIFEST}"
                             ": nothing records the bytes it should give back")
    bench = runfiles.bench_data(d, entry, str(p.parent / runfiles.BENCH_MANIFEST))
    if not isinstance(bench, dict):
        raise InputError(str(bpath), "not a vllm bench serve result (an object)")
    runchecks.check_bench(bench, requests=rec.requests, step_ok=rec.ok, source=str(bpath),
                          output_len=step_output_len(proto, rec.step))
    if not any(bench.get("output_lens") or []):
        return RunStep(rec, raw, sj, bench, bpath,
                       skip=f"{rec.dir}: no request produced tokens")
    try:
        tl = from_bench(bench, rec.streams)
    except ValueError as e:
        raise InputError(str(bpath), str(e)) from None
    return RunStep(rec, raw, sj, bench, bpath, timeline=tl)


def run_engine_inputs(prov: Provenance, start_log: str, where: str,
                      root: Path = ROOT) -> EngineInputs | None:
    """The engine's inputs for a run (None when its model config is not in the checkout)."""
    cfg_path = root / prov.raw.get("model_config", "")
    if not prov.raw.get("model_config") or not cfg_path.is_file():
        return None
    geom: Geometry = geometry_from_file(cfg_path)
    try:
        return engine_inputs(geom, load_config(cfg_path), prov.raw.get("engine_config", {}),
                             serverlog.weights_gib(start_log))
    except ValueError as e:
        raise InputError(where, str(e), key="engine_config") from None


def read_telemetry(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a run's telemetry.csv (:func:`claimcheck.core.telemetry.parse_telemetry`;
    absent file: no rows)."""
    p = Path(path)
    if not p.exists():
        return []
    return parse_telemetry(read_text(p), str(p))


def read_provenance(p: Path) -> Provenance:
    """A run's provenance.json, validated (older layouts migrated in memory)."""
    prov_path = p / "provenance.json"
    if not prov_path.exists():
        raise InputError(str(prov_path), "missing: every run directory needs its "
                         "provenance.json")
    return validate_provenance(migrate_provenance(read_json(prov_path)), str(prov_path))


def load_run(path: str | Path) -> LoadedRun:
    """Read one run directory once: provenance.json and steps.json (validated), each step's
    step.json and bench result, server.log, server-start.log and telemetry.csv."""
    p = Path(path)
    prov = read_provenance(p)
    steps_path = p / "steps.json"
    if steps_path.exists():
        raw_steps = read_json(steps_path)
        if isinstance(raw_steps, list):
            raw_steps = migrate_provenance({"steps": raw_steps})["steps"]
        validate_steps(raw_steps, str(steps_path))
    if prov.steps and not (p / "steps").is_dir():
        raise InputError(str(p / "steps"), "missing: provenance.json lists "
                         f"{len(prov.steps)} steps")
    proto = protocol_from_record(prov.protocol_config)
    tel = read_telemetry(p / "telemetry.csv")
    log = p / "server.log"
    lines = serverlog.stats_lines(read_text(log) if log.exists() else "")
    start = p / "server-start.log"
    start_text = read_text(start) if start.exists() else ""
    raws = prov.raw.get("steps") or [{} for _ in prov.steps]
    mpath = p.parent / runfiles.BENCH_MANIFEST
    manifest = runfiles.read_manifest(mpath) if mpath.is_file() else None
    steps = tuple(_step(p, rec, raw, proto, manifest)
                  for rec, raw in zip(prov.steps, raws, strict=True))
    runchecks.check_run(prov, dir_name=p.name, cards=load_cards(), telemetry_rows=tel,
                        weights_gib=serverlog.weights_gib(start_text),
                        provenance_source=str(p / "provenance.json"),
                        telemetry_source=str(p / "telemetry.csv"), start_log_source=str(start))
    return LoadedRun(path=p, provenance=prov, protocol=proto, steps=steps, telemetry=tel,
                     stats_lines=lines, start_log=start_text,
                     weights_gib=serverlog.weights_gib(start_text),
                     kv_pool_tokens=serverlog.kv_pool_tokens(start_text),
                     engine_inputs=run_engine_inputs(prov, start_text,
                                                     str(p / "provenance.json")))
