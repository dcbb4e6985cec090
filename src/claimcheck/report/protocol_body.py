"""A protocol as the body once printed it: one table per protocol of at most
:data:`BODY_COLUMNS` columns (its headline and at most two more speeds, per-stream
readings, share of the plain roofline), its headline sentence, its replay tally and the
steps it leaves out. :func:`claimcheck.report.update_body.render_body` prints the findings
instead; nothing calls :func:`protocol_body` now.

Every tok/s printed says how many streams and how they relate, the per-stream speed, the
context per stream, and whether it is decode (which excludes each request's first token
and prefill) or end to end (which includes prefill, ramp and tail).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from claimcheck.core.definitions import row_is_held_prefill
from claimcheck.core.protocols import Protocol
from claimcheck.report import mdtext as md
from claimcheck.report.record import Run, median_step, reported_steps
from claimcheck.report.tables import measured_over
from claimcheck.report.update_metrics import (
    REPORT_METRICS,
    Column,
    headline_metric,
    in_prose,
    is_queued,
    metric_name,
    per_stream,
    running_at_once,
)
from claimcheck.report.update_words import plain_words, plural

BODY_COLUMNS = 8
BODY_METRICS = 3  # the headline and at most two more speeds per protocol table


def roofline_share(run: Run, s: dict[str, Any], metric: str) -> float | None:
    """A step's figure by ``metric`` over the plain roofline (eta = 1) at its streams and
    context: aggregate over aggregate, or per stream over per stream. None for a queued
    step (the roofline at the streams asked is not the load that ran) or a missing value."""
    col = REPORT_METRICS[metric]
    v = s.get(col.key)
    if v is None or is_queued(run, s):
        return None
    roof = s.get("roofline_per_stream_tok_s" if col.speed == "per_stream"
                 else "roofline_tok_s")
    return measured_over(v, roof)


def body_columns(proto: Protocol) -> list[str]:
    """The metrics of a protocol's body table: its headline, then at most two more speeds
    from its ``metrics``, in order."""
    head = headline_metric(proto)
    rest = [m for m in proto.metrics if m != head and REPORT_METRICS.get(m)
            and REPORT_METRICS[m].speed]
    return [head] + rest[:BODY_METRICS - 1]


def run_label(run: Run) -> str:
    """A run as a table row names it: its directory name, and dummy weights where its
    provenance says so."""
    return run.name + (", dummy weights" if run.dummy else "")


def _streams_cell(run: Run, s: dict[str, Any]) -> str:
    n = s["streams"]
    if row_is_held_prefill(s):
        return (f"{n} (held prefill: {s.get('requests')} prompts of "
                f"{s.get('input_len') or 0:,} tokens, {s.get('output_len')} out each)")
    if is_queued(run, s):
        return f"{n} (queued: {running_at_once(run, s)} run at once)"
    return str(n)


def _body_cell(run: Run, s: dict[str, Any], col: Column) -> str:
    v = s.get(col.key)
    if v is None:
        return ("n/a (held prefill)" if row_is_held_prefill(s)
                else "n/a")
    if col.streams_times_tpot and is_queued(run, s):
        return "n/a (queued)"
    text = md.num(v, col.fmt)
    per = per_stream(run, s, col)
    if col.speed == "aggregate" and per is not None:
        text += f" ({per:,.1f})"
    return text


def body_header(col: Column) -> str:
    """A body column's header: its definition, its unit, and where per-stream speeds
    sit."""
    if col.speed == "aggregate":
        return f"{metric_name(col)}, tok/s summed (per stream)"
    return col.header


def body_table(proto: Protocol, runs: list[Run], rows: dict[tuple[str, int, int], dict]
               ) -> str:
    """The protocol's one body table: a row per reported step of each run (run, streams,
    the headline and up to two more speeds with their per-stream readings, share of the
    plain roofline by the headline); held-prefill and queued levels said in the streams
    cell. At most :data:`BODY_COLUMNS` columns."""
    metrics = body_columns(proto)
    cols = [REPORT_METRICS[m] for m in metrics]
    header = (["Run", "Streams"] + [body_header(c) for c in cols]
              + [f"{metric_name(cols[0])} ÷ plain roofline (η = 1)"])
    out = []
    for run in runs:
        for s, n in body_steps(run):
            m = {**rows.get((run.name, s["step"], s["repeat"]), {}), **s}
            share = roofline_share(run, m, metrics[0])
            streams = _streams_cell(run, m) + (f" (median of {n} repeats)" if n > 1 else "")
            out.append([run_label(run), streams]
                       + [_body_cell(run, m, c) for c in cols]
                       + [md.num(share, "{:.0%}") if share is not None else
                          ("n/a (queued)" if is_queued(run, m) else "n/a")])
    assert len(header) <= BODY_COLUMNS
    return md.table(header, out)


def body_steps(run: Run) -> list[tuple[dict[str, Any], int]]:
    """The run's reported steps as the body shows them: one per level, the repeat whose
    end-to-end aggregate is the median where a level reports several (every repeat is in
    the appendix), with how many repeats it stands for."""
    by_level: dict[int, list[dict[str, Any]]] = {}
    for s in reported_steps(run):
        by_level.setdefault(s["step"], []).append(s)
    return [(median_step(v), len(v)) for _, v in sorted(by_level.items())]


def failed_steps_line(runs: list[Run]) -> str:
    """The steps a body table leaves out because they did not complete, each with its
    reason (nothing measured is dropped silently)."""
    bad = [(r, s) for r in runs for s in r.steps if s["status"] != "complete"]
    if not bad:
        return ""
    return "Not in the table: " + "; ".join(
        f"{r.name} step {s['step'] + 1} ({plural(s['streams'], 'stream')}, "
        f"{s.get('requests')} requests of {s.get('input_len') or 0:,} tokens) "
        f"{s['status']}: {s.get('reason') or 'no reason recorded'} (the run is kept as "
        f"recorded, marked {r.provenance.status})" for r, s in bad) + "."


def headline_sentence(proto: Protocol, run: Run, rows: dict[tuple[str, int, int], dict]
                      ) -> str | None:
    """A run's headline at its most streams (not queued, not held prefill): the protocol's
    headline figure, its per-stream speed and its share of the plain roofline, the run
    named."""
    metric = headline_metric(proto)
    col = REPORT_METRICS[metric]
    cands = [{**rows.get((run.name, s["step"], s["repeat"]), {}), **s}
             for s in reported_steps(run)]
    cands = [s for s in cands if s.get(col.key) is not None and not is_queued(run, s)
             and not row_is_held_prefill(s)]
    if not cands:
        return None
    s = max(cands, key=lambda s: (s["streams"], s.get("context_tokens_per_stream") or 0))
    v, per, share = s[col.key], per_stream(run, s, col), roofline_share(run, s, metric)
    n = s["streams"]
    text = (f"on {run.provenance.engine} ({run_label(run)}), {plural(n, 'stream')} of "
            f"{s.get('context_tokens_per_stream') or 0:,} tokens of context"
            f"{' each' if n != 1 else ''}: {md.num(v, col.fmt)} tok/s")
    if col.speed == "aggregate" and per is not None:
        text += f" summed, {per:,.1f} per stream"
    if share is not None:
        text += f", {share:.0%} of the plain roofline"
    return text


def replay_tally(proto: Protocol, verdicts: list[dict[str, Any]]) -> str:
    """How the published figures a protocol replays came out, by verdict kind."""
    ids = set(proto.source_claims)
    kinds = Counter(v["verdict"] for v in verdicts if v["id"] in ids)
    if not ids:
        return "It replays no published figure."
    if not kinds:
        return f"It replays {plural(len(ids), 'published figure')}; none has a verdict yet."
    parts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return (f"It replays {plural(len(ids), 'published figure')}: {parts} (each with its "
            "numbers in the appendix).")


def protocol_body(proto: Protocol, runs: list[Run], rows: dict[tuple[str, int, int], dict],
                  verdicts: list[dict[str, Any]], figures: dict[str, str]) -> str:
    """A protocol in the body: what it runs, its headline per engine at its most streams,
    how its replayed figures came out, its one table and its runs' figures."""
    col = REPORT_METRICS[headline_metric(proto)]
    heads = [h for h in (headline_sentence(proto, r, rows) for r in runs) if h]
    para = [plain_words(proto.description)]
    if heads:
        para.append(f"It answers with {in_prose(col)}: " + "; ".join(heads) + ".")
    para.append(replay_tally(proto, verdicts))
    out = [f"### {proto.name}", "", " ".join(para), "", body_table(proto, runs, rows), ""]
    bad = failed_steps_line(runs)
    if bad:
        out += [bad, ""]
    out += [f"![{r.name}]({figures[f'measured-{r.name}']})" for r in runs
            if f"measured-{r.name}" in figures]
    return "\n".join(out) + "\n"
