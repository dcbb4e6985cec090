"""The calibration rule (calibration.calibrate.choose): chosen among all runs of an engine on a
card, never by which run is predicted; a new run with only a short prompt does not take
over; a run with no usable calibration is named, not a crash. Hand-made runs (copies of
committed ones, edited in tmp_path)."""

from __future__ import annotations

import json
import shutil
import statistics

import pytest

from claimcheck.calibration import calibrate, calibration, picks
from claimcheck.files.errors import InputError
from claimcheck.pipeline.derive import model_rows
from claimcheck.predict import modeltable
from claimcheck.runs.run import load_run
from tests.fabricate import copy_run, edit_json, edit_step

SINGLE = "h200-20261129-bf16-dummy-16k-single-stream"      # 128 x 3, 7,681 x 3 (511 out)
HELD = "h200-20261129-bf16-dummy-16k-single-stream-2"      # the same plus 16 held 7,681
BATCH = "h200-20261129-bf16-dummy-hyperqwen-batch"         # 64 streams only (engine bf16-dummy)
FP8 = "h200-20261129-fp8-hyperqwen-dummy-hyperqwen-batch"  # 64 streams only, FP8


def _new_short_prompt_run(tmp_path, prompt: int = 2048):
    """The issue's new user: a later run of the same engine whose only long one-stream step
    has ``prompt``-token prompts (between decodes, 511 out)."""
    run = copy_run(tmp_path, SINGLE, "h200-20261201-bf16-dummy-16k-new")
    edit_json(run / "provenance.json", lambda p: p.update(started_utc="2026-12-01T09:00:00+00:00"))

    def shorter(b):
        b["input_lens"] = [prompt] * len(b["input_lens"])
        b["ttfts"] = [0.40] * len(b["ttfts"])  # ~320 TFLOP/s, as the new run read
    edit_json(run / "steps" / "01-c1-r1" / "bench.json", shorter)
    edit_step(run, "01-c1-r1", lambda s: s.update(input_len=prompt))
    return run


def test_a_new_short_prompt_run_does_not_take_over(tmp_path):
    new = load_run(_new_short_prompt_run(tmp_path))
    held = load_run(copy_run(tmp_path, HELD))
    runs = [new, held]
    for target in runs:  # the same choice whichever run is predicted
        c = calibrate.choose_for(target, runs)
        assert c.compute is not None and c.compute.label == f"{HELD} step 2 repeat 1"
        assert "held prefill" in c.compute.why
        # 1,533 decode intervals in both 128-token steps: the tie goes to the run started
        # first, so the new run does not move bandwidth either
        assert c.bandwidth.label == f"{HELD} step 0 repeat 1"
        assert "1,533" in c.bandwidth.why
    # compute is the held step's: 7,681 x F_body / (median TTFT - overhead), from bench.json
    shape, info = held.engine
    c = calibrate.choose_for(new, runs)
    cal = calibration.calibration(c, info["compute_dtype"])
    b = json.loads((held.path / "steps" / "02-c1-r1" / "bench.json").read_text())
    want = 7681 * shape.flops_body_per_token / (statistics.median(b["ttfts"])
                                               - cal.request_overhead_s)
    assert cal.flops_s == pytest.approx(want, rel=1e-6)
    # alone, the new run calibrates compute on its own 2,048-token step (the only one)
    alone = calibrate.choose_for(new, [new])
    assert alone.compute.label == "h200-20261201-bf16-dummy-16k-new step 1 repeat 1"
    assert "prompt within one token budget" in alone.compute.why
    low = calibration.calibration(alone, info["compute_dtype"])
    assert low.flops_s == pytest.approx(
        2048 * shape.flops_body_per_token / (0.40 - low.request_overhead_s), rel=1e-6)
    assert low.flops_s < 0.6 * cal.flops_s  # the short prompt's TTFT reads low


def test_a_step_with_more_decode_intervals_is_preferred_and_said(tmp_path):
    held = load_run(copy_run(tmp_path, HELD))
    single = load_run(copy_run(tmp_path, SINGLE))
    c = calibrate.choose_for(held, [held, single])
    # both runs: 128 x 3 (1,533 intervals) and 7,681 x 3 (1,530); SINGLE started first
    assert c.bandwidth.label == f"{SINGLE} step 0 repeat 1"
    assert "of 4 one-stream decode step(s) of engine bf16-dummy-16k on h200 (2 runs)" in \
        c.bandwidth.why


def test_held_step_beats_a_longer_split_prompt(tmp_path):
    """Rank 1 (held, within one budget) before rank 3 (15,000 tokens split), whatever the
    prompt length."""
    run = copy_run(tmp_path, HELD)
    def longer(b):
        b["input_lens"] = [15000] * len(b["input_lens"])
    edit_json(run / "steps" / "01-c1-r1" / "bench.json", longer)
    edit_step(run, "01-c1-r1", lambda s: s.update(input_len=15000))
    r = load_run(run)
    c = calibrate.choose_for(r, [r])
    assert c.compute.label.endswith("step 2 repeat 1")
    # without the held step, a 15,000-token prompt is the only one: rank 3, said
    edit_step(run, "02-c1-r1", lambda s: s.update(status="failed"))
    shutil.rmtree(run / "steps" / "02-c1-r1")
    (run / "steps" / "00-c1-r1")  # unchanged
    r = load_run(run)
    c = calibrate.choose_for(r, [r])
    assert c.compute.label.endswith("step 1 repeat 1")
    assert "longest prefill (split across steps)" in c.compute.why.split(";")[0]


def test_no_usable_calibration_is_named_not_a_crash(tmp_path):
    fp8 = copy_run(tmp_path, FP8)       # no one-stream step of any FP8 engine beside it
    ladder = copy_run(tmp_path, "h200-20261129-bf16-dummy-ladder")  # BF16 only
    with pytest.raises(InputError) as e:
        calibrate.choose_for(load_run(fp8), [load_run(fp8), load_run(ladder)])
    msg = str(e.value)
    assert "fp8-hyperqwen-dummy" in msg and "no usable calibration" in msg and "h200" in msg
    missing: list[str] = []
    rows = model_rows([fp8, ladder], missing)
    assert {r["run"] for r in rows} == {ladder.name}  # the ladder is still modelled
    assert len(missing) == 1 and missing[0].startswith(f"{FP8} not modelled")


def test_model_csv_rows_say_which_steps_and_why(tmp_path):
    batch, ladder = copy_run(tmp_path, BATCH), copy_run(tmp_path, "h200-20261129-bf16-dummy-ladder")
    rows = model_rows([batch, ladder])
    r = next(x for x in rows if x["run"] == BATCH)
    assert r["bandwidth_step"] == "h200-20261129-bf16-dummy-ladder step 0 repeat 1"
    assert "8,176" in r["bandwidth_why"]  # 16 requests x 511 intervals
    assert r["compute_step"] == ""  # no 2,048+ token prompt on BF16 here: the datasheet
    assert r["compute_source"].startswith("fallback") and "2,048+" in r["compute_why"]
    assert r["engine"] == "bf16-dummy" and r["protocol"] == "hyperqwen-batch"
    assert r["weights"] == "dummy"


BEND = "h200-20261201-bf16-dummy-256-bend"           # 96..512 streams, 256 slots
ROWS = "h200-20261201-fp8-hyperqwen-dummy-16k-decode-rows"  # 16..48 rows x 3 repeats


def _runs(*names):
    from claimcheck.files.paths import RUNS
    return [load_run(RUNS / n) for n in names]


def test_decode_row_sources_are_the_flagged_one_wave_steps_within_the_slots():
    runs = _runs(BEND, BATCH, SINGLE)
    rows, who = calibrate.row_sources(runs, "h200", "bf16-dummy-256", "bf16")
    assert who == "bf16-dummy-256"
    # 384 and 512 streams queue on 256 slots: not a measurement of that many rows
    assert sorted(p.step.timeline.streams for p in rows) == [96, 128, 192, 256]
    # a 64-slot BF16 engine without a ladder of its own borrows its weight format's, said
    rows, who = calibrate.row_sources(runs, "h200", "bf16-dummy", "bf16")
    assert who == "bf16-dummy-256" and "engine bf16-dummy has none" in rows[0].why
    # the batch protocol's one-wave steps are not a source (its protocol has no model_term)
    assert calibrate.row_sources(_runs(BATCH), "h200", "bf16-dummy", "bf16") == ((), None)
    # FP8 never borrows BF16's
    assert calibrate.row_sources(runs, "h200", "fp8-hyperqwen-dummy", "fp8") == ((), None)


def test_a_same_kernel_engine_whose_only_run_measured_nothing_is_no_row_source():
    # an engine of the same weight format and kernel (Humming) whose one run was
    # interrupted before any step (no trace) is passed over, not a crash: it stopped the
    # render with "min() arg is an empty sequence" when a second Humming engine arrived
    runs = _runs("h200-20261204-w4a8-dummy-humming-16k-ladder",
                 "h200-20261204-w4a8-int8g-dummy-humming-16k-ladder")
    assert not runs[0].traces and runs[1].traces
    # (a ladder is no decode-row source, so neither engine has rows to give)
    assert calibrate.row_sources(runs, "h200", "w4a8-int8g-dummy-humming-16k",
                                 "w4a16") == ((), None)


def test_the_protocols_that_calibrate_a_term_are_passed_in_not_cached():
    # issue 40 item 4: which protocols' steps calibrate a term is an input (terms), read
    # from config/protocols.yaml at the edge when not given; no module-level cache
    import inspect

    from claimcheck.config.configfiles import load_model_terms, load_protocols
    from claimcheck.config.protocols import model_terms

    assert "lru_cache" not in inspect.getsource(calibrate)
    terms = load_model_terms()
    assert terms == model_terms(load_protocols()) and picks.ROW_TERM in terms
    runs = _runs(BEND, SINGLE)
    given = calibrate.row_sources(runs, "h200", "bf16-dummy-256", "bf16", terms)
    assert given == calibrate.row_sources(runs, "h200", "bf16-dummy-256", "bf16")
    assert given[1] == "bf16-dummy-256"
    # the same runs with no protocol naming the term: no source, whatever the file says
    assert calibrate.row_sources(runs, "h200", "bf16-dummy-256", "bf16", {}) == ((), None)


def test_decode_row_factors_are_measured_over_modelled_tpot_and_mark_their_steps():
    runs = _runs(ROWS, "h200-20261129-fp8-hyperqwen-dummy-16k-single-stream", FP8)
    target = runs[2]
    choice = calibrate.choose_for(target, runs)
    assert len(choice.rows) == 15 and choice.rows_base is not None  # 5 rows x 3 repeats
    cal = calibration.calibration(choice, "fp8")
    assert [n for n, _ in cal.row_factors] == [16, 24, 32, 40, 48]
    # the committed ladder: 11.64 ms at 16 rows (as modelled), 14.33 ms at 24 (17% over)
    f = dict(cal.row_factors)
    assert f[16] == pytest.approx(1.0, abs=0.01) and f[24] == pytest.approx(1.17, abs=0.02)
    out = modeltable.predict_run(runs[0], calibrate.choose_for(runs[0], runs))
    assert all(r["calibration_step"] for r in out["steps"])  # every step is a term source


WAVES = "h200-20261201-bf16-dummy-256-wave-admission"


def test_admission_interval_comes_from_the_flagged_waves_send_times():
    runs = _runs(WAVES, BEND, FP8, SINGLE)
    src = calibrate.admission_sources(runs, "h200", "bf16-dummy-256")
    assert len(src) == 12 and "engine bf16-dummy-256" in src[0].why  # 4 levels x 3
    # an engine without such a run takes the card's (the interval is the client's)
    other = calibrate.admission_sources(runs, "h200", "fp8-hyperqwen-dummy")
    assert len(other) == 12 and "engine fp8-hyperqwen-dummy has none" in other[0].why
    assert calibrate.admission_sources(runs, "rtx3090", "bf16-dummy-256") == ()
    choice = calibrate.choose_for(runs[0], runs)
    cal = calibration.calibration(choice, "bf16")
    # the median over the 12 waves of (last send - first send) / (requests - 1)
    gaps = sorted((max(r.start_s for r in p.step.timeline.requests)
                   - min(r.start_s for r in p.step.timeline.requests))
                  / (len(p.step.timeline.requests) - 1) for p in src)
    assert cal.admission_interval_s == pytest.approx((gaps[5] + gaps[6]) / 2)
    assert 0.0001 < cal.admission_interval_s < 0.001  # sub-millisecond on this host
    # the engine's own waves' speeds feed its sequence-prefill term: calibration steps ...
    assert choice.sequence and all((WAVES, p.step.record["dir"]) in choice.steps()
                                   for p in src)
    # ... while another engine takes only their send times: a test, never a calibration step
    assert calibrate.sequence_sources(other, "fp8-hyperqwen-dummy") == ()
    assert len(calibrate.sequence_sources(src, "bf16-dummy-256")) == 12


ATD_FP8 = "h200-20261129-fp8-hyperqwen-dummy-16k-admit-then-decode"  # 8-64 x 7,681, one wave
SINGLE_FP8 = "h200-20261129-fp8-hyperqwen-dummy-16k-single-stream"


def test_kv_window_by_hand():
    """Two requests sent together: A's first token at 1.0 s then 0.1 s apart, B's first at
    1.3 s. Both decode on (1.3, 1.5]: A's tokens at 1.4 and 1.5 (2) and B's at 1.4 and 1.5
    (2) arrive in it, 4 tokens in 0.2 s = 20 tok/s, a 0.1 s step for 2 streams. Midpoint
    1.4 s: A has 5 tokens (1.0-1.4), B 2 (1.3, 1.4); prompts 100 and 300: mean context
    (105 + 302) / 2 = 203.5."""
    from claimcheck.readings.timeline import RequestTimeline, Timeline

    a = RequestTimeline(start_s=0.0, ttft_s=1.0, prompt_tokens=100,
                        token_times_s=(1.0, 1.1, 1.2, 1.3, 1.4, 1.5), chunks=6)
    b = RequestTimeline(start_s=0.0, ttft_s=1.3, prompt_tokens=300,
                        token_times_s=(1.3, 1.4, 1.5, 1.6), chunks=4)
    step_s, ctx = calibration.kv_window(Timeline(streams=2, requests=(a, b)))
    assert step_s == pytest.approx(0.1)
    assert ctx == pytest.approx(203.5)


def test_kv_read_sources_are_the_flagged_waves_of_the_engine_itself():
    runs = _runs(ATD_FP8, SINGLE_FP8, WAVES)
    src = calibrate.kv_sources(runs, "h200", "fp8-hyperqwen-dummy-16k")
    assert sorted(p.step.timeline.streams for p in src) == [8, 16, 32, 64]
    assert "engine fp8-hyperqwen-dummy-16k" in src[0].why
    # no other engine's KV rate is borrowed (it is its KV dtype's kernel at its context)
    assert calibrate.kv_sources(runs, "h200", "bf16-dummy-256") == ()
    choice = calibrate.choose_for(runs[0], runs)
    cal = calibration.calibration(choice, "fp8")
    # FP8 KV is read well below the weights' rate (here calibrated on single-stream alone,
    # no decode-row factors: 2,589 GB/s), the median of the four steps' own rates
    shape, _ = src[0].run.engine
    rates = sorted(m_kv(shape, cal, p) for p in src)
    assert cal.kv_bandwidth_bytes_s == pytest.approx((rates[1] + rates[2]) / 2)
    assert 1.2e12 < cal.kv_bandwidth_bytes_s < 0.75 * cal.bandwidth_bytes_s
    assert "4 one-wave steps at 8, 16, 32, 64 streams" in cal.kv_source
    # the sources' speeds are used, so they are calibration steps, not tests
    assert all((ATD_FP8, p.step.record["dir"]) in choice.steps() for p in src)


def m_kv(shape, cal, pick):
    """One source step's KV-read rate, from its own window (no row factors here)."""
    from claimcheck.model import model as m
    step_s, ctx = calibration.kv_window(pick.step.timeline)
    return m.kv_bandwidth_from_decode(shape, cal, pick.step.timeline.streams, ctx, step_s)


LADDER_FP8 = "h200-20261202-fp8-hyperqwen-dummy-16k-context-ladder"  # 5 contexts x 8/24/48


def test_kv_read_from_a_ladder_is_its_lines_and_the_other_waves_become_tests():
    """With a run that measured 8, 24 and 48 streams at five contexts each, the KV-read
    term is the median of three lines' inverse slopes (step time over KV bytes at fixed
    streams), worked out here with numpy's least squares; admit-then-decode's one context
    per stream count is no line, so its steps are no source of it (they are of the output
    lag, read off each one-wave step's first token)."""
    import numpy as np

    from claimcheck.model import model as m
    runs = _runs(ATD_FP8, LADDER_FP8, SINGLE_FP8, ROWS)
    src = calibrate.kv_sources(runs, "h200", "fp8-hyperqwen-dummy-16k")
    assert {p.run.name for p in src} == {LADDER_FP8} and len(src) == 15
    assert "three or more contexts" in src[0].why
    choice = calibrate.choose_for(runs[0], runs)
    cal = calibration.calibration(choice, "fp8")
    rates = []
    for n in (8, 24, 48):
        pts = [p for p in src if p.step.timeline.streams == n]
        shape, _ = pts[0].run.engine
        factor = m.row_factor(cal.row_factors, n) if cal.row_factors else 1.0
        x, y = [], []
        for p in pts:
            step_s, ctx = calibration.kv_window(p.step.timeline)
            x.append(n * shape.kv_bytes_per_token * ctx)
            y.append(step_s / factor)
        rates.append(1 / np.polyfit(x, y, 1)[0])
    assert cal.kv_bandwidth_bytes_s == pytest.approx(sorted(rates)[1], rel=1e-9)
    assert 1.2e12 < cal.kv_bandwidth_bytes_s < 1.8e12  # FP8 KV well below its weights
    assert LADDER_FP8 in cal.kv_source and "3 line(s)" in cal.kv_source
    assert not any(p.run.name == ATD_FP8 for p in choice.kv)
    assert {p.run.name for p in choice.lag} >= {ATD_FP8}


def test_each_vllm_release_is_calibrated_on_its_own_runs(tmp_path):
    """A run of another vLLM release never lends its steps (issue 32): the 0.33.0 copy of
    the single-stream run (no held prefill) takes compute from its own split-prompt step,
    although the 0.26.0 run beside it has the better-ranked held prefill, which a choice
    that ignores the release would take; the 0.26.0 run keeps its own."""
    new = copy_run(tmp_path, SINGLE, "h200-20261202-bf16-dummy-16k-vllm033-single-stream")

    def release(p):
        p["software"]["vllm"] = "0.33.0"
        p["engine"] = p["engine_config"]["name"] = "bf16-dummy-16k-vllm033"
    edit_json(new / "provenance.json", release)
    new_run = load_run(new)
    held = load_run(copy_run(tmp_path, HELD))
    runs = [new_run, held]
    mine = calibrate.choose_for(new_run, runs)
    assert {mine.bandwidth.run.name, mine.overhead.run.name, mine.compute.run.name} == {new.name}
    assert "prompt within one token budget" in mine.compute.why
    anyone = calibrate.choose(runs, "h200", "bf16-dummy-16k-vllm033", "bf16")
    assert anyone.compute.label == f"{HELD} step 2 repeat 1"  # what the release rule prevents
    theirs = calibrate.choose_for(held, runs)
    assert theirs.compute.label == f"{HELD} step 2 repeat 1"
    assert new.name not in {p.run.name for p in (theirs.bandwidth, theirs.overhead)}
    with pytest.raises(InputError, match="with vLLM 0.31.0"):
        calibrate.choose(runs, "h200", "bf16-dummy-16k", "bf16", version="0.31.0")


MARLIN_SINGLE = "h200-20261204-w4a16-dummy-marlin-16k-single-stream"
MARLIN_LONG = "h200-20261204-w4a16-dummy-marlin-16k-long-prompts"
MACHETE_SINGLE = "h200-20261204-w4a16-dummy-machete-16k-single-stream"


def test_compute_comes_from_the_engines_kernel_before_a_better_rank_of_another(tmp_path):
    # Marlin's engine without its single-stream run: its long-prompts run has a one-stream
    # step of 4 x 7,681-token prompts (rank 2: within one budget, not held); Machete's
    # single-stream run has a held prefill (rank 1) but runs another kernel
    long = load_run(copy_run(tmp_path, MARLIN_LONG))
    machete = load_run(copy_run(tmp_path, MACHETE_SINGLE))
    assert picks.run_kernel(long) != picks.run_kernel(machete)
    c = calibrate.choose_for(long, [long, machete])
    assert c.compute.label == f"{MARLIN_LONG} step 0 repeat 1"
    assert "prompt within one token budget" in c.compute.why
    assert f"{picks.run_kernel(long)} steps first" in c.compute.why
    # with its own single-stream run the held prefill is its own, as before
    own = load_run(copy_run(tmp_path, MARLIN_SINGLE))
    c = calibrate.choose_for(long, [long, own, machete])
    assert c.compute.label == f"{MARLIN_SINGLE} step 2 repeat 1"
