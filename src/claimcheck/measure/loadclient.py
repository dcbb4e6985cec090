"""claimcheck's own load client, for the protocols ``vllm bench serve`` cannot express.

``closed_loop``: C clients, each sending ``requests_per_client`` streamed requests one after
another (qwen-warp's ``docs/PERFORMANCE.md`` protocol as seed 000 reports it).
``lanes``: one prompt sent as C identical streamed requests admitted together (TensorFold's
and Cinference's "8 parallel code lanes", seed 000). Identical requests rather than one
request with OpenAI ``n``: each lane then has its own ``usage.completion_tokens``, so every
lane's count is the server's; with ``n`` the usage is one sum over all choices.

Tokens are counted from the server's usage, never from SSE chunks (seed 002: counting chunks
read 43 where the truth was 118). ``stream_options.continuous_usage_stats`` makes vLLM put the
running ``completion_tokens`` in every chunk, so each chunk's token count is the difference;
reasoning text may arrive as ``reasoning`` or ``reasoning_content`` and counts like content.

The result file has the shape of ``vllm bench serve --save-result --save-detailed`` (times
in seconds, ``start_times`` in unix seconds, ``itls`` per token-carrying chunk) plus
``chunk_tokens`` (tokens per chunk, first chunk included), ``client_ids`` and ``end_times``.

Run as ``python -m claimcheck.measure.loadclient ...`` (the runner records the command).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RequestRecord:
    """One streamed request. Times are unix seconds; ``chunk_times`` of token chunks."""

    client: int
    start: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int | None] = field(default_factory=list)
    reasoning_chars: int = 0
    content_chars: int = 0
    text_chunks: int = 0
    """Chunks that carried text or reasoning (each holds at least one token)."""
    usage_drop: str = ""
    """Set when the running ``usage.completion_tokens`` went down between chunks."""
    first_text_tokens: int | None = None
    """The running ``usage.completion_tokens`` on the first chunk that carried text."""
    stalled: tuple[int, int] | None = None
    """(text chunk number, count) of the first text chunk after running usage was seen that
    brought no new token: the count had already stopped growing."""
    final_usage: int | None = None
    """The count of the final usage-only chunk (``choices`` empty), once one arrived."""
    text_after_final: int = 0
    """Chunks carrying text that arrived after the final usage-only chunk."""
    done: bool = False
    """The stream ended with ``data: [DONE]``."""
    error: str = ""


def synthetic_prompt(n_words: int, rng: random.Random, vocab: int = 32000) -> str:
    """``n_words`` words ``w<id>``: one token each under the synthetic tokenizer (a few
    under a real one; the server's ``usage.prompt_tokens`` is what is recorded)."""
    return " ".join(f"w{rng.randrange(1, vocab)}" for _ in range(n_words))


def request_body(model: str, prompt: str, max_tokens: int, *, chat: bool,
                 ignore_eos: bool) -> dict[str, Any]:
    """A greedy streamed request asking for usage in every chunk."""
    body: dict[str, Any] = {
        "model": model, "max_tokens": max_tokens, "stream": True, "temperature": 0,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "ignore_eos": ignore_eos}
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
        body["chat_template_kwargs"] = {"enable_thinking": False}
    else:
        body["prompt"] = prompt
    return body


def read_chunk(data: dict[str, Any], rec: RequestRecord, now: float) -> None:
    """Fold one SSE ``data:`` object into ``rec`` (usage first, then the text pieces)."""
    usage = data.get("usage") or {}
    before = rec.completion_tokens
    if usage.get("prompt_tokens") is not None:
        rec.prompt_tokens = usage["prompt_tokens"]
    if usage.get("completion_tokens") is not None:
        if before is not None and usage["completion_tokens"] < before and not rec.usage_drop:
            rec.usage_drop = (f"usage.completion_tokens went down from {before} to "
                              f"{usage['completion_tokens']} within the stream")
        rec.completion_tokens = usage["completion_tokens"]
    piece = think = ""
    for ch in data.get("choices") or []:
        delta = ch.get("delta") or {}
        piece += ch.get("text") or delta.get("content") or ""
        think += delta.get("reasoning") or delta.get("reasoning_content") or ""
    text = bool(piece or think)
    rec.content_chars += len(piece)
    rec.reasoning_chars += len(think)
    rec.text_chunks += text
    grew = (rec.completion_tokens or 0) - (before or 0)
    counted = usage.get("completion_tokens") is not None
    if text and rec.first_text_tokens is None:
        rec.first_text_tokens = rec.completion_tokens if counted else None
    if text and rec.final_usage is not None:
        rec.text_after_final += 1
    elif text and before and grew <= 0 and rec.stalled is None:
        rec.stalled = (rec.text_chunks, before)
    if counted and data.get("choices") == [] and rec.final_usage is None:
        rec.final_usage = usage["completion_tokens"]
    if grew > 0 or (text and not counted):
        rec.chunk_times.append(now)
        rec.chunk_tokens.append(grew if counted else None)


PROMPT_SLACK = 32
"""Tokens a served prompt may differ from the prompt's own tokenized length (or the bounds
that stand in for it) before ``usage.prompt_tokens`` is refused: a chat template adds a
few dozen (Qwen3's about ten), a completion a BOS token; 5 % for long prompts (tokens
merging across the template's edges)."""


@dataclass(frozen=True)
class PromptBounds:
    """What ``usage.prompt_tokens`` may say for one prompt: ``low`` .. ``high`` tokens
    (``basis`` says why), and no more than ``max_model_len`` with its completion."""

    low: int
    high: int
    basis: str
    max_model_len: int | None = None


def prompt_bounds(prompt: str, *, tokenizer: Any = None,
                  max_model_len: int | None = None) -> PromptBounds:
    """The bounds for ``prompt``: its own tokenized length with ``tokenizer`` (a
    ``tokenizers.Tokenizer``) +- :data:`PROMPT_SLACK` or 5 %; without one, at least one
    token per word and at most one per character, + :data:`PROMPT_SLACK`."""
    words = len(prompt.split())
    if tokenizer is not None:
        n = len(tokenizer.encode(prompt).ids)
        slack = max(PROMPT_SLACK, n // 20)
        return PromptBounds(max(0, n - slack), n + slack,
                            f"a prompt of {words} words that tokenizes to {n} tokens",
                            max_model_len)
    return PromptBounds(max(0, words - PROMPT_SLACK), len(prompt) + PROMPT_SLACK,
                        f"a prompt of {words} words and {len(prompt)} characters (no "
                        "tokenizer file: at least one token per word, at most one per "
                        "character)", max_model_len)


def load_tokenizer(path: str | None) -> Any:
    """``path``/tokenizer.json as a ``tokenizers.Tokenizer``, or None when there is none
    (a hub id: the checkpoint's tokenizer is not on this machine)."""
    f = Path(path) / "tokenizer.json" if path else None
    if f is None or not f.is_file():
        return None
    from tokenizers import Tokenizer
    return Tokenizer.from_file(str(f))


async def one_request(client: Any, url: str, body: dict[str, Any], cid: int,
                      bounds: PromptBounds | None = None) -> RequestRecord:
    """Send one streamed request; an HTTP error keeps the server's own response body.
    ``bounds``: what its ``usage.prompt_tokens`` may say (unchecked when None)."""
    rec = RequestRecord(client=cid, start=time.time())
    try:
        async with client.stream("POST", url, json=body) as r:
            if r.status_code != 200:
                text = (await r.aread()).decode(errors="replace")
                rec.error = f"HTTP {r.status_code}: {text[:2000]}"
                return rec
            async for line in r.aiter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    rec.done = True
                    break
                read_chunk(json.loads(payload), rec, time.time())
    except Exception as e:  # noqa: BLE001 - every failure is recorded, never raised mid-run
        rec.error = f"{type(e).__name__}: {e}"
    if not rec.error:
        rec.error = stream_problem(rec, max_tokens=body.get("max_tokens"),
                                   ignore_eos=bool(body.get("ignore_eos")), bounds=bounds)
    return rec


def stream_problem(rec: RequestRecord, *, max_tokens: int | None, ignore_eos: bool,
                   bounds: PromptBounds | None = None) -> str:
    """Why a stream that ended without an HTTP or transport error still cannot count as a
    completed request ("" when it can): no usage; usage going down; text after the final
    usage said the request was complete; every token counted on the first chunk; text that
    brought no new token (the count stopped before the text did, which would date the last
    token early); usage above ``max_tokens`` or below the chunks that carried text; prompt
    tokens outside ``bounds`` or above the engine's ``max_model_len``; no ``[DONE]``; fewer
    tokens than asked for when the request asked the server to ignore EOS."""
    n = rec.completion_tokens
    if n is None:
        return "the stream carried no usage.completion_tokens"
    if rec.usage_drop:
        return rec.usage_drop
    if rec.text_after_final:
        return (f"{rec.text_after_final} chunks carrying text arrived after the final usage "
                f"chunk had said the request was complete at {rec.final_usage} completion "
                "tokens")
    if n > 1 and rec.first_text_tokens == n:
        more = rec.text_chunks - 1
        return (f"all {n} completion tokens were counted on the first chunk that carried "
                + (f"text, and {more} more chunks carried text with no new token"
                   if more else "text, so no time per output token can be measured"))
    if rec.stalled is not None:
        k, at = rec.stalled
        return (f"usage.completion_tokens stopped growing at {at} while text went on: chunk "
                f"{k} of {rec.text_chunks} carrying text brought no new token (the last "
                "token would be dated early)")
    if max_tokens is not None and n > max_tokens:
        return f"usage reports {n} completion tokens but max_tokens was {max_tokens}"
    if n < rec.text_chunks:
        return (f"usage reports {n} completion tokens but {rec.text_chunks} chunks carrying "
                "text were streamed (each holds at least one token)")
    if bounds is not None:
        problem = prompt_problem(rec.prompt_tokens, n, bounds)
        if problem:
            return problem
    if not rec.done:
        return (f"the stream ended without data: [DONE] after {n} of {max_tokens} "
                "requested tokens")
    if ignore_eos and max_tokens is not None and n < max_tokens:
        return (f"the stream ended after {n} of {max_tokens} requested tokens under "
                "ignore_eos")
    return ""


def prompt_problem(prompt_tokens: int | None, completion_tokens: int,
                   bounds: PromptBounds) -> str:
    """Why a request's ``usage.prompt_tokens`` cannot be its prompt's ("" when it can)."""
    if prompt_tokens is None:
        return "the stream carried no usage.prompt_tokens"
    cap = bounds.max_model_len
    if cap is not None and prompt_tokens > cap:
        return (f"usage reports {prompt_tokens} prompt tokens, above the engine's "
                f"max_model_len of {cap}")
    if not bounds.low <= prompt_tokens <= bounds.high:
        return (f"usage reports {prompt_tokens} prompt tokens for {bounds.basis}: outside "
                f"{bounds.low}..{bounds.high}")
    if cap is not None and prompt_tokens + completion_tokens > cap:
        return (f"usage reports {prompt_tokens} prompt + {completion_tokens} completion "
                f"tokens, above the engine's max_model_len of {cap}")
    return ""


async def run_load(*, base_url: str, model: str, kind: str, streams: int, requests: int,
                   input_len: int, output_len: int, chat: bool, ignore_eos: bool, seed: int,
                   timeout_s: float = 3600, tokenizer: Any = None,
                   max_model_len: int | None = None) -> list[RequestRecord]:
    """Run one step: a closed loop of ``streams`` clients, or ``streams`` identical lanes.
    Each request's ``usage.prompt_tokens`` is checked against :func:`prompt_bounds`."""
    import httpx

    rng = random.Random(seed)
    path = "/v1/chat/completions" if chat else "/v1/completions"
    url = base_url.rstrip("/") + path
    limits = httpx.Limits(max_connections=streams + 4)

    def bounds(prompt: str) -> PromptBounds:
        return prompt_bounds(prompt, tokenizer=tokenizer, max_model_len=max_model_len)

    async with httpx.AsyncClient(timeout=timeout_s, limits=limits) as client:
        if kind == "lanes":
            prompt = synthetic_prompt(input_len, rng)
            body = request_body(model, prompt, output_len, chat=chat, ignore_eos=ignore_eos)
            b = bounds(prompt)
            return list(await asyncio.gather(
                *(one_request(client, url, body, c, b) for c in range(streams))))
        per = requests // streams
        prompts = [[synthetic_prompt(input_len, rng) for _ in range(per)]
                   for _ in range(streams)]

        async def loop(cid: int) -> list[RequestRecord]:
            out = []
            for p in prompts[cid]:
                out.append(await one_request(client, url, request_body(
                    model, p, output_len, chat=chat, ignore_eos=ignore_eos), cid, bounds(p)))
            return out

        done = await asyncio.gather(*(loop(c) for c in range(streams)))
        return [r for recs in done for r in recs]


def _ms(xs: list[float], fn: Any) -> float | None:
    return fn(xs) * 1000 if xs else None


def result_json(recs: list[RequestRecord], *, kind: str, model: str, streams: int,
                input_len: int, output_len: int) -> dict[str, Any]:
    """The step's result in ``vllm bench serve --save-detailed`` shape (see module doc)."""
    ok = [r for r in recs if not r.error and r.chunk_times]
    ok_ids = {id(r) for r in ok}
    ttfts = [r.chunk_times[0] - r.start if r.chunk_times and not r.error else 0.0
             for r in recs]
    itls = [[b - a for a, b in zip(r.chunk_times, r.chunk_times[1:], strict=False)]
            if not r.error else [] for r in recs]
    outs = [r.completion_tokens or 0 if not r.error else 0 for r in recs]
    ends = [r.chunk_times[-1] if r.chunk_times else r.start for r in recs]
    first = min((r.start for r in recs), default=0.0)
    last = max((r.chunk_times[-1] for r in ok), default=first)
    duration = last - first
    total_out = sum(r.completion_tokens or 0 for r in ok)
    tpots = [(r.chunk_times[-1] - r.chunk_times[0]) / (r.completion_tokens - 1)
             for r in ok if (r.completion_tokens or 0) > 1
             and r.chunk_times[-1] > r.chunk_times[0]]  # no TPOT of 0 s: undefined, not fast
    e2els = [r.chunk_times[-1] - r.start for r in ok]
    flat_itls = [x for r, xs in zip(recs, itls, strict=True) if id(r) in ok_ids
                 for x in xs]
    ok_ttfts = [t for r, t in zip(recs, ttfts, strict=True) if id(r) in ok_ids]
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S"),
        "backend": f"claimcheck-loadclient/{kind}", "model_id": model,
        "num_prompts": len(recs), "max_concurrency": streams, "request_rate": "inf",
        "input_len": input_len, "output_len": output_len,
        "duration": duration, "completed": len(ok), "failed": len(recs) - len(ok),
        "total_input_tokens": sum(r.prompt_tokens or 0 for r in ok),
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration if duration > 0 else None,
        "output_throughput": total_out / duration if duration > 0 else None,
        "input_lens": [r.prompt_tokens or 0 for r in recs], "output_lens": outs,
        "ttfts": ttfts, "itls": itls, "start_times": [r.start for r in recs],
        "end_times": ends, "chunk_tokens": [r.chunk_tokens for r in recs],
        "client_ids": [r.client for r in recs],
        "reasoning_chars": [r.reasoning_chars for r in recs],
        "content_chars": [r.content_chars for r in recs],
        "errors": [r.error for r in recs],
        "mean_ttft_ms": _ms(ok_ttfts, statistics.fmean),
        "median_ttft_ms": _ms(ok_ttfts, statistics.median),
        "mean_tpot_ms": _ms(tpots, statistics.fmean),
        "median_tpot_ms": _ms(tpots, statistics.median),
        "mean_itl_ms": _ms(flat_itls, statistics.fmean),
        "median_itl_ms": _ms(flat_itls, statistics.median),
        "mean_e2el_ms": _ms(e2els, statistics.fmean),
        "median_e2el_ms": _ms(e2els, statistics.median),
    }


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(prog="python -m claimcheck.measure.loadclient",
                                description=__doc__.split("\n\n")[0])
    a.add_argument("--base-url", required=True)
    a.add_argument("--model", required=True)
    a.add_argument("--kind", choices=("closed_loop", "lanes"), required=True)
    a.add_argument("--streams", type=int, required=True, help="clients or lanes")
    a.add_argument("--requests", type=int, required=True, help="requests in all")
    a.add_argument("--input-len", type=int, required=True, help="prompt words (tokens)")
    a.add_argument("--output-len", type=int, required=True, help="max_tokens")
    a.add_argument("--endpoint", default="/v1/chat/completions",
                   choices=("/v1/chat/completions", "/v1/completions"))
    a.add_argument("--ignore-eos", action="store_true")
    a.add_argument("--seed", type=int, required=True)
    a.add_argument("--result", required=True, help="result JSON path")
    a.add_argument("--tokenizer", help="a folder whose tokenizer.json counts each prompt's "
                   "tokens (usage.prompt_tokens is checked against it)")
    a.add_argument("--max-model-len", type=int,
                   help="the engine's max_model_len (tokens); usage above it is refused")
    x = a.parse_args(argv)
    if x.streams < 1 or x.requests < x.streams or x.requests % x.streams:
        a.error(f"--requests ({x.requests}) must be a positive multiple of --streams "
                f"({x.streams})")
    if x.max_model_len is not None and x.max_model_len < 1:
        a.error(f"--max-model-len must be a whole number of tokens > 0, got "
                f"{x.max_model_len}")
    t0 = time.monotonic()
    recs = asyncio.run(run_load(
        base_url=x.base_url, model=x.model, kind=x.kind, streams=x.streams,
        requests=x.requests, input_len=x.input_len, output_len=x.output_len,
        chat=x.endpoint.endswith("chat/completions"), ignore_eos=x.ignore_eos, seed=x.seed,
        tokenizer=load_tokenizer(x.tokenizer), max_model_len=x.max_model_len))
    res = result_json(recs, kind=x.kind, model=x.model, streams=x.streams,
                      input_len=x.input_len, output_len=x.output_len)
    Path(x.result).write_text(json.dumps(res, indent=1, allow_nan=False))
    print(f"{x.kind}: {res['completed']} of {res['num_prompts']} requests completed, "
          f"{res['total_output_tokens']} output tokens (server usage) in "
          f"{res['duration']:.2f} s, {time.monotonic() - t0:.1f} s wall", flush=True)
    for e in [e for e in res["errors"] if e][:3]:
        print(f"error: {e}", flush=True)
    return 0 if res["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
