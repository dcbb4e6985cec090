"""Where the project's files live, relative to the repository root."""

from __future__ import annotations

import os
from pathlib import Path


def _root() -> Path:
    env = os.environ.get("CLAIMCHECK_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists() and (parent / "data" / "raw").exists():
            return parent
    return Path.cwd()


ROOT = _root()
RAW = ROOT / "data" / "raw"
DERIVED = Path(os.environ.get("CLAIMCHECK_DERIVED") or ROOT / "data" / "derived")
FIGURES = ROOT / "figures"
RUNS = RAW / "runs"
CONFIG = ROOT / "config"
MODELS = RAW / "models"
