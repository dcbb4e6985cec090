"""The serving-measurement gate (seed 001's B200 control), as pure arithmetic over level rows.

A protocol with a ``gate`` (``min_levels``, ``min_repeats``, ``plateau_pct``) is judged on its
measured ladder: per concurrency level the median and spread (min to max) of the aggregate
over repeats; reference levels are shown but not counted; the gate fails with fewer than
``min_levels`` counted levels or a level with fewer than ``min_repeats`` repeats. The plateau
check flags where the median aggregate grows by less than ``plateau_pct`` % from one level
to the next and names what set it: the server's max-num-seqs (the level asks for more
streams than the server runs at once), the card (the roofline itself stops growing, or the
measured value already sits at it), or neither of the two.

Speeds in tok/s (aggregate over the level's streams); energy in J; tok/s per W = tok/J.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from claimcheck.readings.definitions import tokens_per_joule

CARD_SHARE = 0.9
"""Measured / roofline at or above which the card is said to set a plateau."""


@dataclass(frozen=True)
class Gate:
    """A protocol's gate rules (config/protocols.yaml ``gate``)."""

    min_levels: int
    min_repeats: int
    plateau_pct: float

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Gate:
        return cls(int(d["min_levels"]), int(d["min_repeats"]), float(d["plateau_pct"]))


@dataclass(frozen=True)
class LevelRow:
    """One repeat of one level: its streams (concurrency), aggregate tok/s, output tokens and
    measured energy (J, the step's one energy of :func:`claimcheck.readings.energy.step_energy`;
    None without), and the roofline's aggregate at the level (tok/s)."""

    streams: int
    aggregate_tok_s: float
    reference: bool = False
    output_tokens: int | None = None
    energy_j: float | None = None
    roofline_tok_s: float | None = None


@dataclass(frozen=True)
class Level:
    """One level over its repeats: median and min-max of the aggregate, median tok/s per
    measured W, the roofline at the level and the growth from the previous level (%)."""

    streams: int
    reference: bool
    repeats: int
    median_tok_s: float
    min_tok_s: float
    max_tok_s: float
    tok_s_per_w: float | None
    roofline_tok_s: float | None
    growth_pct: float | None


@dataclass(frozen=True)
class Plateau:
    """Aggregate growth below the threshold from ``from_streams`` to ``to_streams``, and
    what set it (``cause``: "max-num-seqs", "card" or "neither") with the reason in words."""

    from_streams: int
    to_streams: int
    growth_pct: float
    cause: str
    why: str


@dataclass(frozen=True)
class GateResult:
    levels: tuple[Level, ...]
    failures: tuple[str, ...]
    plateaus: tuple[Plateau, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


def levels(rows: Iterable[LevelRow]) -> list[Level]:
    """Group repeats by streams (ascending) into levels with median, spread, tok/s/W and
    growth of the median from the previous level."""
    by: dict[int, list[LevelRow]] = {}
    for r in rows:
        by.setdefault(r.streams, []).append(r)
    out: list[Level] = []
    for n in sorted(by):
        rs = by[n]
        vals = [r.aggregate_tok_s for r in rs]
        per_w = [x for x in (tokens_per_joule(r.output_tokens, r.energy_j) for r in rs
                             if r.output_tokens) if x is not None]
        roof = [r.roofline_tok_s for r in rs if r.roofline_tok_s]
        med = statistics.median(vals)
        prev = out[-1].median_tok_s if out else None
        out.append(Level(
            streams=n, reference=any(r.reference for r in rs), repeats=len(rs),
            median_tok_s=med, min_tok_s=min(vals), max_tok_s=max(vals),
            tok_s_per_w=statistics.median(per_w) if per_w else None,
            roofline_tok_s=roof[0] if roof else None,
            growth_pct=(med / prev - 1) * 100 if prev else None))
    return out


def plateau_cause(lo: Level, hi: Level, max_num_seqs: int | None,
                  plateau_pct: float) -> tuple[str, str]:
    """What set a plateau from level ``lo`` to ``hi``: ("max-num-seqs", why) when ``hi``
    asks for more streams than the server runs at once; ("card", why) when the roofline
    itself grows less than ``plateau_pct`` % or the measured median is at least
    :data:`CARD_SHARE` of it; else ("neither", why)."""
    if max_num_seqs and hi.streams > max_num_seqs:
        return "max-num-seqs", (f"{hi.streams} streams asked, the server runs at most "
                                f"max-num-seqs = {max_num_seqs} at once and queues the rest")
    if lo.roofline_tok_s and hi.roofline_tok_s:
        roof_growth = (hi.roofline_tok_s / lo.roofline_tok_s - 1) * 100
        share = hi.median_tok_s / hi.roofline_tok_s
        if roof_growth < plateau_pct or share >= CARD_SHARE:
            return "card", (f"the roofline grows {roof_growth:.1f}% and the measured "
                            f"{hi.median_tok_s:,.0f} tok/s is {share:.0%} of its "
                            f"{hi.roofline_tok_s:,.0f}")
        return "neither", (f"{hi.streams} streams fit in max-num-seqs = "
                           f"{max_num_seqs or '?'} and the measured {hi.median_tok_s:,.0f} "
                           f"tok/s is {share:.0%} of the roofline's "
                           f"{hi.roofline_tok_s:,.0f}, which still grows {roof_growth:.1f}%")
    return "neither", "no roofline at these levels to compare with"


def check(rows: Iterable[LevelRow], gate: Gate, max_num_seqs: int | None) -> GateResult:
    """Judge a ladder: the levels, the rules it fails (in words) and its plateaus."""
    lv = levels(rows)
    counted = [x for x in lv if not x.reference]
    failures = []
    if len(counted) < gate.min_levels:
        failures.append(f"too few levels: {len(counted)} counted (reference levels not "
                        f"counted), the gate needs at least {gate.min_levels}")
    short = [x for x in lv if x.repeats < gate.min_repeats]
    if short:
        failures.append("too few repeats: " + ", ".join(
            f"{x.repeats} at {x.streams} streams" for x in short)
            + f"; the gate needs at least {gate.min_repeats} per level")
    plateaus = []
    for lo, hi in zip(lv, lv[1:], strict=False):
        if hi.growth_pct is not None and hi.growth_pct < gate.plateau_pct:
            cause, why = plateau_cause(lo, hi, max_num_seqs, gate.plateau_pct)
            plateaus.append(Plateau(lo.streams, hi.streams, hi.growth_pct, cause, why))
    return GateResult(tuple(lv), tuple(failures), tuple(plateaus))


def verdict(res: GateResult, gate: Gate) -> str:
    """One line: passes or fails (with each failed rule), then each plateau and its cause."""
    head = ("Gate **passes**" if res.passed else "Gate **fails**: " + "; ".join(res.failures))
    rules = (f" (rules: at least {gate.min_levels} levels, {gate.min_repeats} repeats per "
             f"level, plateau below {gate.plateau_pct:g}% growth)")
    if res.plateaus:
        tail = " Plateau: " + "; ".join(
            f"{p.from_streams} → {p.to_streams} streams changes {p.growth_pct:+.1f}%, set by "
            f"{'neither max-num-seqs nor the card' if p.cause == 'neither' else p.cause} "
            f"({p.why})" for p in res.plateaus) + "."
    else:
        tail = (f" No plateau: the median aggregate grows at least {gate.plateau_pct:g}% "
                "from each level to the next.")
    return head + rules + "." + tail
