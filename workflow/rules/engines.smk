# Pinned engines: a virtual environment per lock file in envs/ (needs a package index;
# for an offline GPU host see envs/offline/). Not part of `all`.


rule engine_env:
    input:
        lock="envs/vllm-{version}.lock",
    output:
        touch("envs/.venv/vllm-{version}/.installed"),
    params:
        venv=lambda wc, output: os.path.dirname(output[0]),
    log:
        "logs/engine_env-{version}.log",
    conda:
        PIPELINE_ENV
    shell:
        "(python3.12 -m venv {params.venv}"
        " && {params.venv}/bin/pip install --no-deps --require-hashes -r {input.lock}"
        " && {params.venv}/bin/pip install --no-deps -e ."
        " && {params.venv}/bin/python -c 'import vllm, torch; print(vllm.__version__, torch.__version__)'"
        ") > {log} 2>&1"
