"""Streamed token counting: hand-made SSE streams with several tokens per chunk."""

import json

import pytest

from claimcheck.measure.stream import parse_sse


def sse(events):
    return [f"data: {json.dumps(e)}\n" for e in events] + ["data: [DONE]\n"]


def clock_from(times):
    it = iter(times)
    return lambda: next(it)


def test_usage_not_chunks():
    # 10 tokens in 4 chunks (2.5 tokens per chunk, as with speculation), usage last
    events = [{"choices": [{"text": "w1 w2 w3"}]}, {"choices": [{"text": " w4 w5"}]},
              {"choices": [{"text": " w6 w7 w8"}]}, {"choices": [{"text": " w9 w10"}]},
              {"choices": [], "usage": {"completion_tokens": 10, "prompt_tokens": 3}}]
    r = parse_sse(sse(events), 0.0, clock=clock_from([0.5, 0.7, 0.9, 1.1]))
    assert r.chunks == 4 and r.tokens == 10
    assert r.ttft_s == 0.5 and r.last_s == 1.1
    assert r.decode_tok_s == pytest.approx(9 / 0.6)  # (10 - 1) tokens over 0.6 s


def test_reasoning_field_names():
    events = [{"choices": [{"delta": {"reasoning": "think "}}]},
              {"choices": [{"delta": {"reasoning_content": "more "}}]},
              {"choices": [{"delta": {"content": "answer"}}]},
              {"choices": [], "usage": {"completion_tokens": 7}}]
    r = parse_sse(sse(events), 0.0, clock=clock_from([1.0, 2.0, 3.0]))
    assert r.reasoning == "think more " and r.text == "answer" and r.tokens == 7


def test_no_usage_refuses_to_count_chunks():
    r = parse_sse(sse([{"choices": [{"text": "w1 w2"}]}]), 0.0, clock=clock_from([0.1]))
    with pytest.raises(ValueError, match="chunk counts are not token counts"):
        _ = r.tokens
