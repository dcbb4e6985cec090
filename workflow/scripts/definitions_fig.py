"""Snakemake script: one run's definitions figure (PNG + SVG)."""
from claimcheck.report.definitions_fig import write

paths = write(snakemake.params.run_dir, snakemake.params.out_base)  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write("".join(f"{p}\n" for p in paths))
