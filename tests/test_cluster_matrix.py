"""The measurement matrix (issue 13): entries -> one job each with its SLURM resources,
the flat measure form still one job, bad cards and duplicate jobs refused, and
`snakemake -n measure` plans one job per entry with the entry's resources and command."""

import subprocess

import pytest
import yaml

from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG
from claimcheck.measure import matrix as mx
from tests.fabricate import linked_checkout

CARDS = {"h200", "rtx3090"}


def test_flat_form_is_one_entry_with_gpu_defaults():
    m = {"card": "h200", "engine": "bf16-dummy", "protocols": ["ladder"]}
    e = mx.entries(m, CARDS)
    assert list(e) == ["h200-bf16-dummy"]
    r = mx.resources(e["h200-bf16-dummy"])
    assert r["gpu"] == 1 and r["slurm_partition"] == "" and r["runtime"] == 120


def test_matrix_entries_names_cards_and_resources():
    m = {"profile": "ci", "matrix": [
        {"card": "cpu", "engine": "tiny-dense", "protocols": ["a"],
         "resources": {"cpus_per_task": 1, "mem_mb": 4000}},
        {"partition": "gpu-h200", "engine": "bf16-dummy", "protocols": ["a", "b"],
         "profile": "full", "resources": {"gpu": 2, "gres": "gpu:h200:2"}}]}
    e = mx.entries(m, CARDS)
    assert list(e) == ["cpu-tiny-dense", "gpu-h200-bf16-dummy"]
    assert e["gpu-h200-bf16-dummy"]["card"] == "auto"  # a partition alone: detect the card
    cpu = mx.resources(e["cpu-tiny-dense"])
    assert (cpu["gpu"], cpu["cpus_per_task"], cpu["mem_mb"]) == (0, 1, 4000)
    gpu = mx.resources(e["gpu-h200-bf16-dummy"])
    assert (gpu["gpu"], gpu["gres"], gpu["slurm_partition"]) == (2, "gpu:h200:2", "gpu-h200")
    j = mx.job(m, CARDS, "gpu-h200-bf16-dummy")
    assert j["args"] == "--protocol a --protocol b --profile full"  # the entry's profile wins
    assert mx.job(m, CARDS, "cpu-tiny-dense")["args"] == "--protocol a --profile ci"
    assert j["engines_file"] == "config/engines.yaml"


def test_unknown_card_and_duplicate_job_refused():
    with pytest.raises(InputError, match=r"measure.matrix\[0\].card: unknown card 'h300'"):
        mx.entries({"matrix": [{"card": "h300", "engine": "x", "protocols": ["a"]}]}, CARDS)
    dup = {"matrix": [{"card": "h200", "engine": "x", "protocols": ["a"]},
                      {"card": "h200", "engine": "x", "protocols": ["b"]}]}
    with pytest.raises(InputError, match=r"measure.matrix\[1\]: two entries are job 'h200-x'"):
        mx.entries(dup, CARDS)
    dup["matrix"][1]["name"] = "h200-x-second"
    assert list(mx.entries(dup, CARDS)) == ["h200-x", "h200-x-second"]


def dry_run(tmp_path, measure):
    # a checkout whose config has this measure: section
    cfg = yaml.safe_load((CONFIG / "config.yaml").read_text())
    cfg["measure"] = measure
    root = linked_checkout(tmp_path, yaml.safe_dump(cfg))
    return subprocess.run(["snakemake", "-n", "-p", "measure"], cwd=root, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_dry_run_plans_one_job_per_entry(tmp_path):
    r = dry_run(tmp_path, {"matrix": [
        {"card": "h200", "engine": "bf16-dummy", "protocols": ["ladder", "lanes"],
         "resources": {"gpu": 1, "runtime": 90, "mem_mb": 64000}},
        {"partition": "big", "engine": "fp8-hyperqwen-dummy", "protocols": ["ladder"],
         "resources": {"gpu": 2}}]})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert out.count("rule measure_job:") == 2
    assert ("claimcheck measure --card h200 --engine bf16-dummy --protocol ladder "
            "--protocol lanes --engines-file config/engines.yaml") in out
    assert "claimcheck measure --card auto --engine fp8-hyperqwen-dummy" in out
    assert "--one-client-process" in out and "--port 0" in out
    assert "gpu=1, runtime=90" in out and "mem_mb=64000" in out
    assert "gpu=2" in out and "slurm_partition=big" in out


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_flat_and_matrix_together_refused(tmp_path):
    r = dry_run(tmp_path, {"card": "h200", "engine": "bf16-dummy", "protocols": ["ladder"],
                           "matrix": [{"card": "h200", "engine": "bf16-dummy",
                                       "protocols": ["ladder"]}]})
    assert r.returncode != 0
    assert "measure" in r.stdout + r.stderr
