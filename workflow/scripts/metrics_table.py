"""Snakemake script: every metric definition for every step of one run, as CSV."""
from claimcheck.report.derive import metrics_csv

n = metrics_csv(snakemake.params.run_dir, snakemake.output[0])  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} rows\n")
