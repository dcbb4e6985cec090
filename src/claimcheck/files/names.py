"""Card, engine and protocol names (pure): they name files and folders (a run's directory is
``card-day-engine-protocol``), so a name is lower case letters, digits, ``-`` and ``.``,
starts with a letter or a digit, and holds no path separator and no space. Checked where a
name enters: a cards file's ``card`` column, the keys of an engines or protocols file (their
schemas carry :data:`NAME_PATTERN`), and the ``--card``/``--engine``/``--protocol`` options."""

from __future__ import annotations

import re
from collections.abc import Iterable

NAME_PATTERN = r"^[a-z0-9][a-z0-9.-]*$"
NAME_RULE = ("lower case letters, digits, '-' and '.', starting with a letter or a digit")


def name_refusal(name: str) -> str | None:
    """What is wrong with ``name`` as a card, engine or protocol name, or None (pure): the
    first of an empty name, surrounding space, a path separator, a space, a capital, a
    leading dot or dash, another character."""
    if not name.strip():
        return "is empty"
    if name != name.strip():
        return "has space around it"
    if "/" in name or "\\" in name:
        return "holds a path separator"
    if any(c.isspace() for c in name):
        return "holds a space"
    if any(c.isupper() for c in name):
        return "holds a capital letter"
    if name[0] in ".-":
        return f"starts with {name[0]!r}"
    bad = sorted({c for c in name if not re.fullmatch(r"[a-z0-9.-]", c)})
    if bad:
        return f"holds {', '.join(repr(c) for c in bad)}"
    return None


def name_words(name: str, what: str) -> str | None:
    """One clause for a name that is not a name, or None: ``"card name 'H200' holds a
    capital letter; a name is lower case letters, ..."``."""
    why = name_refusal(name)
    return None if why is None else f"{what} name {name!r} {why}; a name is {NAME_RULE}"


def near_name(name: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` that ``name`` differs from only by case or spaces, or None."""
    key = "".join(name.split()).lower()
    return next((n for n in names if "".join(n.split()).lower() == key and n != name), None)
