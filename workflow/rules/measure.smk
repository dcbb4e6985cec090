# `snakemake --cores 1 measure`: replay the configured protocols on this machine's GPU.
# Each call makes new run directories under data/raw/runs/ (never overwriting one).
# Never part of `all`; CI never runs it. Which GPU: set CUDA_VISIBLE_DEVICES yourself.


rule measure:
    input:
        engines="config/engines.yaml",
        protocols="config/protocols.yaml",
    output:
        touch("logs/measure.done"),
    params:
        card=lambda wc: measure_config()["card"],
        engine=lambda wc: measure_config()["engine"],
        protocols=lambda wc: " ".join(f"--protocol {p}" for p in measure_config()["protocols"]),
        runs_dir=config["runs_dir"],
    log:
        "logs/measure.log",
    conda:
        PIPELINE_ENV
    shell:
        "claimcheck measure --card {params.card} --engine {params.engine} {params.protocols}"
        " --runs-dir {params.runs_dir} > {log} 2>&1"
