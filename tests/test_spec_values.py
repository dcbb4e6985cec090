"""What a verify costs, as the Update's named values (update.spec_values): by hand on two
made-up drafting steps."""

from __future__ import annotations

from claimcheck.update.spec_values import NAMES, spec_values


def row(streams, step, plain_s, plain_r, **kw):
    return {"run": "r1", "streams": streams, "verify_rows_per_stream": 4,
            "rows_per_step": streams * 4, "tokens_kept_per_verify": kw.get("kept", 2.5),
            "measured_step_ms": step, "measured_median_tpot_ms": step / kw.get("kept", 2.5),
            "plain_step_same_streams_ms": plain_s, "plain_step_same_rows_ms": plain_r,
            "plain_same_streams_source": "plain at B", "plain_same_rows_source": "plain at 4B",
            "step_over_plain_same_streams": step / plain_s,
            "step_over_plain_same_rows": step / plain_r,
            "model_step_error": kw.get("err"), "model_loo_step_error": kw.get("loo"),
            "hand_step_error": kw.get("hand"), "model_bend": kw.get("bend", 1.0),
            "model_draft_pass_overhead_ms": 0.2}


def test_the_top_step_against_plain_at_the_same_streams_and_rows():
    rows = [row(64, 46.0, 20.0, 46.0, err=-0.01, loo=0.02, hand=0.08, bend=1.15),
            row(1, 20.0, 15.0, 15.5, err=0.03, loo=-0.04, hand=-0.06)]
    v = {x.name: x for x in spec_values(rows, "speculation.png")}
    assert v["spec.has"].value is True and v["fig.has_speculation"].value is True
    assert v["spec.streams"].text == "64" and v["spec.rows_total"].text == "256"
    assert v["spec.k"].text == "3" and v["spec.rows"].text == "4" and v["spec.kept"].text == "2.5"
    assert v["spec.over_streams"].text == "2.30"        # 46 / 20
    assert v["spec.over_rows"].text == "1.00"           # 46 / 46
    assert v["spec.one_extra"].text == "5.0"            # 20 - 15 at one stream
    assert v["spec.one_over_streams"].text == "1.33"    # 20 / 15
    assert v["spec.tpot"].text == "18.4"                # 46 / 2.5
    assert v["spec.model_err"].text == "3.0%"           # the largest |error|
    assert v["spec.loo_err"].text == "4.0%"
    assert (v["spec.hand_lo"].text, v["spec.hand_hi"].text) == ("-6.0%", "+8.0%")
    assert v["spec.bend"].text == "1.15" and v["spec.overhead"].text == "0.20"


def test_no_drafting_run_leaves_every_name_unfilled():
    for rows in (None, [], [row(64, 46.0, 20.0, 46.0)]):  # one step: no one-stream step
        v = {x.name: x for x in spec_values(rows, "speculation.png")}
        assert v["spec.has"].value is False and v["fig.has_speculation"].value is False
        assert all(v[n].value is None for n in NAMES)


def test_a_second_run_tests_the_first_runs_fit_and_says_how_the_overheads_differ():
    """Two drafting runs: each step's error with the overhead fitted on the other run
    alone, the second run's step at its most streams against plain steps of as many rows,
    and whether the runs' own per-pass overheads differ by more than half (0.2 vs 1.2 ms)."""
    r1 = [row(64, 46.0, 20.0, 46.0), row(1, 20.0, 15.0, 15.5)]
    r1[0]["model_other_step_error"], r1[1]["model_other_step_error"] = 0.08, 0.13
    r2 = [dict(row(64, 31.0, 20.0, 28.0), run="r2", verify_rows_per_stream=2,
               rows_per_step=128, tokens_kept_per_verify=2.0, model_other_step_error=-0.06,
               model_draft_pass_overhead_ms=1.2),
          dict(row(1, 17.5, 15.0, 15.2), run="r2", verify_rows_per_stream=2, rows_per_step=2,
               tokens_kept_per_verify=2.0, model_other_step_error=-0.03,
               model_draft_pass_overhead_ms=1.2)]
    v = {x.name: x for x in spec_values(r1 + r2, "speculation.png")}
    assert v["spec.has_other"].value is True and v["spec.overhead_differs"].value is True
    assert (v["spec.other_lo"].text, v["spec.other_hi"].text) == ("+8.0%", "+13.0%")
    assert (v["spec2.other_lo"].text, v["spec2.other_hi"].text) == ("-6.0%", "-3.0%")
    assert v["spec2.k"].text == "1" and v["spec2.rows"].text == "2"
    assert v["spec2.rows_total"].text == "128" and v["spec2.over_rows"].text == "1.11"  # 31/28
    assert v["spec2.kept"].text == "2.0" and v["spec2.overhead"].text == "1.20"
    # the same overhead per pass in both runs: no sentence that they differ
    for r in r2:
        r["model_draft_pass_overhead_ms"] = 0.25
    v = {x.name: x for x in spec_values(r1 + r2, "speculation.png")}
    assert v["spec.overhead_differs"].value is False
    # one run only: no second-run names filled
    v = {x.name: x for x in spec_values(r1, "speculation.png")}
    assert v["spec.has_other"].value is False and v["spec2.k"].value is None
