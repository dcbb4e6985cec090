"""Prose from a template, numbers by name (as showyourwork does): every number the Update's
body prints is a row of a table of named values (:class:`Value`: name, value, unit, the
text printed, where it came from), and the body is a Markdown template whose slots
``{{ name }}`` name those rows. :func:`render` refuses a slot the table does not hold, or
holds without a value, with one line naming the template, its line and the slot, so no
sentence can print a number its table does not hold.

A block ``<!-- if NAME -->`` ... ``<!-- end NAME -->`` prints only where the flag NAME is
true (a finding that holds), ``<!-- unless NAME -->`` only where it is false; a dropped
block's slots must still be names the table holds, though they may be unfilled. Pure:
text in, text out (:func:`write_values` is the one writer, called by the notebook).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SLOT = re.compile(r"\{\{\s*([^{}\s]*)\s*\}\}")
NAME_CHARS = r"[A-Za-z0-9_.:+-]+"
"""What a slot name is made of, one class for the values table and the blocks."""
NAME = re.compile(rf"^{NAME_CHARS}$")
BLOCK = re.compile(rf"^<!-- (if|unless|end) ({NAME_CHARS}) -->$")
COLUMNS = ("name", "value", "unit", "text", "source")


class TemplateError(ValueError):
    """A slot the values table cannot fill, or a malformed template; one line naming the
    template, the line and the slot."""


@dataclass(frozen=True)
class Value:
    """One named value: ``value`` as computed (a number, a word, or True/False for a
    block's condition), its ``unit``, the ``text`` a sentence prints, and its ``source``
    (the table and row or the finding it came from)."""

    name: str
    value: float | str | bool | None
    unit: str
    text: str
    source: str


def num(name: str, value: float | None, unit: str, source: str, fmt: str = "{:,.0f}") -> Value:
    """A number and its printed text (``fmt``; percentages with ``{:.0%}``)."""
    text = "" if value is None else fmt.format(value)
    return Value(name, value, unit, text, source)


def word(name: str, text: str | None, source: str) -> Value:
    """A word or phrase the sentence prints as it stands (a claim's id, a stream relation)."""
    return Value(name, text, "text", text or "", source)


def flag(name: str, on: bool, source: str) -> Value:
    """A block's condition: true where the finding holds."""
    return Value(name, bool(on), "flag", "yes" if on else "no", source)


def table(values: Iterable[Value]) -> dict[str, Value]:
    """Name -> value; a name given twice is refused (two numbers under one name)."""
    out: dict[str, Value] = {}
    for v in values:
        if not NAME.match(v.name):
            raise TemplateError(f"values table: name {v.name!r} is not a slot name "
                                "(letters, digits, _ . : + - only; + as in a weight format "
                                "such as w4a16:humming+int8)")
        if v.name in out and out[v.name] != v:
            raise TemplateError(f"values table: {v.name!r} given twice ({out[v.name].source}; "
                                f"{v.source})")
        out[v.name] = v
    return out


def _fill(line: str, values: Mapping[str, Value], where: str, printed: bool = True) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if not NAME.match(name):
            raise TemplateError(f"{where}: slot {m.group(0)!r} is not a name")
        if name not in values:
            raise TemplateError(f"{where}: unknown slot '{name}' (not in the values table)")
        v = values[name]
        if not printed:  # a dropped block's slot must be known, not filled
            return ""
        if v.value is None or v.text == "":
            raise TemplateError(f"{where}: slot '{name}' is unfilled (no value from "
                                f"{v.source})")
        return v.text

    out = SLOT.sub(one, line)
    if "{{" in out or "}}" in out:
        raise TemplateError(f"{where}: an unclosed slot in {line.strip()!r}")
    return out


def render(template: str, values: Mapping[str, Value], name: str = "template") -> str:
    """The template with every slot filled from ``values`` and every ``if`` block kept or
    dropped by its flag; :class:`TemplateError` names the template, line and slot of the
    first slot it cannot fill, and an unclosed or unknown block."""
    out: list[str] = []
    open_blocks: list[tuple[str, bool]] = []
    for i, line in enumerate(template.splitlines(), 1):
        where = f"{name} line {i}"
        b = BLOCK.match(line.strip())
        if b:
            kind, key = b.groups()
            if kind in ("if", "unless"):
                if key not in values or values[key].unit != "flag":
                    raise TemplateError(f"{where}: block '{kind} {key}' names no flag of "
                                        "the values table")
                open_blocks.append((key, bool(values[key].value) == (kind == "if")))
            else:
                if not open_blocks or open_blocks[-1][0] != key:
                    raise TemplateError(f"{where}: 'end {key}' closes no open block")
                open_blocks.pop()
            continue
        printed = all(on for _, on in open_blocks)
        filled = _fill(line, values, where, printed)  # a dropped block's slots are known
        if printed:
            out.append(filled)
    if open_blocks:
        raise TemplateError(f"{name}: block '{open_blocks[-1][0]}' is never closed")
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def slots(template: str) -> set[str]:
    """Every slot name the template uses."""
    return set(SLOT.findall(template))


def write_values(values: Mapping[str, Value], path: str | Path) -> None:
    """The values table as CSV (name, value, unit, text, source), in name order."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(COLUMNS)
        for k in sorted(values):
            v = values[k]
            w.writerow([v.name, "" if v.value is None else v.value, v.unit, v.text, v.source])
