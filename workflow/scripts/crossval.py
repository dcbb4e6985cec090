"""Snakemake script: every committed run's steps predicted with that run left out of every
term of the model (data/derived/crossval.csv)."""
import time

from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    t0 = time.perf_counter()
    from claimcheck.predict.crossval import write

    user_cards = snakemake.config.get("user_cards") or None  # noqa: F821
    for line in write(snakemake.params.run_dirs, snakemake.output.csv, user_cards):  # noqa: F821
        log.write(line + "\n")
    log.write(f"{time.perf_counter() - t0:.1f} s\n")
