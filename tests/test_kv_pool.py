"""The KV pool's room (model/simulator.py's request_pages and admission, the pool's pages
from the start log in runs/engine_shape.py): what a request holds, worked out by hand; a
wave the pool cannot hold waits for room, simulated on a hand-made engine; and the
committed H100 runs, whose first waves held as many requests as the pool's pages give."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimcheck.model import model as m
from claimcheck.model import simulator
from claimcheck.readings import serverlog
from claimcheck.runs.engine_shape import kv_groups, pool_pages
from claimcheck.runs.run import load_run
from tests.test_model import CAL, shape  # 10 ms of weights per step, compute nearly free

RUNS = Path(__file__).resolve().parents[1] / "data/raw/runs"
LADDER = RUNS / "h100-20261206-bf16-dummy-16k-context-ladder"
ROWS = RUNS / "h100-20261206-bf16-dummy-256-decode-rows-to-256"


def test_request_pages_by_hand():
    # 4,096 + 384 tokens: 6 pages of 784 in the one attention group, one page in each of
    # the 3 state groups: 9
    hybrid = shape(kv_page_tokens=784, kv_attention_groups=1, kv_state_groups=3)
    assert simulator.request_pages(hybrid, 4480) == 9
    assert simulator.request_pages(hybrid, 640) == 4  # 1 + 3
    assert simulator.request_pages(hybrid, 12384) == 19  # 16 + 3
    assert simulator.request_pages(shape(), 4480) == 4480  # no page known: the tokens


def test_the_pools_pages_by_hand():
    # vLLM counts its pool as 16,384-token requests of 21 + 3 pages: 255,317 tokens are
    # 255,317 x 24 / 16,384 = 373.998 pages, 247,808 are 363.0
    assert pool_pages(255_317, 16_384, 784, 1, 3) == 374
    assert pool_pages(247_808, 16_384, 784, 1, 3) == 363


def test_kv_groups_by_hand():
    class Geom:
        num_full_attention_layers, num_linear_attention_layers = 16, 48
    assert kv_groups(Geom) == (1, 3)
    Geom.num_linear_attention_layers = 0
    assert kv_groups(Geom) == (1, 0)


def test_a_wave_the_pool_cannot_hold_waits_for_room():
    # three prompts of 2 tokens, 2 out: 4 tokens each; a pool of 8 holds two of them. The
    # first two share every step (prefill at 10 ms, decode at 20 ms); the third is admitted
    # when they finish, its tokens at 30 and 40 ms
    sim = simulator.simulate(shape(kv_pool_pages=8), CAL, prompts=[2, 2, 2],
                             outputs=[2, 2, 2], streams=3)
    times = [r.token_times_s for r in sim.timeline.requests]
    assert times == [pytest.approx((0.01, 0.02))] * 2 + [pytest.approx((0.03, 0.04))]
    # with room for all three, one wave: every request done at 20 ms
    sim = simulator.simulate(shape(kv_pool_pages=12), CAL, prompts=[2, 2, 2],
                             outputs=[2, 2, 2], streams=3)
    assert [r.token_times_s for r in sim.timeline.requests] == [pytest.approx((0.01, 0.02))] * 3


def test_a_request_larger_than_the_pool_still_runs_alone():
    sim = simulator.simulate(shape(kv_pool_pages=2), CAL, prompts=[2, 2], outputs=[2, 2],
                             streams=2)
    times = [r.token_times_s for r in sim.timeline.requests]
    assert times == [pytest.approx((0.01, 0.02)), pytest.approx((0.03, 0.04))]


def test_the_start_log_lines_it_is_read_from():
    text = ("INFO [interface.py:905] Setting attention block size to 784 tokens to ensure "
            "that attention page size is >= mamba page size.\n"
            "INFO [kv_cache_utils.py:2177] GPU KV cache size: 255,317 tokens\n"
            "INFO [kv_cache_utils.py:2178] Maximum concurrency for 16,384 tokens per "
            "request: 15.58x\n")
    assert serverlog.attention_block_tokens(text) == 784
    assert serverlog.kv_pool_tokens(text) == 255_317
    assert serverlog.concurrency_tokens(text) == 16_384
    assert serverlog.attention_block_tokens("GPU KV cache size: 1 tokens") is None
    assert serverlog.concurrency_tokens("GPU KV cache size: 1 tokens") is None


def _first_wave(step) -> int:
    """Requests whose first token came before any request's last: admitted at once."""
    reqs = step.timeline.requests
    first_end = min(r.token_times_s[-1] for r in reqs)
    return sum(r.token_times_s[0] < first_end for r in reqs)


@pytest.mark.parametrize("run, step, held", [
    (LADDER, 8, 41), (LADDER, 11, 26), (LADDER, 13, 19), (LADDER, 14, 19), (ROWS, 1, 90)])
def test_the_first_waves_held_what_the_pages_give(run, step, held):
    """Each step whose requests overfill the pool: the requests admitted at once, read off
    its timeline, are the pool's pages over a request's pages (374 // 9, 374 // 14, 374 //
    19 twice, 363 // 4): the measured KV cache usage per request read the same way."""
    r = load_run(run)
    shape_, _ = r.engine
    s = next(s for s in r.traces if s.record["step"] == step)
    t = s.record["input_len"] + s.record["output_len"]
    assert _first_wave(s) == held
    assert shape_.kv_pool_pages // simulator.request_pages(shape_, t) == held


def test_the_committed_h100_engines_pool():
    shape_, info = load_run(LADDER).engine
    assert (shape_.kv_pool_pages, shape_.kv_page_tokens) == (374, 784)
    assert (shape_.kv_attention_groups, shape_.kv_state_groups) == (1, 3)
    assert info["kv_pool_tokens"] == 255_317 and "server-start.log" in info["kv_pool_source"]


def test_a_bad_pool_is_refused_naming_the_field():
    with pytest.raises(m.ModelInputError, match="kv_pool_pages"):
        shape(kv_pool_pages=0)
    with pytest.raises(m.ModelInputError, match="kv_page_tokens"):
        shape(kv_page_tokens=-784)
    with pytest.raises(m.ModelInputError, match=r"EngineShape.kv_attention_groups must be an "
                       r"integer >= 1, got 0"):
        shape(kv_attention_groups=0)
    for bad in (-1, 2.5, float("inf")):
        with pytest.raises(m.ModelInputError, match=r"EngineShape.kv_state_groups must be an "
                           r"integer >= 0, got"):
            shape(kv_state_groups=bad)


def test_a_start_log_with_an_empty_pool_is_refused_naming_the_file(tmp_path):
    from claimcheck.files.errors import InputError
    from tests.fabricate import copy_run
    run = copy_run(tmp_path, LADDER.name)
    log = run / "server-start.log"
    log.write_text(log.read_text().replace("GPU KV cache size: 255,317 tokens",
                                           "GPU KV cache size: 0 tokens"))
    with pytest.raises(InputError, match=r"server-start.log: GPU KV cache size must be at "
                       r"least 1 token, got 0"):
        _ = load_run(run).engine


def test_the_printout_line_by_hand():
    from claimcheck.cli.common import pool_lines
    assert pool_lines({}) == []
    line = pool_lines({"kv_pool_tokens": 255_317, "kv_pool_pages": 374, "kv_page_tokens": 784,
                       "kv_pool_source": "server-start.log"})
    assert line == ["  KV pool: 374 pages of 784 tokens (255,317 tokens as vLLM counts them) "
                    "(server-start.log); a request is admitted only while it holds the "
                    "request's prompt and output"]
    assert pool_lines({"kv_pool_pages": None, "kv_pool_source": "x"}) == [
        "  KV pool: not limited (x)"]


def test_an_engine_with_no_run_of_its_own_takes_its_own_or_its_twins_pool(committed_runs):
    from claimcheck.config.configfiles import load_engines, load_protocols
    from claimcheck.predict.protocolpredict import predict_protocol
    out = predict_protocol(list(committed_runs), "h100", "bf16-dummy-256",
                           load_protocols()["decode-rows-to-256"], load_engines())
    # it has a run on the H100 now: its own pool, 363 pages
    assert out.shape.kv_pool_pages == 363 and out.report["engine_shape"]["max_num_seqs"] == 256
