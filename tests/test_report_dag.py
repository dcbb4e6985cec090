"""The DAG sees every file (issue 9): a run's record job lists the whole run directory,
missing inputs fail the DAG, config faults are refused before it, and a config without a
measure: section still plans `all`. Dry runs (`snakemake -n`) on temp configs only."""

import subprocess

import pytest

from claimcheck.files.paths import CONFIG, ROOT
from tests.fabricate import LADDER, copy_run, linked_checkout


def dry_run(tmp_path, text, *targets, extra=()):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    return subprocess.run(["snakemake", "-n", *targets, "--configfile", str(cfg), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def config_text(**replace):
    text = (CONFIG / "config.yaml").read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new, 1)
    return text


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_run_record_reads_the_whole_run_directory(tmp_path):
    run = copy_run(tmp_path, LADDER, "h200-test-dag-copy")
    copy_run(tmp_path, LADDER)  # the H200 preset's weights_run, read when the config loads
    manifest = tmp_path / "runs" / "bench-sha256.txt"  # issue 39: an input of the rule
    manifest.write_text("")
    text = config_text(**{"runs_dir: data/raw/runs": f"runs_dir: {tmp_path / 'runs'}"})
    # a rule's message: line stands in for its input list; job_lists=True brings it back
    r = dry_run(tmp_path, text, "data/derived/runs/h200-test-dag-copy.json",
                extra=("--config", "job_lists=True"))
    assert r.returncode == 0, r.stderr[-2000:]
    files = [p for p in run.rglob("*") if p.is_file()]
    assert len(files) == 1 + 1 + 3 + 5 * 3  # provenance, steps, 3 logs/telemetry, 5 steps
    for f in [*files, manifest]:  # telemetry, logs, every step file, the bench manifest
        assert str(f) in r.stdout, f


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_run_without_provenance_fails_the_dag(tmp_path):
    run = copy_run(tmp_path, LADDER, "h200-test-dag-copy")
    (run / "provenance.json").unlink()
    text = config_text(**{"runs_dir: data/raw/runs": f"runs_dir: {tmp_path / 'runs'}"})
    r = dry_run(tmp_path, text)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"{run / 'provenance.json'}: missing: every run directory needs" in out


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_missing_model_config_fails_the_dag(tmp_path):
    missing = tmp_path / "nowhere" / "config.json"
    r = dry_run(tmp_path, config_text(**{
        "model_config: data/raw/models/qwen3.8-27b/config.json": f"model_config: {missing}"}))
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"config/config.yaml: model_config: {missing}: no such file" in out


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_duplicate_preset_names_refused(tmp_path):
    r = dry_run(tmp_path, config_text(**{"name: rtx5090-cinference": "name: rtx3090-hyperqwen"}))
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "rooflines[1].name: duplicate preset name 'rtx3090-hyperqwen'" in out
    assert "Job stats" not in out


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_unknown_card_in_a_preset_refused(tmp_path):
    r = dry_run(tmp_path, config_text(**{"card: rtx5090": "card: rtx5095"}))
    assert r.returncode != 0
    assert "rooflines[1].card: unknown card 'rtx5095'" in r.stdout + r.stderr


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_exactly_one_weight_source_per_preset(tmp_path):
    r = dry_run(tmp_path, config_text(**{
        "weights: fafstmobel-resident": "weights: fafstmobel-resident\n    weights_format: bf16"}))
    assert r.returncode != 0
    assert "is valid under each of" in r.stdout + r.stderr


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_no_measure_section_still_plans_all(tmp_path):
    # a checkout whose config has no measure: section
    text = (CONFIG / "config.yaml").read_text()
    root = linked_checkout(tmp_path, text[:text.index("measure:")])

    def run(*args):
        return subprocess.run(["snakemake", "-n", *args], cwd=root, capture_output=True,
                              text=True, timeout=300)
    r = run("all")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = run("measure")
    assert r.returncode != 0
    assert "config/config.yaml: measure: no measure: section" in r.stdout + r.stderr


def test_outputs_of_deleted_runs_are_found(tmp_path):
    from claimcheck.pipeline.derive import stale_run_outputs

    patterns = ["data/derived/runs/{run}.json", "figures/measured-{run}.png"]
    keep, gone = "h200-kept-run", "h200-deleted-run"
    for run in (keep, gone):
        for pat in patterns:
            f = tmp_path / pat.format(run=run)
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text("x")
    (tmp_path / "figures/claim_map.png").write_text("x")  # not a per-run output
    stale = stale_run_outputs(patterns, [keep], tmp_path)
    assert sorted(stale) == sorted(tmp_path / p.format(run=gone) for p in patterns)


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_every_derived_file_a_reader_opens_is_a_target_of_all(tmp_path):
    """Issue 39: a deleted data/derived/runs/<run>.json or a table's .dtypes.json is remade
    by `snakemake all` (they were intermediate only, so an up-to-date Update hid them)."""
    r = dry_run(tmp_path, config_text(), "all", extra=("--forceall", "--config",
                                                       "job_lists=True"))
    assert r.returncode == 0, r.stderr[-2000:]
    block = r.stdout[r.stdout.index("rule all:"):]
    inputs = block.split("\n")[1]
    for f in ("data/derived/runs/h200-20261129-bf16-dummy-ladder.json",
              "data/derived/metrics/h200-20261129-bf16-dummy-ladder.dtypes.json",
              "data/derived/runs.dtypes.json", "data/derived/verdicts.dtypes.json",
              "data/derived/model.dtypes.json"):
        assert f in inputs, f


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_the_kept_predictions_rule_reads_the_bench_manifest(tmp_path):
    """Issue 39: rule beforehand reads runs, so the runs folder's bench-sha256.txt is one
    of its inputs (as it is of every rule that reads runs): a line changed remakes it."""
    r = dry_run(tmp_path, config_text(), "data/derived/beforehand.csv", "--forcerun",
                "beforehand", extra=("--config", "job_lists=True"))
    assert r.returncode == 0, r.stderr[-2000:]
    job = r.stdout[r.stdout.index("rule beforehand:"):]
    assert "data/raw/runs/bench-sha256.txt" in job.split("output:")[0], job[:3000]
