# One verdict per registry claim, from the run records. (Per run, every metric definition
# per step and the definitions figure, and across runs the calibrated model's predicted /
# measured table, come from rule run_products.)


rule verdicts_table:
    message:
        "verdicts_table: each claim's verdict on its own card (log {log})"
    input:
        code=PACKAGE_SOURCES,
        claims=config["claims"],
        cards=config["cards"],
        ceilings=config["ceilings"],
        weights=config["weights"],
        model=config["model_config"],
        protocols="config/protocols.yaml",
        records=RUN_RECORDS,
        carried="data/derived/carried_claims.csv",
    output:
        csv="data/derived/verdicts.csv",
        json="data/derived/verdicts.json",
        dtypes="data/derived/verdicts.dtypes.json",
    log:
        "logs/verdicts_table.log",
    benchmark:
        "logs/benchmarks/verdicts_table.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/verdicts_table.py"
