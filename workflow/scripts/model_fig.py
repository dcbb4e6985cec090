"""Snakemake script: one engine's model figure (PNG + SVG) from model.csv."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.report.model_fig import write

    paths = write(snakemake.input.model_csv, snakemake.wildcards.engine,  # noqa: F821
                  snakemake.params.out_base)  # noqa: F821
    log.write("".join(f"{p}\n" for p in paths))
