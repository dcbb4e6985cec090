"""Snakemake script: every step of every run, from the run records."""
from claimcheck.report.derive import runs_table

n = runs_table(list(snakemake.input.records), snakemake.output[0])  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} steps\n")
