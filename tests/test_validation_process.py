"""Class: process safety. ``claimcheck stop`` signals only the process it started: the pid
in server.json must have the recorded start time and command line. Real processes."""

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from claimcheck.measure import server as srv

from ._cli import cli, one_line_error


def start_ticks(pid: int) -> int:
    """Field 22 of /proc/PID/stat, read here independently of the package."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(") ")[2].split(" ")[19])


@pytest.fixture
def stranger():
    """A live process that is not a server claimcheck started."""
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield p
    p.kill()
    p.wait()


def state_for(tmp_path: Path, pid: int, **ident) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    rec = {"base_url": "http://127.0.0.1:1", "log_path": str(tmp_path / "server.log"),
           "argv": ["vllm", "serve", "data/raw/models/qwen3.8-27b"], "pid": pid,
           "started_unix_s": time.time(), **ident}
    (state / "server.json").write_text(json.dumps(rec))
    return state


def test_pid_reused_by_another_process_is_not_signalled(tmp_path, stranger):
    real = start_ticks(stranger.pid)
    state = state_for(tmp_path, stranger.pid, proc_start_ticks=real - 100,
                      proc_cmdline=["sleep", "60"])
    line = one_line_error(cli("stop", "--state", state))
    assert (f"{state / 'server.json'}: pid: refusing to stop: pid {stranger.pid} started at "
            f"tick {real}, the recorded server at tick {real - 100}: it is another process; "
            "nothing was signalled") in line
    time.sleep(0.2)
    assert stranger.poll() is None  # still running


def test_other_command_line_is_not_signalled(tmp_path, stranger):
    state = state_for(tmp_path, stranger.pid, proc_start_ticks=start_ticks(stranger.pid),
                      proc_cmdline=["/usr/bin/python3", "/usr/bin/vllm", "serve"])
    line = one_line_error(cli("stop", "--state", state))
    assert f"pid {stranger.pid} runs 'sleep 60', not the recorded " in line
    assert stranger.poll() is None


def test_state_without_identity_is_not_signalled(tmp_path, stranger):
    state = state_for(tmp_path, stranger.pid)  # as written before start times were kept
    line = one_line_error(cli("stop", "--state", state))
    assert f"server.json records no start time for pid {stranger.pid}" in line
    assert stranger.poll() is None


def test_the_server_it_started_is_stopped(tmp_path):
    s = srv.start(["sleep", "60"], tmp_path / "server.log", base_url="http://127.0.0.1:1")
    assert s.proc_start_ticks == start_ticks(s.pid)
    assert s.proc_cmdline == ["sleep", "60"]
    s.save(tmp_path / "state")
    r = cli("stop", "--state", tmp_path / "state")
    assert r.returncode == 0, r.stderr
    assert f"stopped pid {s.pid}" in r.stderr
    assert s._proc.wait(timeout=10) == -signal.SIGTERM


def test_stop_when_already_gone(tmp_path):
    s = srv.start(["true"], tmp_path / "server.log", base_url="http://127.0.0.1:1")
    s._proc.wait()
    s.save(tmp_path / "state")
    r = cli("stop", "--state", tmp_path / "state")
    assert r.returncode == 0 and "is not running; nothing to stop" in r.stderr


@pytest.mark.parametrize(("field", "value", "words"), [
    ("pid", "1234", "pid: must be a positive integer, got '1234'"),
    ("pid", 0, "pid: must be a positive integer, got 0"),
    ("proc_cmdline", "sleep 60", "proc_cmdline: must be a list of strings"),
])
def test_tampered_state_is_refused_before_any_signal(tmp_path, field, value, words):
    state = state_for(tmp_path, 1, proc_start_ticks=1, proc_cmdline=["init"])
    rec = json.loads((state / "server.json").read_text())
    rec[field] = value
    (state / "server.json").write_text(json.dumps(rec))
    line = one_line_error(cli("stop", "--state", state))
    assert f"{state / 'server.json'}: {words}" in line
