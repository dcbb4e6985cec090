"""Issue 39, item 4: a write that fails mid-run (a full disk, a permission) ends the run as
failed, its cause in provenance.json and one line to the user, the steps before it kept;
and the load client never outlives the measure process, however that process ends.

The server is tests/fakes/fake_vllm.py on 127.0.0.1 (a loopback stand-in, as in
tests/test_measure_faults.py); the runner and its client run unmodified. The full disk is
the one thing stood in: the n-th write of a named file writes half its text, then fails as
write(2) does on a full disk (ENOSPC, no file named).
"""

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claimcheck.config.configfiles import get_engine, get_protocol
from claimcheck.files.errors import InputError
from claimcheck.measure import runner
from claimcheck.measure import server as srv
from tests.test_measure_faults import wait_health
from tests.test_runner_faults import FAKE, fake_engine_env, free_port, provenance

ENOSPC = os.strerror(errno.ENOSPC)  # "No space left on device"


@pytest.fixture
def served(tmp_path):
    """A fake engine on loopback with its log in a file, and the tiny engine's config;
    (tmp_path, server, engine, environment)."""
    tmp, env = fake_engine_env(tmp_path)
    port = free_port()
    log = tmp / "server-start.log"
    with open(log, "wb") as f:
        p = subprocess.Popen([sys.executable, str(FAKE), "serve", "tiny", "--host",
                              "127.0.0.1", "--port", str(port)], stdout=f,
                             stderr=subprocess.STDOUT, env={**env, "FAKE_VLLM_MODE": "ok"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_health(url)
        s = srv.Server(base_url=url, log_path=str(log), engine="tiny")
        yield tmp, s, get_engine("tiny", tmp / "engines.yaml"), env
    finally:
        p.kill()
        p.wait(timeout=10)


def full_disk(monkeypatch, name: str, nth: int) -> None:
    """The ``nth`` write_text of a file called ``name`` (or its ``.tmp``) writes half its
    text and fails with ENOSPC, naming no file (what write(2) says)."""
    real = Path.write_text
    seen = []

    def write_text(self, data, *a, **kw):
        if self.name in (name, name + ".tmp"):
            seen.append(self)
            if len(seen) == nth:
                real(self, data[: len(data) // 2], *a, **kw)
                raise OSError(errno.ENOSPC, ENOSPC)
        return real(self, data, *a, **kw)
    monkeypatch.setattr(Path, "write_text", write_text)


def run(tmp, server, engine, env, monkeypatch):
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("CLAIMCHECK_GPU_FACTS", env["CLAIMCHECK_GPU_FACTS"])
    return runner.run_protocol(protocol=get_protocol("ladder", None, "ci"), engine=engine,
                               card="h200", server=server, runs=tmp / "runs",
                               vllm=[sys.executable, str(FAKE)], tokenizer="synthetic")


def test_a_disk_that_fills_while_step_2_is_recorded_fails_the_run_keeping_step_1(
        served, monkeypatch, capsys):
    tmp, server, engine, env = served
    full_disk(monkeypatch, "steps.json", 2)  # step 1's record written, step 2's not
    run_dir, status = run(tmp, server, engine, env, monkeypatch)
    assert status == "failed"
    p = provenance(run_dir)
    assert p["status"] == "failed"
    assert p["failure"] == (f"step 2 repeat 1: cannot write {run_dir / 'steps.json'}: "
                            f"{ENOSPC}")
    assert [s["status"] for s in p["steps"]] == ["complete", "complete"]  # both measured
    assert len(json.loads((run_dir / "steps.json").read_text())) == 1  # as step 1 left it
    assert not (run_dir / "steps.json.tmp").exists()  # no half-written file left
    err = capsys.readouterr().err
    assert (f"claimcheck: ladder: step 2 repeat 1: cannot write {run_dir / 'steps.json'}: "
            f"{ENOSPC}; the steps before it are kept\n") in err
    assert "Traceback" not in err


def test_a_server_log_that_cannot_be_written_fails_a_complete_run(served, monkeypatch,
                                                                   capsys):
    tmp, server, engine, env = served
    full_disk(monkeypatch, "server.log", 1)
    run_dir, status = run(tmp, server, engine, env, monkeypatch)
    p = provenance(run_dir)
    assert (status, p["status"]) == ("failed", "failed")
    assert p["failure"] == f"server.log: cannot write {run_dir / 'server.log'}: {ENOSPC}"
    assert [s["status"] for s in p["steps"]] == ["complete", "complete"]
    assert not (run_dir / "server.log").exists() and not (run_dir / "server.log.tmp").exists()
    assert f"claimcheck: ladder: cannot write {run_dir / 'server.log'}: {ENOSPC}\n" in (
        capsys.readouterr().err)


@pytest.mark.parametrize("card", ["../../escape", "/abs/escape", "sub/escape"])
def test_a_run_directory_outside_runs_dir_is_refused_before_anything_is_made(tmp_path, card):
    runs = tmp_path / "runs"
    with pytest.raises(InputError) as e:
        runner.check_run_dir(runs, card, "tiny", "ladder")
    assert str(e.value).startswith(f"--runs-dir: the run directory '{card}-")
    assert str(e.value).endswith(f"' would not be a folder of {runs}: a card, engine or "
                                 "protocol name holds a path")
    assert runner.check_run_dir(runs, "h200", "tiny", "ladder").startswith("h200-")
    assert not runs.exists()


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rpartition(")")[2].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


def wait_until(cond, limit_s: float = 20) -> bool:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


def killed_outright_takes(parent, find, wait_s=20):
    """Wait for the one client ``find()`` names, SIGKILL ``parent`` and assert the client
    dies too; the parent is killed on the way out whatever happens."""
    try:
        assert wait_until(find, wait_s), "the client never started"
        (client,) = find()
        parent.kill()
        parent.wait(timeout=10)
        assert wait_until(lambda: not alive(client), 10), f"client {client} outlived it"
    finally:
        if parent.poll() is None:
            parent.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_client_dies_with_a_parent_killed_outright(tmp_path):
    """SIGKILL reaches no handler: the client gets its own SIGKILL from the kernel
    (PR_SET_PDEATHSIG set by clientproc before the exec)."""
    code = ("import sys; from pathlib import Path; from claimcheck.measure import clientproc;"
            " clientproc.run_subprocess(['sleep', '300'], Path(sys.argv[1]), None)")
    src = str(Path(runner.__file__).resolve().parents[2])
    parent = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "client.log")],
                              env={**os.environ, "PYTHONPATH": src})
    killed_outright_takes(parent, lambda: children(parent.pid))


def clients_of(runs: Path) -> list[int]:
    """Live processes whose command line names ``runs`` (a step's client: its result path)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and d.name != str(os.getpid()):
            try:
                if str(runs).encode() in (d / "cmdline").read_bytes() and alive(int(d.name)):
                    out.append(int(d.name))
            except OSError:
                continue
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_measure_killed_outright_mid_step_takes_its_load_client_with_it(tmp_path):
    tmp, e = fake_engine_env(tmp_path)
    args = [sys.executable, "-m", "claimcheck.cli", "measure", "--card", "h200", "--engine",
            "tiny", "--engines-file", str(tmp / "engines.yaml"), "--profile", "ci",
            "--runs-dir", str(tmp / "runs"), "--port", str(free_port()), "--state",
            str(tmp / "state"), "--protocol", "lanes"]
    p = subprocess.Popen(args, env={**e, "FAKE_VLLM_MODE": "hang"}, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        killed_outright_takes(p, lambda: clients_of(tmp / "runs"), 60)
    finally:
        state = tmp / "state" / "server.json"  # a detached server stays (SIGKILL: no stop)
        if state.is_file():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(json.loads(state.read_text())["pid"], signal.SIGKILL)


def test_a_manifest_line_that_cannot_be_written_keeps_the_step_plain(tmp_path, monkeypatch):
    """The runner's compaction records the manifest line first: a full disk there leaves
    the plain bench.json as the client wrote it, the manifest as it was, no .tmp, and an
    error naming the manifest (which the runner puts in provenance.json's failure)."""
    from claimcheck.runs import runfiles
    step = tmp_path / "runs" / "r" / "steps" / "00-c1-r1"
    step.mkdir(parents=True)
    raw = json.dumps({"itls": [[0.5, 0.25]], "output_lens": [3]}).encode()
    (step / "bench.json").write_bytes(raw)
    mf = tmp_path / "runs" / runfiles.BENCH_MANIFEST
    mf.write_text("# before\n")
    real = Path.write_bytes

    def write_bytes(self, data):
        if self.name == mf.name + ".tmp":
            real(self, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, ENOSPC)
        return real(self, data)
    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    with pytest.raises(OSError) as e:
        runfiles.compact_bench(step, mf)
    assert (e.value.filename, e.value.strerror) == (str(mf), ENOSPC)
    assert runner._one_line(e.value) == f"cannot write {mf}: {ENOSPC}"
    assert (step / "bench.json").read_bytes() == raw and not (step / "bench.cols").exists()
    assert mf.read_text() == "# before\n" and sorted(p.name for p in mf.parent.iterdir()) == [
        runfiles.BENCH_MANIFEST, "r"]


def test_a_record_that_cannot_be_written_at_the_end_keeps_the_last_one(served, monkeypatch,
                                                                      capsys):
    """Permission or space gone for the end record itself: one line, the run reported
    failed, provenance.json as the last step left it (status running, both steps)."""
    tmp, server, engine, env = served
    real = Path.write_text
    writes = []

    def write_text(self, data, *a, **kw):
        if self.name == "provenance.json.tmp":
            writes.append(data)
            if '"ended_utc"' in data:  # the end record
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self, data, *a, **kw)
    monkeypatch.setattr(Path, "write_text", write_text)
    run_dir, status = run(tmp, server, engine, env, monkeypatch)
    assert status == "failed"
    p = provenance(run_dir)
    assert p["status"] == "running" and [s["status"] for s in p["steps"]] == ["complete"] * 2
    assert not (run_dir / "provenance.json.tmp").exists()
    err = capsys.readouterr().err
    assert (f"claimcheck: ladder: the run's end is not recorded: cannot write "
            f"{run_dir / 'provenance.json.tmp'}: {os.strerror(errno.EACCES)}; provenance.json "
            "keeps the steps recorded before it (status running)\n") in err


def test_a_record_its_schema_refuses_is_written_failed_and_never_complete(served, monkeypatch,
                                                                          capsys):
    """Issue 40 item 5: a run the runner returns failed leaves provenance.json saying failed,
    and no end record says complete on the way: a record its schema refuses (here a profile
    that is not a string, where the schema allows a string or null) is found before the one
    end write, which says failed and why."""
    tmp, server, engine, env = served
    real = Path.write_text
    ends = []

    def write_text(self, data, *a, **kw):
        if self.name == "provenance.json.tmp" and '"ended_utc"' in data:  # an end record
            ends.append(json.loads(data)["status"])
        return real(self, data, *a, **kw)
    monkeypatch.setattr(Path, "write_text", write_text)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("CLAIMCHECK_GPU_FACTS", env["CLAIMCHECK_GPU_FACTS"])
    run_dir, status = runner.run_protocol(
        protocol=get_protocol("ladder", None, "ci"), engine=engine, card="h200",
        server=server, runs=tmp / "runs", vllm=[sys.executable, str(FAKE)],
        tokenizer="synthetic", profile=7)  # type: ignore[arg-type]
    p = provenance(run_dir)
    assert (status, p["status"]) == ("failed", "failed")
    assert ends == ["failed"]  # one end record, never "complete" first
    assert p["failure"].startswith(f"the run record does not match its schema: {run_dir}/"
                                   "provenance.json")
    assert "profile" in p["failure"] and "7 is not of type" in p["failure"]
    assert [s["status"] for s in p["steps"]] == ["complete", "complete"]  # both measured
    err = capsys.readouterr().err
    assert "claimcheck: error: the run record does not match its schema: " in err
    assert "Traceback" not in err
