"""The token timeline: token placement on chunks, worked by hand, and the H200 fixtures."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from claimcheck.readings import definitions as d
from claimcheck.readings.timeline import (
    from_bench,
    intervals_with_at_least,
    request_timeline,
    spread_tokens,
)
from claimcheck.runs import runfiles
from tests.fabricate import bench

RUNS = Path(__file__).resolve().parents[1] / "data" / "raw" / "runs"
BENCHES = sorted(p for p in RUNS.glob("h200-*/steps/*") if runfiles.bench_path(p) is not None)


def test_spread_first_chunk_one_token_rest_even():
    # 5 tokens in 3 chunks: first chunk 1, then 4 over 2 chunks = 2 + 2
    assert spread_tokens(5, 3) == [1, 2, 2]
    # 4 tokens in 3 chunks: 3 over 2 chunks, floor(1*3/2)=1, floor(2*3/2)-1=2
    assert spread_tokens(4, 3) == [1, 1, 2]
    # plain streaming: one token per chunk
    assert spread_tokens(6, 6) == [1] * 6
    # fewer tokens than chunks (an empty final chunk): 1 over 3 later chunks lands last
    assert spread_tokens(2, 4) == [1, 0, 0, 1]
    assert spread_tokens(0, 3) == []


def test_request_times_from_start_ttft_and_cumulative_itls():
    r = request_timeline(10.0, 0.5, [0.1, 0.2], output_tokens=5, prompt_tokens=7)
    # chunks at 10.5, 10.6, 10.8 carrying 1, 2, 2 tokens
    assert r.token_times_s == pytest.approx((10.5, 10.6, 10.6, 10.8, 10.8))
    assert r.output_tokens == 5 and r.chunks == 3


def test_chunk_tokens_from_the_client_override_the_spread():
    r = request_timeline(0.0, 0.5, [0.1, 0.2], output_tokens=5, prompt_tokens=7,
                         chunk_tokens=[1, 3, 1])
    assert r.token_times_s == pytest.approx((0.5, 0.6, 0.6, 0.6, 0.8))
    with pytest.raises(ValueError, match="sum to 4"):
        request_timeline(0.0, 0.5, [0.1, 0.2], 5, 7, chunk_tokens=[1, 2, 1])
    with pytest.raises(ValueError, match="2 entries for 3 chunks"):
        request_timeline(0.0, 0.5, [0.1, 0.2], 5, 7, chunk_tokens=[1, 4])


def test_from_bench_counts_usage_tokens_not_chunks_and_skips_failures():
    res = {"start_times": [0.0, 0.0], "ttfts": [0.5, 0.0], "itls": [[0.1, 0.2], []],
           "output_lens": [9, 0], "input_lens": [7, 7], "errors": ["", "timeout"],
           "chunk_tokens": [[1, 4, 4], []], "duration": 1.0}
    tl = from_bench(res, streams=2)
    assert tl.output_tokens == 9 and tl.failed == 1 and len(tl.requests) == 1
    assert tl.requests[0].token_times_s.count(0.5 + 0.1 + 0.2) == 4


def test_from_bench_names_a_missing_key():
    with pytest.raises(ValueError, match="itls: missing; run vllm bench serve with "
                                         "--save-detailed"):
        from_bench({"start_times": [0.0], "ttfts": [0.1], "output_lens": [1],
                    "input_lens": [1]}, 1)


def test_touching_intervals_never_overlap():
    # (1, 2] and (2, 3]: one closes as the other opens; never two at once
    assert intervals_with_at_least([(1.0, 2.0), (2.0, 3.0)], 2) == []
    assert intervals_with_at_least([(1.0, 2.0), (2.0, 3.0)], 1) == [(1.0, 3.0)]


@pytest.mark.data  # every committed step or run: make data
@pytest.mark.parametrize("path", BENCHES, ids=lambda p: f"{p.parts[-3]}/{p.parts[-1]}")
def test_h200_timeline_matches_bench(path: Path):
    res = bench(path)
    streams = json.loads((path / "step.json").read_text())["streams"]
    tl = from_bench(res, streams)
    assert tl.output_tokens == res["total_output_tokens"]
    # end to end from the timeline (first send to last token) against the bench's own
    # output_throughput (tokens / its duration, which starts a moment before the first send)
    assert d.e2e_aggregate_tok_s(tl) == pytest.approx(res["output_throughput"], rel=5e-3)
    # per request TPOT is (latency - TTFT) / (tokens - 1): the bench's median and mean.
    # The bench reads its clock once more for the latency, so sums of ITLs differ from it by
    # under a microsecond per request: 1e-6 relative, or 1 us (1e-3 ms) where a request has
    # only 2 tokens and its TPOT is one gap (the held-prefill step).
    tpots = d.tpots_ms(tl)
    assert statistics.median(tpots) == pytest.approx(res["median_tpot_ms"], rel=1e-6, abs=1e-3)
    assert statistics.fmean(tpots) == pytest.approx(res["mean_tpot_ms"], rel=1e-6, abs=1e-3)
    assert d.streams_x_1000_over_median_tpot(tl) == pytest.approx(
        streams * 1000 / res["median_tpot_ms"], rel=1e-6 + 1e-3 / res["median_tpot_ms"])
    assert d.streams_x_1000_over_mean_tpot(tl) == pytest.approx(
        streams * 1000 / res["mean_tpot_ms"], rel=1e-6 + 1e-3 / res["mean_tpot_ms"])


def test_streams_x_1000_over_tpot_is_the_articles_arithmetic():
    # seed 000, Update: 64 x 1000 / 54.94 ms = 1,165; 64 x 1000 / 59.48 ms = 1,076;
    # HyperQwen's demo: 64 x 1000 / 61.2 ms = 1,046
    assert d.streams_x_1000_over_tpot(64, 54.94) == pytest.approx(1165, abs=0.5)
    assert d.streams_x_1000_over_tpot(64, 59.48) == pytest.approx(1076, abs=0.5)
    assert d.streams_x_1000_over_tpot(64, 61.2) == pytest.approx(1046, abs=0.5)


def test_h200_fixtures_exist():
    assert len(BENCHES) >= 9  # every committed H200 step is a fixture below


def test_chunk_tokens_with_a_missing_count_fall_back_to_the_spread():
    # claimcheck's load client writes None for a chunk that came without usage
    r = request_timeline(0.0, 0.5, [0.1, 0.2], output_tokens=5, prompt_tokens=7,
                         chunk_tokens=[1, None, 1])
    assert r.token_times_s == pytest.approx((0.5, 0.6, 0.6, 0.8, 0.8))
