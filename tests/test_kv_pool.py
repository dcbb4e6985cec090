"""The KV pool's room (model/simulator.py's pool_tokens and admission): what a request
holds, worked out by hand; a wave the pool cannot hold waits for room, simulated on a
hand-made engine; and the committed H100 run whose pool it was read off."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimcheck.model import model as m
from claimcheck.model import simulator
from claimcheck.readings import serverlog
from claimcheck.runs.run import load_run
from tests.test_model import CAL, shape  # 10 ms of weights per step, compute nearly free

RUN = (Path(__file__).resolve().parents[1] / "data/raw/runs"
       / "h100-20261206-bf16-dummy-16k-context-ladder")


def test_pool_tokens_by_hand():
    # 4,096 + 384 tokens in 784-token pages: 6 pages (4,704), and a seventh for the
    # recurrent state: 5,488; 48 of them (263,424) overfill the H100's 255,317
    assert simulator.pool_tokens(shape(kv_block_tokens=784, state_bytes=1.0), 4480) == 5488
    assert 48 * 5488 > 255_317 >= 48 * (4 + 1) * 784  # 2,048 + 384 in 4 pages + 1: room
    assert simulator.pool_tokens(shape(kv_block_tokens=784), 4480) == 4704  # no state
    assert simulator.pool_tokens(shape(), 4480) == 4480  # no page known: the tokens


def test_a_wave_the_pool_cannot_hold_waits_for_room():
    # three prompts of 2 tokens, 2 out: 4 tokens each; a pool of 8 holds two of them. The
    # first two share every step (prefill at 10 ms, decode at 20 ms); the third is admitted
    # when they finish, its tokens at 30 and 40 ms
    sim = simulator.simulate(shape(kv_pool_tokens=8), CAL, prompts=[2, 2, 2],
                             outputs=[2, 2, 2], streams=3)
    times = [r.token_times_s for r in sim.timeline.requests]
    assert times == [pytest.approx((0.01, 0.02))] * 2 + [pytest.approx((0.03, 0.04))]
    # with room for all three, one wave: every request done at 20 ms
    sim = simulator.simulate(shape(kv_pool_tokens=12), CAL, prompts=[2, 2, 2],
                             outputs=[2, 2, 2], streams=3)
    assert [r.token_times_s for r in sim.timeline.requests] == [pytest.approx((0.01, 0.02))] * 3


def test_a_request_larger_than_the_pool_still_runs_alone():
    sim = simulator.simulate(shape(kv_pool_tokens=2), CAL, prompts=[2, 2], outputs=[2, 2],
                             streams=2)
    times = [r.token_times_s for r in sim.timeline.requests]
    assert times == [pytest.approx((0.01, 0.02)), pytest.approx((0.03, 0.04))]


def test_the_start_log_lines_it_is_read_from():
    text = ("INFO [interface.py:905] Setting attention block size to 784 tokens to ensure "
            "that attention page size is >= mamba page size.\n"
            "INFO [kv_cache_utils.py:2177] GPU KV cache size: 255,317 tokens\n")
    assert serverlog.attention_block_tokens(text) == 784
    assert serverlog.kv_pool_tokens(text) == 255_317
    assert serverlog.attention_block_tokens("GPU KV cache size: 1 tokens") is None


def test_the_committed_h100_engine_has_its_pool_and_page():
    shape_, info = load_run(RUN).engine
    assert (shape_.kv_pool_tokens, shape_.kv_block_tokens) == (255_317, 784)
    assert info["kv_pool_tokens"] == 255_317 and "server-start.log" in info["kv_pool_source"]


def test_a_bad_pool_is_refused_naming_the_field():
    with pytest.raises(m.ModelInputError, match="kv_pool_tokens"):
        shape(kv_pool_tokens=0)
    with pytest.raises(m.ModelInputError, match="kv_block_tokens"):
        shape(kv_block_tokens=-784)


def test_the_printout_line_by_hand():
    from claimcheck.cli.common import pool_lines
    assert pool_lines({}) == []
    line = pool_lines({"kv_pool_tokens": 255_317, "kv_block_tokens": 784,
                       "kv_pool_source": "server-start.log: GPU KV cache size"})
    assert line == ["  KV pool: 255,317 tokens in 784-token pages (server-start.log: GPU KV "
                    "cache size); a request is admitted only while it holds the request's "
                    "prompt and output"]
    assert pool_lines({"kv_pool_tokens": None, "kv_pool_source": "x"}) == [
        "  KV pool: not limited (x)"]


def test_an_engine_with_no_run_takes_its_twins_pool_said_so(committed_runs):
    from claimcheck.config.configfiles import load_engines, load_protocols
    from claimcheck.predict.protocolpredict import predict_protocol
    out = predict_protocol(list(committed_runs), "h100", "bf16-dummy-256",
                           load_protocols()["decode-rows-to-256"], load_engines())
    info = out.report["engine_shape"]
    assert info["kv_pool_tokens"] == 255_317 and info["max_num_seqs"] == 256
    assert (out.shape.kv_pool_tokens, out.shape.kv_block_tokens) == (255_317, 784)
    assert "(the twin's: bf16-dummy-256's own pool not measured)" in info["kv_pool_source"]
