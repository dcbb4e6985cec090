"""Parse vLLM server log lines: periodic throughput stats, memory, failures."""

from __future__ import annotations

import re
from dataclasses import dataclass

from claimcheck.readings.definitions import engine_log_steady_tok_s

STATS = re.compile(
    r"Avg prompt throughput: (?P<prompt>[\d.]+) tokens/s, "
    r"Avg generation throughput: (?P<gen>[\d.]+) tokens/s, "
    r"Running: (?P<running>\d+) reqs, Waiting: (?P<waiting>\d+) reqs"
    r"(?:, Deferred: \d+ reqs)?(?:, Preemptions: (?P<preempt>\d+))?"
    r"(?:, (?:GPU|CPU) KV cache usage: (?P<kv>[\d.]+)%)?")
TIME = re.compile(r"(?P<md>\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)")
WEIGHTS = re.compile(r"Model loading took (?P<gib>[\d.]+) GiB")
KV_POOL = re.compile(r"(?:GPU|CPU) KV cache size: (?P<tokens>[\d,]+) tokens")
FATAL = re.compile(r"EngineDeadError|EngineCore encountered a fatal error|"
                   r"CUDA out of memory|torch\.OutOfMemoryError|Traceback \(most recent")


@dataclass(frozen=True)
class StatsLine:
    """One periodic stats line. Throughputs in tokens/s over the logging interval."""

    line_no: int
    time: str | None
    prompt_tok_s: float
    generation_tok_s: float
    running: int
    waiting: int
    preemptions: int
    kv_usage_pct: float | None


def stats_lines(text: str) -> list[StatsLine]:
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        m = STATS.search(line)
        if not m:
            continue
        t = TIME.search(line)
        out.append(StatsLine(
            line_no=i, time=f"{t['md']} {t['hms']}" if t else None,
            prompt_tok_s=float(m["prompt"]), generation_tok_s=float(m["gen"]),
            running=int(m["running"]), waiting=int(m["waiting"]),
            preemptions=int(m["preempt"] or 0),
            kv_usage_pct=float(m["kv"]) if m["kv"] else None))
    return out


def steady_state_tok_s(lines: list[StatsLine], streams: int) -> float | None:
    """Median generation throughput over lines with all ``streams`` running and no prefill.

    HyperQwen's batch README definition of its steady figure. None when no line qualifies.
    The arithmetic is :func:`claimcheck.readings.definitions.engine_log_steady_tok_s`.
    """
    return engine_log_steady_tok_s(lines, streams)


def steady_lines(lines: list[StatsLine], streams: int) -> list[StatsLine]:
    """Lines with at least ``streams`` running, generating, and no prompt tokens."""
    return [s for s in lines if s.running >= streams and s.prompt_tok_s == 0
            and s.generation_tok_s > 0]


KERNEL_LINE = re.compile(r"(?P<verb>Using|Selected) (?P<kernel>[A-Za-z0-9]+)LinearKernel for ")
"""A start log's line naming the kernel of a linear method: "Using X" for a quantized
method's kernel, "Selected X" for FP8's."""


def _kernel(text: str, verbs: tuple[str, ...]) -> str | None:
    """The first kernel a :data:`KERNEL_LINE` with one of ``verbs`` names, lower case."""
    return next((m["kernel"].lower() for m in KERNEL_LINE.finditer(text)
                 if m["verb"] in verbs), None)


def linear_kernel(text: str) -> str | None:
    """The quantized linear kernel the engine chose, lower case ("Using MacheteLinearKernel
    for AutoGPTQLinearMethod": "machete"); None when the log names none (unquantized)."""
    return _kernel(text, ("Using",))


def gemm_kernel(text: str) -> str | None:
    """The kernel the engine's linear layers multiply with, lower case, whichever way the
    start log names it: a quantized method's ("Using MacheteLinearKernel for ...":
    "machete") or FP8's ("Selected CutlassFP8ScaledMMLinearKernel for
    Fp8PerTensorOnlineLinearMethod": "cutlassfp8scaledmm"); None when the log names none
    (BF16). :func:`linear_kernel` reads only the first form, the weight-only kernels."""
    return _kernel(text, ("Using", "Selected"))


INT8_ACTIVATIONS = re.compile(
    r"Using [A-Za-z0-9]+LinearKernel for (?P<scheme>CompressedTensors(?:WNA8Int|W4A8Int|"
    r"W8A8Int8))\b")


def int8_activation_scheme(text: str) -> str | None:
    """The quantization scheme with int8 activations the engine built, as its start log
    names it ("Using HummingLinearKernel for CompressedTensorsWNA8Int":
    "CompressedTensorsWNA8Int"); None when no layer takes int8 activations (an FP8 W4A8
    scheme, "CompressedTensorsW4A8Fp8", is not int8)."""
    m = INT8_ACTIVATIONS.search(text)
    return m["scheme"] if m else None


def weights_gib(text: str) -> float | None:
    """GiB the engine reports for the weights ("Model loading took X GiB")."""
    m = WEIGHTS.search(text)
    return float(m["gib"]) if m else None


ALIGN_MODE = re.compile(r"Prefix caching in Mamba cache 'align' mode is currently enabled")
ATTN_BLOCK = re.compile(r"Setting attention block size to (?P<tokens>\d+) tokens")


def mamba_align_block_tokens(text: str) -> int | None:
    """The block (tokens) prefill chunks end on when the start log says vLLM runs its Mamba
    cache in 'align' mode ("Setting attention block size to N tokens"); None otherwise.
    ValueError when align mode is on without a usable block line."""
    if not ALIGN_MODE.search(text):
        return None
    m = ATTN_BLOCK.search(text)
    if not m:
        raise ValueError("Mamba cache 'align' mode is on but no 'Setting attention block size "
                         "to N tokens' line says its block")
    if int(m["tokens"]) < 1:
        raise ValueError(f"attention block size must be >= 1 token, got {m['tokens']}")
    return int(m["tokens"])


def attention_block_tokens(text: str) -> int | None:
    """The attention block (tokens) vLLM sized to a hybrid model's state page ("Setting
    attention block size to N tokens"), whatever the cache mode; None when not said."""
    m = ATTN_BLOCK.search(text)
    return int(m["tokens"]) if m and int(m["tokens"]) >= 1 else None


CONCURRENCY = re.compile(r"Maximum concurrency for (?P<tokens>[\d,]+) tokens per request")


def concurrency_tokens(text: str) -> int | None:
    """The request length (tokens) vLLM states its maximum concurrency for ("Maximum
    concurrency for N tokens per request"): the length its pool size in tokens is counted
    at; None when not said."""
    m = CONCURRENCY.search(text)
    return int(m["tokens"].replace(",", "")) if m else None


def kv_pool_tokens(text: str) -> int | None:
    m = KV_POOL.search(text)
    return int(m["tokens"].replace(",", "")) if m else None


def fatal_lines(text: str) -> list[str]:
    """Lines that say the engine failed (EngineDeadError, OOM, tracebacks)."""
    return [ln for ln in text.splitlines() if FATAL.search(ln)]
