"""Engine configurations (``config/engines.yaml``) and the ``vllm serve`` command they make."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimcheck.core.errors import InputError
from claimcheck.core.paths import CONFIG, ROOT
from claimcheck.core.yamlcfg import load_validated


@dataclass(frozen=True)
class Engine:
    name: str
    description: str
    model: str
    weights: str
    served_model_name: str
    tokenizer: str = "synthetic"
    weight_format: str = "bf16"
    quantization: str | None = None
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    prefix_caching: bool | None = None
    max_num_seqs: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    enforce_eager: bool = False
    tensor_parallel_size: int = 1
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    @property
    def dummy(self) -> bool:
        """True when the engine serves random weights (``--load-format dummy``)."""
        return self.weights == "dummy"

    @property
    def hub_repo_revision(self) -> tuple[str, str] | None:
        if self.dummy:
            return None
        repo, rev = self.weights.removeprefix("hub:").split("@")
        return repo, rev

    def model_path(self, root: Path = ROOT) -> str:
        """Local directory for dummy weights, else the hub repo id."""
        return str(root / self.model) if self.dummy else self.model

    def config_json(self, root: Path = ROOT) -> Path | None:
        """The config.json served, when it is local (dummy weights)."""
        return root / self.model / "config.json" if self.dummy else None


def load_engines(path: str | Path | None = None) -> dict[str, Engine]:
    p = Path(path) if path else CONFIG / "engines.yaml"
    data = load_validated(p, "engines")
    out = {}
    for name, d in data["engines"].items():
        d = dict(d)
        d["extra_args"] = tuple(d.get("extra_args", ()))
        out[name] = Engine(name=name, **d)
    return out


def get_engine(name: str, path: str | Path | None = None) -> Engine:
    src = str(path or CONFIG / "engines.yaml")
    engines = load_engines(path)
    if name not in engines:
        raise InputError(src, f"unknown engine {name!r}; known: {', '.join(sorted(engines))}",
                         key="engines")
    return engines[name]


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
