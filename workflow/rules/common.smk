# Shared values and input functions for the rules.
import os
from pathlib import Path

RAW_INPUTS = [config["claims"], config["cards"], config["ceilings"], config["weights"],
              config["model_config"]]
ROOFLINES = [r["name"] for r in config["rooflines"]]
RUNS = sorted(p.parent.name for p in Path(config["runs_dir"]).glob("*/provenance.json"))
PIPELINE_ENV = "../../envs/pipeline.yaml"
# The package code: a change to it rebuilds what it draws or computes.
PACKAGE_SOURCES = sorted(str(p) for p in Path("src/claimcheck").glob("*.py"))


def roofline_preset(wildcards):
    """The config entry of one roofline figure."""
    return next(r for r in config["rooflines"] if r["name"] == wildcards.name)


def roofline_params(wildcards):
    """papermill -p arguments for one roofline preset."""
    r = roofline_preset(wildcards)
    return " ".join([
        f"-p card {r['card']}",
        f"-p weights_gb {float(r.get('weights_gb', 0))}",
        f"-p weights_gib {float(r.get('weights_gib', 0))}",
        f"-p weights_format {r.get('weights_format', 'w4a16')}",
        "-p etas " + ",".join(str(e) for e in r["etas"]),
        f"-p tflops {float(r.get('tflops', 0))}",
        f"-p state_dtype {r['state_dtype']}",
        f"-p kv_dtype {r['kv_dtype']}",
        f"-p context {int(r['context'])}",
        f"-p free_gib {float(r.get('free_gib', 0))}",
        f"-p max_streams {int(r['max_streams'])}",
    ])


def run_files(run):
    """Every raw file of one run that the figures read."""
    d = Path(config["runs_dir"]) / run
    return [str(d / "provenance.json")] + sorted(str(p) for p in d.glob("steps/*/bench.json"))


def run_inputs(wildcards):
    return run_files(wildcards.run)


def all_run_inputs(wildcards):
    return [f for run in RUNS for f in run_files(run)]


def update_figure_links(wildcards):
    """name=path pairs, relative to figures/, for the Update section's links."""
    links = ["claim_map=claim_map.png"]
    links += [f"roofline-{n}=roofline-{n}.png" for n in ROOFLINES]
    links += [f"measured-{r}=measured-{r}.png" for r in RUNS]
    return ",".join(links)
