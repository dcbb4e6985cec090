"""Snakemake script: predicted / measured per step of every run (calibrated step model);
the log names any run with no usable calibration on its card."""
from claimcheck.report.derive import model_table

missing: list[str] = []
n = model_table(list(snakemake.params.run_dirs), snakemake.output[0], missing)  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} rows\n" + "".join(f"{m}\n" for m in missing))
