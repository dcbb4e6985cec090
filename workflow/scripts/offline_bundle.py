"""Snakemake script: one lock file's offline bundle (claimcheck.envs.offline.build_bundle)."""
from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.envs.offline import build_bundle

    s = snakemake  # noqa: F821
    build_bundle(s.input.lock, s.input.image, s.input.rules, s.output[0], s.params.wheels)
