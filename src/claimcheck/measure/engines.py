"""The ``vllm serve`` command an engine configuration makes. The configurations themselves
(:class:`Engine`, :func:`load_engines`) live in :mod:`claimcheck.core.engines`, re-exported
here for the measuring side."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from claimcheck.core.engines import Engine, get_engine, load_engines  # noqa: F401
from claimcheck.core.paths import ROOT


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


def server_argv(e: Engine, *, vllm: list[str], host: str, port: int,
                tokenizer_dir: str | None, root: Path = ROOT) -> list[str]:
    """The exact ``vllm serve`` argv for an engine config. Binds ``host`` only."""
    argv = [*vllm, "serve", e.model_path(root), "--host", host, "--port", str(port),
            "--served-model-name", e.served_model_name]
    if e.dummy:
        argv += ["--load-format", "dummy"]
    else:
        argv += ["--revision", e.hub_repo_revision[1]]  # type: ignore[index]
    if tokenizer_dir:
        argv += ["--tokenizer", tokenizer_dir]
    opts: list[tuple[str, Any]] = [
        ("--dtype", None if e.dtype == "auto" else e.dtype),
        ("--quantization", e.quantization),
        ("--kv-cache-dtype", None if e.kv_cache_dtype == "auto" else e.kv_cache_dtype),
        ("--mamba-ssm-cache-dtype",
         None if e.mamba_ssm_cache_dtype == "auto" else e.mamba_ssm_cache_dtype),
        ("--max-num-seqs", e.max_num_seqs),
        ("--max-model-len", e.max_model_len),
        ("--gpu-memory-utilization", e.gpu_memory_utilization),
        ("--tensor-parallel-size",
         e.tensor_parallel_size if e.tensor_parallel_size > 1 else None),
    ]
    for flag, val in opts:
        if val is not None:
            argv += [flag, str(val)]
    if e.prefix_caching is True:
        argv.append("--enable-prefix-caching")
    elif e.prefix_caching is False:
        argv.append("--no-enable-prefix-caching")
    if e.enforce_eager:
        argv.append("--enforce-eager")
    return argv + list(e.extra_args)
