"""Snakemake script: one run's definitions figure (PNG + SVG)."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.report.definitions_fig import write

    paths = write(snakemake.params.run_dir, snakemake.params.out_base)  # noqa: F821
    log.write("".join(f"{p}\n" for p in paths))
