"""A verdict for every registry claim: one kind, its numbers and its reason (pure).

Inputs are numbers worked out elsewhere: the plain roofline at the claim's own card,
weights, streams sharing the aggregate and context (:class:`Ceiling`); the model of the
claim's own source, calibrated on that source's one-stream figure
(:class:`claimcheck.verdicts.sourcemodel.SourceModel`); the measured ratio of the claim's
definition to end to end at the nearest measured concurrency on our timelines (held-prefill
steps left out); and, only for a claim made on a card measured here, the replay of its
protocol on that card (:class:`Reproduction`). A replay on another card is context, never a
verdict (:func:`claimcheck.verdicts.verdict_evidence.replay_sentence`). Rules, in order:

1. *not comparable*: not a decode rate the roofline bounds (prefill, SSE chunks counted as
   tokens).
2. *reproduced* / *not reproduced by a seed's run*: a seed's own run of the claim's workload
   and metric definition (:class:`SeedReproduction`) decides first: reproduced when the claim
   lies in its range, under it, or within the tolerance over it, the tolerance being at
   least the spread between the seed's own runs; the reason says what differs.
3. *not comparable* without a roofline (unknown card or weight bytes); *reproduced here* /
   *not reproduced here*: the claim's card was measured here by the protocol that replays it.
4. Above the plain roofline (beyond ``tolerance``; an "at most" figure too, being a peak
   the source reports reaching): *definition inflates* when the claim's definition reads N%
   above end to end on our timelines and end to end fits under it; else *needs a drafter*:
   tau tokens kept per stream per step at the rows each stream verifies
   (:class:`claimcheck.verdicts.verdict_drafting.Drafting`: B r rows through every matrix),
   naming the drafter if stated and the acceptance its source states.
5. With a source model, a band (:func:`claimcheck.verdicts.sourcemodel.band`) from the
   no-overlap floor (at the lower end of the compute range) to the overlap ceiling (at the
   upper end): *in the bend region of its source's model* inside it, at X% of the ceiling
   (at one stream, where there is no bend, *at its source's one-stream model*);
   *short of its source's model* only beyond ``tolerance`` under the floor; *above its
   source's model* only beyond it over the ceiling (or *definition inflates*); outside a
   compute range the reason says which end binds. The figure that alone sets its source's
   eta *sets its source's model* (the model cannot test it); one with another run of its
   source to calibrate on is tested on that.
6. *within the physics*: at or below the plain roofline, at what fraction; the source
   publishes no calibration figure (eta = 1).

Definitions both ways: an end-to-end figure against a decode-calibrated source model is
judged on the band times end to end / decode (``e2e_ratio``); without a ratio, one under the
floor is *not comparable*. A run as a whole: with ``run_drafter`` (a sibling figure of the
same run needs a drafter) no figure says the drafter is not needed (:func:`drafter_words`,
:func:`claimcheck.verdicts.verdict_assembly.needs_drafter_runs`). The tolerance passed in is
at least the spread the claim's source shows between its own runs of one workload
(:func:`claimcheck.verdicts.sourcemodel.shown_spread`), printed as it is (:func:`tol_text`).

Tolerance (:data:`TOLERANCE`, 5%): the step model, given two numbers measured on a card,
meets the H200 runs' steps within 5% (issue 11, ``data/derived/model.csv``), the roofline
the seed's author draws lands 1% to 9% from HyperQwen's cohorts, and the registry's figures
carry two to four significant digits ("~1,035"); a ratio is judged on its printed
percentage with one decimal (:func:`claimcheck.verdicts.sourcemodel.within`).

Bounds (registry ``bound``: "at_least", "at_most") are compared as bounds
(:func:`claimcheck.verdicts.sourcemodel.compare`). Assumed registry fields (the project's, not
the seed's) make the evidence weaker; the reason says which. Speeds in tok/s (aggregate =
summed over the streams sharing it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from claimcheck.claims.metrics import METRICS
from claimcheck.verdicts.sourcemodel import (
    SourceModel,
    band_side,
    binding_text,
    compare,
    pct,
    within,
)
from claimcheck.verdicts.verdict_drafting import Drafting

WITHIN = "within the physics"
CALIBRATES = "sets its source's model"
BAND = "in the bend region of its source's model"
ABOVE_SOURCE = "above its source's model"
SHORT = "short of its source's model"
DEFINITION_INFLATES = "definition inflates"
NEEDS_SPECULATION = "needs a drafter"
NOT_COMPARABLE = "not comparable"
SEED_REPRODUCED = "reproduced by a seed's run"
SEED_NOT_REPRODUCED = "not reproduced by a seed's run"
REPRODUCED = "reproduced here"
NOT_REPRODUCED = "not reproduced here"
AT_SOURCE = "at its source's one-stream model"
"""Inside the band at one stream: one stream has no bend, so the band there is only the
gap between memory and arithmetic overlapped or not, and the figure meets its model."""
MATCHES_CARRIED = "matches this card's carried model"
ABOVE_CARRIED = "above this card's carried model"
SHORT_CARRIED = "short of this card's carried model"
"""Read against the carried model first (:mod:`claimcheck.verdicts.verdict_carried`)."""
KINDS = (SEED_REPRODUCED, SEED_NOT_REPRODUCED, NEEDS_SPECULATION, DEFINITION_INFLATES,
         ABOVE_CARRIED, MATCHES_CARRIED, SHORT_CARRIED, ABOVE_SOURCE, BAND, AT_SOURCE,
         CALIBRATES, SHORT, WITHIN, NOT_COMPARABLE, REPRODUCED, NOT_REPRODUCED)

TOLERANCE = 0.05
"""Default tolerance (see the module docstring for why 5%)."""

NOT_A_DECODE_RATE = {"prefill", "sse_chunks_per_s"}
"""Registry metrics the decode roofline does not bound."""

NO_DRAFTER = {"", "none", None}


@dataclass(frozen=True)
class Ceiling:
    """The plain roofline (eta = 1, tau = 1) at a claim's own configuration."""

    roofline_tok_s: float | None
    """Aggregate tok/s at the streams sharing the claim; None when there is none."""
    bound: str = ""
    """The plain roofline's binding term at those streams ("memory" or "compute")."""
    note: str = ""
    """Why there is no roofline (when ``roofline_tok_s`` is None)."""


@dataclass(frozen=True)
class Reproduction:
    """Our replay of the claim's protocol on the claim's own card. ``low``/``high`` bracket
    the measured value under the claim's definition (equal) or, for a figure whose
    definition is not stated, under every definition measured."""

    low_tok_s: float
    high_tok_s: float
    source: str


@dataclass(frozen=True)
class SeedReproduction:
    """A seed's own reproduction of the claim's workload and metric definition (registry
    rows of kind "reproduction", :func:`claimcheck.verdicts.sourcemodel.reproductions_of`):
    ``low``/``high`` bracket its figures (aggregate tok/s) over ``runs``; ``differs`` says
    what is not the same (power limit, engine, checkpoint, ...)."""

    seed: str
    low_tok_s: float
    high_tok_s: float
    runs: tuple[str, ...]
    ids: tuple[str, ...]
    differs: tuple[str, ...] = ()

    @property
    def spread(self) -> float:
        """The spread between the seed's own runs of the workload: high / low - 1."""
        return self.high_tok_s / self.low_tok_s - 1.0 if len(self.runs) > 1 else 0.0


@dataclass(frozen=True)
class Verdict:
    kind: str
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)


def tol_text(tolerance: float) -> str:
    """A tolerance as printed: "5%", or one decimal when it is not whole ("9.7%")."""
    return f"{tolerance:.0%}" if abs(tolerance * 100 - round(tolerance * 100)) < 0.05 \
        else f"{tolerance:.1%}"


def _assumed_note(assumed: str) -> str:
    return (f" Weaker evidence: {assumed.replace(',', ', ')} assumed by the registry, not "
            "stated by the seed." if assumed else "")


def _drafter_text(claim: Mapping[str, Any]) -> str:
    spec = claim.get("spec_method")
    if spec in NO_DRAFTER:
        return ""
    if "spec_method" in (claim.get("assumed_fields") or "").split(","):
        return f"drafter {spec} (assumed by the registry)"
    return f"drafter {spec} stated"


def _bound_text(bound: str) -> str:
    return {"at_least": "at least ", "at_most": "at most "}.get(bound, "")


def _seed_text(rep: SeedReproduction) -> str:
    """"seed 000's runs a, b (5 runs): 1,076.0 to 1,179.0 tok/s"."""
    span = (f"{rep.low_tok_s:,.1f}" if rep.low_tok_s == rep.high_tok_s
            else f"{rep.low_tok_s:,.1f} to {rep.high_tok_s:,.1f}")
    runs = (f"run {rep.runs[0]}" if len(rep.runs) == 1
            else f"{len(rep.runs)} runs ({', '.join(rep.runs)})")
    return f"seed {rep.seed}'s {runs}: {span} tok/s"


def seed_verdict(fig: str, agg: float, rep: SeedReproduction, tolerance: float,
                 extra: str = "") -> Verdict:
    """Rule 2: a seed's reproduction of the claim's workload and definition decides. The
    claim is reproduced when it lies in the reproduction's range, under it (the run cleared
    it), or within the tolerance over it, the tolerance being at least the spread between
    the seed's own runs; else not reproduced, with the numbers."""
    tol = max(tolerance, rep.spread)
    nums = {"seed_reproduction_low_tok_s": rep.low_tok_s,
            "seed_reproduction_high_tok_s": rep.high_tok_s,
            "seed_reproduction_ids": ";".join(rep.ids),
            "seed_reproduction_runs": ";".join(rep.runs),
            "seed_reproduction_tolerance": tol,
            "claim_over_reproduction": agg / rep.high_tok_s if agg > rep.high_tok_s
            else agg / rep.low_tok_s if agg < rep.low_tok_s else 1.0}
    differs = ("; what differs: " + "; ".join(rep.differs)) if rep.differs else \
        "; nothing recorded differs"
    tol_txt = (f"{tol:.1%}, the spread between those runs" if rep.spread > tolerance
               else tol_text(tol))
    where = _seed_text(rep)
    if agg < rep.low_tok_s:
        how = f"every one of those runs clears it ({pct(agg / rep.low_tok_s)} under the lowest)"
    elif agg <= rep.high_tok_s:
        how = "it lies inside that range"
    elif within(agg / rep.high_tok_s, tol):
        how = f"it lies {pct(agg / rep.high_tok_s)} over the highest, within {tol_txt}"
    else:
        return Verdict(SEED_NOT_REPRODUCED, f"{fig} is not reproduced by {where}: it lies "
                       f"{pct(agg / rep.high_tok_s)} over the highest, beyond {tol_txt}"
                       f"{differs}.{extra}", nums)
    return Verdict(SEED_REPRODUCED, f"{fig} is reproduced by {where}; {how}{differs}.{extra}",
                   nums)


def _band_words(src: SourceModel, scale: float = 1.0, scale_text: str = "") -> str:
    """The source's band in words: ceiling, floor, the binding term and the compute;
    ``scale`` (with ``scale_text`` saying where it comes from) carries a decode-only band
    over to an end-to-end figure."""
    ceil = float(src.tok_s) * scale  # type: ignore[arg-type]
    floor = src.floor_tok_s * scale if src.floor_tok_s is not None else None
    what = "end-to-end ceiling" if scale != 1.0 else "ceiling"
    text = f"its source's {what} {ceil:,.1f} tok/s (memory and compute overlapped"
    if floor is not None:
        text += f"; no-overlap floor {floor:,.1f} tok/s"
    if scale != 1.0:
        text += (f"; the decode model's {float(src.tok_s):,.1f} and "  # type: ignore[arg-type]
                 f"{src.floor_tok_s or float(src.tok_s):,.1f} tok/s times end to end / "
                 f"decode {scale:.3f}, {scale_text}")
    text += f"; {binding_text(src.binding_term, src.bend_streams, src.memory_wall_streams)}"
    if src.ceiling_low_tok_s is not None and src.ceiling_low_tok_s != src.tok_s:
        text += (f"; {src.ceiling_low_tok_s * scale:,.1f} tok/s at the lower end of the "
                 f"compute range, {src.binding_term_low}-bound there")
    return text + f"; {src.calibration})"


def _which_end(src: SourceModel, side: str) -> str:
    """Which end of the compute range binds a figure outside the band (a compute range has
    two ends; a measured rate, one)."""
    if not src.compute_range or " to " not in src.compute_range:
        return ""
    if side == "above":
        return (f"; over the ceiling even at the upper end of the compute range "
                f"({src.compute_range}), {src.binding_term}-bound there")
    return (f"; under the floor even at the lower end of the compute range "
            f"({src.compute_range})")


def verdict(claim: Mapping[str, Any], ceiling: Ceiling, source: SourceModel | None = None,
            *, inflation: float | None = None, inflation_source: str = "",
            reproduction: Reproduction | None = None,
            tolerance: float = TOLERANCE,
            seed_reproduction: SeedReproduction | None = None,
            e2e_ratio: float | None = None, e2e_ratio_source: str = "",
            run_drafter: str = "", drafting: Drafting | None = None) -> Verdict:
    """The verdict for one claim; every input after ``source`` by name only (reordering
    them cannot swap two arguments).

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
    never reads as showing the drafter unneeded (:func:`drafter_words`);
    ``drafting`` holds the verify rows per stream and the tokens kept needed at them
    (:class:`claimcheck.verdicts.verdict_drafting.Drafting`; None: one row, the plain ratio).
    """
    agg = float(claim["aggregate_tok_s"])
    running = claim.get("streams_running") or claim["streams"]
    bound = claim.get("bound") or ""
    assumed = _assumed_note(claim.get("assumed_fields") or "")
    note = f" {claim['aggregate_note']}" if claim.get("aggregate_note") else ""
    drafter = _drafter_text(claim)
    label = METRICS[claim["metric"]].label if claim["metric"] in METRICS else claim["metric"]
    roof = ceiling.roofline_tok_s
    src = source if source is not None and source.tok_s else None
    nums: dict[str, Any] = {
        "aggregate_tok_s": agg, "streams_sharing": running,
        "per_stream_tok_s": claim.get("per_stream_tok_s") or agg / running,
        "tolerance": tolerance, "roofline_tok_s": roof,
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
        "binding_term": (src.binding_term if src else ceiling.bound) if roof else "",
        "bend_streams": source.bend_streams if source else None,
        "memory_wall_streams": source.memory_wall_streams if source else None,
        "bound": bound}
    if drafting is not None and roof:
        nums.update(drafting.numbers())
    need = (drafting.need_text() if drafting is not None
            else f"{agg / roof:.2f} tokens kept per stream per step" if roof else "")
    reach = drafting.reach_text() if drafting is not None else ""
    streams_txt = (f"{running:g} streams running ({claim['streams']} requested)"
                   if claim.get("streams_running") else f"{running:g} streams")
    before, after = claim.get("bound_before") or "", claim.get("bound_after") or ""
    if bound and not (before or after):
        before = _bound_text(bound).strip()
    value_txt = " ".join(filter(None, (before, f"{agg:,.1f} tok/s", after)))
    fig = (f"{value_txt} at 1 stream" if running == 1 else
           f"{value_txt} summed over {streams_txt}")
    if claim["metric"] in NOT_A_DECODE_RATE:
        return Verdict(NOT_COMPARABLE, f"the metric ({label}) is not a decode rate; the "
                       "decode roofline does not bound it." + assumed, nums)
    if seed_reproduction is not None:
        extra = ""
        if roof and compare(agg, roof, tolerance) == "above":
            extra = (f" It is {agg / roof:.2f}x its card's plain roofline {roof:,.1f} tok/s, "
                     f"so a drafter is needed ({need}{reach}): "
                     f"{drafter if drafter else 'no drafter is stated'}.")
        out = seed_verdict(fig, agg, seed_reproduction, tolerance, extra + note + assumed)
        return Verdict(out.kind, out.reason, {**nums, **out.numbers})
    if roof is None:
        return Verdict(NOT_COMPARABLE, f"no roofline: {ceiling.note}." + assumed, nums)
    if reproduction is not None:
        lo, hi = reproduction.low_tok_s, reproduction.high_tok_s
        nums.update(reproduced_low_tok_s=lo, reproduced_high_tok_s=hi)
        near = hi if agg > hi else lo
        inside = lo <= agg <= hi or within(agg / near, tolerance)
        span = f"{lo:,.1f}" if lo == hi else f"{lo:,.1f} to {hi:,.1f}"
        if inside:
            return Verdict(REPRODUCED, f"{fig} lies within {tol_text(tolerance)} of {span} tok/s "
                           f"measured here ({reproduction.source})." + note + assumed, nums)
        return Verdict(NOT_REPRODUCED, f"{fig} is {pct(agg / near)} from {span} tok/s "
                       f"measured here ({reproduction.source}), beyond {tol_text(tolerance)}."
                       + note + assumed, nums)
    plain_txt = f"the plain roofline {roof:,.1f} tok/s"
    # "up to X" is a peak the source reports reaching: above the plain line it needs a drafter
    # like any figure; the bound only matters against a model that reads higher (below).
    if compare(agg, roof, tolerance) == "above":
        if _deflated_fits(agg, roof, inflation, tolerance):
            nums["inflation"] = inflation
            return Verdict(DEFINITION_INFLATES, _inflates_text(
                f"{fig} is {agg / roof:.2f}x {plain_txt}", label, inflation, inflation_source,
                agg) + note + assumed, nums)
        why = drafter if drafter else "no drafter is stated"
        return Verdict(NEEDS_SPECULATION, f"{fig} is {agg / roof:.2f}x {plain_txt} "
                       f"({ceiling.bound} bound): it needs {need}, which only a drafter "
                       f"gives{reach}; {why}." + note + assumed, nums)
    if src is not None and src.is_calibration:
        return Verdict(CALIBRATES, f"{fig} sets its source's model: it is the only "
                       f"one-stream, no-drafter figure its source publishes "
                       f"({src.calibration}), so the model cannot test it; "
                       f"{agg / roof:.1%} of {plain_txt}." + note + assumed, nums)
    if src is not None:
        e2e_vs_decode = (claim.get("metric_phase") == "end_to_end"
                         and src.calibration_phase != "end_to_end")
        scale = e2e_ratio if e2e_vs_decode and e2e_ratio else 1.0
        ceil = float(src.tok_s) * scale  # type: ignore[arg-type]
        floor = (src.floor_tok_s if src.floor_tok_s is not None else float(src.tok_s)
                 ) * scale  # type: ignore[arg-type]
        if scale != 1.0:
            nums.update(e2e_ratio=scale, e2e_ratio_source=e2e_ratio_source,
                        source_decode_model_tok_s=src.tok_s, source_model_tok_s=ceil,
                        source_floor_tok_s=floor, claim_over_source=agg / ceil,
                        claim_over_floor=agg / floor)
        where = _band_words(src, scale, e2e_ratio_source)
        side = band_side(agg, ceil, floor, tolerance, bound)
        if side == "below" and e2e_vs_decode and scale == 1.0:
            return Verdict(NOT_COMPARABLE, f"{fig} is end to end, not comparable to a "
                           f"decode-only model: it is {agg / floor:.1%} of the no-overlap floor "
                           f"{floor:,.1f} tok/s of {where}, "
                           "but end to end also counts prefill, TTFT and the ramp, and "
                           "neither the source's same run nor a run measured here for this "
                           "workload shape gives its end-to-end / decode ratio." + note
                           + assumed, nums)
        not_needed = drafter_words(drafter, run_drafter)
        if side == "inside":
            at = f"at {agg / ceil:.1%} of {where}"
            if bound and not (floor <= agg <= ceil):  # a bound met, not a figure matched
                at = f"a bound its source's band meets ({agg / ceil:.1%} of {where})"
            if running == 1:  # one stream: no bend, the figure meets its model
                return Verdict(AT_SOURCE, f"{fig} is at its source's one-stream model, {at} "
                               f"(one stream has no bend){not_needed}." + note + assumed,
                               nums)
            return Verdict(BAND, f"{fig} is in the bend region of its source's model, {at}"
                           f"{not_needed}." + note + assumed, nums)
        if side == "above":
            if _deflated_fits(agg, ceil, inflation, tolerance):
                nums["inflation"] = inflation
                return Verdict(DEFINITION_INFLATES, _inflates_text(
                    f"{fig} is {pct(agg / ceil)} from {where}", label, inflation,
                    inflation_source, agg) + note + assumed, nums)
            extra = (f"; the {drafter} could explain it ({agg / ceil:.2f} tokens kept per "
                     "stream per step over the ceiling)" if drafter else "")
            return Verdict(ABOVE_SOURCE, f"{fig} is {pct(agg / ceil)} over {where}, beyond "
                           f"{tol_text(tolerance)}{_which_end(src, 'above')}{extra}; "
                           f"{agg / roof:.1%} of {plain_txt}." + note + assumed, nums)
        extra = not_needed
        return Verdict(SHORT, f"{fig} is {agg / floor:.1%} of its source's no-overlap floor "
                       f"{floor:,.1f} tok/s, beyond {tol_text(tolerance)} under it: short of "
                       f"{where}{_which_end(src, 'below')}{extra}." + note + assumed, nums)
    why = ("its source publishes no one-stream, no-drafter figure to calibrate on, so eta = 1 "
           "(the plain roofline)")
    extra = drafter_words(drafter, run_drafter)
    return Verdict(WITHIN, f"{fig} is {agg / roof:.1%} of {plain_txt} ({ceiling.bound} "
                   f"bound); {why}{extra}." + note + assumed, nums)


def drafter_words(drafter: str, run_drafter: str = "") -> str:
    """What a figure at or under its model says about a stated drafter: not needed to
    explain it, unless a sibling figure of the same run needs one (``run_drafter``), when
    the run is judged as a whole and the figure shows nothing either way."""
    drafter = drafter.removesuffix(" stated")  # "the drafter X stated is" reads wrong
    if run_drafter:
        what = f"the {drafter}" if drafter else "a drafter, though none is stated,"
        return (f"; {what} is not shown unneeded: the same run's {run_drafter}, so this "
                "figure alone does not speak for the run")
    return f"; the {drafter} is not needed to explain it" if drafter else ""


def _deflated_fits(agg: float, reference: float, inflation: float | None,
                   tolerance: float) -> bool:
    """Whether a figure (tok/s) above ``reference`` fits it once its definition's measured
    ratio to end to end (``inflation``) is taken out."""
    return (inflation is not None and inflation > 1
            and compare(agg / inflation, reference, tolerance) != "above")


def _inflates_text(against: str, label: str, inflation: float, source: str,
                   agg: float) -> str:
    """The *definition inflates* reason: what end to end would read (tok/s)."""
    return (f"{against}, but its definition ({label}) reads {pct(inflation)} above end to end "
            f"on our timelines ({source}); end to end would read {agg / inflation:,.1f} tok/s "
            "for that workload shape, which fits.")
