"""The one SSE reader (``loadclient.read_chunk`` / ``one_request``) on hand-made streams:
tokens from the server's usage, never from chunks (seed 002's traps: several tokens per
chunk, reasoning in ``reasoning`` or ``reasoning_content``, a stream without usage)."""

import asyncio
import json

import httpx
import pytest

from claimcheck.measure.loadclient import RequestRecord, one_request, read_chunk


def test_usage_only_at_the_end_counts_usage_not_chunks():
    # 10 tokens in 4 text chunks (2.5 per chunk, as with speculation), usage in the last one
    rec = RequestRecord(client=0, start=0.0)
    events = [{"choices": [{"text": "w1 w2 w3"}]}, {"choices": [{"text": " w4 w5"}]},
              {"choices": [{"text": " w6 w7 w8"}]}, {"choices": [{"text": " w9 w10"}]},
              {"choices": [], "usage": {"completion_tokens": 10, "prompt_tokens": 3}}]
    for t, e in zip((0.5, 0.7, 0.9, 1.1, 1.1), events, strict=True):
        read_chunk(e, rec, t)
    assert rec.completion_tokens == 10 and rec.prompt_tokens == 3
    # four text chunks of unknown size, then the usage chunk that carries the count
    assert rec.chunk_times[:4] == [0.5, 0.7, 0.9, 1.1]
    assert rec.chunk_tokens[:4] == [None] * 4 and rec.content_chars == len("w1 w2 w3 w4 w5 "
                                                                           "w6 w7 w8 w9 w10")


def test_reasoning_field_names():
    rec = RequestRecord(client=0, start=0.0)
    for t, e in enumerate([{"choices": [{"delta": {"reasoning": "think "}}]},
                           {"choices": [{"delta": {"reasoning_content": "more "}}]},
                           {"choices": [{"delta": {"content": "answer"}}]},
                           {"choices": [], "usage": {"completion_tokens": 7}}]):
        read_chunk(e, rec, float(t))
    assert rec.reasoning_chars == len("think more ") and rec.content_chars == len("answer")
    assert rec.completion_tokens == 7


def _serve(lines: list[str]) -> httpx.MockTransport:
    """A canned HTTP answer (the client's parsing is under test; the real server is in the
    CPU-vLLM integration tests)."""
    body = "".join(lines).encode()
    return httpx.MockTransport(lambda req: httpx.Response(200, content=body))


def _run(lines: list[str]) -> RequestRecord:
    async def go() -> RequestRecord:
        async with httpx.AsyncClient(transport=_serve(lines)) as c:
            return await one_request(c, "http://x/v1/completions", {}, 0)
    return asyncio.run(go())


def test_a_stream_without_usage_is_an_error_not_a_chunk_count():
    rec = _run([f"data: {json.dumps({'choices': [{'text': 'w1 w2'}]})}\n\n",
                "data: [DONE]\n\n"])
    assert rec.completion_tokens is None
    assert rec.error == "the stream carried no usage.completion_tokens"


def test_one_request_reads_continuous_usage():
    ev = [{"choices": [{"text": "a b"}], "usage": {"prompt_tokens": 4, "completion_tokens": 2}},
          {"choices": [{"text": " c d e"}], "usage": {"completion_tokens": 5}}]
    rec = _run([f"data: {json.dumps(e)}\n\n" for e in ev] + ["data: [DONE]\n\n"])
    assert rec.error == "" and rec.completion_tokens == 5 and rec.chunk_tokens == [2, 3]
    assert len(rec.chunk_times) == 2


@pytest.mark.parametrize("status", [400, 500])
def test_an_http_error_keeps_the_servers_answer(status):
    async def go() -> RequestRecord:
        t = httpx.MockTransport(lambda req: httpx.Response(status, content=b'{"msg":"no"}'))
        async with httpx.AsyncClient(transport=t) as c:
            return await one_request(c, "http://x/v1/completions", {}, 0)
    rec = asyncio.run(go())
    assert rec.error == f'HTTP {status}: {{"msg":"no"}}'
