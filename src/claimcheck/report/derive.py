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
from claimcheck.core.claims import load_claims
from claimcheck.core.errors import InputError
from claimcheck.core.geometry import geometry_from_file
from claimcheck.core.inputs import load_weight_rows
from claimcheck.core.io import dumps_json, read_json
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
    run = with_timeline(load_run(run_dir))
    metric_columns(run.protocol, str(Path(run_dir) / "provenance.json"))  # known metrics only
    rows = run_rows([run], geometry_from_file(config_json), load_cards(cards_csv),
                    ceilings=load_ceilings(ceilings_csv))
    write_json(run_to_json(run, rows), out)
    return len(rows)


def with_timeline(run: Run) -> Run:
    """The run with each completed step's row holding the timeline definitions too
    (:func:`claimcheck.report.steps.timeline_columns`); the record's own keys win."""
    cols = timeline_columns(run)
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
    from claimcheck.report import steps as run_steps
    rows = run_steps.metrics_table(run_steps.load(run_dir))
    write_csv(rows, out)
    return len(rows)


def model_rows(run_dirs: list[str | Path]) -> list[dict[str, Any]]:
    """Predicted / measured end to end and decode aggregate for every step of every run, each
    run calibrated on its card's runs chosen by :func:`claimcheck.report.predict.calibration_run`
    (bandwidth, overhead) and :func:`~claimcheck.report.predict.compute_run` (compute),
    with the term a miss of more than 5% points at."""
    from claimcheck.report import predict
    from claimcheck.report import steps as run_steps
    runs = [run_steps.load(p) for p in run_dirs]
    rows = []
    for target in runs:
        try:  # a card with no registry entry or no 1-stream run cannot be calibrated
            calib = predict.calibration_run(target, runs)
            out = predict.predict(target, calib, predict.compute_run(target, runs))
        except InputError as e:
            print(f"claimcheck: model: {target.name} not modelled: {e}", file=sys.stderr)
            continue
        cal = out["calibration"]
        for r in out["steps"]:
            rows.append({"run": target.name, "calibrated_on": calib.name,
                         "bandwidth_gb_s": cal["bandwidth_gb_s"], "tflops": cal["tflops"],
                         "request_overhead_ms": cal["request_overhead_s"] * 1e3,
                         "bandwidth_source": cal["bandwidth_source"],
                         "compute_source": cal["compute_source"], **r,
                         "miss_term": predict.miss_term(r)})
    return rows


def model_table(run_dirs: list[str | Path], out: str | Path) -> int:
    """:func:`model_rows` as CSV. Returns the row count."""
    rows = model_rows(run_dirs)
    write_csv(rows, out)
    return len(rows)


def _inflation(metrics: list[dict[str, Any]], column: str, streams: float
               ) -> tuple[float | None, str]:
    """Median ratio of ``column`` to end to end over the measured steps nearest in streams
    (log distance); None when no step has the column."""
    import math
    import statistics
    ok = [r for r in metrics if r.get(column) and r.get("e2e_aggregate_tok_s")]
    if not ok or not streams:
        return None, ""
    near = min(abs(math.log(r["streams"] / streams)) for r in ok)
    pick = [r for r in ok if abs(math.log(r["streams"] / streams)) == near]
    ratio = statistics.median(r[column] / r["e2e_aggregate_tok_s"] for r in pick)
    return ratio, (f"median over {len(pick)} measured step(s) at {pick[0]['streams']} "
                   f"streams, {column} / e2e_aggregate_tok_s")


def verdict_rows(claims_csv: str | Path, cards_csv: str | Path, ceilings_csv: str | Path,
                 weights_csv: str | Path, config_json: str | Path,
                 protocols_yaml: str | Path, run_dirs: list[str | Path],
                 records: list[str | Path], tolerance: float = 0.05) -> list[dict[str, Any]]:
    """One verdict (:mod:`claimcheck.core.verdicts`) and one label audit
    (:mod:`claimcheck.core.labels`) per registry claim.

    The roofline is the claim's own at the streams sharing it (``streams_running`` when
    given); definition ratios come from every measured step's timeline; a claim named in a
    protocol's ``source_claims`` is set against that protocol's measured steps at its
    streams, scaled by the claim card's roofline over the measured step's roofline (both
    plain, eta 1: the other card is not calibrated here, so the same fraction of its
    roofline is assumed)."""
    import statistics
    from dataclasses import replace

    from claimcheck.core import labels as lb
    from claimcheck.core import verdicts as v
    from claimcheck.core.definitions import REGISTRY_METRIC
    from claimcheck.core.metrics import METRICS
    from claimcheck.core.protocols import load_protocols
    from claimcheck.report import steps as run_steps

    cards = load_cards(cards_csv)
    claims = load_claims(claims_csv, cards=set(cards))
    geom = geometry_from_file(config_json)
    ceilings, weight_rows = load_ceilings(ceilings_csv), load_weight_rows(weights_csv)
    protocols = load_protocols(protocols_yaml)
    metrics: list[dict[str, Any]] = []
    for p in run_dirs:
        metrics += run_steps.metrics_table(run_steps.load(p))
    _, step_rows = read_run_records(records)
    step_roof = {(r["run"], r["step"], r["repeat"]): r.get("roofline_tok_s") for r in step_rows}
    column = {m: c for c, m in REGISTRY_METRIC.items() if m}
    column |= {"single_stream_decode": "per_request_decode_tok_s",
               "engine_log_line": "engine_log_steady_tok_s"}
    aggregate_columns = [c for c in column.values() if c not in ("prefill_tok_s",
                                                                  "per_request_decode_tok_s")]
    proto_of = {cid: name for name, p in protocols.items() for cid in p.source_claims}
    rows = []
    for c in claims:
        t = c.tidy()
        sharing = c.streams_sharing
        shared = replace(c, row={**c.row, "streams": sharing})  # roofline at streams sharing
        r = claim_roofline(shared, geom, cards, ceilings, eta=1.0, weight_rows=weight_rows)
        ceil = v.Ceiling(r["roofline_tok_s"], r["tau_needed"], r.get("roofline_bound", ""),
                         r["roofline_note"])
        col = column.get(c["metric"])
        infl, infl_src = _inflation(metrics, col, sharing) if col else (None, "")
        repro = None
        proto = proto_of.get(c["id"])
        if proto and ceil.roofline_tok_s:
            here = [m for m in metrics if m["protocol"] == proto and m["streams"] == c["streams"]]
            cols = [col] if col and METRICS[c["metric"]].phase != "unspecified" else \
                aggregate_columns
            vals = []
            for m in here:
                roof = step_roof.get((m["run"], m["step"], m["repeat"]))
                if not roof:
                    continue
                for k in cols:
                    x = m.get(k)
                    if x is not None:
                        agg = x * m["streams"] if k == "per_request_decode_tok_s" else x
                        vals.append((k, agg * ceil.roofline_tok_s / roof))
            if vals:
                if len(cols) == 1:
                    lo = hi = statistics.median(x for _, x in vals)
                else:
                    lo, hi = min(x for _, x in vals), max(x for _, x in vals)
                runs = ", ".join(sorted({m["run"] for m in here}))
                defs = "; ".join(sorted({k for k, _ in vals}))
                repro = v.Reproduction(lo, hi, f"protocol {proto} at {c['streams']} streams "
                                       f"in {runs} ({defs}), scaled by the {c['card']} / "
                                       "measured-card roofline ratio")
        res = v.verdict(t, ceil, infl, infl_src, repro, tolerance)
        given_row = {k: c.stated.get(k) for k in c.row}
        metric = {"scope": METRICS[c["metric"]].scope, "phase": METRICS[c["metric"]].phase,
                  "definition": METRICS[c["metric"]].definition}
        given = {k for k, s in lb.audit(given_row, metric).items() if s == lb.SUPPLIED}
        status = lb.audit(c.row, metric, given)
        groups = lb.summary(status)
        rows.append({"id": c["id"], "card": c["card"], "metric": c["metric"],
                     "value": c["value"], "streams": c["streams"],
                     "streams_running": c["streams_running"],
                     "assumed_fields": t["assumed_fields"], "verdict": res.kind,
                     "reason": res.reason, **res.numbers, "protocol": proto or "",
                     **{f"label_{k}": s for k, s in status.items()},
                     "labels_given": ",".join(groups[lb.GIVEN]),
                     "labels_supplied": ",".join(groups[lb.SUPPLIED]),
                     "labels_missing": ",".join(groups[lb.MISSING])})
    return rows


def verdicts_table(claims_csv: str | Path, cards_csv: str | Path, ceilings_csv: str | Path,
                   weights_csv: str | Path, config_json: str | Path,
                   protocols_yaml: str | Path, run_dirs: list[str | Path],
                   records: list[str | Path], out: str | Path,
                   out_json: str | Path | None = None) -> int:
    """:func:`verdict_rows` as CSV (and JSON for the notebooks). Returns the row count."""
    rows = verdict_rows(claims_csv, cards_csv, ceilings_csv, weights_csv, config_json,
                        protocols_yaml, run_dirs, records)
    write_csv(rows, out)
    if out_json:
        write_json(rows, out_json)
    return len(rows)
