"""Class: measurement integrity (issue 22 item 1). A stream that ends early, a usage that
disagrees with what was asked or streamed, a bench result shorter than asked, a server that
never answers, and a signal mid-step: each is recorded in the run as what happened.

The server is tests/fakes/fake_vllm.py on 127.0.0.1 (a loopback stand-in written for these
tests; it streams SSE as vLLM does with continuous usage stats, or misbehaves as
FAKE_VLLM_MODE says). The client and the runner are the package's own code, unmodified.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from claimcheck.figures import definitions_fig
from claimcheck.files.paths import RAW
from claimcheck.measure import clientproc, loadclient
from claimcheck.pipeline import run_figures
from claimcheck.pipeline.derive import claims_table
from tests._cli import cli
from tests.test_runner_faults import FAKE, fake_engine_env, free_port, measure, provenance


def wait_health(url: str, limit_s: float = 20) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} never answered /health")


@pytest.fixture
def fake_server():
    """Start the fake server on loopback in a given mode; stopped after the test."""
    procs = []

    def start(mode: str) -> str:
        port = free_port()
        p = subprocess.Popen([sys.executable, str(FAKE), "serve", "m", "--host", "127.0.0.1",
                              "--port", str(port)], env={**os.environ, "FAKE_VLLM_MODE": mode},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        url = f"http://127.0.0.1:{port}"
        wait_health(url)
        return url

    yield start
    for p in procs:
        p.kill()
        p.wait(timeout=10)


@pytest.fixture
def env(tmp_path):
    return fake_engine_env(tmp_path)


def client_argv(url: str, result: Path, ignore_eos: bool = True) -> list[str]:
    return ["--base-url", url, "--model", "m", "--kind", "lanes", "--streams", "2",
            "--requests", "2", "--input-len", "8", "--output-len", "16", "--endpoint",
            "/v1/completions", "--seed", "1", "--result", str(result)] + (
        ["--ignore-eos"] if ignore_eos else [])


@pytest.mark.parametrize(("mode", "ignore_eos", "error"), [
    ("ok", True, ""),
    # EOF after 5 of 16 tokens: the connection closes without [DONE]
    ("stream_eof:5", True,
     "the stream ended without data: [DONE] after 5 of 16 requested tokens"),
    ("stream_eof:5", False,
     "the stream ended without data: [DONE] after 5 of 16 requested tokens"),
    # a clean end after 5 tokens: a model may stop at EOS, but not under ignore_eos
    ("stream_stop:5", True, "the stream ended after 5 of 16 requested tokens under ignore_eos"),
    ("stream_stop:5", False, ""),
    ("usage:160", True, "usage reports 160 completion tokens but max_tokens was 16"),
    ("usage:4", True, "usage reports 4 completion tokens but 16 chunks carrying text were "
     "streamed (each holds at least one token)"),
])
def test_the_load_client_fails_what_the_stream_does_not_bear_out(
        tmp_path, fake_server, mode, ignore_eos, error):
    url = fake_server(mode)
    result = tmp_path / "r.json"
    rc = loadclient.main(client_argv(url, result, ignore_eos))
    res = json.loads(result.read_text())
    assert res["errors"] == [error, error]
    if error:
        assert rc == 1 and res["completed"] == 0 and res["failed"] == 2
        assert res["total_output_tokens"] == 0 and res["output_lens"] == [0, 0]
    else:
        assert rc == 0 and res["completed"] == 2
        n = 16 if mode == "ok" else 5
        assert res["output_lens"] == [n, n] and res["total_output_tokens"] == 2 * n


def test_a_server_that_never_answers_ends_at_the_time_limit(tmp_path, fake_server):
    url = fake_server("hang")
    argv = [sys.executable, "-m", "claimcheck.measure.loadclient",
            *client_argv(url, tmp_path / "r.json")]
    t0 = time.monotonic()
    assert clientproc.run_subprocess(argv, tmp_path / "client.log", 3) is None
    assert time.monotonic() - t0 < 10


def test_the_default_step_timeout():
    # 300 s + waves x (input/10 + output/1) s
    assert clientproc.default_timeout_s(256, 256, 512, 512) == 300 + 1 * (51.2 + 512)
    assert clientproc.default_timeout_s(8, 4, 32, 16) == 300 + 2 * (3.2 + 16)
    assert clientproc.default_timeout_s(9, 4, 100, 10) == 300 + 3 * (10 + 10)


# ---- through `claimcheck measure` (the runner records what happened)

def only_run(tmp: Path) -> Path:
    runs = sorted(p for p in (tmp / "runs").iterdir() if p.is_dir())  # and the manifest
    assert len(runs) == 1, runs
    return runs[0]


def test_a_truncated_stream_fails_the_run_with_its_cause(env):
    tmp, e = env
    r = measure(tmp, e, "lanes", mode="stream_eof:5")
    assert r.returncode == 4, r.stderr
    p = provenance(only_run(tmp))
    assert p["status"] == "failed" and p["steps"][0]["status"] == "failed"
    assert p["failure"] == (
        "the load client exited with code 1; 4 of 4 requests failed (first error: the stream "
        "ended without data: [DONE] after 5 of 16 requested tokens)")
    # the default time limit, and its rule, recorded with the step: 1 wave of 32 + 16
    assert p["steps"][0]["client_timeout_s"] == 300 + 32 / 10 + 16
    assert p["steps"][0]["client_timeout_rule"] == clientproc.TIMEOUT_RULE


def test_a_bench_result_shorter_than_asked_fails_the_step(env):
    tmp, e = env
    r = measure(tmp, e, "ladder", mode="bench_short:5")
    assert r.returncode == 4, r.stderr
    p = provenance(only_run(tmp))
    assert p["steps"][0]["status"] == "failed" and len(p["steps"]) == 1
    assert p["failure"] == ("2 completed requests returned fewer than the 16 tokens asked "
                            "for under --ignore-eos (first: request 0, 5 tokens)")


def test_a_server_that_never_answers_fails_the_step(env):
    tmp, e = env
    r = measure(tmp, e, "lanes", mode="hang", extra=("--step-timeout", "3"))
    assert r.returncode == 4, r.stderr
    p = provenance(only_run(tmp))
    assert p["failure"].startswith("client timed out after 3.0 s")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                           (signal.SIGHUP, 129)])
def test_a_signal_mid_step_marks_the_run_interrupted(env, sig, code):
    tmp, e = env
    args = [sys.executable, "-m", "claimcheck.cli", "measure", "--card", "h200", "--engine",
            "tiny", "--engines-file", str(tmp / "engines.yaml"), "--profile", "ci",
            "--runs-dir", str(tmp / "runs"), "--port", str(free_port()), "--state",
            str(tmp / "state"), "--protocol", "lanes"]
    p = subprocess.Popen(args, env={**e, "FAKE_VLLM_MODE": "hang"}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while not list((tmp / "runs").glob("*/steps/00-c4-r1")):
            assert time.monotonic() < end and p.poll() is None, p.stderr
            time.sleep(0.2)
        time.sleep(1.5)  # the client has sent its requests and waits on the server
        t0 = time.monotonic()
        p.send_signal(sig)
        _, err = p.communicate(timeout=40)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == code, err
    assert took < 20, took
    from tests.test_runner_writes import clients_of
    assert clients_of(tmp / "runs") == []  # the step's load client went with it
    name = signal.Signals(sig).name
    assert (f"claimcheck: interrupted by {name}; what was measured is kept, the server is "
            "stopped") in err
    assert "Traceback" not in err
    run = only_run(tmp)
    prov = provenance(run)
    assert prov["status"] == "interrupted"
    assert prov["failure"] == (f"interrupted by {name} during step 1 of 1 (00-c4-r1); the 0 "
                               "complete step(s) before it are kept")
    assert prov["steps"][0]["status"] == "interrupted"
    # steps.json says the same, the cut step's record included
    assert json.loads((run / "steps.json").read_text()) == prov["steps"]
    pid = prov["server"]["pid"]
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(
        f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    # the reader says so, and reads the run
    m = cli("metrics", run)
    assert m.returncode == 0, m.stderr
    assert m.stdout.splitlines()[0].endswith(f"; run interrupted: {prov['failure']}")
    assert "skipped 00-c4-r1: no bench.json (step interrupted)" in m.stdout
    # the pipeline's per-run rules read it (snakemake all is not stopped by it)
    rec = subprocess.run([sys.executable, "-m", "claimcheck.pipeline.derive", "run-record",
                          str(run), str(tmp / "run.json")], capture_output=True, text=True,
                         timeout=120)
    assert rec.returncode == 0, rec.stderr
    assert json.loads((tmp / "run.json").read_text())["provenance"]["status"] == "interrupted"
    (png,) = definitions_fig.write(run, tmp / "definitions")  # per-run: PNG only
    assert png.stat().st_size > 1000
    if sig == signal.SIGTERM:  # the measured-run figure says it too (papermill's cell)
        claims_table(RAW / "claims.csv", RAW / "cards.csv", tmp / "claims.csv",
                     tmp / "claims.json")
        fig, md = run_figures.measured_run(str(tmp / "run.json"), str(tmp / "claims.json"),
                                       str(RAW / "models/qwen3.8-27b/config.json"))
        assert [t.get_text() for ax in fig.axes for t in ax.texts] == [
            f"{run.name}: run interrupted, no step to draw\n{prov['failure']}"]
        assert "interrupted" in md


def test_a_run_killed_without_writing_its_end_reads_as_interrupted(tmp_path):
    from tests.fabricate import LADDER, copy_run, edit_json

    run = copy_run(tmp_path, LADDER)

    def killed(p):  # what the runner leaves after step 2 when SIGKILL ends it
        p.update(status="running", steps=p["steps"][:2])
        for k in ("ended_utc", "duration_s", "failure", "telemetry"):
            p.pop(k, None)
    edit_json(run / "provenance.json", killed)
    m = cli("metrics", run)
    assert m.returncode == 0, m.stderr
    assert m.stdout.splitlines()[0].endswith(
        "; run interrupted: provenance.json still says running: the runner was killed before "
        "it could record its end (or is still running); the steps it recorded are kept")
    assert m.stdout.count("\nstep ") == 2


def test_the_interrupted_reason_outside_a_client_run():
    from claimcheck.measure.runner import Interrupted, interrupted_reason

    steps = [{"status": "complete"}, {"status": "failed"}]
    e = Interrupted(signal.SIGTERM)
    assert (e.code, e.name) == (143, "SIGTERM")
    assert interrupted_reason(e, steps, 5) == (
        "interrupted by SIGTERM outside a step's client run (after 2 of 5 steps were "
        "recorded); the 1 complete step(s) before it are kept")
    assert interrupted_reason(KeyboardInterrupt(), [], 3).startswith(
        "interrupted by SIGINT outside a step's client run (after 0 of 3 steps")
    assert len(steps) == 2  # nothing appended without a step record
