# Issue 19: one model figure per engine with committed runs: predicted against measured for
# every step in data/derived/model.csv, coloured by protocol, with the 5% band. All engines'
# figures in one process (issue 18 item 5): one interpreter and one read of model.csv.
import json

MODEL_ENGINES = sorted(
    {json.loads((RUNS_DIR / r / "provenance.json").read_text())["engine"] for r in RUNS}
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
    log:
        "logs/model_figures.log",
    benchmark:
        "logs/benchmarks/model_figures.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/model_fig.py"
