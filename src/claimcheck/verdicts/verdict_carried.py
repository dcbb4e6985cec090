"""A verdict read against this card's carried model first (issue 42 item 4), pure.

The carried model (:mod:`claimcheck.model.carry`, :mod:`claimcheck.predict.carry`) predicts a
figure's own configuration (card, power limit, weight format, streams, context, definition)
on its own card from the local card's runs alone, every term moved by the claim's card's
datasheet. It gives :class:`Carried`: a prediction in tok/s summed over the streams sharing
the figure (the scale of ``aggregate_tok_s``), the terms carried or assumed in words, or the
reason there is none. The source-calibrated verdict
(:func:`claimcheck.verdicts.verdict_words.verdict`) is computed first and stays beside it as
the cross-check (``source_verdict``).

The rule (:func:`carried_verdict`), in order:

1. **Evidence that outranks a model stands.** *not comparable* (not a decode rate, no
   roofline, an end-to-end figure with no ratio), a measurement of the claim's workload on
   its own card (*reproduced by a seed's run*, *not reproduced by a seed's run*,
   *reproduced here*, *not reproduced here*), and the plain roofline's physics (*needs a
   drafter*, *definition inflates*: above eta = 1, tau = 1, which no model of that card
   can read higher) keep their kind; the carried model is added as a sentence.
2. **No carried prediction**: the source-calibrated kind stands, and the reason says why
   the carried model cannot speak (a drafter's figure needs X tokens kept per stream per
   step at r rows on it; a card with no datasheet row; a weight format with no local run
   nor activation path; a figure that is not a rate).
3. **Otherwise the carried model decides** the kinds that were read against a model
   (*in the bend region*, *at its source's one-stream model*, *sets its source's model*
   (the carried model does not use the figure, so it can test it), *short of* / *above
   its source's model*, *within the physics*): with r = claim / carried and the tolerance
   t = max(the claim's tolerance, :data:`CARRIED_TOLERANCE`),

   * |r - 1| <= t (as printed, :func:`claimcheck.verdicts.sourcemodel.within`), or an
     "at least" figure under the model: :data:`MATCHES` *matches this card's carried
     model*;
   * r > 1 + t: :data:`ABOVE` *above this card's carried model*;
   * r < 1 - t: :data:`SHORT` *short of this card's carried model* ("at most" figures
     under it are short too: the source reports reaching them).

   The source model's kind and numbers follow as the cross-check.

:data:`CARRIED_TOLERANCE` is 10%: what the carried model is held to on the article's own
RTX 3090 ladder (issue 42's done-when: each figure within 10%), where its largest miss is
about a tenth (data/derived/carried_3090.csv): a tighter band would judge the model's known
error, not the claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from claimcheck.verdicts import verdicts as v
from claimcheck.verdicts.sourcemodel import pct, within
from claimcheck.verdicts.verdict_words import tol_text

MATCHES, ABOVE, SHORT = v.MATCHES_CARRIED, v.ABOVE_CARRIED, v.SHORT_CARRIED
KINDS = (MATCHES, ABOVE, SHORT)

CARRIED_TOLERANCE = 0.10
"""The carried model's own tolerance (see the module docstring)."""

STANDS = (v.NOT_COMPARABLE, v.SEED_REPRODUCED, v.SEED_NOT_REPRODUCED, v.REPRODUCED,
          v.NOT_REPRODUCED, v.NEEDS_SPECULATION, v.DEFINITION_INFLATES)
"""Kinds the carried model never overrules (rule 1)."""


@dataclass(frozen=True)
class Carried:
    """The carried model at a figure's own configuration on its own card."""

    tok_s: float | None
    """Summed over the streams sharing the figure, tok/s; None: ``reason`` says why."""
    assumptions: str = ""
    """Which terms are carried or assumed, in short words."""
    reason: str = ""
    """Why there is no plain prediction (``tok_s`` None)."""
    tau_needed: float | None = None
    """For a drafter's figure: tokens kept per stream per step it needs on the carried
    model at ``verify_rows`` rows per stream."""
    verify_rows: float | None = None
    source_runs: str = ""
    """The local runs behind the speed terms."""


def numbers(agg: float, carried: Carried | None) -> dict[str, Any]:
    """The carried columns of a verdict row."""
    c = carried or Carried(None, reason="no carried prediction was made")
    return {"carried_model_tok_s": c.tok_s,
            "claim_over_carried_model": agg / c.tok_s if c.tok_s else None,
            "carried_assumptions": c.assumptions,
            "carried_reason": "" if c.tok_s else c.reason,
            "carried_tau_needed": c.tau_needed, "carried_verify_rows": c.verify_rows,
            "carried_source_runs": c.source_runs}


def _sentence(agg: float, c: Carried, tol: float) -> str:
    r = agg / c.tok_s  # type: ignore[operator]
    side = ("within" if within(r, tol) else "beyond")
    return (f"this card's carried model gives {c.tok_s:,.1f} tok/s for it "
            f"({c.assumptions}), {pct(r)} from it, {side} {tol_text(tol)}")


def carried_verdict(res: v.Verdict, claim: Mapping[str, Any], carried: Carried | None,
                    tolerance: float) -> v.Verdict:
    """The verdict read against the carried model first (the module's rule); ``res`` is
    the source-calibrated verdict, kept as ``source_verdict`` and as the cross-check;
    ``claim`` holds ``aggregate_tok_s`` and optional ``bound``; ``tolerance`` the claim's
    own (at least the spread its source shows)."""
    agg = float(claim["aggregate_tok_s"])
    nums = {**res.numbers, **numbers(agg, carried), "source_verdict": res.kind,
            "carried_tolerance": max(tolerance, CARRIED_TOLERANCE)}
    tol = nums["carried_tolerance"]
    if carried is None or carried.tok_s is None:
        why = carried.reason if carried is not None else "no carried prediction was made"
        return v.Verdict(res.kind, f"{res.reason} No carried model: {why}.", nums)
    said = _sentence(agg, carried, tol)
    if res.kind in STANDS:
        return v.Verdict(res.kind, f"{res.reason} Beside it, {said}.", nums)
    r = agg / carried.tok_s
    bound = claim.get("bound") or ""
    if within(r, tol) or (bound == "at_least" and r < 1):
        kind = MATCHES
    elif r > 1:
        kind = ABOVE
    else:
        kind = SHORT
    head = {MATCHES: "It matches", ABOVE: "It is above", SHORT: "It is short of"}[kind]
    return v.Verdict(kind, f"{head} this card's carried model: {said}. Cross-check, its "
                     f"source's model reads *{res.kind}*: {res.reason}", nums)
