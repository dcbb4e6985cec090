# Notebooks executed by papermill: each writes its figures (PNG + SVG) and keeps the
# executed notebook under data/derived/notebooks/ as the record of how they were made.


rule claim_map:
    input:
        code=PACKAGE_SOURCES,
        nb="notebooks/claim_map.ipynb",
        claims=config["claims"],
        cards=config["cards"],
        runs=all_run_inputs,
    output:
        png="figures/claim_map.png",
        svg="figures/claim_map.svg",
        nb="data/derived/notebooks/claim_map.ipynb",
    params:
        runs_dir=config["runs_dir"],
    log:
        "logs/claim_map.log",
    conda:
        PIPELINE_ENV
    shell:
        "papermill -k python3 {input.nb} {output.nb} -p claims_csv {input.claims}"
        " -p cards_csv {input.cards} -p runs_dir {params.runs_dir}"
        " -p out_base figures/claim_map > {log} 2>&1"


rule roofline:
    input:
        code=PACKAGE_SOURCES,
        nb="notebooks/roofline.ipynb",
        claims=config["claims"],
        cards=config["cards"],
        model=config["model_config"],
        runs=all_run_inputs,
    output:
        png="figures/roofline-{name}.png",
        svg="figures/roofline-{name}.svg",
        nb="data/derived/notebooks/roofline-{name}.ipynb",
    params:
        preset=roofline_params,
        model_name=config["model_name"],
        runs_dir=config["runs_dir"],
    log:
        "logs/roofline-{name}.log",
    conda:
        PIPELINE_ENV
    shell:
        "papermill -k python3 {input.nb} {output.nb} {params.preset}"
        " -p config_json {input.model} -p model_name '{params.model_name}'"
        " -p claims_csv {input.claims} -p runs_dir {params.runs_dir}"
        " -p out_base figures/roofline-{wildcards.name}"
        " > {log} 2>&1"


rule measured:
    input:
        code=PACKAGE_SOURCES,
        nb="notebooks/measured.ipynb",
        run=run_inputs,
        claims=config["claims"],
        cards=config["cards"],
        model=config["model_config"],
    output:
        png="figures/measured-{run}.png",
        svg="figures/measured-{run}.svg",
        md="data/derived/measured/{run}.md",
        nb="data/derived/notebooks/measured-{run}.ipynb",
    params:
        run_dir=lambda wc: f"{config['runs_dir']}/{wc.run}",
    log:
        "logs/measured-{run}.log",
    conda:
        PIPELINE_ENV
    shell:
        "papermill -k python3 {input.nb} {output.nb} -p run_dir {params.run_dir}"
        " -p claims_csv {input.claims} -p config_json {input.model}"
        " -p out_base figures/measured-{wildcards.run} -p out_md {output.md} > {log} 2>&1"


rule update:
    input:
        code=PACKAGE_SOURCES,
        nb="notebooks/update.ipynb",
        runs=all_run_inputs,
        claims=config["claims"],
        cards=config["cards"],
        model=config["model_config"],
        figures=["figures/claim_map.png"]
        + expand("figures/roofline-{name}.png", name=ROOFLINES)
        + expand("figures/measured-{run}.png", run=RUNS),
    output:
        md="figures/update.md",
        nb="data/derived/notebooks/update.ipynb",
    params:
        runs_dir=config["runs_dir"],
        card=config["update_card"],
        links=update_figure_links,
    log:
        "logs/update.log",
    conda:
        PIPELINE_ENV
    shell:
        "papermill -k python3 {input.nb} {output.nb} -p runs_dir {params.runs_dir}"
        " -p card {params.card} -p claims_csv {input.claims} -p config_json {input.model}"
        " -p figures {params.links} -p out_md {output.md} > {log} 2>&1"
