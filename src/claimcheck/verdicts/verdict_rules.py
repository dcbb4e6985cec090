"""A verdict's kind decided (pure): the rules, in order, over one claim's evidence, giving a
typed record of the kind, the rule that decided it and the numbers it read (no words: the
sentence is written from that record by :mod:`claimcheck.verdicts.verdict_words`).

Inputs (:class:`Evidence`) are numbers worked out elsewhere: the plain roofline at the
claim's own card, weights, streams sharing the aggregate and context
(:class:`claimcheck.verdicts.verdicts.Ceiling`); the model of the claim's own source,
calibrated on that source's one-stream figure
(:class:`claimcheck.verdicts.sourcemodel.SourceModel`); the measured ratio of the claim's
definition to end to end at the nearest measured concurrency on our timelines (held-prefill
steps left out); and, only for a claim made on a card measured here, the replay of its
protocol on that card (:class:`claimcheck.verdicts.verdicts.Reproduction`). A replay on
another card is context, never a verdict
(:func:`claimcheck.verdicts.verdict_evidence.replay_sentence`). Rules, in order:

1. *not comparable*: not a decode rate the roofline bounds (prefill, SSE chunks counted as
   tokens).
2. *reproduced* / *not reproduced by a seed's run*: a seed's own run of the claim's workload
   and metric definition (:class:`claimcheck.verdicts.verdicts.SeedReproduction`) decides
   first: reproduced when the claim lies in its range, under it, or within the tolerance
   over it, the tolerance being at least the spread between the seed's own runs.
3. *not comparable* without a roofline (unknown card or weight bytes); *reproduced here* /
   *not reproduced here*: the claim's card was measured here by the protocol that replays it.
4. Above the plain roofline (beyond ``tolerance``; an "at most" figure too, being a peak
   the source reports reaching): *definition inflates* when the claim's definition reads N%
   above end to end on our timelines and end to end fits under it; else *needs a drafter*.
5. With a source model, a band (:func:`claimcheck.verdicts.sourcemodel.band`) from the
   no-overlap floor to the overlap ceiling: *in the bend region of its source's model*
   inside it (at one stream, where there is no bend, *at its source's one-stream model*);
   *short of its source's model* only beyond ``tolerance`` under the floor; *above its
   source's model* only beyond it over the ceiling (or *definition inflates*). The figure
   that alone sets its source's eta *sets its source's model* (the model cannot test it).
6. *within the physics*: at or below the plain roofline; the source publishes no
   calibration figure (eta = 1).

Definitions both ways: an end-to-end figure against a decode-calibrated source model is
judged on the band times end to end / decode (``e2e_ratio``); without a ratio, one under the
floor is *not comparable*. Bounds (registry ``bound``: "at_least", "at_most") are compared
as bounds (:func:`claimcheck.verdicts.sourcemodel.compare`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

from claimcheck.verdicts import verdicts as v
from claimcheck.verdicts.sourcemodel import SourceModel, band_side, compare, within
from claimcheck.verdicts.verdict_drafting import Drafting


class Rule(enum.Enum):
    """Which rule decided a verdict: one kind can come from more than one ("not comparable"
    from three, "definition inflates" from two), and the sentence says which."""

    NOT_DECODE = "the metric is not a decode rate"
    SEED = "a seed's run of the workload"
    NO_ROOFLINE = "no plain roofline"
    REPLAY = "the protocol replayed here on the claim's card"
    INFLATES_PLAIN = "over the plain roofline, the definition's inflation taken out fits"
    NEEDS_DRAFTER = "over the plain roofline"
    CALIBRATES = "the one figure its source's model is calibrated on"
    E2E_UNSCALED = "end to end under a decode-only floor, no end-to-end / decode ratio"
    AT_SOURCE = "inside its source's band at one stream"
    BAND = "inside its source's band"
    INFLATES_SOURCE = "over its source's band, the definition's inflation taken out fits"
    ABOVE_SOURCE = "over its source's band"
    SHORT = "under its source's band"
    WITHIN = "at or under the plain roofline, no source model"


BAND_KINDS = {Rule.E2E_UNSCALED: v.NOT_COMPARABLE, Rule.AT_SOURCE: v.AT_SOURCE,
              Rule.BAND: v.BAND, Rule.INFLATES_SOURCE: v.DEFINITION_INFLATES,
              Rule.ABOVE_SOURCE: v.ABOVE_SOURCE, Rule.SHORT: v.SHORT}
"""The kind each rule of a figure against its source's band gives."""


@dataclass(frozen=True)
class Evidence:
    """One claim's inputs to its verdict, every one after ``source`` by name only
    (reordering the fields cannot swap two arguments).

    ``claim`` holds the tidy registry row (``metric``, ``aggregate_tok_s``,
    ``per_stream_tok_s``, ``streams``, ``streams_running``, ``spec_method``,
    ``assumed_fields``, optional ``bound`` with ``bound_before``/``bound_after``, the seed's
    own words for it ("up to", "or less"; else "at most" / "at least"), and
    ``aggregate_note``: a sentence saying where a derived aggregate came from);
    ``inflation`` is the measured ratio of the claim's definition to end to end for its
    workload shape (None when not measured);
    ``seed_reproduction`` a seed's own reproduction of its workload and definition;
    ``e2e_ratio`` end to end / decode for an end-to-end claim (the same run's figures as
    its source printed them, else measured here for the workload shape; where from in
    ``e2e_ratio_source``), which carries a decode-only source model over to it;
    ``run_drafter`` names a sibling figure of the same run that needs a drafter ("X needs
    1.54 tokens kept per stream per step"): the run is judged as a whole, so this figure
    never reads as showing the drafter unneeded
    (:func:`claimcheck.verdicts.verdict_words.drafter_words`);
    ``drafting`` holds the verify rows per stream and the tokens kept needed at them
    (:class:`claimcheck.verdicts.verdict_drafting.Drafting`; None: one row, the plain ratio).
    """

    claim: Mapping[str, Any]
    ceiling: v.Ceiling
    source: SourceModel | None = None
    _: KW_ONLY
    inflation: float | None = None
    inflation_source: str = ""
    reproduction: v.Reproduction | None = None
    tolerance: float = v.TOLERANCE
    seed_reproduction: v.SeedReproduction | None = None
    e2e_ratio: float | None = None
    e2e_ratio_source: str = ""
    run_drafter: str = ""
    drafting: Drafting | None = None

    @property
    def agg(self) -> float:
        """The claim's aggregate (tok/s, summed over the streams sharing it)."""
        return float(self.claim["aggregate_tok_s"])

    @property
    def running(self) -> float:
        """The streams sharing the aggregate: those running where stated, else requested."""
        return self.claim.get("streams_running") or self.claim["streams"]

    @property
    def roof(self) -> float | None:
        """The plain roofline (tok/s) at those streams; None when there is none."""
        return self.ceiling.roofline_tok_s

    @property
    def model(self) -> SourceModel | None:
        """The source model when it gives a rate, else None."""
        return self.source if self.source is not None and self.source.tok_s else None


@dataclass(frozen=True)
class Decision:
    """A verdict's kind and what decided it (no words).

    ``numbers`` are the verdict's numbers as the verdicts table prints them (in its column
    order). The rest is what the rule read, where it read it: ``reference`` the rate the
    figure was read against (tok/s: the replay's nearer end, the plain roofline or the
    source's ceiling, scaled to end to end); ``floor`` the source's no-overlap floor (tok/s,
    scaled); ``scale`` end to end / decode applied to the source's band (1: none);
    ``side`` where the figure lies ("below", "inside", "above": of the seed's range or of
    the source's band); ``tolerance`` the tolerance the rule used (a seed's spread can
    widen it); ``over_roofline`` a seed-decided figure over the plain roofline;
    ``bound_met`` a bound inside the band but outside floor to ceiling (met, not matched).
    """

    kind: str
    rule: Rule
    evidence: Evidence
    numbers: Mapping[str, Any]
    _: KW_ONLY
    reference: float | None = None
    floor: float | None = None
    scale: float = 1.0
    side: str = ""
    tolerance: float | None = None
    over_roofline: bool = False
    bound_met: bool = False


def decide(e: Evidence) -> Decision:
    """The kind of one claim's verdict, by the rules in order (module docstring)."""
    nums = _numbers(e)
    roof, model = e.roof, e.model
    if e.claim["metric"] in v.NOT_A_DECODE_RATE:
        return Decision(v.NOT_COMPARABLE, Rule.NOT_DECODE, e, nums)
    if e.seed_reproduction is not None:
        return _by_seed(e, nums, e.seed_reproduction)
    if roof is None:
        return Decision(v.NOT_COMPARABLE, Rule.NO_ROOFLINE, e, nums)
    if e.reproduction is not None:
        return _by_replay(e, nums, e.reproduction)
    if compare(e.agg, roof, e.tolerance) == "above":
        return _over_roofline(e, nums, roof)
    if model is not None and model.is_calibration:
        return Decision(v.CALIBRATES, Rule.CALIBRATES, e, nums, reference=roof)
    if model is not None:
        return _by_source(e, nums, model)
    return Decision(v.WITHIN, Rule.WITHIN, e, nums, reference=roof)


def _numbers(e: Evidence) -> dict[str, Any]:
    """The numbers every verdict carries, whatever decides it."""
    agg, running, roof, src, source = e.agg, e.running, e.roof, e.model, e.source
    nums: dict[str, Any] = {
        "aggregate_tok_s": agg, "streams_sharing": running,
        "per_stream_tok_s": e.claim.get("per_stream_tok_s") or agg / running,
        "tolerance": e.tolerance, "roofline_tok_s": roof,
        "claim_over_roofline": agg / roof if roof else None,
        "tau_needed": agg / roof if roof else None,
        "source_model_tok_s": src.tok_s if src else None,
        "source_floor_tok_s": src.floor_tok_s if src else None,
        "source_ceiling_low_tok_s": src.ceiling_low_tok_s if src else None,
        "claim_over_source": agg / src.tok_s if src and src.tok_s else None,
        "claim_over_floor": agg / src.floor_tok_s if src and src.floor_tok_s else None,
        "compute_range": source.compute_range if source else "",
        "calibrated_on": ";".join(source.calibrated_on) if source else "",
        "calibration": source.calibration if source else "",
        "binding_term": (src.binding_term if src else e.ceiling.bound) if roof else "",
        "bend_streams": source.bend_streams if source else None,
        "memory_wall_streams": source.memory_wall_streams if source else None,
        "bound": e.claim.get("bound") or ""}
    if e.drafting is not None and roof:
        nums.update(e.drafting.numbers())
    return nums


def _by_seed(e: Evidence, nums: dict[str, Any], rep: v.SeedReproduction) -> Decision:
    """Rule 2: reproduced when the claim lies in the seed's range, under it (the run cleared
    it), or within the tolerance over it, that being at least the spread of the seed's runs."""
    agg, roof = e.agg, e.roof
    tol = max(e.tolerance, rep.spread)
    side = ("below" if agg < rep.low_tok_s else "inside" if agg <= rep.high_tok_s
            else "above")
    fits = side != "above" or within(agg / rep.high_tok_s, tol)
    seed_nums = {"seed_reproduction_low_tok_s": rep.low_tok_s,
                 "seed_reproduction_high_tok_s": rep.high_tok_s,
                 "seed_reproduction_ids": ";".join(rep.ids),
                 "seed_reproduction_runs": ";".join(rep.runs),
                 "seed_reproduction_tolerance": tol,
                 "claim_over_reproduction": agg / rep.high_tok_s if agg > rep.high_tok_s
                 else agg / rep.low_tok_s if agg < rep.low_tok_s else 1.0}
    over = bool(roof) and compare(agg, roof, e.tolerance) == "above"  # type: ignore[arg-type]
    return Decision(v.SEED_REPRODUCED if fits else v.SEED_NOT_REPRODUCED, Rule.SEED, e,
                    {**nums, **seed_nums}, reference=roof, side=side, tolerance=tol,
                    over_roofline=over)


def _by_replay(e: Evidence, nums: dict[str, Any], rep: v.Reproduction) -> Decision:
    """Rule 3: the replay here on the claim's card; within the tolerance of its range."""
    agg, lo, hi = e.agg, rep.low_tok_s, rep.high_tok_s
    near = hi if agg > hi else lo
    inside = lo <= agg <= hi or within(agg / near, e.tolerance)
    return Decision(v.REPRODUCED if inside else v.NOT_REPRODUCED, Rule.REPLAY, e,
                    {**nums, "reproduced_low_tok_s": lo, "reproduced_high_tok_s": hi},
                    reference=near)


def _over_roofline(e: Evidence, nums: dict[str, Any], roof: float) -> Decision:
    """Rule 4 ("up to X" is a peak the source reports reaching: above the plain line it
    needs a drafter like any figure; the bound only matters against a model that reads
    higher)."""
    if _deflated_fits(e.agg, roof, e.inflation, e.tolerance):
        return Decision(v.DEFINITION_INFLATES, Rule.INFLATES_PLAIN, e,
                        {**nums, "inflation": e.inflation}, reference=roof)
    return Decision(v.NEEDS_SPECULATION, Rule.NEEDS_DRAFTER, e, nums, reference=roof)


def _by_source(e: Evidence, nums: dict[str, Any], src: SourceModel) -> Decision:
    """Rule 5: the claim against its source's band, scaled to end to end when the claim is
    end to end and the model decode-only and a ratio is known."""
    agg = e.agg
    e2e_vs_decode = (e.claim.get("metric_phase") == "end_to_end"
                     and src.calibration_phase != "end_to_end")
    scale = e.e2e_ratio if e2e_vs_decode and e.e2e_ratio else 1.0
    ceil = float(src.tok_s) * scale  # type: ignore[arg-type]
    floor = (src.floor_tok_s if src.floor_tok_s is not None else float(src.tok_s)
             ) * scale  # type: ignore[arg-type]
    if scale != 1.0:
        nums = {**nums, "e2e_ratio": scale, "e2e_ratio_source": e.e2e_ratio_source,
                "source_decode_model_tok_s": src.tok_s, "source_model_tok_s": ceil,
                "source_floor_tok_s": floor, "claim_over_source": agg / ceil,
                "claim_over_floor": agg / floor}
    bound = e.claim.get("bound") or ""
    side = band_side(agg, ceil, floor, e.tolerance, bound)
    rule = _band_rule(e, side, e2e_vs_decode and scale == 1.0, ceil)
    if rule is Rule.INFLATES_SOURCE:
        nums = {**nums, "inflation": e.inflation}
    return Decision(BAND_KINDS[rule], rule, e, nums, reference=ceil, floor=floor, scale=scale,
                    side=side, bound_met=bool(bound) and not (floor <= agg <= ceil))


def _band_rule(e: Evidence, side: str, unscaled_e2e: bool, ceil: float) -> Rule:
    """The rule that decides a figure at ``side`` of its source's band."""
    if side == "below" and unscaled_e2e:
        return Rule.E2E_UNSCALED
    if side == "inside":
        return Rule.AT_SOURCE if e.running == 1 else Rule.BAND
    if side == "above":
        if _deflated_fits(e.agg, ceil, e.inflation, e.tolerance):
            return Rule.INFLATES_SOURCE
        return Rule.ABOVE_SOURCE
    return Rule.SHORT


def _deflated_fits(agg: float, reference: float, inflation: float | None,
                   tolerance: float) -> bool:
    """Whether a figure (tok/s) above ``reference`` fits it once its definition's measured
    ratio to end to end (``inflation``) is taken out."""
    return (inflation is not None and inflation > 1
            and compare(agg / inflation, reference, tolerance) != "above")
