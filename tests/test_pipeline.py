"""The pipeline as a user runs it: config validation, papermill on any run, nbval catching
a broken notebook, and the Update section's content."""

import json
import shutil
import subprocess
import sys

import nbformat
import pytest

from claimcheck.core.cards import load_cards
from claimcheck.core.claims import load_claims
from claimcheck.core.geometry import geometry_from_file
from claimcheck.core.paths import CONFIG, RAW, ROOT, RUNS
from claimcheck.report.record import find_runs, load_run
from claimcheck.report.tables import run_rows
from claimcheck.report.update import render_update


def dry_run_with(tmp_path, old: str, new: str) -> subprocess.CompletedProcess:
    """`snakemake -n` with config.yaml changed in one place."""
    text = (CONFIG / "config.yaml").read_text()
    assert old in text
    bad = tmp_path / "config.yaml"
    bad.write_text(text.replace(old, new, 1))
    return subprocess.run(["snakemake", "-n", "--configfile", str(bad)], cwd=ROOT,
                          capture_output=True, text=True)


def test_bad_config_value_refused_before_dag(tmp_path):
    r = dry_run_with(tmp_path, "update_card: h200", "update_card: h900")
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "update_card" in out and "'h900' is not one of" in out
    assert "Job stats" not in out  # refused before any DAG was planned


def test_bad_roofline_preset_refused(tmp_path):
    r = dry_run_with(tmp_path, "kv_dtype: fp8", "kv_dtype: fp7")
    assert r.returncode != 0 and "kv_dtype" in r.stdout + r.stderr


def test_papermill_measured_notebook_on_any_run(tmp_path):
    # a copy of a run in another place, as a user with a new card would have
    run = tmp_path / "rtx-copy-run"
    shutil.copytree(RUNS / "h200-20261129-fp8-hyperqwen-dummy-hyperqwen-batch", run)
    out_md = tmp_path / "run.md"
    r = subprocess.run(["papermill", "-k", "python3", str(ROOT / "notebooks/measured.ipynb"),
                        str(tmp_path / "out.ipynb"), "-p", "run_dir", str(run),
                        "-p", "out_base", str(tmp_path / "fig"), "-p", "out_md", str(out_md)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "fig.png").stat().st_size > 10_000
    md = out_md.read_text()
    assert "dummy weights" in md and "4,314.6" in md  # streams x 1000 / median TPOT, pass 2


def test_nbval_fails_a_broken_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("raise RuntimeError('planted failure')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    r = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider",
                        str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 1, r.stdout[-2000:]
    assert "planted failure" in r.stdout and "1 failed" in r.stdout


def test_source_notebooks_are_output_free_with_one_parameters_cell():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, path
        for line in params[0].source.splitlines():
            if line and not line.startswith("#"):
                assert ": " in line.split("=")[0] and "#" in line, (path, line)  # typed, commented
        for c in nb.cells:
            if c.cell_type == "code":
                assert not c.outputs and c.execution_count is None, path


@pytest.fixture(scope="module")
def update_md():
    runs = [load_run(d) for d in find_runs(RUNS)]
    steps = run_rows(runs, geometry_from_file(RAW / "models/qwen3.8-27b/config.json"),
                     load_cards())
    return render_update(runs, steps, load_claims(), "h200", {"claim_map": "claim_map.png"})


def test_update_section_content(update_md):
    md = update_md
    assert "(dummy weights)" in md.splitlines()[0]
    for d in find_runs(RUNS):
        assert d.name in md
    # the ladder's rows, each with its own streams count
    for b, req in ((1, 16), (8, 64), (16, 128), (32, 128), (64, 256)):
        assert f"| {b} | {req} |" in md
    # every replayed claim gets its sentence
    for proto in ("hyperqwen-batch", "ladder"):
        ids = json.loads((next(RUNS.glob(f"*{proto}")) / "provenance.json").read_text())[
            "protocol_config"]["source_claims"]
        for cid in ids:
            assert f"- **{cid}**:" in md
    assert "power limit 700 W enforced" in md and "vLLM 0.26.0" in md
    assert "Long prompts" in md and "Not run yet" in md
