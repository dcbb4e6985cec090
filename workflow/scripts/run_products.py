"""Snakemake script: every run directory read once, in one process: its run-record JSON,
its metrics CSV and its definitions figure (PNG + SVG); then the model table of all runs."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.report.batch import run_products

    i, o, p = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    for line in run_products(p.run_dirs, i.cards, i.ceilings, i.model, p.record_out,
                             p.metrics_out, p.definitions_out, o.model):
        log.write(line + "\n")
