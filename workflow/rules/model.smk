# Issue 19: one model figure per engine with committed runs: predicted against measured for
# every step in data/derived/model.csv, coloured by protocol, with the 5% band.
import json

MODEL_ENGINES = sorted(
    {json.loads((RUNS_DIR / r / "provenance.json").read_text())["engine"] for r in RUNS}
)


rule model_figure:
    input:
        code=PACKAGE_SOURCES,
        model_csv="data/derived/model.csv",
    output:
        png="figures/model-{engine}.png",
        svg="figures/model-{engine}.svg",
    wildcard_constraints:
        engine=_one_of(MODEL_ENGINES),
    params:
        out_base=lambda wc: f"figures/model-{wc.engine}",
    log:
        "logs/model_figure-{engine}.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/model_fig.py"
