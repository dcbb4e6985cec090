"""Snakemake script: one run directory read once, as its run-record JSON."""
from claimcheck.report.derive import run_record

i = snakemake.input  # noqa: F821
n = run_record(snakemake.params.run_dir, i.cards, i.ceilings, i.model,  # noqa: F821
               snakemake.output[0])  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write(f"{n} steps\n")
