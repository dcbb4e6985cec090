"""How a step's load client is run: one process per step, or one vLLM benchmark worker.

``run_client(argv, log, timeout_s)`` returns the client's exit code (None on a timeout).
A :class:`BenchWorker` runs ``vllm bench serve`` steps in one long-lived process
(:mod:`claimcheck.measure.benchworker`), saving vLLM's import (~22 s) per step; the
recorded command of each step stays the exact ``vllm bench serve`` argv it is equivalent to.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

TIMEOUT_RULE = ("300 s + waves x (input_len / 10 + output_len / 1) s, waves = "
                "ceil(requests / streams): start-up, then every wave prefilled at 10 tok/s and "
                "decoded at 1 tok/s per stream, far below any card")


def default_timeout_s(requests: int, streams: int, input_len: int, output_len: int) -> float:
    """The client's time limit for one step (s) when none is given: :data:`TIMEOUT_RULE`.

    A server that accepts requests and never answers then fails the step, never hangs it.
    """
    waves = math.ceil(requests / max(1, streams))
    return 300.0 + waves * (input_len / 10 + output_len / 1)


PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal a process gets when the thread that started it dies."""


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process dies, however it
    dies (SIGKILL included, which no handler sees): Linux's ``prctl(PR_SET_PDEATHSIG)``,
    kept across the exec. A parent already gone by then kills the child at once. None
    where there is no prctl (not Linux): the signal handlers
    (:func:`claimcheck.measure.runner.raise_on_signals`) still stop the client on SIGTERM,
    SIGINT and SIGHUP."""
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()

    def preexec() -> None:  # in the child, between fork and exec
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or (
                os.getppid() != parent):
            os.kill(os.getpid(), signal.SIGKILL)
    return preexec


def run_subprocess(argv: list[str], log: Path, timeout_s: float | None) -> int | None:
    """Run ``argv`` with its output in ``log``; None when it outlives ``timeout_s``. The
    client never outlives this process (:func:`die_with_parent`); an exception here (the
    signal handlers' :class:`~claimcheck.measure.runner.Interrupted`) kills it first."""
    with open(log, "ab") as f:
        try:
            return subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout_s,
                                  preexec_fn=die_with_parent()).returncode
        except subprocess.TimeoutExpired:
            return None


class BenchWorker:
    """A ``python -m claimcheck.measure.benchworker`` process under vLLM's interpreter."""

    def __init__(self, python: str, env: dict[str, str] | None = None,
                 start_timeout_s: float = 300) -> None:
        self.python = python
        self.env = env
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.steps = 0

    def _start(self, log: Path) -> None:
        src = str(Path(__file__).resolve().parents[2])
        env = dict(self.env or os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        with open(log, "ab") as f:
            self.proc = subprocess.Popen(
                [self.python, "-m", "claimcheck.measure.benchworker"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=f, text=True, env=env,
                preexec_fn=die_with_parent())
        line = self._read_line(self.start_timeout_s)
        if not line or not json.loads(line).get("ready"):
            self.close()
            raise RuntimeError(f"the benchmark worker did not start (see {log})")

    def _read_line(self, timeout_s: float | None) -> str | None:
        assert self.proc and self.proc.stdout
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.proc.stdout], [], [], wait)
            if ready:
                line = self.proc.stdout.readline()
                return line or None
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def run(self, bench_args: list[str], log: Path, timeout_s: float | None) -> int | None:
        """One step: ``bench_args`` are the arguments after ``vllm bench serve``."""
        if self.proc is None or self.proc.poll() is not None:
            self._start(log)
        assert self.proc and self.proc.stdin
        self.proc.stdin.write(json.dumps({"argv": bench_args, "log": str(log)}) + "\n")
        self.proc.stdin.flush()
        line = self._read_line(timeout_s)
        if line is None:  # timed out or died: the next step gets a fresh worker
            self.close()
            return None
        self.steps += 1
        return int(json.loads(line).get("rc", 1))

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc = None


def bench_args(argv: list[str]) -> list[str] | None:
    """The arguments after ``bench serve`` in a ``vllm bench serve`` argv, else None."""
    for i in range(len(argv) - 1):
        if argv[i] == "bench" and argv[i + 1] == "serve":
            return argv[i + 2:]
    return None
