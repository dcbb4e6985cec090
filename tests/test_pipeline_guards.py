"""Issue 22 item 5 and issue 18 item 4: the pipeline runs the registry's checks first,
refuses unknown claim ids in protocols, never writes outside its checkout, rebuilds on
content change, names an unknown target and config faults in one line, and each rule
script's log holds what it said. Snakemake runs in a checkout under tmp_path whose config
and registry are copies (the rest linked), so nothing here touches this checkout."""

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from claimcheck.claims.seedfiles import seeds_dir
from claimcheck.files.paths import ROOT

from .conftest import needs_seeds

pytestmark = pytest.mark.pipeline  # every test runs snakemake: make pipeline


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A checkout: workflow, src, notebooks, envs linked; config/ and the registry copied;
    data/raw/runs and the other registries linked; data/derived its own."""
    root = tmp_path_factory.mktemp("guards") / "checkout"
    root.mkdir()
    for name in ("workflow", "src", "notebooks", "pyproject.toml", "envs"):
        (root / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "config", root / "config")
    raw = root / "data" / "raw"
    raw.mkdir(parents=True)
    for p in (ROOT / "data" / "raw").iterdir():
        if p.name in ("claims.csv", "claims_excluded.csv"):
            shutil.copy(p, raw / p.name)
        else:
            (raw / p.name).symlink_to(p)
    (root / "data" / "derived").mkdir()
    return root


def smk(root, *args, env=None):
    e = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    e.pop("CLAIMCHECK_ROOT", None) if "CLAIMCHECK_ROOT" not in (env or {}) else None
    return subprocess.run(["snakemake", *args], cwd=root, capture_output=True, text=True,
                          env=e, timeout=600)


@contextlib.contextmanager
def edited(path: Path, old: str, new: str):
    """``path`` with ``old`` replaced by ``new`` for the block, restored after."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    try:
        yield
    finally:
        path.write_text(text)


NO_SEEDS = "quotes NOT checked: no seed articles at ../shared/seeds beside the repository " \
           "(set CLAIMCHECK_SEEDS to the folder of the seed articles)"


def test_registry_check_runs_first_and_says_when_seeds_are_absent(checkout, tmp_path):
    r = smk(checkout, "--cores", "1", "data/derived/claims.csv",
            env={"CLAIMCHECK_SEEDS": str(tmp_path / "absent")})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "registry_check: data/raw/claims.csv: " in r.stderr and NO_SEEDS in r.stderr
    # one line a job (workflow/profiles/default): registry_check ends before claims_table
    assert r.stderr.index("(Rule: registry_check)") < r.stderr.index("(Rule: claims_table)")
    assert NO_SEEDS in (checkout / "data/derived/registry_check.txt").read_text()
    # the rule script's log holds what it said
    assert (checkout / "logs/claims_table.log").read_text().endswith(" claims\n")
    assert NO_SEEDS in (checkout / "logs/registry_check.log").read_text()


@needs_seeds
def test_registry_check_refuses_a_quote_not_in_its_seed(checkout):
    claims = checkout / "data/raw/claims.csv"
    text = claims.read_text()
    quote = next(line for line in text.splitlines()[1:] if "1,035" in line)
    env = {"CLAIMCHECK_SEEDS": str(seeds_dir())}
    with edited(claims, quote, quote.replace("1,035", "1,036", 1)):
        r = smk(checkout, "--cores", "1", "data/derived/registry_check.txt", env=env)
    assert r.returncode != 0
    assert "registry_check: InputError: data/raw/claims.csv:" in r.stderr
    assert "(traceback in logs/registry_check.log)" in r.stderr
    assert "Traceback" in (checkout / "logs/registry_check.log").read_text()
    assert "Traceback" not in r.stderr  # on the terminal: the one line


def test_unknown_claim_id_in_a_protocol(checkout, tmp_path):
    with edited(checkout / "config/protocols.yaml", "[hyperqwen-1035-front,",
                "[no-such-claim,"):
        r = smk(checkout, "--cores", "1", "data/derived/registry_check.txt",
                env={"CLAIMCHECK_SEEDS": str(tmp_path / "absent")})
    assert r.returncode != 0
    assert ("registry_check: InputError: config/protocols.yaml: "
            "protocols.hyperqwen-batch.source_claims: unknown claim ids ['no-such-claim']"
            in r.stderr), r.stderr[-3000:]


def test_content_change_with_an_old_mtime_rebuilds(checkout, tmp_path):
    env = {"CLAIMCHECK_SEEDS": str(tmp_path / "absent")}
    assert smk(checkout, "--cores", "1", "data/derived/claims.csv", env=env).returncode == 0
    r = smk(checkout, "-n", "data/derived/claims.csv", env=env)
    assert "Nothing to be done" in r.stdout + r.stderr
    claims = checkout / "data/raw/claims.csv"
    with edited(claims, "\n", "\n\n"):  # a blank line: new content, the same claims
        os.utime(claims, (1e9, 1e9))  # restored from 2001: older than every output
        r = smk(checkout, "-n", "data/derived/claims.csv", env=env)
    assert ("note: data/raw/claims.csv changed in content but not in modification time; "
            "touched so that what it feeds rebuilds") in r.stderr
    # the dry run's summary of reasons (workflow/profiles/default leaves out each job's)
    assert "claims_table" in r.stdout and "\n    updated input files:\n" in r.stdout, \
        r.stdout[-3000:]


def test_claimcheck_root_elsewhere_is_overridden(checkout, tmp_path):
    other = tmp_path / "other"
    (other / "data" / "derived").mkdir(parents=True)
    r = smk(checkout, "--cores", "1", "data/derived/claims.csv", "--forcerun", "claims_table",
            env={"CLAIMCHECK_ROOT": str(other), "CLAIMCHECK_DERIVED": str(other / "d"),
                 "CLAIMCHECK_SEEDS": str(tmp_path / "absent")})
    assert r.returncode == 0, r.stderr[-3000:]
    assert (f"note: CLAIMCHECK_ROOT={other} is outside this checkout ({checkout.resolve()}); "
            "the pipeline reads and writes here only, so CLAIMCHECK_ROOT is set to this "
            "checkout for this run") in r.stderr
    assert f"note: CLAIMCHECK_DERIVED={other / 'd'} is outside this checkout" in r.stderr
    assert not any(other.rglob("*.*"))


def test_unknown_target_is_no_rule_to_produce(checkout):
    for target in ("figures/roofline-nope.png", "figures/measured-nope.png",
                   "figures/definitions-nope.png", "data/derived/params/roofline-nope.yaml"):
        r = smk(checkout, "-n", target)
        out = r.stdout + r.stderr
        assert r.returncode != 0 and f"No rule to produce {target}" in out, out[-2000:]
        assert "StopIteration" not in out


def _line(path, text):
    return path.read_text().splitlines().index(text) + 1


def test_config_schema_error_is_one_line_naming_the_key(checkout):
    cfg = checkout / "config/config.yaml"
    n = _line(cfg, "    max_streams: 96")
    with edited(cfg, "max_streams: 96", "max_streams: -1"):
        r = smk(checkout, "-n")
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert (f"config/config.yaml:{n}: rooflines[0].max_streams: -1 is less than the minimum "
            "of 2") in out
    assert "Failed validating" not in out and "ValidationError" not in out


def test_duplicate_config_key_refused(checkout):
    cfg = checkout / "config/config.yaml"
    n = _line(cfg, "update_card: h200")
    with edited(cfg, "update_card: h200", "update_card: h200\nupdate_card: h100"):
        r = smk(checkout, "-n")
    assert r.returncode != 0
    assert (f"config/config.yaml:{n + 1}: not valid YAML: duplicate key 'update_card' "
            f"(first given on line {n})") in r.stdout + r.stderr


def test_preset_free_memory_above_the_card(checkout):
    with edited(checkout / "config/config.yaml", "free_gib: 6.2", "free_gib: 30"):
        r = smk(checkout, "-n")
    assert r.returncode != 0
    assert ("config/config.yaml: rooflines[0].free_gib: 30 GiB free for streams is not below "
            "rtx3090's 24 GiB of memory (cards.csv memory_gib), which also holds the weights"
            in r.stdout + r.stderr)


def test_lint_is_clean():
    r = subprocess.run(["snakemake", "--lint"], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=300)
    assert r.returncode == 0 and "Congratulations" in r.stdout + r.stderr, r.stdout[-2000:]
