"""The ``vllm serve`` process: start it (optionally detached), wait for /health, stop it.

A started server writes ``server.json`` (argv, pid, log path, URL, times) into its state
directory so later ``claimcheck measure --attach DIR`` calls can use it and record it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

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
        p = Path(state_dir) / "server.json"
        if not p.exists():
            raise FileNotFoundError(f"{p}: no server state here (start one with "
                                    "`claimcheck serve --detach --state DIR`)")
        return cls(**json.loads(p.read_text()))

    def to_record(self) -> dict[str, Any]:
        d = self._plain()
        d["command"] = shlex.join(self.argv) if self.argv else None
        return d


def start(argv: list[str], log_path: Path, *, env: dict[str, str] | None = None,
          base_url: str, engine: str | None = None) -> Server:
    """Start ``argv`` in a new process session, stdout and stderr to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=full_env,
                                start_new_session=True)
    return Server(base_url=base_url, log_path=str(log_path), argv=list(argv), pid=proc.pid,
                  env=dict(env or {}), started_unix_s=time.time(), engine=engine,
                  _proc=proc)


def wait_healthy(s: Server, timeout_s: float, poll_s: float = 2.0) -> Server:
    """Block until GET /health answers 200; raise :class:`ServerError` with the log tail
    if the process exits first or ``timeout_s`` passes."""
    t_end = time.monotonic() + timeout_s
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
        time.sleep(poll_s)


def stop(s: Server, grace_s: float = 30.0) -> None:
    """SIGTERM the server's process group, then SIGKILL after ``grace_s``."""
    if s.pid is None:
        return
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
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
