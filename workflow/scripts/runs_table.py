"""Snakemake script: every measured step, joined with provenance and roofline."""
from claimcheck.report.derive import runs_table

i = snakemake.input  # noqa: F821
n = runs_table(snakemake.params.runs_dir, i.cards, i.model, snakemake.output[0])  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} steps\n")
