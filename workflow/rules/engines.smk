# Pinned engines: a virtual environment per lock file in envs/ (needs a package index;
# for an offline GPU host see envs/offline/). Not part of `all`.


rule engine_env:
    message:
        "engine_env: the venv of vLLM {wildcards.version} from its lock file (log {log})"
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


# The offline bundle of one lock file for a GPU host with no package index: the wheels its
# image lacks (planned from envs/offline/image-cuda.txt and bundle-rules.toml), each checked
# against the lock's sha256, in parts that fit one transfer beside the checkout. Writes
# part000.., SUMS and bundle.json (sizes, calls); install there with envs/offline/device.sh.
rule offline_bundle:
    message:
        "offline_bundle: the offline bundle of vLLM {wildcards.version} (log {log})"
    input:
        lock="envs/vllm-{version}.lock",
        image="envs/offline/image-cuda.txt",
        rules="envs/offline/bundle-rules.toml",
    output:
        directory(".offline/bundle/vllm-{version}"),
    params:
        wheels=".offline/wheels/vllm-{version}",
    log:
        "logs/offline_bundle-{version}.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/offline_bundle.py"
