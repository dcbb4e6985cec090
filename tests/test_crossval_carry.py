"""Cross-validation of a run whose engine has no calibration left on its card without it:
its steps predicted by the carried path from the other cards' runs alone
(:mod:`claimcheck.predict.crossval_carry`), said in ``carried_from``."""

from __future__ import annotations

import pytest

from claimcheck.calibration.calibrate import choose_for, run_key
from claimcheck.calibration.layout import run_version
from claimcheck.calibration.termsources import TERMS
from claimcheck.files.errors import InputError
from claimcheck.predict import crossval as cv
from tests.conftest import runs_started_before
from tests.test_crossval import _slowed

TARGET = "h100-20261205-bf16-dummy-16k-single-stream"
LATER = "h100-20261206-bf16-dummy-16k-"
"""The BF16 engine's H100 runs of 2026-12-06 (single-stream, wave-admission, decode rows):
with them the engine has a one-stream decode step on the card without the target, so the
tests of the carried path leave them out (the pool of the earlier sessions), with the
256-slot BF16 engine's H100 run of the same day (:data:`LATER_TOO`) and every run since
(:data:`LATER_STILL`)."""
LATER_TOO = "h100-20261206-bf16-dummy-256-"
LATER_STILL = "2026-12-07"
"""The day the 256-slot BF16 engine ran on a second H100."""


def _target(runs):
    return next(r for r in runs if r.name == TARGET)


def _earlier(committed_runs):
    """The committed runs started before :data:`LATER_STILL`, but :data:`LATER`'s and
    :data:`LATER_TOO`'s."""
    return [r for r in runs_started_before(committed_runs, LATER_STILL)
            if not r.name.startswith((LATER, LATER_TOO))]


def test_with_the_later_single_stream_the_target_is_calibrated_on_its_card(committed_runs):
    """With 2026-12-06's H100 runs in the pool, the target keeps a calibration on the h100
    with itself left out: its bandwidth from one of them (the one-stream step with the most
    decode intervals: the long-prompts run's 4 x 511, before the single-stream run's
    3 x 512), nothing carried."""
    runs = list(committed_runs)
    target = _target(runs)
    choice = choose_for(target, [r for r in runs if r is not target])
    assert choice.bandwidth.run.name == LATER + "long-prompts"
    rows = cv.held_out_rows(target, runs)
    assert {r["carried_from"] for r in rows} == {""}
    assert {r["bandwidth_runs"] for r in rows} == {LATER + "long-prompts"}


def test_h100_single_stream_is_carried_from_the_h200(committed_runs):
    """The H100's BF16 single-stream run left out: the H100 keeps only that engine's
    hyperqwen-batch run (64 streams), so no one-stream decode step, and choose_for refuses.
    Its four steps are then predicted from the H200's runs alone: carried_from h200, no
    term's run on the h100 or the run itself, and the 1-stream 128 + 512 decode is
    predict_carried's for single-stream on the h100 from every committed run but the
    H100's (at the run's vLLM release and power limit) -- the same per-step simulation, as
    the run's timeline has the protocol's lengths. (The pool of the earlier sessions:
    :func:`_earlier`.)"""
    from claimcheck.config.configfiles import load_engines, load_protocols
    from claimcheck.predict.carry import predict_carried

    runs = _earlier(committed_runs)
    target = _target(runs)
    with pytest.raises(InputError, match="no one-stream decode step"):
        choose_for(target, [r for r in runs if r is not target])
    rows = cv.held_out_rows(target, runs)
    assert len(rows) == len(target.traces) == 4
    by_name = {r.name: r for r in runs}
    for r in rows:
        assert r["carried_from"] == "h200" and r["cv_note"] == ""
        assert r["predicted_e2e_tok_s"] is not None
        assert r["e2e_error"] == pytest.approx(
            r["predicted_e2e_tok_s"] / r["measured_e2e_tok_s"] - 1)
        sources = [n for t in TERMS for n in r[f"{t}_runs"].split("; ") if n]
        assert sources, "a carried row names its terms' runs"
        assert TARGET not in sources
        assert all(run_key(by_name[n])[0] == "h200" for n in sources), sources
    # the one-stream decode step, as the run measured it: 3 requests of 128 + 512 tokens
    step0 = next(r for r in rows if (r["step"], r["repeat"]) == (0, 1))
    tl = target.traces[0].timeline
    assert (tl.streams, [q.prompt_tokens for q in tl.requests],
            [q.output_tokens for q in tl.requests]) == (1, [128] * 3, [512] * 3)
    pool = [r for r in runs if not r.name.startswith("h100-")]  # every run but the H100's
    assert len(pool) == len(runs) - 8  # the H100 runs: 3 sessions, 2 engines, 8 runs
    expected = predict_carried(pool, "h100", "bf16-dummy-16k",
                               load_protocols()["single-stream"], load_engines(),
                               power_limit_w=target.provenance.gpu.power_limit_enforced_w,
                               version=run_version(target))
    first = expected["steps"][0]
    assert (first["streams"], first["requests"], first["input_len"], first["output_len"]) \
        == (1, 3, 128, 512)
    assert expected["carried"]["from_card"] == "h200"
    assert step0["predicted_decode_tok_s"] == pytest.approx(first["predicted_decode_tok_s"],
                                                            rel=1e-12)
    assert step0["predicted_e2e_tok_s"] == pytest.approx(first["predicted_e2e_tok_s"],
                                                         rel=1e-12)
    # every carried term's runs, the ones no *_runs column holds too (the power clock
    # ratio's telemetry), are of the h200
    for term in expected["carried"]["terms"].values():
        assert all(n.startswith("h200-") for n in term["source_runs"]), term["name"]


def test_nothing_measured_on_the_target_card_moves_a_carried_prediction(committed_runs):
    """Every run on the h100 (the held-out one too) slowed by 25%: the carried predictions
    of the held-out run do not move, though the slowing reaches the model (the same
    engine's hyperqwen-batch run on the h100, calibrated on the slowed single-stream run,
    moves), while the h200 run its bandwidth was carried from, slowed, moves them. (The
    pool of the earlier sessions: :func:`_earlier`.)"""
    runs = _earlier(committed_runs)
    target = _target(runs)
    base = cv.held_out_rows(target, runs)
    slow_h100 = [_slowed(r, 1.25) if run_key(r)[0] == "h100" else r for r in runs]
    moved = cv.held_out_rows(_target(slow_h100), slow_h100)
    assert [r["predicted_e2e_tok_s"] for r in moved] == [r["predicted_e2e_tok_s"] for r in base]
    batch = TARGET.replace("single-stream", "hyperqwen-batch")
    hq = [next(r for r in rs if r.name == batch) for rs in (runs, slow_h100)]
    assert cv.held_out_rows(hq[1], slow_h100)[0]["predicted_decode_tok_s"] < \
        cv.held_out_rows(hq[0], runs)[0]["predicted_decode_tok_s"]
    src = base[0]["bandwidth_runs"]
    assert src and ";" not in src and src.startswith("h200-")
    slow_src = [_slowed(r, 1.25) if r.name == src else r for r in runs]
    after = cv.held_out_rows(target, slow_src)
    assert after[0]["predicted_decode_tok_s"] < base[0]["predicted_decode_tok_s"]


def test_no_other_card_keeps_the_step_unpredicted_with_both_reasons(committed_runs):
    """The H100's runs alone: nothing to carry from, so the held-out single-stream run's
    steps keep no prediction, cv_note naming both refusals, and count as unpredicted."""
    runs = [r for r in _earlier(committed_runs) if run_key(r)[0] == "h100"]
    rows = cv.held_out_rows(_target(runs), runs)
    assert [r["predicted_e2e_tok_s"] for r in rows] == [None] * 4
    assert all(r["carried_from"] == "" for r in rows)
    note = rows[0]["cv_note"]
    assert note.startswith("no calibration without this run: ")
    assert "nor carried from another card: " in note
    assert "no committed run on any card but h100" in note
    counted = [{**r, "in_sample_e2e_error": 0.0, "in_sample_decode_error": 0.0} for r in rows]
    assert cv.summary(counted)["unpredicted"] == 4 and cv.summary(counted)["carried"] == 0


def test_carried_counts_by_hand():
    """Two carried steps of one run on card x (terms from y), one of another run on x from
    z, a carried failed step (never counted) and an uncarried one."""
    def row(run, carried, status="complete"):
        return {"run": run, "card": "x", "engine": "e", "carried_from": carried,
                "cv_note": "", "step_status": status, "e2e_error": 0.0, "decode_error": 0.0,
                "in_sample_e2e_error": 0.0, "in_sample_decode_error": 0.0}
    rows = [row("r1", "y"), row("r1", "y"), row("r2", "z"), row("r2", "z", "failed"),
            row("r3", ""), row("r4", None)]
    assert cv.summary(rows)["carried"] == 3 and cv.summary(rows)["unpredicted"] == 0
    assert cv.carried_groups(rows) == [
        {"card": "x", "from_card": "y", "steps": 2, "runs": 1},
        {"card": "x", "from_card": "z", "steps": 1, "runs": 1}]


def test_compute_carried_from_another_card_when_this_card_has_no_long_prompt(committed_runs):
    """The Marlin engine on the H100 with its single-stream run left out: its ladder gives
    the one-stream decode step, but no step on the H100 has prompts of 2,048+ tokens, so the
    compute comes from the engine's own held prefill on the H200 (7,681-token prompts),
    carried by the dense BF16 rates of the two datasheets (989.4 and 989.4 TFLOP/s: x 1), not
    the H100's datasheet rate, which Marlin's prefill is nowhere near (333 TFLOP/s on the
    H200, by the module doc of calibration.calibrate)."""
    from claimcheck.calibration.calibrate import choose
    from claimcheck.calibration.calibration import calibration

    runs = list(committed_runs)
    left = "h100-20261205-w4a16-dummy-marlin-16k-single-stream"
    pool = [r for r in runs if r.name != left]
    ch = choose(pool, "h100", "w4a16-dummy-marlin-16k", "w4a16", version="0.26.0")
    assert ch.compute is not None and ch.compute_missing == ""
    assert ch.compute.run.name == "h200-20261204-w4a16-dummy-marlin-16k-single-stream"
    assert ch.compute_scale == pytest.approx(989.4 / 989.4)
    cal = calibration(ch, "bf16")
    assert "carried from NVIDIA H200" in cal.compute_source
    assert 300e12 < cal.flops_s < 370e12  # Marlin's prefill rate, not 989.4e12
    # the same engine's own choice on the H200 measures that step at about the same rate
    # (its own per-request overhead subtracted there)
    own = calibration(choose(pool, "h200", "w4a16-dummy-marlin-16k", "w4a16",
                             version="0.26.0"), "bf16")
    assert cal.flops_s == pytest.approx(own.flops_s, rel=0.03)
    # with every other card's runs gone, the datasheet fallback, said
    alone = choose([r for r in pool if run_key(r)[0] == "h100"], "h100",
                   "w4a16-dummy-marlin-16k", "w4a16", version="0.26.0")
    assert alone.compute is None and alone.compute_scale is None
    assert calibration(alone, "bf16").flops_s == pytest.approx(989.4e12)


def test_marlin_on_hopper_carries_to_hopper(committed_runs):
    """The carry rule leaves a kernel's runs out where the local card is off the kernel's
    architectures (Marlin, built for Ampere and Ada, on the Hopper H200: not what it does on a
    3090). Carried to a card of the same architecture (the H100, Hopper), those runs are what
    the kernel does there too: eta is the Marlin engine's own, carried, not the BF16 path's."""
    from claimcheck.config.configfiles import load_engines
    from claimcheck.predict.carry import carried_terms

    pool = [r for r in committed_runs if run_key(r)[0] != "h100"]
    spec = load_engines()["w4a16-dummy-marlin-16k"]
    to_h100 = carried_terms(pool, "h100", spec, None, "0.26.0")
    assert to_h100["eta_engine"] == "w4a16-dummy-marlin-16k"
    assert to_h100["terms"]["eta"].status == "carried"
    to_3090 = carried_terms(pool, "rtx3090", spec, None, "0.26.0")
    assert to_3090["terms"]["eta"].status == "assumed"
    assert to_3090["eta_engine"].startswith("bf16-")
