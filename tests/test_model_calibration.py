"""Calibration from the 16k single-stream run: bandwidth from its 128-token step, compute
from its 7,681-token prefill; both below the H200 datasheet; the model table covers every
step of every committed run."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from claimcheck.calibration import calibrate, calibration
from claimcheck.model import model as m
from claimcheck.predict import modeltable
from claimcheck.runs.run import load_run
from tests.fabricate import bench

RUNS = Path(__file__).resolve().parents[1] / "data" / "raw" / "runs"
SINGLE = RUNS / "h200-20261129-bf16-dummy-16k-single-stream"
HELD = RUNS / "h200-20261129-bf16-dummy-16k-single-stream-2"  # with the held-prefill step
FP8_SINGLE = RUNS / "h200-20261129-fp8-hyperqwen-dummy-16k-single-stream"
H200_FP8_TFLOPS = 1979.0  # datasheet dense FP8, data/raw/cards.csv
H200_GB_S, H200_BF16_TFLOPS = 4800.0, 989.0  # datasheet, data/raw/cards.csv


def _bench(step: str) -> dict:
    return bench(SINGLE / "steps" / step)


def _cal(run, runs=None):
    """The calibration of ``run``'s engine chosen by the rule among ``runs`` (default: it)."""
    c = calibrate.choose_for(run, runs or [run])
    return calibration.calibration(c, run.engine[1]["compute_dtype"])


def test_compute_is_calibrated_from_the_long_prefill():
    run = load_run(SINGLE)
    cal = _cal(run)
    assert "7681-token prompts" in cal.compute_source
    assert not cal.compute_source.startswith("fallback")
    assert "step 0" in cal.bandwidth_source  # the 128-token step, not the long one
    # independently: prompt x F_body / (median TTFT - overhead), TTFT from bench.json (ms)
    shape, _ = run.engine
    b = _bench("01-c1-r1")
    ttft_s = statistics.median(b["ttfts"])
    want = 7681 * shape.flops_body_per_token / (ttft_s - cal.request_overhead_s)
    assert abs(cal.flops_s / want - 1) < 1e-3
    # physically plausible: below the datasheet, above half of it for a 7.7k-token prefill
    assert 0.5 * H200_BF16_TFLOPS < cal.flops_s / 1e12 < H200_BF16_TFLOPS
    assert 0.5 * H200_GB_S < cal.bandwidth_bytes_s / 1e9 < H200_GB_S
    # the overhead is what the 128-token step's TTFT leaves after its (short) prefill
    assert 0 < cal.request_overhead_s < statistics.median(_bench("00-c1-r1")["ttfts"])


def test_every_run_gets_a_calibration_on_its_card_and_a_row_per_step(committed_runs):
    dirs = sorted(p for p in RUNS.iterdir() if p.is_dir())
    assert [r.path for r in committed_runs] == dirs
    unmodelled: list[str] = []
    rows = modeltable.table_rows(list(committed_runs), unmodelled)  # derive.model_rows
    drafting = {r.path for r in committed_runs if r.drafts}
    assert drafting  # the forced-acceptance run: no plain model of a drafting step
    assert len(unmodelled) == len(drafting)
    assert all("its engine drafts" in w for w in unmodelled)
    # steps.json per run; a run the runner stopped before writing it (interrupted in its
    # first step, tests/test_record.py) has no step to model, nor has a step interrupted
    # while its client ran (recorded since 2026-12-04 with no client output kept)
    steps = sum(1 for d in dirs if d not in drafting and (d / "steps.json").is_file()
                for s in json.loads((d / "steps.json").read_text())
                if any((d / "steps" / s["dir"]).glob("bench.*")))
    assert len(rows) == steps
    for r in rows:
        assert r["bandwidth_gb_s"] < H200_GB_S
        # compute measured below the datasheet; the datasheet only where no one-stream
        # long-prompt step of the format exists (the W4A16 runs), and said so
        if r["compute_step"]:
            assert r["tflops"] < H200_BF16_TFLOPS
        else:
            assert r["tflops"] == pytest.approx(H200_BF16_TFLOPS, rel=1e-3), r["run"]
            assert r["compute_source"].startswith("fallback: NVIDIA H200 datasheet dense")
            assert "no one-stream step with prompts of 2,048+ tokens" in r["compute_why"]
        # a miss of more than 5% always names its term; a hit never does
        missed = abs(r["e2e_error"]) > 0.05 or abs(r["decode_error"] or 0) > 0.05
        assert (r["miss_term"] is not None) == missed
    by_run = {r["run"]: (r["bandwidth_step"], r["compute_step"]) for r in rows}
    # the 16k engine: bandwidth from its one-stream step with the most decode intervals
    # (long prompts: 4 x 510), compute from its held-prefill step, whichever run is predicted
    bf16_16k = ("h200-20261129-bf16-dummy-16k-long-prompts step 0 repeat 1",
                f"{HELD.name} step 2 repeat 1")
    assert by_run[SINGLE.name] == by_run[HELD.name] == bf16_16k
    # FP8 runs calibrate on the FP8 16k engine's runs, also the 4,096 engine (no one-stream
    # step of its own)
    fp8 = ("h200-20261129-fp8-hyperqwen-dummy-16k-long-prompts step 0 repeat 1",
           f"{FP8_SINGLE.name} step 2 repeat 1")
    assert by_run["h200-20261129-fp8-hyperqwen-dummy-hyperqwen-batch"] == fp8
    assert by_run["h200-20261129-fp8-hyperqwen-dummy-16k-serving-gate"] == fp8
    # the BF16 4,096 engine: its own ladder (same engine first), the 16k engine's held step
    assert by_run["h200-20261129-bf16-dummy-hyperqwen-batch"] == (
        "h200-20261129-bf16-dummy-ladder step 0 repeat 1", bf16_16k[1])


def test_long_prompt_threshold_is_what_selects_the_compute_step():
    assert m.LONG_PROMPT_TOKENS <= 7681


def test_compute_comes_from_the_held_prefill_step_when_a_run_has_one():
    """16 prompts of 7,681 tokens back to back (2 out): the card at its power limit, the rate
    batched prefill sees; worked from bench.json, not from the model's own loaders."""
    run = load_run(HELD)
    cal = _cal(run)
    assert "step 2 repeat 1" in cal.compute_source and "7681-token prompts" in cal.compute_source
    shape, _ = run.engine
    b = bench(HELD / "steps" / "02-c1-r1")
    assert b["completed"] == 16
    want = 7681 * shape.flops_body_per_token / (statistics.median(b["ttfts"])
                                               - cal.request_overhead_s)
    assert abs(cal.flops_s / want - 1) < 1e-3


def test_fp8_calibration_is_below_the_fp8_datasheet_and_its_own_bandwidth_is_lower():
    run = load_run(FP8_SINGLE)
    cal = _cal(run)
    bf16 = _cal(load_run(HELD))
    assert 0.25 * H200_FP8_TFLOPS < cal.flops_s / 1e12 < H200_FP8_TFLOPS
    assert 0.5 * H200_GB_S < cal.bandwidth_bytes_s / 1e9 < bf16.bandwidth_bytes_s / 1e9


def test_compute_run_prefers_the_same_weight_format_over_the_name(committed_runs):
    """The BF16 4,096 engine has no long prefill of its own: its compute comes from the BF16
    16k engine's held step, never from the FP8 engine's (which sorts later by name)."""
    runs = list(committed_runs)
    ladder = next(r for r in runs if r.name == "h200-20261129-bf16-dummy-ladder")
    chosen = calibrate.choose_for(ladder, runs).compute
    assert chosen is not None and chosen.run.name == HELD.name
    fp8 = next(r for r in runs if r.name == "h200-20261129-fp8-hyperqwen-dummy-hyperqwen-batch")
    assert calibrate.choose_for(fp8, runs).compute.run.name == FP8_SINGLE.name


def test_both_calibration_steps_are_marked():
    held = load_run(HELD)
    rows = {r["step"]: r["calibration_step"] for r in modeltable.predict(held, held)["steps"]}
    assert rows == {0: True, 1: False, 2: True}  # bandwidth from 0, compute from 2
