"""Snakemake script: one verdict and label audit per registry claim."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.derive import verdicts_table

    i = snakemake.input  # noqa: F821
    n = verdicts_table(i.claims, i.cards, i.ceilings, i.weights, i.model, i.protocols,
                       list(i.records), snakemake.output.csv, snakemake.output.json,  # noqa: F821
                       carried_csv=i.carried)
    log.write(f"{n} rows\n")
