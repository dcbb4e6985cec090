"""Snakemake script: predicted / measured per step of every run (calibrated step model);
the log names any run with no usable calibration on its card."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.report.derive import model_table

    missing: list[str] = []
    n = model_table(list(snakemake.params.run_dirs), snakemake.output[0], missing)  # noqa: F821
    log.write(f"{n} rows\n" + "".join(f"{m}\n" for m in missing))
