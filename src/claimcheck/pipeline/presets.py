"""Roofline presets (``rooflines:`` in config/config.yaml) turned into rooflines.

A preset names its weights (a ``weights.csv`` id, a weight format, or a recorded run whose
engine reported the weight GiB) and its compute ceiling (a ``ceilings.csv`` id, or a compute
dtype for the card's datasheet dense rate); it never types a byte count or a TFLOP/s rate.
Everything goes through :func:`claimcheck.physics.inputs.roofline_for`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.files.readers import read_text
from claimcheck.physics import roofline as rl
from claimcheck.physics.cards import Card, Ceiling
from claimcheck.physics.engine_inputs import EngineInputs
from claimcheck.physics.geometry import Geometry
from claimcheck.physics.inputs import (
    ENGINE_MEMORY_SHARE,
    WeightRow,
    Weights,
    fit_reason,
    memory_wall,
    past_wall_reason,
    roofline_for,
)
from claimcheck.physics.units import GIB
from claimcheck.readings import serverlog
from claimcheck.runs import runload
from claimcheck.runs.tables import engine_roofline


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
    """The engine inputs of a recorded run (:mod:`claimcheck.physics.engine_inputs`), from its
    provenance.json, server-start.log and model config: the ones its step rooflines and its
    model use."""
    p = Path(run_dir)
    prov = runload.read_provenance(p)
    ei, _ = runload.run_engine_inputs(prov, read_text(p / "server-start.log"),
                                      str(p / "provenance.json"))
    if ei is None or ei.engine_weights_gib is None:
        engine_weights_gib(p)  # names the start log that lacks the weight line
        raise InputError(str(p / "provenance.json"), "model config not in this checkout",
                         key="model_config")
    return ei


def _raw_preset_roofline(preset: dict[str, Any], geom: Geometry, card: Card,
                         ceilings: dict[str, Ceiling], weight_rows: dict[str, WeightRow],
                         runs_dir: str | Path, free_bytes: float | None,
                         conv_state_dtype: str) -> tuple[rl.Roofline, dict[str, Any]]:
    if preset.get("weights_run"):
        ei = run_engine_inputs(Path(runs_dir) / preset["weights_run"])
        if preset.get("compute_dtype"):
            ei = dataclasses.replace(ei, compute_dtype=preset["compute_dtype"])
        m, src = engine_roofline(ei, geom, card, ceilings,
                                 context_tokens=preset["context"],
                                 state_dtype=preset["state_dtype"],
                                 kv_dtype=preset["kv_dtype"], ceiling=preset.get("ceiling"),
                                 source=f"engine log of {preset['weights_run']}")
        # the engine's own W and S: the one memory check on them (as roofline_for does)
        return dataclasses.replace(m, memory_bytes=card.memory_gib * GIB,
                                   free_bytes=free_bytes), src
    return roofline_for(geom, card, weights=preset_weights(preset, runs_dir),
                        ceilings=ceilings, weight_rows=weight_rows,
                        compute_dtype=preset.get("compute_dtype"),
                        ceiling=preset.get("ceiling"), state_dtype=preset["state_dtype"],
                        kv_dtype=preset["kv_dtype"], context_tokens=preset["context"],
                        check_memory=True, free_bytes=free_bytes,
                        conv_state_dtype=conv_state_dtype)


def weights_key(preset: dict[str, Any]) -> str:
    """The preset key that gave its weights."""
    return next((k for k in ("weights", "weights_run", "weights_format") if preset.get(k)),
                "weights")


def preset_roofline(preset: dict[str, Any], geom: Geometry, card: Card,
                    ceilings: dict[str, Ceiling], weight_rows: dict[str, WeightRow],
                    runs_dir: str | Path, *, conv_state_dtype: str, source: str = "preset",
                    key: str = "preset") -> tuple[rl.Roofline, dict[str, Any]]:
    """The roofline of a preset at eta = 1, and the source of each input, after the one
    physics check of every road (:mod:`claimcheck.physics.inputs`): weights of at least half
    a byte per weight, a context within the model's max_position_embeddings, weights plus
    one stream (and plus ``free_gib``) within the card's memory, and ``max_streams`` within
    the memory wall unless ``allow_past_wall``. A refusal is an :class:`InputError` naming
    ``source`` (the file) and ``key`` (the preset, e.g. ``rooflines[2]``) with the field,
    in the words the CLI prints. The wall (in ``free_gib``, else the card's memory x
    ``gpu_memory_utilization`` less the weights) is in the sources as ``memory_wall``.

    A preset drawn from a recorded run (``weights_run``) takes that run's engine inputs (W
    without the input embedding, conv state in S) at the preset's state and KV dtypes, as
    its steps do."""
    free = preset.get("free_gib")
    free_bytes = None if free is None else free * GIB
    fields = {"weight_bytes": weights_key(preset), "free_bytes": "free_gib",
              "context_tokens": "context"}
    try:
        m, src = _raw_preset_roofline(preset, geom, card, ceilings, weight_rows, runs_dir,
                                      free_bytes, conv_state_dtype)
        wall = memory_wall(m, card, free_bytes=free_bytes, free_source="free_gib",
                           memory_share=preset.get("gpu_memory_utilization",
                                                   ENGINE_MEMORY_SHARE))
    except rl.RooflineInputError as e:
        raise InputError(source, fit_reason(e, card),
                         key=f"{key}.{fields.get(e.field, e.field)}") from None
    except InputError as e:
        if e.source == "context":
            raise InputError(source, e.reason, key=f"{key}.context") from None
        if e.source == "weights":
            raise InputError(source, e.reason, key=f"{key}.{weights_key(preset)}") from None
        raise
    if wall is not None:
        why = past_wall_reason(wall, preset["max_streams"], preset["context"])
        if why and not preset.get("allow_past_wall"):
            raise InputError(source, f"{why}; set allow_past_wall: true to draw them anyway",
                             key=f"{key}.max_streams")
    src["memory_wall"] = wall
    return m, src


def check_presets(presets: list[dict[str, Any]], *, source: str, model_config: str | Path,
                  cards: dict[str, Card], ceilings_csv: str | Path,
                  weights_csv: str | Path, runs_dir: str | Path,
                  key: str = "rooflines") -> None:
    """Every preset through the one physics check (:func:`preset_roofline`) before
    anything renders: the first that cannot be is refused naming ``source`` and
    ``key[i]``. Card names are checked first (unknown: refused with the known ones)."""
    from claimcheck.claims.registryfiles import load_weight_rows
    from claimcheck.physics.cardfiles import load_ceilings
    from claimcheck.physics.engine_inputs import model_dtype
    from claimcheck.physics.modelfiles import geometry_from_file, load_config

    check_unique_names(presets, source)
    geom = geometry_from_file(model_config)
    conv = model_dtype(load_config(model_config))
    ceilings, rows = load_ceilings(ceilings_csv), load_weight_rows(weights_csv)
    for i, p in enumerate(presets):
        k = f"{key}[{i}]" if key else "preset"
        if p["card"] not in cards:
            raise InputError(source, f"unknown card {p['card']!r}; known: "
                             f"{', '.join(sorted(cards))}", key=f"{k}.card")
        preset_roofline(p, geom, cards[p["card"]], ceilings, rows, runs_dir,
                        conv_state_dtype=conv, source=source, key=k)
