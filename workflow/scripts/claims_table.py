"""Snakemake script: tidy claims table."""
from claimcheck.report.derive import claims_table

n = claims_table(snakemake.input.claims, snakemake.input.cards, snakemake.output[0])  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} claims\n")
