"""The Update's words for the model with each run left out (issue 43 item 1), from a
hand-made cross-validation table: counts and ranges worked out by hand below."""

from claimcheck.update import crossval_words as CVW


def _row(run, engine, protocol, e2e, dec, note="", status="complete"):
    return {"run": run, "card": "h200", "engine": engine, "weights": "dummy",
            "protocol": protocol, "step_status": status, "e2e_error": e2e,
            "decode_error": dec, "in_sample_e2e_error": 0.0, "in_sample_decode_error": 0.0,
            "cv_note": note}


ROWS = [
    _row("a-ladder", "a", "ladder", 0.01, -0.02),      # within
    _row("a-ladder", "a", "ladder", 0.049, None),      # within (held prefill: no decode)
    _row("a-long", "a", "long", 0.06, 0.0),            # miss on e2e
    _row("b-wave", "b", "wave", 0.10, None),           # miss
    _row("b-wave", "b", "wave", 0.20, None),           # miss
    _row("b-rows", "b", "rows", 0.01, -0.08),          # miss on decode
    _row("b-rows", "b", "rows", -0.03, 0.03),          # within
    _row("b-rows", "b", "rows", 0.5, 0.5, status="failed"),  # never compared
]


def test_values_by_hand():
    v = {x.name: x for x in CVW.cv_values(ROWS)}
    assert v["cv.has"].value is True
    # 3 of 7 complete steps within 5% on both: a 2 of 3, b 1 of 4 (the worst share)
    assert (v["cv.within"].value, v["cv.steps"].value) == (3, 7)
    assert v["cv.worst_engine"].text == "`b`"
    assert (v["cv.worst_within"].value, v["cv.worst_steps"].value) == (1, 4)
    # b's misses: 2 wave steps, 1 rows step: wave leads, its e2e errors +10.0% to +20.0%
    assert v["cv.worst_protocol"].text == "`wave`"
    assert v["cv.worst_misses"].value == 2
    assert (v["cv.worst_lo"].text, v["cv.worst_hi"].text) == ("+10.0%", "+20.0%")
    assert v["cv.worst_measure"].text == "end to end"


def test_an_engine_on_two_cards_is_named_with_its_card():
    """Engine a's one step on the h100 misses (1 of 1 missed); on the h200 it is 2 of 3
    within and b 1 of 4: the h100 group has the smallest share, named with its card, and
    its one miss (+30.0% end to end) is the range."""
    rows = ROWS + [{**_row("a-h100", "a", "ladder", 0.30, 0.0), "card": "h100"}]
    v = {x.name: x for x in CVW.cv_values(rows)}
    assert v["cv.worst_engine"].text == "`a` on the h100"
    assert v["cv.cards"].text == "h100 and h200"
    assert (v["cv.worst_within"].value, v["cv.worst_steps"].value) == (0, 1)
    assert (v["cv.worst_lo"].text, v["cv.worst_hi"].text) == ("+30.0%", "+30.0%")
    table = CVW.appendix_section(rows)
    assert "| `a` on the h200 | 3 | 2 | 3 |" in table and "| `a` on the h100 | 1 | 0 | 1 |" in table


def test_steps_with_no_prediction_are_counted_never_a_range():
    """Group c: 2 steps with no prediction (cv_note) in protocol `solo` and 1 predicted miss
    (+40.0%) in `batch`: c is the worst (0 of 3); its range is the predicted miss's, in
    `batch` (the `solo` steps have no error to give), and 2 steps are said unpredicted."""
    rows = ROWS + [_row("c-solo", "c", "solo", None, None, note="no calibration"),
                   _row("c-solo", "c", "solo", None, None, note="no calibration"),
                   _row("c-batch", "c", "batch", 0.40, 0.0)]
    v = {x.name: x for x in CVW.cv_values(rows)}
    assert v["cv.worst_engine"].text == "`c`"
    assert (v["cv.worst_within"].value, v["cv.worst_steps"].value) == (0, 3)
    assert v["cv.worst_protocol"].text == "`batch`" and v["cv.worst_misses"].value == 1
    assert (v["cv.worst_lo"].text, v["cv.worst_hi"].text) == ("+40.0%", "+40.0%")
    assert v["cv.has_unpredicted"].value is True and v["cv.unpredicted"].value == 2
    assert {x.name: x for x in CVW.cv_values(ROWS)}["cv.has_unpredicted"].value is False


def test_the_range_is_of_the_measure_the_steps_miss_on():
    # c's three context steps miss on decode (-16%, -9%, -7%), their end to end within
    # 5% but for one (+9%): decode misses 3 times, end to end once, so the range is decode's
    rows = [_row("c-ctx", "c", "ctx", 0.09, -0.04),
            _row("c-ctx", "c", "ctx", -0.01, -0.16),
            _row("c-ctx", "c", "ctx", -0.03, -0.09),
            _row("c-ctx", "c", "ctx", 0.02, -0.07),
            _row("c-lad", "c", "lad", 0.0, 0.0)]
    v = {x.name: x for x in CVW.cv_values(rows)}
    assert v["cv.worst_misses"].value == 4
    assert v["cv.worst_measure"].text == "decode aggregate"
    assert (v["cv.worst_lo"].text, v["cv.worst_hi"].text) == ("-16.0%", "-4.0%")


def test_no_rows_no_sentence():
    v = {x.name: x for x in CVW.cv_values(None)}
    assert v["cv.has"].value is False and v["cv.within"].text == "none"


def test_appendix_tables_by_hand():
    text = CVW.appendix_section(ROWS)
    assert text.startswith("### The model with each run left out\n\n")
    assert "Card: h200; dummy weights." in text
    assert "| `a` | 3 | 2 | 3 |" in text and "| `b` | 4 | 1 | 4 |" in text
    assert "| all | 7 | 3 | 7 |" in text
    assert "| b-wave | 2 | 0 | 2 |" in text and "| b-rows | 2 | 1 | 2 |" in text
    # by protocol, every engine together: ladder 2 of 2, long 0 of 1, rows 1 of 2 (the
    # failed step never counted), wave 0 of 2; no measurement in these rows, so no column
    # of one number per step (tests/test_crossval_replicates.py has it)
    assert ("By protocol, every engine and card together:\n\n| protocol | steps | within 5%, "
            "run left out | within 5%, in sample |\n|---|---:|---:|---:|\n"
            "| `ladder` | 2 | 2 | 2 |\n| `long` | 1 | 0 | 1 |\n| `rows` | 2 | 1 | 2 |\n"
            "| `wave` | 2 | 0 | 2 |\n") in text
    # every term the cross-validation leaves the run out of is named, the last one too
    assert ("left out of every term of the model (bandwidth, per-request overhead, compute, "
            "decode rows, admission, KV read, sequence prefill, cold start, output lag: "
            "`claimcheck model --cross-validate`)") in text
    assert CVW.appendix_section([]) == ""


def test_a_table_of_another_version_is_refused_naming_the_file(tmp_path):
    import json

    import pytest

    from claimcheck.files.errors import InputError
    from claimcheck.predict import crossval as cv

    p = tmp_path / "crossval.csv"
    p.write_text("run,engine\nr,a\n")  # truncated: the other columns gone
    dtypes = {"run": "string", "engine": "string"}
    (tmp_path / "crossval.dtypes.json").write_text(json.dumps(dtypes))
    with pytest.raises(InputError) as e:
        cv.read(str(p))
    assert str(p) in str(e.value) and "missing column(s) card, weight_format" in str(e.value)
    with pytest.raises(InputError, match="no such file"):
        cv.read(str(tmp_path / "absent.csv"))
    # a table of the version before carried_from: every other column there, that one named
    q = _table_lacking(tmp_path, "carried_from")
    with pytest.raises(InputError) as e:
        cv.read(str(q))
    assert str(e.value).endswith("missing column(s) carried_from: not a cross-validation "
                                 "table of this version (rule crossval writes one)")
    # ... and of the version before each step's clock (sm_clock_mhz)
    o = _table_lacking(tmp_path, "sm_clock_mhz")
    with pytest.raises(InputError) as e:
        cv.read(str(o))
    assert str(e.value) == (f"{o}: missing column(s) sm_clock_mhz: not a cross-validation "
                            "table of this version (rule crossval writes one)")
    # ... and of the version before the same step measured by another run (replicate_*)
    r = _table_lacking(tmp_path, "replicate_e2e_error")
    with pytest.raises(InputError) as e:
        cv.read(str(r))
    assert str(e.value) == (f"{r}: missing column(s) replicate_e2e_error: not a "
                            "cross-validation table of this version (rule crossval writes one)")


def _table_lacking(tmp_path, column):
    """A crossval.csv (and its dtypes) of every column of this version but ``column``, one
    row of "1"s: a table of an older version."""
    import json

    from claimcheck.predict import crossval as cv

    cols = [c for c in cv.COLUMNS if c != column]
    p = tmp_path / f"without-{column}.csv"
    p.write_text(",".join(cols) + "\n" + ",".join("1" for _ in cols) + "\n")
    (tmp_path / f"without-{column}.dtypes.json").write_text(
        json.dumps(dict.fromkeys(cols, "string")))
    return p


def test_the_spread_of_the_same_steps_measured_again_by_hand():
    """The worst protocol's steps measured in two runs and their repeats: step 0 at 100,
    120 and 110 tok/s end to end spreads 20.0% (120 / 100 - 1); step 1 at 50 and 52 spreads
    4.0%. One prediction within 5% of every value spans at most 1.05 / 0.95 - 1 = 10.5%:
    step 0 is wider, step 1 not."""
    def r(run, step, measured, err):
        row = _row(run, "w", "wave", err, None)
        row.update(step=step, streams=16, measured_e2e_tok_s=measured,
                   measured_decode_tok_s=None)
        return row

    rows = [r("w-wave", 0, 100.0, 0.10), r("w-wave", 0, 120.0, -0.08),
            r("w-wave-2", 0, 110.0, 0.06), r("w-wave", 1, 50.0, 0.07),
            r("w-wave-2", 1, 52.0, 0.02)]
    v = {x.name: x for x in CVW.cv_values(rows)}
    assert v["cv.worst_protocol"].text == "`wave`" and v["cv.worst_has_spread"].value
    assert v["cv.worst_spread"].text == "20.0%" and v["cv.worst_band"].text == "10.5%"
    assert (v["cv.worst_wide"].value, v["cv.worst_groups"].value) == (1, 2)
    assert v["cv.worst_runs"].value == 2 and v["cv.worst_runs"].text == "2 runs"
    one = {x.name: x for x in CVW.cv_values([rows[0], rows[1], rows[3]])}
    assert one["cv.worst_runs"].text == "1 run"  # the noun agrees: "over 1 run of that"
    # a step measured once has no spread: none said
    once = {x.name: x for x in CVW.cv_values(rows[:1] + rows[3:4])}
    assert once["cv.worst_has_spread"].value is False
    assert once["cv.worst_spread"].text == "none"
    # measured twice but no wider than the 10.5% band (step 1: 4.0%): none said either
    narrow = {x.name: x for x in CVW.cv_values(rows[3:])}
    assert narrow["cv.worst_has_spread"].value is False
    assert {x.name: x for x in CVW.cv_values(rows)}["cv.cards"].text == "h200"


def test_carried_steps_are_counted_and_said_with_their_cards():
    """Two steps of one run on the h100 predicted from terms carried from the h200 (+20.0%
    and +30.0% off end to end: 0 of 2, the worst group, b on the h200 being 1 of 4) and one
    carried failed step (never compared): 2 carried steps, none unpredicted, and the
    appendix says how many and from which card."""
    carried = [{**_row("c-solo", "c", "solo", 0.20, 0.0), "card": "h100", "carried_from": "h200"},
               {**_row("c-solo", "c", "solo", 0.30, 0.0), "card": "h100", "carried_from": "h200"},
               {**_row("c-solo", "c", "solo", 0.0, 0.0, status="failed"), "card": "h100",
                "carried_from": "h200"}]
    rows = [{**r, "carried_from": ""} for r in ROWS] + carried
    v = {x.name: x for x in CVW.cv_values(rows)}
    assert v["cv.has_carried"].value is True and v["cv.carried"].value == 2
    assert (v["cv.carried_cards"].text, v["cv.carried_from"].text) == ("h100", "h200")
    assert v["cv.has_unpredicted"].value is False
    # a carried step is a prediction: its miss gives the range like any other
    assert v["cv.worst_engine"].text == "`c` on the h100"
    assert (v["cv.worst_lo"].text, v["cv.worst_hi"].text) == ("+20.0%", "+30.0%")
    text = CVW.appendix_section(rows)
    assert ("2 steps of 1 run on the h100, every term carried from the runs on the h200 by "
            "the datasheets") in text
    none = {x.name: x for x in CVW.cv_values(ROWS)}
    assert none["cv.has_carried"].value is False and none["cv.carried_from"].text == "none"
    assert "carried" not in CVW.appendix_section(ROWS)
