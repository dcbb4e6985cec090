"""What context costs a decode step: the KV line fitted to hand-made levels whose answer
is known, and the context finding on a hand-made step frame."""

from __future__ import annotations

import pandas as pd
import pytest

from claimcheck.calibration import context_cost as CC
from claimcheck.findings import findings_decode as FD
from claimcheck.findings import stepframe as SF

KV_BF16, KV_FP8 = 65536, 32768  # bytes per token of context (the engines' KV dtypes)


def _levels(fmt: str, kv_bytes: int, rate_gb_s: float, zero_ms: float, streams: int,
            contexts: list[int], run: str = "r1", line_tok_s: float = 1000.0
            ) -> list[dict]:
    """Levels whose step is zero_ms plus the KV GB read at rate_gb_s (exact)."""
    out = []
    for c in contexts:
        kv_gb = streams * c * kv_bytes / 1e9
        step_ms = zero_ms + kv_gb / rate_gb_s * 1e3
        decode = streams * 1e3 / step_ms
        out.append({"weight_format": fmt, "streams": streams, "context_tokens_per_stream": c,
                    "decode": decode, "share": decode / line_tok_s, "step_ms": step_ms,
                    "kv_gb": kv_gb, "roofline_tok_s": line_tok_s, "runs": run,
                    "run": run, "waves": 1})
    return out


def test_fit_line_recovers_a_known_line():
    slope, icpt, worst = CC.fit_line([1.0, 2.0, 4.0], [3.0, 5.0, 9.0])
    assert (slope, icpt, worst) == pytest.approx((2.0, 1.0, 0.0))
    with pytest.raises(ValueError):
        CC.fit_line([2.0, 2.0], [1.0, 3.0])


def test_kv_rate_zero_context_step_and_ns_per_token():
    rows = _levels("bf16", KV_BF16, 3500.0, 20.0, 48, [1408, 4480, 12384])
    (ln,) = CC.context_lines(pd.DataFrame(rows))
    assert ln.kv_gb_s == pytest.approx(3500.0)
    assert ln.zero_context_ms == pytest.approx(20.0)
    assert ln.worst_residual_ms == pytest.approx(0.0, abs=1e-9)
    # one token of context per stream: 65,536 B / 3,500 GB/s = 18.72 ns
    assert ln.ns_per_token() == pytest.approx(65536 / 3500e9 * 1e9)


def test_two_contexts_are_too_few_and_a_falling_step_is_no_line():
    two = _levels("bf16", KV_BF16, 3500.0, 20.0, 8, [1408, 4480])
    assert CC.context_lines(pd.DataFrame(two)) == []
    falling = _levels("bf16", KV_BF16, 3500.0, 20.0, 8, [1408, 4480, 12384])
    for r, ms in zip(falling, (30.0, 25.0, 20.0), strict=True):
        r["step_ms"] = ms
    assert CC.context_lines(pd.DataFrame(falling)) == []


def test_context_finding_in_words_from_hand_made_steps():
    ctx = [1408, 4480, 12384]
    frame = pd.DataFrame(
        _levels("bf16", KV_BF16, 3500.0, 20.0, 48, ctx, "a")
        + _levels("fp8", KV_FP8, 1350.0, 13.6, 48, ctx, "b", line_tok_s=6000.0))
    x = FD.context_cost(frame)
    assert x.holds, x.why
    assert "From 1,408 to 12,384 tokens of context per stream (one wave at 48 streams)" \
        in x.sentence
    assert "3,500 GB/s for BF16" in x.sentence and "1,350 GB/s for FP8" in x.sentence
    # 65,536 B / 3,500 GB/s = 18.7 ns; 32,768 B / 1,350 GB/s = 24.3 ns
    assert "18.7 ns for BF16 against 24.3 ns for FP8" in x.sentence
    fp8 = [r for r in x.rows if r["weight_format"] == "fp8"]
    bf16 = [r for r in x.rows if r["weight_format"] == "bf16"]
    assert x.numbers["lead_short"] == pytest.approx(fp8[0]["decode"] / bf16[0]["decode"])
    assert x.numbers["lead_long"] == pytest.approx(fp8[-1]["decode"] / bf16[-1]["decode"])
    assert f"{x.numbers['lead_long']:.2f}× at 12,384" in x.sentence


def test_context_finding_refuses_levels_from_different_runs_and_far_steps():
    ctx = [1408, 4480, 12384]
    mixed = _levels("bf16", KV_BF16, 3500.0, 20.0, 48, ctx[:2], "a") + _levels(
        "bf16", KV_BF16, 3500.0, 20.0, 48, ctx[2:], "b")
    assert not FD.context_cost(pd.DataFrame(mixed)).holds  # no one run has 3 contexts
    far = _levels("bf16", KV_BF16, 3500.0, 20.0, 48, ctx + [8576], "a")
    far[1]["step_ms"] += 2.0  # 2 ms off the line
    x = FD.context_cost(pd.DataFrame(far))
    assert not x.holds and "ms from its line" in x.why


def test_long_context_is_the_long_block_with_most_streams():
    d = pd.DataFrame([{"weight_format": "bf16", "context_tokens_per_stream": c,
                       "streams": n} for c, ns in ((640, [1, 8, 16, 32, 64]),
                                                   (8192, [1, 8, 16]), (12384, [8]))
                      for n in ns])
    assert SF.long_context(d) == 8192
    assert SF.long_context(d[d["context_tokens_per_stream"] == 640]) is None
