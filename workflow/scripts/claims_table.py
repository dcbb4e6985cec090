"""Snakemake script: tidy claims table (CSV for people, JSON for the figures)."""
from claimcheck.report.derive import claims_table

o = snakemake.output  # noqa: F821
n = claims_table(snakemake.input.claims, snakemake.input.cards, o.csv, o.json)  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} claims\n")
