"""The calibration terms read off a wave of requests sent together: the admission interval
(the load client's sends), the per-sequence prefill (the engine's own one-wave steps), the
cold start (the first wave of several prompts on a freshly started engine) and the output
lag (when the wave's first request's first token reaches its client).
:func:`claimcheck.calibration.calibrate.choose` takes their source steps from here; the
arithmetic on them is :mod:`claimcheck.calibration.calibration`'s."""

from __future__ import annotations

import math
from collections.abc import Callable

from claimcheck.calibration.picks import ADMISSION_TERM, Pick, earliest, one_wave, run_key
from claimcheck.config.configfiles import load_model_terms
from claimcheck.config.protocols import Terms
from claimcheck.readings.promtext import counter_sum
from claimcheck.runs.run import Run, StepTrace

PROMPT_COUNTER = "vllm:prompt_tokens_total"
"""The server counter (``GET /metrics``, each step's ``server_counters``) whose value 0
before a step says the engine has prefilled nothing since it started."""


def _own_else_card(runs: list[Run], card: str, engine: str,
                   usable: Callable[[Run, StepTrace], bool], what: str) -> tuple[Pick, ...]:
    """The ``usable`` steps of the engine's own runs on the card, else of every run on the
    card, earliest first, each picked with why ("WHAT: N one-wave step(s) of WHERE on
    CARD...")."""
    on_card = [r for r in runs if run_key(r)[0] == card]
    for pool, where in (([r for r in on_card if run_key(r)[1] == engine], f"engine {engine}"),
                        (on_card, f"any engine (engine {engine} has none)")):
        pairs = sorted(((r, s) for r in pool for s in r.traces if usable(r, s)),
                       key=lambda p: earliest(*p))
        if pairs:
            why = what.format(n=len(pairs), where=where, card=card)
            return tuple(Pick(r, s, why) for r, s in pairs)
    return ()


def admission_sources(runs: list[Run], card: str, engine: str, terms: Terms | None = None
                      ) -> tuple[Pick, ...]:
    """The admission term's source steps: one-wave steps of the engine's own runs on the
    card, else of every run on the card (the interval is the load client's, on its host)."""
    terms = load_model_terms() if terms is None else terms
    return _own_else_card(runs, card, engine,
                          lambda r, s: one_wave(r, s, terms, ADMISSION_TERM),
                          "admission: {n} one-wave step(s) of {where} on {card}: the "
                          "interval between a wave's sends")


def sequence_sources(admission: tuple[Pick, ...], engine: str,
                     weight_format: object = None) -> tuple[Pick, ...]:
    """The per-sequence prefill term's source steps: the admission term's steps
    (:func:`admission_sources`) when they are the engine's own (their walls are its
    prefill, not only the client's send times); else those of engines of its
    ``weight_format`` on the card (the same GEMMs and attention over a prompt), said as
    borrowed; () when neither has any."""
    own = tuple(p for p in admission if run_key(p.run)[1] == engine)
    kin = () if own or weight_format is None else tuple(
        p for p in admission if run_key(p.run)[2] == weight_format)
    picks = own or kin
    if not picks:
        return ()
    whose = (f"engine {engine}" if own else
             "engine(s) " + ", ".join(sorted({str(run_key(p.run)[1]) for p in kin}))
             + f" (weight format {weight_format}; engine {engine} has none)")
    why = (f"sequence prefill: {len(picks)} one-wave step(s) of {whose} whose requests are "
           "only their admission and prefill: the cost per prefilling request in a step at "
           "which the simulated wall equals the measured one")
    return tuple(Pick(p.run, p.step, why) for p in picks)


def engine_fresh(s: StepTrace) -> bool | None:
    """Whether the engine had prefilled no prompt token when step ``s`` began (its server
    counters read before it: :data:`PROMPT_COUNTER` 0); None where the step recorded no
    counters (runs before 2026-12-03)."""
    before = ((s.record.get("server_counters") or {}).get("before") or {}).get("counters")
    if not before:
        return None
    n = counter_sum(before, PROMPT_COUNTER)
    if not (isinstance(n, (int, float)) and math.isfinite(n) and n >= 0):
        raise ValueError(f"step {s.record.get('dir')}: server_counters before: "
                         f"{PROMPT_COUNTER} is {n!r}, not a count >= 0")
    return n == 0


def cold_step(s: StepTrace) -> bool:
    """A step whose first wave met a freshly started engine (:func:`engine_fresh`)."""
    return bool(engine_fresh(s))


def _several_at_once(s: StepTrace) -> bool:
    """One wave of two or more prompts: as many requests as streams."""
    return 2 <= s.timeline.streams == len(s.timeline.requests)


def cold_sources(runs: list[Run], card: str, engine: str) -> tuple[Pick, ...]:
    """The cold-start term's source steps: one-wave steps of two or more prompts that met
    a freshly started engine (:func:`cold_step`), of the engine's own runs on the card,
    else of every run on the card."""
    return _own_else_card([r for r in runs if not r.drafts], card, engine,
                          lambda r, s: cold_step(s) and _several_at_once(s),
                          "cold start: {n} one-wave step(s) of several prompts of {where} "
                          "on {card}, each the first on a freshly started engine")


def lag_sources(runs: list[Run], card: str, engine: str) -> tuple[Pick, ...]:
    """The output-lag term's source steps: one-wave steps of two or more prompts on a warm
    engine (not :func:`cold_step`), of the engine's own runs on the card, else of every
    run on the card (the lag differs by engine: on the H200 a median 0.33 of a step with
    Machete, 0.71 with Marlin). ``runs``: those of the engine's vLLM release alone, as
    the hand-back is the engine loop's (:func:`~.calibrate.choose` passes them)."""
    return _own_else_card([r for r in runs if not r.drafts], card, engine,
                          lambda r, s: not cold_step(s) and _several_at_once(s),
                          "output lag: {n} one-wave step(s) of several prompts of {where} on "
                          "{card}, each on a warm engine")
