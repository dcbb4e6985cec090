"""The step cost as plain functions (physics/roofline.py): the article's arithmetic by hand, the
Roofline's times and points equal to them, the step model's cost built from them, its
inputs checked once where they enter, and the simulator's decode fast-forward equal to
pricing the same steps one by one."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from claimcheck.model import model as m
from claimcheck.model import simulator
from claimcheck.physics import roofline as rl
from claimcheck.physics.units import GB, KIB, MIB

# The article's RTX 3090 figures: 16 GB of weights at 936 GB/s, 72 MiB of state per
# stream, 32 KiB of FP8 KV per token at 640 tokens, 51.24 GFLOP per token at 63 TFLOP/s.
W, BW, S, KAPPA, L, F, P = 16 * GB, 936 * GB, 72 * MIB, 32 * KIB, 640, 51.24e9, 63e12


def test_stream_bytes_moved_is_2s_plus_kappa_l_by_hand():
    # 2 x 75,497,472 + 32,768 x 640 = 150,994,944 + 20,971,520
    assert rl.stream_bytes_moved(S, KAPPA, L) == 171_966_464
    assert rl.stream_bytes_moved(S, 0.0, 0.0) == 150_994_944


def test_memory_seconds_is_w_over_bw_plus_b_2s_kappa_l_over_bw_by_hand():
    # 8 streams: (16e9 + 8 x 171,966,464) B = 17,375,731,712 B over 936e9 B/s
    t = rl.memory_seconds(W, 8, 171_966_464, BW)
    assert t == pytest.approx(0.018563815931624, rel=1e-12)
    assert t == pytest.approx(16e9 / 936e9 + 8 * 171_966_464 / 936e9, rel=1e-12)
    assert rl.memory_seconds(W, 0, 171_966_464, BW) == pytest.approx(0.017094017094017)
    # at eta = 0.8 the rate is 748.8 GB/s; over 2 cards each reads half at once
    assert rl.memory_seconds(W, 8, 171_966_464, 0.8 * BW) == pytest.approx(
        17_375_731_712 / 748.8e9, rel=1e-12)
    assert rl.memory_seconds(W, 8, 171_966_464, BW, cards=2) == pytest.approx(
        0.018563815931624 / 2, rel=1e-12)


def test_compute_seconds_is_b_r_f_over_p_by_hand():
    # 8 streams x 1 row x 51.24 GFLOP / 63 TFLOP/s = 6.5067 ms; 3 rows: 19.52 ms
    assert rl.compute_seconds(8, 1, F, P) == pytest.approx(6.506666666667e-3, rel=1e-12)
    assert rl.compute_seconds(8, 3, F, P) == pytest.approx(19.52e-3, rel=1e-12)
    assert rl.compute_seconds(8, 3, F, P, cards=4) == pytest.approx(4.88e-3, rel=1e-12)
    assert rl.compute_seconds(1, 1, F, P) * 1e3 == pytest.approx(0.81, abs=0.005)


ROOFLINES = {
    "3090": dict(weight_bytes=W, bandwidth_bytes_s=BW, flops_per_row=F, peak_flops_s=P,
                 state_bytes=S, kv_bytes_per_token=KAPPA, context_tokens=L),
    "eta, rows": dict(weight_bytes=W, bandwidth_bytes_s=BW, flops_per_row=F, peak_flops_s=P,
                      eta=0.79, state_bytes=S, kv_bytes_per_token=KAPPA, context_tokens=L,
                      rows=4, tau=3),
    "moe": dict(weight_bytes=90 * GB, bandwidth_bytes_s=BW, flops_per_row=F, peak_flops_s=P,
                routed_expert_bytes=80 * GB, experts_per_token=2, num_experts=8),
    "2 cards": dict(weight_bytes=W, bandwidth_bytes_s=BW, flops_per_row=F, peak_flops_s=P,
                    state_bytes=S, cards=2, allreduce_bytes_per_row=16_000,
                    link_bytes_s=50 * GB),
}


@pytest.mark.parametrize("name", ROOFLINES)
def test_roofline_times_and_points_are_the_plain_functions(name):
    r = rl.Roofline(**ROOFLINES[name])
    for b in (1, 8, 26, 64, 300):
        mem = rl.memory_seconds(rl.weight_read_bytes(r, b), b,
                                rl.stream_bytes_moved(r.state_bytes, r.kv_bytes_per_token,
                                                      r.context_tokens),
                                r.eta * r.bandwidth_bytes_s, r.cards)
        comp = rl.compute_seconds(b, r.rows, r.flops_per_row, r.peak_flops_s, r.cards)
        assert rl.memory_time_s(r, b) == mem and rl.compute_time_s(r, b) == comp
        link = rl.allreduce_time_s(r, b)
        p = rl.point(r, b)
        assert p.memory_ms == mem * 1e3 and p.compute_ms == comp * 1e3
        assert p.step_ms == (max(mem, comp) + link) * 1e3
        assert rl.step_time_s(r, b) == max(mem, comp) + link
        assert p.bound == ("memory" if mem >= comp else "compute")
        assert p.aggregate_tok_s == b * r.tau / (max(mem, comp) + link)


def shape(**kw):
    base = dict(weight_bytes=1e10, state_bytes=1e6, kv_bytes_per_token=1e3,
                flops_body_per_token=1e9, flops_head_per_token=1e8,
                max_num_batched_tokens=8, max_num_seqs=64)
    base.update(kw)
    return m.EngineShape(**base)


CAL = m.Calibration(1e12, 1e14, 0.0, "t", "t")


def test_step_cost_by_hand_with_the_kv_read_at_its_own_rate():
    # 2 requests, contexts 100 + 300 after the step, 2 positions, both sampled
    c = m.step_cost_sum(shape(), replace(CAL, kv_bandwidth_bytes_s=5e11), 2, 400, 2, 2)
    assert c.weights_s == pytest.approx(0.01, rel=1e-12)           # 1e10 B / 1e12 B/s
    assert c.state_s == pytest.approx(4e-6, rel=1e-12)             # 2 x 2 x 1e6 B / 1e12
    assert c.kv_s == pytest.approx(8e-7, rel=1e-9)                 # 1e3 x 400 B / 5e11
    assert c.compute_s == pytest.approx(2.2e-5, rel=1e-12)         # (2e9 + 2e8) / 1e14
    assert c.memory_s == pytest.approx(0.0100048, rel=1e-12) and c.bound == "memory"
    # without the KV rate, KV at the weights' rate: 4e5 B / 1e12 B/s
    c1 = m.step_cost_sum(shape(), CAL, 2, 400, 2, 2)
    assert c1.kv_s == pytest.approx(4e-7, rel=1e-9)


def test_step_cost_terms_equal_the_roofline_at_the_same_inputs():
    # what the model built per step before: a Roofline at B = b, L = mean context, r =
    # tokens / b; its two terms are the model's (memory with KV at the weights' rate,
    # compute before the head) to the last bit
    s = shape(state_bytes=153_944_064, kv_bytes_per_token=65_536.0,
              flops_body_per_token=5.1e10, flops_head_per_token=1.2e9,
              max_num_batched_tokens=8192)
    cal = m.Calibration(3.36e12, 7.1e14, 0.0, "t", "t")
    for b, ctx, tokens, sampled in ((1, 7681, 7681, 1), (64, 64 * 7937, 64, 64),
                                    (37, 123_457, 2100, 30)):
        c = m.step_cost_sum(s, cal, b, ctx, tokens, sampled)
        r = rl.Roofline(weight_bytes=s.weight_bytes, bandwidth_bytes_s=cal.bandwidth_bytes_s,
                        flops_per_row=s.flops_body_per_token, peak_flops_s=cal.flops_s,
                        state_bytes=s.state_bytes, kv_bytes_per_token=s.kv_bytes_per_token,
                        context_tokens=ctx / b, rows=tokens / b)
        assert c.weights_s + c.state_s + c.kv_s == pytest.approx(rl.memory_time_s(r, b),
                                                                  rel=1e-15)
        assert (rl.memory_time_s(r, b) - c.weights_s - c.state_s) == c.kv_s
        head = sampled * s.flops_head_per_token / cal.flops_s
        assert c.compute_s == rl.compute_time_s(r, b) + head


@pytest.mark.parametrize("build, field", [
    (lambda: shape(weight_bytes=0.0), "EngineShape.weight_bytes"),
    (lambda: shape(state_bytes=-1.0), "EngineShape.state_bytes"),
    (lambda: shape(kv_bytes_per_token=math.nan), "EngineShape.kv_bytes_per_token"),
    (lambda: shape(max_num_seqs=0), "EngineShape.max_num_seqs"),
    (lambda: shape(max_num_batched_tokens=8.5), "EngineShape.max_num_batched_tokens"),
    (lambda: shape(mamba_align_block_tokens=0), "EngineShape.mamba_align_block_tokens"),
    (lambda: replace(CAL, bandwidth_bytes_s=math.inf), "Calibration.bandwidth_bytes_s"),
    (lambda: replace(CAL, flops_s=0.0), "Calibration.flops_s"),
    (lambda: replace(CAL, request_overhead_s=-0.001), "Calibration.request_overhead_s"),
    (lambda: replace(CAL, kv_bandwidth_bytes_s=0.0), "Calibration.kv_bandwidth_bytes_s"),
    (lambda: replace(CAL, row_factors=((32, 1.1), (16, 1.0))), "Calibration.row_factors"),
    (lambda: replace(CAL, row_factors=((16, 0.0),)), "Calibration.row_factors"),
])
def test_model_inputs_checked_once_where_they_enter(build, field):
    with pytest.raises(m.ModelInputError, match=field.replace(".", r"\.")) as e:
        build()
    assert e.value.field == field and "\n" not in str(e.value)


def test_the_decode_fast_forward_prices_as_the_step_loop_does(monkeypatch):
    # 6 requests at 3 streams, chunked prefill under an 8-token budget, a measured
    # decode-row factor, the KV read at its own rate and an admission interval: the same
    # simulation with every step priced one by one (the fast-forward turned off) gives
    # the same timeline and accounts, to the last bit
    cal = replace(CAL, request_overhead_s=0.003, admission_interval_s=0.0004,
                  row_factors=((1, 1.0), (3, 1.2)), kv_bandwidth_bytes_s=4e11)
    args = (shape(), cal, [5, 12, 3, 9, 20, 4], [7, 3, 11, 5, 2, 9], 3)
    fast = simulator.simulate(*args)
    monkeypatch.setattr(simulator._Loop, "decode_run", lambda self: 0)
    slow = simulator.simulate(*args)
    assert fast.engine_steps == slow.engine_steps
    assert fast.timeline == slow.timeline
    assert fast.time_s == slow.time_s and fast.memory_parts_s == slow.memory_parts_s
    # and the fast-forward did take some of the steps
    assert sum(r.prompt_tokens for r in fast.timeline.requests) == 53
    calls = []
    monkeypatch.undo()
    orig = simulator._Loop.fast_forward
    monkeypatch.setattr(simulator._Loop, "fast_forward",
                        lambda self, n: (calls.append(n), orig(self, n))[1])
    simulator.simulate(*args)
    assert calls and sum(calls) > 1


def test_prompt_positions_priced_at_their_own_rate_by_hand():
    # F = 51.24 GFLOP per position: 100 positions, 60 of them a prompt chunk's, at 63
    # TFLOP/s for decode and 90 for prefill: 51.24e9 x (40/63e12 + 60/90e12) s
    shape = m.EngineShape(weight_bytes=W, state_bytes=0.0, kv_bytes_per_token=0.0,
                          flops_body_per_token=F, flops_head_per_token=0.0,
                          max_num_batched_tokens=2048, max_num_seqs=64)
    cal = m.Calibration(bandwidth_bytes_s=BW, flops_s=P, request_overhead_s=0.0,
                        bandwidth_source="", compute_source="")
    same = m.step_cost(shape, cal, [100], 100, 1, 60)
    assert same.compute_s == pytest.approx(100 * F / P, rel=1e-12)  # no prefill rate: one
    fast = m.step_cost(shape, replace(cal, prefill_flops_s=90e12), [100], 100, 1, 60)
    assert fast.compute_s == pytest.approx(51.24e9 * (40 / 63e12 + 60 / 90e12), rel=1e-12)
    assert fast.compute_s == pytest.approx(0.066700, rel=1e-4)
    # a prompt alone (prefill_time_s) runs every position at the prefill rate
    assert m.prefill_time_s(shape, replace(cal, prefill_flops_s=90e12), 1024) == \
        pytest.approx(max(1024 * F / 90e12, W / BW), rel=1e-12)
    with pytest.raises(m.ModelInputError, match="prefill_flops_s"):
        replace(cal, prefill_flops_s=0.0)
