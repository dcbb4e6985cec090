"""What each notebook draws, from the derived data: the tidy claims JSON and one run-record
JSON per run (data/derived/). Each function returns a figure and the Markdown shown beside
it; the notebook saves the figure with :func:`claimcheck.report.figstyle.save`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from claimcheck.core import gate
from claimcheck.core import roofline as rl
from claimcheck.core.cards import get_card, load_cards, load_ceilings
from claimcheck.core.definitions import is_queued as is_queued_streams
from claimcheck.core.definitions import row_is_held_prefill
from claimcheck.core.engine_inputs import model_dtype
from claimcheck.core.geometry import geometry_from_file, load_config
from claimcheck.core.inputs import load_weight_rows, state_words
from claimcheck.core.io import read_json
from claimcheck.core.paths import DERIVED, ROOT
from claimcheck.core.protocols import load_protocols
from claimcheck.core.units import GIB, MIB
from claimcheck.report import definitions_fig, figstyle, mdtext, plots, sections, verdicts_md
from claimcheck.report import steps as run_steps
from claimcheck.report.derive import read_claims_json, read_run_records
from claimcheck.report.plots import plural_streams
from claimcheck.report.presets import preset_roofline
from claimcheck.report.update import (
    REPORT_METRICS,
    headline_metric,
    in_prose,
    is_queued,
    per_stream,
    render_body,
    render_run_md,
    render_update,
    running_at_once,
)
from claimcheck.runio.frames import read_rows

TABLE_STREAMS = (1, 8, 16, 32, 64)


def at_root(path: str | Path) -> Path:
    """A notebook parameter path: relative to the repository root unless absolute."""
    return ROOT / path


def records(run_records: list[str] | None) -> list[Path]:
    """The run-record JSONs given, or (None) every one the derived rules wrote."""
    if run_records is None:
        return sorted((DERIVED / "runs").glob("*.json"))
    return [at_root(p) for p in run_records]


def save(fig: Any, out_base: str, per_run: bool = False) -> str:
    """Save a figure at ``out_base`` (no extension): PNG and SVG, or PNG only for a
    per-run figure (``per_run``, :data:`~claimcheck.report.figstyle.RUN_FORMATS`); the
    PNG's path."""
    formats = figstyle.RUN_FORMATS if per_run else figstyle.ARTICLE_FORMATS
    return str(figstyle.save(fig, at_root(out_base), formats)[0])


def write_md(md: str, out_md: str) -> None:
    """Write Markdown to ``out_md``, making its folder."""
    path = at_root(out_md)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(md)


def measured_points(rows: list[dict[str, Any]], card: str | None = None
                    ) -> list[dict[str, Any]]:
    """Reported, completed steps (of one card, or all) as points: streams, aggregate and
    per-stream tok/s by streams x 1000 / median TPOT (decode). A step with more streams
    than the server runs at once (max_num_seqs) is left out: its requests queue, so streams
    x 1000 / TPOT is no aggregate of anything that ran."""
    return [{"card": r["card"], "streams": r["streams"],
             "aggregate_tok_s": r["aggregate_tpot_tok_s"],
             "per_stream_tok_s": r["per_stream_tok_s"],
             "label": f"{r['run']} ({r['weights_label']})"}
            for r in rows if r["reported"] and r["status"] == "complete"
            and r.get("aggregate_tpot_tok_s") and (card is None or r["card"] == card)
            and not is_queued_streams(r["streams"], r.get("max_num_seqs"))
            and not row_is_held_prefill(r)]


PRESET_CONTEXT_BAND = (0.75, 1.25)
"""A measured step is drawn on a roofline preset when its context per stream lies within
this factor of the preset's (and its weights, state and KV match): a step at 8K tokens or on
FP8 weights has another roofline than the one drawn."""


def matches_preset(r: dict[str, Any], *, weight_gib: float, state_dtype: str, kv_dtype: str,
                   context: int) -> bool:
    """Whether a measured step ran the configuration a preset draws (weights GiB within
    1%, the same state and KV dtypes, context per stream in :data:`PRESET_CONTEXT_BAND`)."""
    w, ctx = r.get("roofline_weights_gib"), r.get("context_tokens_per_stream")
    lo, hi = PRESET_CONTEXT_BAND
    return bool(w and ctx and abs(w / weight_gib - 1) <= 0.01
                and r.get("roofline_state_dtype") == state_dtype
                and r.get("roofline_kv_dtype") == kv_dtype and lo <= ctx / context <= hi)


def _spec(r: dict[str, Any]) -> str:
    if (r["spec_method"] or "none") == "none":
        return "none"
    rows = r["spec_draft_tokens"] + 1 if r["spec_draft_tokens"] else "?"
    return f"{r['spec_method']}, {rows} rows"


def _mark(r: dict[str, Any], col: str, text: str) -> str:
    """A table cell, with ``*`` when the registry assumed the column's value."""
    assumed = set(filter(None, (r.get("assumed_fields") or "").split(",")))
    return f"{text}*" if col in assumed else text


def claim_map(claims_json: str, run_records: list[str] | None,
              verdicts_json: str | None = None) -> tuple[Any, str]:
    """Every claim on streams vs aggregate with its verdict, this project's measured points;
    and the per-stream table of the figures summed over 8 or more streams (assumed values
    marked ``*``)."""
    from claimcheck.core.verdicts import KINDS
    rows = read_claims_json(at_root(claims_json))
    verdict = {}
    if verdicts_json:
        verdict = {v["id"]: v["verdict"] for v in read_json(at_root(verdicts_json))}
    rows = [{**r, "verdict": verdict.get(r["id"])} for r in rows]
    _, steps = read_run_records(records(run_records))
    measured = measured_points(steps)
    fig = plots.claim_map(rows, measured, verdicts=list(KINDS), source=(
        "claims registry (shared/seeds/000-002; per-stream speed = aggregate / streams "
        "sharing it, derived); verdicts: data/derived/verdicts.csv; measured points: this "
        "project's runs in data/raw/runs (dummy weights), streams x 1000 / median TPOT"))
    many = sorted((r for r in rows if r["streams"] >= 8), key=lambda r: -r["aggregate_tok_s"])
    table = mdtext.table(
        ["Claim", "Card", "Streams (relation)", "Context / stream", "Speculation", "Metric",
         "Aggregate tok/s", "Per stream tok/s", "Verdict"],
        [[r["id"], _mark(r, "card", r["card"]),
          _mark(r, "streams", f"{r['streams']}")
          + (f" ({_mark(r, 'streams_running', format(r['streams_running'], 'g'))} running)"
             if r.get("streams_running") else "")
          + f" ({r['stream_relation'].replace('_', ' ')})",
          _mark(r, "context_tokens", str(r["context_tokens"] or "?")),
          _mark(r, "spec_method", _spec(r)), r["metric_label"],
          f"{r['aggregate_tok_s']:,.0f}", f"{r['per_stream_tok_s']:.1f}",
          r["verdict"] or "n/a"] for r in many],
        ["l", "l", "r", "r", "l", "l", "r", "r", "l"])
    head = (f"{len(rows)} claims from {len({r['seed'] for r in rows})} seed articles; "
            f"{len(measured)} measured points (streams x 1000 / median TPOT, decode). "
            "`*`: value assumed by the registry, not stated by the seed.\n\n")
    return fig, head + table


def roofline_preset(preset: dict[str, Any], *, model_config: str, model_name: str,
                    cards_csv: str, ceilings_csv: str, weights_csv: str, runs_dir: str,
                    claims_json: str, run_records: list[str] | None,
                    source: str = "preset", key: str = "preset",
                    user_cards_csv: str | None = None) -> tuple[Any, str]:
    """One roofline preset: curves per eta, bend, memory wall, the claims on its card
    without speculation and this project's measured points on its card. A preset that
    cannot be is refused naming ``source`` and ``key`` (:func:`preset_roofline`)."""
    geom = geometry_from_file(at_root(model_config))
    conv = model_dtype(load_config(at_root(model_config)))  # S with the conv state
    user = at_root(user_cards_csv) if user_cards_csv else user_cards_csv
    card = get_card(preset["card"], at_root(cards_csv), user)
    card_file = user_cards_csv if user and card.registry == str(user) else cards_csv
    base, src = preset_roofline(preset, geom, card, load_ceilings(at_root(ceilings_csv)),
                                load_weight_rows(at_root(weights_csv)), at_root(runs_dir),
                                conv_state_dtype=conv, source=source, key=key)
    streams = list(range(1, preset["max_streams"] + 1))
    curves, bends = {}, {}
    for e in preset["etas"]:
        m = base.with_(eta=e)
        curves[f"η = {e:g}"] = rl.curve(m, streams)
        bends[f"η = {e:g}"] = rl.bend_streams(m)
    w = src["memory_wall"]  # the one wall (core.inputs.memory_wall), checked already
    wall = w.streams if w else None
    wall_words = (f"memory wall: {w.streams:,} streams of {w.per_stream_bytes / MIB:,.1f} MiB "
                  f"in {w.free_bytes / GIB:.2f} GiB ({w.source})" if w else
                  "no memory wall (a stream holds no state or KV)")
    on_card = [r for r in read_claims_json(at_root(claims_json))
               if r["card"] == card.card and r["metric"] != "prefill"
               and (r["spec_method"] or "none") == "none"]
    _, steps = read_run_records(records(run_records))
    ctx = preset["context"]
    same = [r for r in steps if matches_preset(
        r, weight_gib=base.weight_bytes / GIB, state_dtype=src["state_dtype"],
        kv_dtype=src["kv_dtype"], context=ctx)]
    fig = plots.roofline_figure(
        curves, bends, wall, on_card, measured=measured_points(same, card.card),
        title=f"{model_name} on {card.name}: {src['weights']}, {src['state_dtype']} state, "
              f"{src['kv_dtype']} KV, {context_words(ctx)}",
        source=(f"model geometry from {model_config}; card from {card_file} "
                f"({card.sources['source_bandwidth']}); P = {src['tflops']:g} TFLOP/s "
                f"({src['tflops_source']}); claims without speculation from the claims "
                "registry (their own protocols); the roofline of shared/seeds/000; "
                f"measured: {runs_dir} on this card with these weights, state and KV "
                f"dtypes and {PRESET_CONTEXT_BAND[0]:g}-{PRESET_CONTEXT_BAND[1]:g}x this "
                "context per stream (dummy weights where so recorded); " + wall_words))
    rows = [[label, str(b), f"{pts[b - 1].step_ms:.2f}", pts[b - 1].bound,
             f"{pts[b - 1].aggregate_tok_s:,.0f}", f"{pts[b - 1].per_stream_tok_s:.1f}"]
            for label, pts in curves.items() for b in TABLE_STREAMS if b <= len(pts)]
    md = (f"{card.name}: W = {src['weights']}; BW = {card.memory_bw_gb_s:g} GB/s; "
          f"P = {src['tflops']:g} TFLOP/s ({src['tflops_source']}); "
          f"S = {base.state_bytes / MIB:g} MiB ({state_words(src)}); kappa = "
          f"{base.kv_bytes_per_token / 1024:g} KiB/token ({src['kv_dtype']}) x {ctx} tokens\n\n"
          "Decode only (no prefill); independent streams, all decoding; "
          f"{context_words(ctx)}; 1 row verified per step.\n\n"
          + mdtext.table(["", "Streams", "Step, ms", "Bound", "Aggregate tok/s",
                      "Per stream tok/s"], rows, ["l", "r", "r", "l", "r", "r"])
          + f"\n\nBends: { {k: round(v, 1) for k, v in bends.items()} }; {wall_words}; "
          f"B=1 ceiling (weights only, eta = 1): {rl.ceiling_b1_tok_s(base):.1f} tok/s")
    return fig, md


def context_words(tokens: int) -> str:
    """A preset's context per stream in words; 0 means the preset counts no context KV."""
    if not tokens:
        return "no context KV counted (weights and state only)"
    return f"{tokens:,} tokens of context per stream"


def measured_run(run_record: str, claims_json: str, model_config: str) -> tuple[Any, str]:
    """One run against the roofline at its own configuration, headlined by the metric its
    protocol answers with (:func:`claimcheck.report.update.headline_metric`), with every
    published figure the protocol replays; and its Markdown section."""
    (run,), steps = read_run_records([at_root(run_record)])
    claims = read_claims_json(at_root(claims_json))
    md = render_run_md(run, steps, claims)
    # a held-prefill step (2 tokens out) is a prefill rate, said in the section, not a point
    kept = [s for s in steps if s["reported"] and s["status"] == "complete"
            and not row_is_held_prefill(s)]
    if not kept and run.provenance.status != "complete":  # nothing measured to draw
        return figstyle.notice(f"{run.name}: run {run.provenance.status}, no step to draw\n"
                               f"{run.provenance.failure}"), md
    done = [s for s in steps if s["reported"] and s["status"] == "complete"]
    if not kept and done and all(row_is_held_prefill(s) for s in done):
        return wave_run_figure(run, done, claims), md  # no throughput answer: its TTFTs
    if run.protocol.gate:
        return gate_run_figure(run, steps, model_config, claims), md
    if "lanes_stats" in run.protocol.metrics and kept:
        return lanes_run_figure(run, kept[-1], claims), md
    metric = headline_metric(run.protocol)
    col = REPORT_METRICS[metric]
    e2e_key = "e2e_output_tok_s"  # the record's end-to-end aggregate
    points, queued = [], []
    for s in kept:
        v = s.get(col.key)
        if col.streams_times_tpot and is_queued(run, s):
            # streams x 1000 / TPOT would divide by streams that never ran at once: the
            # level is drawn by end to end only, against the line of the streams running
            queued.append({"streams": s["streams"], "running": running_at_once(run, s),
                           "e2e": s.get(e2e_key)})
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
    fig = plots.measured_figure(
        points, queued=queued, title=f"{run.name}: {run.label}", headline=in_prose(col),
        claims=replayed_points(run, claims, metric),
        source=(f"{run.path} (provenance.json, bench.json, server.log, telemetry.csv); "
                f"{run.provenance.weights_label}; roofline from {model_config} and "
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
                    claims: list[dict[str, Any]] | None = None) -> Any:
    """What a run whose every reported step asks at most two tokens per request measures:
    each request's time to first token (ms) against its place in the wave (1 = sent first,
    by send time), one series per step and repeat (bench.json timelines)."""
    data = run_steps.load(at_root(run.path))
    keep = {(s["step"], s["repeat"]) for s in done}
    series = []
    for sd in data.steps:
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
    return plots.wave_figure(
        series, title=f"{run.name}: {run.label}",
        source=(f"{run.path}/steps/*/bench.json (each request's send time and first "
                f"token); {run.provenance.weights_label}; every request asks "
                f"{max(s['output_len'] for s in done)} tokens, so a step has no decode "
                "to set against a roofline"
                + (f"; the published figures this protocol replays are throughputs, not "
                   f"times to first token, so none is drawn: {named}" if named else "")))


def gate_run_figure(run: Any, rows: list[dict[str, Any]], model_config: str,
                    claims: list[dict[str, Any]] | None = None) -> Any:
    """The serving-gate figure of a run whose protocol has a ``gate``: every completed
    repeat's end-to-end aggregate grouped by level (:mod:`claimcheck.core.gate`), with the
    published figures the protocol replays."""
    g = gate.Gate.from_dict(run.protocol.gate)
    seqs = run.provenance.engine_config.max_num_seqs
    lrows = [gate.LevelRow(streams=r["streams"], aggregate_tok_s=r["e2e_output_tok_s"],
                           reference=sections.is_reference(run.protocol, r),
                           roofline_tok_s=r.get("roofline_tok_s"))
             for r in rows if r["status"] == "complete" and r.get("e2e_output_tok_s")]
    res = gate.check(lrows, g, seqs)
    line = ("gate passes" if res.passed else "gate fails: " + "; ".join(res.failures))
    line += "".join(f"; plateau {p.from_streams} -> {p.to_streams} streams "
                    f"({p.growth_pct:+.1f}%), set by {p.cause}" for p in res.plateaus)
    return plots.gate_figure(
        list(res.levels), seqs, line, title=f"{run.name}: {run.label}",
        claims=replayed_points(run, claims or [], headline_metric(run.protocol)),
        source=(f"{run.path} (bench.json per repeat); {run.provenance.weights_label}; "
                f"roofline from {model_config} and data/raw/cards.csv at η = 1; published "
                "figures: the claims registry rows this protocol replays, on their own "
                "cards"))


def lanes_run_figure(run: Any, step: dict[str, Any],
                     claims: list[dict[str, Any]] | None = None) -> Any:
    """The lanes timeline of a run whose protocol measures ``lanes_stats``: the reported
    step's lanes from its token timeline (bench.json) and its rebuilt stats line, the plain
    roofline at its streams and context and the published figures the protocol replays.
    The load came from the protocol's own client (its ``kind``), named in the source."""
    data = run_steps.load(at_root(run.path))
    sd = next(s for s in data.steps if (s.record["step"], s.record["repeat"])
              == (step["step"], step["repeat"]))
    tl = sd.timeline
    return plots.lanes_figure(
        [(r.start_s, r.first_token_s, r.last_token_s) for r in tl.requests],
        list(tl.token_times()), step.get("lanes_stats") or "",
        title=f"{run.name}: {run.label}",
        roofline_tok_s=step.get("roofline_tok_s"),
        claims=replayed_points(run, claims or [], headline_metric(run.protocol)),
        source=(f"{run.path}/steps/{sd.record['dir']}/bench.json (per-token times and "
                f"usage token counts, written by "
                f"{definitions_fig.load_client(run.protocol.kind).split(':')[0]}); "
                f"{run.provenance.weights_label}; plain roofline at η = 1 at the step's "
                "streams and context; published figures: the claims registry rows this "
                "protocol replays, on their own cards"))


def card_figures(run_records: list[str] | None, card: str, model_config: str,
                 cards_csv: str, ceilings_csv: str, model_name: str, decode_base: str,
                 long_base: str, context_base: str) -> list[str]:
    """The three figures of one card's runs that the Update's body links (PNG + SVG each):
    decode against each format's bandwidth line (``decode_base``, no extension), what
    long prompts cost (``long_base``) and decode against context (``context_base``); the
    paths written."""
    from claimcheck.report import context_fig, h200_fig
    runs, steps = read_run_records(records(run_records))
    cards = load_cards(at_root(cards_csv))
    geom = geometry_from_file(at_root(model_config))
    decode = h200_fig.decode_figure(runs, steps, card, geom, cards,
                                    load_ceilings(at_root(ceilings_csv), cards), model_name)
    long = h200_fig.long_figure(runs, steps, card, cards[card].name)
    context = context_fig.context_figure(runs, steps, card, cards[card].name)
    return [str(p) for fig, base in ((decode, decode_base), (long, long_base),
                                     (context, context_base))
            for p in figstyle.save(fig, at_root(base))]


def update_section(run_records: list[str] | None, claims_json: str, card: str,
                   figures: dict[str, str] | None, protocols_yaml: str | None = None,
                   model_config: str | None = None, model_name: str | None = None,
                   cards_csv: str | None = "data/raw/cards.csv") -> str:
    """The Update section (figures/update.md) for the runs of one card; ``figures`` maps
    a figure name to its link relative to figures/; ``cards_csv`` gives each card's rated
    board power for the claims' per-nominal-watt figures."""
    runs, steps = read_run_records(records(run_records))
    nominal = ({k: c.default_power_w for k, c in load_cards(at_root(cards_csv)).items()
                if c.default_power_w} if cards_csv else None)
    defined = load_protocols(at_root(protocols_yaml)) if protocols_yaml else {}
    protocols = sorted(defined) if protocols_yaml else None
    geom = geometry_from_file(at_root(model_config)) if model_config else None
    return render_update(runs, steps, read_claims_json(at_root(claims_json)), card,
                         figures or {}, protocols, model_name, geom, nominal,
                         descriptions={k: p.description for k, p in defined.items()})


def update_documents(run_records: list[str] | None, claims_json: str, card: str,
                     figures: dict[str, str] | None, protocols_yaml: str | None = None,
                     model_config: str | None = None, model_name: str | None = None,
                     verdicts_json: str | None = None, model_csv: str | None = None,
                     definitions_links: dict[str, str] | None = None,
                     appendix_link: str = "update-appendix.md",
                     verdict_figure: str | None = None,
                     cards_csv: str | None = "data/raw/cards.csv",
                     beforehand_csv: str | None = None) -> tuple[str, str]:
    """The Update as an article prints it (the body, figures/update.md) and its appendix
    (every step of every run, each protocol's blocks, every verdict line, the model table,
    the predictions kept before a run (``beforehand_csv``), each run's provenance), from
    the same run records, verdicts and tables."""
    runs, steps = read_run_records(records(run_records))
    verdicts = read_json(at_root(verdicts_json)) if verdicts_json else []
    model_rows = read_rows(at_root(model_csv)) if model_csv else []
    geom = geometry_from_file(at_root(model_config)) if model_config else None
    protocols = sorted(load_protocols(at_root(protocols_yaml))) if protocols_yaml else None
    log: list[str] = []
    before = read_rows(at_root(beforehand_csv)) if beforehand_csv else None
    body = render_body(runs, steps, card, figures or {}, verdicts, model_rows,
                       appendix_link, model_name, geom, verdict_figure, protocols, log=log,
                       before_rows=before)
    for line in log:  # the render's log: each finding left out, and why
        print(line, file=sys.stderr)
    appendix = ("# Update: appendix\n\nThe tables and lines behind [the Update](update.md): "
                "every step of every run, each protocol's blocks in full, each run's "
                "provenance, the definitions figures, the model table and every verdict "
                "with its numbers.\n\n"
                + update_section(run_records, claims_json, card, figures, protocols_yaml,
                                 model_config, model_name, cards_csv))
    if definitions_links:
        appendix += "\n" + verdicts_md.render_definitions_links(definitions_links)
    if model_rows:
        appendix += "\n" + verdicts_md.render_model(model_rows)
    if beforehand_csv:  # the predictions kept before a run, against it
        from claimcheck.report.beforehand import appendix_section
        appendix += "\n" + appendix_section(read_rows(at_root(beforehand_csv)))
    if verdicts:
        appendix += "\n" + verdicts_md.render_verdicts(verdicts)
    return body, appendix


def verdict_figure(verdicts_json: str) -> Any:
    """The verdict figure: each claim's ratio to its card's plain roofline and to its
    source-calibrated model's ceiling (verdicts-table columns claim_over_roofline and
    claim_over_source; the second may be absent), marked by verdict kind, each drawn on its
    band: from the no-overlap floor (``roofline_floor_tok_s``, ``source_floor_tok_s``) over
    the ceiling, to 1."""
    rows = read_json(at_root(verdicts_json))

    def over(a: Any, b: Any) -> float | None:
        a, b = _ratio(a), _ratio(b)
        return a / b if a and b else None

    pts = [{"verdict": r["verdict"],
            "claim_over_roofline": _ratio(r.get("claim_over_roofline")),
            "claim_over_source": _ratio(r.get("claim_over_source")),
            "floor_over_roofline": over(r.get("roofline_floor_tok_s"), r.get("roofline_tok_s")),
            "floor_over_source": over(r.get("source_floor_tok_s"),
                                      r.get("source_model_tok_s"))} for r in rows]
    return plots.verdict_figure(pts, verdicts_md.kinds_in_order(rows), source=(
        f"{verdicts_json} (one verdict per registry claim; claims from data/raw/claims.csv, "
        "shared/seeds/000-002); plain roofline at each claim's own card, weights, streams "
        "and context; source models calibrated on each source's own published figures; "
        "grey bar: the band from the no-overlap floor (memory + compute) to the overlap "
        "ceiling (max of the two)"))


def _ratio(x: Any) -> float | None:
    """A ratio cell as a float; empty, zero or absent is None."""
    return float(x) if x not in (None, "") and float(x) > 0 else None
