"""The same step measured by another run (issue 43): the other runs' measurement set against
a run's as if it were the prediction, and its count beside the model's. Values worked out
by hand below; the committed runs' counts at the end."""

import pytest

from claimcheck.predict import crossval as cv
from claimcheck.update import crossval_words as CVW


def _row(run, step, e2e, dec, streams=64, status="complete", model=(0.0, 0.0)):
    return {"run": run, "card": "h200", "engine": "a", "protocol": "wave", "step": step,
            "repeat": 1, "streams": streams, "requests": streams, "step_status": status,
            "measured_e2e_tok_s": e2e, "measured_decode_tok_s": dec, "weights": "dummy",
            "e2e_error": model[0], "decode_error": model[1], "in_sample_e2e_error": 0.0,
            "in_sample_decode_error": 0.0, "cv_note": ""}


ROWS = [
    _row("A", 0, 100.0, 50.0, model=(0.02, 0.0)),
    _row("B", 0, 108.0, 52.0, model=(-0.07, 0.0)),
    _row("B", 0, 112.0, 54.0, model=(0.01, 0.01)),
    _row("C", 0, 96.0, None, model=(0.03, None)),
    _row("C", 0, 500.0, 500.0, status="failed"),   # never a replicate
    _row("A", 1, 100.0, 50.0, streams=32),        # no other run measured it
]


def test_replicates_by_hand():
    out = cv.with_replicates(ROWS)
    a, b1, b2, c, failed, alone = out
    # A: the other runs' e2e 108, 112, 96 -> median 108: 108 / 100 - 1 = +8%; their decode
    # 52, 54 (C measured none) -> 53: 53 / 50 - 1 = +6%
    assert a["replicate_runs"] == "B; C"
    assert a["replicate_e2e_error"] == pytest.approx(0.08)
    assert a["replicate_decode_error"] == pytest.approx(0.06)
    # B's first repeat: A 100 and C 96 -> 98: 98 / 108 - 1; decode A's 50 alone: 50 / 52 - 1
    assert b1["replicate_runs"] == "A; C"
    assert b1["replicate_e2e_error"] == pytest.approx(98 / 108 - 1)
    assert b1["replicate_decode_error"] == pytest.approx(50 / 52 - 1)
    assert b2["replicate_e2e_error"] == pytest.approx(98 / 112 - 1)
    # C: A 100, B 108 and 112 -> 108: +12.5%; C measured no decode: none to compare
    assert c["replicate_e2e_error"] == pytest.approx(108 / 96 - 1)
    assert c["replicate_decode_error"] is None
    # a step no other run measured: no replicate
    assert alone["replicate_runs"] == "" and alone["replicate_e2e_error"] is None
    # counted over the complete rows another run measured: A, B1, B2, C (4); the other
    # run within 5% on both: B1 (-9.3%)? no; B2 (-12.5%) no; A (+8%) no; C (+12.5%) no -> 0.
    # The model within on both over the same 4: A, B2 and C (B1's -7% misses) -> 3
    s = cv.summary(out)
    assert s["replicated"] == {"steps": 4, "both_within": 0, "model_both_within": 3}


def test_one_value_per_step_by_hand():
    """The most steps one value per step could put within 5% on both (the spread of the
    measurements themselves). Step 0 measured e2e 100 (A), 108 and 112 (B), 96 (C, no
    decode): a value p hits m where p / m - 1 is within 5%, so m in [p / 1.05, p / 0.95],
    a span of 1.05 / 0.95 = 1.105: 100 and 108 fit (1.08; p in [102.6, 105]), 96 and 108
    do not (1.125), nor 100 and 112 (1.12); their decode 50 and 52 fit (p in [49.4,
    52.5]): 2 rows. Step 1 (A alone): 1. The failed row is never counted: 3 of 5."""
    s = cv.summary(cv.with_replicates(ROWS))
    assert (s["steps"], s["one_value"]) == (5, 3)
    # decode can split a pair e2e would take together: 100 / 108 with decode 50 / 60
    # (60 / 50 = 1.2): one each
    assert cv.one_value([_row("A", 0, 100.0, 50.0), _row("B", 0, 108.0, 60.0)]) == 1
    # the span one value reaches is 1.05 / 0.95 = 1.1053: 100 and 110.4 both hit (by p in
    # [104.88, 105]), 100 and 110.6 not
    assert cv.one_value([_row("A", 0, 100.0, None), _row("B", 0, 110.4, None)]) == 2
    assert cv.one_value([_row("A", 0, 100.0, None), _row("B", 0, 110.6, None)]) == 1
    # the Update says it, and the appendix per engine (engine a: 3 of 5)
    v = {x.name: x for x in CVW.cv_values(cv.with_replicates(ROWS))}
    assert v["cv.has_one_value"].value is True and v["cv.one_value"].value == 3
    assert ("lands within 5% on both at most at 3 of the 5 steps: the most a model that "
            "gives a step one number can reach, by engine `a` 3 of 5.") in " ".join(
                CVW.appendix_section(ROWS).split())
    # ... and per protocol, its column beside the counts: every row here is of `wave`, 5
    # complete steps, held out within 5% on both at 4 (all but B's -7%), in sample 5, one
    # number per step at most 3
    table = CVW.appendix_section(ROWS)
    assert "in sample | one number per step, at most |\n|---|---:|---:|---:|---:|" in table
    assert "| `wave` | 5 | 4 | 5 | 3 |\n" in table
    # rows with no measurement (a table without them): no count, no sentence
    bare = [{k: v for k, v in r.items() if not k.startswith("measured")} for r in ROWS]
    assert {x.name: x for x in CVW.cv_values(bare)}["cv.has_one_value"].value is False
    assert "one number" not in CVW.appendix_section(bare)


def test_close_replicates_count_within():
    """Two runs 4% apart: each within 5% of the other (100/104 - 1 = -3.8%, +4.0%)."""
    out = cv.with_replicates([_row("A", 0, 100.0, 40.0), _row("B", 0, 104.0, 41.0)])
    assert [round(r["replicate_e2e_error"], 4) for r in out] == [0.04, round(100 / 104 - 1, 4)]
    assert cv.summary(out)["replicated"] == {"steps": 2, "both_within": 2,
                                             "model_both_within": 2}


def test_update_words_and_appendix_by_hand():
    out = cv.with_replicates(ROWS)
    v = {x.name: x for x in CVW.cv_values(out)}
    assert v["cv.worst_has_replicates"].value is True
    assert (v["cv.worst_replicated"].value, v["cv.worst_replicate_within"].value,
            v["cv.worst_replicate_model"].value) == (4, 0, 3)
    table = CVW.appendix_section(out)
    # engine a: 5 complete steps, 4 measured by another run, 0 of them within, the model 3
    assert "| `a` | 5 | 4 | 0 | 3 |" in table and "| all | 5 | 4 | 0 | 3 |" in table
    # the band no one prediction within 5% of two runs can span: 1.05 / 0.95 - 1 = 10.5%
    assert "Where two runs of a step lie more than 10.5% apart" in table
    # with no step measured twice, neither the values nor the table speak of it
    lone = cv.with_replicates([ROWS[0], ROWS[-1]])
    v = {x.name: x for x in CVW.cv_values(lone)}
    assert v["cv.worst_has_replicates"].value is False
    assert "measured by another run too" not in CVW.appendix_section(lone)


def _clocked(run, step, clock, model, protocol="rows", streams=64):
    return {**_row(run, step, 100.0, 50.0, streams=streams, model=model),
            "protocol": protocol, "sm_clock_mhz": clock}


def test_slower_clock_by_hand():
    """A miss whose card ran the step slower than every other run of it: counted with the
    median of its clocks and of the others' (values by hand)."""
    rows = [_clocked("A", 0, 1500.0, (0.07, 0.08)),   # miss; B 1600, C 1700 -> slower
            _clocked("B", 0, 1600.0, (0.01, 0.01)),
            _clocked("C", 0, 1700.0, (0.00, 0.00)),
            _clocked("A", 1, 1650.0, (0.06, 0.06), streams=128),   # miss; B's 1620 lower
            _clocked("B", 1, 1620.0, (0.0, 0.0), streams=128),
            _clocked("A", 2, 1400.0, (0.09, 0.09), streams=256),   # miss; no other run
            _clocked("A", 3, "", (0.08, 0.08), streams=512),       # miss; no clock read
            _clocked("B", 3, 1500.0, (0.0, 0.0), streams=512)]
    misses = [rows[0], rows[3], rows[5], rows[6]]
    sc = CVW.slower_clock(rows, misses)
    # only A's step 0: its 1,500 MHz under B's 1,600 and C's 1,700 (median 1,650), by
    # 1 - 1500 / 1650 = 9.09%
    assert sc == {"steps": 1, "protocols": ["rows"], "own": 1500.0, "others": 1650.0,
                  "lo": pytest.approx(1 - 1500 / 1650), "hi": pytest.approx(1 - 1500 / 1650)}
    v = {x.name: x for x in CVW.clock_values(rows, misses)}
    assert v["cv.worst_has_clock"].value is True
    assert (v["cv.worst_other"].text, v["cv.worst_clock_misses"].text,
            v["cv.worst_clock_own"].text, v["cv.worst_clock_rep"].text) == (
        "4", "1", "1,500 MHz", "1,650 MHz")
    assert v["cv.worst_clock_who"].text == "Of its other 4 misses, 1 (`rows`)"
    assert (v["cv.worst_clock_lo"].text, v["cv.worst_clock_hi"].text) == ("9.1%", "9.1%")
    # a miss at a clock as high as another run's is not said to be slower
    assert CVW.slower_clock(rows, [rows[3]]) is None
    assert CVW.clock_values(rows, [rows[3]])[0].value is False


def test_slower_clock_in_the_update_values():
    """The worst engine's misses outside its most-missed protocol: engine a misses three
    `wave` steps and one `rows` step whose card ran slower than the other run's."""
    rows = [_row("A", 0, 100.0, 50.0, model=(0.2, 0.0)),
            _row("A", 1, 100.0, 50.0, streams=32, model=(0.2, 0.0)),
            _row("B", 0, 140.0, 50.0, model=(-0.2, 0.0)),
            _clocked("A", 5, 1515.0, (0.07, 0.07)),
            _clocked("B", 5, 1635.0, (0.0, 0.0))]
    v = {x.name: x for x in CVW.cv_values(cv.with_replicates(rows))}
    assert v["cv.worst_protocol"].text == "`wave`"
    assert (v["cv.worst_has_clock"].value, v["cv.worst_other"].value,
            v["cv.worst_clock_protocols"].text, v["cv.worst_clock_own"].value,
            v["cv.worst_clock_rep"].value) == (True, 1, "`rows`", 1515.0, 1635.0)
    assert v["cv.worst_clock_who"].text == "Its other miss (`rows`)"
    assert v["cv.worst_clock_lo"].value == pytest.approx(1 - 1515 / 1635)  # 7.3% under
    v = {x.name: x for x in CVW.clock_values(rows, [rows[3], rows[3]])}
    assert v["cv.worst_clock_who"].text == "All 2 of its other misses (`rows`)"


@pytest.mark.parametrize("bad", ["-1500", "inf", "nan", "0", "fast"])
def test_an_impossible_clock_is_refused_naming_the_row(bad):
    rows = [_clocked("A", 0, bad, (0.07, 0.07)), _clocked("B", 0, 1600.0, (0.0, 0.0))]
    with pytest.raises(ValueError, match=(
            r"^crossval\.csv: run A step 0 repeat 1: sm_clock_mhz '" + bad
            + r"' is not a clock in MHz \(a finite number above 0\)$")):
        CVW.slower_clock(rows, rows[:1])


def test_as_sent_count_is_said_only_where_the_hosts_pace_moves_it():
    """The held-out model lands 4 of the 5 complete rows within 5% (B1 misses at -7%); at
    B1's own send interval -3%: 5, and the Update says it. With no as-sent error anywhere
    the count is the held-out one and no sentence is said."""
    v = {x.name: x for x in CVW.cv_values(cv.with_replicates(ROWS))}
    assert v["cv.has_as_sent"].value is False and v["cv.as_sent"].value == 4
    rows = [dict(r) for r in ROWS]
    rows[1].update(as_sent_e2e_error=-0.03, as_sent_decode_error=0.0)
    v = {x.name: x for x in CVW.cv_values(cv.with_replicates(rows))}
    assert v["cv.has_as_sent"].value is True and v["cv.as_sent"].value == 5
