"""Snakemake script: the roofline at each claim's own configuration."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.derive import claims_roofline_table

    i = snakemake.input  # noqa: F821
    n = claims_roofline_table(i.claims, i.cards, i.ceilings, i.weights, i.model,
                              snakemake.output[0], tuple(snakemake.params.etas))  # noqa: F821
    log.write(f"{n} rows\n")
