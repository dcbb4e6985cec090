"""Token timeline of one benchmark step: when every output token of every request arrived.

Built from ``vllm bench serve --save-detailed`` arrays, per request: ``start_times`` (s, the
client's monotonic clock), ``ttfts`` (s), ``itls`` (s between consecutive streamed chunks),
``output_lens`` (tokens, the server's usage count) and ``input_lens`` (prompt tokens).

Chunk ``k`` of a request arrives at ``start + ttft + sum(itls[:k])``; chunk 0 is the first.
The number of tokens comes from ``output_lens`` (usage), never from the number of chunks:
under speculation one chunk carries several tokens. How they are placed on the chunks:

* when the result carries ``chunk_tokens`` (per request, tokens in each chunk; written by
  claimcheck's own clients), those counts are used and must sum to ``output_lens``; a
  request whose list has a ``None`` (a chunk that came without a usage count) falls back to
  the spread below;
* otherwise the first chunk carries exactly the first token, and the remaining
  ``output_lens - 1`` tokens are spread over the ``len(itls)`` later chunks as evenly as whole
  numbers allow: chunk ``k`` (1-based among the later chunks) gets
  ``floor(k R / n) - floor((k - 1) R / n)`` with ``R`` the remainder and ``n`` the number of
  later chunks, so any surplus lands on evenly spaced chunks. With ``output_lens == 1 +
  len(itls)`` (the plain case) that is one token per chunk. A token arrives with its chunk.

Failed requests (an error string, no TTFT or no output tokens) carry no tokens and are kept
apart. Pure functions; times in seconds on the client's clock.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np


@dataclass(frozen=True)
class RequestTimeline:
    """One request: send time, prompt size and the arrival time of each output token (s)."""

    start_s: float
    ttft_s: float
    prompt_tokens: int
    token_times_s: tuple[float, ...]
    chunks: int

    @property
    def output_tokens(self) -> int:
        return len(self.token_times_s)

    @property
    def first_token_s(self) -> float:
        return self.token_times_s[0]

    @property
    def last_token_s(self) -> float:
        return self.token_times_s[-1]


@dataclass(frozen=True)
class Timeline:
    """All completed requests of one step at ``streams`` concurrent streams.

    ``duration_s`` is the bench's own wall time (None when not recorded); ``failed`` counts
    requests that produced no tokens.
    """

    streams: int
    requests: tuple[RequestTimeline, ...]
    duration_s: float | None = None
    failed: int = 0

    @property
    def first_send_s(self) -> float:
        return min(r.start_s for r in self.requests)

    @property
    def last_token_s(self) -> float:
        return max(r.last_token_s for r in self.requests)

    @property
    def wall_s(self) -> float:
        """First send to last token, s."""
        return self.last_token_s - self.first_send_s

    @property
    def last_first_token_s(self) -> float:
        """The last request's first token, s."""
        return max(r.first_token_s for r in self.requests)

    @property
    def prefilled_s(self) -> float:
        """First send to the last request's first token (with one wave, every prompt
        prefilled), s."""
        return self.last_first_token_s - self.first_send_s

    @property
    def send_interval_s(self) -> float | None:
        """The mean interval between the sends of the step's first wave (its first
        ``streams`` requests by send time: (last send - first send) / (sends - 1)), s; None
        with fewer than two in it or all sent at one recorded instant (no interval)."""
        sends = sorted(r.start_s for r in self.requests)[:self.streams]
        return (sends[-1] - sends[0]) / (len(sends) - 1) if len(sends) > 1 and (
            sends[-1] > sends[0]) else None

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.requests)

    def token_times(self) -> list[float]:
        """Every token's arrival time, sorted (s)."""
        return self.sorted_token_times.tolist()

    @cached_property
    def sorted_token_times(self) -> np.ndarray:
        """Every token's arrival time, sorted (s), as a read-only float64 array: sorted once
        per timeline, since several definitions read it."""
        times = np.fromiter(itertools.chain.from_iterable(r.token_times_s
                                                          for r in self.requests),
                            dtype=np.float64, count=self.output_tokens)
        times.sort(kind="stable")
        times.flags.writeable = False
        return times


def spread_tokens(tokens: int, chunks: int) -> list[int]:
    """Tokens per chunk when only the total is known (see the module docstring).

    The first chunk carries one token; ``tokens - 1`` are spread evenly over the rest.
    """
    if tokens < 0 or chunks < 0:
        raise ValueError(f"tokens and chunks must be >= 0, got {tokens}, {chunks}")
    if tokens == 0 or chunks == 0:
        return []
    if chunks == 1:
        return [tokens]
    rest, n = tokens - 1, chunks - 1
    return [1] + [(k * rest) // n - ((k - 1) * rest) // n for k in range(1, n + 1)]


def request_timeline(start_s: float, ttft_s: float, itls_s: Sequence[float],
                     output_tokens: int, prompt_tokens: int,
                     chunk_tokens: Sequence[int | None] | None = None) -> RequestTimeline:
    """Arrival time of each token of one request (s). ``chunk_tokens`` overrides the spread."""
    chunks = 1 + len(itls_s)
    if chunk_tokens is not None and any(c is None for c in chunk_tokens):
        chunk_tokens = None  # some chunk had no usage count: spread instead
    chunk_s = itertools.accumulate(itls_s, initial=start_s + ttft_s)
    # chunk k arrives at start + ttft + itls[0] + ... + itls[k-1], added in that order
    if chunk_tokens is None and output_tokens == chunks:
        return RequestTimeline(start_s=start_s, ttft_s=ttft_s, prompt_tokens=prompt_tokens,
                               token_times_s=tuple(chunk_s), chunks=chunks)  # one a chunk
    if chunk_tokens is not None:
        counts = [int(c) for c in chunk_tokens if c is not None]
        if len(counts) != chunks:
            raise ValueError(f"chunk_tokens has {len(counts)} entries for {chunks} chunks "
                             "(1 + len(itls))")
        if sum(counts) != output_tokens or min(counts, default=0) < 0:
            raise ValueError(f"chunk_tokens sum to {sum(counts)}, output_lens says "
                             f"{output_tokens}")
    else:
        counts = spread_tokens(output_tokens, chunks)
    times = tuple(itertools.chain.from_iterable(
        itertools.repeat(t, c) for t, c in zip(chunk_s, counts, strict=False)))
    return RequestTimeline(start_s=start_s, ttft_s=ttft_s, prompt_tokens=prompt_tokens,
                           token_times_s=times, chunks=chunks)


def from_bench(result: dict[str, Any], streams: int) -> Timeline:
    """The timeline of one ``--save-detailed`` result at ``streams`` concurrent streams.

    Raises ValueError (naming the key) when the per-request arrays are missing or disagree.
    """
    keys = ("start_times", "ttfts", "itls", "output_lens", "input_lens")
    for k in keys:
        if not isinstance(result.get(k), list):
            raise ValueError(f"{k}: missing; run vllm bench serve with --save-detailed")
    n = len(result["output_lens"])
    for k in keys:
        if len(result[k]) != n:
            raise ValueError(f"{k}: {len(result[k])} entries, output_lens has {n}")
    chunk_tokens = result.get("chunk_tokens")
    if chunk_tokens is not None and len(chunk_tokens) != n:
        raise ValueError(f"chunk_tokens: {len(chunk_tokens)} entries, output_lens has {n}")
    errors = result.get("errors") or [""] * n
    reqs, failed = [], 0
    for i in range(n):
        out, ttft = result["output_lens"][i], result["ttfts"][i]
        if errors[i] or not out or ttft is None or ttft <= 0:
            failed += 1
            continue
        try:
            reqs.append(request_timeline(
                result["start_times"][i], ttft, result["itls"][i] or [], int(out),
                int(result["input_lens"][i]),
                chunk_tokens[i] if chunk_tokens is not None else None))
        except ValueError as e:
            raise ValueError(f"request {i}: {e}") from None
    if not reqs:
        raise ValueError("no request produced tokens")
    return Timeline(streams=streams, requests=tuple(reqs), duration_s=result.get("duration"),
                    failed=failed)


# ------------------------------------------------------------------ derived series


def decoding_intervals(tl: Timeline) -> list[tuple[float, float]]:
    """Each request's decode interval (first token, last token], s."""
    return [(r.first_token_s, r.last_token_s) for r in tl.requests]


def concurrency_steps(intervals: Sequence[tuple[float, float]]) -> list[tuple[float, int]]:
    """Step function of how many intervals are open: (time, count from that time on).

    Intervals are half-open (a, b]; at a tie an interval closing and another opening at the
    same instant leave the count unchanged across it.
    """
    events: dict[float, int] = {}
    for a, b in intervals:
        if b <= a:
            continue
        events[a] = events.get(a, 0) + 1
        events[b] = events.get(b, 0) - 1
    out, n = [], 0
    for t in sorted(events):
        n += events[t]
        out.append((t, n))
    return out


def most_at_once(intervals: Sequence[tuple[float, float]]) -> int:
    """The most intervals open at one moment (:func:`concurrency_steps`); 0 with none."""
    return max((n for _, n in concurrency_steps(intervals)), default=0)


def intervals_with_at_least(intervals: Sequence[tuple[float, float]],
                            n: int) -> list[tuple[float, float]]:
    """Maximal spans (a, b] during which at least ``n`` of ``intervals`` are open (s)."""
    spans: list[tuple[float, float]] = []
    open_at: float | None = None
    for t, c in concurrency_steps(intervals):
        if c >= n and open_at is None:
            open_at = t
        elif c < n and open_at is not None:
            spans.append((open_at, t))
            open_at = None
    return spans


def count_in(times_sorted: Sequence[float] | np.ndarray,
             spans: Sequence[tuple[float, float]]) -> int:
    """How many of the sorted ``times`` (s; a list or :attr:`Timeline.sorted_token_times`)
    fall in the half-open spans (a, b]."""
    return sum(bisect.bisect_right(times_sorted, b) - bisect.bisect_right(times_sorted, a)
               for a, b in spans)


def binned_tokens(tl: Timeline, bin_s: float = 0.1) -> tuple[list[float], list[int]]:
    """Tokens arriving per bin from the first send: (bin start times relative, counts)."""
    t0 = tl.first_send_s
    nbins = int((tl.last_token_s - t0) / bin_s) + 1
    counts = [0] * nbins
    for t in tl.token_times():
        counts[min(int((t - t0) / bin_s), nbins - 1)] += 1
    return [i * bin_s for i in range(nbins)], counts
