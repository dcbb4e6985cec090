"""The report's one Markdown helper: numbers and tables, checked against text typed by hand."""

import pytest

from claimcheck.files.mdtext import num, table


def test_num_formats_and_says_missing():
    assert num(1234.56) == "1,234.6"
    assert num(0.731, "{:.0%}") == "73%"
    assert num(None) == "n/a"
    assert num(0.0) == "0.0"  # zero is a value, not a missing one


def test_table_is_githubs_with_numbers_right_aligned():
    md = table(["Streams", "tok/s"], [["1", "38.2"], ["64", "1,165.0"]])
    assert md == ("| Streams | tok/s |\n| --- | ---: |\n| 1 | 38.2 |\n| 64 | 1,165.0 |")
    assert table(["a", "b"], [], align=["r", "l"]) == "| a | b |\n| ---: | --- |"


def test_table_refuses_a_row_of_another_width():
    with pytest.raises(ValueError, match="row 2 has 1 cells, the header 2"):
        table(["a", "b"], [["1", "2"], ["3"]])
    with pytest.raises(ValueError, match="align has 1 entries, the header 2"):
        table(["a", "b"], [], align=["l"])
