# `snakemake --cores 1 measure`: replay the configured protocols on this machine's GPU, or
# `snakemake --profile workflow/profiles/slurm measure`: one SLURM job per measure.matrix
# entry (one host, one engine, its protocols with one server start). Each job makes new run
# directories under runs_dir (shared storage on a cluster; never overwriting one) and
# records SLURM_* in provenance. Never part of `all`: render locally afterwards. A job
# that fails leaves its log (logs/measure/ENTRY.log) and does not stop the others under
# --keep-going (the SLURM profile sets it). Which GPU locally: CUDA_VISIBLE_DEVICES.
from claimcheck.measure import matrix as mx

if "measure" in config:  # refuse bad cards and duplicate jobs before any DAG is built
    mx.entries(config["measure"], CARDS)


localrules:
    measure,


rule measure:
    input:
        lambda wc: expand(
            "logs/measure/{entry}.done",
            entry=sorted(mx.entries(measure_config(), CARDS)),
        ),


rule measure_job:
    input:
        engines=lambda wc: mx.job(measure_config(), CARDS, wc.entry)["engines_file"],
        protocols="config/protocols.yaml",
    output:
        touch("logs/measure/{entry}.done"),
    wildcard_constraints:
        entry=r"[A-Za-z0-9._-]+",
    params:
        j=lambda wc: mx.job(measure_config(), CARDS, wc.entry),
        runs_dir=config["runs_dir"],
    resources:
        **{
            k: (
                lambda wc, k=k: mx.resources(mx.entries(measure_config(), CARDS)[wc.entry])[k]
            )
            for k in mx.RESOURCE_KEYS
        },
    log:
        "logs/measure/{entry}.log",
    conda:
        PIPELINE_ENV
    shell:
        # --port 0: a free port, so two jobs on one node do not collide. Under SLURM the
        # job's GPUs (SLURM_JOB_GPUS) are the NVML indices sampled. `claimcheck measure`
        # refuses what cannot run (no GPU, no vLLM in the engine's python, a card that is
        # not the GPU: measure/preflight.py) where the job runs, before any server starts;
        # a job that fails prints its error line (ENTRY: claimcheck: error: ...) to the job's
        # stderr, i.e. Snakemake's output when run locally, logs/slurm/ under SLURM.
        "claimcheck measure --card {params.j[card]} --engine {params.j[engine]} {params.j[args]}"
        " --engines-file {input.engines} --runs-dir {params.runs_dir}"
        " --state .claimcheck/measure-{wildcards.entry} --port 0"
        " --health-timeout {params.j[health_timeout_s]} --one-client-process"
        " ${{SLURM_JOB_GPUS:+--gpus $SLURM_JOB_GPUS}} > {log} 2>&1"
        " || {{ rc=$?; {{ grep -h '^claimcheck: error: ' {log} || true; }} | tail -n 1"
        " | sed 's/^/{wildcards.entry}: /' >&2; exit $rc; }}"
