"""Engine configurations (``config/engines.yaml``) as data: what each engine serves, in which
dtypes, with which limits. The exact ``vllm serve`` command each makes
(:func:`server_argv`) and the multicast guard on it (:func:`check_engine`) are here too, so
that every reader of an engine checks what vLLM would run."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimcheck.config.vllmargv import UnreadableArgv, read_serve_args
from claimcheck.config.vllmenv import (  # MULTICAST_OFF is read here from its home
    MULTICAST_OFF,
    env_sizes,
    inherited_refusal,
    unknown_refusal,
)
from claimcheck.files.errors import InputError
from claimcheck.files.paths import ROOT


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
    int8_activations: str | None = None
    """The layers whose GEMMs take int8 activations ("mlp"); None: none. Said of an engine
    with no run (the article's RTX 3090 server) so a carried prediction prices its prefill
    at int8; a run's own start log says what its engine built (Run.int8_activations)."""
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
    vllm_version: str | None = None
    """The vLLM release this engine pins (``measure`` and ``serve`` refuse another); None
    takes the vLLM the engine's python has."""
    speculative: dict[str, Any] | None = None
    """Speculative decoding (:func:`speculative_config`): ``method``,
    ``num_speculative_tokens`` (k) and, for benchmarking, ``acceptance`` forced as
    ``{"length": L}`` (mean tokens kept per verify, 1 to k+1) or ``{"rates": [...]}`` (one
    unconditional rate per drafted position, non-increasing); no ``acceptance``: the
    weights decide. None: no drafter."""

    @property
    def draft_tokens(self) -> int:
        """k, the tokens drafted per verify (0 without a drafter)."""
        return int(self.speculative["num_speculative_tokens"]) if self.speculative else 0

    @property
    def verify_rows(self) -> int:
        """Positions each stream verifies per step: k + 1 (1 without a drafter)."""
        return self.draft_tokens + 1

    def acceptance_words(self) -> str | None:
        """How acceptance was set, for every table and figure of the engine's runs: None
        without a drafter."""
        return acceptance_words(self.speculative)

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


FUSION_OFF = '{"pass_config":{"fuse_allreduce_rms":false}}'
"""What ``--compilation-config`` must carry on a TP > 1 engine: vLLM 0.26 turns on FlashInfer's
all-reduce + RMSNorm fusion there by default, and its MNNVL workspace may call
``cuMulticastCreate``."""


def acceptance_words(spec: Mapping[str, Any] | None) -> str | None:
    """``"MTP k=3, acceptance forced at 2.5 tokens kept per verify"`` and the like (pure);
    None without a drafter."""
    if not spec:
        return None
    k = int(spec["num_speculative_tokens"])
    head = f"{str(spec['method']).upper()} k={k} ({k + 1} rows verified per stream)"
    acc = spec.get("acceptance")
    if not acc:
        return f"{head}, acceptance left to the weights"
    if "length" in acc:
        return f"{head}, acceptance forced at {float(acc['length']):g} tokens kept per verify"
    rates = ", ".join(f"{float(r):g}" for r in acc["rates"])
    return f"{head}, acceptance forced at per-position rates [{rates}]"


def speculative_config(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON vLLM's ``--speculative-config`` takes for an engine's ``speculative`` field
    (pure): forced acceptance is vLLM's synthetic rejection sampling (vLLM >= 0.26
    ``config/speculative.py``: ``rejection_sample_method: synthetic`` with
    ``synthetic_acceptance_length`` or ``synthetic_acceptance_rates``)."""
    out: dict[str, Any] = {"method": spec["method"],
                           "num_speculative_tokens": int(spec["num_speculative_tokens"])}
    acc = spec.get("acceptance")
    if acc:
        out["rejection_sample_method"] = "synthetic"
        if "length" in acc:
            out["synthetic_acceptance_length"] = float(acc["length"])
        else:
            out["synthetic_acceptance_rates"] = [float(r) for r in acc["rates"]]
    return out


def speculative_refusal(spec: Mapping[str, Any] | None,
                        extra_args: Sequence[str]) -> str | None:
    """Why an engine's ``speculative`` field cannot be served as written, or None (pure):
    the bounds vLLM itself checks (length in [1, k+1]; k rates in [0, 1], non-increasing),
    said before a start of minutes, and no second ``--speculative-config`` in extra_args."""
    if any(str(a).split("=")[0] == "--speculative-config" for a in extra_args):
        return ("extra_args sets --speculative-config; put the drafter in the engine's "
                "speculative field (method, num_speculative_tokens, acceptance)")
    if not spec:
        return None
    k = int(spec["num_speculative_tokens"])
    acc = spec.get("acceptance") or {}
    if "length" in acc and not 1.0 <= float(acc["length"]) <= k + 1:
        return (f"speculative.acceptance.length {acc['length']} is outside [1, {k + 1}] "
                f"(1 keeps only the verified token, {k + 1} accepts all {k} drafts)")
    if "rates" in acc:
        rates = [float(r) for r in acc["rates"]]
        if len(rates) != k:
            return (f"speculative.acceptance.rates has {len(rates)} entries; "
                    f"num_speculative_tokens is {k} (one rate per drafted position)")
        if any(not 0.0 <= r <= 1.0 for r in rates):
            return f"speculative.acceptance.rates {rates} has a rate outside [0, 1]"
        if any(b > a for a, b in zip(rates, rates[1:], strict=False)):
            return f"speculative.acceptance.rates {rates} must be non-increasing"
    return None


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
    if e.speculative:
        argv += ["--speculative-config",
                 json.dumps(speculative_config(e.speculative), separators=(",", ":"))]
    return argv + list(e.extra_args)


ENGINE_ENV_PREFIXES = ("VLLM_", "NCCL_", "NVSHMEM_", "TORCH_", "FLASHINFER_", "TRTLLM_",
                       "CUDA_", "MNNVL")
"""Environment variables of the server's whole environment read for ``mnnvl`` (those vLLM,
NCCL, NVSHMEM, torch and FlashInfer read); an engine's own ``env`` is read whole."""


def server_env(engine_env: Mapping[str, str],
               base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a started server gets: ``base`` (default this process's), the
    engine's ``env``, then :data:`MULTICAST_OFF` over both."""
    return {**(os.environ if base is None else base), **engine_env, **MULTICAST_OFF}


def env_refusal(engine_env: Mapping[str, str]) -> str | None:
    """Why an engine's own ``env`` asks for NVLink multicast, or None (pure): a value
    against :data:`MULTICAST_OFF` (which :func:`server_env` would override, but an engine
    file that asks for it is wrong)."""
    for k, v in engine_env.items():
        if "mnnvl" in f"{k}={v}".lower():
            return (f"env {k}={v!r} names the mnnvl all-reduce backend, which uses NVLink "
                    "multicast")
    for k, v in MULTICAST_OFF.items():
        if k in engine_env and str(engine_env[k]) != v:
            return f"env {k}={engine_env[k]!r} turns NVLink multicast back on (it must stay {v!r})"
    return None


def multicast_refusal(args: Sequence[str], env: Mapping[str, str], *,
                      before: Mapping[str, str] | None = None,
                      allowed: Mapping[str, str] | None = None) -> str | None:
    """Why the ``vllm serve`` arguments ``args`` (those after ``serve``) run with ``env``
    (the server's whole environment) could use NVLink multicast, or None (pure).

    Read as vLLM reads them (:func:`claimcheck.config.vllmargv.read_serve_args`: last
    occurrence wins, ``=`` and short forms); a guarded option that cannot be read for
    certain is refused. Any engine: no ``mnnvl`` in an argument or in a variable of
    :data:`ENGINE_ENV_PREFIXES`.
    An engine over more than one GPU (any parallel size above 1, ``VLLM_DP_SIZE`` in
    ``env`` included): the compilation config vLLM keeps has
    ``pass_config.fuse_allreduce_rms`` false, ``env`` holds :data:`MULTICAST_OFF`, ``before``
    (the environment before the guard's settings, when given) asks for none of them
    otherwise (:func:`claimcheck.config.vllmenv.inherited_refusal`), and every ``VLLM_*``
    variable of ``env`` is one the guard knows or ``allowed`` names
    (:func:`claimcheck.config.vllmenv.unknown_refusal`; None allows none)."""
    for a in args:
        if "mnnvl" in str(a).lower():
            return f"{a!r} names the mnnvl all-reduce backend, which uses NVLink multicast"
    for k, v in env.items():
        if k.startswith(ENGINE_ENV_PREFIXES) and "mnnvl" in f"{k}={v}".lower():
            return (f"env {k}={v!r} names the mnnvl all-reduce backend, which uses NVLink "
                    "multicast")
    try:
        view = read_serve_args(args)
    except UnreadableArgv as e:
        return f"the vllm serve command cannot be read for certain: {e}"
    env_multi, why = env_sizes(env)
    if why:
        return why
    multi = view.multi_gpu() + env_multi
    if not multi:
        return None
    spans = ", ".join(repr(w) for w in multi)
    comp = view.compilation_config
    fused = True
    if comp is not None:
        pc = comp[0].get("pass_config")
        fused = pc.get("fuse_allreduce_rms", True) if isinstance(pc, dict) else True
    if fused is not False:
        return (f"{spans} runs the engine on more than one GPU, which needs "
                "pass_config.fuse_allreduce_rms false in the compilation config vLLM keeps "
                f"(its last --compilation-config): add extra_args ['--compilation-config', "
                f"'{FUSION_OFF}'] after any other; vLLM's default all-reduce + RMSNorm "
                "fusion may create an NVLink multicast object"
                + ("" if comp is None else f" (vLLM would keep {comp[1]!r})"))
    for k, v in MULTICAST_OFF.items():
        if env.get(k) != v:
            return (f"{spans} runs the engine on more than one GPU, which needs {k}={v} in "
                    f"the server's environment (it has {env.get(k)!r})")
    return ((inherited_refusal(spans, before) if before is not None else None)
            or unknown_refusal(spans, env, allowed or {}))


def engine_refusal(e: Engine, base_env: Mapping[str, str] | None = None,
                   allowed: Mapping[str, str] | None = None) -> str | None:
    """Why an engine may not be served, measured or predicted, or None: its own ``env``
    (:func:`env_refusal`), then the exact ``vllm serve`` command it makes and the
    environment a server gets from ``base_env`` (default this process's) and its ``env``
    (:func:`multicast_refusal`, ``allowed`` the ``VLLM_*`` variables allowed on a multi-GPU
    engine), then a tensor-parallel size in that command other than its
    ``tensor_parallel_size`` (its runs would record another layout than they ran)."""
    why = env_refusal(e.env) or speculative_refusal(e.speculative, e.extra_args)
    if why:
        return why
    args = server_argv(e, vllm=["vllm"], host="127.0.0.1", port=8000, tokenizer_dir=None)[2:]
    base = os.environ if base_env is None else base_env
    why = multicast_refusal(args, server_env(e.env, base), before={**base, **e.env},
                            allowed=allowed)
    if why:
        return why
    view = read_serve_args(args)
    tp = view.size("tensor_parallel_size")
    if tp != e.tensor_parallel_size:
        words = view.sizes["tensor_parallel_size"][1]
        return (f"extra_args {words!r} sets the tensor-parallel size to {tp} but "
                f"tensor_parallel_size is {e.tensor_parallel_size}: its runs would record a "
                "layout they did not run; set tensor_parallel_size and drop the option from "
                "extra_args")
    return None


def check_engine(e: Engine, source: str, allowed: Mapping[str, str] | None = None) -> Engine:
    """``e``, or :class:`InputError` naming ``source`` and the engine with
    :func:`engine_refusal`'s reason (``allowed``: the ``VLLM_*`` variables
    ``config/vllm_env.yaml`` allows on a multi-GPU engine). The one check ``serve``,
    ``measure``, ``predict`` and :func:`claimcheck.config.configfiles.load_engines` apply."""
    why = engine_refusal(e, allowed=allowed)
    if why:
        raise InputError(source, why, key=f"engines.{e.name}")
    return e


def engines_from_data(data: dict[str, Any], source: str,
                      allowed: Mapping[str, str] | None = None) -> dict[str, Engine]:
    """Every engine of a validated engines.yaml (``data``, read from ``source``); an engine
    that could use NVLink multicast or whose command sets another layout
    (:func:`check_engine`) is refused naming it."""
    out = {}
    for name, d in data["engines"].items():
        d = dict(d)
        d["extra_args"] = tuple(d.get("extra_args", ()))
        out[name] = check_engine(Engine(name=name, **d), source, allowed)
    return out
