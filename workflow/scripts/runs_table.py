"""Snakemake script: every step of every run, from the run records."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.derive import runs_table

    n = runs_table(list(snakemake.input.records), snakemake.output[0])  # noqa: F821
    log.write(f"{n} steps\n")
