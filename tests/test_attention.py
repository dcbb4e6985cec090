"""A prompt's attention over its own earlier positions (model/attention.py): the FLOP per
position from the committed config, the positions a chunk attends to, and the step cost,
the chunked prefill time and the compute rate read off a held prefill that include them,
each worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claimcheck.model import model as m
from claimcheck.model.attention import chunk_positions, flops_per_position
from claimcheck.physics.geometry import geometry
from claimcheck.runs.engine_shape import shape_for

CONFIG = Path(__file__).resolve().parents[1] / "data/raw/models/qwen3.8-27b/config.json"


def test_flops_per_position_of_the_committed_config_by_hand():
    # 64 layers, a full-attention one every 4th: 16; 24 query heads of 256:
    # 2 (multiply-add) x 2 (QK, PV) x 16 x 24 x 256 = 393,216 FLOP per position
    geom = geometry(json.loads(CONFIG.read_text()))
    assert geom.num_attention_heads == 24
    assert flops_per_position(geom) == 393_216
    shape = shape_for(geom, weight_bytes=54e9, state_dtype="fp32", kv_dtype="bf16",
                      max_num_batched_tokens=8192, max_num_seqs=16)
    assert shape.flops_attention_per_position == 393_216


def test_chunk_positions_by_hand():
    assert chunk_positions(0, 1) == 1  # the first token attends to itself
    assert chunk_positions(0, 3) == 6  # 1 + 2 + 3
    assert chunk_positions(5, 2) == 13  # 6 + 7
    # a whole prompt equals its chunks: 0..4 then 4..10 of a 10-token prompt
    assert chunk_positions(0, 4) + chunk_positions(4, 6) == chunk_positions(0, 10) == 55


SHAPE = m.EngineShape(weight_bytes=1e9, state_bytes=0.0, kv_bytes_per_token=0.0,
                      flops_body_per_token=1e9, flops_head_per_token=0.0,
                      max_num_batched_tokens=4, max_num_seqs=8,
                      flops_attention_per_position=1e8)
CAL = m.Calibration(bandwidth_bytes_s=1e12, flops_s=1e12, request_overhead_s=0.0,
                    bandwidth_source="test", compute_source="test")


def test_step_cost_adds_the_chunks_attention_at_the_prefill_rate():
    # a 4-token chunk after 6 tokens: 4 x 1e9 body + (7 + 8 + 9 + 10) x 1e8 = 4e9 + 3.4e9
    cost = m.step_cost(SHAPE, CAL, [10], 4, 0, 4, chunk_positions(6, 4))
    assert cost.compute_s == pytest.approx(7.4e9 / 1e12)
    # a prefill rate set apart: the attention goes at it as the chunk's body does
    cal = m.Calibration(bandwidth_bytes_s=1e12, flops_s=1e12, request_overhead_s=0.0,
                        bandwidth_source="test", compute_source="test",
                        prefill_flops_s=2e12)
    assert m.step_cost(SHAPE, cal, [10], 4, 0, 4, 34).compute_s == pytest.approx(7.4e9 / 2e12)
    # no positions given: no attention (a decode step's attention is its KV read)
    assert m.step_cost(SHAPE, CAL, [10], 4, 0, 4).compute_s == pytest.approx(4e9 / 1e12)


def test_prefill_time_sums_each_chunks_attention():
    # 10 tokens under a 4-token budget: chunks of 4, 4, 2 attend to 10, 26 and 19 positions
    # (1..4, 5..8, 9..10): compute 4e9 + 1.0e9, 4e9 + 2.6e9 and 2e9 + 1.9e9 FLOP at 1e12,
    # each above the 1 ms of weights: 5.0 + 6.6 + 3.9 ms
    assert m.prefill_time_s(SHAPE, CAL, 10) == pytest.approx((5.0 + 6.6 + 3.9) * 1e-3)


def test_compute_from_prefill_counts_the_attention_it_timed():
    # 1,000 tokens in 1 s: 1e12 body + 1e8 x 500,500 positions = 5.105e13 FLOP/s
    assert m.compute_from_prefill(SHAPE, 1000, 1.0) == pytest.approx(5.105e13)
    plain = m.EngineShape(**{**SHAPE.as_dict(), "flops_attention_per_position": 0.0})
    assert m.compute_from_prefill(plain, 1000, 1.0) == pytest.approx(1e12)


def test_a_negative_attention_cost_is_refused_naming_the_field():
    with pytest.raises(m.ModelInputError, match="flops_attention_per_position"):
        m.EngineShape(**{**SHAPE.as_dict(), "flops_attention_per_position": -1.0})
