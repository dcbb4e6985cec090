"""Issue 27 item 4: one error and one within for the model's comparisons, one rule for a
boolean cell, and model.csv read back typed through files.framefiles."""

from __future__ import annotations

import pytest

from claimcheck.files.framefiles import read_rows, write_table
from claimcheck.files.frames import flag
from claimcheck.verdicts.accuracy import error, within, within_both


def test_error_is_predicted_over_measured_less_one() -> None:
    assert error(105.0, 100.0) == pytest.approx(0.05)
    assert error(90.0, 120.0) == pytest.approx(-0.25)
    assert error(None, 100.0) is None and error(100.0, None) is None
    assert error(100.0, 0.0) is None  # nothing measured: no error, not a division by zero


def test_within_is_inclusive_and_a_missing_aggregate_is_no_miss() -> None:
    assert within(0.05) and within(-0.05) and not within(0.0501)
    assert within(0.08, tolerance=0.1) and not within(0.12, tolerance=0.1)
    assert within(None)
    assert within_both(0.02, None) and within_both(0.02, -0.04)
    assert not within_both(0.02, 0.08) and not within_both(-0.06, None)
    assert not within_both(None, 0.01)  # no end-to-end error: nothing was compared


def test_a_boolean_cell_has_one_rule() -> None:
    assert flag(True) and not flag(False) and not flag(None)
    for text in ("True", "true", "1", 1):
        with pytest.raises(TypeError, match="not a boolean cell"):
            flag(text)


def test_model_rows_come_back_typed(tmp_path) -> None:
    rows = [{"run": "r", "step": 0, "streams": 8, "calibration_step": True,
             "prefill_held": False, "e2e_error": 0.0123456789, "decode_error": None,
             "miss_term": None},
            {"run": "r", "step": 1, "streams": 64, "calibration_step": False,
             "prefill_held": True, "e2e_error": -0.3, "decode_error": 0.01,
             "miss_term": "the prefill (compute) term"}]
    write_table(rows, tmp_path / "model.csv")
    back = read_rows(tmp_path / "model.csv")
    assert [r["calibration_step"] for r in back] == [True, False]
    assert [r["prefill_held"] for r in back] == [False, True]
    assert back[0]["streams"] == 8 and isinstance(back[0]["streams"], int)
    assert back[0]["e2e_error"] == pytest.approx(0.0123457)  # 6 significant digits
    assert back[0]["decode_error"] is None and back[0]["miss_term"] is None
    assert [within_both(r["e2e_error"], r["decode_error"]) for r in back] == [True, False]
