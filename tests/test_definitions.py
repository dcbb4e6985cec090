"""Every definition on hand-made timelines whose answers are worked out here by hand."""

from __future__ import annotations

from collections import namedtuple

import pytest

from claimcheck.claims.metrics import METRICS
from claimcheck.readings import definitions as d
from claimcheck.readings.timeline import Timeline, request_timeline


def tl(streams, *reqs):
    """Requests as (start, ttft, itls, tokens[, prompt[, chunk_tokens]])."""
    out = []
    for r in reqs:
        start, ttft, itls, n = r[:4]
        prompt = r[4] if len(r) > 4 else 10
        chunks = r[5] if len(r) > 5 else None
        out.append(request_timeline(start, ttft, itls, n, prompt, chunks))
    return Timeline(streams=streams, requests=tuple(out))


# One stream, one request of 5 tokens in 3 chunks, the middle chunk carrying 3 tokens:
# tokens at 0.5 | 0.6 0.6 0.6 | 0.8.
CHUNKY = tl(1, (0.0, 0.5, [0.1, 0.2], 5, 100, [1, 3, 1]))


def test_chunk_carrying_three_tokens():
    assert d.e2e_aggregate_tok_s(CHUNKY) == pytest.approx(5 / 0.8)
    # 4 tokens after the first over 0.5 -> 0.8
    assert d.decode_aggregate_tok_s(CHUNKY) == pytest.approx(4 / 0.3)
    assert d.tpots_ms(CHUNKY) == pytest.approx([300 / 4])
    assert d.streams_x_1000_over_median_tpot(CHUNKY) == pytest.approx(1000 / 75)
    assert d.per_request_decode_tok_s(CHUNKY) == pytest.approx(4 / 0.3)
    # tokens, not chunks: [0.5, 0.65) holds 1 + 3 tokens (2 chunks)
    assert d.fastest_window(CHUNKY, 0.15) == (pytest.approx(0.5), 4)
    assert d.fastest_second_tok_s(CHUNKY, 0.15) == pytest.approx(4 / 0.15)
    # the whole request in one second: 5 tokens
    assert d.fastest_second_tok_s(CHUNKY) == 5.0
    # one stream: the only stream decodes on (0.5, 0.8], holding 4 tokens
    assert d.all_streams_decoding_tok_s(CHUNKY) == pytest.approx(4 / 0.3)
    # 100 prompt tokens / 0.5 s TTFT
    assert d.prefill_tok_s(CHUNKY) == pytest.approx(200.0)


# Two streams, a ramp and a tail with one stream left:
#   A: sent 0,   first token 1, tokens at 1 2 3 4          (4 tokens, TPOT 1000 ms)
#   B: sent 0.5, first token 2, tokens at 2 2.5 ... 6      (9 tokens, TPOT 500 ms)
RAMP_TAIL = tl(2, (0.0, 1.0, [1.0] * 3, 4), (0.5, 1.5, [0.5] * 8, 9))


def test_ramp_and_tail_with_one_stream_left():
    t = RAMP_TAIL
    assert t.output_tokens == 13 and t.wall_s == pytest.approx(6.0)
    assert d.e2e_aggregate_tok_s(t) == pytest.approx(13 / 6)
    # decoding on (1, 4] u (2, 6] = (1, 6], 5 s; 13 - 2 first tokens = 11
    assert d.decode_window_s(t) == pytest.approx(5.0)
    assert d.decode_aggregate_tok_s(t) == pytest.approx(11 / 5)
    # both decode on (2, 4]: A's 3, 4 and B's 2.5, 3, 3.5, 4 (B's first token at 2 is out)
    assert d.all_decoding_spans(t) == [(2.0, 4.0)]
    assert d.all_streams_decoding_tok_s(t) == pytest.approx(6 / 2)
    # TPOTs 1000 and 500 ms: median = mean = 750 -> 2 x 1000 / 750
    assert d.streams_x_1000_over_median_tpot(t) == pytest.approx(2000 / 750)
    assert d.streams_x_1000_over_mean_tpot(t) == pytest.approx(2000 / 750)
    # per request rates 1 and 2 tok/s: median 1.5
    assert d.per_request_decode_tok_s(t) == pytest.approx(1.5)
    # best 1 s: e.g. [2, 3) holds A's 2 and B's 2, 2.5
    assert d.fastest_second_tok_s(t) == 3.0
    assert d.prefill_tok_s(t) is None  # two streams
    ln = d.lanes_line(t)
    assert ln.plan_s == pytest.approx(2.0)  # first send 0 to the last lane's first token
    assert ln.tail_s == pytest.approx(2.0)  # 4 -> 6 with only B left
    assert ln.total_tokens == 13 and ln.wall_s == pytest.approx(6.0)
    assert ln.decode_tok_s == pytest.approx(11 / 5)
    assert ln.per_lane_tok_s == pytest.approx(11 / 10)


def test_mean_and_median_tpot_differ():
    # TPOTs 100, 200, 600 ms (tokens 2 each, gaps 0.1, 0.2, 0.6 s): median 200, mean 300
    t = tl(3, (0, 0.1, [0.1], 2), (0, 0.1, [0.2], 2), (0, 0.1, [0.6], 2))
    assert d.streams_x_1000_over_median_tpot(t) == pytest.approx(3000 / 200)
    assert d.streams_x_1000_over_mean_tpot(t) == pytest.approx(3000 / 300)


# Two streams that never decode together: A on (1, 2], B on (3, 4].
NO_ALL_N = tl(2, (0.0, 1.0, [1.0], 2), (2.0, 1.0, [1.0], 2))


def test_step_with_no_all_n_window():
    assert d.all_decoding_spans(NO_ALL_N) == []
    assert d.all_streams_decoding_tok_s(NO_ALL_N) is None
    # decode: 2 tokens after first over (1, 2] u (3, 4] = 2 s
    assert d.decode_aggregate_tok_s(NO_ALL_N) == pytest.approx(1.0)
    assert d.e2e_aggregate_tok_s(NO_ALL_N) == pytest.approx(4 / 4)
    ln = d.lanes_line(NO_ALL_N)
    assert ln.plan_s == pytest.approx(3.0) and ln.tail_s == pytest.approx(1.0)


def test_waves_count_every_all_n_plateau():
    # Two waves of two: (1, 3] & (1, 3], then (4, 6] & (4, 6]: spans (1, 3] and (4, 6]
    t = tl(2, (0, 1, [1, 1], 3), (0, 1, [1, 1], 3), (3, 1, [1, 1], 3), (3, 1, [1, 1], 3))
    assert d.all_decoding_spans(t) == [(1.0, 3.0), (4.0, 6.0)]
    # 8 decode tokens over 4 s
    assert d.all_streams_decoding_tok_s(t) == pytest.approx(2.0)


Line = namedtuple("Line", "prompt_tok_s generation_tok_s running")


def test_engine_log_steady_median_of_full_prefill_free_lines():
    lines = [Line(0, 100, 4), Line(0, 120, 4), Line(5, 200, 4), Line(0, 300, 3),
             Line(0, 110, 4), Line(0, 0, 4)]
    assert d.engine_log_steady_tok_s(lines, 4) == 110
    assert d.engine_log_steady_tok_s(lines[2:4], 4) is None


def test_energy_and_tokens_per_joule():
    samples = [(0.0, 100.0), (1.0, 200.0), (2.0, 200.0)]
    # 0.5 -> 1: (150 + 200) / 2 x 0.5 = 87.5 J; 1 -> 2: 200 J
    assert d.energy_j(samples, 0.5, 2.0) == pytest.approx(287.5)
    assert d.tokens_per_joule(575, 287.5) == pytest.approx(2.0)
    assert d.energy_j(samples, 0.5, 3.0) is None  # not covered
    assert d.tokens_per_joule(575, None) is None


def test_per_stream_and_aggregate_readings():
    assert d.definition_per_stream("e2e_aggregate_tok_s", 640.0, 8, None) == 80.0
    assert d.definition_per_stream("per_request_decode_tok_s", 80.0, 8, None) == 80.0
    assert d.aggregate("per_request_decode_tok_s", 80.0, 8, None) == 640.0
    assert d.aggregate("per_request_decode_tok_s", 80.0, 8, 4) == 320.0  # 4 ran at once
    assert d.definition_per_stream("tokens_per_joule", 2.0, 8, None) is None
    assert d.definition_per_stream("all_streams_decoding_tok_s", None, 8, None) is None


def test_per_stream_divides_by_the_streams_that_ran_at_once():
    """The one divisor: 384 streams asked of an engine with 256 slots share 4,674 tok/s
    among the 256 that run (18.3 each), not among the 384 asked (12.2, the figure the bend
    run's queued rows printed beside a headline divided by 256)."""
    assert d.per_stream(4674.0, 384, 256) == pytest.approx(4674.0 / 256)
    assert d.per_stream(4674.0, 128, 256) == pytest.approx(4674.0 / 128)  # not queued
    assert d.per_stream(4674.0, 384, None) == pytest.approx(4674.0 / 384)  # slots unknown
    assert d.definition_per_stream("decode_aggregate_tok_s", 4674.0, 384, 256) == \
        d.per_stream(4674.0, 384, 256)
    assert d.per_stream(None, 8, 4) is None


def test_a_formula_over_the_streams_asked_reads_back_one_requests_speed():
    """streams x 1000 / median TPOT multiplies one request's speed by the streams asked, so
    its per-stream reading is that speed, 1000 / TPOT, queued or not: 128 streams asked of
    64 slots at a 22.5 ms median TPOT give 5,688.9 tok/s and 44.4 per stream, not 88.9
    (the aggregate over the 64 that ran at once)."""
    agg = d.streams_x_1000_over_tpot(128, 22.5)
    assert agg == pytest.approx(128 * 1000 / 22.5)
    for name in ("streams_x_1000_over_median_tpot_tok_s", "streams_x_1000_over_mean_tpot_tok_s"):
        assert d.DEFINITIONS[name].sums_over == "asked"
        assert d.definition_per_stream(name, agg, 128, 64) == pytest.approx(1000 / 22.5)
    assert {n for n, x in d.DEFINITIONS.items() if x.sums_over == "asked"} == {
        "streams_x_1000_over_median_tpot_tok_s", "streams_x_1000_over_mean_tpot_tok_s"}


def test_definitions_table_maps_to_registry_names():
    assert set(d.REGISTRY_METRIC) == set(d.DEFINITIONS)
    for name, reg in d.REGISTRY_METRIC.items():
        assert reg is None or reg in METRICS, name
    for dfn in d.DEFINITIONS.values():
        assert dfn.unit and dfn.divides_by and dfn.leaves_out
        assert dfn.scope in ("aggregate", "per_stream")
    assert set(d.all_definitions(RAMP_TAIL)) == set(d.DEFINITIONS)


def test_a_held_prefill_step_has_no_decode_definition():
    # two requests back to back, 1,000-token prompts, 2 tokens out each: prefill 0.1 s, then
    # one 10 ms gap. 1000 / 10 ms would read 100 tok/s: no decode rate, so None.
    held = tl(1, (0.0, 0.1, [0.01], 2, 1000), (0.12, 0.1, [0.01], 2, 1000))
    vals = d.all_definitions(held)
    for name, defn in d.DEFINITIONS.items():
        if defn.phase == "decode":
            assert vals[name] is None, name
    assert vals["e2e_aggregate_tok_s"] == pytest.approx(4 / 0.23)
    assert vals["prefill_tok_s"] == pytest.approx(1000 / 0.1)
    # the definition functions themselves still compute (the bench's arithmetic)
    assert d.streams_x_1000_over_median_tpot(held) == pytest.approx(100.0)


# A step the protocol built for decode (128 tokens asked per request) whose two requests
# each stopped after 2 tokens: one 10 ms gap per request. Asked and observed disagree.
STOPPED_AT_TWO = tl(1, (0.0, 0.1, [0.01], 2, 1000), (0.12, 0.1, [0.01], 2, 1000))


def test_held_prefill_is_one_rule_of_asked_and_observed():
    assert d.is_held_prefill(2) and d.is_held_prefill(1) and d.is_held_prefill(0)
    assert not d.is_held_prefill(3) and not d.is_held_prefill(None)
    assert not d.is_held_prefill(None, None)
    # the two disagree: 128 asked (decode by design), 2 observed (one gap per request):
    # either side at most 2 tokens makes it held, so no decode rate is read from it
    assert d.max_output_tokens(STOPPED_AT_TWO) == 2
    assert d.is_held_prefill(128, d.max_output_tokens(STOPPED_AT_TWO))
    assert d.is_held_prefill(2, 128)  # asked 2: a prefill step by design
    assert not d.is_held_prefill(128, 3)
    assert d.max_output_tokens(Timeline(streams=1, requests=())) is None
    vals = d.all_definitions(STOPPED_AT_TWO, requested_output_len=128)
    assert vals["decode_aggregate_tok_s"] is None
    assert vals["streams_x_1000_over_median_tpot_tok_s"] is None  # not the 100 tok/s of one gap
    assert vals["e2e_aggregate_tok_s"] == pytest.approx(4 / 0.23)
    # a step row: asked 128, observed 2 -> held; a failed step's row (no observed) -> asked
    assert d.row_is_held_prefill({"output_len": 128, "max_output_tokens": 2})
    assert not d.row_is_held_prefill({"output_len": 128, "max_output_tokens": 128})
    assert not d.row_is_held_prefill({"output_len": 128})
    assert d.row_is_held_prefill({"output_len": 2})


def test_queued_is_one_rule():
    # 256 streams on 128 slots: 128 run at once, the rest queue
    assert d.running_at_once(256, 128) == 128 and d.is_queued(256, 128)
    assert d.running_at_once(128, 128) == 128 and not d.is_queued(128, 128)
    assert d.running_at_once(64, None) == 64 and not d.is_queued(64, None)  # slots unknown


def test_a_tpot_of_zero_gives_no_streams_x_1000_aggregate():
    """Requests of 2 tokens that got both in one streamed chunk have a TPOT of 0 ms (the
    committed 64-stream wave step's median): streams x 1000 / TPOT has no value there, not a
    division by zero; any positive TPOT divides as before."""
    assert d.streams_x_1000_over_tpot(64, 0.0) is None
    assert d.streams_x_1000_over_tpot(64, 25.0) == pytest.approx(2560.0)
