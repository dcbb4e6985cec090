"""The vLLM server-log parser: moved to :mod:`claimcheck.core.serverlog`; re-exported here
for the measuring side."""

from claimcheck.core.serverlog import (  # noqa: F401
    ALIGN_MODE,
    ATTN_BLOCK,
    FATAL,
    KV_POOL,
    STATS,
    TIME,
    WEIGHTS,
    StatsLine,
    fatal_lines,
    kv_pool_tokens,
    mamba_align_block_tokens,
    stats_lines,
    steady_lines,
    steady_state_tok_s,
    weights_gib,
)
