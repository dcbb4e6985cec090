"""What the engine itself timed in one step, from vLLM's histograms (``GET /metrics``
before and after the client's run, :mod:`claimcheck.readings.promtext`): how many engine
steps ran, and the mean of each request's time to its first token split as vLLM's V1
engine stamps it (pure).

- ``engine_steps``: steps the engine ran (``vllm:iteration_tokens_total``, one sample a
  step), and their mean tokens;
- ``server_ttft_ms``: arrival at the API server to the first token's output
  (``vllm:time_to_first_token_seconds``);
- ``server_queue_ms``: waiting in the scheduler's queue (``vllm:request_queue_time_seconds``:
  queued to first scheduled);
- ``server_prefill_ms``: first scheduled to the first token (``vllm:request_prefill_time_
  seconds``), the engine steps a prompt takes.

The client's TTFT less ``server_queue_ms + server_prefill_ms`` is what lies outside the
engine core's steps (the HTTP request, the API server's handling, the hand-over to the
engine and the output's way back): where the per-request overhead the model reads off
one-stream TTFTs is spent. Steps recorded before the histograms were kept (2026-12-05) have
none of these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from claimcheck.readings.promtext import counter_sum, delta

STEPS = "vllm:iteration_tokens_total"
MEANS_MS = {"server_ttft_ms": "vllm:time_to_first_token_seconds",
            "server_queue_ms": "vllm:request_queue_time_seconds",
            "server_prefill_ms": "vllm:request_prefill_time_seconds"}
"""Column -> the histogram whose mean over the step's requests it is, in ms."""
COLUMNS = ("engine_steps", "engine_tokens_per_step", "server_requests", *MEANS_MS)
"""The step table's columns this module fills (None where a step has no such reading)."""


def engine_time_columns(counters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The columns (:data:`COLUMNS`) of one step from its record's ``server_counters``
    (``{"before": {"counters": ...}, "after": {...}}``): each histogram's sum and count
    differenced over the step; None for a reading that is missing, failed, or names no
    such histogram (a step recorded before they were kept, or a server without them)."""
    out: dict[str, Any] = dict.fromkeys(COLUMNS)
    before = ((counters or {}).get("before") or {}).get("counters")
    after = ((counters or {}).get("after") or {}).get("counters")
    if before is None or after is None:
        return out
    d = delta(before, after)
    for k, v in d.items():
        if k.startswith((STEPS, *MEANS_MS.values())) and not math.isfinite(v):
            raise ValueError(f"server_counters: {k} moved by {v!r} over the step, not a "
                             "finite number")
    steps = counter_sum(d, STEPS + "_count")
    if steps > 0:
        out["engine_steps"] = int(steps)
        out["engine_tokens_per_step"] = counter_sum(d, STEPS + "_sum") / steps
    n = counter_sum(d, MEANS_MS["server_ttft_ms"] + "_count")
    if n > 0:
        out["server_requests"] = int(n)
    for col, name in MEANS_MS.items():
        count = counter_sum(d, name + "_count")
        if count > 0:
            out[col] = counter_sum(d, name + "_sum") / count * 1e3
    return out
