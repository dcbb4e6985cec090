"""The load generator: ``vllm bench serve`` argv (or claimcheck's load client's). Its
result is read by :func:`claimcheck.runs.runfiles.load_bench` and summarized by
:mod:`claimcheck.readings.bench`."""

from __future__ import annotations

import sys
from pathlib import Path

from claimcheck.config.protocols import Protocol, Step


def client_argv(p: Protocol, step: Step, *, vllm: list[str], base_url: str, model: str,
                tokenizer: str, seed: int, result_dir: str,
                result_filename: str = "bench.json",
                max_model_len: int | None = None) -> list[str]:
    """The exact client command for one step: ``vllm bench serve`` for ``bench``
    protocols, claimcheck's load client (:mod:`claimcheck.measure.loadclient`) otherwise
    (given the tokenizer and the engine's ``max_model_len``, to check each request's
    ``usage.prompt_tokens``)."""
    if p.kind != "bench":
        argv = [sys.executable, "-m", "claimcheck.measure.loadclient", "--base-url", base_url,
                "--model", model, "--kind", p.kind, "--streams", str(step.streams),
                "--requests", str(step.requests), "--input-len", str(step.input_len),
                "--output-len", str(step.output_len), "--endpoint", p.endpoint,
                "--seed", str(seed), "--result", str(Path(result_dir) / result_filename),
                "--tokenizer", tokenizer]
        if max_model_len is not None:
            argv += ["--max-model-len", str(max_model_len)]
        return argv + (["--ignore-eos"] if p.ignore_eos else [])
    argv = [*vllm, "bench", "serve", "--backend", "vllm", "--base-url", base_url,
            "--endpoint", p.endpoint, "--model", model, "--tokenizer", tokenizer,
            "--dataset-name", p.dataset, "--random-input-len", str(step.input_len),
            "--random-output-len", str(step.output_len), "--num-prompts", str(step.requests),
            "--max-concurrency", str(step.streams), "--request-rate", "inf",
            "--seed", str(seed), "--percentile-metrics", "ttft,tpot,itl,e2el",
            "--metric-percentiles", "50,90,99", "--save-result", "--save-detailed",
            "--result-dir", result_dir, "--result-filename", result_filename]
    if p.ignore_eos:
        argv.append("--ignore-eos")
    return argv
