"""Snakemake script: the roofline at each claim's own configuration."""
from claimcheck.report.derive import claims_roofline_table

i = snakemake.input  # noqa: F821
n = claims_roofline_table(i.claims, i.cards, i.ceilings, i.weights, i.model,
                          snakemake.output[0], tuple(snakemake.params.etas))  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} rows\n")
