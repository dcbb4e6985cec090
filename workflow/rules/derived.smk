# Derived data: rebuilt from data/raw, never committed. The figures read these (tidy
# claims JSON, one run-record JSON per run), never data/raw/runs directly (the roofline
# presets read the start log and provenance of a weights_run).

# Every roofline preset through the one physics check of every road (the CLI's, the
# notebook's) before any DAG is built: one that cannot be is refused naming the key.
from claimcheck.pipeline.presets import check_presets

check_presets(config["rooflines"], source="config/config.yaml",
              model_config=config["model_config"], cards=CARDS,
              ceilings_csv=config["ceilings"], weights_csv=config["weights"],
              runs_dir=config["runs_dir"])


rule registry_check:
    message:
        "registry_check: the registry's quotes against the seeds, protocols' claim ids (log {log})"
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
    message:
        "claims_table: the claims registry as tidy tables (log {log})"
    input:
        code=PACKAGE_SOURCES,
        checked=REGISTRY_CHECK,
        claims=config["claims"],
        cards=config["cards"],
    output:
        csv="data/derived/claims.csv",
        json="data/derived/claims.json",
        dtypes="data/derived/claims.dtypes.json",
    log:
        "logs/claims_table.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/claims_table.py"


rule claims_roofline:
    message:
        "claims_roofline: each claim's roofline at its own configuration (log {log})"
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
        dtypes="data/derived/claims_roofline.dtypes.json",
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


# Every run directory read once, in one process (one per run cost a Python start and the
# imports each time): run records, metrics tables and definitions figures of all runs, and
# from the same reads the calibrated model's predicted / measured table (the log names any
# run with no usable calibration on its card).
rule run_products:
    message:
        say(
            "run_products: every run's record, metrics table and definitions figure, then the model table (log {log})"
        )
    input:
        code=PACKAGE_SOURCES,
        runs=all_run_files,
        cards=config["cards"],
        ceilings=config["ceilings"],
        model=config["model_config"],
    output:
        records=RUN_RECORDS,
        metrics=expand("data/derived/metrics/{run}.csv", run=RUNS),
        metrics_dtypes=expand("data/derived/metrics/{run}.dtypes.json", run=RUNS),
        png=expand("figures/definitions-{run}.png", run=RUNS),
        model="data/derived/model.csv",
        model_dtypes="data/derived/model.dtypes.json",
    params:
        run_dirs=[f"{config['runs_dir']}/{r}" for r in RUNS],
        record_out=lambda wc: "data/derived/runs/{run}.json",
        metrics_out=lambda wc: "data/derived/metrics/{run}.csv",
        definitions_out=lambda wc: "figures/definitions-{run}",
    log:
        "logs/run_products.log",
    benchmark:
        "logs/benchmarks/run_products.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/run_products.py"


rule runs_table:
    message:
        "runs_table: one row per measured step of every run (log {log})"
    input:
        code=PACKAGE_SOURCES,
        records=RUN_RECORDS,
    output:
        "data/derived/runs.csv",
        dtypes="data/derived/runs.dtypes.json",
    log:
        "logs/runs_table.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/runs_table.py"


rule notebook_params:
    message:
        "notebook_params: the parameters of notebook {wildcards.target} (log {log})"
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
