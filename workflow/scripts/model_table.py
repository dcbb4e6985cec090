"""Snakemake script: predicted / measured per step of every run (calibrated step model)."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.report.derive import model_table

    n = model_table(list(snakemake.params.run_dirs), snakemake.output[0])  # noqa: F821
    log.write(f"{n} rows\n")
