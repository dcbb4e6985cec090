"""Snakemake script: every kept prediction against its run, step by step (beforehand.csv)."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.beforehand_index import write_table

    i = snakemake.input  # noqa: F821
    user_cards = snakemake.config.get("user_cards") or None  # noqa: F821
    for line in write_table(i.index, snakemake.params.run_dirs,  # noqa: F821
                            snakemake.output.csv, user_cards):  # noqa: F821
        log.write(line + "\n")
