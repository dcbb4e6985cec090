"""Every fault path of the runner, each with a real subprocess that misbehaves.

The misbehaving process is tests/fakes/fake_vllm.py on PATH as ``vllm``: a stand-in for
the engine (no GPU and no vLLM here), never for the runner, whose code runs unmodified
through the real ``claimcheck`` CLI. The real-engine counterpart runs on a GPU host
(data/raw/runs) and, for the CPU build of vLLM, in the integration tests. The H200 it is
measured as is a file of GPU facts (``CLAIMCHECK_GPU_FACTS``, the telemetry module's test
seam), so the card and no-GPU checks pass without a GPU; the sampler still finds no NVML.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fabricate import bench

FAKE = Path(__file__).parent / "fakes" / "fake_vllm.py"
H200_FACTS = {"available": True, "count": 1, "driver_version": None,
              "cuda_driver_version": None, "gpus": [{"index": 0, "name": "NVIDIA H200"}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def env(tmp_path):
    return fake_engine_env(tmp_path)


def fake_engine_env(tmp_path):
    """``vllm`` on PATH is the fake engine; a tiny engine config; (tmp_path, environment)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vllm").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    (bin_dir / "vllm").chmod(0o755)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "model_type": "qwen3", "hidden_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 16,
        "vocab_size": 64}))
    (tmp_path / "engines.yaml").write_text(textwrap.dedent(f"""\
        engines:
          tiny:
            description: tiny fake engine
            model: {model}
            weights: dummy
            served_model_name: tiny
        """))
    (tmp_path / "gpu-facts.json").write_text(json.dumps(H200_FACTS))
    e = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
         "CLAIMCHECK_DERIVED": str(tmp_path / "derived"),
         "CLAIMCHECK_GPU_FACTS": str(tmp_path / "gpu-facts.json")}
    return tmp_path, e


def measure(tmp_path, env, *protocols, mode="ok", extra=(), timeout=120):
    args = [sys.executable, "-m", "claimcheck.cli", "measure", "--card", "h200",
            "--engine", "tiny", "--engines-file", str(tmp_path / "engines.yaml"),
            "--profile", "ci", "--runs-dir", str(tmp_path / "runs"), "--port",
            str(free_port()), "--state", str(tmp_path / "state"), *extra]
    for p in protocols:
        args += ["--protocol", p]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                          env={**env, "FAKE_VLLM_MODE": mode})


def provenance(run_dir: Path) -> dict:
    return json.loads((run_dir / "provenance.json").read_text())


def test_complete_run_and_no_overwrite(env):
    tmp, e = env
    r = measure(tmp, e, "ladder")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "no GPU telemetry" in r.stderr or "NVML" in r.stderr  # said, not raised
    runs = sorted(p for p in (tmp / "runs").iterdir() if p.is_dir())  # and the manifest
    assert len(runs) == 1
    p = provenance(runs[0])
    assert p["status"] == "complete" and p["weights"] == "dummy"
    assert p["telemetry"]["available"] is False and p["telemetry"]["reason"]
    assert p["gpu"]["gpus"] == H200_FACTS["gpus"]  # the stand-in facts, said to be such
    assert p["gpu"]["source"] == f"{tmp / 'gpu-facts.json'} (CLAIMCHECK_GPU_FACTS), not NVML"
    assert "--host 127.0.0.1" in p["server"]["command"]  # loopback only
    assert [s["streams"] for s in p["steps"]] == [1, 4]
    first = runs[0].name
    r2 = measure(tmp, e, "ladder")
    assert r2.returncode == 0, r2.stderr
    names = sorted(d.name for d in (tmp / "runs").iterdir() if d.is_dir())
    assert names == [first, first + "-2"]
    assert provenance(tmp / "runs" / first)["steps"] == p["steps"]  # first run untouched


def test_never_healthy_times_out_with_log_tail(env):
    tmp, e = env
    r = measure(tmp, e, "ladder", mode="never_healthy", extra=("--health-timeout", "4"))
    assert r.returncode == 3
    assert "no answer from http://127.0.0.1:" in r.stderr
    assert "/health within 4 s" in r.stderr
    assert "server log tail" in r.stderr and "GPU KV cache size" in r.stderr
    assert "Traceback" not in r.stderr
    # the server it started and that never answered is stopped, not left running
    pid = json.loads((tmp / "state" / "server.json").read_text())["pid"]
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(
        f"/proc/{pid}/status").read_text()


def test_bad_flag_names_the_cause(env):
    tmp, e = env
    r = measure(tmp, e, "ladder", mode="bad_flag", extra=("--health-timeout", "30"))
    assert r.returncode == 3
    assert "exited (code 2) before /health answered" in r.stderr
    assert "cause (from the server log): vllm: error: unrecognized arguments" in r.stderr


def test_engine_dies_mid_run_keeps_results_and_next_protocol_runs(env):
    tmp, e = env
    # the fake engine dies at its 3rd request: ladder's first step (2 requests, one at a
    # time) completes, the second (8 requests) loses them all; hyperqwen-batch then gets a
    # new server (which dies the same way, with 4 in flight).
    r = measure(tmp, e, "ladder", "hyperqwen-batch", mode="die_after_requests:2")
    assert r.returncode == 4, r.stderr
    runs = {d.name.rsplit("-", 1)[-1] if "ladder" in d.name else "batch": d
            for d in (tmp / "runs").iterdir() if d.is_dir()}
    ladder = next(d for d in (tmp / "runs").iterdir() if d.name.endswith("ladder"))
    p = provenance(ladder)
    assert p["status"] == "failed"
    assert p["steps"][0]["status"] == "complete"
    assert p["steps"][1]["status"] == "failed"
    assert "requests failed" in p["failure"] and "EngineDeadError" in p["failure"]
    kept = bench(ladder / "steps" / p["steps"][1]["dir"])
    assert kept["completed"] == 0 and kept["failed"] == 8  # every result that came back
    assert "EngineDeadError" in (ladder / "server.log").read_text()
    batch = next(d for d in (tmp / "runs").iterdir() if d.name.endswith("hyperqwen-batch"))
    # a fresh server was started for the next protocol (it also dies after 2 requests)
    pb = provenance(batch)
    assert pb["server"]["pid"] != p["server"]["pid"]
    assert pb["steps"][0]["completed"] <= 2 and pb["status"] == "failed"
    assert len(runs) == 2


def test_unknown_names_and_no_traceback(env):
    tmp, e = env
    for extra, msg in ((["--card", "h900"], "unknown card 'h900'"),
                       (["--engine", "nope"], "unknown engine 'nope'")):
        args = [sys.executable, "-m", "claimcheck.cli", "measure", "--card", "h200",
                "--engine", "tiny", "--engines-file", str(tmp / "engines.yaml"),
                "--protocol", "ladder"]
        for i in range(0, len(extra), 2):
            args[args.index(extra[i]) + 1] = extra[i + 1]
        r = subprocess.run(args, capture_output=True, text=True, env=e)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr
    assert not (tmp / "runs").exists()  # refused before anything started


def test_a_result_left_empty_mid_run_ends_the_run_failed_in_one_line(env):
    """Issue 39: a disk that fills during step 2 leaves a 0-byte bench.json. The run ends
    as failed with the file named, one line, no traceback; step 1 is kept."""
    tmp, e = env
    r = measure(tmp, e, "ladder", mode="bench_truncated")
    assert "Traceback" not in r.stderr, r.stderr
    run = next(p for p in (tmp / "runs").iterdir() if p.is_dir())
    p = provenance(run)
    assert p["status"] == "failed", p["status"]
    assert p["failure"].startswith("step 2 repeat 1: ") and "bench.json: not a JSON bench " \
        "result (0 bytes" in p["failure"], p["failure"]
    assert [s["status"] for s in p["steps"]] == ["complete"]  # step 1 kept
    assert bench(run / "steps" / p["steps"][0]["dir"])["completed"] == p["steps"][0]["completed"]
    assert "the steps before it are kept" in r.stderr


def test_a_card_name_holding_a_path_never_leaves_the_runs_folder(tmp_path):
    """Issue 39: the run directory is made inside --runs-dir or not at all (a second wall
    behind the name check at the CLI)."""
    from claimcheck.files.errors import InputError
    from claimcheck.measure.runner import new_run_dir
    runs = tmp_path / "a" / "runs"
    with pytest.raises(InputError, match=r"^--runs-dir: the run directory '\.\./\.\./escape-"
                       r"\d{8}-e-p' would not be a folder of .*/a/runs: a card, engine or "
                       r"protocol name holds a path$"):
        new_run_dir(runs, "../../escape", "e", "p")
    with pytest.raises(InputError, match=r"would not be a folder of .*/a/runs"):
        new_run_dir(runs, str(tmp_path / "abs"), "e", "p")
    assert list(tmp_path.rglob("*")) == []  # refused before any folder is made
    assert new_run_dir(runs, "h200", "e", "p").parent == runs
