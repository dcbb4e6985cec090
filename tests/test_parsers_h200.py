"""Parsers against real outputs saved from the H200 runs (data/raw/runs/).

Expected values are computed here from the raw JSON and log text by hand-written
arithmetic, independently of the parser under test.
"""

import re

import pytest

from claimcheck.files.paths import RUNS
from claimcheck.readings import serverlog
from claimcheck.readings.bench import per_request, summarize
from claimcheck.runs.run import load_run
from tests.fabricate import bench, copy_run

BATCH = RUNS / "h200-20261129-bf16-dummy-hyperqwen-batch"
LADDER = RUNS / "h200-20261129-bf16-dummy-ladder"
FP8 = RUNS / "h200-20261129-fp8-hyperqwen-dummy-hyperqwen-batch"


def test_bench_summary_matches_raw_json():
    raw = bench(BATCH / "steps/00-c64-r2")
    s = summarize(raw, 64)
    assert s["completed"] == 256 and s["failed"] == 0
    assert s["total_output_tokens"] == 256 * 512
    assert s["e2e_output_tok_s"] == pytest.approx(raw["total_output_tokens"] / raw["duration"])
    assert s["per_stream_tok_s"] == pytest.approx(1000 / raw["median_tpot_ms"])
    assert s["aggregate_tpot_tok_s"] == pytest.approx(64 * 1000 / raw["median_tpot_ms"])


def test_per_request_counts_are_usage_not_chunks():
    raw = bench(BATCH / "steps/00-c64-r2")
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


def test_run_reports_second_pass():
    run = load_run(BATCH)
    assert run.dummy and "dummy weights" in run.label
    rep = run.reported
    assert len(rep) == 1 and rep[0]["repeat"] == 2


LOG_LINE = ("(APIServer pid=1) INFO 11-29 {t} [loggers.py:310] Engine 000: Avg prompt "
            "throughput: {p} tokens/s, Avg generation throughput: {g} tokens/s, Running: "
            "{n} reqs, Waiting: 0 reqs, GPU KV cache usage: 16.9%, Prefix cache hit rate: 0.0%")


def test_steady_state_window_on_a_hand_made_log(tmp_path):
    # Pass 2 of the batch run: the client ran 09:26:13-09:27:25 UTC and its bench.json says
    # the load itself took 47.5 s, so the load filled about 09:26:37-09:27:24; the first
    # ~20 s were the client starting up. Hand-made log lines, far from every edge:
    run = copy_run(tmp_path, "h200-20261129-bf16-dummy-hyperqwen-batch")
    lines = [("09:26:20", 0.0, 9999.0, 64),   # client start-up: not the load
             ("09:26:50", 0.0, 3000.0, 64),   # in the load, all 64 running, no prefill
             ("09:27:00", 0.0, 3100.0, 64),
             ("09:27:10", 0.0, 3300.0, 64),
             ("09:27:05", 0.0, 4000.0, 63),   # not all running
             ("09:27:15", 100.0, 5000.0, 64),  # prompt tokens in the window
             ("09:27:40", 0.0, 1.0, 64)]      # after the client exited
    (run / "server.log").write_text("\n".join(
        LOG_LINE.format(t=t, p=p, g=g, n=n) for t, p, g, n in lines) + "\n")
    kept = load_run(run).reported[0]
    assert kept["engine_log_steady_lines"] == 3
    assert kept["engine_log_steady_tok_s"] == 3100.0  # median of 3000, 3100, 3300


def test_ladder_rows_and_power():
    run = load_run(LADDER)
    rows = run.reported
    assert [r["streams"] for r in rows] == [1, 8, 16, 32, 64]
    assert all(r["completed"] == r["requests"] for r in rows)
    # per stream speed falls and aggregate rises with streams on this card
    ps = "streams_x_1000_over_median_tpot_tok_s_per_stream"
    assert [r[ps] for r in rows] == sorted((r[ps] for r in rows), reverse=True)
    assert all(200 < r["telemetry_mean_power_w"] <= 700 for r in rows)
    assert rows[0]["context_tokens_per_stream"] == 640


def test_fp8_engine_facts():
    run = load_run(FP8)
    assert (run.weights_gib, run.kv_pool_tokens) == (27.64, 1_329_152)


@pytest.mark.parametrize("line, kernel", [
    ("(EngineCore pid=2530) INFO 12-01 13:48:56 [__init__.py:635] Selected "
     "CutlassFP8ScaledMMLinearKernel for Fp8PerTensorOnlineLinearMethod", "cutlassfp8scaledmm"),
    ("INFO [kernel.py:1] Using MacheteLinearKernel for AutoGPTQLinearMethod", "machete"),
    ("INFO [kernel.py:1] Using fp8 data type to store kv cache.", None),
])
def test_gemm_kernel_read_either_way_the_log_names_it(line, kernel):
    assert serverlog.gemm_kernel(line) == kernel
    # the weight-only reading keeps to "Using ...": FP8's "Selected" line is not one
    assert serverlog.linear_kernel(line) == (None if kernel == "cutlassfp8scaledmm" else kernel)


def test_the_fp8_runs_name_their_gemm_from_the_start_log():
    assert load_run(FP8).gemm_kernel == "cutlassfp8scaledmm"
    assert load_run(BATCH).gemm_kernel is None  # BF16 names none

