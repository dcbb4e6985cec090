"""Engine configurations (``config/engines.yaml``) as data: what each engine serves, in which
dtypes, with which limits. The ``vllm serve`` command they make is
:mod:`claimcheck.measure.engines`."""

from __future__ import annotations

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
