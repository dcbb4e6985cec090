"""Engine configurations (``config/engines.yaml``) as data: what each engine serves, in which
dtypes, with which limits. The ``vllm serve`` command they make is
:mod:`claimcheck.measure.engines`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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


MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
"""Set in every engine's environment: NVLink multicast off in NCCL, torch's symmetric memory
and NVSHMEM. The GPU hosts this project measures on forbid multicast (a program using it can
put the host's shared GPUs out of service)."""

FUSION_OFF = '{"pass_config":{"fuse_allreduce_rms":false}}'
"""What ``--compilation-config`` must carry on a TP > 1 engine: vLLM 0.26 turns on FlashInfer's
all-reduce + RMSNorm fusion there by default, and its MNNVL workspace may call
``cuMulticastCreate``."""


def _compilation_config(args: Sequence[str]) -> str | None:
    """The value given to ``--compilation-config`` (``-O``) in ``args``, or None."""
    for i, a in enumerate(args):
        for flag in ("--compilation-config", "-O"):
            if a == flag and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(flag + "="):
                return a[len(flag) + 1:]
    return None


def multicast_refusal(tensor_parallel_size: int, extra_args: Sequence[str],
                      env: Mapping[str, str]) -> str | None:
    """Why an engine configuration could use NVLink multicast, or None when it cannot (pure).

    Any engine: no ``mnnvl`` anywhere in its arguments or environment, and no environment
    that turns :data:`MULTICAST_OFF` back on. TP > 1: ``--compilation-config`` with
    ``pass_config.fuse_allreduce_rms`` false (:data:`FUSION_OFF`)."""
    for text in (*extra_args, *env.values()):
        if "mnnvl" in str(text).lower():
            return f"{text!r} names the mnnvl all-reduce backend, which uses NVLink multicast"
    for k, v in MULTICAST_OFF.items():
        if k in env and str(env[k]) != v:
            return f"env {k}={env[k]!r} turns NVLink multicast back on (it must stay {v!r})"
    if tensor_parallel_size <= 1:
        return None
    raw = _compilation_config(extra_args)
    try:
        cfg = json.loads(raw) if raw is not None else None
    except json.JSONDecodeError:
        cfg = None
    fused = (cfg.get("pass_config") or {}).get("fuse_allreduce_rms", True) \
        if isinstance(cfg, dict) else True
    if fused is not False:
        return (f"tensor_parallel_size {tensor_parallel_size} needs extra_args "
                f"['--compilation-config', '{FUSION_OFF}']: vLLM's default all-reduce + "
                "RMSNorm fusion may create an NVLink multicast object"
                + ("" if raw is None else f" (given: {raw})"))
    return None


def load_engines(path: str | Path | None = None) -> dict[str, Engine]:
    """Every engine of ``path`` (default config/engines.yaml), validated; an engine that could
    use NVLink multicast (:func:`multicast_refusal`) is refused naming it."""
    p = Path(path) if path else CONFIG / "engines.yaml"
    data = load_validated(p, "engines")
    out = {}
    for name, d in data["engines"].items():
        d = dict(d)
        d["extra_args"] = tuple(d.get("extra_args", ()))
        why = multicast_refusal(int(d.get("tensor_parallel_size") or 1), d["extra_args"],
                                d.get("env") or {})
        if why:
            raise InputError(str(p), why, key=f"engines.{name}")
        out[name] = Engine(name=name, **d)
    return out


def get_engine(name: str, path: str | Path | None = None) -> Engine:
    src = str(path or CONFIG / "engines.yaml")
    engines = load_engines(path)
    if name not in engines:
        raise InputError(src, f"unknown engine {name!r}; known: {', '.join(sorted(engines))}",
                         key="engines")
    return engines[name]
