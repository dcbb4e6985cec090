"""Snakemake script: predicted / measured per step of every run (calibrated step model)."""
from claimcheck.report.derive import model_table

n = model_table(list(snakemake.params.run_dirs), snakemake.output[0])  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} rows\n")
