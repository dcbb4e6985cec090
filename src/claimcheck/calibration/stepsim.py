"""One step simulated with a calibration (:mod:`claimcheck.model.simulator`) and read as the
step's predicted aggregates: what the model table, the protocol prediction and every term
solved from a step's timeline (:mod:`claimcheck.calibration.calibration`) set against a
measurement."""

from __future__ import annotations

import statistics
from typing import Any

from claimcheck.model import model as m
from claimcheck.model import simulator
from claimcheck.readings import definitions as d


def predicted_step(shape: m.EngineShape, cal: m.Calibration, prompts: list[int], outputs: list[int],
                   streams: int, cold: bool = False, sends: float | None = None
                   ) -> tuple[dict[str, Any], simulator.Simulation]:
    """Predicted end to end, decode aggregate, median TPOT and TTFT of one simulated step
    (decode None for a held-prefill step); ``cold``: the first step on a freshly started
    engine (:func:`claimcheck.model.simulator.simulate`); ``sends``: the interval its
    client sent its wave at, s, where measured (``Calibration.for_sends``)."""
    sim = simulator.simulate(shape, cal.for_sends(sends), prompts, outputs, streams, cold)
    tl = sim.timeline
    held = d.is_held_prefill(max(outputs, default=None), d.max_output_tokens(tl))
    tpots = d.tpots_ms(tl)
    return ({"predicted_e2e_tok_s": d.e2e_aggregate_tok_s(tl),
             "predicted_decode_tok_s": None if held else d.decode_aggregate_tok_s(tl),
             "predicted_median_tpot_ms": statistics.median(tpots) if tpots else None,
             "predicted_median_ttft_s": statistics.median(r.ttft_s for r in tl.requests),
             "predicted_load_s": tl.wall_s, "prefill_held": held, "bound": sim.bound,
             "engine_steps": sim.engine_steps, **simulator.shares(sim)}, sim)
