"""The environment an engine's server runs with, as the NVLink multicast guard reads it (pure).

Every server claimcheck starts gets :data:`MULTICAST_OFF` over its environment. An engine
over more than one GPU must also not be asked otherwise by the environment it would inherit
(the shell that runs ``claimcheck serve``/``measure``, or the engine's ``env``): vLLM 0.26.0
builds its standalone FlashInfer all-reduce on the tensor-parallel group when
``VLLM_ALLREDUCE_USE_FLASHINFER`` is non-zero, whatever the compilation config says, and its
workspace backend ``VLLM_FLASHINFER_ALLREDUCE_BACKEND`` (default ``auto``) resolves to
``mnnvl``, whose workspace calls ``cuMulticastCreate``. ``VLLM_DP_SIZE`` is a data-parallel
size vLLM falls back to, so it counts as a parallel size. On such an engine a ``VLLM_*``
variable the guard does not know is refused unless ``config/vllm_env.yaml`` names it with
its reason (:func:`claimcheck.config.configfiles.load_vllm_env`).
"""

from __future__ import annotations

from collections.abc import Mapping

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1", "VLLM_ALLREDUCE_USE_FLASHINFER": "0",
                 "VLLM_FLASHINFER_ALLREDUCE_BACKEND": "trtllm"}
"""Set in every engine's environment: NVLink multicast off in NCCL, torch's symmetric memory
and NVSHMEM; vLLM's standalone FlashInfer all-reduce off, and its workspace backend the one
that makes no multicast object (``trtllm``: CUDA IPC buffers; ``auto`` resolves to
``mnnvl``). The GPU hosts this project measures on forbid multicast (a program using it can
put the host's shared GPUs out of service)."""

DP_SIZE_ENV = "VLLM_DP_SIZE"
"""The data-parallel size vLLM 0.26 reads from the environment when the command gives none."""

KNOWN_VLLM = frozenset({k for k in MULTICAST_OFF if k.startswith("VLLM_")} | {DP_SIZE_ENV})
"""The ``VLLM_*`` variables the guard itself rules on."""

ALLOW_FILE = "config/vllm_env.yaml"


def env_sizes(env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """(the words of ``env`` that make an engine span more than one GPU, why ``env`` cannot
    be read for certain or None) (pure): ``VLLM_DP_SIZE`` above 1; one that is not a plain
    integer cannot be read."""
    if DP_SIZE_ENV not in env:
        return [], None
    raw = str(env[DP_SIZE_ENV])
    if not (raw.isascii() and raw.isdigit()):
        return [], (f"env {DP_SIZE_ENV}={raw!r} is not a plain integer (vLLM reads it as the "
                    "data-parallel size)")
    return ([f"env {DP_SIZE_ENV}={raw}"] if int(raw) > 1 else []), None


def inherited_refusal(spans: str, before: Mapping[str, str]) -> str | None:
    """Why ``before`` (the environment a multi-GPU server would get before the guard's
    :data:`MULTICAST_OFF`: the shell's and the engine's ``env``) asks for what the guard
    turns off, or None (pure). The guard would override it; an environment that asks for it
    is refused rather than silently undone."""
    for k, v in MULTICAST_OFF.items():
        if k in before and str(before[k]) != v:
            return (f"{spans} runs the engine on more than one GPU, which needs {k}={v}, but "
                    f"the environment it would inherit (the shell's or the engine's env) "
                    f"sets {k}={before[k]!r}: unset it (claimcheck sets {k}={v} itself)")
    return None


def unknown_refusal(spans: str, env: Mapping[str, str],
                    allowed: Mapping[str, str]) -> str | None:
    """Why ``env`` (a multi-GPU server's whole environment) holds a ``VLLM_*`` variable the
    guard neither rules on (:data:`KNOWN_VLLM`) nor finds in ``allowed`` (name: reason), or
    None (pure)."""
    unknown = sorted(k for k in env
                     if k.startswith("VLLM_") and k not in KNOWN_VLLM and k not in allowed)
    if not unknown:
        return None
    return (f"{spans} runs the engine on more than one GPU, where a VLLM_* variable must be "
            f"one the multicast guard knows or one {ALLOW_FILE} allows with its reason; the "
            f"server's environment has {', '.join(unknown)}: unset "
            f"{'it' if len(unknown) == 1 else 'them'}, or add "
            f"{'it' if len(unknown) == 1 else 'each'} to {ALLOW_FILE} with the reason it "
            "cannot create an NVLink multicast object")
