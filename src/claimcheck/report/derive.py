"""The pipeline's derived tables (data/derived/*.csv), one function per Snakemake rule.

Each reads committed raw data, calls the pure functions of :mod:`claimcheck.report.tables`, and
writes one CSV. Paths are arguments; nothing here knows about Snakemake.
"""

from __future__ import annotations

from pathlib import Path

from claimcheck.core.cards import load_cards, load_ceilings
from claimcheck.core.claims import load_claims
from claimcheck.core.geometry import geometry_from_file
from claimcheck.report.record import find_runs, load_run
from claimcheck.report.tables import claim_roofline, load_weight_sizes, run_rows, write_csv


def claims_table(claims_csv: str | Path, cards_csv: str | Path, out: str | Path) -> int:
    """Tidy claims with derived per-stream and aggregate tok/s. Returns the row count."""
    claims = load_claims(claims_csv, cards=set(load_cards(cards_csv)))
    write_csv([c.tidy() for c in claims], out)
    return len(claims)


def claims_roofline_table(claims_csv: str | Path, cards_csv: str | Path,
                          ceilings_csv: str | Path, weights_csv: str | Path,
                          config_json: str | Path, out: str | Path,
                          etas: tuple[float, ...] = (1.0, 0.79)) -> int:
    """The roofline at each claim's own configuration, for each eta. Returns rows written."""
    cards = load_cards(cards_csv)
    claims = load_claims(claims_csv, cards=set(cards))
    geom = geometry_from_file(config_json)
    ceilings, sizes = load_ceilings(ceilings_csv), load_weight_sizes(weights_csv)
    rows = []
    for c in claims:
        for eta in etas:
            r = claim_roofline(c, geom, cards, ceilings, eta=eta, sizes=sizes)
            rows.append({"id": c["id"], "card": c["card"], "streams": c["streams"],
                         "metric": c["metric"], "value": c["value"],
                         "aggregate_tok_s": c.aggregate_tok_s,
                         "per_stream_tok_s": c.per_stream_tok_s, "eta": eta, **r})
    write_csv(rows, out)
    return len(rows)


def runs_table(runs_dir: str | Path, cards_csv: str | Path, config_json: str | Path,
               out: str | Path) -> int:
    """Every measured step of every recorded run, with provenance and roofline."""
    runs = [load_run(d) for d in find_runs(runs_dir)]
    rows = run_rows(runs, geometry_from_file(config_json), load_cards(cards_csv))
    write_csv(rows, out)
    return len(rows)
