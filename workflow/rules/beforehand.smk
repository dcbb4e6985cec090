# Issue 31: each prediction kept before a run (data/raw/predictions/*.json, listed with the
# commit it was written at in index.csv) set against the runs of its card, engine and
# protocol, one row per measured step; a prediction with no run yet is listed "not measured
# yet". The index is read (and checked) here, before any DAG is built.
from claimcheck.pipeline.beforehand_index import read_index

PREDICTIONS_INDEX = "data/raw/predictions/index.csv"
PREDICTION_FILES = sorted(str(p) for p in Path(PREDICTIONS_INDEX).parent.glob("*.json"))
_PREDICTED = {(r["card"], r["engine"], r["protocol"]) for r in read_index(PREDICTIONS_INDEX)}
BEFOREHAND_RUNS = [
    r
    for r in RUNS
    if tuple(run_provenance(r).get(k) for k in ("card", "engine", "protocol")) in _PREDICTED
]


rule beforehand:
    message:
        say("beforehand: each prediction kept before its run, against that run (log {log})")
    input:
        code=PACKAGE_SOURCES,
        index=PREDICTIONS_INDEX,
        predictions=PREDICTION_FILES,
        runs=sorted({f for r in BEFOREHAND_RUNS for f in run_files(r)}),
        manifest=manifest_input() if BEFOREHAND_RUNS else [],
    output:
        csv="data/derived/beforehand.csv",
        dtypes="data/derived/beforehand.dtypes.json",
    params:
        run_dirs=[f"{config['runs_dir']}/{r}" for r in BEFOREHAND_RUNS],
    log:
        "logs/beforehand.log",
    conda:
        PIPELINE_ENV
    script:
        "../scripts/beforehand.py"
