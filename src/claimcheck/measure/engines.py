"""How vLLM is called here. The engine configurations (:class:`Engine`, :func:`load_engines`)
and the exact ``vllm serve`` command each makes (:func:`server_argv`, checked by
:func:`check_engine`) live in :mod:`claimcheck.core.engines`, re-exported here for the
measuring side."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

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
    """The interpreter that runs vLLM: the ``-m`` form's python, else the script's shebang."""
    if len(vllm) > 1 and vllm[1] == "-m":
        return vllm[0]
    try:
        first = Path(vllm[0]).read_text(errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return sys.executable
    if first.startswith("#!") and "python" in first:
        return first[2:].strip().split()[0]
    return sys.executable
