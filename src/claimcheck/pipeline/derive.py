"""The pipeline's derived data (data/derived/), one function per Snakemake rule.

Tidy tables are CSV for people and JSON for the figures (typed, null for absent, full
precision); each run directory becomes one run-record JSON that every figure of the run
reads. Paths are arguments; nothing here knows about Snakemake.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from claimcheck.claims.claim_roofline import claim_roofline
from claimcheck.claims.registryfiles import load_claims, load_weight_rows
from claimcheck.config.configfiles import load_protocols
from claimcheck.files.errors import InputError
from claimcheck.files.framefiles import read_rows
from claimcheck.files.io import dumps_json
from claimcheck.files.readers import read_json
from claimcheck.physics.cardfiles import load_cards, load_ceilings
from claimcheck.physics.engine_inputs import model_dtype
from claimcheck.physics.modelfiles import geometry_from_file, load_config
from claimcheck.runs.run import Run, from_record, load_run, to_record
from claimcheck.runs.steptable import metrics_table
from claimcheck.runs.tables import with_rooflines, write_csv
from claimcheck.update.update_metrics import metric_columns
from claimcheck.verdicts import verdict_assembly


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
    conv = model_dtype(load_config(config_json))
    rows = []
    for c in claims:
        for eta in etas:
            r = claim_roofline(c, geom, cards, ceilings, eta=eta, weight_rows=weight_rows,
                               conv_state_dtype=conv)
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
    return write_run_record(load_run(run_dir), geometry_from_file(config_json),
                            load_cards(cards_csv), load_ceilings(ceilings_csv), out)


def write_run_record(run: Run, geom: Any, cards: Any, ceilings: Any, out: str | Path) -> int:
    """The run-record JSON of a read run against read registries: its step table with each
    step's provenance and roofline (:func:`claimcheck.runs.tables.with_rooflines`).
    Returns the number of steps."""
    metric_columns(run.protocol, str(Path(run.path) / "provenance.json"))  # known metrics only
    run = with_rooflines(run, geom, cards, ceilings)
    write_json(to_record(run), out)
    return len(run.rows)


def read_run_records(paths: list[str | Path]) -> tuple[list[Run], list[dict[str, Any]]]:
    """Runs from run-record JSONs (as :func:`run_record` wrote them), and every step row of
    them, in order (each the same dict as the run's own row)."""
    runs = [from_record(read_json(p), str(p)) for p in paths]
    return runs, [r for run in runs for r in run.rows]


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
    """``python -m claimcheck.pipeline.derive run-record RUN_DIR OUT``: one run record, as the
    workflow makes it. Bad input ends with one line naming the file and key (exit 2)."""
    ap = argparse.ArgumentParser(prog="python -m claimcheck.pipeline.derive")
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
    """Every definition for every step of one run
    (:func:`claimcheck.runs.steptable.metrics_table`) as CSV. Returns the row count."""
    return write_metrics_csv(load_run(run_dir), out)


def write_metrics_csv(run: Run, out: str | Path) -> int:
    """:func:`metrics_csv` of a run already read. Returns the row count."""
    rows = metrics_table(run)
    write_csv(rows, out)
    return len(rows)


def model_rows(run_dirs: list[str | Path], unmodelled: list[str] | None = None,
               user_cards: str | None = None) -> list[dict[str, Any]]:
    """Predicted / measured end to end and decode aggregate for every step of every run,
    each calibrated by the stated rule (:func:`claimcheck.predict.modeltable.table_rows`)."""
    from claimcheck.predict.modeltable import table_rows
    cards = load_cards(user_path=user_cards)
    return table_rows([load_run(p, cards) for p in run_dirs], unmodelled, user_cards)


def model_table(run_dirs: list[str | Path], out: str | Path,
                unmodelled: list[str] | None = None) -> int:
    """:func:`model_rows` as CSV (runs left out named in ``unmodelled``). Returns the row
    count."""
    rows = model_rows(run_dirs, unmodelled)
    write_csv(rows, out)
    return len(rows)


def verdict_rows(claims_csv: str | Path, cards_csv: str | Path, ceilings_csv: str | Path,
                 weights_csv: str | Path, config_json: str | Path,
                 protocols_yaml: str | Path, records: list[str | Path],
                 tolerance: float | None = None,
                 carried_csv: str | Path | None = None) -> list[dict[str, Any]]:
    """The registries, model config and run records read, then one verdict row per claim
    (:func:`claimcheck.verdicts.verdict_assembly.verdict_rows`), read against the carried
    model first where ``carried_csv`` (data/derived/carried_claims.csv) is given."""
    cards = load_cards(cards_csv)
    _, step_rows = read_run_records(records)
    carried = None
    if carried_csv is not None:
        from claimcheck.predict.carry_claims import as_carried
        carried = {r["claim_id"]: as_carried(r) for r in read_rows(carried_csv)}
    return verdict_assembly.verdict_rows(
        load_claims(claims_csv, cards=set(cards)), cards, load_ceilings(ceilings_csv),
        load_weight_rows(weights_csv), geometry_from_file(config_json),
        load_config(config_json), load_protocols(protocols_yaml), step_rows, tolerance,
        carried)


def verdicts_table(claims_csv: str | Path, cards_csv: str | Path, ceilings_csv: str | Path,
                   weights_csv: str | Path, config_json: str | Path,
                   protocols_yaml: str | Path, records: list[str | Path], out: str | Path,
                   out_json: str | Path | None = None,
                   carried_csv: str | Path | None = None) -> int:
    """:func:`verdict_rows` as CSV (and JSON for the notebooks). Returns the row count."""
    rows = verdict_rows(claims_csv, cards_csv, ceilings_csv, weights_csv, config_json,
                        protocols_yaml, records, carried_csv=carried_csv)
    write_csv(rows, out)
    if out_json:
        write_json(rows, out_json)
    return len(rows)
