"""The compute term carried from another card: where a card has no one-stream prefill of
an engine's weight format long enough to measure its compute, the engine's own such step
on another card (its kernel's rate there) stands in, as a share of that card's dense rate
at the engine's compute dtype times this card's (both datasheet rates): before the
datasheet rate itself, which no kernel reaches (on the H200 Marlin's held prefill read 333
TFLOP/s of the 989.4 dense BF16; the H100 has the same dense rate and no such step)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from claimcheck.calibration.choice import Pick
from claimcheck.calibration.layout import run_version
from claimcheck.calibration.picks import earliest, median_prompt, one_stream_steps, run_key
from claimcheck.files.errors import InputError
from claimcheck.model import model as m
from claimcheck.physics.cardfiles import get_card
from claimcheck.runs.run import Run, StepTrace
from claimcheck.runs.runchecks import NO_CARD


@dataclass(frozen=True)
class CarriedCompute:
    """The compute step on another card (its ``why`` says how its rate is carried) and the
    factor that carries its rate here."""

    pick: Pick
    scale: float
    """This card's dense rate over the step's card's, at the engine's compute dtype."""


def carried_compute(runs: list[Run], card: str, engine: str, version: str | None,
                    rank: Callable[[Run, StepTrace], int]) -> CarriedCompute | None:
    """``engine``'s best long one-stream prefill step (by ``rank``, then the longest
    prompt, the most requests, the earliest) on any card but ``card`` with a datasheet,
    of vLLM ``version`` when given; None when there is none or a card lacks the rate."""
    pairs = [(r, s) for r in runs if run_key(r)[1] == engine and not r.drafts
             and run_key(r)[0] not in (card, NO_CARD)
             and (version is None or run_version(r) == version)
             for s in one_stream_steps(r) if median_prompt(s) >= m.LONG_PROMPT_TOKENS]
    if not pairs:
        return None
    r, s = min(pairs, key=lambda p: (rank(*p), -median_prompt(p[1]),
                                     -len(p[1].timeline.requests), earliest(*p)))
    dtype = r.engine[1]["compute_dtype"]
    try:
        src, here = get_card(run_key(r)[0]), get_card(card)
        scale = here.tflops(dtype) / src.tflops(dtype)
    except (InputError, KeyError, ValueError, TypeError, ZeroDivisionError):
        return None
    words = (f"carried from {src.name}: engine {engine}'s own prefill there, x {card}'s "
             f"dense {dtype} {here.tflops(dtype):g} / {run_key(r)[0]}'s "
             f"{src.tflops(dtype):g} TFLOP/s (datasheets)")
    return CarriedCompute(Pick(r, s, f"compute: {words} ({len(s.timeline.requests)} x "
                               f"{median_prompt(s):,.0f}-token prompts on {run_key(r)[0]}; "
                               "no such step on this card)"), scale)
