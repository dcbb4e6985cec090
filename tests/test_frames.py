"""Derived tables through pandas: written with dtypes, read back typed; the CSV text is the
one the tables always had (6 significant digits, empty cells for missing values)."""

from __future__ import annotations

import pytest

from claimcheck.files.errors import InputError
from claimcheck.files.framefiles import read_table, write_table
from claimcheck.files.frames import column_dtype, records
from claimcheck.files.paths import RUNS
from claimcheck.pipeline.derive import metrics_csv

ROWS = [{"run": "a", "reported": True, "streams": 64, "tok_s": 1165.0123456, "note": None},
        {"run": "b", "reported": False, "streams": 8, "tok_s": None, "extra": 2.5e-05}]


def test_dtypes_from_values():
    assert column_dtype([True, None, False]) == "boolean"
    assert column_dtype([1, 64, None]) == "Int64"
    assert column_dtype([1, 2.5]) == "float64"
    assert column_dtype(["x", None]) == "string"
    assert column_dtype([None, None]) == "string"
    assert column_dtype([[1, 2], "x"]) == "object"


def test_written_text_and_typed_read_back(tmp_path):
    out = tmp_path / "t.csv"
    assert write_table(ROWS, out) == 2
    assert out.read_text() == ("run,reported,streams,tok_s,note,extra\n"
                               "a,True,64,1165.01,,\n"
                               "b,False,8,,,2.5e-05\n")
    df = read_table(out)
    assert [str(t) for t in df.dtypes] == ["string", "boolean", "Int64", "float64", "string",
                                           "float64"]
    back = records(df)
    assert back[0] == {"run": "a", "reported": True, "streams": 64, "tok_s": 1165.01,
                       "note": None, "extra": None}
    assert back[1]["reported"] is False and back[1]["tok_s"] is None
    assert back[1]["extra"] == 2.5e-05 and type(back[0]["streams"]) is int


def test_a_unix_time_keeps_its_ms(tmp_path):
    """%.6g had written 1795970123.4567 as 1.79597e+09 (123 s and more lost); a ``*_unix_s``
    column is written to the ms and read back as a float."""
    out = tmp_path / "t.csv"
    write_table([{"step": 0, "window_start_unix_s": 1795970123.4567, "tok_s": 1165.0123456},
                 {"step": 1, "window_start_unix_s": None, "tok_s": 2.5}], out)
    assert out.read_text() == ("step,window_start_unix_s,tok_s\n"
                               "0,1795970123.457,1165.01\n"
                               "1,,2.5\n")
    back = records(read_table(out))
    assert back[0]["window_start_unix_s"] == pytest.approx(1795970123.457, abs=1e-6)
    assert back[1]["window_start_unix_s"] is None


def test_a_cell_that_does_not_fit_its_dtype_is_refused(tmp_path):
    """Each refusal names the file, the line (the header is line 1), the column and the
    cell: an Int64 cell (ROWS' 64, first data row), a float cell (crossval.csv's send
    interval, as a hand edit could leave it) and a boolean one, never read as missing when
    it is neither True nor False."""
    out = tmp_path / "t.csv"
    floats = [{"step": 0, "send_interval_ms": 0.26}, {"step": 1, "send_interval_ms": 0.3}]
    for rows, cell, bad, said in (
            (ROWS, ",64,", ",sixty-four,", "2: streams: 'sixty-four' is not a value of this "
             "column's dtype (Int64)"),
            (floats, "0.3", "fast", "3: send_interval_ms: 'fast' is not a value of this "
             "column's dtype (float64)"),
            (ROWS, "b,False,", "b,no,", "3: reported: 'no' is not a value of this column's "
             "dtype (boolean)")):
        write_table(rows, out)
        out.write_text(out.read_text().replace(cell, bad))
        with pytest.raises(InputError) as e:
            read_table(out)
        assert str(e.value) == f"{out}:{said}"
    (tmp_path / "t.dtypes.json").unlink()
    with pytest.raises(InputError, match=r"t\.dtypes\.json: no such file"):
        read_table(out)


def test_metrics_table_reads_back_typed(tmp_path):
    out = tmp_path / "m.csv"
    n = metrics_csv(RUNS / "h200-20261129-bf16-dummy-ladder", out)
    rows = records(read_table(out))
    assert n == len(rows) == 5
    assert [r["streams"] for r in rows] == [1, 8, 16, 32, 64]
    assert all(isinstance(r["e2e_aggregate_tok_s"], float) for r in rows)
