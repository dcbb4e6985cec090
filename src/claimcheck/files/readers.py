"""Input files read so that every failure names the file: bytes (decompressed when stored
compact at rest), UTF-8 text, JSON and CSV, and the JSON schemas shipped in the package.
The parsing of what they read is :mod:`claimcheck.files.io`'s; these are the only readers
the packages' file readers (the ``*files`` modules) use."""

from __future__ import annotations

import functools
import gzip
import lzma
from importlib import resources
from pathlib import Path
from typing import Any

from claimcheck.files.benchcols import decode_cols
from claimcheck.files.errors import InputError
from claimcheck.files.io import Rows, csv_lines, decode_text, read_json_text

COMPRESSED = {".xz": lzma.decompress, ".gz": gzip.decompress, ".cols": decode_cols}
"""File name suffix -> decoder of a file stored compressed at rest (runs' bench results;
``.cols``: :mod:`claimcheck.files.benchcols`' columnar form)."""


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


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; a decode error names the file and line. NaN/Infinity are refused."""
    return read_json_text(read_text(path), str(path))


@functools.cache
def read_schema(name: str) -> dict[str, Any]:
    """The JSON schema shipped as ``claimcheck/schemas/NAME.schema.json`` (read once)."""
    ref = resources.files("claimcheck.schemas").joinpath(f"{name}.schema.json")
    with resources.as_file(ref) as p:
        return read_json(p)


def read_csv(path: str | Path) -> list[dict[str, str]]:
    """Rows of a CSV file with a header line, as dicts of strings."""
    return [row for _, row in read_csv_lines(path)[1]]


def read_csv_lines(path: str | Path, required: tuple[str, ...] = ()) -> tuple[list[str], Rows]:
    """(header, [(line number, row)]) of a CSV file (:func:`claimcheck.files.io.csv_lines`:
    an empty file, missing ``required`` columns and a row with more fields than the header
    are refused naming the file and line)."""
    return csv_lines(read_text(path), str(path), required)
