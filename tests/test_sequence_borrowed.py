"""The per-sequence prefill term borrowed within a weight format
(claimcheck.calibration.wavesources.sequence_sources): an engine with no admission steps of
its own takes the walls of those of its weight format's engines on the card, said as
borrowed; one of another weight format takes none."""

from __future__ import annotations

from claimcheck.calibration import calibrate
from claimcheck.calibration.termsources import term_sources
from claimcheck.predict.crossval import held_out_rows
from claimcheck.verdicts.accuracy import within_both
from tests.conftest import runs_started_before

WAVE_256 = "h100-20261206-bf16-dummy-256-wave-admission"
WAVES_16K = ("h100-20261206-bf16-dummy-16k-wave-admission",
             "h100-20261206-bf16-dummy-16k-wave-admission-2")
SECOND_H100 = "2026-12-07"
"""The day the 256-slot engine ran on a second H100, its own second wave-admission among
those runs: the tests here read the pool before it (:func:`tests.conftest.
runs_started_before`), where that engine's only H100 wave run is :data:`WAVE_256` (so with it
left out the engine has none of its own)."""


def test_no_own_admission_steps_borrow_the_weight_formats(committed_runs):
    """The 256-slot BF16 engine's only H100 wave-admission left out: its sequence prefill
    comes from the BF16 16k engine's two H100 wave-admission runs (24 steps), while its
    admission interval is read off every engine's waves on the card (the Marlin engine's
    too: the client's send times, no engine's prefill)."""
    runs = runs_started_before(committed_runs, SECOND_H100)
    held = next(r for r in runs if r.name == WAVE_256)
    choice = calibrate.choose_for(held, [r for r in runs if r is not held])
    assert {p.run.name for p in choice.sequence} == set(WAVES_16K)
    assert len(choice.sequence) == 24
    assert ("weight format bf16; engine bf16-dummy-256 has none" in choice.sequence[0].why)
    src = term_sources(choice, "bf16-dummy-256")
    assert src["sequence"]["borrowed_from"] == "bf16-dummy-16k"
    assert any("marlin" in r for r in src["admission"]["runs"])


def test_another_weight_format_lends_none(committed_runs):
    """The Marlin engine (W4A16) on the H100 has its own wave-admission; with it left out,
    no W4A16 engine on the card has one, so no sequence term, though BF16's exist."""
    runs = runs_started_before(committed_runs, SECOND_H100)
    held = next(r for r in runs
                if r.name == "h100-20261206-w4a16-dummy-marlin-16k-wave-admission")
    choice = calibrate.choose_for(held, [r for r in runs if r is not held])
    assert choice.admission  # BF16's waves give the send interval
    assert choice.sequence == ()
    adm = choice.admission
    assert calibrate.sequence_sources(adm, "w4a16-dummy-marlin-16k", "w4a16") == ()
    # were it BF16, both BF16 engines' H100 waves: 2 x 12 + 12
    assert len(calibrate.sequence_sources(adm, "w4a16-dummy-marlin-16k", "bf16")) == 36


def test_borrowed_sequence_term_held_out(committed_runs):
    """Cross-validated, the 256-slot engine's H100 wave-admission: 6 of its 12 steps within
    5% (7 before the twenty-fifth session's model, 5 with no sequence term): its 1,000-token
    step -3.9% to -4.2% (-11.6% to -11.9% before: each of its eight chunked admitting steps
    took the per-request overhead, now spent only by a step admitting into an idle engine),
    its 64-stream 100-token steps +3.0% to +5.2% (-1.6% to -3.6% before; +3.4% to +5.5%
    before the per-sequence cost was counted in send intervals), its 16-stream ones -6.9% to
    +8.4% (16-28% slow before)."""
    runs = runs_started_before(committed_runs, SECOND_H100)
    held = next(r for r in runs if r.name == WAVE_256)
    rows = held_out_rows(held, runs)
    assert sum(within_both(r["e2e_error"], r["decode_error"], 0.05) for r in rows) == 6
    long = [r["e2e_error"] for r in rows if r["step"] == 3]
    assert len(long) == 3 and all(-0.045 < e < -0.035 for e in long)
    wide = [r["e2e_error"] for r in rows if r["streams"] == 64 and r["step"] == 2]
    assert len(wide) == 3 and all(0.03 < e < 0.06 for e in wide)
    assert all(-0.07 < r["e2e_error"] < 0.09 for r in rows if r["streams"] == 16)
