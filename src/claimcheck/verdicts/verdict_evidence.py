"""The measured evidence set beside a registry claim's verdict (pure): which measured
steps a claim may be set against, its definition's ratio to end to end on our timelines,
the replays of the protocols naming it (a reproduction on its own card, context on another)
and end to end / decode for an end-to-end figure. Steps are run-record rows
(:func:`claimcheck.runs.run.to_record`); speeds in tok/s.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from claimcheck.claims.metrics import METRICS
from claimcheck.readings.definitions import REGISTRY_METRIC, row_is_held_prefill
from claimcheck.verdicts import sourcemodel as sm
from claimcheck.verdicts.verdicts import Reproduction


def _metric_columns() -> dict[str, str]:
    """Registry metric -> the measured step column that reads it."""
    column = {m: c for c, m in REGISTRY_METRIC.items() if m}
    return column | {"single_stream_decode": "per_request_decode_tok_s",
                     "engine_log_line": "engine_log_steady_tok_s"}


METRIC_COLUMN = _metric_columns()
AGGREGATE_COLUMNS = [c for c in METRIC_COLUMN.values()
                     if c not in ("prefill_tok_s", "per_request_decode_tok_s")]


def column_label(column: str) -> str:
    """Plain words for a measured step column: its registry metric's label."""
    m = REGISTRY_METRIC.get(column)
    return METRICS[m].label if m in METRICS else column.replace("_", " ")


def comparable_steps(step_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The measured steps a claim may be set against: completed, with a roofline, and not a
    held-prefill step (2 tokens or fewer out per request: a prefill rate, no decode)."""
    return [s for s in step_rows if s.get("status") == "complete"
            and not row_is_held_prefill(s) and s.get("roofline_tok_s")]


def protocol_replays(c: Any, protocols: list[str], steps: list[dict[str, Any]],
                     column: str | None) -> tuple[list[dict[str, Any]], Any]:
    """Each protocol naming claim ``c`` set beside it: every run of it (reported steps at the
    claim's requested streams, from :func:`comparable_steps`). A run on the claim's own card
    is a reproduction (:class:`claimcheck.verdicts.verdicts.Reproduction`: the median under the
    claim's definition, or the range of every aggregate definition when it is not stated;
    with several protocols or runs, the range of theirs, each named with its own value);
    a run on another card is context (``protocol``, ``run``, ``card``, ``fraction`` of its
    plain roofline, ``definition``, ``streams``). Returns (context replays, reproduction or
    None)."""
    unspecified = METRICS[c["metric"]].phase == "unspecified"
    replays: list[dict[str, Any]] = []
    own: list[tuple[float, float, str]] = []
    for proto in protocols:
        here = [s for s in steps if s["protocol"] == proto and s["streams"] == c["streams"]
                and s.get("reported", True)]
        for run in sorted({s["run"] for s in here}):
            rs = [s for s in here if s["run"] == run]
            if rs[0]["card"] == c["card"]:
                vals = [s[k] * s["streams"] if k == "per_request_decode_tok_s" else s[k]
                        for s in rs
                        for k in (AGGREGATE_COLUMNS if unspecified or not column else [column])
                        if s.get(k) is not None]
                if vals:
                    lo, hi = ((statistics.median(vals),) * 2 if column and not unspecified
                              else (min(vals), max(vals)))
                    span = f"{lo:,.1f}" if lo == hi else f"{lo:,.1f} to {hi:,.1f}"
                    own.append((lo, hi, f"protocol {proto}, {run}: {span} tok/s"))
                continue
            k = column if column and not unspecified else "e2e_aggregate_tok_s"
            per = k == "per_request_decode_tok_s"  # one stream's speed: times the streams
            ok = [s for s in rs if s.get(k) is not None]
            frac = replay_fraction([s[k] * (s["streams"] if per else 1) for s in ok],
                                     [s["roofline_tok_s"] for s in ok])
            if frac is not None:
                replays.append({"protocol": proto, "run": run, "card": rs[0]["card"],
                                "fraction": frac, "definition": column_label(k),
                                "streams": c["streams"]})
    if not own:
        return replays, None
    return replays, Reproduction(min(x[0] for x in own), max(x[1] for x in own),
                                   "; ".join(x[2] for x in own))


def inflation(steps: list[dict[str, Any]], column: str, streams: float
               ) -> tuple[float | None, str]:
    """Median ratio of ``column`` to end to end over the measured steps nearest in streams
    (log distance); None when no step has the column. ``steps`` hold no held-prefill step."""
    ok = [r for r in steps if r.get(column) and r.get("e2e_aggregate_tok_s")]
    if not ok or not streams:
        return None, ""
    near = min(abs(math.log(r["streams"] / streams)) for r in ok)
    pick = [r for r in ok if abs(math.log(r["streams"] / streams)) == near]
    ratio = statistics.median(r[column] / r["e2e_aggregate_tok_s"] for r in pick)
    return ratio, (f"median over {len(pick)} measured step(s) at {pick[0]['streams']:g} "
                   f"streams, {column_label(column)} / end to end")


def e2e_ratio(c: Any, claims: list[Any], steps: list[dict[str, Any]]
               ) -> tuple[float | None, str]:
    """End to end / decode for an end-to-end claim ``c``: the same run's figures as its
    source printed them (its first decode-phase sibling in registry order), else the
    median over the measured steps of the same workload shape (prompt and output tokens
    per request, both stated or assumed) at the nearest streams (log distance), else None.
    Returns (ratio, where it comes from)."""

    if METRICS[c["metric"]].phase != "end_to_end":
        return None, ""
    for o in claims:
        if o["run"] == c["run"] and o["id"] != c["id"] and \
                METRICS[o["metric"]].phase == "decode":
            try:
                r = sm.e2e_over_decode(c.aggregate_tok_s, o.aggregate_tok_s)
            except ValueError:
                continue
            return r, (f"the same run's {c.aggregate_tok_s:,.1f} end to end over its "
                       f"{o.aggregate_tok_s:,.1f} {METRICS[o['metric']].label} ({o['id']}), "
                       "as its source printed them")
    if not (c["prompt_tokens"] and c["output_tokens"]):
        return None, ""
    ok = [s for s in steps if s.get("input_len") == c["prompt_tokens"]
          and s.get("output_len") == c["output_tokens"] and s.get("e2e_aggregate_tok_s")
          and s.get("decode_aggregate_tok_s") and s.get("streams")]
    if not ok:
        return None, ""
    near = min(abs(math.log(s["streams"] / c.streams_sharing)) for s in ok)
    pick = [s for s in ok if abs(math.log(s["streams"] / c.streams_sharing)) == near]
    ratio = statistics.median(s["e2e_aggregate_tok_s"] / s["decode_aggregate_tok_s"]
                              for s in pick)
    return ratio, (f"measured here for this workload shape ({c['prompt_tokens']} in, "
                   f"{c['output_tokens']} out): median end to end / decode over "
                   f"{len(pick)} step(s) at {pick[0]['streams']:g} streams "
                   f"({', '.join(sorted({s['run'] for s in pick}))}, dummy weights)")


def replay_fraction(measured_tok_s: Sequence[float], roofline_tok_s: Sequence[float]
                    ) -> float | None:
    """Median of measured / plain roofline over a replay's steps (tok/s each); None when
    there is no step."""
    pairs = [m / r for m, r in zip(measured_tok_s, roofline_tok_s, strict=True) if m and r]
    return statistics.median(pairs) if pairs else None


def replay_sentence(replays: Sequence[Mapping[str, Any]], claim_fraction: float | None,
                    card: str) -> str:
    """Plain words setting replays on another card beside a claim, as context only:
    "this H200 run at X% of its plain roofline; the claim at Y% of its card's". Each replay
    holds ``protocol``, ``run``, ``card``, ``fraction``, ``definition`` and ``streams``."""
    if not replays:
        return ""
    parts = [f"protocol {r['protocol']}: this {str(r['card']).upper()} run {r['run']} at "
             f"{r['fraction']:.1%} of its plain roofline ({r['definition']}, {r['streams']:g} "
             f"stream{'s' if r['streams'] != 1 else ''}, dummy weights)" for r in replays]
    claim = (f"the claim at {claim_fraction:.1%} of its {card}'s" if claim_fraction
             else f"no plain roofline for the claim on its {card}")
    return "; ".join(parts) + f"; {claim} (context only, not the claim's verdict)."
