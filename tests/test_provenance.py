"""Provenance assembly on a machine without a GPU (as in CI)."""

import subprocess
import sys

import pytest

from claimcheck.measure import provenance as prov
from claimcheck.measure import telemetry


def nvml_here() -> bool:
    return telemetry.nvml_status()[0]


@pytest.mark.skipif(nvml_here(), reason="this machine has NVML; the no-GPU path needs none")
def test_no_nvml_is_recorded_not_raised(tmp_path):
    facts = telemetry.gpu_facts()
    assert facts["available"] is False and facts["reason"]
    with telemetry.Sampler(tmp_path / "t.csv") as s:
        pass
    assert s.available is False and not (tmp_path / "t.csv").exists()
    assert telemetry.summarize(telemetry.read_telemetry(tmp_path / "t.csv")) == {"samples": 0}


def test_telemetry_summary_by_hand():
    rows = [{"t_unix_s": float(t), "power_w": p, "power_limit_w": 700.0,
             "sm_clock_mhz": c, "temp_c": tc, "mem_used_mib": 10.0}
            for t, p, c, tc in ((0, 100.0, 1000.0, 40.0), (1, 300.0, 2000.0, 50.0),
                                (2, 500.0, 1500.0, 45.0), (3, 900.0, 10.0, 90.0))]
    s = telemetry.summarize(rows, 0.5, 2.5)  # the window holds t = 1 and t = 2
    assert s["samples"] == 2 and s["mean_power_w"] == 400.0 and s["max_power_w"] == 500.0
    assert s["mean_sm_clock_mhz"] == 1750.0 and s["max_temp_c"] == 50.0


def test_host_and_env(monkeypatch):
    h = prov.host()
    assert h["cores"] >= 1 and h["python"].count(".") == 2
    monkeypatch.setenv("VLLM_USE_V1", "1")
    monkeypatch.setenv("UNRELATED_SECRET", "x")
    env = prov.relevant_env()
    assert env["VLLM_USE_V1"] == "1" and "UNRELATED_SECRET" not in env


def test_git_fallback_without_a_checkout(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAIMCHECK_GIT_COMMIT", "abc123")
    monkeypatch.setenv("CLAIMCHECK_GIT_DIRTY", "false")
    g = prov.project_git(tmp_path)  # no .git here
    assert g == {"commit": "abc123", "dirty": "false", "source": "environment"}


def test_software_probe_runs_in_the_named_interpreter():
    sw = prov.software(sys.executable)
    assert sw["python_executable"] == sys.executable
    assert "vllm" in sw  # None here (no vLLM on this machine), a version on a GPU host
    r = subprocess.run([sys.executable, "-c", "import claimcheck"], capture_output=True)
    assert r.returncode == 0
