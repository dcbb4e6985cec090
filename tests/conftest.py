"""Shared fixtures: paths to the committed data."""

from pathlib import Path

import pytest

from claimcheck.core.claims import seeds_dir

ROOT = Path(__file__).resolve().parents[1]
QWEN = ROOT / "data" / "raw" / "models" / "qwen3.8-27b" / "config.json"

# The seed articles are not in the repository: they come with the project's shared folder,
# beside the checkout (../shared/seeds), or wherever CLAIMCHECK_SEEDS points.
SEEDS_ABSENT = ("seed articles not found: put the project's shared/seeds folder beside the "
                "checkout (../shared/seeds) or set CLAIMCHECK_SEEDS to it (README, 'Checking "
                "a claim by hand')")
needs_seeds = pytest.mark.skipif(seeds_dir() is None, reason=SEEDS_ABSENT)


@pytest.fixture
def qwen_config_path() -> Path:
    return QWEN
