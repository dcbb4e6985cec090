# Issue 19: one model figure per engine with committed runs: predicted against measured for
# every step in data/derived/model.csv, coloured by protocol, with the 5% band. All engines'
# figures in one process (issue 18 item 5): one interpreter and one read of model.csv.
import json

# One model figure per engine the plain step model prices: a drafting engine's runs
# (engine_config.speculative) are not priced by it (calibration.calibrate.choose_for).
# The figures are of the Update's card (config update_card): its runs' engines, its steps.
_PROVS = [json.loads((RUNS_DIR / r / "provenance.json").read_text()) for r in RUNS]
MODEL_ENGINES = sorted(
    {
        p["engine"]
        for p in _PROVS
        if p.get("card") == config["update_card"]
        and not (p.get("engine_config") or {}).get("speculative")
    }
)


rule model_figures:
    message:
        "model_figures: the step model against every step, one figure an engine (log {log})"
    input:
        code=PACKAGE_SOURCES,
        model_csv="data/derived/model.csv",
    output:
        png=expand("figures/model-{engine}.png", engine=MODEL_ENGINES),
        svg=expand("figures/model-{engine}.svg", engine=MODEL_ENGINES),
    params:
        engines=MODEL_ENGINES,
        out_base=lambda wc: "figures/model-{engine}",
        card=config["update_card"],
    log:
        "logs/model_figures.log",
    benchmark:
        "logs/benchmarks/model_figures.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/model_fig.py"


# Issue 43: the model on shapes it has not seen. Each run's steps predicted with that run
# left out of every term (calibration, decode rows, KV line, admission), beside the
# in-sample errors; the log gives the counts per engine and the Update's sentence.
rule crossval:
    message:
        "crossval: every run predicted with that run left out of every term (log {log})"
    input:
        code=PACKAGE_SOURCES,
        runs=all_run_files,
        model=config["model_config"],
        protocols="config/protocols.yaml",
        # a run with no calibration left on its card: its engine's terms carried from
        # another card's runs by the datasheets (claimcheck.predict.crossval_carry)
        cards=config["cards"],
        weights=config["weights"],
        engines="config/engines.yaml",
    output:
        csv="data/derived/crossval.csv",
        dtypes="data/derived/crossval.dtypes.json",
    params:
        run_dirs=[f"{config['runs_dir']}/{r}" for r in RUNS],
    log:
        "logs/crossval.log",
    benchmark:
        "logs/benchmarks/crossval.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/crossval.py"
