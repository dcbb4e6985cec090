"""A verdict's sentence, written from its decided record (pure): one writer per rule of
:mod:`claimcheck.verdicts.verdict_rules`, each reading only the
:class:`claimcheck.verdicts.verdict_rules.Decision` (the kind is decided there, never here).

Every sentence names the figure as its source states it (bound words, streams running and
requested), the rate it was read against and by how much; it ends with where a derived
aggregate came from and the registry fields assumed, not stated (weaker evidence). A
tolerance is printed as it is (:func:`tol_text`). Speeds in tok/s (aggregate = summed over
the streams sharing it).
"""

from __future__ import annotations

from collections.abc import Callable

from claimcheck.claims.metrics import METRICS
from claimcheck.verdicts import verdicts as v
from claimcheck.verdicts.sourcemodel import SourceModel, binding_text, pct
from claimcheck.verdicts.verdict_rules import Decision, Evidence, Rule, decide


def verdict(e: Evidence) -> v.Verdict:
    """The verdict on one claim's evidence: its kind decided, then its sentence written."""
    d = decide(e)
    return v.Verdict(d.kind, reason(d), dict(d.numbers))


def reason(d: Decision) -> str:
    """The sentence of a decided verdict."""
    return WRITERS[d.rule](d)


def tol_text(tolerance: float) -> str:
    """A tolerance as printed: "5%", or one decimal when it is not whole ("9.7%")."""
    return f"{tolerance:.0%}" if abs(tolerance * 100 - round(tolerance * 100)) < 0.05 \
        else f"{tolerance:.1%}"


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


# -- the claim as its words name it ------------------------------------------------------

def _figure(e: Evidence) -> str:
    """The figure as stated: "up to 1,035.0 tok/s summed over 8 streams"."""
    claim, agg, running = e.claim, e.agg, e.running
    bound = claim.get("bound") or ""
    streams_txt = (f"{running:g} streams running ({claim['streams']} requested)"
                   if claim.get("streams_running") else f"{running:g} streams")
    before, after = claim.get("bound_before") or "", claim.get("bound_after") or ""
    if bound and not (before or after):
        before = {"at_least": "at least ", "at_most": "at most "}.get(bound, "").strip()
    value_txt = " ".join(filter(None, (before, f"{agg:,.1f} tok/s", after)))
    return (f"{value_txt} at 1 stream" if running == 1 else
            f"{value_txt} summed over {streams_txt}")


def _label(e: Evidence) -> str:
    metric = e.claim["metric"]
    return METRICS[metric].label if metric in METRICS else metric


def _assumed(e: Evidence) -> str:
    assumed = e.claim.get("assumed_fields") or ""
    return (f" Weaker evidence: {assumed.replace(',', ', ')} assumed by the registry, not "
            "stated by the seed." if assumed else "")


def _tail(e: Evidence) -> str:
    """What ends most sentences: where a derived aggregate came from, then what is assumed."""
    note = f" {e.claim['aggregate_note']}" if e.claim.get("aggregate_note") else ""
    return note + _assumed(e)


def _drafter(e: Evidence) -> str:
    spec = e.claim.get("spec_method")
    if spec in v.NO_DRAFTER:
        return ""
    if "spec_method" in (e.claim.get("assumed_fields") or "").split(","):
        return f"drafter {spec} (assumed by the registry)"
    return f"drafter {spec} stated"


def _need(e: Evidence) -> str:
    """The tokens kept per stream per step a figure over the plain roofline needs."""
    if e.drafting is not None:
        return e.drafting.need_text()
    return f"{e.agg / e.roof:.2f} tokens kept per stream per step" if e.roof else ""


def _reach(e: Evidence) -> str:
    """What the stated drafter reaches at those rows ("" without a drafting record)."""
    return e.drafting.reach_text() if e.drafting is not None else ""


def _plain(e: Evidence) -> str:
    return f"the plain roofline {e.roof:,.1f} tok/s"


# -- one writer per rule -----------------------------------------------------------------

def _not_decode(d: Decision) -> str:
    return (f"the metric ({_label(d.evidence)}) is not a decode rate; the decode roofline "
            "does not bound it." + _assumed(d.evidence))


def _no_roofline(d: Decision) -> str:
    return f"no roofline: {d.evidence.ceiling.note}." + _assumed(d.evidence)


def _seed(d: Decision) -> str:
    """Rule 2's sentence: the seed's runs, where the figure lies and what differs."""
    e, rep, tol = d.evidence, d.evidence.seed_reproduction, d.tolerance
    assert rep is not None and tol is not None
    agg, fig = e.agg, _figure(e)
    extra = ""
    if d.over_roofline:
        extra = (f" It is {agg / e.roof:.2f}x its card's plain roofline {e.roof:,.1f} tok/s, "
                 f"so a drafter is needed ({_need(e)}{_reach(e)}): "
                 f"{_drafter(e) or 'no drafter is stated'}.")
    extra += _tail(e)
    differs = ("; what differs: " + "; ".join(rep.differs)) if rep.differs else \
        "; nothing recorded differs"
    tol_txt = (f"{tol:.1%}, the spread between those runs" if rep.spread > e.tolerance
               else tol_text(tol))
    where = _seed_text(rep)
    if d.kind == v.SEED_NOT_REPRODUCED:
        return (f"{fig} is not reproduced by {where}: it lies {pct(agg / rep.high_tok_s)} "
                f"over the highest, beyond {tol_txt}{differs}.{extra}")
    how = {"below": f"every one of those runs clears it ({pct(agg / rep.low_tok_s)} under "
                    "the lowest)",
           "inside": "it lies inside that range"}.get(
        d.side, f"it lies {pct(agg / rep.high_tok_s)} over the highest, within {tol_txt}")
    return f"{fig} is reproduced by {where}; {how}{differs}.{extra}"


def _seed_text(rep: v.SeedReproduction) -> str:
    """"seed 000's runs a, b (5 runs): 1,076.0 to 1,179.0 tok/s"."""
    span = (f"{rep.low_tok_s:,.1f}" if rep.low_tok_s == rep.high_tok_s
            else f"{rep.low_tok_s:,.1f} to {rep.high_tok_s:,.1f}")
    runs = (f"run {rep.runs[0]}" if len(rep.runs) == 1
            else f"{len(rep.runs)} runs ({', '.join(rep.runs)})")
    return f"seed {rep.seed}'s {runs}: {span} tok/s"


def _replay(d: Decision) -> str:
    """Rule 3's sentence: the figure against the range measured here."""
    e, rep, near = d.evidence, d.evidence.reproduction, d.reference
    assert rep is not None and near is not None
    lo, hi, tol = rep.low_tok_s, rep.high_tok_s, tol_text(e.tolerance)
    span = f"{lo:,.1f}" if lo == hi else f"{lo:,.1f} to {hi:,.1f}"
    if d.kind == v.REPRODUCED:
        return (f"{_figure(e)} lies within {tol} of {span} tok/s measured here "
                f"({rep.source})." + _tail(e))
    return (f"{_figure(e)} is {pct(e.agg / near)} from {span} tok/s measured here "
            f"({rep.source}), beyond {tol}." + _tail(e))


def _inflates_plain(d: Decision) -> str:
    e = d.evidence
    return _inflates_text(f"{_figure(e)} is {e.agg / e.roof:.2f}x {_plain(e)}", e) + _tail(e)


def _needs_drafter(d: Decision) -> str:
    e = d.evidence
    return (f"{_figure(e)} is {e.agg / e.roof:.2f}x {_plain(e)} ({e.ceiling.bound} bound): "
            f"it needs {_need(e)}, which only a drafter gives{_reach(e)}; "
            f"{_drafter(e) or 'no drafter is stated'}." + _tail(e))


def _calibrates(d: Decision) -> str:
    e, src = d.evidence, d.evidence.model
    assert src is not None
    return (f"{_figure(e)} sets its source's model: it is the only one-stream, no-drafter "
            f"figure its source publishes ({src.calibration}), so the model cannot test it; "
            f"{e.agg / e.roof:.1%} of {_plain(e)}." + _tail(e))


def _e2e_unscaled(d: Decision) -> str:
    e, floor = d.evidence, d.floor
    assert floor is not None
    return (f"{_figure(e)} is end to end, not comparable to a decode-only model: it is "
            f"{e.agg / floor:.1%} of the no-overlap floor {floor:,.1f} tok/s of {_where(d)}, "
            "but end to end also counts prefill, TTFT and the ramp, and neither the "
            "source's same run nor a run measured here for this workload shape gives its "
            "end-to-end / decode ratio." + _tail(e))


def _inside(d: Decision) -> str:
    """Rule 5 inside the band: at one stream, at its model; else in the bend region."""
    e, ceil = d.evidence, d.reference
    assert ceil is not None
    at = f"at {e.agg / ceil:.1%} of {_where(d)}"
    if d.bound_met:  # a bound met, not a figure matched
        at = f"a bound its source's band meets ({e.agg / ceil:.1%} of {_where(d)})"
    not_needed = drafter_words(_drafter(e), e.run_drafter)
    if d.rule is Rule.AT_SOURCE:  # one stream: no bend, the figure meets its model
        return (f"{_figure(e)} is at its source's one-stream model, {at} (one stream has "
                f"no bend){not_needed}." + _tail(e))
    return (f"{_figure(e)} is in the bend region of its source's model, {at}{not_needed}."
            + _tail(e))


def _inflates_source(d: Decision) -> str:
    e, ceil = d.evidence, d.reference
    assert ceil is not None
    return _inflates_text(f"{_figure(e)} is {pct(e.agg / ceil)} from {_where(d)}", e) \
        + _tail(e)


def _above_source(d: Decision) -> str:
    e, ceil = d.evidence, d.reference
    assert ceil is not None and e.model is not None
    drafter = _drafter(e)
    extra = (f"; the {drafter} could explain it ({e.agg / ceil:.2f} tokens kept per "
             "stream per step over the ceiling)" if drafter else "")
    return (f"{_figure(e)} is {pct(e.agg / ceil)} over {_where(d)}, beyond "
            f"{tol_text(e.tolerance)}{_which_end(e.model, 'above')}{extra}; "
            f"{e.agg / e.roof:.1%} of {_plain(e)}." + _tail(e))


def _short(d: Decision) -> str:
    e, floor = d.evidence, d.floor
    assert floor is not None and e.model is not None
    return (f"{_figure(e)} is {e.agg / floor:.1%} of its source's no-overlap floor "
            f"{floor:,.1f} tok/s, beyond {tol_text(e.tolerance)} under it: short of "
            f"{_where(d)}{_which_end(e.model, 'below')}"
            f"{drafter_words(_drafter(e), e.run_drafter)}." + _tail(e))


def _within(d: Decision) -> str:
    e = d.evidence
    why = ("its source publishes no one-stream, no-drafter figure to calibrate on, so eta = 1 "
           "(the plain roofline)")
    return (f"{_figure(e)} is {e.agg / e.roof:.1%} of {_plain(e)} ({e.ceiling.bound} "
            f"bound); {why}{drafter_words(_drafter(e), e.run_drafter)}." + _tail(e))


WRITERS: dict[Rule, Callable[[Decision], str]] = {
    Rule.NOT_DECODE: _not_decode, Rule.SEED: _seed, Rule.NO_ROOFLINE: _no_roofline,
    Rule.REPLAY: _replay, Rule.INFLATES_PLAIN: _inflates_plain,
    Rule.NEEDS_DRAFTER: _needs_drafter, Rule.CALIBRATES: _calibrates,
    Rule.E2E_UNSCALED: _e2e_unscaled, Rule.AT_SOURCE: _inside, Rule.BAND: _inside,
    Rule.INFLATES_SOURCE: _inflates_source, Rule.ABOVE_SOURCE: _above_source,
    Rule.SHORT: _short, Rule.WITHIN: _within}
"""Each rule's writer (every rule has one: a test checks)."""


# -- the source's band in words ----------------------------------------------------------

def _where(d: Decision) -> str:
    """The source's band in words: ceiling, floor, the binding term and the compute; a
    decode-only band carried over to an end-to-end figure says by what ratio, from where."""
    src, scale = d.evidence.model, d.scale
    assert src is not None
    ceil = float(src.tok_s) * scale  # type: ignore[arg-type]
    floor = src.floor_tok_s * scale if src.floor_tok_s is not None else None
    what = "end-to-end ceiling" if scale != 1.0 else "ceiling"
    text = f"its source's {what} {ceil:,.1f} tok/s (memory and compute overlapped"
    if floor is not None:
        text += f"; no-overlap floor {floor:,.1f} tok/s"
    if scale != 1.0:
        text += (f"; the decode model's {float(src.tok_s):,.1f} and "  # type: ignore[arg-type]
                 f"{src.floor_tok_s or float(src.tok_s):,.1f} tok/s times end to end / "
                 f"decode {scale:.3f}, {d.evidence.e2e_ratio_source}")
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


def _inflates_text(against: str, e: Evidence) -> str:
    """The *definition inflates* reason: what end to end would read (tok/s)."""
    inflation = e.inflation
    assert inflation is not None
    return (f"{against}, but its definition ({_label(e)}) reads {pct(inflation)} above end "
            f"to end on our timelines ({e.inflation_source}); end to end would read "
            f"{e.agg / inflation:,.1f} tok/s for that workload shape, which fits.")
