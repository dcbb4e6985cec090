"""What every command prints through: a JSON object or its plain-text table, and one number
cell ("null" for a value that is not there, as the JSON says)."""

from __future__ import annotations

import json
from typing import Any


def emit(obj: Any, as_json: bool, table: str) -> None:
    """Print ``obj`` as indented JSON when ``as_json``, else the text ``table``."""
    print(json.dumps(obj, indent=2, sort_keys=False) if as_json else table)


def fmt(v: float | None, spec: str = ",.1f") -> str:
    """``v`` through the format ``spec``; "null" for None."""
    return "null" if v is None else format(v, spec)
