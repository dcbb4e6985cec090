"""Text already read, parsed so that every failure names its source: UTF-8 text (a
byte-order mark allowed), JSON (NaN and infinities refused; errors name the line), a number
cell; and JSON written without NaN. Pure: the files are read by
:mod:`claimcheck.files.readers`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from claimcheck.files.errors import InputError


def decode_text(raw: bytes, source: str) -> str:
    """``raw`` as UTF-8 text (BOM allowed); :class:`InputError` naming ``source``."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(source, f"not UTF-8 text (byte {e.start}: {raw[e.start]:#04x}); "
                         "save it as UTF-8") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_json_bytes(raw: bytes, source: str) -> Any:
    """:func:`read_json_text` of bytes already read from ``source`` (UTF-8)."""
    return read_json_text(decode_text(raw, source), source)


def read_json_text(text: str, source: str) -> Any:
    """Parse JSON text read from ``source``; errors name it and the line."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise InputError(source, f"not valid JSON ({e.msg})", line=e.lineno) from None
    except ValueError as e:
        raise InputError(source, f"not valid JSON ({e})") from None


Rows = list[tuple[int, dict[str, str]]]


def csv_lines(text: str, source: str, required: tuple[str, ...] = ()
              ) -> tuple[list[str], Rows]:
    """(header, [(line number, row)]) of a CSV text read from ``source``; the line is
    1-based, as an editor shows it.

    Refuses, naming the source and line: an empty text, missing ``required`` columns, and a
    row with more fields than the header.
    """
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = list(reader.fieldnames or [])
    if not header:
        raise InputError(source, "empty file (no header line)")
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(source, f"missing columns {missing} in the header", line=1)
    rows = []
    try:
        for row in reader:
            if None in row:
                raise InputError(source, f"{len(header) + len(row[None])} fields, the "
                                 f"header has {len(header)}", line=reader.line_num)
            if None in row.values():
                n = sum(v is not None for v in row.values())
                raise InputError(source, f"{n} fields, the header has {len(header)}",
                                 line=reader.line_num)
            rows.append((reader.line_num, row))
    except csv.Error as e:
        raise InputError(source, f"not valid CSV ({e})", line=reader.line_num) from None
    return header, rows


def parse_number(text: str, source: str, *, line: int | None = None, key: str | None = None,
                 positive: bool = True) -> float:
    """A finite float from a CSV/config cell, > 0 when ``positive`` (else >= 0).

    :class:`InputError` naming the file, line and key on anything else.
    """
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise InputError(source, f"not a number: {text!r}", line=line, key=key) from None
    if not math.isfinite(x):
        raise InputError(source, f"must be a finite number, got {text!r}", line=line, key=key)
    if positive and x <= 0:
        raise InputError(source, f"must be > 0, got {text}", line=line, key=key)
    if not positive and x < 0:
        raise InputError(source, f"must be >= 0, got {text}", line=line, key=key)
    return x


def dumps_json(obj: Any, **kw: Any) -> str:
    """``json.dumps`` that refuses NaN and infinities instead of writing invalid JSON."""
    return json.dumps(obj, allow_nan=False, **kw)


def finite(x: float) -> bool:
    """True for a finite float (not NaN, not +-inf)."""
    return math.isfinite(x)
