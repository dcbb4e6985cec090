"""The Update's words for the model on runs it has not seen (issue 43 item 1), from
data/derived/crossval.csv (:mod:`claimcheck.predict.crossval`): the body's named values
(``cv.*``) and the appendix's section, per engine and per run. Pure: rows in, values and
Markdown out; every count is :func:`claimcheck.predict.crossval.summary`'s."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from claimcheck.predict import crossval as cv
from claimcheck.update.template import Value, flag, num, word
from claimcheck.verdicts.accuracy import within_both
from claimcheck.verdicts.verdicts import TOLERANCE

SRC = "crossval.csv"
NAMES = ("cv.within", "cv.steps", "cv.worst_engine", "cv.worst_within",
         "cv.worst_steps", "cv.worst_protocol", "cv.worst_misses", "cv.worst_lo",
         "cv.worst_hi", "cv.worst_measure", "cv.tolerance", "cv.unpredicted", "cv.cards",
         "cv.carried", "cv.carried_cards", "cv.carried_from", "cv.one_value", "cv.as_sent")
MEASURES = (("e2e_error", "end to end"), ("decode_error", "decode aggregate"))
MEASURED = {"e2e_error": "measured_e2e_tok_s", "decode_error": "measured_decode_tok_s"}
SPREAD_NAMES = ("cv.worst_spread", "cv.worst_wide", "cv.worst_groups", "cv.worst_band",
                "cv.worst_runs")
REPLICATE_NAMES = ("cv.worst_replicated", "cv.worst_replicate_within",
                   "cv.worst_replicate_model")
CLOCK_NAMES = ("cv.worst_other", "cv.worst_clock_misses", "cv.worst_clock_protocols",
               "cv.worst_clock_own", "cv.worst_clock_rep", "cv.worst_clock_who",
               "cv.worst_clock_lo", "cv.worst_clock_hi")


def band(tolerance: float) -> float:
    """(1 + t) / (1 - t) - 1: the widest spread of measurements any one prediction within
    ``t`` of every one of them can cover (10.5% at t = 5%)."""
    return (1 + tolerance) / (1 - tolerance) - 1


def spread(rows: Sequence[Mapping[str, Any]], engine: str, protocol: str, key: str,
           tolerance: float) -> dict[str, Any] | None:
    """How far apart the measurements of the same steps lie: ``engine``'s (a name of
    :func:`crossval.group_key`) complete steps of
    ``protocol`` grouped by step (index and streams) over its runs and repeats, each group
    of two or more measured values of ``key``'s measure spread max / min - 1. With
    ``band`` = (1 + t) / (1 - t) - 1, the widest spread any one prediction within ``t``
    of every value can cover, ``wide`` counts the groups spread wider. None without such a
    group."""
    col = MEASURED[key]
    groups: dict[tuple[str, str], list[float]] = {}
    runs: set[str] = set()
    group = cv.group_key(list(rows))
    for r in rows:
        if (group(r) == engine and str(r["protocol"]) == protocol
                and r.get(col) not in (None, "")):
            groups.setdefault((str(r.get("step")), str(r.get("streams"))), []).append(
                float(r[col]))
            runs.add(str(r["run"]))
    spreads = [max(v) / min(v) - 1 for v in groups.values() if len(v) >= 2 and min(v) > 0]
    if not spreads:
        return None
    b = band(tolerance)
    return {"spread": max(spreads), "wide": sum(x > b for x in spreads),
            "groups": len(spreads), "band": b, "runs": len(runs)}


def _clock(r: Mapping[str, Any]) -> float | None:
    """A row's ``sm_clock_mhz``: None where none was read; a ValueError naming the file, run
    and step where it is not a clock (a finite number of MHz above 0)."""
    v = r.get("sm_clock_mhz")
    if v in (None, ""):
        return None
    try:
        c = float(v)
    except (TypeError, ValueError):
        c = float("nan")
    if not (math.isfinite(c) and c > 0):
        raise ValueError(f"{SRC}: run {r.get('run')} step {r.get('step')} repeat "
                         f"{r.get('repeat')}: sm_clock_mhz {v!r} is not a clock in MHz "
                         "(a finite number above 0)")
    return c


def slower_clock(rows: Sequence[Mapping[str, Any]], misses: Sequence[Mapping[str, Any]]
                 ) -> dict[str, Any] | None:
    """Of ``misses``, the steps whose own SM clock at work (``sm_clock_mhz``) lies below
    every other run's of the same step (:func:`crossval.replicate_key`, complete rows of
    ``rows`` with a clock): ``steps`` (count), ``protocols`` (their names, sorted),
    ``own`` (the median of their clocks), ``others`` (the median of those other runs'
    clocks of the same steps), and ``lo`` / ``hi``: the least and most by which a step's
    clock lies under the median of the other runs' of that step (1 - own / theirs). None
    where no miss has such a step."""
    clocks: dict[tuple[str, ...], list[tuple[str, float]]] = {}
    for r in cv.complete(list(rows)):
        c = _clock(r)
        if c is not None:
            clocks.setdefault(cv.replicate_key(r), []).append((str(r["run"]), c))
    protocols, own, others, under = set(), [], [], []
    for r in misses:
        theirs = [c for run, c in clocks.get(cv.replicate_key(r), []) if run != str(r["run"])]
        c = _clock(r)
        if c is not None and theirs and c < min(theirs):
            protocols.add(str(r["protocol"]))
            own.append(c)
            others.extend(theirs)
            under.append(1 - c / statistics.median(theirs))
    if not own:
        return None
    return {"steps": len(own), "protocols": sorted(protocols), "own": statistics.median(own),
            "others": statistics.median(others), "lo": min(under), "hi": max(under)}


def clock_values(rows: Sequence[Mapping[str, Any]], others: Sequence[Mapping[str, Any]]
                 ) -> list[Value]:
    """``cv.worst_has_clock`` and, over the worst engine's misses outside its most-missed
    protocol (``others``), how many there are and :func:`slower_clock`'s numbers as named
    values ("none" where no such miss ran slower than every other run of its step)."""
    sc = slower_clock(rows, others)
    if sc is None:
        return [flag("cv.worst_has_clock", False, SRC)] + [
            word(n, "none", SRC) for n in CLOCK_NAMES]
    protos = ", ".join(f"`{p}`" for p in sc["protocols"])
    n, of = sc["steps"], len(others)
    who = (f"Its other miss ({protos})" if of == 1 else
           f"All {of:,} of its other misses ({protos})" if n == of else
           f"Of its other {of:,} misses, {n:,} ({protos})")
    return [flag("cv.worst_has_clock", True, SRC),
            word("cv.worst_clock_who", who, SRC),
            num("cv.worst_other", of, "steps", SRC, "{:,}"),
            num("cv.worst_clock_misses", sc["steps"], "steps", SRC, "{:,}"),
            word("cv.worst_clock_protocols", protos, SRC),
            num("cv.worst_clock_own", sc["own"], "MHz", SRC, "{:,.0f} MHz"),
            num("cv.worst_clock_rep", sc["others"], "MHz", SRC, "{:,.0f} MHz"),
            num("cv.worst_clock_lo", sc["lo"], "fraction", SRC, "{:.1%}"),
            num("cv.worst_clock_hi", sc["hi"], "fraction", SRC, "{:.1%}")]


def _both(s: Mapping[str, Any]) -> int:
    return int(s["cross_validated"]["both_within"])


def _engine_words(group: str) -> str:
    """A :func:`crossval.group_key` name in words: "`ENGINE`", or "`ENGINE` on the CARD"."""
    engine, _, card = group.partition(" on ")
    return f"`{engine}` on the {card}" if card else f"`{engine}`"


def _missed(r: Mapping[str, Any], tolerance: float) -> bool:
    return not within_both(r["e2e_error"], r["decode_error"], tolerance)


def cv_values(rows: Sequence[Mapping[str, Any]] | None, tolerance: float = TOLERANCE
              ) -> list[Value]:
    """``cv.has`` and, where the table has rows: the pooled held-out count, the engine with
    the smallest share within ``tolerance`` and, in it, the protocol with the most misses,
    with the range of its errors on the measure they miss on most often."""
    rows = cv.complete(list(rows or []))
    if not rows:
        return [flag("cv.has", False, SRC), flag("cv.worst_has_misses", False, SRC),
                flag("cv.has_unpredicted", False, SRC), flag("cv.has_carried", False, SRC),
                flag("cv.has_one_value", False, SRC), flag("cv.has_as_sent", False, SRC),
                *spread_values(None), *replicate_values(None),
                *clock_values([], [])] + [
                    word(n, "none", SRC) for n in NAMES]
    s = cv.summary(rows, tolerance)
    per = cv.by_engine(rows, tolerance)
    worst = min(per, key=lambda e: (_both(per[e]) / per[e]["steps"], e))
    group = cv.group_key(rows)
    # a step with no prediction (cv_note) is a miss with no error: counted, never a range
    missed = [r for r in rows if group(r) == worst and _missed(r, tolerance)
              and not r["cv_note"]]
    by_proto: dict[str, list[Mapping[str, Any]]] = {}
    for r in missed:
        by_proto.setdefault(str(r["protocol"]), []).append(r)
    proto = (max(sorted(by_proto), key=lambda p: len(by_proto[p])) if by_proto else None)
    misses = by_proto.get(proto or "", [])
    # the measure the protocol's steps miss on most often (end to end on a tie), and its
    # errors over those steps: the range the sentence gives
    key, measure = max(MEASURES, key=lambda m: sum(
        r[m[0]] is not None and abs(float(r[m[0]])) > tolerance for r in misses))
    errs = [float(r[key]) for r in misses if r[key] is not None]
    sp = spread(rows, worst, proto, key, tolerance) if proto and errs else None
    others = [r for r in missed if str(r["protocol"]) != proto]
    return [*spread_values(sp), *replicate_values(per[worst]), *clock_values(rows, others),
            flag("cv.has", True, SRC),
            flag("cv.worst_has_misses", bool(errs), SRC),
            flag("cv.has_unpredicted", s["unpredicted"] > 0, SRC),
            flag("cv.has_one_value", s["one_value"] > 0, SRC),
            num("cv.one_value", s["one_value"], "steps", SRC, "{:,}"),
            flag("cv.has_as_sent", s["as_sent"] != _both(s), SRC),
            num("cv.as_sent", s["as_sent"], "steps", SRC, "{:,}"),
            num("cv.unpredicted", s["unpredicted"], "steps", SRC, "{:,}"),
            *carried_values(rows),
            word("cv.cards", " and ".join(sorted({str(r["card"]) for r in rows})), SRC),
            num("cv.tolerance", tolerance, "fraction", "verdicts.verdicts TOLERANCE", "{:.0%}"),
            num("cv.within", _both(s), "steps", SRC, "{:,}"),
            num("cv.steps", s["steps"], "steps", SRC, "{:,}"),
            word("cv.worst_engine", _engine_words(worst), SRC),
            num("cv.worst_within", _both(per[worst]), "steps", SRC, "{:,}"),
            num("cv.worst_steps", per[worst]["steps"], "steps", SRC, "{:,}"),
            word("cv.worst_protocol", f"`{proto}`" if proto else "none", SRC),
            word("cv.worst_measure", measure if errs else "none", SRC),
            num("cv.worst_misses", len(errs) if errs else None, "steps", SRC, "{:,}"),
            num("cv.worst_lo", min(errs) if errs else None, "fraction", SRC, "{:+.1%}"),
            num("cv.worst_hi", max(errs) if errs else None, "fraction", SRC, "{:+.1%}")]


def _cards(cards: set[str]) -> str:
    return " and ".join(sorted(cards)) or "none"


def carried_values(rows: Sequence[Mapping[str, Any]]) -> list[Value]:
    """``cv.has_carried``, and how many complete steps were predicted from terms carried
    from another card (:func:`crossval.carried_groups`), the cards they ran on and the
    cards the terms came from ("none" without such a step)."""
    groups = cv.carried_groups(list(rows))
    return [flag("cv.has_carried", bool(groups), SRC),
            num("cv.carried", sum(g["steps"] for g in groups), "steps", SRC, "{:,}"),
            word("cv.carried_cards", _cards({g["card"] for g in groups}), SRC),
            word("cv.carried_from", _cards({g["from_card"] for g in groups}), SRC)]


def carried_sentence(rows: Sequence[Mapping[str, Any]]) -> str:
    """The appendix's words on the steps predicted from terms carried from another card,
    one clause per card and source card (:func:`crossval.carried_groups`); '' without."""
    parts = [f"{g['steps']:,} steps of {g['runs']:,} run{'s' if g['runs'] != 1 else ''} on "
             f"the {g['card']}, every term carried from the runs on the {g['from_card']} by "
             "the datasheets" for g in cv.carried_groups(list(rows))]
    if not parts:
        return ""
    return ("No calibration was left on their card with their run left out for "
            + "; ".join(parts) + " (`carried_from`: no run measured on their card in any "
            "term); they count like any other step.")


def spread_values(sp: dict[str, Any] | None) -> list[Value]:
    """``cv.worst_has_spread`` and :func:`spread`'s numbers as named values ("none" when
    there is no group measured twice)."""
    if sp is None or not sp["wide"]:  # said only where the steps spread wider than a band
        return [flag("cv.worst_has_spread", False, SRC)] + [
            word(n, "none", SRC) for n in SPREAD_NAMES]
    return [flag("cv.worst_has_spread", True, SRC),
            num("cv.worst_spread", sp["spread"], "fraction", SRC, "{:.1%}"),
            num("cv.worst_wide", sp["wide"], "steps", SRC, "{:,}"),
            num("cv.worst_groups", sp["groups"], "steps", SRC, "{:,}"),
            num("cv.worst_band", sp["band"], "fraction", SRC, "{:.1%}"),
            num("cv.worst_runs", sp["runs"], "runs", SRC,
                "{:,} run" if sp["runs"] == 1 else "{:,} runs")]


def replicate_values(s: Mapping[str, Any] | None) -> list[Value]:
    """``cv.worst_has_replicates`` and, from a :func:`crossval.summary`'s ``replicated``
    (the worst engine's), how many of its steps another run measured too, at how many that
    other measurement lands within the tolerance, and at how many the model does ("none"
    without such a step)."""
    rep = (s or {}).get("replicated") or {}
    if not rep.get("steps"):
        return [flag("cv.worst_has_replicates", False, SRC)] + [
            word(n, "none", SRC) for n in REPLICATE_NAMES]
    return [flag("cv.worst_has_replicates", True, SRC),
            num("cv.worst_replicated", rep["steps"], "steps", SRC, "{:,}"),
            num("cv.worst_replicate_within", rep["both_within"], "steps", SRC, "{:,}"),
            num("cv.worst_replicate_model", rep["model_both_within"], "steps", SRC, "{:,}")]


def _provenance(rows: Sequence[Mapping[str, Any]]) -> str:
    """The cards and weights of the rows' runs, in words ("dummy weights" where any is)."""
    cards = ", ".join(sorted({str(r["card"]) for r in rows}))
    dummy = sorted({str(r["run"]) for r in rows if r.get("weights") == "dummy"})
    runs = len({str(r["run"]) for r in rows})
    weights = ("dummy weights" if len(dummy) == runs else
               f"{len(dummy):,} of the {runs:,} runs with dummy weights" if dummy else
               "real weights")
    return f"Card: {cards}; {weights}."


def appendix_section(rows: Sequence[Mapping[str, Any]] | None,
                     tolerance: float = TOLERANCE) -> str:
    """``### The model with each run left out``: per engine and per run, the complete steps,
    how many land within ``tolerance`` on both end to end and decode with the run left out
    of every term, and in sample; '' without rows."""
    rows = cv.complete(list(rows or []))
    if not rows:
        return ""
    head = ("| {} | steps | within {:.0%}, run left out | within {:.0%}, in sample |\n"
            "|---|---:|---:|---:|\n")
    rep_head = ("| {} | steps | measured by another run too | that run within {:.0%} | "
                "model within {:.0%}, run left out |\n|---|---:|---:|---:|---:|\n")
    out = ["### The model with each run left out\n\n",
           "Each committed run's steps predicted with that run left out of every term of the "
           f"model ({cv.left_out_words()}: `claimcheck model "
           "--cross-validate`), against the same steps predicted with every run in. Within: "
           "on both end to end and decode (a held prefill's decode is no miss). "
           + _provenance(rows) + (" " + carried_sentence(rows) if carried_sentence(rows)
                                  else "") + "\n\n",
           head.format("engine", tolerance, tolerance)]
    per = cv.by_engine(rows, tolerance)
    for e, v in per.items():
        out.append(f"| {_engine_words(e)} | {v['steps']:,} | {_both(v):,} | "
                   f"{v['in_sample']['both_within']:,} |\n")
    s = cv.summary(rows, tolerance)
    out.append(f"| all | {s['steps']:,} | {_both(s):,} | {s['in_sample']['both_within']:,} |\n")
    if s["one_value"]:
        out.append("\nOne number per step, set against every run's and repeat's measurement "
                   "of that step on its card (the same engine, protocol step, streams and "
                   f"requests), lands within {tolerance:.0%} on both at most at "
                   f"{s['one_value']:,} of the {s['steps']:,} steps: the most a model that "
                   "gives a step one number can reach, by engine "
                   + ", ".join(f"{_engine_words(e)} {v['one_value']:,} of {v['steps']:,}"
                               for e, v in per.items()) + ".\n")
    spread = bool(s["one_value"])  # measurements to set one number against
    out.append("\nBy protocol, every engine and card together"
               + (", beside the most steps one number per step could land (the steps' own "
                  "spread)" if spread else "") + ":\n\n"
               f"| protocol | steps | within {tolerance:.0%}, run left out | within "
               f"{tolerance:.0%}, in sample |" + (" one number per step, at most |" if spread
                                                  else "")
               + "\n|---|---:|---:|---:|" + ("---:|" if spread else "") + "\n")
    for p, v in cv.by_protocol(rows, tolerance).items():
        out.append(f"| `{p}` | {v['steps']:,} | {_both(v):,} | "
                   f"{v['in_sample']['both_within']:,} |"
                   + (f" {v['one_value']:,} |\n" if spread else "\n"))
    if s["replicated"]["steps"]:
        out.append("\nThe same steps measured again: where another run of the "
                   "engine, card and protocol measured the same step (index, streams and "
                   "requests), the median of its measurements set against this run's as if "
                   "it were the prediction, beside the model's count over the same steps "
                   "(`replicate_*` in crossval.csv). Where two runs of a step lie more "
                   f"than {band(tolerance):.1%} apart, no one "
                   f"prediction of the engine on its card lands within {tolerance:.0%} of "
                   "both.\n\n" + rep_head.format("engine", tolerance, tolerance))
        for e, v in {**per, "all": s}.items():
            r = v["replicated"]
            if r["steps"]:
                out.append(f"| {_engine_words(e) if e in per else e} | {v['steps']:,} | "
                           f"{r['steps']:,} | {r['both_within']:,} | "
                           f"{r['model_both_within']:,} |\n")
    out.append("\n" + head.format("run", tolerance, tolerance))
    for run, v in cv.grouped(rows, lambda r: str(r["run"]), tolerance).items():
        out.append(f"| {run} | {v['steps']:,} | {_both(v):,} | "
                   f"{v['in_sample']['both_within']:,} |\n")
    return "".join(out)
