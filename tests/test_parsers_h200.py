"""Parsers against real outputs saved from the H200 runs (data/raw/runs/).

Expected values are computed here from the raw JSON and log text by hand-written
arithmetic, independently of the parser under test.
"""

import json
import re
import statistics

import pytest

from claimcheck.core.paths import RUNS
from claimcheck.measure import serverlog
from claimcheck.measure.bench import per_request, summarize
from claimcheck.report.record import engine_facts, load_run, reported_steps

BATCH = RUNS / "h200-20261129-bf16-dummy-hyperqwen-batch"
LADDER = RUNS / "h200-20261129-bf16-dummy-ladder"
FP8 = RUNS / "h200-20261129-fp8-hyperqwen-dummy-hyperqwen-batch"


def test_bench_summary_matches_raw_json():
    raw = json.loads((BATCH / "steps/00-c64-r2/bench.json").read_text())
    s = summarize(raw, 64)
    assert s["completed"] == 256 and s["failed"] == 0
    assert s["total_output_tokens"] == 256 * 512
    assert s["e2e_output_tok_s"] == pytest.approx(raw["total_output_tokens"] / raw["duration"])
    assert s["per_stream_tok_s"] == pytest.approx(1000 / raw["median_tpot_ms"])
    assert s["aggregate_tpot_tok_s"] == pytest.approx(64 * 1000 / raw["median_tpot_ms"])


def test_per_request_counts_are_usage_not_chunks():
    raw = json.loads((BATCH / "steps/00-c64-r2/bench.json").read_text())
    rows = per_request(raw)
    assert len(rows) == 256
    assert sum(r["output_tokens"] for r in rows) == raw["total_output_tokens"]
    assert all(r["error"] == "" for r in rows)
    # tpot per request = sum of inter-token gaps / (tokens - 1)
    r0 = rows[0]
    assert r0["tpot_s"] == pytest.approx(sum(raw["itls"][0]) / (raw["output_lens"][0] - 1))


def test_engine_log_lines_parsed_by_hand():
    text = (LADDER / "server.log").read_text()
    lines = serverlog.stats_lines(text)
    pat = re.compile(r"Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs")
    hand = [(float(m[1]), int(m[2])) for m in pat.finditer(text)]
    assert [(s.generation_tok_s, s.running) for s in lines] == hand
    start = (LADDER / "server-start.log").read_text()
    assert serverlog.weights_gib(start) == 50.22
    assert serverlog.kv_pool_tokens(start) == 689_038


def test_steady_state_definition():
    lines = [serverlog.StatsLine(1, None, 0.0, 100.0, 64, 0, 0, None),
             serverlog.StatsLine(2, None, 5.0, 900.0, 64, 0, 0, None),   # prefill in window
             serverlog.StatsLine(3, None, 0.0, 300.0, 63, 0, 0, None),   # not all running
             serverlog.StatsLine(4, None, 0.0, 200.0, 64, 0, 0, None),
             serverlog.StatsLine(5, None, 0.0, 400.0, 64, 0, 0, None)]
    assert serverlog.steady_state_tok_s(lines, 64) == 200.0
    assert serverlog.steady_state_tok_s(lines[:3], 64) == 100.0
    assert serverlog.steady_state_tok_s(lines[1:3], 64) is None


def test_run_reports_second_pass_and_steady_state():
    run = load_run(BATCH)
    assert run.dummy and "dummy weights" in run.label
    rep = reported_steps(run)
    assert len(rep) == 1 and rep[0]["repeat"] == 2
    # the 64-running, no-prompt lines inside step 2's time window, found by hand
    prov = json.loads((BATCH / "provenance.json").read_text())
    st = prov["steps"][1]
    text = (BATCH / "server.log").read_text()
    duration = json.loads((BATCH / "steps" / st["dir"] / "bench.json").read_text())["duration"]
    t1 = st["end_unix_s"] - 1.0  # the load window: the last `duration` s before exit
    t0 = t1 - duration
    import datetime as dt
    vals = []
    for m in re.finditer(r"(\d\d-\d\d \d\d:\d\d:\d\d).*Avg prompt throughput: ([\d.]+) tokens/s, "
                         r"Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+)", text):
        t = dt.datetime.strptime("2026-" + m[1], "%Y-%m-%d %H:%M:%S").replace(
            tzinfo=dt.UTC).timestamp()
        if t0 - 1 <= t <= t1 + 5 and float(m[2]) == 0 \
                and int(m[4]) >= 64 and float(m[3]) > 0:
            vals.append(float(m[3]))
    assert rep[0]["engine_log_steady_tok_s"] == (statistics.median(vals) if vals else None)


def test_ladder_rows_and_power():
    run = load_run(LADDER)
    rows = reported_steps(run)
    assert [r["streams"] for r in rows] == [1, 8, 16, 32, 64]
    assert all(r["completed"] == r["requests"] for r in rows)
    # per stream speed falls and aggregate rises with streams on this card
    assert [r["per_stream_tok_s"] for r in rows] == sorted(
        (r["per_stream_tok_s"] for r in rows), reverse=True)
    assert all(200 < r["telemetry_mean_power_w"] <= 700 for r in rows)
    assert rows[0]["context_tokens_per_stream"] == 640


def test_fp8_engine_facts():
    facts = engine_facts(load_run(FP8))
    assert facts == {"weights_gib": 27.64, "kv_pool_tokens": 1_329_152}
