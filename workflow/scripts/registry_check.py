"""Snakemake script: the registry's own checks before anything renders: structure, every
quote against its seed (when the seed articles are present; said when not), the exclusions,
and every claim id a protocol cites (config/protocols.yaml source_claims)."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    import sys
    from pathlib import Path

    from claimcheck.claims.registryfiles import load_claims, load_excluded
    from claimcheck.claims.seedfiles import check_against_seeds, seeds_dir
    from claimcheck.config.configfiles import load_protocols
    from claimcheck.config.protocols import check_source_claims
    from claimcheck.physics.cardfiles import load_cards

    i = snakemake.input  # noqa: F821
    claims = load_claims(i.claims, cards=set(load_cards(i.cards)))
    check_source_claims(load_protocols(i.protocols), {c["id"] for c in claims},
                        str(i.protocols))
    folder = seeds_dir()
    if folder is None:
        said = (f"{i.claims}: {len(claims)} claims, structure and protocol ids OK; quotes NOT "
                "checked: no seed articles at ../shared/seeds beside the repository (set "
                "CLAIMCHECK_SEEDS to the folder of the seed articles)")
        print(f"registry_check: {said}", file=sys.__stderr__)
    else:
        excluded = load_excluded(i.excluded)
        check_against_seeds(claims, str(i.claims), folder, excluded, str(i.excluded))
        said = (f"{i.claims}: {len(claims)} claims OK (quotes found in {folder}); "
                f"{Path(i.excluded).name}: {len(excluded)} exclusions OK; protocol ids OK")
    log.write(said + "\n")
    Path(snakemake.output[0]).write_text(said + "\n")  # noqa: F821
