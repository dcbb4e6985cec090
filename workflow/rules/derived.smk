# Derived data: rebuilt from data/raw, never committed. The figures read these (tidy
# claims JSON, one run-record JSON per run), never data/raw/runs directly.


rule registry_check:
    input:
        code=PACKAGE_SOURCES,
        claims=config["claims"],
        excluded=EXCLUDED,
        cards=config["cards"],
        protocols="config/protocols.yaml",
        seeds=SEED_FILES,
    output:
        REGISTRY_CHECK,
    params:
        seeds=lambda wc: files_hash(SEED_FILES),  # the seeds are outside: never touched
    log:
        "logs/registry_check.log",
    priority: 100
    conda:
        PIPELINE_ENV
    script:
        "../scripts/registry_check.py"


rule claims_table:
    input:
        code=PACKAGE_SOURCES,
        checked=REGISTRY_CHECK,
        claims=config["claims"],
        cards=config["cards"],
    output:
        csv="data/derived/claims.csv",
        json="data/derived/claims.json",
    log:
        "logs/claims_table.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/claims_table.py"


rule claims_roofline:
    input:
        code=PACKAGE_SOURCES,
        checked=REGISTRY_CHECK,
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
    benchmark:
        "logs/benchmarks/claims_roofline.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/claims_roofline.py"


rule run_record:
    input:
        code=PACKAGE_SOURCES,
        run=run_inputs,
        cards=config["cards"],
        ceilings=config["ceilings"],
        model=config["model_config"],
    output:
        "data/derived/runs/{run}.json",
    params:
        run_dir=lambda wc: f"{config['runs_dir']}/{wc.run}",
    log:
        "logs/run_record-{run}.log",
    benchmark:
        "logs/benchmarks/run_record-{run}.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/run_record.py"


rule runs_table:
    input:
        code=PACKAGE_SOURCES,
        records=RUN_RECORDS,
    output:
        "data/derived/runs.csv",
    log:
        "logs/runs_table.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/runs_table.py"


rule notebook_params:
    output:
        "data/derived/params/{target}.yaml",
    params:
        values=notebook_params,
    log:
        "logs/notebook_params-{target}.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/nb_params.py"
