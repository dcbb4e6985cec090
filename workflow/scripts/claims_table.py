"""Snakemake script: tidy claims table (CSV for people, JSON for the figures)."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.derive import claims_table

    o = snakemake.output  # noqa: F821
    n = claims_table(snakemake.input.claims, snakemake.input.cards, o.csv, o.json)  # noqa: F821
    log.write(f"{n} claims\n")
