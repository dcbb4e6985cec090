"""The Markdown "### Verdicts" section: one line per claim (verdict, numbers, reason, labels
the publication gave and the registry supplied). Pure: rows in, text out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from claimcheck.core.verdicts import KINDS, TOLERANCE


def _num(x: Any, fmt: str = ",.1f") -> str:
    return "n/a" if x is None or x == "" else format(float(x), fmt)


def verdict_line(r: Mapping[str, Any]) -> str:
    """One claim: ``- **id** (card, metric): *verdict*: numbers. reason Labels: ...``."""
    running = r.get("streams_running")
    streams = (f"{_num(running, 'g')} running of {r['streams']} requested" if running
               else f"{r['streams']} streams")
    nums = (f"{_num(r.get('aggregate_tok_s'))} tok/s summed over {streams} "
            f"({_num(r.get('per_stream_tok_s'))} tok/s per stream); plain roofline "
            f"{_num(r.get('roofline_tok_s'))} tok/s")
    if r.get("tau_needed") not in (None, "") and float(r["tau_needed"]) > 1:
        nums += f"; tau needed {_num(r['tau_needed'], '.2f')}"  # only above the roofline
    labels = (f" Labels given: {r.get('labels_given') or 'none'}; supplied by the registry: "
              f"{r.get('labels_supplied') or 'none'}; "
              f"missing: {r.get('labels_missing') or 'none'}.")
    return (f"- **{r['id']}** ({r['card']}, {r['metric']}): *{r['verdict']}*: {nums}. "
            f"{r['reason']}{labels}")


def render_verdicts(rows: Sequence[Mapping[str, Any]]) -> str:
    """The whole section, a count per verdict first, then one line per claim in registry
    order."""
    counts = Counter(r["verdict"] for r in rows)
    head = ", ".join(f"{counts[k]} {k}" for k in KINDS if counts[k])
    lines = ["### Verdicts", "",
             f"{len(rows)} registry claims: {head}. Aggregates are summed over the streams "
             "sharing them (streams_running where the registry gives it); the roofline is "
             "the plain one (one token per stream per step, eta 1) at the claim's own card, "
             "weights, streams and context; tau is the tokens per stream per step a claim "
             "above it needs. Assumed fields are the registry's, not the seed's, and count as "
             "weaker evidence.", ""]
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
    def hit(r: Mapping[str, Any]) -> bool:
        dec = r.get("decode_error")
        return abs(float(r["e2e_error"])) <= TOLERANCE and (
            dec in (None, "") or abs(float(dec)) <= TOLERANCE)

    rest = [r for r in rows if str(r.get("calibration_step")) not in ("True", "true")]
    lines += ["", f"{sum(hit(r) for r in rest)} of {len(rest)} steps (calibration steps left "
              f"out) within {TOLERANCE:.0%} on both end to end and decode aggregate; "
              f"{sum(abs(float(r['e2e_error'])) <= TOLERANCE for r in rest)} within "
              f"{TOLERANCE:.0%} on end to end. Terms the model does not have are listed in "
              "`claimcheck.core.model`."]
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
            f"{_num(r['predicted_e2e_tok_s'])} | {_num(r['measured_e2e_tok_s'])} | "
            f"{float(r['e2e_error']):+.1%} | {_num(r['predicted_decode_tok_s'])} | "
            f"{_num(r['measured_decode_tok_s'])} | {dec} | {r['bound']} | "
            f"{r.get('miss_term') or ''} |")
    return "\n".join(lines) + "\n"


def render_definitions_links(links: Mapping[str, str]) -> str:
    """"### Definitions figures": one link per run (name -> path relative to figures/)."""
    lines = ["### Definitions figures", "",
             "Each run's steps under every published definition, as ratios to end to end, "
             "and one step's timeline with each definition's window:", ""]
    lines += [f"- [{name}]({path})" for name, path in sorted(links.items())]
    return "\n".join(lines) + "\n"
