"""Snakemake script: write one notebook's papermill parameters as YAML (for -f)."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    import yaml

    with open(snakemake.output[0], "w") as f:  # noqa: F821
        yaml.safe_dump(dict(snakemake.params.values), f, sort_keys=True)  # noqa: F821
