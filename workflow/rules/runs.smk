# What each run's token timeline gives: per run, every metric definition per step (CSV) and
# the definitions figure; across runs, the calibrated model's predicted / measured table and
# one verdict per registry claim. Inputs are the run directories in full (every file).


rule metrics_table:
    input:
        code=PACKAGE_SOURCES,
        run=run_inputs,
    output:
        "data/derived/metrics/{run}.csv",
    params:
        run_dir=lambda wc: f"{config['runs_dir']}/{wc.run}",
    log:
        "logs/metrics_table-{run}.log",
    benchmark:
        "logs/benchmarks/metrics_table-{run}.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/metrics_table.py"


rule definitions_figure:
    input:
        code=PACKAGE_SOURCES,
        run=run_inputs,
    output:
        png="figures/definitions-{run}.png",
        svg="figures/definitions-{run}.svg",
    params:
        run_dir=lambda wc: f"{config['runs_dir']}/{wc.run}",
        out_base=lambda wc: f"figures/definitions-{wc.run}",
    log:
        "logs/definitions_figure-{run}.log",
    benchmark:
        "logs/benchmarks/definitions_figure-{run}.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/definitions_fig.py"


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
