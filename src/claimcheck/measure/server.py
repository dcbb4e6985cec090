"""The ``vllm serve`` process: start it (optionally detached), wait for /health, stop it.

A started server writes ``server.json`` (argv, pid, log path, URL, times) into its state
directory so later ``claimcheck measure --attach DIR`` calls can use it and record it.
It also records the process's identity (start time in clock ticks since boot and command
line, from ``/proc/PID``) and a launch marker (:data:`LAUNCH_ENV`, a random token set in the
server's environment) so that ``claimcheck stop`` signals only the ``vllm serve`` process
group it started, never another process that later got the same pid or that server.json
was edited to name.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from claimcheck.config.configfiles import load_vllm_env
from claimcheck.config.engines import MULTICAST_OFF, multicast_refusal
from claimcheck.config.vllmargv import serve_args
from claimcheck.files.errors import InputError
from claimcheck.files.readers import read_json

START_HINT = ("start one with `claimcheck serve --engine NAME --state DIR` "
              "(add --no-wait to return before it is healthy)")

LAUNCH_ENV = "CLAIMCHECK_SERVER_LAUNCH"
"""Environment variable claimcheck sets, to a fresh random token, in a server it launches."""

CAUSE = re.compile(r"error:|Error|EngineDeadError|out of memory|unrecognized arguments|"
                   r"No such file|not supported|Exception", re.IGNORECASE)


class ServerError(RuntimeError):
    """The server did not come up or died; ``cause`` is the log line that says why."""

    def __init__(self, msg: str, log_tail: str = "", cause: str | None = None) -> None:
        self.log_tail = log_tail
        self.cause = cause
        text = msg + (f"\ncause (from the server log): {cause}" if cause else "")
        if log_tail:
            text += "\n--- server log tail ---\n" + log_tail
        super().__init__(text)


@dataclass
class Server:
    """A vLLM server this project started (or attached to). Times are Unix seconds."""

    base_url: str
    log_path: str
    argv: list[str] = field(default_factory=list)
    pid: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    started_unix_s: float | None = None
    healthy_unix_s: float | None = None
    healthy_log_offset: int | None = None
    engine: str | None = None
    proc_start_ticks: int | None = None
    """Start time of ``pid`` in clock ticks since boot (/proc/PID/stat field 22)."""
    proc_cmdline: list[str] | None = None
    """Command line of ``pid`` as the kernel reports it (/proc/PID/cmdline)."""
    launch_marker: str | None = None
    """The token set as :data:`LAUNCH_ENV` in the environment of the process it launched."""
    _proc: subprocess.Popen | None = field(default=None, repr=False, compare=False)

    def alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        if self.pid is None:
            return True  # attached by URL only: judge by /health
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        # a zombie child still "exists": look at its state
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
            return stat.split(")")[-1].split()[0] != "Z"
        except OSError:
            return True

    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def healthy(self, timeout_s: float = 5.0) -> bool:
        try:
            with urllib.request.urlopen(self.base_url + "/health", timeout=timeout_s) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def log_size(self) -> int:
        try:
            return Path(self.log_path).stat().st_size
        except OSError:
            return 0

    def read_log(self, start: int = 0, end: int | None = None) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                data = f.read() if end is None else f.read(max(0, end - start))
            return data.decode(errors="replace")
        except OSError:
            return ""

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.read_log().splitlines()[-n:])

    def cause(self) -> str | None:
        """The last log line that names an error, if any."""
        for line in reversed(self.read_log().splitlines()):
            if CAUSE.search(line):
                return line.strip()
        return None

    def _plain(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if not f.name.startswith("_")}

    def save(self, state_dir: Path) -> Path:
        state_dir.mkdir(parents=True, exist_ok=True)
        d = self._plain()
        p = state_dir / "server.json"
        p.write_text(json.dumps(d, indent=1))
        return p

    @classmethod
    def load(cls, state_dir: Path) -> Server:
        """The server recorded in ``state_dir/server.json``; :class:`InputError` naming the
        directory (with the command that makes one) when there is none."""
        d = Path(state_dir)
        if not d.is_dir():
            what = "is not a directory" if d.exists() else "does not exist"
            raise InputError(str(d), f"server state directory {what}; {START_HINT}")
        p = d / "server.json"
        if not p.is_file():
            raise InputError(str(d), f"no server.json here (no server was started with this "
                             f"--state); {START_HINT}")
        data = read_json(p)
        names = {f.name for f in fields(cls) if not f.name.startswith("_")}
        if not isinstance(data, dict):
            raise InputError(str(p), "top level is not a JSON object")
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(str(p), f"unknown keys {unknown}; not written by claimcheck serve")
        for key in ("base_url", "log_path"):
            if not isinstance(data.get(key), str):
                raise InputError(str(p), "required, a string", key=key)
        for key in ("pid", "proc_start_ticks"):
            v = data.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise InputError(str(p), f"must be a positive integer, got {v!r}", key=key)
        if data.get("launch_marker") is not None and not isinstance(data["launch_marker"], str):
            raise InputError(str(p), "must be a string", key="launch_marker")
        for key in ("argv", "proc_cmdline"):
            v = data.get(key)
            if v is not None and not (isinstance(v, list)
                                      and all(isinstance(x, str) for x in v)):
                raise InputError(str(p), "must be a list of strings", key=key)
        return cls(**data)

    def to_record(self) -> dict[str, Any]:
        d = self._plain()
        d["command"] = shlex.join(self.argv) if self.argv else None
        return d


def start(argv: list[str], log_path: Path, *, env: dict[str, str] | None = None,
          base_url: str, engine: str | None = None) -> Server:
    """Start ``argv`` in a new process session, stdout and stderr to ``log_path``.

    A ``vllm serve`` argv is first read as vLLM reads it, with the environment the server
    gets (this process's, ``env``, then :data:`MULTICAST_OFF`, which the server's record
    keeps) and the one before the guard's settings, and refused (:class:`InputError`,
    nothing started, no log made) when it could use NVLink multicast
    (:func:`claimcheck.config.engines.multicast_refusal`, the ``VLLM_*`` variables
    config/vllm_env.yaml allows)."""
    marker = secrets.token_hex(16)
    before = {**os.environ, **(env or {})}
    env = {**(env or {}), **MULTICAST_OFF}  # NVLink multicast off in every engine we start
    full_env = {**os.environ, **env, LAUNCH_ENV: marker}
    args = serve_args(argv)
    why = (multicast_refusal(args, full_env, before=before, allowed=load_vllm_env())
           if args is not None else None)
    if why:
        raise InputError("the vllm serve command", f"refusing to start: {why}",
                         key=f"engines.{engine}" if engine else None)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=full_env,
                                start_new_session=True)
    ident = identity_after_exec(proc.pid) or {}
    return Server(base_url=base_url, log_path=str(log_path), argv=list(argv), pid=proc.pid,
                  env=dict(env), started_unix_s=time.time(), engine=engine,
                  proc_start_ticks=ident.get("start_ticks"), proc_cmdline=ident.get("cmdline"),
                  launch_marker=marker, _proc=proc)


def identity_after_exec(pid: int, wait_s: float = 2.0, poll_s: float = 0.01
                        ) -> dict[str, Any] | None:
    """:func:`proc_identity` of a process just started, once the kernel reports its command
    line: right after ``Popen`` returns (vfork resumes the parent at the child's execve),
    /proc/PID/cmdline can still read empty on a busy machine, and an empty record would
    make ``stop`` refuse the server it started. Polls up to ``wait_s`` s; what it last read
    (or None, if the process is gone) after that."""
    deadline = time.monotonic() + wait_s
    ident = proc_identity(pid)
    while ident is not None and not ident["cmdline"] and time.monotonic() < deadline:
        time.sleep(poll_s)
        ident = proc_identity(pid)
    return ident


def proc_identity(pid: int) -> dict[str, Any] | None:
    """{"start_ticks", "cmdline"} of a live process from /proc, or None if it is gone.

    Start ticks: field 22 of /proc/PID/stat (after the parenthesised command name, which
    may itself hold spaces or parentheses).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    after = stat[stat.rindex(")") + 2:].split()  # fields 3.. of the stat line
    return {"start_ticks": int(after[19]),
            "cmdline": [x.decode(errors="replace") for x in raw.split(b"\0") if x]}


def is_vllm_serve(argv: list[str]) -> bool:
    """Whether ``argv`` runs ``vllm serve``: the ``vllm`` script (``vllm serve`` or
    ``python .../vllm serve``) or ``python -m vllm.entrypoints.cli.main serve``."""
    return serve_args(argv) is not None


def proc_env_value(pid: int, key: str) -> str | None:
    """The value of ``key`` in the environment ``pid`` was started with (/proc/PID/environ),
    or None when it has none; OSError when it cannot be read."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep and k.decode(errors="replace") == key:
            return v.decode(errors="replace")
    return None


def not_ours(s: Server) -> str | None:
    """Why the process now at ``s.pid`` is not the ``vllm serve`` process group this project
    started (None if it is, or if it is gone): the record must hold its start time, command
    line and launch marker, and name a ``vllm serve`` command; the live process must have
    that start time and command line, carry the marker in its environment and lead its
    process group."""
    if s.pid is None:
        return None
    old = "(written by an older claimcheck), so it cannot be checked"
    if s.proc_start_ticks is None:
        return f"server.json records no start time for pid {s.pid} {old}"
    if s.proc_cmdline is None:
        return f"server.json records no command line for pid {s.pid} {old}"
    if s.launch_marker is None:
        return f"server.json records no launch marker for pid {s.pid} {old}"
    if not is_vllm_serve(s.argv):
        return (f"the recorded command {shlex.join(s.argv)[:80]!r} is not `vllm serve`: "
                "claimcheck stops only the vLLM servers it starts")
    ident = proc_identity(s.pid)
    if ident is None:
        return None  # gone: nothing will be signalled
    if ident["start_ticks"] != s.proc_start_ticks:
        return (f"pid {s.pid} started at tick {ident['start_ticks']}, the recorded server at "
                f"tick {s.proc_start_ticks}: it is another process")
    if ident["cmdline"] != s.proc_cmdline:
        return (f"pid {s.pid} runs {shlex.join(ident['cmdline'])[:80]!r}, not the recorded "
                f"{shlex.join(s.proc_cmdline)[:80]!r}")
    if not is_vllm_serve(ident["cmdline"]):
        return f"pid {s.pid} runs {shlex.join(ident['cmdline'])[:80]!r}, not `vllm serve`"
    try:
        mark = proc_env_value(s.pid, LAUNCH_ENV)
    except OSError as e:
        return f"the environment of pid {s.pid} cannot be read ({e.strerror})"
    if mark != s.launch_marker:
        return (f"pid {s.pid} does not carry the launch marker {LAUNCH_ENV} recorded in "
                "server.json: claimcheck did not start it")
    try:
        group = os.getpgid(s.pid)
    except OSError:
        return None  # gone meanwhile
    if group != s.pid:
        return (f"pid {s.pid} does not lead a process group (its group is {group}), so "
                "its group cannot be the server's")
    return None


def wait_healthy(s: Server, timeout_s: float, poll_s: float = 2.0,
                 first_poll_s: float = 0.05) -> Server:
    """Block until GET /health answers 200; raise :class:`ServerError` with the log tail
    if the process exits first or ``timeout_s`` passes. The wait between asks starts at
    ``first_poll_s`` and doubles up to ``poll_s`` (s): a server is seen at most as late
    again as it took to start (a stand-in up in 0.3 s is seen by 0.35 s, not at 2 s), never
    more than ``poll_s`` late (a 5-minute engine start is asked every 2 s), and the time
    limit ends the wait when it passes, not at the next ask after it."""
    t_end = time.monotonic() + timeout_s
    wait = min(first_poll_s, poll_s)
    while True:
        if not s.alive():
            rc = s.returncode()
            raise ServerError(f"vllm serve exited (code {rc}) before /health answered",
                              s.tail(), s.cause())
        if s.healthy():
            s.healthy_unix_s = time.time()
            s.healthy_log_offset = s.log_size()
            return s
        if time.monotonic() > t_end:
            raise ServerError(f"no answer from {s.base_url}/health within {timeout_s:g} s",
                              s.tail(), s.cause())
        time.sleep(min(wait, max(t_end - time.monotonic(), 0.0) + 0.01))  # not past the end
        wait = min(2 * wait, poll_s)


def stop(s: Server, grace_s: float = 30.0, *, source: str = "server.json",
         kill_wait_s: float = 5.0) -> bool:
    """SIGTERM the server's process group, then SIGKILL after ``grace_s`` (s); True when
    the process is gone (or there was none), False when it survived both.

    A server read back from a state file (not this process's child) is signalled only if
    :func:`not_ours` finds nothing wrong; otherwise :class:`InputError` naming ``source``
    is raised and nothing is signalled.
    """
    if s.pid is None:
        return True
    if s._proc is None:
        why = not_ours(s)
        if why:
            raise InputError(source, f"refusing to stop: {why}; nothing was signalled",
                             key="pid")
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, kill_wait_s)):
        try:
            os.killpg(s.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        t_end = time.monotonic() + wait
        while time.monotonic() < t_end and s.alive():
            time.sleep(0.2)
        if not s.alive():
            break
    if s._proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            s._proc.wait(timeout=5)
    return not s.alive()
