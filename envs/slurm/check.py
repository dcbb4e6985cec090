"""Checks of the SLURM test (envs/slurm/run-slurm-test.sh) over its work directory:
sacct shows the two good jobs COMPLETED and the bogus one FAILED, their run directories
landed under runs_dir with provenance naming the SLURM job id, the failure is reported
with its log path, and `all` rendered a figure of each run."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(w: Path, measure_rc: int, all_rc: int) -> list[str]:
    errors: list[str] = []
    repo = w / "repo"
    jobs = [line.split("|") for line in (w / "sacct.txt").read_text().splitlines() if line]
    state = {job_id: st for job_id, _, st, _ in jobs}
    completed = {j for j, st in state.items() if st == "COMPLETED"}
    failed = {j for j, st in state.items() if st.startswith("FAILED")}
    if len(completed) != 2 or len(failed) != 1:
        errors.append(f"sacct: want 2 COMPLETED and 1 FAILED jobs, got {state}")
    if measure_rc == 0:
        errors.append("snakemake measure exited 0 although the bogus engine's job failed")
    out = (w / "snakemake-measure.log").read_text()
    bogus_log = "logs/measure/cpu-tiny-bogus.log"
    if bogus_log not in out:
        errors.append(f"the failed job's log path {bogus_log} is not in Snakemake's report")
    elif "--bogus-flag" not in (repo / bogus_log).read_text():
        errors.append(f"{bogus_log} does not name the bad flag")
    if "logs/slurm" not in out:
        errors.append("Snakemake's report names no SLURM log (logs/slurm/...)")
    runs = sorted(p for p in (repo / "data/raw/runs").iterdir() if p.name.startswith("cpu-"))
    engines = set()
    for run in runs:
        prov = json.loads((run / "provenance.json").read_text())
        engines.add(prov["engine"])
        job = prov["environment"].get("SLURM_JOB_ID")
        if prov["status"] != "complete":
            errors.append(f"{run.name}: status {prov['status']}")
        if job not in completed:
            errors.append(f"{run.name}: SLURM_JOB_ID {job!r} is not a COMPLETED job {completed}")
        if not (repo / "figures" / f"measured-{run.name}.png").is_file():
            errors.append(f"`all` rendered no figures/measured-{run.name}.png")
    if engines != {"tiny-dense", "tiny-hybrid"}:
        errors.append(f"runs landed for engines {sorted(engines)}, want tiny-dense, tiny-hybrid")
    if all_rc != 0:
        errors.append(f"snakemake --cores 1 all exited {all_rc}")
    return errors


if __name__ == "__main__":
    errs = main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    for e in errs:
        print(f"SLURM test: FAIL: {e}", file=sys.stderr)
    print("SLURM test: " + ("FAILED" if errs else
                            "passed (2 jobs COMPLETED, 1 FAILED and reported, runs rendered)"))
    sys.exit(1 if errs else 0)
