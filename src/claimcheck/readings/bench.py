"""A step's ``vllm bench serve --save-result --save-detailed`` result (a dict, as
:func:`claimcheck.runs.runfiles.load_bench` reads it): vLLM's own summary figures named with
their units, and its per-request rows. vLLM's figures are a cross-check; reported speeds come
from :mod:`claimcheck.readings.definitions` on the step's timeline."""

from __future__ import annotations

from typing import Any


def summarize(result: dict[str, Any], streams: int) -> dict[str, Any]:
    """Metrics of one ``--save-result`` JSON, each named with its unit.

    ``per_stream_tok_s`` is 1000 / median TPOT (decode, first token excluded);
    ``aggregate_tpot_tok_s`` is streams x that (``aggregate_mean_tpot_tok_s`` the same of
    1000 / mean TPOT); ``e2e_output_tok_s`` is all output
    tokens over the benchmark's wall time (prefill, ramp and tail included).
    """
    tpot = result.get("median_tpot_ms")
    per_stream = 1000.0 / tpot if tpot else None
    errors = [e for e in result.get("errors", []) if e]
    return {
        "streams": streams,
        "requests": result.get("num_prompts"),
        "completed": result.get("completed"),
        "failed": result.get("failed", len(errors)),
        "duration_s": result.get("duration"),
        "total_output_tokens": result.get("total_output_tokens"),
        "e2e_output_tok_s": result.get("output_throughput"),
        "median_tpot_ms": tpot,
        "mean_tpot_ms": result.get("mean_tpot_ms"),
        "per_stream_tok_s": per_stream,
        "aggregate_tpot_tok_s": streams * per_stream if per_stream else None,
        "aggregate_mean_tpot_tok_s": (streams * 1000 / result["mean_tpot_ms"]
                                      if result.get("mean_tpot_ms") else None),
        "mean_ttft_ms": result.get("mean_ttft_ms"),
        "median_ttft_ms": result.get("median_ttft_ms"),
        "median_itl_ms": result.get("median_itl_ms"),
        "max_concurrent_requests": result.get("max_concurrent_requests"),
    }


def per_request(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the ``--save-detailed`` arrays: one per request, times in seconds.

    ``output_tokens`` is the server's own count (usage), never a count of stream chunks.
    """
    n = len(result.get("input_lens", []))

    def col(key: str, default: Any) -> list[Any]:
        return result.get(key) or [default] * n

    itls, outs, ttfts = col("itls", []), col("output_lens", None), col("ttfts", None)
    starts, errors = col("start_times", None), col("errors", "")
    rows = []
    for i in range(n):
        itl, out_len, ttft = itls[i] or [], outs[i], ttfts[i]
        rows.append({
            "index": i,
            "start_time_s": starts[i],
            "input_tokens": result["input_lens"][i],
            "output_tokens": out_len,
            "ttft_s": ttft,
            "chunks": len(itl) + 1 if ttft else 0,
            "decode_s": sum(itl) if itl else None,
            "tpot_s": (sum(itl) / (out_len - 1)) if itl and out_len and out_len > 1 else None,
            "error": errors[i] or "",
        })
    return rows
