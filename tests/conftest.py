"""Shared fixtures: paths to the committed data."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QWEN = ROOT / "data" / "raw" / "models" / "qwen3.8-27b" / "config.json"


@pytest.fixture
def qwen_config_path() -> Path:
    return QWEN
