"""Reading input files so that every failure names the file: text, JSON and CSV.

Text is UTF-8, with or without a byte-order mark; anything else is refused with the file
named. JSON decode errors name the file and line. These are the only readers the loaders use.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
import lzma
import math
from importlib import resources
from pathlib import Path
from typing import Any

from claimcheck.core.benchcols import decode_cols
from claimcheck.core.errors import InputError

COMPRESSED = {".xz": lzma.decompress, ".gz": gzip.decompress, ".cols": decode_cols}
"""File name suffix -> decoder of a file stored compressed at rest (runs' bench results;
``.cols``: :mod:`claimcheck.core.benchcols`' columnar form)."""


def read_bytes(path: str | Path) -> bytes:
    """The bytes of ``path``, decoded when its name ends in ``.xz``, ``.gz`` or ``.cols``;
    :class:`InputError` naming the file when it is missing or not a valid archive."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(str(p), "no such file") from None
    except IsADirectoryError:
        raise InputError(str(p), "is a directory, not a file") from None
    except PermissionError:
        raise InputError(str(p), "permission denied") from None
    decode = COMPRESSED.get(p.suffix)
    if decode is None:
        return raw
    try:
        return decode(raw)
    except (lzma.LZMAError, OSError, EOFError, ValueError) as e:
        raise InputError(str(p), f"not a valid {p.suffix} archive ({e})") from None


def read_text(path: str | Path) -> str:
    """The text of ``path`` (UTF-8, BOM allowed; ``.xz``/``.gz`` decompressed first);
    :class:`InputError` naming the file otherwise."""
    return decode_text(read_bytes(path), str(path))


def decode_text(raw: bytes, source: str) -> str:
    """``raw`` as UTF-8 text (BOM allowed); :class:`InputError` naming ``source``."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(source, f"not UTF-8 text (byte {e.start}: {raw[e.start]:#04x}); "
                         "save it as UTF-8") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; a decode error names the file and line. NaN/Infinity are refused."""
    return read_json_text(read_text(path), str(path))


def read_json_bytes(raw: bytes, source: str) -> Any:
    """:func:`read_json` of bytes already read from ``source`` (UTF-8)."""
    return read_json_text(decode_text(raw, source), source)


def read_json_text(text: str, source: str) -> Any:
    """Parse JSON text read from ``source``; errors name it and the line."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise InputError(source, f"not valid JSON ({e.msg})", line=e.lineno) from None
    except ValueError as e:
        raise InputError(source, f"not valid JSON ({e})") from None


@functools.cache
def read_schema(name: str) -> dict[str, Any]:
    """The JSON schema shipped as ``claimcheck/schemas/NAME.schema.json`` (read once)."""
    ref = resources.files("claimcheck.schemas").joinpath(f"{name}.schema.json")
    with resources.as_file(ref) as p:
        return read_json(p)


def read_csv(path: str | Path) -> list[dict[str, str]]:
    """Rows of a CSV file with a header line, as dicts of strings."""
    return [row for _, row in read_csv_lines(path)[1]]


Rows = list[tuple[int, dict[str, str]]]


def read_csv_lines(path: str | Path, required: tuple[str, ...] = ()) -> tuple[list[str], Rows]:
    """(header, [(line number, row)]) of a CSV file; the line is 1-based, as an editor shows it.

    Refuses, naming the file and line: an empty file, missing ``required`` columns, and a
    row with more fields than the header.
    """
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    header = list(reader.fieldnames or [])
    if not header:
        raise InputError(str(path), "empty file (no header line)")
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(str(path), f"missing columns {missing} in the header", line=1)
    rows = []
    try:
        for row in reader:
            if None in row:
                raise InputError(str(path), f"{len(header) + len(row[None])} fields, the "
                                 f"header has {len(header)}", line=reader.line_num)
            if None in row.values():
                n = sum(v is not None for v in row.values())
                raise InputError(str(path), f"{n} fields, the header has {len(header)}",
                                 line=reader.line_num)
            rows.append((reader.line_num, row))
    except csv.Error as e:
        raise InputError(str(path), f"not valid CSV ({e})", line=reader.line_num) from None
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
