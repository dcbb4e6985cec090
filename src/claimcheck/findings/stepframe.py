"""The step frame the findings read: the derived step table (``data/derived/runs.csv`` as a
DataFrame) joined with each run's engine geometry, its levels (the median per level over
repeats and runs), the main and long contexts, and the :class:`Finding` record with the
words every finding prints (format names, shares, spans, lists).

Steps are chosen by their properties only (weight format, prompt length, streams, waves,
whether all streams decode at once), never by a protocol's or an engine's name.

Units: tok/s, ms, GB = 1e9 bytes. η is a step's share of its bandwidth line (its plain
roofline, :mod:`claimcheck.findings.findings`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from claimcheck.calibration.picks import run_kernel
from claimcheck.physics.formats import KERNEL_PATH
from claimcheck.physics.units import GB
from claimcheck.readings import definitions as d

FORMAT_WORDS = {"bf16": "BF16", "fp8": "FP8", "w4a16": "W4A16", "nvfp4": "NVFP4",
                "int8": "INT8"}
LONG_PROMPT = 4096
"""A prompt of at least this many tokens is a long prompt (the runs' 7,681 and 8K)."""


@dataclass(frozen=True)
class Finding:
    """One finding: its numbers, the sentence built from them, the condition that makes the
    sentence true in words, whether it holds on the data, and (when not) why."""

    key: str
    sentence: str
    numbers: dict[str, float]
    condition: str
    holds: bool
    why: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """The steps (one per shown level) the finding reads, for its table."""


def fmt_name(f: str) -> str:
    """A weight format as prose prints it (BF16, FP8; a format on a kernel other than the
    claim card's, :func:`series_format`: "W4A16 (Machete)")."""
    fmt, _, kernel = str(f).lower().partition(KERNEL_SEP)
    name = FORMAT_WORDS.get(fmt, fmt.upper())
    kernel, int8 = kernel_parts(kernel)
    return f"{name} ({kernel.capitalize()}{', int8 MLP' if int8 else ''})" if kernel else name


KERNEL_SEP = ":"
"""Between a weight format and its kernel in the step frame's ``weight_format``
(:func:`series_format`)."""
INT8_SEP = "+"
"""Between a kernel and "int8" in :func:`series_format`'s label of a run whose start log
names an int8-activation scheme ("w4a16:humming+int8")."""


def kernel_parts(kernel: str) -> tuple[str, bool]:
    """The kernel part of a :func:`series_format` label, read: its name and whether the
    run took int8 activations ("humming+int8": ("humming", True))."""
    name, _, int8 = kernel.partition(INT8_SEP)
    return name, bool(int8)


def series_format(fmt: Any, kernel: str | None, int8: str | None = None) -> str:
    """A run's weight format as the step frame groups it: the format alone where the run's
    quantized kernel is the one the format runs on the claim cards
    (:data:`claimcheck.physics.formats.KERNEL_PATH`) or none is named, else "format:kernel"
    ("w4a16:machete"), a series of its own in the findings and figures; "+int8" after the
    kernel when the run's start log names an int8-activation scheme (``int8``)."""
    if int8:
        return f"{fmt}{KERNEL_SEP}{kernel or 'unnamed'}{INT8_SEP}int8"
    if kernel is None or kernel == KERNEL_PATH.get(str(fmt)):
        return str(fmt)
    return f"{fmt}{KERNEL_SEP}{kernel}"


def pct(x: float) -> str:
    return f"{x:.0%}"


def span(xs: Iterable[float], fmt: Callable[[float], str] = pct) -> str:
    """'lo-hi' (en dash) or one value when both print the same."""
    xs = list(xs)
    lo, hi = fmt(min(xs)), fmt(max(xs))
    return lo if lo == hi else f"{lo}–{hi}"


def and_list(xs: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


ENGINE_COLUMNS = ("kind", "weight_format", "kv_dtype", "state_dtype", "weight_bytes", "state_bytes",
                  "kv_bytes_per_token", "speculative", "ignore_eos", "prefix_caching")


def engine_rows(runs: Iterable[Any]) -> pd.DataFrame:
    """One row per run: its weight format (with its kernel where that is not the claim
    cards', :func:`series_format`), KV and state dtypes, the bytes the geometry gives
    (W read per step, S per stream, κ per token), whether it drafts tokens and whether its
    protocol ignored EOS. ``runs``: :class:`claimcheck.runs.run.Run`."""
    out = []
    for r in runs:
        ec, ei = r.provenance.engine_config, r.engine_inputs
        extra = " ".join(str(a) for a in (getattr(ec, "extra_args", None) or []))
        out.append({"run": r.name, "weight_format": series_format(
                        ec.weight_format, run_kernel(r), r.int8_activations),
                    "kv_dtype": ei.kv_dtype if ei else None,
                    "state_dtype": ei.state_dtype if ei else None,
                    "weight_bytes": ei.weight_bytes if ei else None,
                    "state_bytes": ei.state_bytes_per_stream if ei else None,
                    "kv_bytes_per_token": ei.kv_bytes_per_token if ei else None,
                    "speculative": "speculative" in extra,
                    "ignore_eos": bool(r.protocol.ignore_eos), "kind": r.protocol.kind,
                    "prefix_caching": bool(ec.prefix_caching)})
    return pd.DataFrame(out, columns=["run", *ENGINE_COLUMNS])


NEEDED = ("run", "status", "reported", "streams", "requests", "max_num_seqs", "input_len",
          "output_len", "context_tokens_per_stream", "all_streams_decoding_tok_s",
          "streams_x_1000_over_mean_tpot_tok_s", "roofline_tok_s", "roofline_bound",
          "e2e_aggregate_tok_s", "tokens_per_joule", "telemetry_mean_power_w",
          "timeline_output_tokens", "vllm", "weights_label")


OPTIONAL_COLUMNS: dict[str, str] = {
    "telemetry_mean_power_w": "a run without NVML telemetry measured no power",
    "tokens_per_joule": "a run without NVML telemetry measured no energy",
    "all_streams_decoding_tok_s": "a run without a token timeline has no all-streams window",
    "streams_x_1000_over_mean_tpot_tok_s": "a run without a token timeline has no mean TPOT",
    "timeline_output_tokens": "a run without a token timeline counted no output tokens",
}
"""Columns of :data:`NEEDED` a step table may lack, each with why: they read as not
measured (NaN). Any other missing column stops the step frame naming it."""


def _known(v: Any) -> int | None:
    """A table cell as tokens, None where missing (NaN, NA)."""
    return None if v is None or pd.isna(v) else int(v)


def step_frame(steps: pd.DataFrame, engines: pd.DataFrame) -> pd.DataFrame:
    """The derived step table with each run's engine columns, and per step: ``waves``
    (requests / streams running at once, rounded up), ``decode`` (tok/s summed while every
    stream decodes, where that was measured and the step neither queued nor held its
    prefill), ``share`` (decode over the bandwidth line), ``step_ms`` (streams x 1000 /
    decode) and the GB each step moves (``weights_gb``, ``state_gb`` read and written,
    ``kv_gb``)."""
    steps = steps.copy()
    for col in OPTIONAL_COLUMNS:  # declared: read as not measured, with its reason
        if col not in steps:
            steps[col] = float("nan")
    missing = [c for c in NEEDED if c not in steps]
    if missing:  # never filled with None: a renamed column would drop findings unsaid
        raise ValueError(f"step table: column '{missing[0]}' is missing (the findings read "
                         f"{', '.join(missing)})")
    lacking = [c for c in ("run", *ENGINE_COLUMNS) if c not in engines]
    if lacking:
        raise ValueError(f"engine rows: column '{lacking[0]}' is missing")
    f = steps.merge(engines, on="run", how="left")
    f = f[(f["status"] == "complete") & f["reported"].astype(bool)].copy()
    seqs = f["max_num_seqs"]
    running = pd.Series([d.running_at_once(int(n), _known(s))
                         for n, s in zip(f["streams"], seqs, strict=True)],
                        index=f.index, dtype="int64")
    f["queued"] = f["streams"] > running
    seen = f.get("max_output_tokens", f["output_len"])
    f["held_prefill"] = [d.is_held_prefill(_known(a), _known(b))
                         for a, b in zip(f["output_len"], seen, strict=True)]
    f["waves"] = (f["requests"] / running).apply(math.ceil)
    ok = (~f["queued"]) & ~f["held_prefill"] & f["all_streams_decoding_tok_s"].notna()
    f["decode"] = pd.to_numeric(f["all_streams_decoding_tok_s"].where(ok))
    f["share"] = f["decode"] / f["roofline_tok_s"]
    f["step_ms"] = 1000 * f["streams"] / f["decode"]
    f["weights_gb"] = f["weight_bytes"] / GB
    f["state_gb"] = 2 * f["streams"] * f["state_bytes"] / GB
    f["kv_gb"] = f["streams"] * f["context_tokens_per_stream"] * f["kv_bytes_per_token"] / GB
    f["long"] = f["input_len"] >= LONG_PROMPT
    return f


def levels(f: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The median of each column per level (``keys``), with ``n`` the steps it stands
    for: repeats and runs of the same level read once."""
    num = f.select_dtypes("number").columns.difference(keys)
    g = f.groupby(keys, dropna=False)
    out = g[list(num)].median()
    out["n"] = g.size()
    out["runs"] = g["run"].apply(lambda s: ", ".join(sorted(set(s))))
    return out.reset_index()


def decode_levels(f: pd.DataFrame) -> pd.DataFrame:
    """Steps where every stream decoded at once, one row per (format, context, streams)."""
    d = f[f["decode"].notna()]
    return levels(d, ["weight_format", "context_tokens_per_stream", "streams"])


def main_context(d: pd.DataFrame) -> pd.DataFrame:
    """Per weight format, the levels at its main context: the context per stream measured
    at the most stream counts (the shorter on a tie)."""
    keep = []
    for _, g in d.groupby("weight_format"):
        n = g.groupby("context_tokens_per_stream")["streams"].nunique()
        keep.append(g[g["context_tokens_per_stream"] == n[n == n.max()].index.min()])
    return pd.concat(keep) if keep else d


def long_context(d: pd.DataFrame) -> float | None:
    """The long context shown beside each format's main context (the body's first table,
    the decode figure): of the contexts longer than every main context, the one measured
    at the most stream counts (the longer on a tie); None when there is none."""
    if d.empty:
        return None
    longer = d[d["context_tokens_per_stream"] > main_context(d)["context_tokens_per_stream"]
               .max()]
    if longer.empty:
        return None
    n = longer.groupby("context_tokens_per_stream")["streams"].nunique()
    return float(n[n == n.max()].index.max())


def failed(key: str, condition: str, why: str) -> Finding:
    return Finding(key, "", {}, condition, False, why)


def row_dicts(d: pd.DataFrame) -> list[dict[str, Any]]:
    return d.to_dict("records")
