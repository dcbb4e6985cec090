"""Roofline presets (``rooflines:`` in config/config.yaml) turned into rooflines.

A preset names its weights (a ``weights.csv`` id, a weight format, or a recorded run whose
engine reported the weight GiB) and its compute ceiling (a ``ceilings.csv`` id, or a compute
dtype for the card's datasheet dense rate); it never types a byte count or a TFLOP/s rate.
Everything goes through :func:`claimcheck.core.inputs.roofline_for`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from claimcheck.core import roofline as rl
from claimcheck.core import runload, serverlog
from claimcheck.core.cards import Card, Ceiling
from claimcheck.core.engine_inputs import EngineInputs
from claimcheck.core.errors import InputError
from claimcheck.core.geometry import Geometry
from claimcheck.core.inputs import WeightRow, Weights, roofline_for
from claimcheck.core.io import read_text
from claimcheck.report.tables import engine_roofline


def check_unique_names(presets: list[dict[str, Any]], source: str) -> None:
    """Two presets with one name would draw one figure over the other: refused."""
    seen: set[str] = set()
    for i, p in enumerate(presets):
        if p["name"] in seen:
            raise InputError(source, f"duplicate preset name {p['name']!r}",
                             key=f"rooflines[{i}].name")
        seen.add(p["name"])


def engine_weights_gib(run_dir: str | Path) -> float:
    """GiB of weights the engine reported in a run's server-start.log."""
    path = Path(run_dir) / "server-start.log"
    gib = serverlog.weights_gib(read_text(path))
    if gib is None:
        raise InputError(str(path), "no 'Model loading took X GiB' line: the engine did not "
                         "report its weight size")
    return gib


def preset_weights(preset: dict[str, Any], runs_dir: str | Path) -> Weights:
    """The weight source a preset names."""
    if preset.get("weights"):
        return Weights(id=preset["weights"])
    if preset.get("weights_run"):
        run = Path(runs_dir) / preset["weights_run"]
        return Weights(size=engine_weights_gib(run), unit="GiB",
                       source=f"engine log of {preset['weights_run']}")
    return Weights(format=preset["weights_format"])


def run_engine_inputs(run_dir: str | Path) -> EngineInputs:
    """The engine inputs of a recorded run (:mod:`claimcheck.core.engine_inputs`), from its
    provenance.json, server-start.log and model config: the ones its step rooflines and its
    model use."""
    p = Path(run_dir)
    prov = runload.read_provenance(p)
    ei = runload.run_engine_inputs(prov, read_text(p / "server-start.log"),
                                   str(p / "provenance.json"))
    if ei is None or ei.engine_weights_gib is None:
        engine_weights_gib(p)  # names the start log that lacks the weight line
        raise InputError(str(p / "provenance.json"), "model config not in this checkout",
                         key="model_config")
    return ei


def preset_roofline(preset: dict[str, Any], geom: Geometry, card: Card,
                    ceilings: dict[str, Ceiling], weight_rows: dict[str, WeightRow],
                    runs_dir: str | Path) -> tuple[rl.Roofline, dict[str, Any]]:
    """The roofline of a preset at eta = 1, and the source of each input. A preset drawn
    from a recorded run (``weights_run``) takes that run's engine inputs (W without the input
    embedding, conv state in S) at the preset's state and KV dtypes, as its steps do."""
    if preset.get("weights_run"):
        ei = run_engine_inputs(Path(runs_dir) / preset["weights_run"])
        if preset.get("compute_dtype"):
            ei = dataclasses.replace(ei, compute_dtype=preset["compute_dtype"])
        return engine_roofline(ei, geom, card, ceilings,
                               context_tokens=preset["context"],
                               state_dtype=preset["state_dtype"], kv_dtype=preset["kv_dtype"],
                               ceiling=preset.get("ceiling"),
                               source=f"engine log of {preset['weights_run']}")
    return roofline_for(geom, card, weights=preset_weights(preset, runs_dir),
                        ceilings=ceilings, weight_rows=weight_rows,
                        compute_dtype=preset.get("compute_dtype"),
                        ceiling=preset.get("ceiling"), state_dtype=preset["state_dtype"],
                        kv_dtype=preset["kv_dtype"], context_tokens=preset["context"])
