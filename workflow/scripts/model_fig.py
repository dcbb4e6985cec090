"""Snakemake script: one engine's model figure (PNG + SVG) from model.csv."""
from claimcheck.report.model_fig import write

paths = write(snakemake.input.model_csv, snakemake.wildcards.engine,  # noqa: F821
              snakemake.params.out_base)  # noqa: F821
with open(snakemake.log[0], "w") as f:  # noqa: F821
    f.write("".join(f"{p}\n" for p in paths))
