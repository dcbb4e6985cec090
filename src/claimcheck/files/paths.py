"""Where the project's files live, relative to the repository root."""

from __future__ import annotations

import os
from pathlib import Path


def _is_root(p: Path) -> bool:
    return (p / "pyproject.toml").exists() and (p / "data" / "raw").exists()


def _root() -> Path:
    """CLAIMCHECK_ROOT if set; else the checkout the user is working in (the current
    directory or one above it, as for Snakemake, papermill and nbval); else the checkout
    the package was installed from. Several checkouts can share one environment."""
    env = os.environ.get("CLAIMCHECK_ROOT")
    if env:
        return Path(env)
    cwd = Path.cwd().resolve()
    for parent in (cwd, *cwd.parents):
        if _is_root(parent):
            return parent
    for parent in Path(__file__).resolve().parents:
        if _is_root(parent):
            return parent
    return cwd


ROOT = _root()
RAW = ROOT / "data" / "raw"
DERIVED = Path(os.environ.get("CLAIMCHECK_DERIVED") or ROOT / "data" / "derived")
FIGURES = ROOT / "figures"
RUNS = RAW / "runs"
CONFIG = ROOT / "config"
MODELS = RAW / "models"
