"""One energy per step: the board energy every table, figure and verdict divides by.

A step's energy is the telemetry's board power (W, summed over the run's GPUs, 1 Hz)
integrated over the step's load window, the same window its tokens and tok/s are counted
in. Fallback, stated in ``source``: the step's NVML energy-counter reading
(``energy.joules`` in step.json), which spans the whole client call, its start-up
included, so it overstates the load's energy (and understates tok/J) by the idle seconds.
Energy in J; tok/J equals tok/s per W.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from claimcheck.readings.definitions import energy_j

TELEMETRY = "telemetry"
"""Source: 1 Hz board power integrated over the step's load window (trapezoid rule)."""
COUNTER = "nvml_counter"
"""Source: the NVML energy counter over the client's whole call (start-up included)."""

SOURCE_WORDS = {
    TELEMETRY: "board power (1 Hz telemetry) integrated over the step's load window",
    COUNTER: "NVML energy counter over the whole client call, start-up included",
}


@dataclass(frozen=True)
class StepEnergy:
    """A step's board energy (J, None when neither source has it) and its source
    (:data:`TELEMETRY`, :data:`COUNTER`, or None)."""

    joules: float | None
    source: str | None


def counter_energy_j(rec: Mapping[str, Any]) -> float | None:
    """The step's NVML energy-counter reading, J (step.json ``energy.joules``); None when the
    step has none (or it reads 0)."""
    j = (rec.get("energy") or {}).get("joules")
    return float(j) if j else None


def step_energy(rec: Mapping[str, Any], power: Sequence[tuple[float, float]], t0: float,
                t1: float) -> StepEnergy:
    """The one energy of a step: ``power`` ((unix s, W) samples) integrated over the load
    window [t0, t1] s when the samples cover it; else the NVML counter of ``rec`` (the
    step.json record); else none."""
    e = energy_j(power, t0, t1)
    if e is not None:
        return StepEnergy(e, TELEMETRY)
    c = counter_energy_j(rec)
    return StepEnergy(c, COUNTER if c is not None else None)
