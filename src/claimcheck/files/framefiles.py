"""Derived tables written and read back: CSV (``%.6g`` floats, empty cells for missing
values) with a dtypes file beside it (``<name>.dtypes.json``); the dtypes and the cell rules
are :mod:`claimcheck.files.frames`'."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from claimcheck.files.errors import InputError
from claimcheck.files.frames import DTYPES, FLOAT_FORMAT, FLOAT_FORMAT_BY_SUFFIX, records, to_frame
from claimcheck.files.readers import read_json, read_text


def dtypes_path(csv_path: str | Path) -> Path:
    """The dtypes file beside a table: ``<name>.dtypes.json``."""
    p = Path(csv_path)
    return p.with_name(p.stem + ".dtypes.json")


def write_table(rows: Iterable[Mapping[str, Any]] | pd.DataFrame, path: str | Path) -> int:
    """Write a table as CSV (``%.6g`` floats, but a column named in
    :data:`~claimcheck.files.frames.FLOAT_FORMAT_BY_SUFFIX` by its own format; empty cells for
    missing values) and its dtypes beside it. Returns the row count."""
    df = rows if isinstance(rows, pd.DataFrame) else to_frame(rows)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if len(df.columns):
        out = df.copy()
        for c in out.columns:
            fmt = next((f for sfx, f in FLOAT_FORMAT_BY_SUFFIX.items() if str(c).endswith(sfx)),
                       None)
            if fmt and pd.api.types.is_float_dtype(out[c]):
                out[c] = [None if pd.isna(v) else fmt % v for v in out[c]]
        out.to_csv(p, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
    else:
        p.write_text("\n")
    dtypes_path(p).write_text(json.dumps({c: str(t) for c, t in df.dtypes.items()},
                                         indent=1) + "\n")
    return len(df)


def read_table(path: str | Path) -> pd.DataFrame:
    """A table written by :func:`write_table`, with its dtypes (the dtypes file must be
    beside it; a column it does not name, or a cell of the wrong type, is refused naming
    the file)."""
    p = Path(path)
    dt_path = dtypes_path(p)
    types = read_json(dt_path)
    if not isinstance(types, dict) or any(t not in DTYPES for t in types.values()):
        raise InputError(str(dt_path), f"not a dtypes file (each column one of {DTYPES})")
    text = read_text(p)
    header = text.split("\n", 1)[0].split(",") if text.strip() else []
    unknown = [c for c in header if c not in types]
    if unknown:
        raise InputError(str(p), f"columns {unknown} have no dtype in {dt_path.name}", line=1)
    read_as = {c: ("string" if t == "object" else t) for c, t in types.items()
               if t != "boolean"}
    try:
        df = pd.read_csv(p, dtype=read_as, keep_default_na=False, na_values=[""])
        for c, t in types.items():
            if t == "boolean" and c in df:
                if not df[c].dropna().isin(["True", "False", True, False]).all():
                    raise ValueError(f"{c}: not True or False")
                df[c] = df[c].map({"True": True, "False": False, True: True, False: False},
                                  na_action="ignore").astype("boolean")
    except (ValueError, TypeError) as e:
        raise _misfit(p, types) or InputError(
            str(p), f"a cell does not fit its column's dtype ({e})") from None
    return df


def _fits(cell: str, dtype: str) -> bool:
    """Whether one CSV cell (text; "" is a missing value) reads as ``dtype``."""
    if cell == "" or dtype in ("string", "object"):
        return True
    if dtype == "boolean":
        return cell in ("True", "False")
    try:
        v = float(cell)
    except ValueError:
        return False
    return dtype == "float64" or v.is_integer()


def _misfit(p: Path, types: Mapping[str, str]) -> InputError | None:
    """The first cell of the table at ``p`` that does not read as its column's dtype, as an
    InputError naming its line (the header is line 1), column and value; None where every
    cell fits (the failure was elsewhere)."""
    import csv
    import io

    rows = csv.reader(io.StringIO(read_text(p)))  # a quoted cell may hold a line break
    header = next(rows, [])
    for row in rows:
        for col, cell in zip(header, row, strict=False):
            if not _fits(cell, types.get(col, "string")):
                return InputError(str(p), f"{cell!r} is not a value of this column's dtype "
                                  f"({types[col]})", line=rows.line_num, key=col)
    return None


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """:func:`read_table` as dict rows of Python values
    (:func:`claimcheck.files.frames.records`): how a derived table (model.csv) is read back,
    typed, by every report, figure and paragraph."""
    return records(read_table(path))
