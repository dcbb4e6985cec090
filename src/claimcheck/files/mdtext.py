"""Markdown text for the report: one number formatter and one table writer.

Every Markdown table and number cell of the Update section (:mod:`~claimcheck.update.update`,
:mod:`~claimcheck.update.sections`) and the Verdicts section
(:mod:`~claimcheck.verdicts.verdicts_md`) and the figure captions goes through these two.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

MISSING = "n/a"
"""What a cell shows for a value that was not measured or cannot be computed."""


def num(v: float | None, fmt: str = "{:,.1f}") -> str:
    """``v`` through ``fmt`` (thousands separators, one decimal by default); :data:`MISSING`
    for None."""
    return MISSING if v is None else fmt.format(v)


def table(header: Sequence[str], rows: Iterable[Sequence[str]],
          align: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table. ``align`` holds 'l' or 'r' per column (default: the first
    left, the rest right, as numbers are). A row of another width than the header is
    refused (ValueError naming the row)."""
    align = list(align or ["l"] + ["r"] * (len(header) - 1))
    if len(align) != len(header):
        raise ValueError(f"align has {len(align)} entries, the header {len(header)}")
    body = [list(r) for r in rows]
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise ValueError(f"row {i + 1} has {len(r)} cells, the header {len(header)}")
    sep = ["---:" if a == "r" else "---" for a in align]
    return "\n".join("| " + " | ".join(r) + " |" for r in [list(header), sep, *body])
