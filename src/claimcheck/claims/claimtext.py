"""Numbers and bound words as the seed articles write them: the text arithmetic the claims
registry and its quote checks share (pure functions, no files).

A number is written "1,035", "~1,035", "1.6k" or "1600tps"; the small number words
("eight", "sixty-four") count where a field is checked against prose. A bound is the words
next to a value that make it "at least" ("over 1,000", "17 tok/s or more") or "at most"
("up to 900", "17 tok/s or less").
"""

from __future__ import annotations

import math
import re

# a bound ("over 1,000", "up to 900") must be written next to the value in the quote:
# words before the number, or words after it ("17 tok/s or less")
BOUND_BEFORE = {"at_least": ("over", "more than", "at least", "above", "past", "upwards of",
                             "in excess of", "no less than"),
                "at_most": ("up to", "at most", "no more than", "under", "below", "less than",
                            "bounded near")}
BOUND_AFTER = {"at_least": ("or more", "plus"), "at_most": ("or less", "at most")}
BOUNDS = ("", *BOUND_BEFORE)


def normalise(text: str) -> str:
    """Whitespace runs to one space, ends stripped."""
    return " ".join(text.split())


_NUM = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?([kK](?![a-zA-Z]))?")
_WORDS = {"one": 1, "single": 1, "alone": 1, "two": 2, "three": 3, "four": 4, "five": 5,
          "six": 6, "seven": 7, "eight": 8, "eleven": 11, "fifteen": 15, "sixteen": 16,
          "thirty-two": 32, "sixty-four": 64}


def numbers_in(text: str, words: bool = False) -> list[float]:
    """Every number in ``text`` in the seeds' formatting ("1,035", "~1,035", "1.6k",
    "1600tps"); with ``words``, also the small number words ("eight", "sixty-four")."""
    out = []
    for m in _NUM.finditer(text):
        v = float(m.group(1).replace(",", "") + (m.group(2) or ""))
        out.append(v * 1000 if m.group(3) else v)
    if words:
        out += [v for w, v in _WORDS.items() if re.search(rf"\b{w}\b", text, re.I)]
    return out


def number_occurs(value: float, text: str, words: bool = False) -> bool:
    """True when ``value`` is one of the numbers written in ``text``."""
    return any(math.isclose(value, n, rel_tol=1e-9) for n in numbers_in(text, words))


def bound_words(bound: str, quote: str, value: float) -> tuple[str, str]:
    """The words the seed writes for a bound next to ``value``: (before, after), e.g.
    ("up to", "") for "bursts of up to 900", ("", "or less") for "17 tok/s or less"; ("",
    "") for an exact figure or when none is found."""
    if not bound:
        return "", ""
    q = normalise(quote).lower()
    before = "|".join(re.escape(w) for w in BOUND_BEFORE[bound])
    after = "|".join(re.escape(w) for w in BOUND_AFTER[bound])
    for m in _NUM.finditer(q):
        v = float(m.group(1).replace(",", "") + (m.group(2) or ""))
        if not math.isclose(v * (1000 if m.group(3) else 1), value, rel_tol=1e-9):
            continue
        b = re.search(rf"\b({before})\s*~?\s*$", q[:m.start()])
        if b:
            return b.group(1), ""
        a = re.match(rf"\s*(?:[a-z/]+\s+)?({after})\b", q[m.end():])
        if a:
            return "", a.group(1)
    return "", ""


def bound_backed(bound: str, quote: str, value: float) -> bool:
    """True when ``quote`` writes a word of ``bound`` next to ``value``: "over 1,000" for
    ``at_least``, "up to 900" or "17 tok/s or less" for ``at_most`` (:func:`bound_words`
    finds them)."""
    return any(bound_words(bound, quote, value))
