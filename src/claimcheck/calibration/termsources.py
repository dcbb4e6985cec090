"""Which runs each term of a calibration came from, and which it borrowed from another engine
or card.

A calibration (:class:`claimcheck.calibration.calibrate.Choice`) has nine terms: bandwidth,
per-request overhead, compute, decode rows, admission, KV read, sequence prefill, cold
start and output lag.
:func:`term_sources` names, per term, the runs its steps belong to and the engine(s) they
ran, and says the term is borrowed when none of them is the predicted engine, or when all
of them ran it on another card (``predict`` prints it; the cross-validation table keeps it
per step).
"""

from __future__ import annotations

from typing import Any

from claimcheck.calibration.calibrate import Choice, Pick, run_key

TERMS = ("bandwidth", "overhead", "compute", "rows", "admission", "kv", "sequence", "cold",
         "lag")
"""The calibration's terms, in the order :func:`term_sources` gives them."""

TERM_WORDS = {"bandwidth": "bandwidth", "overhead": "per-request overhead",
              "compute": "compute", "rows": "decode rows", "admission": "admission",
              "kv": "KV read", "sequence": "sequence prefill", "cold": "cold start",
              "lag": "output lag"}
"""Each term of :data:`TERMS` as a sentence names it."""


def _picks(choice: Choice, term: str) -> tuple[Pick, ...]:
    one = getattr(choice, term)
    if term == "rows":
        return tuple(one) + tuple(choice.rows_beyond)
    if isinstance(one, tuple):  # a term of several source steps
        return one
    return (one,) if one is not None else ()


def term_sources(choice: Choice, engine: str) -> dict[str, dict[str, Any]]:
    """Per term: ``runs`` (the source runs' names, sorted), ``engines`` (theirs) and
    ``borrowed_from`` (those engines, joined, when ``engine`` is not among them, or
    "ENGINE on CARD" when every source run is of this engine on another card than the
    choice's, a term carried between cards; None when the term is the engine's own on its
    card or has no source: ``runs`` empty)."""
    out = {}
    for term in TERMS:
        picks = _picks(choice, term)
        runs = sorted({p.run.name for p in picks})
        engines = sorted({str(run_key(p.run)[1]) for p in picks})
        cards = sorted({str(run_key(p.run)[0]) for p in picks})
        borrowed = None
        if engines and engine not in engines:
            borrowed = ", ".join(engines)
        elif cards and choice.card not in cards:
            borrowed = f"{engine} on {', '.join(cards)}"
        out[term] = {"runs": runs, "engines": engines, "borrowed_from": borrowed}
    return out


def borrowed_terms(sources: dict[str, dict[str, Any]]) -> list[str]:
    """The terms of :func:`term_sources` taken from another engine, as 'term (engine)'."""
    return [f"{t} ({s['borrowed_from']})" for t, s in sources.items() if s["borrowed_from"]]


def source_lines(sources: dict[str, dict[str, Any]]) -> list[str]:
    """One line per term with its source runs, 'borrowed from ENGINE' where it is."""
    lines = []
    for t, s in sources.items():
        where = ", ".join(s["runs"]) if s["runs"] else "none measured"
        lines.append(f"  term {t}: {where}"
                     + (f" (borrowed from engine {s['borrowed_from']})"
                        if s["borrowed_from"] else ""))
    return lines
