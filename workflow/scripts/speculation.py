"""Snakemake script: every drafting run's steps beside the hand prediction kept before it,
the verify-rows model and the plain steps at the same streams and rows (speculation.csv)."""
from pathlib import Path

from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.config.configfiles import load_engines, load_protocols
    from claimcheck.physics.cardfiles import load_cards
    from claimcheck.pipeline.spec_table import speculation_table
    from claimcheck.runs.run import load_run

    i = snakemake.input  # noqa: F821
    cards = load_cards(user_path=snakemake.config.get("user_cards") or None)  # noqa: F821
    runs = [load_run(p, cards) for p in snakemake.params.run_dirs]  # noqa: F821
    hand = Path(snakemake.params.hand_dir)  # noqa: F821
    t = speculation_table(runs, load_engines(), load_protocols(i.protocols), hand)
    from claimcheck.files.framefiles import write_table

    write_table(t, snakemake.output.csv)  # noqa: F821  (and its dtypes beside it)
    log.write(f"{len(t)} drafting step(s)\n")
