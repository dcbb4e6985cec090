# Notebooks executed by papermill (through claimcheck.pipeline.nbrun: papermill -k python3
# without the kernel's start-up warning and shutdown interrupt, issue 40) with their
# parameters in a YAML file (-f): each writes
# its figures (PNG + SVG) and keeps the executed notebook under data/derived/notebooks/ as
# the record of how they were made. Inputs are exactly the files each notebook reads.


rule claim_map:
    message:
        "claim_map: every claim, streams against tok/s (log {log})"
    input:
        code=PACKAGE_SOURCES,
        nb="notebooks/claim_map.ipynb",
        params="data/derived/params/claim_map.yaml",
        claims="data/derived/claims.json",
        verdicts="data/derived/verdicts.json",
        records=RUN_RECORDS,
    output:
        png="figures/claim_map.png",
        svg="figures/claim_map.svg",
        nb="data/derived/notebooks/claim_map.ipynb",
    log:
        "logs/claim_map.log",
    benchmark:
        "logs/benchmarks/claim_map.tsv"
    conda:
        PIPELINE_ENV
    shell:
        "python3 -m claimcheck.pipeline.nbrun {input.nb} {output.nb} -f {input.params} > {log} 2>&1"


# Every roofline preset in one notebook execution (one kernel; issue 18 item 5).
# `papermill notebooks/roofline.ipynb` with one `preset` still draws one.
rule rooflines:
    message:
        "rooflines: every roofline preset's figure (log {log})"
    input:
        code=PACKAGE_SOURCES,
        nb="notebooks/roofline.ipynb",
        params="data/derived/params/rooflines.yaml",
        claims="data/derived/claims.json",
        records=RUN_RECORDS,
        cards=config["cards"],
        ceilings=config["ceilings"],
        weights=config["weights"],
        model=config["model_config"],
        preset=preset_inputs(),
    output:
        png=expand("figures/roofline-{name}.png", name=ROOFLINES),
        svg=expand("figures/roofline-{name}.svg", name=ROOFLINES),
        nb="data/derived/notebooks/rooflines.ipynb",
    log:
        "logs/rooflines.log",
    benchmark:
        "logs/benchmarks/rooflines.tsv"
    conda:
        PIPELINE_ENV
    shell:
        "python3 -m claimcheck.pipeline.nbrun {input.nb} {output.nb} -f {input.params} > {log} 2>&1"


# The measured notebook's figure and Markdown section for every run, in one process: the
# function notebooks/measured.ipynb calls for one run (`papermill` on it still works).
rule measured_figures:
    message:
        "measured_figures: every run against its roofline (log {log})"
    input:
        code=PACKAGE_SOURCES,
        records=RUN_RECORDS,
        claims="data/derived/claims.json",
        model=config["model_config"],
    output:
        png=expand("figures/measured-{run}.png", run=RUNS),
        md=expand("data/derived/measured/{run}.md", run=RUNS),
    params:
        runs=RUNS,
        record_in=lambda wc: "data/derived/runs/{run}.json",
        out_base=lambda wc: "figures/measured-{run}",
        out_md=lambda wc: "data/derived/measured/{run}.md",
    log:
        "logs/measured_figures.log",
    benchmark:
        "logs/benchmarks/measured_figures.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/measured_figures.py"


# The two figures of the Update card's runs that the body links (update_figure_links):
# decode against each format's bandwidth line, and what long prompts cost.
CARD_FIGURES = {"h200": "figures/h200-decode", "long": "figures/h200-long-prompts",
                "context": "figures/h200-context"}


rule card_figures:
    message:
        "card_figures: the Update's H200 figures (log {log})"
    input:
        code=PACKAGE_SOURCES,
        records=RUN_RECORDS,
        model=config["model_config"],
        cards=config["cards"],
        ceilings=config["ceilings"],
    output:
        decode_png=CARD_FIGURES["h200"] + ".png",
        decode_svg=CARD_FIGURES["h200"] + ".svg",
        long_png=CARD_FIGURES["long"] + ".png",
        long_svg=CARD_FIGURES["long"] + ".svg",
        context_png=CARD_FIGURES["context"] + ".png",
        context_svg=CARD_FIGURES["context"] + ".svg",
    params:
        card=config["update_card"],
        model_name=config["model_name"],
    log:
        "logs/card_figures.log",
    benchmark:
        "logs/benchmarks/card_figures.tsv"
    conda:
        PIPELINE_ENV
    script:
        "../scripts/card_figures.py"


rule update:
    message:
        "update: the Update section and its appendix (log {log})"
    input:
        code=PACKAGE_SOURCES,
        nb="notebooks/update.ipynb",
        params="data/derived/params/update.yaml",
        records=RUN_RECORDS,
        claims="data/derived/claims.json",
        protocols="config/protocols.yaml",
        model=config["model_config"],
        families="config/update_claims.yaml",
        verdicts="data/derived/verdicts.json",
        model_csv="data/derived/model.csv",
        beforehand="data/derived/beforehand.csv",
        carried="data/derived/carried_3090.csv",
        speculation="data/derived/speculation.csv",
        crossval="data/derived/crossval.csv",
        figures=["figures/claim_map.png", "figures/verdicts.png", "figures/speculation.png"]
        + [f"{base}.png" for base in CARD_FIGURES.values()]
        + expand("figures/roofline-{name}.png", name=ROOFLINES)
        + expand("figures/measured-{run}.png", run=RUNS)
        + expand("figures/definitions-{run}.png", run=RUNS),
    output:
        md="figures/update.md",
        appendix="figures/update-appendix.md",
        values="data/derived/update_values.csv",
        nb="data/derived/notebooks/update.ipynb",
    log:
        "logs/update.log",
    benchmark:
        "logs/benchmarks/update.tsv"
    conda:
        PIPELINE_ENV
    shell:
        # --log-output: the findings left out (and why) reach logs/update.log
        "python3 -m claimcheck.pipeline.nbrun --log-output {input.nb} {output.nb} -f {input.params} > {log} 2>&1"


# Each published figure against its card's plain roofline and its source's model.
rule verdict_figure:
    message:
        "verdict_figure: each claim's ratio to its card's roofline and model (log {log})"
    input:
        code=PACKAGE_SOURCES,
        verdicts="data/derived/verdicts.json",
    output:
        png="figures/verdicts.png",
        svg="figures/verdicts.svg",
    log:
        "logs/verdict_figure.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/verdicts_fig.py"
