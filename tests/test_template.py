"""The Update's template renderer: a slot names a row of the values table or the render
stops naming it; blocks keep or drop their lines by a flag; the body's own templates hold
no number outside a slot."""

from __future__ import annotations

import csv
import re

import pytest

from claimcheck.update import template as T
from claimcheck.update.update_body import BODY_TEMPLATE, CLAIM_TEMPLATE

VALUES = T.table([T.num("a.tok", 1234.5, "tok/s", "hand", "{:,.1f}"),
                  T.num("eta", 0.7049, "fraction", "hand", "{:.0%}"),
                  T.word("card", "H200", "hand"),
                  T.num("empty", None, "tok/s", "hand"),
                  T.flag("on", True, "hand"), T.flag("off", False, "hand")])


def test_every_slot_filled_from_its_named_value():
    out = T.render("One {{card}} gives {{ a.tok }} tok/s, {{eta}} of its line.", VALUES)
    assert out == "One H200 gives 1,234.5 tok/s, 70% of its line.\n"


def test_an_unknown_slot_is_refused_with_one_line_naming_it():
    with pytest.raises(T.TemplateError) as e:
        T.render("first line\nIt gives {{a.tokk}} tok/s.", VALUES, "body.md")
    assert str(e.value) == "body.md line 2: unknown slot 'a.tokk' (not in the values table)"
    assert "\n" not in str(e.value)


def test_an_unfilled_slot_is_refused_naming_it_and_its_source():
    with pytest.raises(T.TemplateError, match=r"^body.md line 1: slot 'empty' is unfilled "
                                              r"\(no value from hand\)$"):
        T.render("{{empty}} tok/s", VALUES, "body.md")


def test_an_unclosed_or_malformed_slot_is_refused():
    with pytest.raises(T.TemplateError, match="line 1: an unclosed slot"):
        T.render("{{card} gives", VALUES)
    with pytest.raises(T.TemplateError, match="line 1: an unclosed slot"):
        T.render("{{two words}}", VALUES)


def test_blocks_keep_or_drop_their_lines_by_flag():
    text = ("a\n<!-- if on -->\nb {{card}}\n<!-- end on -->\n<!-- if off -->\nc\n"
            "<!-- end off -->\n<!-- unless off -->\nd\n<!-- end off -->")
    assert T.render(text, VALUES) == "a\nb H200\nd\n"
    # a dropped block's slot must be known, though it may be unfilled
    assert T.render("<!-- if off -->\n{{empty}}\n<!-- end off -->\nz", VALUES) == "z\n"
    with pytest.raises(T.TemplateError, match="unknown slot 'nope'"):
        T.render("<!-- if off -->\n{{nope}}\n<!-- end off -->", VALUES)


def test_bad_blocks_are_refused():
    with pytest.raises(T.TemplateError, match="block 'if card' names no flag"):
        T.render("<!-- if card -->\nx\n<!-- end card -->", VALUES)
    with pytest.raises(T.TemplateError, match="block 'on' is never closed"):
        T.render("<!-- if on -->\nx", VALUES)
    with pytest.raises(T.TemplateError, match="'end off' closes no open block"):
        T.render("<!-- if on -->\nx\n<!-- end off -->", VALUES)


def test_a_name_given_twice_with_two_values_is_refused():
    with pytest.raises(T.TemplateError, match="'x' given twice"):
        T.table([T.num("x", 1, "tok/s", "one"), T.num("x", 2, "tok/s", "two")])


def test_a_weight_format_with_a_plus_names_its_slots_and_a_space_is_refused():
    """The int8 engine's format, w4a16:humming+int8, keys the long-prompt and context
    slots (2026-12-05: its first long-prompt run stopped `snakemake all` at this table)."""
    vals = T.table([T.num("long.w4a16:humming+int8.gap", 3.2, "points", "hand", "{:.0f}"),
                    T.flag("long.w4a16:humming+int8.under", True, "hand")])
    out = T.render("<!-- if long.w4a16:humming+int8.under -->\n"
                   "up to {{long.w4a16:humming+int8.gap}} points\n"
                   "<!-- end long.w4a16:humming+int8.under -->", vals)
    assert out == "up to 3 points\n"
    with pytest.raises(T.TemplateError, match=r"name 'long gap' is not a slot name"):
        T.table([T.num("long gap", 1, "points", "hand")])


def test_the_values_table_is_written_as_csv(tmp_path):
    p = tmp_path / "update_values.csv"
    T.write_values(VALUES, p)
    rows = list(csv.DictReader(p.open()))
    assert [r["name"] for r in rows] == sorted(VALUES)
    a = next(r for r in rows if r["name"] == "a.tok")
    assert a == {"name": "a.tok", "value": "1234.5", "unit": "tok/s", "text": "1,234.5",
                 "source": "hand"}


@pytest.mark.parametrize("path", [BODY_TEMPLATE, CLAIM_TEMPLATE])
def test_the_update_templates_print_no_number_outside_a_slot(path):
    text = path.read_text()
    bare = T.SLOT.sub("", text)
    bare = re.sub(r"<!-- .* -->", "", bare)
    bare = re.sub(r"\b(BF16|FP8)\b", "", bare)  # the weight formats' names
    assert re.findall(r"\d", bare) == [], path.name
