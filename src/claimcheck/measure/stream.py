"""One streamed request, counted the right way.

Tokens come from the server's own count (``usage.completion_tokens`` in the final chunk,
asked for with ``stream_options.include_usage``), never from the number of SSE chunks: an
engine that speculates or buffers (``--stream-interval``) sends several tokens per chunk
(shared/seeds/002). Reasoning text is read from ``reasoning`` and ``reasoning_content``.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass


@dataclass(frozen=True)
class StreamResult:
    """Times in seconds from sending the request."""

    completion_tokens: int | None
    chunks: int
    text: str
    reasoning: str
    ttft_s: float | None
    last_s: float | None

    @property
    def tokens(self) -> int:
        """The server's token count; refuses to guess from chunks."""
        if self.completion_tokens is None:
            raise ValueError("the stream carried no usage.completion_tokens; chunk counts "
                             "are not token counts (ask with stream_options.include_usage)")
        return self.completion_tokens

    @property
    def decode_tok_s(self) -> float | None:
        """Tokens after the first over the time from first to last chunk, tok/s."""
        if self.ttft_s is None or self.last_s is None or self.last_s <= self.ttft_s:
            return None
        return (self.tokens - 1) / (self.last_s - self.ttft_s)


def parse_sse(lines, t0: float, clock=time.monotonic) -> StreamResult:
    """Read ``data: {...}`` lines of an OpenAI-style stream (completions or chat)."""
    usage = None
    chunks = 0
    text, reasoning = [], []
    ttft = last = None
    for raw in lines:
        line = raw.decode() if isinstance(raw, bytes) else raw
        line = line.strip()
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            break
        data = json.loads(payload)
        if data.get("usage"):
            usage = data["usage"].get("completion_tokens", usage)
        for ch in data.get("choices") or []:
            delta = ch.get("delta") or {}
            piece = ch.get("text") or delta.get("content") or ""
            think = delta.get("reasoning") or delta.get("reasoning_content") or ""
            if piece or think:
                now = clock() - t0
                ttft = now if ttft is None else ttft
                last = now
                chunks += 1
                text.append(piece)
                reasoning.append(think)
    return StreamResult(completion_tokens=usage, chunks=chunks, text="".join(text),
                        reasoning="".join(reasoning), ttft_s=ttft, last_s=last)


def stream_completion(base_url: str, model: str, prompt: str, max_tokens: int, *,
                      chat: bool = False, ignore_eos: bool = True,
                      timeout_s: float = 120) -> StreamResult:
    """Send one streamed request and count it by usage."""
    body: dict = {"model": model, "max_tokens": max_tokens, "stream": True,
                  "stream_options": {"include_usage": True}, "ignore_eos": ignore_eos,
                  "temperature": 0}
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = prompt
        path = "/v1/completions"
    req = urllib.request.Request(base_url.rstrip("/") + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=timeout_s) as r:
        return parse_sse(r, t0)
