"""The files of one run directory, each read and checked: provenance and step records
(validated, older layouts migrated in memory), per step its step.json, bench result
(compact or plain) and token timeline, the server logs, telemetry, and the engine's inputs
to the arithmetic. Every error names the file. The run they make is
:func:`claimcheck.runs.run.load_run`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claimcheck.config.protocols import Protocol, step_context
from claimcheck.files.errors import InputError
from claimcheck.files.paths import ROOT
from claimcheck.files.readers import read_json, read_text
from claimcheck.physics.engine_inputs import EngineInputs, engine_inputs
from claimcheck.physics.geometry import Geometry
from claimcheck.physics.modelfiles import geometry_from_file, load_config
from claimcheck.readings import serverlog
from claimcheck.readings.telemetry import parse_telemetry
from claimcheck.readings.timeline import Timeline, from_bench
from claimcheck.runs import runchecks, runfiles
from claimcheck.runs.records import validate_provenance, validate_step, validate_steps
from claimcheck.runs.runrecord import Provenance, StepRecord, migrate_provenance


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


def read_step(p: Path, rec: StepRecord, raw: dict[str, Any], proto: Protocol,
              manifest: dict[str, runfiles.ManifestEntry] | None) -> RunStep:
    """One step read and checked (:func:`claimcheck.runs.runchecks.check_bench`): every
    reader of a run (the pipeline, ``metrics``, ``model``, ``predict``, ``measure
    --verify``) gets the same refusals. A complete step without its result is refused; a
    failed one is kept with ``skip`` saying why. The bytes the step's file gives back must
    be those the runs folder's ``manifest`` records; a file (plain or compact) it does not
    list, or no manifest at all (None), is refused: nothing says what it should hold."""
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
    if manifest is None:  # the runner records every result there before it is kept
        how = "kept compact" if bpath.name != runfiles.BENCH else "written plain"
        raise InputError(str(bpath), f"{how}, but {p.parent / runfiles.BENCH_MANIFEST} "
                         "is missing: nothing records the bytes it should give back")
    if manifest is not None:
        entry = manifest.get(runfiles.manifest_rel(d))
        if entry is None:  # plain or compact: a runs folder with a manifest lists them all
            raise InputError(str(bpath), f"not listed in {p.parent / runfiles.BENCH_MANIFEST}"
                             ": nothing records the bytes it should give back")
    bench = runfiles.bench_data(d, entry, str(p.parent / runfiles.BENCH_MANIFEST))
    if not isinstance(bench, dict):
        raise InputError(str(bpath), "not a vllm bench serve result (an object)")
    runchecks.check_bench(bench, requests=rec.requests, step_ok=rec.ok, source=str(bpath),
                          output_len=step_context(proto, rec.step)["output_len"])
    if not any(bench.get("output_lens") or []):
        return RunStep(rec, raw, sj, bench, bpath,
                       skip=f"{rec.dir}: no request produced tokens")
    try:
        tl = from_bench(bench, rec.streams)
    except ValueError as e:
        raise InputError(str(bpath), str(e)) from None
    return RunStep(rec, raw, sj, bench, bpath, timeline=tl)


def run_engine_inputs(prov: Provenance, start_log: str, where: str, root: Path = ROOT
                      ) -> tuple[EngineInputs | None, Geometry | None]:
    """The engine's inputs for a run and its model's geometry (None, None when its model
    config is not in the checkout)."""
    cfg_path = root / (prov.model_config or "")
    if not prov.model_config or not cfg_path.is_file():
        return None, None
    geom: Geometry = geometry_from_file(cfg_path)
    try:
        return engine_inputs(geom, load_config(cfg_path), dict(prov.engine_config.recorded),
                             serverlog.weights_gib(start_log)), geom
    except ValueError as e:
        raise InputError(where, str(e), key="engine_config") from None


def read_telemetry(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a run's telemetry.csv (:func:`claimcheck.readings.telemetry.parse_telemetry`;
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


def read_steps_json(p: Path) -> None:
    """Check a run's steps.json where it has one (validated; an older list layout migrated
    in memory): the step records the runner wrote as it went."""
    steps_path = p / "steps.json"
    if steps_path.exists():
        raw_steps = read_json(steps_path)
        if isinstance(raw_steps, list):
            raw_steps = migrate_provenance({"steps": raw_steps})["steps"]
        validate_steps(raw_steps, str(steps_path))


def read_text_or_empty(path: Path) -> str:
    """A log's text, or "" when the run has none."""
    return read_text(path) if path.exists() else ""


def read_steps(p: Path, prov: Provenance, proto: Protocol) -> tuple[RunStep, ...]:
    """Every step of a run directory (:func:`read_step`), checked against the runs folder's
    manifest (a step with a bench file and no manifest beside the run is refused)."""
    if prov.steps and not (p / "steps").is_dir():
        raise InputError(str(p / "steps"), "missing: provenance.json lists "
                         f"{len(prov.steps)} steps")
    raws = [dict(s.recorded) for s in prov.steps]
    mpath = p.parent / runfiles.BENCH_MANIFEST
    manifest = runfiles.read_manifest(mpath) if mpath.is_file() else None
    return tuple(read_step(p, rec, raw, proto, manifest)
                 for rec, raw in zip(prov.steps, raws, strict=True))
