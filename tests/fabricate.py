"""Helpers for tests: copies of committed run directories, edited in place (tmp_path only)."""

import json
import shutil
from pathlib import Path

from claimcheck.files.paths import ROOT, RUNS
from claimcheck.runs import runfiles

BATCH = "h200-20261129-bf16-dummy-hyperqwen-batch"
LADDER = "h200-20261129-bf16-dummy-ladder"
FP8 = "h200-20261129-fp8-hyperqwen-dummy-hyperqwen-batch"


def copy_run(tmp_path: Path, name: str, new_name: str | None = None) -> Path:
    """A copy of a committed run directory under ``tmp_path/runs``, its bench results
    written out plain (bench.json, as a run recorded before compaction keeps them), so a
    test can edit them; under ``new_name`` its provenance names the new directory (as a run
    recorded there would), since a run whose provenance names another directory is refused
    as a copy."""
    dst = tmp_path / "runs" / (new_name or name)
    plain_copy(RUNS / name, dst)
    if new_name:
        edit_json(dst / "provenance.json", lambda p: p.update(run_dir=new_name))
    return dst


def plain_copy(src: Path, dst: Path) -> Path:
    """Copy run directory ``src`` to ``dst`` with every compact bench result (bench.cols,
    bench.json.xz) decoded to bench.json, each listed in the manifest beside ``dst`` (every
    reader refuses a bench file its runs folder's manifest does not list)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*runfiles.AT_REST))
    for name in runfiles.AT_REST:
        for packed in src.glob(f"steps/*/{name}"):
            out = dst / packed.relative_to(src).with_name(runfiles.BENCH)
            out.write_bytes(runfiles.bench_bytes(packed.parent))
    seal(dst)
    return dst


def seal(run: Path, step_dirs: list[Path] | None = None) -> Path:
    """List the bench files of ``run`` (or of ``step_dirs`` only) in the manifest of the
    runs folder holding it, as the runner does when it keeps a result, replacing their
    lines: what a test wrote is then what the manifest records. Never the committed runs
    folder. The manifest's path."""
    mf = run.parent / runfiles.BENCH_MANIFEST
    assert mf.resolve() != (RUNS / runfiles.BENCH_MANIFEST).resolve(), "committed manifest"
    entries = runfiles.read_manifest(mf) if mf.is_file() else {}
    for d in sorted(step_dirs if step_dirs is not None else run.glob("steps/*")):
        p = runfiles.bench_path(d)
        if p is None:
            continue
        raw = runfiles.bench_bytes(d)
        box = None if p.name == runfiles.BENCH else runfiles.sha256_hex(p.read_bytes())
        entries[runfiles.manifest_rel(d)] = runfiles.ManifestEntry(
            runfiles.sha256_hex(raw), len(raw), box)
    runfiles.write_manifest(mf, entries)
    return mf


def bench(step_dir: Path) -> dict:
    """A step's bench result as the client wrote it (compact or plain)."""
    return json.loads(runfiles.bench_bytes(step_dir))


def edit_json(path: Path, fn) -> None:
    """Load JSON, let ``fn`` change it in place, write it back; a step's bench.json in a
    runs folder with a manifest gets its line rewritten (:func:`seal`), so that what is
    tested is the edit, not the manifest's refusal of it."""
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj, indent=1))
    if path.name == runfiles.BENCH and (path.parents[3] / runfiles.BENCH_MANIFEST).is_file():
        seal(path.parents[2], [path.parent])


def edit_step(run: Path, step_dir: str, fn) -> None:
    """Apply ``fn`` to one step's record in provenance.json, steps.json and step.json."""
    def on_list(steps):
        for s in steps:
            if s["dir"] == step_dir:
                fn(s)
    edit_json(run / "provenance.json", lambda p: on_list(p["steps"]))
    edit_json(run / "steps.json", on_list)
    edit_json(run / "steps" / step_dir / "step.json", fn)


def linked_checkout(tmp_path: Path, config_yaml: str) -> Path:
    """A checkout under ``tmp_path`` whose ``config/config.yaml`` is ``config_yaml`` and the
    rest of the tree is linked in (``--configfile`` would merge into the real config)."""
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("workflow", "data", "src", "notebooks", "pyproject.toml", "envs"):
        (root / name).symlink_to(ROOT / name)
    (root / "config").mkdir()
    for name in ("protocols.yaml", "engines.yaml", "update_claims.yaml"):
        (root / "config" / name).symlink_to(ROOT / "config" / name)
    (root / "config" / "config.yaml").write_text(config_yaml)
    return root
