"""How vLLM is called here: its CLI and the interpreter that runs it. The engine
configurations and the exact ``vllm serve`` command each makes live in
:mod:`claimcheck.config.engines` (:class:`~claimcheck.config.engines.Engine`,
:func:`~claimcheck.config.configfiles.load_engines`, :func:`~claimcheck.config.engines.server_argv`,
checked by :func:`~claimcheck.config.engines.check_engine`)."""

from __future__ import annotations

import shutil
import sys


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
