"""Snakemake script: every run directory read once, in one process: its run-record JSON,
its metrics CSV and its definitions figure (PNG + SVG); then the model table of all runs.
The log gets a line per run; the terminal a line as each run is done (the rule takes about
a minute), since the workflow profile prints nothing else while a job runs."""
import sys

from rulelog import rule_log

with rule_log(snakemake) as log:  # noqa: F821
    from claimcheck.pipeline.batch import run_products

    i, o, p = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    user_cards = snakemake.config.get("user_cards") or None  # noqa: F821
    n = len(p.run_dirs)
    print(f"run_products: {n} runs, each read once: its record, metrics table and "
          "definitions figure; then the model table", file=sys.__stderr__, flush=True)
    done = 0
    for line in run_products(p.run_dirs, i.cards, i.ceilings, i.model, p.record_out,
                             p.metrics_out, p.definitions_out, o.model, user_cards):
        log.write(line + "\n")
        if done < n:
            done += 1
            print(f"run_products: {done}/{n} {line}", file=sys.__stderr__, flush=True)
