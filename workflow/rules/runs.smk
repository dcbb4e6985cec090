# What the runs' token timelines give across runs: the calibrated model's predicted /
# measured table and one verdict per registry claim. (Per run, every metric definition per
# step and the definitions figure come from rule run_products.) Inputs are the run
# directories in full (every file).


rule model_table:
    input:
        code=PACKAGE_SOURCES,
        runs=all_run_files,
        cards=config["cards"],
        model=config["model_config"],
    output:
        "data/derived/model.csv",
    params:
        run_dirs=[f"{config['runs_dir']}/{r}" for r in RUNS],
    log:
        "logs/model_table.log",
    benchmark:
        "logs/benchmarks/model_table.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/model_table.py"


rule verdicts_table:
    input:
        code=PACKAGE_SOURCES,
        claims=config["claims"],
        cards=config["cards"],
        ceilings=config["ceilings"],
        weights=config["weights"],
        model=config["model_config"],
        protocols="config/protocols.yaml",
        records=RUN_RECORDS,
    output:
        csv="data/derived/verdicts.csv",
        json="data/derived/verdicts.json",
    log:
        "logs/verdicts_table.log",
    benchmark:
        "logs/benchmarks/verdicts_table.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/verdicts_table.py"
