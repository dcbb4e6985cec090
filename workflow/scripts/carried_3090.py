"""Snakemake script: the 3090's published figures against the carried prediction."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    import csv
    from pathlib import Path

    from claimcheck.config.configfiles import load_engines, load_protocols
    from claimcheck.physics.cardfiles import load_cards
    from claimcheck.predict.carry_table import COLUMNS, carried_rows
    from claimcheck.runs.run import load_runs

    inp = snakemake.input  # noqa: F821
    with open(inp.claims, newline="") as f:
        claims = list(csv.DictReader(f))
    user_cards = snakemake.config.get("user_cards") or None  # noqa: F821
    rows = carried_rows(load_runs(Path(snakemake.params.runs_dir),  # noqa: F821
                                  load_cards(user_path=user_cards)), claims,
                        load_engines(Path(inp.engines))["w4a16-hyperqwen"],
                        load_protocols(Path(inp.protocols)))
    with open(snakemake.output[0], "w", newline="") as f:  # noqa: F821
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    log.write(f"{len(rows)} figures\n")
