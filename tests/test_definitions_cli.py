"""`claimcheck metrics RUN_DIR` on the committed H200 runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claimcheck.cli import main
from tests.fabricate import bench as fab_bench
from tests.fabricate import plain_copy, seal

RUNS = Path(__file__).resolve().parents[1] / "data" / "raw" / "runs"
LADDER = RUNS / "h200-20261129-bf16-dummy-ladder"
REQUIRED = ["streams", "requests", "e2e_aggregate_tok_s", "decode_aggregate_tok_s",
            "streams_x_1000_over_median_tpot_tok_s", "streams_x_1000_over_mean_tpot_tok_s",
            "all_streams_decoding_tok_s", "fastest_second_tok_s", "engine_log_steady_tok_s",
            "per_request_decode_tok_s", "prefill_tok_s"]


def test_metrics_json_every_step(capsys):
    assert main(["metrics", str(LADDER), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    steps = out["steps"]
    assert [s["streams"] for s in steps] == [1, 8, 16, 32, 64]
    for s in steps:
        for k in REQUIRED:
            assert k in s, k
        bench = fab_bench(LADDER / "steps" / f"{s['step']:02d}-c{s['streams']}-r1")
        assert s["e2e_aggregate_tok_s"] == pytest.approx(bench["output_throughput"], rel=5e-3)
        assert s["e2e_aggregate_tok_s_per_stream"] == pytest.approx(
            s["e2e_aggregate_tok_s"] / s["streams"])
        # end to end counts everything, so it is the smallest of the averages; the fastest
        # second is at least any average over a longer window
        assert s["e2e_aggregate_tok_s"] <= s["decode_aggregate_tok_s"]
        assert s["decode_aggregate_tok_s"] <= s["fastest_second_tok_s"]
    assert steps[0]["prefill_tok_s"] is not None
    assert all(s["prefill_tok_s"] is None for s in steps[1:])
    # the 64-stream step holds 10-s log lines with all 64 running and no prefill
    assert steps[-1]["engine_log_steady_tok_s"] is not None


def test_metrics_table_states_units_and_what_is_left_out(capsys):
    assert main(["metrics", str(LADDER)]) == 0
    text = capsys.readouterr().out
    assert "tok/s" in text and "per stream" in text and "leaves out" in text
    assert "64 stream(s), 256 requests" in text
    # the ladder's step records carry no lengths: the protocol's, not '?'
    assert "context per stream: 128 prompt + 512 output tokens" in text
    # the definitions' column is as wide as the longest name: values line up
    lines = [ln for ln in text.splitlines() if ln.startswith("  ") and "tok/" in ln
             and not ln.startswith("  lanes")]
    assert len(lines) == 5 * 10 and len({ln.rindex("  ") for ln in lines}) == 1


def test_metrics_on_a_directory_that_is_no_run(tmp_path, capsys):
    assert main(["metrics", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    # the one refusal every reader of a run gives (runs.runload.read_provenance)
    assert f"{tmp_path}/provenance.json: missing: every run directory needs its" in err


def test_metrics_table_rows_are_flat():
    from claimcheck.runs.run import load_run
    from claimcheck.runs.steptable import metrics_table

    rows = metrics_table(load_run(LADDER))
    assert len(rows) == 5
    for r in rows:
        assert r["run"] == LADDER.name and r["card"] == "h200"
        assert all(not isinstance(v, dict | list) for v in r.values())
        assert "lanes_total_tokens" not in r and r["output_tokens"] > 0  # one column each


def test_metrics_skips_steps_without_tokens(tmp_path, capsys):
    run = tmp_path / LADDER.name  # the name its provenance records (else: a copy)
    plain_copy(LADDER, run)
    # a failed step: every request errored, nothing generated
    bench = run / "steps" / "00-c1-r1" / "bench.json"
    res = json.loads(bench.read_text())
    n = len(res["output_lens"])
    res.update(output_lens=[0] * n, ttfts=[0.0] * n, itls=[[]] * n,
               errors=["Server disconnected"] * n)
    bench.write_text(json.dumps(res))
    (run / "steps" / "01-c8-r1" / "bench.json").unlink()
    # the record says so: both steps failed (a complete step without bench.json is refused)
    for name in ("provenance.json", "steps.json"):
        rec = json.loads((run / name).read_text())
        for st in rec["steps"] if name == "provenance.json" else rec:
            if st["dir"] in ("00-c1-r1", "01-c8-r1"):
                st.update(status="failed", reason="fabricated failure")
        (run / name).write_text(json.dumps(rec))
    seal(run)  # the edited result as the manifest lists it: the test is of the edit
    assert main(["metrics", str(run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["streams"] for s in out["steps"]] == [16, 32, 64]
    assert out["skipped"] == ["00-c1-r1: no request produced tokens",
                              "01-c8-r1: no bench.json (step failed)"]


def test_metrics_names_a_bench_file_with_mismatched_arrays(tmp_path, capsys):
    run = tmp_path / LADDER.name  # the name its provenance records (else: a copy)
    plain_copy(LADDER, run)
    bench = run / "steps" / "00-c1-r1" / "bench.json"
    res = json.loads(bench.read_text())
    res["itls"] = res["itls"][:-1]
    bench.write_text(json.dumps(res))
    seal(run)
    assert main(["metrics", str(run)]) == 2
    err = capsys.readouterr().err
    assert str(bench) in err and "itls: 15 entries, output_lens has 16" in err
