# Issue 41 items 4 and 6: every drafting run's steps beside the hand prediction kept before
# it, the verify-rows model (fitted on the drafting runs only) and the plain steps at the
# same streams and rows; and the figure of tokens kept needed against verify rows.
HAND_PREDICTIONS = sorted(str(p) for p in Path("data/raw/predictions/hand").glob("*.json"))


rule speculation:
    message:
        "speculation: every drafting run beside its hand prediction and the verify-rows model (log {log})"
    input:
        code=PACKAGE_SOURCES,
        runs=all_run_files,
        hand=HAND_PREDICTIONS,
        protocols="config/protocols.yaml",
        engines="config/engines.yaml",
    output:
        csv="data/derived/speculation.csv",
        dtypes="data/derived/speculation.dtypes.json",
    params:
        run_dirs=[f"{config['runs_dir']}/{r}" for r in RUNS],
        # the hand predictions' folder, from its files (the kept JSONs)
        hand_dir=lambda w, input: str(Path(input.hand[0]).parent),
    log:
        "logs/speculation.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/speculation.py"


rule speculation_figure:
    message:
        "speculation_figure: tokens kept needed against rows verified (log {log})"
    input:
        code=PACKAGE_SOURCES,
        verdicts="data/derived/verdicts.csv",
        speculation="data/derived/speculation.csv",
    output:
        png="figures/speculation.png",
        svg="figures/speculation.svg",
    log:
        "logs/speculation_figure.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/speculation_fig.py"
