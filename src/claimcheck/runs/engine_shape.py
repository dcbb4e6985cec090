"""The step model's view of a run's engine (pure): W, S and kappa and every dtype from the
run's :class:`~claimcheck.physics.engine_inputs.EngineInputs` (the roofline's and the presets'
too), the token budget and the Mamba block alignment from the engine's start log, and
where each input came from. Bytes are bytes; the token budget is tokens per engine step.
"""

from __future__ import annotations

import re
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.model.model import EngineShape
from claimcheck.model.simulator import pages_held
from claimcheck.physics.engine_inputs import EngineInputs
from claimcheck.physics.formats import state_dtype_bytes
from claimcheck.physics.geometry import Geometry
from claimcheck.readings import serverlog
from claimcheck.runs.runrecord import Provenance

BATCHED_TOKENS = re.compile(r"max_num_batched_tokens=(\d+)")
VLLM_DEFAULT_BATCHED_TOKENS = 8192
"""vLLM V1's default token budget for the OpenAI server on a large-memory GPU (assumed when
the start log does not print it)."""


def engine_shape(geom: Geometry | None, ei: EngineInputs | None,
                 provenance: Provenance, start_log: str, run_dir: str
                 ) -> tuple[EngineShape, dict[str, Any]]:
    """The model's view of a run's engine, and where each input came from. ``provenance``:
    the run's provenance.json record; ``start_log``: its server-start.log text; ``run_dir``
    names the files in errors. Refused (InputError) when the run's model config is not in
    the checkout (no ``geom`` or ``ei``) or the start log's block size cannot be read."""
    if ei is None or geom is None:
        raise InputError(f"{run_dir}/provenance.json", "model config "
                         f"{provenance.model_config!r} is not in this checkout",
                         key="model_config")
    m = BATCHED_TOKENS.search(start_log)
    budget = int(m.group(1)) if m else VLLM_DEFAULT_BATCHED_TOKENS
    seqs = int(provenance.engine_config.max_num_seqs or 256)
    try:
        align = serverlog.mamba_align_block_tokens(start_log)
    except ValueError as e:
        raise InputError(f"{run_dir}/server-start.log", str(e)) from None
    pool = serverlog.kv_pool_tokens(start_log)
    if pool is not None and pool < 1:
        raise InputError(f"{run_dir}/server-start.log", "GPU KV cache size must be at least "
                         f"1 token, got {pool}")
    attn, state = kv_groups(geom)
    page = serverlog.attention_block_tokens(start_log)
    at = serverlog.concurrency_tokens(start_log)
    paged = bool(pool and page and at)  # else the pool is counted in tokens
    shape = shape_for(geom, weight_bytes=ei.weight_bytes, state_dtype=ei.state_dtype,
                      kv_dtype=ei.kv_dtype, max_num_batched_tokens=budget, max_num_seqs=seqs,
                      conv_dtype=ei.conv_state_dtype, mamba_align_block_tokens=align,
                      kv_pool_pages=pool_pages(pool, at, page, attn, state) if paged else pool,
                      kv_page_tokens=page if paged else None, kv_groups=(attn, state))
    info = {"weights": ei.weights_source, "weight_bytes": ei.weight_bytes,
            "state_dtype": ei.state_dtype, "conv_state_dtype": ei.conv_state_dtype,
            "state_bytes_per_stream": shape.state_bytes, "kv_dtype": ei.kv_dtype,
            "kv_bytes_per_token": shape.kv_bytes_per_token,
            "max_num_batched_tokens": budget,
            "max_num_batched_tokens_source": "server-start.log" if m else
            f"vLLM default {VLLM_DEFAULT_BATCHED_TOKENS} (assumed)",
            "max_num_seqs": seqs, "config": provenance.model_config,
            "mamba_align_block_tokens": align,
            "prefill_chunks": (f"aligned to {align}-token blocks (Mamba cache 'align' mode, "
                               "server-start.log)") if align else "split anywhere",
            "compute_dtype": ei.compute_dtype, "kv_pool_tokens": pool,
            "kv_pool_pages": shape.kv_pool_pages, "kv_page_tokens": shape.kv_page_tokens,
            "kv_groups": [attn, state],
            "kv_pool_source": ("server-start.log: GPU KV cache size" + (
                f" at {at:,}-token requests, {attn} attention and {state} state group(s)"
                if paged else "") if pool else "not in server-start.log")}
    return shape, info


def shape_for(geom: Any, *, weight_bytes: float, state_dtype: str, kv_dtype: str,
              max_num_batched_tokens: int, max_num_seqs: int, conv_dtype: str = "bf16",
              mamba_align_block_tokens: int | None = None, kv_pool_pages: int | None = None,
              kv_page_tokens: int | None = None, kv_groups: tuple[int, int] = (1, 0)
              ) -> EngineShape:
    """An engine shape from a model geometry (:class:`claimcheck.physics.geometry.Geometry`).

    The per-stream state is the recurrent (DeltaNet) state at ``state_dtype`` plus the
    short-convolution state at ``conv_dtype``; both are read and written every step. The
    KV pool and its page (tokens) as the engine's start log gives them, None: not known.
    """
    conv = geom.conv_state_values_per_stream * state_dtype_bytes(conv_dtype)
    return EngineShape(
        weight_bytes=weight_bytes, state_bytes=geom.state_bytes_per_stream(state_dtype) + conv,
        kv_bytes_per_token=geom.kv_bytes_per_token(kv_dtype),
        flops_body_per_token=2.0 * geom.body_weights_per_token,
        flops_head_per_token=2.0 * geom.head_weights,
        max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        mamba_align_block_tokens=mamba_align_block_tokens, kv_pool_pages=kv_pool_pages,
        kv_page_tokens=kv_page_tokens, kv_attention_groups=kv_groups[0],
        kv_state_groups=kv_groups[1])


def kv_groups(geom: Any) -> tuple[int, int]:
    """(attention, state) layer groups of vLLM's hybrid KV pool: layers grouped by kind,
    each group as many layers as the rarer kind has (16 full-attention and 48 DeltaNet
    layers: 1 and 3). A model with one kind: (1, 0) or (0, 1)."""
    full, lin = geom.num_full_attention_layers, geom.num_linear_attention_layers
    size = min(n for n in (full, lin) if n > 0)
    return -(-full // size), -(-lin // size)


def pool_pages(pool_tokens: int, at_tokens: int, page: int, attn: int, state: int) -> int:
    """The pool's pages in all from the tokens vLLM says it holds: it counts them as
    ``at_tokens``-token requests (its "Maximum concurrency for N tokens per request") each
    holding ``attn`` x ceil(N / ``page``) + ``state`` pages, so the pages are the tokens x
    those pages / N (255,317 tokens at 16,384 on the H100: 374 pages of 784 tokens)."""
    return round(pool_tokens * pages_held(at_tokens, page, attn, state) / at_tokens)
