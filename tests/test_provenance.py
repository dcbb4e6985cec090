"""Provenance assembly on a machine without a GPU (as in CI)."""

import subprocess
import sys
import time

import pytest

from claimcheck.files.paths import ROOT
from claimcheck.measure import provenance as prov
from claimcheck.measure import telemetry
from claimcheck.readings.telemetry import summarize
from claimcheck.runs.runload import read_telemetry


def nvml_here() -> bool:
    return telemetry.nvml_status()[0]


@pytest.mark.skipif(nvml_here(), reason="this machine has NVML; the no-GPU path needs none")
def test_no_nvml_is_recorded_not_raised(tmp_path):
    facts = telemetry.gpu_facts()
    assert facts["available"] is False and facts["reason"]
    with telemetry.Sampler(tmp_path / "t.csv") as s:
        pass
    assert s.available is False and not (tmp_path / "t.csv").exists()
    assert summarize(read_telemetry(tmp_path / "t.csv")) == {"samples": 0}


def test_telemetry_summary_by_hand():
    rows = [{"t_unix_s": float(t), "power_w": p, "power_limit_w": 700.0,
             "sm_clock_mhz": c, "temp_c": tc, "mem_used_mib": 10.0}
            for t, p, c, tc in ((0, 100.0, 1000.0, 40.0), (1, 300.0, 2000.0, 50.0),
                                (2, 500.0, 1500.0, 45.0), (3, 900.0, 10.0, 90.0))]
    s = summarize(rows, 0.5, 2.5)  # the window holds t = 1 and t = 2
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
    assert (g["commit"], g["dirty"]) == ("abc123", "false")
    assert g["source"].startswith("environment") and g["git"]["commit"] is None


def test_the_named_commit_wins_over_a_copied_dot_git(tmp_path, monkeypatch):
    """The offline H200's copy carried a .git of the last landed commit while the tree was
    another commit: the commit named in the environment is recorded, git's view beside it."""
    def git(*a):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a],
                              cwd=tmp_path, capture_output=True, text=True, check=True)
    git("init", "-q")
    (tmp_path / "f").write_text("x")
    git("add", "f")
    git("commit", "-qm", "c")
    head = git("rev-parse", "HEAD").stdout.strip()
    monkeypatch.delenv("CLAIMCHECK_GIT_COMMIT", raising=False)
    assert prov.project_git(tmp_path) == {"commit": head, "dirty": False, "source": "git"}
    monkeypatch.setenv("CLAIMCHECK_GIT_COMMIT", "d5482624")
    g = prov.project_git(tmp_path)
    assert g["commit"] == "d5482624" and g["git"]["commit"] == head


def test_software_probe_runs_in_the_named_interpreter():
    sw = prov.software(sys.executable)
    assert sw["python_executable"] == sys.executable
    assert "vllm" in sw  # None here (no vLLM on this machine), a version on a GPU host
    r = subprocess.run([sys.executable, "-c", "import claimcheck"], capture_output=True)
    assert r.returncode == 0


def _pip_versions(*dists: str) -> dict[str, str | None]:
    """The version pip reports for each distribution, None where it has none (independent
    of the probe; one ``pip show`` for all: a pip start takes about 2 s)."""
    r = subprocess.run([sys.executable, "-m", "pip", "show", *dists], capture_output=True,
                       text=True)
    found: dict[str, str] = {}
    name = None
    for line in r.stdout.splitlines():
        if line.startswith("Name:"):
            name = line.split(":", 1)[1].strip().lower()
        elif line.startswith("Version:") and name is not None:
            found[name] = line.split(":", 1)[1].strip()
    return {d: found.get(d.lower()) for d in dists}


def test_versions_come_from_installed_distributions():
    sw = prov.software(sys.executable)
    pip = _pip_versions("nvidia-ml-py", "vllm", "torch", "tokenizers")
    nvml = pip["nvidia-ml-py"]
    if nvml is None:
        pytest.skip("nvidia-ml-py is not installed here")
    # all committed runs recorded None here (pynvml has no __version__)
    assert sw["nvidia_ml_py"] == nvml and sw["nvidia_ml_py_distribution"] == "nvidia-ml-py"
    for name, dist in (("vllm", "vllm"), ("torch", "torch"), ("tokenizers", "tokenizers")):
        v = pip[dist]
        assert sw[name] == v
        if v is None:  # the cause is recorded, not swallowed
            assert sw[f"{name}_error"] == f"distribution {dist!r} is not installed"


def test_probe_that_cannot_run_records_why(tmp_path):
    sw = prov.software(str(tmp_path / "no-python"))
    assert sw["error"].startswith(f"probe could not run in {tmp_path / 'no-python'}: "
                                  "FileNotFoundError")
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    broken.chmod(0o755)
    assert prov.software(str(broken))["error"] == "probe exited with code 3: boom\n"


def test_sampler_records_a_real_nvml_failure(tmp_path):
    # No driver here: every NVML call really fails (NVMLError_Uninitialized). On a GPU host,
    # a GPU index past the last one really fails (NVMLError_InvalidArgument).
    ok, _ = telemetry.nvml_status()
    index = telemetry.gpu_count() + 3 if ok else 0
    s = telemetry.Sampler(tmp_path / "telemetry.csv", [index], interval_s=0.05)
    with s:
        time.sleep(0.5)
    rec = s.record()
    assert rec["status"] == "failed" and rec["rows_written"] == 0
    assert rec["samples"] >= 3 and rec["errors"] == rec["samples"]
    assert rec["lost_samples"] == rec["samples"]  # one GPU row lost per tick
    assert rec["first_error"].startswith("NVMLError")
    assert s._thread is not None and not s._thread.is_alive()  # stopped, not died early
    # the file holds the header and no invented rows
    assert read_telemetry(tmp_path / "telemetry.csv") == []


def test_provenance_record_keeps_counts_summary_and_read_errors(tmp_path):
    ok, _ = telemetry.nvml_status()
    s = telemetry.Sampler(tmp_path / "telemetry.csv", [telemetry.gpu_count() + 3 if ok else 0],
                          interval_s=0.05)
    with s:
        time.sleep(0.2)
    rec = telemetry.provenance_record(s)
    assert rec["status"] == "failed" and rec["summary"] == {"samples": 0}
    assert rec["lost_samples"] == rec["samples"] >= 1 and "read_error" not in rec
    # a row cut off mid-write (e.g. a full disk) is kept visible, not raised at the runner
    committed = (ROOT / "data" / "raw" / "runs" / "h200-20261129-bf16-dummy-ladder"
                 / "telemetry.csv").read_text()
    (tmp_path / "telemetry.csv").write_text(committed + "1795944999.5,0,12")
    rec = telemetry.provenance_record(s)
    n = len(committed.splitlines())
    assert rec["read_error"].endswith(f"telemetry.csv:{n + 1}: fewer fields than the header "
                                      "(a row cut off?)")
