"""What the article notebooks draw, from the derived data: the tidy claims JSON and one
run-record JSON per run (data/derived/): the claim map, a roofline preset, the verdict
figure, a card's figures; and the paths every notebook shares (:func:`at_root`,
:func:`records`, :func:`save`, :func:`write_md`). Each figure function returns a figure
(and the Markdown shown beside it); the notebook saves it with :func:`save`. One run's
figure is :mod:`claimcheck.pipeline.run_figures`; the Update's documents
:mod:`claimcheck.pipeline.update_docs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claimcheck.claims.registryfiles import load_weight_rows
from claimcheck.figures import figstyle, plots
from claimcheck.files import mdtext
from claimcheck.files.paths import DERIVED, ROOT
from claimcheck.files.readers import read_json
from claimcheck.physics import roofline as rl
from claimcheck.physics.cardfiles import get_card, load_cards, load_ceilings
from claimcheck.physics.engine_inputs import model_dtype
from claimcheck.physics.inputs import state_words
from claimcheck.physics.modelfiles import geometry_from_file, load_config
from claimcheck.physics.units import GIB, MIB
from claimcheck.pipeline.derive import read_claims_json, read_run_records
from claimcheck.pipeline.presets import preset_roofline
from claimcheck.readings.definitions import is_queued as is_queued_streams
from claimcheck.readings.definitions import row_is_held_prefill, row_never_all_decoded
from claimcheck.verdicts import verdicts_md

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
    per-run figure (``per_run``, :data:`~claimcheck.figures.figstyle.RUN_FORMATS`); the
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
    x 1000 / TPOT is no aggregate of anything that ran; so is one whose requests never all
    decoded at once (``most_decoding_at_once`` below its streams: the others waited for a
    first token, as where the KV pool holds fewer requests than the step sends)."""
    return [{"card": r["card"], "streams": r["streams"],
             "aggregate_tok_s": r["streams_x_1000_over_median_tpot_tok_s"],
             "per_stream_tok_s": r["streams_x_1000_over_median_tpot_tok_s_per_stream"],
             "label": f"{r['run']} ({r['weights_label']})"}
            for r in rows if r["reported"] and r["status"] == "complete"
            and r.get("streams_x_1000_over_median_tpot_tok_s")
            and (card is None or r["card"] == card)
            and not is_queued_streams(r["streams"], r.get("max_num_seqs"))
            and not row_never_all_decoded(r)
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
    from claimcheck.verdicts.verdicts import KINDS
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
    w = src["memory_wall"]  # the one wall (physics.inputs.memory_wall), checked already
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


def card_figures(run_records: list[str] | None, card: str, model_config: str,
                 cards_csv: str, ceilings_csv: str, model_name: str, decode_base: str,
                 long_base: str, context_base: str, user_cards_csv: str | None = None
                 ) -> list[str]:
    """The three figures of one card's runs that the Update's body links (PNG + SVG each):
    decode against each format's bandwidth line (``decode_base``, no extension), what
    long prompts cost (``long_base``) and decode against context (``context_base``); the
    paths written. ``user_cards_csv``: a cards file merged over ``cards_csv``."""
    from claimcheck.figures import context_fig, h200_fig
    runs, _ = read_run_records(records(run_records))
    cards = load_cards(at_root(cards_csv), at_root(user_cards_csv) if user_cards_csv else None)
    geom = geometry_from_file(at_root(model_config))
    decode = h200_fig.decode_figure(runs, card, geom, cards,
                                    load_ceilings(at_root(ceilings_csv), cards), model_name)
    long = h200_fig.long_figure(runs, card, cards[card].name)
    context = context_fig.context_figure(runs, card, cards[card].name)
    return [str(p) for fig, base in ((decode, decode_base), (long, long_base),
                                     (context, context_base))
            for p in figstyle.save(fig, at_root(base))]


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

    from claimcheck.verdicts.verdicts import ABOVE_CARRIED, MATCHES_CARRIED, SHORT_CARRIED
    carried = (MATCHES_CARRIED, ABOVE_CARRIED, SHORT_CARRIED)

    def model_ratio(r: dict[str, Any]) -> tuple[float | None, float | None]:
        """The ratio to the model the verdict was read against, and its band's floor: the
        carried model (a point, no band) for its kinds, else the source's model."""
        if r["verdict"] in carried:
            return _ratio(r.get("claim_over_carried_model")), None
        return (_ratio(r.get("claim_over_source")),
                over(r.get("source_floor_tok_s"), r.get("source_model_tok_s")))

    pts = [{"verdict": r["verdict"],
            "claim_over_roofline": _ratio(r.get("claim_over_roofline")),
            "claim_over_source": model_ratio(r)[0],
            "floor_over_roofline": over(r.get("roofline_floor_tok_s"), r.get("roofline_tok_s")),
            "floor_over_source": model_ratio(r)[1]} for r in rows]
    return plots.verdict_figure(pts, verdicts_md.kinds_in_order(rows), source=(
        f"{verdicts_json} (one verdict per registry claim; claims from data/raw/claims.csv, "
        "shared/seeds/000-002); plain roofline at each claim's own card, weights, streams "
        "and context; right: the carried model (this card's runs carried to the claim's card "
        "by its datasheet) for its three kinds, else the source's model calibrated on its "
        "own published figures; grey bar: the band from the no-overlap floor (memory + "
        "compute) to the overlap ceiling (max of the two)"))


def _ratio(x: Any) -> float | None:
    """A ratio cell as a float; empty, zero or absent is None."""
    return float(x) if x not in (None, "") and float(x) > 0 else None
