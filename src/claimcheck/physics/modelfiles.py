"""A model's ``config.json`` read (UTF-8, a byte-order mark allowed) into its dict and its
geometry (:mod:`claimcheck.physics.geometry`); errors name the file and key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claimcheck.files.readers import read_text
from claimcheck.physics.geometry import Geometry, config_from_text, geometry_of


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json (:func:`claimcheck.physics.geometry.config_from_text`: a key given
    twice in one object is refused)."""
    return config_from_text(read_text(path), str(path))


def geometry_from_file(path: str | Path) -> Geometry:
    """Load a config.json and compute its geometry, naming the file and key on bad input."""
    return geometry_of(load_config(path), str(path))
