"""The Markdown "### Verdicts" section: one line per claim (verdict, numbers, reason, labels
the publication gave and the registry supplied). Pure: rows in, text out."""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from claimcheck.files import mdtext as md
from claimcheck.files.frames import flag, number
from claimcheck.verdicts.accuracy import within, within_both
from claimcheck.verdicts.verdicts import ABOVE_SOURCE, KINDS, SHORT, TOLERANCE


def _streams(n: Any) -> str:
    n = float(n)
    return f"{n:g} stream" if n == 1 else f"{n:g} streams"


def kinds_in_order(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The verdict kinds present, in :data:`claimcheck.verdicts.verdicts.KINDS` order, then any
    other kind the table holds (sorted)."""
    present = {r["verdict"] for r in rows}
    return [k for k in KINDS if k in present] + sorted(present - set(KINDS))


def ratio_text(r: Mapping[str, Any]) -> str:
    """The ratio printed beside a verdict's kind: to the seed's reproduction for a
    reproduction verdict, to the carried model for a verdict read against it, to the
    source's ceiling where there is a source model, else to the plain roofline ("0.84 of
    its ceiling")."""
    if str(r.get("verdict", "")).endswith("carried model") and \
            number(r.get("claim_over_carried_model")):
        return f"{float(r['claim_over_carried_model']):.2f} of the carried model"
    if str(r.get("verdict", "")).endswith("by a seed's run") and \
            number(r.get("claim_over_reproduction")):
        return f"{float(r['claim_over_reproduction']):.2f} of the reproduction's nearest end"
    if number(r.get("claim_over_source")):
        return f"{float(r['claim_over_source']):.2f} of its ceiling"
    if number(r.get("claim_over_roofline")):
        return f"{float(r['claim_over_roofline']):.2f} of the plain roofline"
    return ""


def verdict_line(r: Mapping[str, Any]) -> str:
    """One claim: ``- **id** (card, metric): *verdict* (ratio): numbers. reason Labels:
    ...``."""
    running = r.get("streams_running")
    streams = (f"{md.num(number(running), '{:g}')} running of {r['streams']} requested" if running
               else _streams(r["streams"]))
    nums = (f"{md.num(number(r.get('aggregate_tok_s')))} tok/s summed over {streams} "
            f"({md.num(number(r.get('per_stream_tok_s')))} tok/s per stream); plain roofline "
            f"{md.num(number(r.get('roofline_tok_s')))} tok/s")
    if r.get("tau_needed") not in (None, "") and float(r["tau_needed"]) > 1:
        # only above the roofline
        nums += f"; tau needed {md.num(number(r['tau_needed']), '{:.2f}')}"
    src = number(r.get("source_model_tok_s"))
    if src:
        floor = number(r.get("source_floor_tok_s"))
        band = (f"its source's band {floor:,.1f} to {src:,.1f} tok/s (no-overlap floor to "
                "overlap ceiling" if floor else f"its source's ceiling {src:,.1f} tok/s (")
        nums += (f"; {band}, claim / ceiling "
                 f"{md.num(number(r.get('claim_over_source')), '{:.2f}')}"
                 + (f", {r['binding_term']}-bound" if r.get("binding_term") else "")
                 + f"; calibrated on {r.get('calibrated_on') or 'n/a'}: "
                 f"{r.get('calibration') or 'no calibration stated'})")
    if r.get("replay_context"):
        nums += f"; replay: {r['replay_context']}"
    labels = (f" Labels given: {r.get('labels_given') or 'none'}; supplied by the registry: "
              f"{r.get('labels_supplied') or 'none'}; "
              f"missing: {r.get('labels_missing') or 'none'}.")
    ratio = ratio_text(r)
    return (f"- **{r['id']}** ({r['card']}, {r['metric']}): *{r['verdict']}*"
            + (f" ({ratio})" if ratio else "") + f": {nums}. {r['reason']}{labels}")


def tally(rows: Sequence[Mapping[str, Any]]) -> str:
    """"N needs a drafter, N reproduced by a seed's run, ...": the count per verdict kind,
    in :data:`claimcheck.verdicts.verdicts.KINDS` order."""
    counts = Counter(r["verdict"] for r in rows)
    return ", ".join(f"{counts[k]} {k}" for k in kinds_in_order(rows))


def render_verdicts(rows: Sequence[Mapping[str, Any]]) -> str:
    """The whole section, a count per verdict first, then one line per claim in registry
    order."""
    lines = ["### Verdicts", "",
             f"{len(rows)} registry claims: {tally(rows)}. Aggregates are summed over the "
             "streams sharing them (streams_running where the registry gives it). A seed's "
             "own reproduction of the same workload and definition decides first. The plain "
             "roofline is one token per stream per step at eta 1 at the claim's own card, "
             "weights, streams and context; tau is the tokens per stream per step a claim "
             "above it needs. A source's model is a band: its ceiling overlaps memory and "
             "compute (max of the two terms), its floor does not (their sum); a figure "
             "between them is in the bend region, only one under the floor is short of it. "
             "Assumed fields are the registry's, not the seed's, and count as weaker "
             "evidence.", ""]
    lines += [verdict_line(r) for r in rows]
    return "\n".join(lines) + "\n"


def render_model(rows: Sequence[Mapping[str, Any]]) -> str:
    """"### Model: predicted / measured": one table row per step of every run, with the
    calibration used and, where a step misses by more than 5%, the term it points at."""
    lines = ["### Model: predicted / measured", ""]
    cals = sorted({(r["calibrated_on"], float(r["bandwidth_gb_s"]), float(r["tflops"]),
                    float(r["request_overhead_ms"]), r["bandwidth_source"],
                    r["compute_source"]) for r in rows})
    for name, bw, tf, ov, bw_src, c_src in cals:
        lines.append(f"- calibrated on {name}: effective bandwidth {bw:,.0f} GB/s from "
                     f"{bw_src}; effective compute {tf:,.1f} TFLOP/s from {c_src}; "
                     f"per-request overhead {ov:.1f} ms (that step's median TTFT less the "
                     "model's prefill)")
    m = model_summary(rows)
    lines += ["", f"{m['both']} of {m['steps']} steps (calibration steps left "
              f"out) within {TOLERANCE:.0%} on both end to end and decode aggregate; "
              f"{m['e2e']} within "
              f"{TOLERANCE:.0%} on end to end. Terms the model does not have are listed in "
              "`claimcheck.model.model`."]
    lines += ["", "Aggregates in tok/s summed over the streams (closed-loop clients at the "
              "step's concurrency); e2e = all output tokens / first send to last token; "
              "decode = tokens after each request's first / time with any request decoding "
              "(prefill left out). Context per stream = each request's recorded prompt + "
              "output.", "",
              "| run | step | repeat | streams | predicted e2e | measured e2e | error | "
              "predicted decode | measured decode | error | bound | miss term |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        dec_err = r.get("decode_error")
        dec = "n/a" if dec_err in (None, "") else f"{float(dec_err):+.1%}"
        lines.append(
            f"| {r['run']} | {r['step']} | {r['repeat']} | {r['streams']} | "
            f"{md.num(number(r['predicted_e2e_tok_s']))} | "
            f"{md.num(number(r['measured_e2e_tok_s']))} | "
            f"{float(r['e2e_error']):+.1%} | {md.num(number(r['predicted_decode_tok_s']))} | "
            f"{md.num(number(r['measured_decode_tok_s']))} | {dec} | {r['bound']} | "
            f"{r.get('miss_term') or ''} |")
    return "\n".join(lines) + "\n"


def _complete(r: Mapping[str, Any]) -> bool:
    """A model-table row of a step that completed (a failed step is never compared)."""
    return str(r.get("step_status") or "complete") == "complete"


def model_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts over the model table's steps, calibration steps left out: how many within
    the tolerance on both end to end and decode, on end to end, and the worst miss."""
    def hit(r: Mapping[str, Any]) -> bool:
        return within_both(number(r["e2e_error"]), number(r.get("decode_error")))

    rest = [r for r in rows if not flag(r.get("calibration_step")) and _complete(r)]
    worst = max(rest, key=lambda r: max(abs(float(r["e2e_error"])),
                                        abs(number(r.get("decode_error")) or 0.0)), default=None)
    return {"steps": len(rest), "both": sum(hit(r) for r in rest),
            "e2e": sum(within(number(r["e2e_error"])) for r in rest),
            "worst": worst, "runs": len({r["run"] for r in rows}),
            "incomplete": [r for r in rows if not _complete(r)],
            "row_sources": sorted({str(r["row_factor_source"]) for r in rows
                                   if r.get("row_factor_source")}),
            "admission_sources": sorted({str(r["admission_source"]) for r in rows
                                         if r.get("admission_source")}),
            "calibrations": sorted({r["calibrated_on"] for r in rows})}


def model_paragraph(rows: Sequence[Mapping[str, Any]]) -> str:
    """The calibrated model in one paragraph (numbers from the model table)."""
    if not rows:
        return "No model table yet."
    m = model_summary(rows)
    text = ("The model takes two numbers measured on the card (effective bandwidth from a "
            "1-stream decode, compute from a held 1-stream prefill) and simulates the "
            "engine's scheduler over each protocol's requests")
    if m["row_sources"]:
        text += (", a decode step of as many rows as a one-wave decode ladder measured "
                 "costing the measured time over the model's there (from "
                 + "; ".join(sorted({src.split(" (")[0] for src in m["row_sources"]}))
                 + ")")
    if m["admission_sources"]:
        text += (", and a wave's requests reaching the scheduler one measured send interval "
                 "apart (from " + "; ".join(sorted({src.split(" (")[0] for src in
                                                    m["admission_sources"]})) + ")")
    text += (f". Calibrated on "
            f"{len(m['calibrations'])} runs and set against {m['steps']} steps of "
            f"{m['runs']} runs (calibration and term-source steps left out"
            + (f"; {len(m['incomplete'])} failed "
               f"{'step' if len(m['incomplete']) == 1 else 'steps'} not compared"
               if m["incomplete"] else "")
            + f"), it predicts {m['both']} within "
            f"{TOLERANCE:.0%} on both end to end and decode aggregate and {m['e2e']} on end "
            "to end")
    w = m["worst"]
    if w is not None:
        err = max((float(w["e2e_error"]), number(w.get("decode_error")) or 0.0), key=abs)
        text += (f"; its largest miss is {w['run']} at {_streams(w['streams'])} "
                 f"({err:+.1%}"
                 + (f": {w['miss_term']}" if w.get("miss_term") else "") + ")")
    text += "."
    terms = miss_terms(rows)
    if terms:
        text += (" The misses, by the term each points at: "
                 + "; ".join(f"{n} {'step' if n == 1 else 'steps'} {t} ({where})"
                             for t, n, where in terms) + ".")
    engines = sorted({str(r["engine"]) for r in rows if r.get("engine")})
    if engines:
        text += (" Predicted against measured, per engine: "
                 + ", ".join(f"[{e}](model-{e}.png)" for e in engines) + ".")
    return text + " Every step's prediction is in the appendix and `data/derived/model.csv`."


def miss_terms(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, int, str]]:
    """Non-calibration steps missing 5% grouped by the term they point at (the model
    table's ``miss_term`` up to its first colon, its step-specific bracket dropped): (term,
    number of steps, the runs' engines and stream counts), most steps first."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        term = r.get("miss_term")
        if not term or flag(r.get("calibration_step")) or not _complete(r):
            continue
        key = re.sub(r"\s*\([^()]*on TPOT\)$", "", str(term).split(":")[0]).strip()
        groups.setdefault(key, []).append(r)
    out = []
    for key, rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        by_engine: dict[str, set[int]] = {}
        for r in rs:
            by_engine.setdefault(str(r.get("engine") or "?"), set()).add(int(r["streams"]))
        where = "; ".join(f"{e} at {', '.join(str(n) for n in sorted(v))} "
                          f"{'stream' if sorted(v) == [1] else 'streams'}"
                          for e, v in sorted(by_engine.items()))
        out.append((key, len(rs), where))
    return out


def render_findings(rows: Sequence[Mapping[str, Any]], figure: str | None = None,
                    top: int = 5) -> str:
    """What the published figures say, for the body: counts by verdict kind, the source
    models (where the verdicts table has them), the figures short of or above their
    source's band by binding term, and the figures furthest above the plain roofline."""
    if not rows:
        return "No verdicts yet.\n"
    counts = Counter(r["verdict"] for r in rows)
    out = [f"Of {len(rows)} published figures: "
           + ", ".join(f"{counts[k]} *{k}*" for k in kinds_in_order(rows))
           + ". A figure a seed reproduced (the same workload and definition, run again by a "
           "seed) is read by that reproduction. Every other figure is set against the plain "
           "roofline of its own card (one token per stream per step, η = 1, at its weights, "
           "streams and context) and, where its source published a figure to calibrate on, "
           "against that source's own model as a band: from the no-overlap floor (memory "
           "and compute one after the other) to the overlap ceiling (the larger of the two); "
           "between them is the bend region a real engine sits in.", ""]
    if figure:
        out += [f"![Each claim against its card's plain roofline and its source's band]"
                f"({figure})", ""]
    out += [source_models_table(rows), ""]
    out += [source_misses(rows), ""]
    out += [above_roofline(rows, top), ""]
    return "\n".join(out)


def _is_calibration(r: Mapping[str, Any]) -> bool:
    """A verdict row of a figure that sets its own source's model (never a prediction)."""
    from claimcheck.verdicts.verdicts import CALIBRATES
    return r.get("verdict") == CALIBRATES


def source_models_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """One row per source-calibrated model: its card, the published figures that set it,
    how, the figures it predicts (its calibration figures left out) and how many of them
    sit inside its band."""
    from claimcheck.verdicts.sourcemodel import band_side
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("calibration") and number(r.get("source_model_tok_s")) and not _is_calibration(r):
            key = (r["card"], r.get("calibrated_on") or "", r["calibration"])
            groups.setdefault(key, []).append(r)
    if not groups:
        return ("The verdicts table carries no source-calibrated model yet: every figure "
                "here is set against its card's plain roofline only.")
    table = []
    for (card, on, how), rs in sorted(groups.items()):
        ratios = sorted(float(r["claim_over_source"]) for r in rs
                        if number(r.get("claim_over_source")))
        inside = sum(band_side(float(r["aggregate_tok_s"]), float(r["source_model_tok_s"]),
                               number(r.get("source_floor_tok_s"))
                               or float(r["source_model_tok_s"]),
                               float(r.get("tolerance") or TOLERANCE),
                               str(r.get("bound") or "")) == "inside" for r in rs)
        mid = statistics.median(ratios) if ratios else None
        table.append([card, ", ".join(f"`{c}`" for c in on.split(";") if c) or "none",
                      how.replace("eta ", "η ").replace(" x ", " × "), str(len(rs)),
                      f"{inside} of {len(rs)}",
                      md.num(mid, "{:.2f}") + ("×" if mid else "")])
    return ("Source models (each calibrated on figures its own source published; the "
            "calibration figures themselves are not counted as predicted):\n\n"
            + md.table(["Card", "Calibrated on", "How", "Figures predicted",
                        "Inside the band", "Median claim ÷ ceiling"], table,
                       align=["l"] * 6))


def _claim_words(r: Mapping[str, Any]) -> str:
    """"`id` (up to 900 tok/s at 1 stream, rtx5090)": a bound printed with the seed's own
    qualifier (``bound_words``, "up to X"), else "at most" / "at least"."""
    agg, n = number(r.get("aggregate_tok_s")) or float(r["value"]), r.get("streams_sharing")
    n = number(n) or float(r["streams"])
    words = str(r.get("bound_words") or "") or {"at_least": "at least X",
                                                 "at_most": "at most X"}.get(
        str(r.get("bound") or ""), "X")
    value = words.replace("X", f"{agg:,.0f} tok/s")
    if n == 1:
        return f"`{r['id']}` ({value} at 1 stream, {r['card']})"
    per = words.replace("X", f"{agg / n:,.1f}")
    return (f"`{r['id']}` ({value} summed over {_streams(n)}, "
            f"{per} per stream, {r['card']})")


TERM_WORDS = {"compute": "compute-bound at their streams (past the bend, where each added "
                         "stream adds its share of arithmetic)",
              "memory": "memory-bound at their streams (weights, state and KV read each step)"}
"""The binding term of a source's model at a figure's streams, in plain words."""


def _outside_band(r: Mapping[str, Any]) -> str:
    """"above", "below" or "inside": a verdict row against its source's band (ceiling
    ``source_model_tok_s``, floor ``source_floor_tok_s``, the ceiling when absent), at its
    tolerance; a bound is never counted outside."""
    from claimcheck.verdicts.sourcemodel import band_side
    ceil = number(r.get("source_model_tok_s"))
    if not ceil or str(r.get("bound") or "") or not number(r.get("claim_over_source")):
        return "inside"
    agg = float(r["claim_over_source"]) * ceil
    return band_side(agg, ceil, number(r.get("source_floor_tok_s")) or ceil,
                     number(r.get("tolerance")) or TOLERANCE)


def source_misses(rows: Sequence[Mapping[str, Any]], top: int = 2) -> str:
    """The figures outside their source's band (under its no-overlap floor or over its
    overlap ceiling, beyond the tolerance; bounds left out), grouped by the term that binds
    the model there: how many, their median ratio to the ceiling and the ``top`` furthest.
    Only figures whose verdict is short of or above their source's model count, so the
    numbers are the tally's (a figure a seed's run reproduces is judged by that run)."""
    have = [r for r in rows if r.get("verdict") in (SHORT, ABOVE_SOURCE)
            and _outside_band(r) != "inside"]
    if not have:
        return "No figure misses its source's model by more than the tolerance."
    by_term: dict[str, list[Mapping[str, Any]]] = {}
    for r in have:
        by_term.setdefault(r.get("binding_term") or "", []).append(r)
    parts = []
    for term, rs in sorted(by_term.items(), key=lambda kv: -len(kv[1])):
        rs = sorted(rs, key=lambda r: -abs(math.log(float(r["claim_over_source"]))))
        mid = statistics.median(float(r["claim_over_source"]) for r in rs)
        furthest = "; ".join(
            f"{_claim_words(r)} at {float(r['claim_over_source']):.2f}× its source's model "
            f"of {float(r['source_model_tok_s']):,.0f} tok/s"
            + (f" (its no-overlap floor {float(r['source_floor_tok_s']):,.0f})"
               if number(r.get("source_floor_tok_s")) else "")
            for r in rs[:top])
        words = TERM_WORDS.get(term, "not bound by a stated term")
        parts.append(f"{len(rs)} where the model is {words}, median {mid:.2f}× the model; "
                     f"furthest {furthest}")
    n_below = sum(_outside_band(r) == "below" for r in have)
    return (f"{len(have)} figures miss their source's model by more than its tolerance "
            f"(at least {TOLERANCE:.0%}, or the spread of the source's own runs): "
            + ". ".join(parts)
            + f" ({n_below} under the floor of the band, {len(have) - n_below} over its "
            "ceiling; the ratios are to the ceiling, the model's overlap line).")


def above_roofline(rows: Sequence[Mapping[str, Any]], top: int = 5) -> str:
    """The figures furthest above their card's plain roofline."""
    above = sorted((r for r in rows if (number(r.get("claim_over_roofline")) or 0) > 1),
                   key=lambda r: -float(r["claim_over_roofline"]))
    if not above:
        return "No figure sits above its card's plain roofline."
    items = [f"{_claim_words(r)} at {float(r['claim_over_roofline']):.2f}× the plain "
             f"roofline of {float(r['roofline_tok_s']):,.0f} tok/s (*{r['verdict']}*)"
             for r in above[:top]]
    sits = ("1 figure sits above its card's" if len(above) == 1
            else f"{len(above)} figures sit above their card's")
    return (f"{sits} plain roofline; the furthest: "
            + "; ".join(items) + ".")


def render_definitions_links(links: Mapping[str, str]) -> str:
    """"### Definitions figures": one link per run (name -> path relative to figures/)."""
    lines = ["### Definitions figures", "",
             "Each run's steps under every published definition, as ratios to end to end, "
             "and one step's timeline with each definition's window:", ""]
    lines += [f"- [{name}]({path})" for name, path in sorted(links.items())]
    return "\n".join(lines) + "\n"
