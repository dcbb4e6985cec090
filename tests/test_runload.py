"""One run, one read, one number: building a run record opens each run file once, and the
roofline, the calibrated model and the presets use the same engine inputs for every
committed run (W without the 2.54 GB input embedding, S with the conv state, the same
dtypes)."""

from __future__ import annotations

import builtins
import io
from collections import Counter
from pathlib import Path

import pytest

from claimcheck.files.paths import RAW, RUNS
from claimcheck.physics.cardfiles import load_cards, load_ceilings
from claimcheck.physics.engine_inputs import engine_inputs, state_bytes
from claimcheck.physics.modelfiles import geometry_from_file, load_config
from claimcheck.physics.units import GB, GIB
from claimcheck.pipeline import presets
from claimcheck.pipeline.derive import run_record
from claimcheck.runs.run import find_runs, load_run, load_runs
from claimcheck.runs.runfiles import bench_data
from claimcheck.runs.tables import engine_roofline, step_roofline

CONFIG = RAW / "models/qwen3.8-27b/config.json"
GEOM = geometry_from_file(CONFIG)
CARDS = load_cards()
CEILINGS = load_ceilings()
LADDER = RUNS / "h200-20261129-bf16-dummy-ladder"


def test_run_record_reads_each_run_file_once(monkeypatch, tmp_path):
    opened: Counter[str] = Counter()
    real = io.open

    def counting(file, *a, **kw):
        p = Path(file) if isinstance(file, str | Path) else None
        if p is not None and LADDER in p.resolve().parents:
            opened[str(p.resolve().relative_to(LADDER))] += 1
        return real(file, *a, **kw)

    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(builtins, "open", counting)
    run_record(LADDER, RAW / "cards.csv", RAW / "ceilings.csv", CONFIG, tmp_path / "r.json")
    monkeypatch.undo()
    step_files = {f"steps/{d}/{f}" for d in ("00-c1-r1", "01-c8-r1", "02-c16-r1",
                                             "03-c32-r1", "04-c64-r1")
                  for f in ("step.json", "bench.cols")}
    expected = {"provenance.json", "steps.json", "server.log", "server-start.log",
                "telemetry.csv"} | step_files
    assert set(opened) == expected
    assert {k: n for k, n in opened.items() if n != 1} == {}


def test_engine_inputs_by_hand_for_the_bf16_ladder():
    # Qwen3.8-27B: embedding 248,320 x 5,120 values at BF16 = 2.543 GB, left out of W;
    # the engine reported 50.22 GiB. State: 48 DeltaNet layers x 48 v-heads x 128 x 128
    # FP32 values (auto -> the config's float32) plus the conv state at BF16.
    cfg = load_config(CONFIG)
    ei = engine_inputs(GEOM, cfg, {"weight_format": "bf16", "kv_cache_dtype": "auto",
                                   "mamba_ssm_cache_dtype": "auto"}, 50.22)
    embed = cfg.get("text_config", cfg)["vocab_size"] * cfg.get("text_config", cfg)[
        "hidden_size"] * 2
    assert ei.embed_bytes == embed
    assert ei.weight_bytes == 50.22 * GIB - embed
    assert ei.weight_bytes / GB == pytest.approx(51.38, abs=0.005)
    assert (ei.state_dtype, ei.conv_state_dtype, ei.kv_dtype) == ("fp32", "bf16", "bf16")
    assert ei.state_bytes_per_stream == (GEOM.state_values_per_stream * 4
                                         + GEOM.conv_state_values_per_stream * 2)
    assert ei.kv_bytes_per_token == GEOM.kv_bytes_per_token("bf16")
    fp8 = engine_inputs(GEOM, cfg, {"weight_format": "fp8", "kv_cache_dtype": "fp8",
                                    "mamba_ssm_cache_dtype": "float16"}, 27.64)
    assert (fp8.state_dtype, fp8.kv_dtype, fp8.compute_dtype) == ("fp16", "fp8", "fp8")
    assert fp8.state_bytes_per_stream == (GEOM.state_values_per_stream * 2
                                          + GEOM.conv_state_values_per_stream * 2)


@pytest.mark.data  # every committed step or run: make data
@pytest.mark.parametrize("run_dir", find_runs(RUNS), ids=lambda p: p.name)
def test_roofline_model_and_preset_use_the_same_engine_inputs(run_dir: Path):
    run = load_run(run_dir)
    ei = run.engine_inputs
    assert ei is not None and ei.engine_weights_gib == run.weights_gib
    card = CARDS[run.provenance.card]
    step = next((s for s in run.rows if s["status"] == "complete"), None)
    if step is None:  # a run recorded as failed or interrupted: nothing to price
        pytest.skip(f"{run_dir.name}: no complete step ({run.provenance.raw['status']})")
    roof, _ = engine_roofline(ei, GEOM, card, CEILINGS,
                              context_tokens=step["context_tokens_per_stream"])
    shape, info = run.engine
    preset = presets.run_engine_inputs(run_dir)
    assert roof.weight_bytes == shape.weight_bytes == preset.weight_bytes == ei.weight_bytes
    assert roof.state_bytes == shape.state_bytes == ei.state_bytes_per_stream
    assert roof.state_bytes == state_bytes(GEOM, preset.state_dtype, preset.conv_state_dtype)
    assert (roof.kv_bytes_per_token == shape.kv_bytes_per_token == preset.kv_bytes_per_token
            == ei.kv_bytes_per_token)
    assert (info["state_dtype"], info["kv_dtype"], info["compute_dtype"]) == (
        ei.state_dtype, ei.kv_dtype, ei.compute_dtype)
    row = step_roofline(run, step, GEOM, card, CEILINGS)
    assert row["roofline_weights_gib"] == ei.weight_bytes / GIB
    assert row["roofline_state_bytes"] == ei.state_bytes_per_stream


def test_the_loaded_run_is_typed_and_carries_timelines():
    run = load_run(LADDER)
    assert list(run.table["streams"]) == [1, 8, 16, 32, 64]
    assert [t.record["streams"] for t in run.traces] == [1, 8, 16, 32, 64]
    assert list(run.table["timeline_output_tokens"]) == list(
        run.table["vllm_total_output_tokens"])
    assert run.weights_gib == 50.22 and all(t.energy_source == "telemetry"
                                            for t in run.traces)


def test_one_column_per_quantity():
    """No two columns of the step table hold the same figure under two names (issue 27):
    the definitions' own columns, vLLM's summary under ``vllm_`` only, the lanes line's
    shared figures not repeated."""
    run = load_run(LADDER)
    cols = set(run.table.columns)
    for gone in ("e2e_output_tok_s", "aggregate_tpot_tok_s", "aggregate_mean_tpot_tok_s",
                 "per_stream_tok_s", "per_request_tok_s", "tok_s_per_measured_w",
                 "total_output_tokens", "duration_s", "median_itl_ms", "lanes_lanes",
                 "lanes_total_tokens", "lanes_wall_s", "lanes_e2e_tok_s",
                 "per_request_decode_tok_s_per_stream"):
        assert gone not in cols, gone
    # a per-stream reading sits beside an aggregate only: a per-stream definition is its own
    from claimcheck.readings.definitions import DEFINITIONS
    beside = {c.removesuffix("_per_stream") for c in cols
              if c.endswith("_tok_s_per_stream")}
    assert beside == {n for n, v in DEFINITIONS.items()
                      if v.scope == "aggregate" and v.unit.endswith("tok/s")}
    assert {"vllm_e2e_output_tok_s", "vllm_total_output_tokens", "vllm_duration_s",
            "vllm_median_itl_ms", "vllm_max_concurrent_requests"} <= cols


def test_reported_speeds_come_from_the_timeline_vllms_kept_beside():
    run = load_run(LADDER)
    for row, st in zip(run.rows, run.traces, strict=True):
        tl = st.timeline
        bench = bench_data(LADDER / "steps" / st.record["dir"])
        gaps = sorted((r.last_token_s - r.first_token_s) * 1e3 / (r.output_tokens - 1)
                      for r in tl.requests if r.output_tokens > 1)
        n = len(gaps)
        med = (gaps[n // 2] + gaps[(n - 1) // 2]) / 2
        assert row["median_tpot_ms"] == pytest.approx(med, rel=1e-15)
        assert row["streams_x_1000_over_median_tpot_tok_s"] == pytest.approx(
            row["streams"] * 1000 / med, rel=1e-15)
        assert row["e2e_aggregate_tok_s"] == tl.output_tokens / tl.wall_s
        assert row["vllm_e2e_output_tok_s"] == bench["output_throughput"]
        assert row["vllm_median_tpot_ms"] == bench["median_tpot_ms"]
        ttft = sorted(r.ttft_s * 1e3 for r in tl.requests)  # the timeline's, by hand
        assert row["median_ttft_ms"] == pytest.approx(
            (ttft[len(ttft) // 2] + ttft[(len(ttft) - 1) // 2]) / 2, rel=1e-15)
        assert row["vllm_median_ttft_ms"] == bench["median_ttft_ms"]
        assert row["median_ttft_ms"] == pytest.approx(bench["median_ttft_ms"], rel=1e-9)
        # the two roads agree to vLLM's clock reads: TPOT within 1e-6, e2e within 0.5%
        assert row["median_tpot_ms"] == pytest.approx(bench["median_tpot_ms"], rel=1e-6)
        assert row["e2e_aggregate_tok_s"] == pytest.approx(bench["output_throughput"], rel=5e-3)


def test_find_runs_refuses_a_folder_without_provenance_naming_it(tmp_path):
    from claimcheck.files.errors import InputError
    for name in ("run-b", "run-a"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "provenance.json").write_text("{}")
    (tmp_path / "bench-sha256.txt").write_text("")  # the manifest: a file, not a run
    (tmp_path / ".cache").mkdir()  # hidden: not a run
    assert [p.name for p in find_runs(tmp_path)] == ["run-a", "run-b"]
    (tmp_path / "notes").mkdir()
    for reader in (find_runs, load_runs):
        with pytest.raises(InputError, match=r"notes/provenance\.json.*missing"):
            reader(tmp_path)


def test_load_window_is_the_last_duration_before_the_client_exited():
    from claimcheck.runs.steprow import load_window
    # client ran 900 -> 1000 s, the bench's load lasted 50 s: 1000 - 1 = 999, 999 - 50 = 949
    assert load_window(900.0, 1000.0, 50.0) == (949.0, 999.0)
    # a duration longer than the client ran: never before its start
    assert load_window(980.0, 1000.0, 50.0) == (980.0, 999.0)
    assert load_window(900.0, 1000.0, None) == (900.0, 1000.0)  # no duration: as recorded
    # no start recorded: the window collapses to its end (as before: start or t1)
    assert load_window(None, 1000.0, 50.0) == (999.0, 999.0)
