"""The Update's two documents (the update notebook): the body an article prints
(figures/update.md, :func:`claimcheck.update.update_body.render_body`) and its appendix
(figures/update-appendix.md: :func:`claimcheck.update.update.render_update`, the
definitions links, the model table, the predictions kept before a run, every verdict),
from the same run records, verdicts and tables.
"""

from __future__ import annotations

import sys
from typing import Any

from claimcheck.config.configfiles import load_protocols
from claimcheck.files.framefiles import read_rows
from claimcheck.files.readers import read_json
from claimcheck.physics.cardfiles import load_cards
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.pipeline.derive import read_claims_json, read_run_records
from claimcheck.pipeline.figures import at_root, records
from claimcheck.predict.crossval import read as read_crossval
from claimcheck.update.carry_words import carried_table
from claimcheck.update.template import Value, write_values
from claimcheck.update.update import render_update
from claimcheck.update.update_body import render_body
from claimcheck.update.update_values import prediction_of
from claimcheck.verdicts import verdicts_md

FAMILY_KEYS = ("key", "title", "claims")


def load_families(path: str) -> list[dict[str, Any]]:
    """The Update's claim families (config/update_claims.yaml): a list under ``families``,
    each with a key, a title and a list of registry ids; anything else is refused naming
    the file and the entry."""
    import yaml
    with open(at_root(path)) as fh:
        data = yaml.safe_load(fh) or {}
    fams = data.get("families")
    if not isinstance(fams, list) or not fams:
        raise ValueError(f"{path}: 'families' must be a non-empty list")
    for n, f in enumerate(fams, 1):
        missing = [k for k in FAMILY_KEYS if not isinstance(f, dict) or k not in f]
        if missing:
            raise ValueError(f"{path}: family {n}: '{missing[0]}' is missing")
        if not isinstance(f["claims"], list) or not f["claims"]:
            raise ValueError(f"{path}: family '{f['key']}': 'claims' must be a non-empty list")
    return fams


def update_section(run_records: list[str] | None, claims_json: str, card: str,
                   figures: dict[str, str] | None, protocols_yaml: str | None = None,
                   model_config: str | None = None, model_name: str | None = None,
                   cards_csv: str | None = "data/raw/cards.csv") -> str:
    """The Update section (figures/update.md) for the runs of one card; ``figures`` maps
    a figure name to its link relative to figures/; ``cards_csv`` gives each card's rated
    board power for the claims' per-nominal-watt figures."""
    runs, _ = read_run_records(records(run_records))
    nominal = ({k: c.default_power_w for k, c in load_cards(at_root(cards_csv)).items()
                if c.default_power_w} if cards_csv else None)
    defined = load_protocols(at_root(protocols_yaml)) if protocols_yaml else {}
    protocols = sorted(defined) if protocols_yaml else None
    geom = geometry_from_file(at_root(model_config)) if model_config else None
    return render_update(runs, read_claims_json(at_root(claims_json)), card,
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
                     beforehand_csv: str | None = None,
                     families_yaml: str = "config/update_claims.yaml",
                     values_csv: str | None = None,
                     carried_csv: str | None = None,
                     speculation_csv: str | None = None,
                     crossval_csv: str | None = None) -> tuple[str, str]:
    """The Update as an article prints it (the body, figures/update.md) and its appendix
    (every step of every run, each protocol's blocks, every verdict line, the model table,
    the predictions kept before a run (``beforehand_csv``), each run's provenance), from
    the same run records, verdicts and tables. Each claim section's prediction on its own
    card is the carried model's, read from its verdict row
    (:func:`claimcheck.update.update_values.prediction_of`); ``carried_csv``
    (data/derived/carried_3090.csv) gives the body's sentence on the RTX 3090 ladder and
    the appendix's table of predicted against published.
    ``speculation_csv``: the drafting runs' table (what a verify costs; None: not said).
    ``crossval_csv``: the model with each run left out (data/derived/crossval.csv; None:
    not said)."""
    runs, _ = read_run_records(records(run_records))
    verdicts = read_json(at_root(verdicts_json)) if verdicts_json else []
    predictions = {str(v["id"]): p for v in verdicts if (p := prediction_of(v)) is not None}
    carried: list[dict[str, Any]] = []
    if carried_csv:
        import csv
        with open(at_root(carried_csv), newline="") as fh:
            carried = list(csv.DictReader(fh))
    # the model table's steps of this Update's card only: another card's runs are never
    # counted as this card's (the table holds every committed run's steps)
    model_rows = ([r for r in read_rows(at_root(model_csv)) if r.get("card") == card]
                  if model_csv else [])
    geom = geometry_from_file(at_root(model_config)) if model_config else None
    protocols = sorted(load_protocols(at_root(protocols_yaml))) if protocols_yaml else None
    log: list[str] = []
    before = read_rows(at_root(beforehand_csv)) if beforehand_csv else None
    crossval = read_crossval(str(at_root(crossval_csv))) if crossval_csv else None
    extra: list[str] = []  # what the body leaves to the appendix
    values: dict[str, Value] = {}
    body = render_body(runs, card, figures or {}, verdicts, model_rows,
                       appendix_link, model_name, geom, verdict_figure, protocols, log=log,
                       before_rows=before, claims=read_json(at_root(claims_json)),
                       appendix_extra=extra, families=load_families(families_yaml),
                       values_out=values, predictions=predictions or None,
                       carried_rows=carried,
                       speculation=read_rows(at_root(speculation_csv)) if speculation_csv
                       else None, crossval=crossval)
    if values_csv:
        write_values(values, at_root(values_csv))
    for line in log:  # the render's log: each finding left out, and why
        print(line, file=sys.stderr)
    appendix = ("# Update: appendix\n\nThe tables and lines behind [the Update](update.md): "
                "every step of every run, each protocol's blocks in full, each run's "
                "provenance, the definitions figures, the model table and every verdict "
                "with its numbers.\n\n"
                + update_section(run_records, claims_json, card, figures, protocols_yaml,
                                 model_config, model_name, cards_csv))
    if extra:
        appendix += "\n" + "\n".join(extra)
    if carried:
        appendix += "\n" + carried_table(carried)
    if definitions_links:
        appendix += "\n" + verdicts_md.render_definitions_links(definitions_links)
    if model_rows:
        appendix += "\n" + verdicts_md.render_model(model_rows)
    if crossval:
        from claimcheck.update.crossval_words import appendix_section as cv_section
        appendix += "\n" + cv_section(crossval)
    if beforehand_csv:  # the predictions kept before a run, against it
        from claimcheck.update.beforehand_words import appendix_section
        appendix += "\n" + appendix_section(read_rows(at_root(beforehand_csv)))
    if verdicts:
        appendix += "\n" + verdicts_md.render_verdicts(verdicts)
    return body, appendix
