"""How vLLM is called here. The engine configurations (:class:`Engine`, :func:`load_engines`)
and the exact ``vllm serve`` command each makes (:func:`server_argv`, checked by
:func:`check_engine`) live in :mod:`claimcheck.core.engines`, re-exported here for the
measuring side."""

from __future__ import annotations

import shutil
import sys

from claimcheck.core.engines import (  # noqa: F401
    Engine,
    check_engine,
    get_engine,
    load_engines,
    server_argv,
)


def vllm_command() -> list[str]:
    """How to call vLLM's CLI here: ``vllm`` on PATH, else ``python -m`` of its CLI module."""
    exe = shutil.which("vllm")
    return [exe] if exe else [sys.executable, "-m", "vllm.entrypoints.cli.main"]


def engine_python(vllm: list[str]) -> str:
    """The interpreter that runs vLLM, as the preflight finds it
    (:func:`claimcheck.measure.preflight.interpreter`: the ``-m`` form's python, a ``#!``
    python, ``#!/usr/bin/env python3`` resolved on PATH, pip's long-path ``exec`` form);
    this python when the script names none (a wrapper or a stand-in)."""
    from claimcheck.measure.preflight import interpreter, script_head
    cmd = interpreter(vllm, script_head(vllm[0]) if len(vllm) == 1 or vllm[1] != "-m" else [])
    if not cmd:
        return sys.executable
    if len(cmd) == 2:  # /usr/bin/env python3: the python3 env would run
        return shutil.which(cmd[1]) or sys.executable
    return cmd[0]
