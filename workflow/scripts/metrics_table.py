"""Snakemake script: every metric definition for every step of one run, as CSV."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.report.derive import metrics_csv

    n = metrics_csv(snakemake.params.run_dir, snakemake.output[0])  # noqa: F821
    log.write(f"{n} rows\n")
