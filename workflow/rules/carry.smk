# Issue 42: the RTX 3090's published figures (the article's Update and HyperQwen's, no
# speculation) against the W4A16 engine predicted from the local card's runs alone, every
# term carried by the 3090's datasheet (claimcheck.predict.carry_table).


rule carried_3090:
    message:
        "carried_3090: the article's RTX 3090 figures predicted from this card's runs alone (log {log})"
    input:
        code=PACKAGE_SOURCES,
        runs=all_run_files,
        claims=config["claims"],
        cards=config["cards"],
        weights=config["weights"],
        engines="config/engines.yaml",
        protocols="config/protocols.yaml",
    output:
        "data/derived/carried_3090.csv",
    params:
        runs_dir=config["runs_dir"],
    log:
        "logs/carried_3090.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/carried_3090.py"


# Issue 42 item 4: every registry figure at its own configuration on its own card, predicted
# by the carried model from the local card's runs (claimcheck.predict.carry_claims); the
# verdicts read against it first.
rule carried_claims:
    message:
        "carried_claims: every registry figure against the model carried to its own card (log {log})"
    input:
        code=PACKAGE_SOURCES,
        runs=all_run_files,
        claims=config["claims"],
        cards=config["cards"],
        weights=config["weights"],
        engines="config/engines.yaml",
        protocols="config/protocols.yaml",
    output:
        "data/derived/carried_claims.csv",
        dtypes="data/derived/carried_claims.dtypes.json",
    params:
        runs_dir=config["runs_dir"],
    log:
        "logs/carried_claims.log",
    benchmark:
        "logs/benchmarks/carried_claims.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/carried_claims.py"
