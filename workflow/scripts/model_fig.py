"""Snakemake script: every engine's model figure (PNG + SVG) from model.csv, in one process."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.batch import model_figures

    p = snakemake.params  # noqa: F821
    for line in model_figures(snakemake.input.model_csv, p.engines, p.out_base, p.card):  # noqa: F821
        log.write(line + "\n")
