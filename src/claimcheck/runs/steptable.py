"""Views of a run's step table (:class:`claimcheck.runs.run.Run`): the metrics table, one
row per step with a token timeline and every definition in it (aggregate and per stream,
tok/s), and what a model comparison reads off a measured step.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from claimcheck.readings import definitions as d
from claimcheck.runs.run import Run, StepTrace
from claimcheck.runs.steprow import LANES_ELSEWHERE

LANES_KEYS = tuple(f.name for f in dataclasses.fields(d.LanesLine)
                   if f.name not in LANES_ELSEWHERE)
"""The lanes line's fields (:class:`claimcheck.readings.definitions.LanesLine`) that no other
column holds, ``lanes_*`` in the table (its lanes are the streams, its tokens and wall time
``output_tokens`` and ``wall_s``, its end to end ``e2e_aggregate_tok_s``)."""


def _definition_columns() -> list[str]:
    out = []
    for name in d.DEFINITIONS:
        out.append(name)
        if d.has_per_stream_column(name):
            out.append(f"{name}_per_stream")
    return out


def metric_rows(run: Run) -> list[dict[str, Any]]:
    """Every definition of each step with a token timeline, from the step table: step,
    repeat, streams, requests, completed, failed, the timeline's ``output_tokens`` and
    ``wall_s`` (first send to last token, s), ``decode_window_s``, each definition and its
    per-stream reading, and the lanes line as ``lanes_*``."""
    timed = {(t.record["step"], t.record["repeat"]) for t in run.traces}
    out = []
    for r in run.rows:
        if (r["step"], r["repeat"]) not in timed:
            continue
        m = {k: r[k] for k in ("step", "repeat", "streams", "requests", "completed", "failed")}
        m["output_tokens"] = r["timeline_output_tokens"]
        m["wall_s"] = r["timeline_wall_s"]
        m["decode_window_s"] = r["decode_window_s"]
        m.update({k: r[k] for k in _definition_columns()})
        m.update({f"lanes_{k}": r[f"lanes_{k}"] for k in LANES_KEYS})
        out.append(m)
    return out


def lanes_of(m: dict[str, Any]) -> dict[str, Any]:
    """A metric row's whole lanes line (:class:`claimcheck.readings.definitions.LanesLine` as a
    dict): its own ``lanes_*`` columns and the four it shares with the row (lanes = the
    streams, total tokens = ``output_tokens``, wall s = ``wall_s``, e2e tok/s =
    ``e2e_aggregate_tok_s``)."""
    return {"lanes": m["streams"], "total_tokens": m["output_tokens"], "wall_s": m["wall_s"],
            "e2e_tok_s": m["e2e_aggregate_tok_s"], **{k: m[f"lanes_{k}"] for k in LANES_KEYS}}


def metrics_table(run: Run) -> list[dict[str, Any]]:
    """Flat rows (one per step and repeat with a timeline) for the derived metrics table:
    run, card, engine, protocol and :func:`metric_rows`."""
    p = run.provenance
    return [{"run": run.name, "card": p.raw.get("card"), "engine": p.raw.get("engine"),
             "protocol": p.raw.get("protocol"), **m} for m in metric_rows(run)]


def measured_values(run: Run, s: StepTrace) -> dict[str, float | None]:
    """What a model comparison reads off one measured step (the model table, verify mode
    and the predictions kept before a run), from the step's row of the run's table:
    ``e2e`` and ``decode`` aggregate (tok/s summed over the streams; no decode for a held
    prefill), median ``tpot`` (ms) and ``send_to_last_s`` (first send to last token, s);
    from its timeline and record beside the table, the median ``ttft`` over its requests
    (s) and ``client_s`` (the client's span from its start to its end, s, its start-up
    included; None where not recorded)."""
    row, tl, rec = run.row_of(s), s.timeline, s.record
    span = (rec["end_unix_s"] - rec["start_unix_s"]
            if rec.get("end_unix_s") is not None and rec.get("start_unix_s") is not None
            else None)
    return {"e2e": row["e2e_aggregate_tok_s"], "decode": row["decode_aggregate_tok_s"],
            "tpot": row["median_tpot_ms"],
            "ttft": statistics.median(r.ttft_s for r in tl.requests) if tl.requests else None,
            "send_to_last_s": row["timeline_wall_s"], "client_s": span}
