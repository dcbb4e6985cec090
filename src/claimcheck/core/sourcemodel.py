"""A claim's own source-calibrated model (pure): which published figure sets eta for a
source, and how a claim compares with the model of its source.

A *source* is one publisher's one system on one card at one power limit with one weight
format (:func:`source_key`): a claim's publisher is its system's (a figure a seed relays from
a repository is that repository's, whichever seed relays it); a reproduction's or a
control's is the seed that ran it, one checkpoint on one stack. The source's model is the
article's roofline (:mod:`claimcheck.core.roofline`, reached through
:func:`claimcheck.core.inputs.roofline_for`) with

- eta (the fraction of the card's datasheet bandwidth the engine achieves) from the same
  source's one-stream, no-drafter figure (:func:`pick_calibration`: a decode figure first,
  then the shortest context, then one whose "no drafter" is stated, then registry order):
  ``eta = figure / plain roofline at that figure's own context`` (:func:`eta_from`), a
  memory-bound point, so the ratio is the bandwidth fraction;
- compute from a measured ceiling at the claim's power limit (``ceilings.csv``) else the
  card's datasheet dense rate, as :func:`claimcheck.core.inputs.compute_ceiling` picks.

A source with no such figure has no model: its claims are set against the plain roofline
(eta = 1). Speeds are tok/s, aggregate = summed over the streams sharing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NO_DRAFTER = ("none", "")
"""``spec_method`` values that mean no drafter: stated "none", or not stated at all."""

PHASE_PREFERENCE = {"decode": 0, "unspecified": 1, "end_to_end": 2}
"""Which metric phases may calibrate, in order of preference (prefill never does)."""


def source_key(row: Mapping[str, Any], weight_format: str | None) -> tuple[str, ...]:
    """The source a registry row belongs to: (publisher, system, card, power limit in W,
    weight format). A claim's publisher is its system's, and the system is the registry's
    ``system``; a reproduction's or control's publisher is the seed that ran it, and its
    system is the checkpoint it served when the seed names one (one stack on one card: the
    seed's own runs of one checkpoint under different benchmark scripts), else ``system``."""
    own_run = row.get("kind") != "claim"
    publisher = f"seed {row.get('seed')} {row.get('kind')}" if own_run else ""
    system = (own_run and row.get("checkpoint")) or row.get("system") or ""
    power = row.get("power_limit_w")
    return (publisher, str(system), str(row.get("card") or ""),
            "" if power in (None, "") else f"{float(power):g}", weight_format or "")


@dataclass(frozen=True)
class Figure:
    """One registry figure as calibration sees it. ``plain_tok_s`` is the plain roofline
    (eta 1, tau 1) at the figure's own card, weights, streams and context, aggregate tok/s;
    ``plain_bound`` its binding term there; ``drafter`` the registry's ``spec_method``."""

    id: str
    run: str
    order: int
    streams_sharing: float
    phase: str
    context_tokens: float
    drafter: str
    aggregate_tok_s: float
    plain_tok_s: float | None
    plain_bound: str
    bound: str = ""


def is_calibration_candidate(f: Figure) -> bool:
    """One stream, no drafter (stated or not), an exact figure (no bound), a decode or
    end-to-end or unspecified rate, a memory-bound plain roofline, and at or below it (a
    figure above the no-drafter line cannot be a no-drafter figure)."""
    return (f.streams_sharing == 1 and (f.drafter or "").lower() in NO_DRAFTER
            and not f.bound and f.phase in PHASE_PREFERENCE and bool(f.plain_tok_s)
            and f.plain_bound == "memory" and f.aggregate_tok_s <= f.plain_tok_s)  # type: ignore[operator]


def pick_calibration(figures: Sequence[Figure]) -> Figure | None:
    """The source's calibration figure among ``figures`` (all of one source): a decode
    figure first, then the shortest context, then a stated "no drafter", then registry
    order; None when no figure qualifies (:func:`is_calibration_candidate`)."""
    ok = [f for f in figures if is_calibration_candidate(f)]
    if not ok:
        return None
    return min(ok, key=lambda f: (PHASE_PREFERENCE[f.phase], f.context_tokens or 0.0,
                                  f.drafter.lower() != "none", f.order))


def eta_from(figure_tok_s: float, plain_tok_s: float) -> float:
    """Effective bandwidth fraction from a one-stream, memory-bound figure: figure / plain
    roofline at that figure's context (both tok/s). Refused outside (0, 1]."""
    if not (plain_tok_s > 0 and 0 < figure_tok_s <= plain_tok_s):
        raise ValueError(f"eta needs 0 < figure ({figure_tok_s!r} tok/s) <= plain roofline "
                         f"({plain_tok_s!r} tok/s)")
    return figure_tok_s / plain_tok_s


@dataclass(frozen=True)
class SourceModel:
    """The model of a claim's own source at the claim's streams and context."""

    tok_s: float | None
    """Aggregate tok/s the source-calibrated model predicts; None when the source has none."""
    eta: float = 1.0
    binding_term: str = ""
    """"memory" or "compute": the larger term of the model's step at the claim's streams."""
    bend_streams: float | None = None
    """Streams where the model's memory and compute terms meet (inf: never)."""
    calibrated_on: tuple[str, ...] = ()
    calibration: str = ""
    """Plain words: which published figure set eta, and where compute came from."""
    is_calibration: bool = False
    """True when the claim is the figure that sets eta (so the model cannot test it)."""


def within(ratio: float, tolerance: float) -> bool:
    """True when ``ratio`` is within ``tolerance`` of 1, judged on the percentage as printed
    (one decimal), so a figure on the edge never reads "+5.0% ... beyond 5%"."""
    return float(f"{abs(ratio - 1.0) * 100:.1f}") <= float(f"{tolerance * 100:.1f}")


def pct(ratio: float) -> str:
    """``ratio`` - 1 as a signed percentage with one decimal ("+4.7%")."""
    return f"{ratio - 1.0:+.1%}"


def compare(value: float, line: float, tolerance: float, bound: str = "") -> str:
    """"consistent", "above" or "below": ``value`` (tok/s) against a model ``line``.

    An exact figure is consistent within ``tolerance``. A bound is compared as a bound:
    "at_least" X (the true figure is X or more) is above only when X itself is beyond
    tolerance above the line, else the line satisfies it; "at_most" X is below only when X
    is beyond tolerance under the line."""
    r = value / line
    if within(r, tolerance):
        return "consistent"
    if bound == "at_least":
        return "above" if r > 1 else "consistent"
    if bound == "at_most":
        return "below" if r < 1 else "consistent"
    return "above" if r > 1 else "below"


def binding_text(term: str, bend: float | None) -> str:
    """Plain words for the binding term: memory below the bend, compute past it."""
    if term == "compute":
        return (f"compute-bound: past the bend at {bend:.1f} streams" if bend is not None
                else "compute-bound")
    if bend is None or bend == float("inf"):
        return "memory-bound (no bend)"
    return f"memory-bound: below the bend at {bend:.1f} streams"
