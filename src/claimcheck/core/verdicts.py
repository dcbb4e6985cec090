"""A verdict for every registry claim: one kind, its numbers and its reason (pure).

Inputs are plain numbers worked out elsewhere: the plain roofline at the claim's own card,
weights, streams sharing the aggregate (``streams_running`` when the registry gives it) and
context (:func:`claimcheck.report.tables.claim_roofline`); the measured ratio of each metric
definition to end to end at the nearest measured concurrency (from the token timelines,
:mod:`claimcheck.core.definitions`); and, for a claim whose protocol we replayed, the
measured figure scaled to the claim's card. Rules, in order:

1. *not comparable*: the figure is not a decode rate the roofline bounds (prefill, SSE
   chunks counted as tokens) or there is no roofline for it (unknown card or weight bytes).
2. *reproduced here* / *not reproduced here*: the same protocol ran here; the claim lies
   within ``tolerance`` of the scaled measured value (or, for a figure whose definition is
   not stated, within the range of every definition's scaled value).
   A speculative claim that was not reproduced is *not testable here* instead: our dummy
   weights accept no real drafter's tokens.
3. *consistent*: aggregate <= roofline x (1 + tolerance).
4. *definition inflates*: above the roofline, but the claim's definition reads N% above end
   to end on our timelines for that workload shape and the claim / (1 + N%) fits.
5. *not testable here*: above the roofline with a drafter stated: it needs tau tokens kept
   per stream per step, which only a real drafter's acceptance can give.
6. *needs speculation*: above the roofline with no drafter stated; tau as in 5.

Assumed registry fields (the project's, not the seed's) make the evidence weaker; the reason
says which ones. Speeds in tok/s (aggregate = summed over the streams sharing it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CONSISTENT = "consistent"
NEEDS_SPECULATION = "needs speculation"
DEFINITION_INFLATES = "definition inflates"
NOT_COMPARABLE = "not comparable"
REPRODUCED = "reproduced here"
NOT_REPRODUCED = "not reproduced here"
NOT_TESTABLE = "not testable here"
KINDS = (CONSISTENT, NEEDS_SPECULATION, DEFINITION_INFLATES, NOT_COMPARABLE, REPRODUCED,
         NOT_REPRODUCED, NOT_TESTABLE)

TOLERANCE = 0.05
"""Default tolerance: the step model's stated accuracy (issue 11: within 5%)."""

NOT_A_DECODE_RATE = {"prefill", "sse_chunks_per_s"}
"""Registry metrics the decode roofline does not bound."""

NO_DRAFTER = {"", "none", None}


@dataclass(frozen=True)
class Ceiling:
    """The plain roofline (tau = 1) at a claim's own configuration."""

    roofline_tok_s: float | None
    """Aggregate tok/s at the streams sharing the claim; None when there is none."""
    tau_needed: float | None = None
    """Tokens kept per stream per step the claim's aggregate needs (core.roofline tau)."""
    bound: str = ""
    note: str = ""
    """Why there is no roofline (when ``roofline_tok_s`` is None)."""


@dataclass(frozen=True)
class Reproduction:
    """What our replay of the claim's protocol gives, scaled to the claim's card.

    ``low``/``high`` bracket the scaled value under the claim's own definition (equal) or,
    for a figure whose definition is not stated, under every definition measured."""

    low_tok_s: float
    high_tok_s: float
    source: str


@dataclass(frozen=True)
class Verdict:
    kind: str
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)


def _assumed_note(assumed: str) -> str:
    return (f" Weaker evidence: {assumed.replace(',', ', ')} assumed by the registry, not "
            "stated by the seed." if assumed else "")


def verdict(claim: Mapping[str, Any], ceiling: Ceiling, inflation: float | None = None,
            inflation_source: str = "", reproduction: Reproduction | None = None,
            tolerance: float = TOLERANCE) -> Verdict:
    """The verdict for one claim.

    ``claim`` holds the tidy registry row (``metric``, ``metric_phase``, ``value``,
    ``aggregate_tok_s``, ``per_stream_tok_s``, ``streams``, ``streams_running``,
    ``spec_method``, ``assumed_fields``); ``inflation`` is the measured ratio of the claim's
    definition to end to end for its workload shape (None when not measured).
    """
    agg = float(claim["aggregate_tok_s"])
    running = claim.get("streams_running") or claim["streams"]
    assumed = _assumed_note(claim.get("assumed_fields") or "")
    spec = claim.get("spec_method")
    drafter = spec not in NO_DRAFTER
    spec_txt = (f"drafter {spec} (assumed by the registry)" if "spec_method" in
                (claim.get("assumed_fields") or "").split(",") else f"drafter {spec} stated")
    nums: dict[str, Any] = {"aggregate_tok_s": agg, "streams_sharing": running,
                            "per_stream_tok_s": agg / running, "tolerance": tolerance,
                            "roofline_tok_s": ceiling.roofline_tok_s,
                            "claim_over_roofline": (agg / ceiling.roofline_tok_s
                                                    if ceiling.roofline_tok_s else None),
                            "tau_needed": ceiling.tau_needed}
    streams_txt = (f"{running:g} streams running (streams_running; {claim['streams']} "
                   "requested)" if claim.get("streams_running") else f"{running:g} streams")
    if claim["metric"] in NOT_A_DECODE_RATE:
        return Verdict(NOT_COMPARABLE, f"metric {claim['metric']} is not a decode rate; the "
                       "decode roofline does not bound it." + assumed, nums)
    if ceiling.roofline_tok_s is None:
        return Verdict(NOT_COMPARABLE, f"no roofline: {ceiling.note}." + assumed, nums)
    if reproduction is not None:
        lo, hi = reproduction.low_tok_s, reproduction.high_tok_s
        nums.update(reproduced_low_tok_s=lo, reproduced_high_tok_s=hi)
        inside = lo * (1 - tolerance) <= agg <= hi * (1 + tolerance)
        span = f"{lo:,.1f}" if lo == hi else f"{lo:,.1f} to {hi:,.1f}"
        if inside:
            return Verdict(REPRODUCED, f"{agg:,.1f} tok/s aggregate at {streams_txt} lies "
                           f"within {tolerance:.0%} of {span} tok/s from {reproduction.source}."
                           + assumed, nums)
        if drafter:
            return Verdict(NOT_TESTABLE, f"{agg:,.1f} tok/s with {spec_txt}: our replay "
                           f"gives {span} tok/s ({reproduction.source}) without it; a real "
                           "drafter's acceptance cannot be measured on dummy weights."
                           + assumed, nums)
        return Verdict(NOT_REPRODUCED, f"{agg:,.1f} tok/s aggregate at {streams_txt} is "
                       f"{agg / (hi if agg > hi else lo) - 1:+.0%} from {span} tok/s "
                       f"({reproduction.source}), beyond {tolerance:.0%}." + assumed, nums)
    roof = ceiling.roofline_tok_s
    if agg <= roof * (1 + tolerance):
        return Verdict(CONSISTENT, f"{agg:,.1f} tok/s aggregate at {streams_txt} is "
                       f"{agg / roof:.0%} of the plain roofline {roof:,.1f} tok/s "
                       f"({ceiling.bound} bound; tolerance {tolerance:.0%})." + assumed, nums)
    if inflation is not None and inflation > 1 and agg / inflation <= roof * (1 + tolerance):
        nums["inflation"] = inflation
        return Verdict(DEFINITION_INFLATES, f"{agg:,.1f} tok/s is {agg / roof:.2f}x the plain "
                       f"roofline {roof:,.1f} tok/s, but its definition ({claim['metric']}) "
                       f"reads {inflation - 1:+.0%} above end to end on our timelines "
                       f"({inflation_source}); deflated, {agg / inflation:,.1f} tok/s fits."
                       + assumed, nums)
    tau = ceiling.tau_needed
    tau_txt = f"{tau:.2f} tokens kept per stream per step" if tau else "more than one token " \
        "per stream per step"
    if drafter:
        return Verdict(NOT_TESTABLE, f"{agg:,.1f} tok/s is {agg / roof:.2f}x the plain "
                       f"roofline {roof:,.1f} tok/s at {streams_txt}: it needs {tau_txt}; "
                       f"{spec_txt}, but its acceptance cannot be measured on "
                       "dummy weights." + assumed, nums)
    return Verdict(NEEDS_SPECULATION, f"{agg:,.1f} tok/s is {agg / roof:.2f}x the plain "
                   f"roofline {roof:,.1f} tok/s at {streams_txt}: it needs {tau_txt}, and no "
                   "drafter is stated." + assumed, nums)
