# Derived tables: rebuilt from data/raw, never committed.


rule claims_table:
    input:
        code=PACKAGE_SOURCES,
        claims=config["claims"],
        cards=config["cards"],
    output:
        "data/derived/claims.csv",
    log:
        "logs/claims_table.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/claims_table.py"


rule claims_roofline:
    input:
        code=PACKAGE_SOURCES,
        claims=config["claims"],
        cards=config["cards"],
        ceilings=config["ceilings"],
        weights=config["weights"],
        model=config["model_config"],
    output:
        "data/derived/claims_roofline.csv",
    params:
        etas=config["claim_roofline_etas"],
    log:
        "logs/claims_roofline.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/claims_roofline.py"


rule runs_table:
    input:
        code=PACKAGE_SOURCES,
        runs=all_run_inputs,
        cards=config["cards"],
        model=config["model_config"],
    output:
        "data/derived/runs.csv",
    params:
        runs_dir=config["runs_dir"],
    log:
        "logs/runs_table.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/runs_table.py"
