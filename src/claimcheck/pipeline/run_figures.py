"""One run's figure and Markdown section (the measured notebook, ``claimcheck report``):
the run against the roofline at its own configuration, headlined by its protocol's
metric, or, by what the run measured, its serving gate, its lanes timeline or its wave of
times to first token; each with the published figures the protocol replays. Units: tok/s
(aggregate summed over the streams; per stream), ms.
"""

from __future__ import annotations

from typing import Any

from claimcheck.figures import definitions_fig, figstyle, run_plots
from claimcheck.figures.run_plots import plural_streams
from claimcheck.pipeline.derive import read_claims_json, read_run_records
from claimcheck.pipeline.figures import at_root
from claimcheck.readings import gate
from claimcheck.readings.definitions import row_is_held_prefill, row_never_all_decoded
from claimcheck.runs.run import load_run
from claimcheck.update import sections
from claimcheck.update.update import render_run_md
from claimcheck.update.update_metrics import (
    REPORT_METRICS,
    headline_metric,
    in_prose,
    is_queued,
    per_stream,
    running_at_once,
)


def _cards(user_cards_csv: str | None) -> Any:
    """The registry with ``user_cards_csv`` merged over it (None or empty: the registry)."""
    from claimcheck.physics.cardfiles import load_cards
    return load_cards(user_path=at_root(user_cards_csv) if user_cards_csv else None)


def run_title(run: Any) -> str:
    """A measured-run figure's title: the run and its label, and for a run that did not
    complete, its status (the figure draws the steps it completed)."""
    title = f"{run.name}: {run.label}"
    status = run.provenance.status
    return title if status == "complete" else f"{title} · run {status}: its complete steps"


def measured_run(run_record: str, claims_json: str, model_config: str,
                 user_cards_csv: str | None = None) -> tuple[Any, str]:
    """One run against the roofline at its own configuration, headlined by the metric its
    protocol answers with (:func:`claimcheck.update.update_metrics.headline_metric`), with every
    published figure the protocol replays; and its Markdown section. A figure that reads the
    run's own files checks its card against the registry and ``user_cards_csv``."""
    (run,), steps = read_run_records([at_root(run_record)])
    claims = read_claims_json(at_root(claims_json))
    md = render_run_md(run, claims)
    # a held-prefill step (2 tokens out) is a prefill rate, said in the section, not a point
    kept = [s for s in steps if s["reported"] and s["status"] == "complete"
            and not row_is_held_prefill(s)]
    if not kept and run.provenance.status != "complete":  # nothing measured to draw
        return figstyle.notice(f"{run.name}: run {run.provenance.status}, no step to draw\n"
                               f"{run.provenance.failure}"), md
    done = [s for s in steps if s["reported"] and s["status"] == "complete"]
    if not kept and done and all(row_is_held_prefill(s) for s in done):
        # no throughput answer: its TTFTs
        return wave_run_figure(run, done, claims, user_cards_csv), md
    if run.protocol.gate:
        return gate_run_figure(run, steps, model_config, claims), md
    if "lanes_stats" in run.protocol.metrics and kept:
        return lanes_run_figure(run, kept[-1], claims, user_cards_csv), md
    metric = headline_metric(run.protocol)
    col = REPORT_METRICS[metric]
    e2e_key = "e2e_aggregate_tok_s"  # the record's end-to-end aggregate
    points, queued = [], []
    for s in kept:
        v = s.get(col.key)
        never = row_never_all_decoded(s)
        if (col.streams_times_tpot and (is_queued(run, s) or never)) or (v is None and never):
            # streams x 1000 / TPOT would divide by streams that never ran at once (queued
            # in the server, or waiting for a first token inside the engine), and a rate
            # read while all streams decode has no value where they never all did: the
            # level is drawn by end to end only, against the line of the streams running
            slots = is_queued(run, s)
            queued.append({"streams": s["streams"], "e2e": s.get(e2e_key),
                           "running": (running_at_once(run, s) if slots
                                       else s["most_decoding_at_once"]),
                           "why": "slots" if slots else "waited"})
            continue
        if v is None:
            continue
        agg = v if col.speed == "aggregate" else v * s["streams"]
        points.append({"streams": s["streams"], "context": s.get("context_tokens_per_stream"),
                       "headline": agg,
                       "headline_per_stream": per_stream(run, s, col) or v,
                       "e2e": s.get(e2e_key) if col.key != e2e_key else None,
                       "roofline_tok_s": s.get("roofline_tok_s"),
                       "roofline_per_stream_tok_s": s.get("roofline_per_stream_tok_s")})
    roof_at = {p["streams"]: p["roofline_tok_s"] for p in points}
    for q in queued:
        q["roofline_tok_s"] = roof_at.get(q["running"])
    fig = run_plots.measured_figure(
        points, queued=queued, title=run_title(run), headline=in_prose(col),
        drafts=run.drafts,
        claims=replayed_points(run, claims, metric),
        source=(f"{run.path} (provenance.json, bench.json, server.log, telemetry.csv); "
                f"{run.provenance.weights_label}"
                + (f", {run.acceptance}" if run.acceptance else "")
                + f"; roofline from {model_config} and "
                "data/raw/cards.csv at η = 1; published figures: the claims registry rows "
                "this protocol replays, on their own cards"))
    return fig, md


def replayed_points(run: Any, claims: list[dict[str, Any]], metric: str
                    ) -> list[dict[str, Any]]:
    """The published figures a run's protocol replays, as points (streams sharing the
    aggregate, aggregate and per-stream tok/s, the card, whether by ``metric``)."""
    ids = set(run.protocol.source_claims)
    return [{"streams": c.get("streams_running") or c["streams"],
             "aggregate_tok_s": c["aggregate_tok_s"], "per_stream_tok_s": c["per_stream_tok_s"],
             "card": c["card"], "id": c["id"], "metric": c["metric"],
             "context": c.get("context_tokens") or None,
             "same": c["metric"] == metric} for c in claims if c["id"] in ids]


def wave_run_figure(run: Any, done: list[dict[str, Any]],
                    claims: list[dict[str, Any]] | None = None,
                    user_cards_csv: str | None = None) -> Any:
    """What a run whose every reported step asks at most two tokens per request measures:
    each request's time to first token (ms) against its place in the wave (1 = sent first,
    by send time), one series per step and repeat (bench.json timelines)."""
    data = load_run(at_root(run.path), _cards(user_cards_csv))
    keep = {(s["step"], s["repeat"]) for s in done}
    series = []
    for sd in data.traces:
        rec = sd.record
        if (rec["step"], rec["repeat"]) not in keep or sd.timeline is None:
            continue
        reqs = sorted(sd.timeline.requests, key=lambda r: r.start_s)
        series.append({"label": f"{plural_streams(rec['streams'])}, "
                                f"{rec['input_len']:,}-token prompts",
                       "repeat": rec["repeat"],
                       "ttft_ms": [1000 * r.ttft_s for r in reqs]})
    replayed = replayed_points(run, claims or [], headline_metric(run.protocol))
    named = "; ".join(f"{c['id']} ({c['card']})" for c in replayed)
    return run_plots.wave_figure(
        series, title=run_title(run),
        source=(f"{run.path}/steps/*/bench.json (each request's send time and first "
                f"token); {run.provenance.weights_label}; every request asks "
                f"{max(s['output_len'] for s in done)} tokens, so a step has no decode "
                "to set against a roofline"
                + (f"; the published figures this protocol replays are throughputs, not "
                   f"times to first token, so none is drawn: {named}" if named else "")))


def gate_run_figure(run: Any, rows: list[dict[str, Any]], model_config: str,
                    claims: list[dict[str, Any]] | None = None) -> Any:
    """The serving-gate figure of a run whose protocol has a ``gate``: every completed
    repeat's end-to-end aggregate grouped by level (:mod:`claimcheck.readings.gate`), with the
    published figures the protocol replays."""
    g = gate.Gate.from_dict(run.protocol.gate)
    seqs = run.provenance.engine_config.max_num_seqs
    lrows = [gate.LevelRow(streams=r["streams"], aggregate_tok_s=r["e2e_aggregate_tok_s"],
                           reference=sections.is_reference(run.protocol, r),
                           roofline_tok_s=r.get("roofline_tok_s"))
             for r in rows if r["status"] == "complete" and r.get("e2e_aggregate_tok_s")]
    res = gate.check(lrows, g, seqs)
    line = ("gate passes" if res.passed else "gate fails: " + "; ".join(res.failures))
    line += "".join(f"; plateau {p.from_streams} -> {p.to_streams} streams "
                    f"({p.growth_pct:+.1f}%), set by {p.cause}" for p in res.plateaus)
    return run_plots.gate_figure(
        list(res.levels), seqs, line, title=run_title(run),
        claims=replayed_points(run, claims or [], headline_metric(run.protocol)),
        source=(f"{run.path} (bench.json per repeat); {run.provenance.weights_label}; "
                f"roofline from {model_config} and data/raw/cards.csv at η = 1; published "
                "figures: the claims registry rows this protocol replays, on their own "
                "cards"))


def lanes_run_figure(run: Any, step: dict[str, Any],
                     claims: list[dict[str, Any]] | None = None,
                     user_cards_csv: str | None = None) -> Any:
    """The lanes timeline of a run whose protocol measures ``lanes_stats``: the reported
    step's lanes from its token timeline (bench.json) and its rebuilt stats line, the plain
    roofline at its streams and context and the published figures the protocol replays.
    The load came from the protocol's own client (its ``kind``), named in the source."""
    data = load_run(at_root(run.path), _cards(user_cards_csv))
    sd = next(s for s in data.traces if (s.record["step"], s.record["repeat"])
              == (step["step"], step["repeat"]))
    tl = sd.timeline
    return run_plots.lanes_figure(
        [(r.start_s, r.first_token_s, r.last_token_s) for r in tl.requests],
        tl.token_times(), step.get("lanes_stats") or "",
        title=run_title(run),
        roofline_tok_s=step.get("roofline_tok_s"),
        claims=replayed_points(run, claims or [], headline_metric(run.protocol)),
        source=(f"{run.path}/steps/{sd.record['dir']}/bench.json (per-token times and "
                f"usage token counts, written by "
                f"{definitions_fig.load_client(run.protocol.kind).split(':')[0]}); "
                f"{run.provenance.weights_label}; plain roofline at η = 1 at the step's "
                "streams and context; published figures: the claims registry rows this "
                "protocol replays, on their own cards"))
