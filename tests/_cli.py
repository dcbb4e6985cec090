"""Run the CLI as a user does, on copies of real data: :func:`cli` calls the command's
``main`` in this process (the same code ``python -m claimcheck.cli`` runs, without a Python
start and import per call); :func:`cli_process` runs it as a real subprocess of this
checkout, for what only a process shows (its exit status from ``sys.exit``, a closed or
full stdout, signals). ``tests/test_cli.py`` runs both on the same commands and checks
they agree."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QWEN = ROOT / "data" / "raw" / "models" / "qwen3.8-27b" / "config.json"


def cli(*args: str, **kw: Any) -> subprocess.CompletedProcess:
    """``claimcheck ARGS`` run by :func:`claimcheck.cli.main` in this process
    (:func:`call_main`). Any keyword (``stdout=``, ...) runs :func:`cli_process` instead."""
    if kw:
        return cli_process(*args, **kw)
    from claimcheck.cli import main

    return call_main(main, ["claimcheck"], [str(a) for a in args])


def call_main(main: Callable[[list[str]], int], prog: list[str], argv: list[str],
              cwd: Path | None = None) -> subprocess.CompletedProcess:
    """A command's ``main(argv)`` run in this process (in ``cwd`` when given), its output
    and status as a subprocess would give them: stdout, stderr, the return code (an
    argparse refusal's 2, a traceback and 1 for an uncaught exception). The environment,
    the working directory and the SIGINT/SIGTERM handlers are restored afterwards
    (``--cards-file`` names itself in the environment for the processes it starts;
    ``measure`` turns the signals into its interruption)."""
    out, err, env, here = io.StringIO(), io.StringIO(), dict(os.environ), Path.cwd()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:  # argparse: --help (0) or a usage error (2)
                if e.code is None or isinstance(e.code, int):
                    rc = e.code or 0
                else:  # sys.exit("why"): the interpreter prints it and exits 1
                    print(e.code, file=sys.stderr)
                    rc = 1
            except Exception:  # what the interpreter does with an uncaught exception
                traceback.print_exc()
                rc = 1
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(env)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return subprocess.CompletedProcess([*prog, *argv], rc, out.getvalue(), err.getvalue())


def cli_process(*args: str, cwd: Path | None = None, **kw: Any
                ) -> subprocess.CompletedProcess:
    """``python -m claimcheck.cli ARGS`` with this checkout's package first on the path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CLAIMCHECK_ROOT": str(ROOT)}
    if "stdout" in kw:
        kw["stderr"] = subprocess.PIPE
    else:
        kw["capture_output"] = True
    return subprocess.run([sys.executable, "-m", "claimcheck.cli", *map(str, args)],
                          text=True, env=env, cwd=cwd, **kw)


def one_line_error(r: subprocess.CompletedProcess, code: int = 2) -> str:
    """The single stderr line of a refused command (no traceback), after checking the code."""
    assert r.returncode == code, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("claimcheck: error: "), r.stderr
    return lines[0]


def qwen_copy(tmp: Path, edit=None) -> Path:
    """A copy of the committed Qwen3.8 config.json, optionally edited (``edit(cfg)``)."""
    p = tmp / "config.json"
    if edit is None:
        shutil.copy(QWEN, p)
    else:
        cfg = json.loads(QWEN.read_text())
        edit(cfg)
        p.write_text(json.dumps(cfg, indent=1))
    return p


def make_stand_in(tmp_path):
    """A ``vllm`` stand-in in ``tmp_path/bin`` that leaves a mark when anything runs it (no
    server ever starts): its ``path`` (that folder first on PATH), ``exe`` and ``mark``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    mark = tmp_path / "vllm-ran"
    exe = bindir / "vllm"
    exe.write_text(f"#!/bin/sh\ntouch {mark}\nsleep 30\n")
    exe.chmod(0o755)
    return {"path": f"{bindir}{os.pathsep}{os.environ['PATH']}", "exe": str(exe),
            "mark": mark}
