"""What context costs a decode step, from steps at the same streams and weight format at
three or more contexts per stream (pure arithmetic on the findings' decode levels).

At fixed streams the weights and the recurrent state a step moves do not change with the
context; only the KV cache read grows, by streams x context x KV bytes per token. So the
step time (streams / tok/s summed while every stream decodes, seconds) against the KV
bytes a step reads (GB, from the geometry) is a line whose slope is the time each KV GB
adds: its inverse is the rate, GB/s, at which the engine reads its KV cache, measured
without any model. The intercept is the step at zero context (seconds)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

MIN_CONTEXTS = 3
"""Contexts a (format, streams) level needs before its line is fitted."""
LINES_MARK = "at three or more contexts"
"""Words a KV-read source read from such lines says (the model's term and its prose)."""


@dataclass(frozen=True)
class ContextLine:
    """One weight format at one stream count across context: per context (tokens per
    stream, ascending) the tok/s summed while every stream decodes, its share of the
    bandwidth line, the step (ms), the KV GB one step reads and the bandwidth line
    (tok/s); the fitted KV read rate (GB/s), the step at zero context (ms) and the largest
    distance of a step from the line (ms); the runs the levels come from."""

    fmt: str
    streams: int
    contexts: list[int]
    decode: list[float]
    share: list[float]
    step_ms: list[float]
    kv_gb: list[float]
    line_tok_s: list[float]
    kv_gb_s: float
    zero_context_ms: float
    worst_residual_ms: float
    runs: list[str]

    def ns_per_token(self) -> float:
        """Time one more token of context per stream adds to a step, per stream:
        KV bytes per token / the KV read rate, nanoseconds."""
        per_token_gb = (self.kv_gb[-1] - self.kv_gb[0]) / (
            self.streams * (self.contexts[-1] - self.contexts[0]))
        return per_token_gb / self.kv_gb_s * 1e9


def fit_line(x: list[float], y: list[float]) -> tuple[float, float, float]:
    """Least squares y = a + b x: (b, a, the largest |residual|), in y's units per x's
    (slope), y's units (intercept, residual). Needs two distinct x."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((v - mx) ** 2 for v in x)
    if sxx == 0:
        raise ValueError("one x value only: no line")
    b = sum((u - mx) * (v - my) for u, v in zip(x, y, strict=True)) / sxx
    a = my - b * mx
    return b, a, max(abs(v - (a + b * u)) for u, v in zip(x, y, strict=True))


def context_lines(levels: pd.DataFrame, min_contexts: int = MIN_CONTEXTS
                  ) -> list[ContextLine]:
    """Every (weight format, streams) of the decode levels (columns ``weight_format``,
    ``streams``, ``context_tokens_per_stream``, ``decode``, ``share``, ``step_ms``,
    ``kv_gb``, ``roofline_tok_s``, ``runs``) measured at ``min_contexts`` or more
    contexts, with its KV line; a line whose slope is not positive (more context not
    slower) is left out."""
    out = []
    for (fm, n), g in levels.groupby(["weight_format", "streams"]):
        g = g.sort_values("context_tokens_per_stream")
        if g["context_tokens_per_stream"].nunique() < min_contexts:
            continue
        kv, step_s = list(g["kv_gb"]), [v / 1e3 for v in g["step_ms"]]
        slope, zero, worst = fit_line(kv, step_s)
        if slope <= 0:
            continue
        out.append(ContextLine(
            str(fm), int(n), [int(c) for c in g["context_tokens_per_stream"]],
            list(g["decode"]), list(g["share"]), list(g["step_ms"]), kv,
            list(g["roofline_tok_s"]), 1 / slope,
            zero * 1e3, worst * 1e3,
            sorted({r for s in g["runs"] for r in str(s).split(", ")})))
    return out


def lines_frame(lines: list[ContextLine]) -> list[dict[str, Any]]:
    """The levels of ``lines`` as rows (one per format, streams and context) for a table:
    the level's numbers and its line's KV read rate."""
    return [{"weight_format": ln.fmt, "streams": ln.streams, "context_tokens_per_stream": c,
             "decode": v, "share": s, "step_ms": t, "kv_gb": k, "roofline_tok_s": b,
             "kv_gb_s": ln.kv_gb_s, "runs": ", ".join(ln.runs)}
            for ln in lines for c, v, s, t, k, b in zip(
                ln.contexts, ln.decode, ln.share, ln.step_ms, ln.kv_gb, ln.line_tok_s,
                strict=True)]
