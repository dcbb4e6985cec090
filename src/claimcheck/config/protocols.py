"""Published load protocols (``config/protocols.yaml``) as data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from claimcheck.files.errors import InputError

KINDS = ("bench", "closed_loop", "lanes")
"""How a protocol's load is made: ``bench`` is ``vllm bench serve`` (open loop, random
prompts, at most ``streams`` in flight); ``closed_loop`` is ``streams`` clients that each
send ``requests_per_client`` requests one after another; ``lanes`` is one prompt sent as
``streams`` identical requests admitted together (claimcheck.measure.loadclient)."""

#: Tokens of headroom asked of ``max_model_len`` beyond prompt + output (chat template,
#: BOS/EOS and the tokenizer's rounding of a random prompt).
FIT_MARGIN_TOKENS = 64


@dataclass(frozen=True)
class Step:
    """One concurrency level: ``streams`` requests in flight, ``requests`` in all, each
    with ``input_len`` prompt tokens and at most ``output_len`` output tokens."""

    streams: int
    requests: int
    input_len: int
    output_len: int
    reference: bool = False

    @property
    def context_tokens(self) -> int:
        """Context per stream at the end of a request: prompt + output tokens."""
        return self.input_len + self.output_len


RELATIONS = {"bench": "independent requests, at most the step's streams in flight (a new one "
             "is sent when one finishes)",
             "closed_loop": "closed-loop clients, each sending its requests one after another",
             "lanes": "lanes: one prompt sent as identical requests admitted together"}
"""How a kind's streams relate, in words (every table and command line says it so)."""


def relation_words(kind: str | None) -> str:
    """How the streams of a protocol of ``kind`` relate (:data:`RELATIONS`)."""
    return RELATIONS.get(kind or "bench", RELATIONS["bench"])


def _span(xs: list[int]) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"


def context_words(steps: list[dict[str, Any]]) -> str:
    """A run's context per stream in words from its step records (each with ``input_len``
    and ``output_len``, tokens): '1,024 to 12,000 prompt + 384 output tokens, by step' where
    the steps differ, '128 prompt + 512 output tokens' where they do not; '?' for none."""
    ins = [int(s["input_len"]) for s in steps if s.get("input_len") is not None]
    outs = [int(s["output_len"]) for s in steps if s.get("output_len") is not None]
    if not ins or not outs:
        return "? prompt + ? output tokens"
    by = ", by step" if len(set(ins)) > 1 or len(set(outs)) > 1 else ""
    return f"{_span(ins)} prompt + {_span(outs)} output tokens{by}"


@dataclass(frozen=True)
class Protocol:
    name: str
    description: str
    source_claims: tuple[str, ...]
    metrics: tuple[str, ...]
    dataset: str
    input_len: int
    output_len: int
    ignore_eos: bool
    seed: str | int
    repeats: int
    report: str
    endpoint: str
    steps: tuple[Step, ...]
    kind: str = "bench"
    requests_per_client: int | None = None
    queue_ok: bool = False
    gate: dict[str, Any] | None = None
    model_term: str | None = None
    """The step model's term this protocol is the measured source of, or None."""

    @property
    def context_tokens(self) -> int:
        """Largest context per stream over the steps: prompt + output tokens."""
        return max(s.context_tokens for s in self.steps)

    def scaled(self, profile: dict[str, Any]) -> Protocol:
        """A copy scaled by a profile (CI): fewer streams, requests and tokens."""
        cap = profile.get("max_streams")
        per = profile.get("requests_per_stream")
        steps = []
        in_len = profile.get("input_len")
        out_len = profile.get("output_len")
        for s in self.steps:
            n = min(s.streams, cap) if cap else s.streams
            if self.kind == "closed_loop":
                reqs = n * (self.requests_per_client or 1)
            elif self.kind == "lanes":
                reqs = n
            else:
                reqs = n * per if per else s.requests
            steps.append(Step(n, reqs, min(s.input_len, in_len) if in_len else s.input_len,
                              min(s.output_len, out_len) if out_len else s.output_len,
                              s.reference))
        return replace(self, steps=tuple(dict.fromkeys(steps)),
                       input_len=min(self.input_len, in_len) if in_len else self.input_len,
                       output_len=min(self.output_len, out_len) if out_len else self.output_len)


def step_context(proto: Protocol, index: int) -> dict[str, int]:
    """Prompt, output and context tokens per stream of step ``index`` of a protocol: the
    one place they are worked out (the step's own lengths where it has them, else the
    protocol's; an index past the protocol's steps, a repeat of an older layout, takes the
    protocol's)."""
    st = proto.steps[index] if 0 <= index < len(proto.steps) else None
    in_len = getattr(st, "input_len", None) or proto.input_len
    out_len = getattr(st, "output_len", None) or proto.output_len
    return {"input_len": in_len, "output_len": out_len,
            "context_tokens_per_stream": in_len + out_len}


def protocols_from_data(data: dict[str, Any], source: str) -> dict[str, Protocol]:
    """The protocols of a validated protocols.yaml (``data``, read from ``source``), each
    checked against its kind (:func:`check_protocol`)."""
    out = {}
    for name, d in data["protocols"].items():
        proto = Protocol(
            name=name, description=" ".join(d["description"].split()),
            source_claims=tuple(d["source_claims"]), metrics=tuple(d["metrics"]),
            dataset=d["dataset"], input_len=d["input_len"], output_len=d["output_len"],
            ignore_eos=d.get("ignore_eos", True), seed=d.get("seed", "fresh"),
            repeats=d.get("repeats", 1), report=d.get("report", "last"),
            endpoint=d.get("endpoint", "/v1/completions"),
            steps=tuple(Step(streams=s["streams"], requests=s["requests"],
                             input_len=s.get("input_len", d["input_len"]),
                             output_len=s.get("output_len", d["output_len"]),
                             reference=s.get("reference", False)) for s in d["steps"]),
            kind=d.get("kind", "bench"), requests_per_client=d.get("requests_per_client"),
            queue_ok=d.get("queue_ok", False), gate=d.get("gate"),
            model_term=d.get("model_term"))
        check_protocol(proto, source)
        out[name] = proto
    return out


def check_protocol(p: Protocol, src: str) -> None:
    """Refuse a protocol whose steps contradict its kind (the schema cannot say these)."""
    if p.kind == "bench" and p.endpoint != "/v1/completions":
        raise InputError(src, "vllm bench serve's random dataset runs on /v1/completions; "
                         f"got {p.endpoint}", key=f"protocols.{p.name}.endpoint")
    for i, s in enumerate(p.steps):
        key = f"protocols.{p.name}.steps[{i}]"
        if s.requests < s.streams:
            raise InputError(src, f"{s.streams} streams but only {s.requests} requests: "
                             "streams can never all be in flight", key=key)
        if p.kind == "closed_loop":
            want = s.streams * (p.requests_per_client or 0)
            if not p.requests_per_client or s.requests != want:
                raise InputError(src, f"a closed loop of {s.streams} clients x "
                                 f"requests_per_client {p.requests_per_client} sends {want} "
                                 f"requests, not {s.requests}", key=key)
        elif p.kind == "lanes" and s.requests != s.streams:
            raise InputError(src, f"lanes send one request per lane: requests must equal "
                             f"streams ({s.streams}), got {s.requests}", key=key)
    if p.gate:
        levels = {s.streams for s in p.steps if not s.reference}
        need_levels, need_reps = p.gate["min_levels"], p.gate["min_repeats"]
        if len(levels) < need_levels or p.repeats < need_reps:
            raise InputError(src, f"the serving gate needs >= {need_levels} levels and >= "
                             f"{need_reps} repeats; this protocol has {len(levels)} levels "
                             f"and {p.repeats} repeats", key=f"protocols.{p.name}.gate")


def synthetic_prompt_chars(input_len: int, vocab_size: int) -> int:
    """The most characters a random prompt of ``input_len`` tokens can take as text with the
    synthetic tokenizer (words ``w0 .. w{V-1}``, one space between words): every word as
    long as the longest, ``len("w{V-1}")``, plus the spaces."""
    return input_len * (len(f"w{vocab_size - 1}") + 1) - 1


def synthetic_text_limit(max_model_len: int, output_len: int, vocab_size: int) -> int:
    """Characters of prompt text vLLM accepts before tokenizing it: (max_model_len - the
    request's max_tokens) x the tokenizer's longest token in characters, which is
    ``len("w{V-1}")`` for the synthetic tokenizer. vLLM 0.26.0 answers a longer text with
    HTTP 400 whatever its token count (``_text_len_check`` in vllm/renderers/params.py)."""
    return (max_model_len - output_len) * len(f"w{vocab_size - 1}")


def check_fit(p: Protocol, max_model_len: int | None, max_num_seqs: int | None,
              engine: str, src: str, synthetic_vocab: int | None = None) -> None:
    """Refuse a protocol that does not fit the engine, naming both numbers.

    Every request must fit ``max_model_len`` (prompt + output + FIT_MARGIN_TOKENS), and no
    step may ask for more streams than the engine's ``max_num_seqs`` unless the protocol
    says queueing is part of it (``queue_ok``, e.g. a serving gate's reference level).
    With the synthetic tokenizer of ``synthetic_vocab`` words (dummy weights), a random
    prompt's text must also pass vLLM's character pre-check (:func:`synthetic_text_limit`):
    the 15,000-token step that lost 2 of 4 requests to HTTP 400 on a 16,384-token engine
    (2026-12-01) can take 119,999 characters against 114,674 accepted.
    """
    for i, s in enumerate(p.steps):
        need = s.context_tokens + FIT_MARGIN_TOKENS
        if max_model_len is not None and need > max_model_len:
            raise InputError(src, f"protocol {p.name!r} step {i} needs {s.input_len} + "
                             f"{s.output_len} + {FIT_MARGIN_TOKENS} = {need} tokens per "
                             f"request, engine {engine!r} has max_model_len {max_model_len}",
                             key=f"engines.{engine}.max_model_len")
        if max_model_len is not None and synthetic_vocab is not None:
            chars = synthetic_prompt_chars(s.input_len, synthetic_vocab)
            limit = synthetic_text_limit(max_model_len, s.output_len, synthetic_vocab)
            if chars > limit:
                raise InputError(src, f"protocol {p.name!r} step {i}: a random prompt of "
                                 f"{s.input_len} synthetic tokens can take {chars} characters "
                                 f"and vLLM refuses (HTTP 400) prompt text over (max_model_len "
                                 f"{max_model_len} - {s.output_len} output) x "
                                 f"{len(f'w{synthetic_vocab - 1}')} characters per token = "
                                 f"{limit} before tokenizing; engine {engine!r} needs "
                                 "a shorter prompt or a larger max_model_len",
                                 key=f"engines.{engine}.max_model_len")
        if max_num_seqs is not None and s.streams > max_num_seqs and not p.queue_ok:
            raise InputError(src, f"protocol {p.name!r} step {i} runs {s.streams} streams, "
                             f"engine {engine!r} has max_num_seqs {max_num_seqs} (set "
                             "queue_ok in the protocol if queueing is intended)",
                             key=f"engines.{engine}.max_num_seqs")


def scaled_protocol(protos: dict[str, Protocol], profiles: dict[str, dict[str, Any]],
                    name: str, source: str, profile: str | None = None) -> Protocol:
    """One protocol by name (optionally scaled by a profile); unknown names are refused
    naming ``source``."""
    if name not in protos:
        raise InputError(source, f"unknown protocol {name!r}; known: "
                         f"{', '.join(sorted(protos))}", key="protocols")
    proto = protos[name]
    if profile:
        if profile not in profiles:
            raise InputError(source, f"unknown profile {profile!r}; known: "
                             f"{', '.join(sorted(profiles)) or 'none'}", key="profiles")
        proto = proto.scaled(profiles[profile])
    return proto


def check_source_claims(protos: dict[str, Protocol], claim_ids: set[str], src: str) -> None:
    """Every protocol's source_claims must exist in the claims registry."""
    for p in protos.values():
        missing = [c for c in p.source_claims if c not in claim_ids]
        if missing:
            raise InputError(src, f"unknown claim ids {missing}",
                             key=f"protocols.{p.name}.source_claims")


Terms = Mapping[str, frozenset[str]]
"""``model_term`` -> the names of the protocols that say it (:func:`model_terms`)."""


def model_terms(protocols: Mapping[str, Protocol]) -> dict[str, frozenset[str]]:
    """Each ``model_term`` the protocols name -> the names of the protocols naming it."""
    out: dict[str, set[str]] = {}
    for name, p in protocols.items():
        if p.model_term:
            out.setdefault(p.model_term, set()).add(name)
    return {t: frozenset(ns) for t, ns in out.items()}
