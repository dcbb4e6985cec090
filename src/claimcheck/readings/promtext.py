"""A Prometheus text exposition (vLLM's ``/metrics``) read into its counters (pure).

vLLM exposes its counters as ``name_total{label="v",...} value`` lines; the speculative
decoding counters (``vllm:spec_decode_num_drafts_total``,
``vllm:spec_decode_num_draft_tokens_total``, ``vllm:spec_decode_num_accepted_tokens_total``,
``vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}``) and the prefix cache's
(``vllm:prefix_cache_queries_total``, ``vllm:prefix_cache_hits_total``) are among them, and
so are its histograms' sums and counts (``vllm:time_to_first_token_seconds_sum``, ...). A
step's counts are the difference of two readings (:func:`delta`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

SAMPLE = re.compile(r'^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?P<labels>\{[^}]*\})?\s+'
                    r'(?P<value>\S+)(?:\s+\S+)?$')
LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def sample_key(name: str, labels: Mapping[str, str]) -> str:
    """``name{a="1",b="2"}`` with the labels sorted, or ``name`` without labels."""
    if not labels:
        return name
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def parse_labels(raw: str, line_no: int) -> dict[str, str]:
    inner = raw[1:-1]
    out: dict[str, str] = {}
    pos = 0
    while pos < len(inner):
        m = LABEL.match(inner, pos)
        if not m or m.end() == pos:
            raise ValueError(f"/metrics line {line_no}: labels {raw!r} cannot be read")
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


MONOTONE = ("_total", "_sum", "_count")
"""The sample names kept: counters (``_total``) and each histogram's sum and count, which
only grow as a counter does (a step's mean is the difference of two readings' sums over
that of their counts); the buckets and the gauges are left out."""


def counters(text: str, prefix: str = "vllm:") -> dict[str, float]:
    """Every counter sample and histogram sum and count (names ending :data:`MONOTONE`)
    whose name starts with ``prefix``, keyed by :func:`sample_key`; the ``model_name``
    label is dropped (one model a server). A sample line that cannot be read raises
    ValueError naming its line."""
    out: dict[str, float] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#") or not line.startswith(prefix):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"/metrics line {n}: {line[:120]!r} is not a sample")
        if not m.group("name").endswith(MONOTONE):
            continue
        labels = parse_labels(m.group("labels"), n) if m.group("labels") else {}
        labels.pop("model_name", None)
        try:
            value = float(m.group("value"))
        except ValueError:
            raise ValueError(f"/metrics line {n}: value {m.group('value')!r} is not a "
                             "number") from None
        key = sample_key(m.group("name"), labels)
        out[key] = out.get(key, 0.0) + value
    return out


def counter_sum(counts: Mapping[str, float], name: str) -> float:
    """A counter summed over its labels (one engine or several)."""
    return sum(v for k, v in counts.items() if k == name or k.startswith(name + "{"))


def delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """``after - before`` for every counter in ``after`` (a counter absent before counts
    from 0). A counter that went down (a restarted server) raises ValueError naming it."""
    out = {}
    for k, v in after.items():
        d = v - before.get(k, 0.0)
        if d < 0:
            raise ValueError(f"counter {k} went down from {before[k]:g} to {v:g} "
                             "(the server restarted between the readings?)")
        out[k] = d
    return out
