"""The step of an engine that drafts, as a measured function (pure; issue 41 item 4).

A drafting stream drafts k tokens with the model's MTP head (k passes of one MTP layer and
the output head), then the target verifies r = k + 1 positions per stream in one step and
keeps the accepted drafts plus its own token. Seed 000 prices the verify as "the same
arithmetic as B x r plain streams". Measured on the H200 (bf16 dummy weights, MTP k = 3,
acceptance forced at 2.5 tokens kept), the step at 64 streams was 46.45 ms against 47.20 ms
for 256 plain streams plus the draft passes: the rows count, but the per-stream state and
KV are read once per stream, not once per row. So the model is

    step(B, r, k) = (plain(B) + B x (r - 1) x t_row) x bend(B x r) + k x (draft_bytes / BW + c)

- ``plain(B)``: the calibrated plain step model's decode step at B streams (weights read
  once, per-stream state and KV read by the B streams), from the plain twin engine's runs;
- ``t_row = (F_body + F_head) / P_eff``: each extra verified row adds its arithmetic at the
  calibrated compute rate (a row reaches the head: every verified position is sampled);
- ``bend(n)``: the plain model's measured decode-row factor at n = B x r rows over the one at
  B (:func:`claimcheck.model.model.row_factor`: on the H200 the BF16 plain step from 192 rows
  costs x1.10-1.15 more than its larger term, measured on plain runs at 96-256 rows; 1
  outside them, never extrapolated). It carries the seed's "same arithmetic" where it was
  measured: a verify of B x r rows bends as B x r plain rows do;
- ``draft_bytes``: what one draft pass reads (:func:`draft_pass_bytes`, from config.json:
  the MTP layers, their fc and norms, and the output head), at the plain bandwidth ``BW``;
- ``c``: the one free term, a fixed cost per draft pass beyond its bytes (launches,
  sampling, the draft's bookkeeping), fitted by least squares on drafting steps only
  (:func:`fit_pass_overhead_s`).

Time per output token = step / tokens kept per verify. SI units (bytes, seconds, FLOP).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from claimcheck.model.model import row_factor


class SpecModelError(ValueError):
    """An input the drafting step model cannot take, naming it."""


def _text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return config.get("text_config", config)


def draft_pass_params(config: Mapping[str, Any]) -> int:
    """Weights one MTP draft pass reads, from a config.json (Qwen3.5 MTP): per MTP layer a
    full-attention decoder layer (q with its output gate, k, v, o; the gated MLP), the fc
    that joins the embedding and the hidden state (2h x h), plus the output head
    (vocab x h, shared with the target and read again each pass). Norms are left out
    (a few h each). Raises :class:`SpecModelError` naming a missing key."""
    t = _text(config)
    try:
        h, heads, kv = int(t["hidden_size"]), int(t["num_attention_heads"]), \
            int(t["num_key_value_heads"])
        hd, inter, vocab = int(t["head_dim"]), int(t["intermediate_size"]), \
            int(t["vocab_size"])
        layers = int(t["mtp_num_hidden_layers"])
    except KeyError as e:
        raise SpecModelError(f"config.json: no {e.args[0]!r}: cannot size a draft pass") \
            from None
    q = h * heads * hd * (2 if t.get("attn_output_gate") else 1)
    attn = q + 2 * h * kv * hd + heads * hd * h
    layer = attn + 3 * h * inter
    return layers * (layer + 2 * h * h) + vocab * h


def draft_pass_bytes(config: Mapping[str, Any], bytes_per_weight: float = 2.0) -> float:
    """Bytes one draft pass reads: :func:`draft_pass_params` x bytes per weight (2: BF16)."""
    return draft_pass_params(config) * bytes_per_weight


@dataclass(frozen=True)
class VerifyStep:
    """One drafting step's predicted parts, s."""

    streams: int
    verify_rows: int
    draft_tokens: int
    plain_s: float
    rows_s: float
    draft_bytes_s: float
    draft_overhead_s: float
    bend: float = 1.0

    @property
    def target_s(self) -> float:
        """The verify pass: the plain step and the extra rows, bent at B x r rows."""
        return (self.plain_s + self.rows_s) * self.bend

    @property
    def step_s(self) -> float:
        return self.target_s + self.draft_bytes_s + self.draft_overhead_s

    def tpot_s(self, tokens_kept: float) -> float:
        """Time per output token: the step over the tokens kept per verify."""
        return tpot_s(self.step_s, tokens_kept)


def tpot_s(step_s: float, tokens_kept: float) -> float:
    if not tokens_kept >= 1:
        raise SpecModelError(f"tokens kept per verify must be >= 1 (the target's own token), "
                             f"got {tokens_kept}")
    return step_s / tokens_kept


def row_s(flops_per_row: float, flops_s: float) -> float:
    """Seconds one extra verified row adds: its FLOP at the calibrated compute rate."""
    return flops_per_row / flops_s


def verify_step(plain_s: float, streams: int, draft_tokens: int, row_s_: float,
                pass_bytes_s: float, pass_overhead_s: float, bend: float = 1.0
                ) -> VerifyStep:
    """The step at ``streams`` streams verifying k + 1 rows each (module docstring);
    ``bend``: the measured decode-row factor at B x r rows over the one at B (1: none)."""
    if streams < 1 or draft_tokens < 1:
        raise SpecModelError(f"a drafting step needs streams >= 1 and k >= 1, got "
                             f"{streams} streams, k = {draft_tokens}")
    return VerifyStep(streams=streams, verify_rows=draft_tokens + 1, draft_tokens=draft_tokens,
                      plain_s=plain_s, rows_s=streams * draft_tokens * row_s_,
                      draft_bytes_s=draft_tokens * pass_bytes_s,
                      draft_overhead_s=draft_tokens * pass_overhead_s, bend=bend)


def bend(points: tuple[tuple[int, float], ...], streams: int, rows: int) -> float:
    """The decode-row factor (:func:`claimcheck.model.model.row_factor` over ``points``)
    at ``streams`` x ``rows`` rows over the one at ``streams`` (the plain step at B streams
    carries its own)."""
    return row_factor(points, streams * rows) / row_factor(points, streams)


def fit_pass_overhead_s(steps: Sequence[tuple[VerifyStep, float]]) -> float:
    """The per-pass overhead ``c`` that minimises the squared step error over ``steps``
    ((the step predicted with c = 0, its measured step time s)): with every step's error
    linear in c with slope k, c = sum k x residual / sum k^2. Needs one step at least."""
    if not steps:
        raise SpecModelError("no drafting step to fit the draft pass overhead on")
    num = sum(v.draft_tokens * (meas - v.step_s) for v, meas in steps)
    den = sum(v.draft_tokens ** 2 for v, _ in steps)
    return num / den


def leave_one_out(steps: Sequence[tuple[VerifyStep, float]]) -> list[float | None]:
    """Each step's predicted step time (s) with ``c`` fitted on the other steps only; None
    where no other step is left."""
    out: list[float | None] = []
    for i, (v, _) in enumerate(steps):
        rest = [s for j, s in enumerate(steps) if j != i]
        out.append(v.step_s + v.draft_tokens * fit_pass_overhead_s(rest) if rest else None)
    return out
