"""Per-run products of many runs in one process (issue 18 item 5): one interpreter, one
import of the plotting stack and one read of each run directory, instead of one process
(or notebook kernel) per run and product. Each product is the same function's output as
for one run (:func:`claimcheck.pipeline.derive.run_record`, :func:`~claimcheck.pipeline.derive.
metrics_csv`, :func:`claimcheck.figures.definitions_fig.write`, the measured notebook's
:func:`claimcheck.pipeline.run_figures.measured_run`), byte for byte.

Output paths are patterns holding ``{run}`` (the run directory's name).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from claimcheck.figures import definitions_fig
from claimcheck.physics.cardfiles import load_cards, load_ceilings
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.pipeline import figures, run_figures
from claimcheck.pipeline.derive import write_metrics_csv, write_run_record
from claimcheck.runs.run import load_run
from claimcheck.runs.tables import write_csv


def run_products(run_dirs: list[str | Path], cards_csv: str | Path, ceilings_csv: str | Path,
                 config_json: str | Path, record_out: str, metrics_out: str,
                 definitions_out: str, model_out: str, user_cards: str | None = None
                 ) -> Iterator[str]:
    """For each run directory, read once: its run-record JSON (``record_out``), its metrics
    CSV (``metrics_out``) and its definitions figure (``definitions_out``, no extension:
    PNG and SVG); then, from the same reads, the model table of all runs (``model_out``,
    :func:`claimcheck.pipeline.derive.model_table`). Yields one line per run (name, steps,
    metric rows) as each is written, then the model's row count and any run it left out.
    ``user_cards``: a cards file merged over ``cards_csv`` (each run's card is checked
    against both)."""
    from claimcheck.predict.modeltable import table_rows

    geom = geometry_from_file(config_json)
    cards, ceilings = load_cards(cards_csv, user_cards), load_ceilings(ceilings_csv)
    loaded = []
    for d in run_dirs:
        run = load_run(d, cards)
        name = Path(d).name
        steps = write_run_record(run, geom, cards, ceilings, record_out.format(run=name))
        rows = write_metrics_csv(run, metrics_out.format(run=name))
        definitions_fig.write(run, definitions_out.format(run=name))
        loaded.append(run)
        yield f"{name}: {steps} steps, {rows} metric rows"
    unmodelled: list[str] = []
    rows = table_rows(loaded, unmodelled, user_cards)
    write_csv(rows, model_out)
    yield f"{model_out}: {len(rows)} rows"
    yield from unmodelled


def measured_figures(runs: list[str], record_in: str, claims_json: str, model_config: str,
                     out_base: str, out_md: str, user_cards: str | None = None
                     ) -> Iterator[str]:
    """The measured notebook's figure (PNG + SVG at ``out_base``) and Markdown section
    (``out_md``) for each run named, from its run record (``record_in``). Yields one line
    per run as each is written."""
    for name in runs:
        fig, md = run_figures.measured_run(record_in.format(run=name), claims_json, model_config,
                                           user_cards)
        figures.write_md(md, out_md.format(run=name))
        figures.save(fig, out_base.format(run=name), per_run=True)
        yield f"{name}: {out_base.format(run=name)}.png"


def model_figures(model_csv: str | Path, engines: list[str], out_base: str,
                  card: str | None = None) -> Iterator[str]:
    """Each engine's model figure (PNG + SVG at ``out_base`` holding ``{engine}``) from one
    read of ``model_csv``: :func:`claimcheck.figures.model_fig.write_rows`, as for one engine.
    ``card``: that card's steps only (a figure is of one card; None: every row). Yields the
    PNG written for each engine."""
    from claimcheck.figures import model_fig
    from claimcheck.files.framefiles import read_rows

    rows = [r for r in read_rows(model_csv) if card is None or r.get("card") == card]
    for engine in engines:
        yield str(model_fig.write_rows(rows, engine, out_base.format(engine=engine))[0])
