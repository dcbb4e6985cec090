"""Snakemake script: every registry figure predicted by the carried model on its own card."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from pathlib import Path

    from claimcheck.claims.registryfiles import load_claims, load_weight_rows
    from claimcheck.config.configfiles import load_engines, load_protocols
    from claimcheck.files.framefiles import write_table
    from claimcheck.physics.cardfiles import load_cards
    from claimcheck.predict.carry_claims import COLUMNS, carried_claim_rows
    from claimcheck.runs.run import load_runs

    inp = snakemake.input  # noqa: F821
    claims = load_claims(inp.claims, cards=set(load_cards(inp.cards)))
    user_cards = snakemake.config.get("user_cards") or None  # noqa: F821
    rows = carried_claim_rows(load_runs(Path(snakemake.params.runs_dir),  # noqa: F821
                                        load_cards(user_path=user_cards)),
                              claims, load_engines(Path(inp.engines))["w4a16-hyperqwen"],
                              load_weight_rows(inp.weights),
                              load_protocols(Path(inp.protocols)))
    write_table([{k: r.get(k) for k in COLUMNS} for r in rows],
                snakemake.output[0])  # noqa: F821
    n = sum(r.get("carried_model_tok_s") is not None for r in rows)
    log.write(f"{len(rows)} figures, {n} with a carried prediction\n")
