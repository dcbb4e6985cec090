"""The measurement matrix (``measure:`` in config/config.yaml): which (card or SLURM
partition, engine, protocols) jobs ``snakemake measure`` runs, and each job's resources.
Pure functions over the config dict; errors are one-line InputErrors naming the key."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from claimcheck.files.errors import InputError

# SLURM executor defaults: minutes, MB (1e6 bytes) of host memory, CPUs.
RESOURCE_DEFAULTS: dict[str, Any] = {"runtime": 120, "mem_mb": 16000, "cpus_per_task": 4,
                                     "gres": "", "slurm_partition": "",
                                     "slurm_account": "", "slurm_extra": ""}
RESOURCE_KEYS = ("gpu", *RESOURCE_DEFAULTS)
SPECIAL_CARDS = ("auto", "cpu")


def entries(measure: dict[str, Any], cards: Collection[str],
            source: str = "config/config.yaml") -> dict[str, dict[str, Any]]:
    """{job name: entry}. The flat form (card, engine, protocols) is one entry. A card is a
    registry name, ``auto`` (the default: detected from NVML) or ``cpu``; names default to
    CARD-ENGINE (PARTITION-ENGINE) and must be unique: one job per host and engine."""
    rows = measure.get("matrix") or [
        {k: measure[k] for k in ("card", "engine", "protocols") if k in measure}]
    out: dict[str, dict[str, Any]] = {}
    for i, e in enumerate(rows):
        key = f"measure.matrix[{i}]" if "matrix" in measure else "measure"
        for need in ("engine", "protocols"):
            if need not in e:
                raise InputError(source, f"missing {need}", key=key)
        card = e.get("card", "auto")
        if card not in SPECIAL_CARDS and card not in cards:
            raise InputError(source, f"unknown card {card!r}; known: "
                             f"{', '.join(sorted(cards))} (or auto, cpu)", key=key + ".card")
        if "card" not in e and "partition" not in e:
            raise InputError(source, "needs a card or a partition", key=key)
        name = e.get("name") or f"{e.get('card') or e['partition']}-{e['engine']}"
        if name in out:
            raise InputError(source, f"two entries are job {name!r}; one job per (card or "
                             "partition, engine): name one of them", key=key)
        out[name] = {**e, "card": card}
    return out


def option(measure: dict[str, Any], entry: dict[str, Any], key: str,
           default: Any = None) -> Any:
    """An entry's setting, else the measure section's, else ``default``."""
    return entry.get(key, measure.get(key, default))


def resources(entry: dict[str, Any]) -> dict[str, Any]:
    """The job's SLURM executor resources: the entry's, else the defaults; ``gpu`` is 0
    for a ``cpu`` entry and 1 otherwise unless given; the partition is the entry's."""
    given = entry.get("resources", {})
    out = {k: given.get(k, v) for k, v in RESOURCE_DEFAULTS.items()}
    out["gpu"] = given.get("gpu", 0 if entry["card"] == "cpu" else 1)
    out["slurm_partition"] = entry.get("partition", "")
    return out


def job(measure: dict[str, Any], cards: Collection[str], name: str) -> dict[str, Any]:
    """What one job runs: card, engine, engines file, the ``claimcheck measure`` protocol
    and profile options, and the health timeout (seconds)."""
    e = entries(measure, cards)[name]
    profile = option(measure, e, "profile")
    return {"card": e["card"], "engine": e["engine"],
            "engines_file": option(measure, e, "engines_file", "config/engines.yaml"),
            "args": " ".join([*(f"--protocol {p}" for p in e["protocols"]),
                              *([f"--profile {profile}"] if profile else [])]),
            "health_timeout_s": measure.get("health_timeout_s", 900)}
