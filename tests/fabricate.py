"""Helpers for tests: copies of committed run directories, edited in place (tmp_path only)."""

import json
import shutil
from pathlib import Path

from claimcheck.core.paths import ROOT, RUNS
from claimcheck.runio import runfiles

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
    bench.json.xz) decoded to bench.json."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*runfiles.AT_REST))
    for name in runfiles.AT_REST:
        for packed in src.glob(f"steps/*/{name}"):
            out = dst / packed.relative_to(src).with_name(runfiles.BENCH)
            out.write_bytes(runfiles.bench_bytes(packed.parent))
    return dst


def bench(step_dir: Path) -> dict:
    """A step's bench result as the client wrote it (compact or plain)."""
    return json.loads(runfiles.bench_bytes(step_dir))


def edit_json(path: Path, fn) -> None:
    """Load JSON, let ``fn`` change it in place, write it back."""
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj, indent=1))


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
