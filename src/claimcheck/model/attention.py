"""A prompt's attention over its own earlier positions, which the per-token FLOP count
(2 x weights) leaves out: each new prompt token's query meets the keys of every position
up to its own (QK), and their weights the values (PV), in every full-attention layer. Its
cost grows with the square of the prompt (a 12,000-token prompt's positions attend to
6,000 earlier ones on average). Decode's attention is left to the KV read (a decode step
is memory-bound). Pure arithmetic: FLOP and token positions."""

from __future__ import annotations

from typing import Any


def flops_per_position(geom: Any) -> float:
    """FLOP one prompt token spends per position it attends to: 2 (a multiply-add) x 2 (QK
    and PV) x the full-attention layers x their query heads x the head size. The DeltaNet
    (linear-attention) layers' cost is linear in the prompt and in the weights' count."""
    return 4.0 * geom.num_full_attention_layers * geom.num_attention_heads * geom.head_dim


def chunk_positions(done: float, tokens: float) -> float:
    """Positions a chunk of ``tokens`` new prompt tokens attends to in all, after ``done``
    already computed: the k-th new token (k from 1) attends to ``done + k``, so the sum is
    ``tokens x done + tokens x (tokens + 1) / 2`` (causal, itself included)."""
    return tokens * done + tokens * (tokens + 1) / 2
