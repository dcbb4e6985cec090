"""Reading input files so that every failure names the file: text, JSON and CSV.

Text is UTF-8, with or without a byte-order mark; anything else is refused with the file
named. JSON decode errors name the file and line. These are the only readers the loaders use.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from claimcheck.core.errors import InputError


def read_text(path: str | Path) -> str:
    """The text of ``path`` (UTF-8, BOM allowed); :class:`InputError` naming the file otherwise."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(str(p), "no such file") from None
    except IsADirectoryError:
        raise InputError(str(p), "is a directory, not a file") from None
    except PermissionError:
        raise InputError(str(p), "permission denied") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(str(p), f"not UTF-8 text (byte {e.start}: {raw[e.start]:#04x}); "
                         "save it as UTF-8") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; a decode error names the file and line. NaN/Infinity are refused."""
    text = read_text(path)
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise InputError(str(path), f"not valid JSON ({e.msg})", line=e.lineno) from None
    except ValueError as e:
        raise InputError(str(path), f"not valid JSON ({e})") from None


def read_csv(path: str | Path) -> list[dict[str, str]]:
    """Rows of a CSV file with a header line, as dicts of strings."""
    return list(csv.DictReader(io.StringIO(read_text(path), newline="")))


def dumps_json(obj: Any, **kw: Any) -> str:
    """``json.dumps`` that refuses NaN and infinities instead of writing invalid JSON."""
    return json.dumps(obj, allow_nan=False, **kw)


def finite(x: float) -> bool:
    """True for a finite float (not NaN, not +-inf)."""
    return math.isfinite(x)
