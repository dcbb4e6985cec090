"""Snakemake script: the measured notebook's figure and Markdown section for every run, in
one process (what `papermill notebooks/measured.ipynb` draws for one run)."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.batch import measured_figures

    i, p = snakemake.input, snakemake.params  # noqa: F821
    user_cards = snakemake.config.get("user_cards") or None  # noqa: F821
    for line in measured_figures(p.runs, p.record_in, i.claims, i.model, p.out_base,
                                 p.out_md, user_cards):
        log.write(line + "\n")
