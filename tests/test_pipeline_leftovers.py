"""The pipeline's leftovers (issue 26 item 6): a removed run's outputs go with it (its
metrics CSV's .dtypes.json companion too); a figure's input that is gone fails the workflow
where the old figure would have been kept; a provenance.json that is not a JSON object is
refused in one line while the workflow loads; a second render is told in one line that
another holds the lock. Snakemake runs in a checkout under tmp_path (data/raw copied, the
code linked), so nothing here touches this checkout."""

import fcntl
import shutil
import subprocess

import pytest

from claimcheck.files.paths import ROOT

from .test_pipeline_guards import smk

pytestmark = pytest.mark.pipeline  # runs snakemake in a subprocess: make pipeline

LADDER = "h200-20261129-bf16-dummy-ladder"  # the h200-bf16 preset's weights_run


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    root = tmp_path_factory.mktemp("leftovers") / "checkout"
    root.mkdir()
    for name in ("workflow", "src", "notebooks", "pyproject.toml", "envs"):
        (root / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "config", root / "config")
    shutil.copytree(ROOT / "data" / "raw", root / "data" / "raw", symlinks=True)
    (root / "data" / "derived").mkdir()
    return root


def _out(r: subprocess.CompletedProcess) -> str:
    return r.stdout + r.stderr


PROFILE_NOTE = ("Using workflow specific profile workflow/profiles/default for setting "
                "default command line arguments.")


def _said(err: str) -> list[str]:
    """What a run said on stderr, less Snakemake's note that it read the workflow profile
    (workflow/profiles/default: one line a job), which it prints before anything else."""
    lines = err.strip().splitlines()
    assert lines[:1] == [PROFILE_NOTE], lines[:1]
    return lines[1:]


def test_a_removed_runs_outputs_and_companions_are_removed(checkout):
    gone = "h200-20990101-gone-ladder"
    files = [checkout / f"data/derived/metrics/{gone}.csv",
             checkout / f"data/derived/metrics/{gone}.dtypes.json",
             checkout / f"figures/measured-{gone}.png"]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("left by a run since removed\n")
    kept = checkout / f"data/derived/metrics/{LADDER}.dtypes.json"  # a run still there
    kept.write_text("{}\n")
    r = smk(checkout, "--cores", "1", "data/derived/registry_check.txt")
    assert r.returncode == 0, _out(r)[-3000:]
    assert not any(f.exists() for f in files)
    assert (f"removing data/derived/metrics/{gone}.dtypes.json: its run is no longer in "
            "data/raw/runs") in _out(r)
    assert kept.exists()


def test_a_figures_input_that_is_gone_fails_the_workflow(checkout):
    log = checkout / "data/raw/runs" / LADDER / "server-start.log"
    saved = log.read_bytes()
    log.unlink()
    try:
        r = smk(checkout, "-n", "figures/roofline-h200-bf16.png")
    finally:
        log.write_bytes(saved)
    assert r.returncode != 0
    assert (f"config/config.yaml: rooflines[2].weights_run: data/raw/runs/{LADDER}/"
            "server-start.log: no such file (the engine log the preset's weights are read "
            "from)") in _out(r)


@pytest.mark.parametrize(("text", "words"), [
    ("[1, 2]\n", "a run's provenance must be a JSON object, got list"),
    ('"h200"\n', "a run's provenance must be a JSON object, got str"),
    ("null\n", "a run's provenance must be a JSON object, got null"),
    ('{"card": "h200"}\n', "engine: every run's provenance names its engine (a string)"),
])
def test_provenance_that_is_not_an_object_is_one_line(checkout, text, words):
    prov = checkout / "data/raw/runs" / LADDER / "provenance.json"
    saved = prov.read_bytes()
    prov.write_text(text)
    try:
        r = smk(checkout, "-n")
    finally:
        prov.write_bytes(saved)
    assert r.returncode != 0
    assert f"data/raw/runs/{LADDER}/provenance.json: {words}" in _out(r)
    assert "TypeError" not in _out(r) and "AttributeError" not in _out(r)


def test_a_second_render_is_told_another_holds_the_lock(checkout):
    lock = checkout / ".snakemake" / "claimcheck-render.lock"
    lock.parent.mkdir(exist_ok=True)
    with open(lock, "a+") as f:  # a render holding the lock, as common.smk takes it
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        f.truncate(0)
        f.write("pid 4242, started 2026-12-01 12:00:00")
        f.flush()
        r = smk(checkout, "--cores", "1", "data/derived/registry_check.txt")
        dry = smk(checkout, "-n", "data/derived/registry_check.txt")  # a dry run takes none
    assert r.returncode == 1
    assert _said(r.stderr) == [
        "claimcheck: error: another snakemake run (pid 4242, started 2026-12-01 12:00:00) is "
        "rendering in this checkout and holds its lock (.snakemake/claimcheck-render.lock); "
        "wait for it to end, then run again"]
    assert dry.returncode == 0, _out(dry)[-2000:]
    # released with its holder: the same render now runs
    again = smk(checkout, "--cores", "1", "data/derived/registry_check.txt")
    assert again.returncode == 0, _out(again)[-2000:]


def test_two_renders_at_the_same_instant_one_runs_one_is_told(checkout):
    import os
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("CLAIMCHECK_ROOT", None)
    # the target before --forcerun: that option takes any number of values, so a target
    # after it is read as one more rule to force and Snakemake renders `all` (issue 40)
    argv = ["snakemake", "--cores", "1", "data/derived/registry_check.txt",
            "--forcerun", "registry_check"]
    errs = [checkout / f"render-{i}.err" for i in range(2)]
    handles = [open(e, "w") for e in errs]  # noqa: SIM115 - closed below, after both end
    ps = [subprocess.Popen(argv, cwd=checkout, env=env, stdout=subprocess.DEVNULL,
                           stderr=h) for h in handles]
    try:
        codes_ = [p.wait(timeout=300) for p in ps]
    finally:
        for p in ps:
            if p.poll() is None:
                p.kill()
        for h in handles:
            h.close()
    res = [(c, e.read_text()) for c, e in zip(codes_, errs, strict=True)]
    codes = sorted(c for c, _ in res)
    assert codes == [0, 1], res
    told = next(err for c, err in res if c == 1)
    assert len(_said(told)) == 1 and "holds its lock" in told
    assert "LockException" not in told and "Traceback" not in told
    ran = next(err for c, err in res if c == 0)  # one job forced, the one asked for
    assert "1 of 1 steps (100%) done" in ran and "(Rule: registry_check)" in ran, ran[-2000:]
