"""Snakemake script: one run directory read once, as its run-record JSON."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.report.derive import run_record

    i = snakemake.input  # noqa: F821
    n = run_record(snakemake.params.run_dir, i.cards, i.ceilings, i.model,  # noqa: F821
                   snakemake.output[0])  # noqa: F821
    log.write(f"{n} steps\n")
