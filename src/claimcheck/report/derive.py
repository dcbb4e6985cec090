"""The pipeline's derived data (data/derived/), one function per Snakemake rule.

Tidy tables are CSV for people and JSON for the figures (typed, null for absent, full
precision); each run directory becomes one run-record JSON that every figure of the run
reads. Paths are arguments; nothing here knows about Snakemake.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from claimcheck.core.cards import load_cards, load_ceilings
from claimcheck.core.claims import bound_words, load_claims
from claimcheck.core.errors import InputError
from claimcheck.core.geometry import geometry_from_file, load_config
from claimcheck.core.inputs import compute_ceiling, load_weight_rows
from claimcheck.core.io import dumps_json, read_json
from claimcheck.report import steps as run_steps
from claimcheck.report.record import Run, load_run, run_from_json, run_to_json
from claimcheck.report.steps import timeline_columns
from claimcheck.report.tables import claim_roofline, run_rows, write_csv
from claimcheck.report.update import metric_columns


def write_json(obj: Any, path: str | Path) -> None:
    """Write JSON (no NaN, keys in insertion order, one trailing newline), making the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_json(obj, indent=1) + "\n")


def claims_table(claims_csv: str | Path, cards_csv: str | Path, out: str | Path,
                 out_json: str | Path | None = None) -> int:
    """Tidy claims with derived per-stream and aggregate tok/s. Returns the row count."""
    claims = load_claims(claims_csv, cards=set(load_cards(cards_csv)))
    rows = [c.tidy() for c in claims]
    write_csv(rows, out)
    if out_json:
        write_json(rows, out_json)
    return len(claims)


def read_claims_json(path: str | Path) -> list[dict[str, Any]]:
    """The tidy claims rows written by :func:`claims_table`."""
    return read_json(path)


def claims_roofline_table(claims_csv: str | Path, cards_csv: str | Path,
                          ceilings_csv: str | Path, weights_csv: str | Path,
                          config_json: str | Path, out: str | Path,
                          etas: tuple[float, ...] = (1.0, 0.79)) -> int:
    """The roofline at each claim's own configuration, for each eta. Returns rows written."""
    cards = load_cards(cards_csv)
    claims = load_claims(claims_csv, cards=set(cards))
    geom = geometry_from_file(config_json)
    ceilings, weight_rows = load_ceilings(ceilings_csv), load_weight_rows(weights_csv)
    rows = []
    for c in claims:
        for eta in etas:
            r = claim_roofline(c, geom, cards, ceilings, eta=eta, weight_rows=weight_rows)
            rows.append({"id": c["id"], "card": c["card"], "streams": c["streams"],
                         "metric": c["metric"], "value": c["value"],
                         "aggregate_tok_s": c.aggregate_tok_s,
                         "per_stream_tok_s": c.per_stream_tok_s, "eta": eta, **r})
    write_csv(rows, out)
    return len(rows)


def run_record(run_dir: str | Path, cards_csv: str | Path, ceilings_csv: str | Path,
               config_json: str | Path, out: str | Path) -> int:
    """One run directory read once, with every step's roofline, as one JSON. Returns the
    number of steps."""
    run = load_run(run_dir)
    return write_run_record(run, run_steps.load(run.path, run), geometry_from_file(config_json),
                            load_cards(cards_csv), load_ceilings(ceilings_csv), out)


def write_run_record(run: Run, data: run_steps.RunData, geom: Any, cards: Any, ceilings: Any,
                     out: str | Path) -> int:
    """The run-record JSON of a read run (``data``: its steps with timelines, from
    :func:`claimcheck.report.steps.load`) against read registries. Returns the number of
    steps."""
    run = with_timeline(run, data)
    metric_columns(run.protocol, str(Path(run.path) / "provenance.json"))  # known metrics only
    rows = run_rows([run], geom, cards, ceilings=ceilings)
    write_json(run_to_json(run, rows), out)
    return len(rows)


def with_timeline(run: Run, data: run_steps.RunData | None = None) -> Run:
    """The run with each completed step's row holding the timeline definitions too
    (:func:`claimcheck.report.steps.timeline_columns`); the record's own keys win."""
    cols = timeline_columns(run, data)
    steps = [{**cols.get((s["step"], s["repeat"]), {}), **s}
             if s["status"] == "complete" else s for s in run.steps]
    return dataclasses.replace(run, steps=steps)


def read_run_records(paths: list[str | Path]) -> tuple[list[Run], list[dict[str, Any]]]:
    """Runs and their step rows from run-record JSONs (as :func:`run_record` wrote them)."""
    runs, rows = [], []
    for p in paths:
        run, r = run_from_json(read_json(p), str(p))
        runs.append(run)
        rows += r
    return runs, rows


def runs_table(records: list[str | Path], out: str | Path) -> int:
    """Every step of every recorded run (from the run records), with provenance and
    roofline."""
    _, rows = read_run_records(records)
    write_csv(rows, out)
    return len(rows)


def stale_run_outputs(patterns: list[str], runs: list[str],
                      root: str | Path = ".") -> list[Path]:
    """Files matching ``patterns`` (each with one ``{run}``), under ``root``, whose run is not
    in ``runs``: the outputs of deleted runs, for the workflow to remove."""
    stale = []
    for pattern in patterns:
        head, tail = pattern.split("{run}")
        folder, prefix = os.path.split(head)
        for p in sorted((Path(root) / folder).glob(f"{prefix}*{tail}")):
            run = p.name[len(prefix):len(p.name) - len(tail)]
            if run not in runs:
                stale.append(p)
    return stale


def main(argv: list[str] | None = None) -> int:
    """``python -m claimcheck.report.derive run-record RUN_DIR OUT``: one run record, as the
    workflow makes it. Bad input ends with one line naming the file and key (exit 2)."""
    ap = argparse.ArgumentParser(prog="python -m claimcheck.report.derive")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run-record", help="read one run directory into its run-record JSON")
    r.add_argument("run_dir")
    r.add_argument("out")
    r.add_argument("--cards", default="data/raw/cards.csv")
    r.add_argument("--ceilings", default="data/raw/ceilings.csv")
    r.add_argument("--model-config", default="data/raw/models/qwen3.8-27b/config.json")
    a = ap.parse_args(argv)
    try:
        n = run_record(a.run_dir, a.cards, a.ceilings, a.model_config, a.out)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{a.out}: {n} steps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ------------------------------------------------------- issue 11: metrics, model, verdicts

def metrics_csv(run_dir: str | Path, out: str | Path) -> int:
    """Every definition for every step of one run (:func:`claimcheck.report.steps.metrics_table`)
    as CSV. Returns the row count."""
    return write_metrics_csv(run_steps.load(run_dir), out)


def write_metrics_csv(data: run_steps.RunData, out: str | Path) -> int:
    """:func:`metrics_csv` of a run already read. Returns the row count."""
    rows = run_steps.metrics_table(data)
    write_csv(rows, out)
    return len(rows)


def model_rows(run_dirs: list[str | Path], unmodelled: list[str] | None = None
               ) -> list[dict[str, Any]]:
    """Predicted / measured end to end and decode aggregate for every step of every run,
    each calibrated by the stated rule (:func:`claimcheck.report.modeltable.table_rows`)."""
    from claimcheck.report.modeltable import table_rows
    return table_rows([run_steps.load(p) for p in run_dirs], unmodelled)


def model_table(run_dirs: list[str | Path], out: str | Path,
                unmodelled: list[str] | None = None) -> int:
    """:func:`model_rows` as CSV (runs left out named in ``unmodelled``). Returns the row
    count."""
    rows = model_rows(run_dirs, unmodelled)
    write_csv(rows, out)
    return len(rows)


def _inflation(steps: list[dict[str, Any]], column: str, streams: float
               ) -> tuple[float | None, str]:
    """Median ratio of ``column`` to end to end over the measured steps nearest in streams
    (log distance); None when no step has the column. ``steps`` hold no held-prefill step."""
    import math
    import statistics
    ok = [r for r in steps if r.get(column) and r.get("e2e_aggregate_tok_s")]
    if not ok or not streams:
        return None, ""
    near = min(abs(math.log(r["streams"] / streams)) for r in ok)
    pick = [r for r in ok if abs(math.log(r["streams"] / streams)) == near]
    ratio = statistics.median(r[column] / r["e2e_aggregate_tok_s"] for r in pick)
    return ratio, (f"median over {len(pick)} measured step(s) at {pick[0]['streams']:g} "
                   f"streams, {column_label(column)} / end to end")


def _seed_aggregate(c: Any, claims: list[Any]) -> Any:
    """For a per-stream figure whose window is not stated, the aggregate figure the seed
    gives for the same run (the first registry row of that run with an aggregate metric),
    else None: the per-request figure summed over the requests in flight must not stand
    against the seed's own aggregate."""
    from claimcheck.core.metrics import METRICS
    m = METRICS[c["metric"]]
    if m.scope != "per_stream" or m.phase != "unspecified":
        return None
    for o in claims:
        if o["run"] == c["run"] and o["id"] != c["id"] and \
                METRICS[o["metric"]].scope == "aggregate" and o["streams"] == c["streams"]:
            return o
    return None


def _metric_columns() -> dict[str, str]:
    """Registry metric -> the measured step column that reads it."""
    from claimcheck.core.definitions import REGISTRY_METRIC
    column = {m: c for c, m in REGISTRY_METRIC.items() if m}
    return column | {"single_stream_decode": "per_request_decode_tok_s",
                     "engine_log_line": "engine_log_steady_tok_s"}


METRIC_COLUMN = _metric_columns()
AGGREGATE_COLUMNS = [c for c in METRIC_COLUMN.values()
                     if c not in ("prefill_tok_s", "per_request_decode_tok_s")]


def column_label(column: str) -> str:
    """Plain words for a measured step column: its registry metric's label."""
    from claimcheck.core.definitions import REGISTRY_METRIC
    from claimcheck.core.metrics import METRICS
    m = REGISTRY_METRIC.get(column)
    return METRICS[m].label if m in METRICS else column.replace("_", " ")


def comparable_steps(step_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The measured steps a claim may be set against: completed, with a roofline, and not a
    held-prefill step (2 tokens or fewer out per request: a prefill rate, no decode)."""
    from claimcheck.core.definitions import is_held_prefill
    return [s for s in step_rows if s.get("status") == "complete"
            and not is_held_prefill(s.get("output_len")) and s.get("roofline_tok_s")]


def protocol_replays(c: Any, protocols: list[str], steps: list[dict[str, Any]],
                     column: str | None) -> tuple[list[dict[str, Any]], Any]:
    """Each protocol naming claim ``c`` set beside it: every run of it (reported steps at the
    claim's requested streams, from :func:`comparable_steps`). A run on the claim's own card
    is a reproduction (:class:`claimcheck.core.verdicts.Reproduction`: the median under the
    claim's definition, or the range of every aggregate definition when it is not stated;
    with several protocols or runs, the range of theirs, each named with its own value);
    a run on another card is context (``protocol``, ``run``, ``card``, ``fraction`` of its
    plain roofline, ``definition``, ``streams``). Returns (context replays, reproduction or
    None)."""
    import statistics

    from claimcheck.core import verdicts as v
    from claimcheck.core.metrics import METRICS
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
            frac = v.replay_fraction([s[k] * (s["streams"] if per else 1) for s in ok],
                                     [s["roofline_tok_s"] for s in ok])
            if frac is not None:
                replays.append({"protocol": proto, "run": run, "card": rs[0]["card"],
                                "fraction": frac, "definition": column_label(k),
                                "streams": c["streams"]})
    if not own:
        return replays, None
    return replays, v.Reproduction(min(x[0] for x in own), max(x[1] for x in own),
                                   "; ".join(x[2] for x in own))


def _e2e_ratio(c: Any, claims: list[Any], steps: list[dict[str, Any]]
               ) -> tuple[float | None, str]:
    """End to end / decode for an end-to-end claim ``c``: the same run's figures as its
    source printed them (its first decode-phase sibling in registry order), else the
    median over the measured steps of the same workload shape (prompt and output tokens
    per request, both stated or assumed) at the nearest streams (log distance), else None.
    Returns (ratio, where it comes from)."""
    import math
    import statistics

    from claimcheck.core import sourcemodel as sm
    from claimcheck.core.metrics import METRICS
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


def _seed_reproduction(c: Any, claims: list[Any]) -> Any:
    """A seed's own reproduction of claim ``c`` among the registry's ``claims``
    (:func:`claimcheck.core.sourcemodel.reproductions_of`), as a
    :class:`claimcheck.core.verdicts.SeedReproduction` of the seed with the most matching
    runs (the lowest seed number on a tie); None when no seed reproduced it."""
    from claimcheck.core import sourcemodel as sm
    from claimcheck.core import verdicts as v
    of_row = {id(o.row): o for o in claims}
    found = [of_row[id(r)] for r in
             sm.reproductions_of(c.row, c.stated, [(o.row, o.stated) for o in claims])]
    if not found:
        return None
    by_seed: dict[str, list[Any]] = {}
    for o in found:
        by_seed.setdefault(str(o["seed"]), []).append(o)
    seed, rs = min(by_seed.items(), key=lambda kv: (-len({o["run"] for o in kv[1]}), kv[0]))
    values = [o.aggregate_tok_s for o in rs]
    return v.SeedReproduction(
        seed=f"{int(seed):03d}" if seed.isdigit() else seed, low_tok_s=min(values),
        high_tok_s=max(values), runs=tuple(dict.fromkeys(o["run"] for o in rs)),
        ids=tuple(o["id"] for o in rs),
        differs=tuple(sm.differences(c.row, c.stated, [(o.row, o.stated) for o in rs])))


def verdict_rows(claims_csv: str | Path, cards_csv: str | Path, ceilings_csv: str | Path,
                 weights_csv: str | Path, config_json: str | Path,
                 protocols_yaml: str | Path, records: list[str | Path],
                 tolerance: float | None = None) -> list[dict[str, Any]]:
    """One verdict (:mod:`claimcheck.core.verdicts`) and one label audit
    (:mod:`claimcheck.core.labels`) per registry claim.

    The plain roofline is the claim's own at the streams sharing it (``streams_running``
    when given). The source model is the same roofline at eta from the claim's own source's
    one-stream, no-drafter figure (:mod:`claimcheck.core.sourcemodel`). Definition ratios
    come from the measured steps of the run records, held-prefill steps (2 tokens or fewer
    out) left out. Every protocol naming the claim in ``source_claims`` is set beside it:
    on the claim's own card as a reproduction (the verdict), on another card as context
    only (``replay_context``: each run's fraction of its own plain roofline)."""
    import statistics
    from dataclasses import replace

    from claimcheck.core import labels as lb
    from claimcheck.core import sourcemodel as sm
    from claimcheck.core import verdicts as v
    from claimcheck.core.metrics import METRICS
    from claimcheck.core.protocols import load_protocols
    tol = v.TOLERANCE if tolerance is None else tolerance
    cards = load_cards(cards_csv)
    claims = load_claims(claims_csv, cards=set(cards))
    geom = geometry_from_file(config_json)
    ceilings, weight_rows = load_ceilings(ceilings_csv), load_weight_rows(weights_csv)
    protocols = load_protocols(protocols_yaml)
    _, step_rows = read_run_records(records)
    steps = comparable_steps(step_rows)
    protos_of: dict[str, list[str]] = {}
    for name, p in protocols.items():
        for cid in p.source_claims:
            protos_of.setdefault(cid, []).append(name)

    def roof(c: Any, eta: float = 1.0, tflops: float | None = None) -> dict[str, Any]:
        shared = replace(c, row={**c.row, "streams": c.streams_sharing})
        return claim_roofline(shared, geom, cards, ceilings, eta=eta, weight_rows=weight_rows,
                              tflops=tflops)

    mlp_share = sm.mlp_flop_fraction(load_config(config_json))

    def int8_of(c: Any, rates: list[tuple[float, str]], dtype: str
                ) -> list[tuple[float, str]]:
        """The claim's compute rates with its int8 layers at the card's int8 rate."""
        card = cards[c["card"]]
        if not c["int8_layers"] or "int8" not in card.tensor_tflops:
            return rates
        return sm.int8_rates(rates, c["int8_layers"], mlp_share, card.tflops("int8"),
                             card.tflops(dtype))

    def plain_of(c: Any) -> dict[str, Any]:
        """The plain roofline (eta 1) at the claim's card's own compute for its power
        limit, its int8 layers at the int8 rate."""
        p = roof(c)
        if p["roofline_tok_s"] and c["int8_layers"] and c["card"] in cards:
            (tf, src), = int8_of(c, [(p["roofline_tflops"], p["roofline_compute"])],
                                 p["roofline_compute_dtype"])
            p = {**roof(c, 1.0, tf), "roofline_compute": src}
        return p

    plain = {c["id"]: plain_of(c) for c in claims}
    key = {c["id"]: sm.source_key(c.row, (c["quantization"] or "").lower()) for c in claims}
    figures: dict[tuple[str, ...], list[sm.Figure]] = {}
    for i, c in enumerate(claims):
        p = plain[c["id"]]
        figures.setdefault(key[c["id"]], []).append(sm.Figure(
            id=c["id"], run=c["run"], order=i, streams_sharing=c.streams_sharing,
            phase=METRICS[c["metric"]].phase, context_tokens=c["context_tokens"] or 0.0,
            drafter=str(c["spec_method"] or ""), aggregate_tok_s=c.aggregate_tok_s,
            plain_tok_s=p["roofline_tok_s"], plain_bound=p.get("roofline_bound", ""),
            bound=c.row.get("bound") or "",
            workload=(c["metric"], c.streams_sharing, c["prompt_tokens"], c["output_tokens"],
                      c["context_tokens"])))
    by_id = {c["id"]: c for c in claims}
    # the spread between a seed's own runs of one setup (reproductions, controls): a
    # publisher's two cells of one shape may differ in settings the registry does not hold
    # (HyperQwen's raw 8K cell "with int8 prefill")
    spread = {k: sm.shown_spread([f for f in fs if by_id[f.id]["kind"] != "claim"])
              for k, fs in figures.items()}

    def one_eta(f: sm.Figure) -> str:
        """"X's 43.6 tok/s (unspecified, 1 stream, context not stated) / its plain
        roofline 58.0 tok/s"."""
        ctx = (f"{f.context_tokens:,.0f} tokens of context" if by_id[f.id]["context_tokens"]
               else "context not stated")
        return (f"{f.id}'s {f.aggregate_tok_s:,.1f} tok/s ({METRICS[by_id[f.id]['metric']].label}"
                f", 1 stream, {ctx}) / its plain roofline {f.plain_tok_s:,.1f} tok/s")

    def rates_of(c: Any, p: dict[str, Any]) -> list[tuple[float, str]]:
        """The compute rates the claim's band spans (one when measured at its power)."""
        card = cards[c["card"]]
        ds_tf, ds_src = compute_ceiling(card, p["roofline_compute_dtype"], {})
        return int8_of(c, sm.compute_range(c["card"], p["roofline_compute_dtype"],
                                           c["power_limit_w"], list(ceilings.values()),
                                           ds_tf, ds_src), p["roofline_compute_dtype"])

    rows = []
    calls: dict[str, tuple[Any, ...]] = {}
    for c in claims:
        before, after = bound_words(c.row.get("bound") or "", c["quote"], c["value"])
        t = {**c.tidy(), "bound_before": before, "bound_after": after}
        p = plain[c["id"]]
        ceil = v.Ceiling(p["roofline_tok_s"], p.get("roofline_bound", ""), p["roofline_note"])
        ctx = c["context_tokens"] or 0.0
        mine = figures[key[c["id"]]]
        cset = sm.calibration_set(mine, ctx)
        own = any(f.id == c["id"] for f in cset)
        if own:  # the claim helps set eta: calibrate on its source's other runs if any
            alt = sm.calibration_set([f for f in mine if f.run != c["run"]], ctx)
            cset = alt or cset
            own = not alt
        cal = cset[0] if cset else None
        c_tol = max(tol, spread[key[c["id"]]][0])
        tol_words = f"; tolerance {spread[key[c['id']]][1]}" if c_tol > tol else ""
        rates = rates_of(c, p) if p["roofline_tok_s"] else []
        compute = ("compute " + " to ".join(f"{tf:.4g} TFLOP/s ({src})" for tf, src in rates)
                   if rates else "")
        source = None
        if cal is not None and p["roofline_tok_s"]:
            etas = [sm.eta_from(f.aggregate_tok_s, f.plain_tok_s)  # type: ignore[arg-type]
                    for f in cset]
            eta = statistics.median(etas)
            how = (f"eta {eta:.3f} = {one_eta(cal)}" if len(cset) == 1 else
                   f"eta {eta:.3f}, the median over {len(cset)} one-stream figures of its "
                   "source (" + "; ".join(f"{e:.3f} = {one_eta(f)}" for e, f in
                                         zip(etas, cset, strict=True)) + ")")
            hi, lo = roof(c, eta, rates[-1][0]), roof(c, eta, rates[0][0])
            _, floor = sm.band(c.streams_sharing, lo["roofline_memory_ms"] / 1e3,
                               lo["roofline_compute_ms"] / 1e3)
            source = sm.SourceModel(
                tok_s=hi["roofline_tok_s"], eta=eta, binding_term=hi["roofline_bound"],
                bend_streams=hi["roofline_bend_streams"],
                memory_wall_streams=hi.get("roofline_memory_wall_streams"),
                calibrated_on=tuple(f.id for f in cset),
                calibration=f"{how}; {compute}{tol_words}",
                is_calibration=own, floor_tok_s=floor,
                ceiling_low_tok_s=lo["roofline_tok_s"], binding_term_low=lo["roofline_bound"],
                compute_range=compute if len(rates) > 1 else "",
                calibration_phase=cal.phase)
        elif p["roofline_tok_s"]:
            source = sm.SourceModel(
                tok_s=None, bend_streams=p.get("roofline_bend_streams"),
                calibration=("no one-stream, no-drafter figure from this source: plain "
                             f"roofline (eta = 1); {compute}{tol_words}"),
                compute_range=compute if len(rates) > 1 else "")
        seed_rep = _seed_reproduction(c, claims)
        seed_agg = _seed_aggregate(c, claims)
        if seed_agg is not None:
            derived = c.aggregate_tok_s
            t = {**t, "aggregate_tok_s": seed_agg.aggregate_tok_s,
                 "per_stream_tok_s": c["value"],
                 "aggregate_note": (
                     f"The per-request figure ({c['value']:g} tok/s, window not stated) "
                     f"summed over the {c.streams_sharing:g} in flight would read "
                     f"{derived:,.1f} tok/s against the seed's own {seed_agg['value']:,.1f} "
                     f"for the same run ({seed_agg['id']}); the seed's figure is used.")}
            # the roofline's tau scales with the aggregate: no second roofline is needed
        col = METRIC_COLUMN.get(c["metric"])
        infl, infl_src = _inflation(steps, col, c.streams_sharing) if col else (None, "")
        protos = protos_of.get(c["id"], [])
        replays, repro = protocol_replays(c, protos, steps, col)
        e2e_r, e2e_src = _e2e_ratio(c, claims, steps)
        calls[c["id"]] = (t, ceil, source, infl, infl_src, repro, c_tol, seed_rep, e2e_r,
                          e2e_src)
        res = v.verdict(*calls[c["id"]])
        plain_floor = (sm.band(c.streams_sharing, p["roofline_memory_ms"] / 1e3,
                               p["roofline_compute_ms"] / 1e3)[1]
                       if p["roofline_tok_s"] else None)
        given_row = {k: c.stated.get(k) for k in c.row}
        metric = {"scope": METRICS[c["metric"]].scope, "phase": METRICS[c["metric"]].phase,
                  "definition": METRICS[c["metric"]].definition}
        given = {k for k, s in lb.audit(given_row, metric).items() if s == lb.SUPPLIED}
        status = lb.audit(c.row, metric, given)
        groups = lb.summary(status)
        rows.append({"id": c["id"], "card": c["card"], "metric": c["metric"],
                     "value": c["value"], "streams": c["streams"],
                     "streams_running": c["streams_running"],
                     "assumed_fields": t["assumed_fields"],
                     "bound_words": " ".join(filter(None, (before, "X", after)))
                     if before or after else "", "verdict": res.kind,
                     "reason": res.reason, **res.numbers,
                     "roofline_floor_tok_s": plain_floor, "protocol": ";".join(protos),
                     "replay_context": v.replay_sentence(
                         replays, res.numbers.get("claim_over_roofline"), c["card"]),
                     "replay_runs": ";".join(r["run"] for r in replays),
                     **{f"label_{k}": s for k, s in status.items()},
                     "labels_given": ",".join(groups[lb.GIVEN]),
                     "labels_supplied": ",".join(groups[lb.SUPPLIED]),
                     "labels_missing": ",".join(groups[lb.MISSING])})
    return _run_as_a_whole(rows, calls, {c["id"]: c["run"] for c in claims})


def _run_as_a_whole(rows: list[dict[str, Any]], calls: dict[str, tuple[Any, ...]],
                    run_of: dict[str, str]) -> list[dict[str, Any]]:
    """A run is judged as a whole (issue 28 item 7): where any figure of a run needs a
    drafter (:func:`claimcheck.core.verdicts.needs_drafter_runs`), every sibling is judged
    again with that figure named, so none says the drafter is not needed."""
    from claimcheck.core import verdicts as v
    first = {r["id"]: v.Verdict(r["verdict"], r["reason"], r) for r in rows}
    speculative = v.needs_drafter_runs(first, run_of)
    out = []
    for r in rows:
        sib = speculative.get(run_of[r["id"]], "")
        if sib and not sib.startswith(f"{r['id']} "):
            res = v.verdict(*calls[r["id"]], run_drafter=sib)
            r = {**r, "verdict": res.kind, "reason": res.reason, **res.numbers,
                 "run_needs_drafter": sib}
        out.append(r)
    return out


def verdicts_table(claims_csv: str | Path, cards_csv: str | Path, ceilings_csv: str | Path,
                   weights_csv: str | Path, config_json: str | Path,
                   protocols_yaml: str | Path, records: list[str | Path], out: str | Path,
                   out_json: str | Path | None = None) -> int:
    """:func:`verdict_rows` as CSV (and JSON for the notebooks). Returns the row count."""
    rows = verdict_rows(claims_csv, cards_csv, ceilings_csv, weights_csv, config_json,
                        protocols_yaml, records)
    write_csv(rows, out)
    if out_json:
        write_json(rows, out_json)
    return len(rows)
