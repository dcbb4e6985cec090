"""Derived tables as pandas DataFrames with dtypes: written as CSV with a dtypes file beside
it (``<name>.dtypes.json``) and read back with those dtypes, so no reader re-parses
"True"/"true" or numbers by hand.

Column dtypes are worked out from the values: booleans -> ``boolean``, integers ->
``Int64``, any float among numbers -> ``float64``, text -> ``string``; None is a missing
value (an empty cell). Floats are written with 6 significant digits (``%.6g``), as the
tables always were; anything else (a list, a dict) is written as its text, ``object``.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from claimcheck.core.errors import InputError
from claimcheck.core.io import read_json, read_text

FLOAT_FORMAT = "%.6g"
DTYPES = ("boolean", "Int64", "float64", "string", "object")


def column_dtype(values: Iterable[Any]) -> str:
    """The dtype of a column from its values (None ignored; all None: ``string``)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return "string"
    if all(isinstance(v, bool | np.bool_) for v in vals):
        return "boolean"
    if all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in vals):
        return "Int64"
    if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in vals):
        return "float64"
    if all(isinstance(v, str) for v in vals):
        return "string"
    return "object"


def to_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Dict rows as a typed DataFrame: columns the union of the rows' keys, in first-seen
    order, each with :func:`column_dtype`."""
    rows = list(rows)
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    data = {}
    for c in cols:
        vals = [r.get(c) for r in rows]
        dt = column_dtype(vals)
        if dt == "float64":
            data[c] = np.array([math.nan if v is None else float(v) for v in vals],
                               dtype="float64")
        elif dt == "object":
            data[c] = pd.array([None if v is None else str(v) for v in vals], dtype="string")
        else:
            data[c] = pd.array(vals, dtype=dt)
    return pd.DataFrame(data, columns=list(cols))


def dtypes_path(csv_path: str | Path) -> Path:
    p = Path(csv_path)
    return p.with_name(p.stem + ".dtypes.json")


def write_table(rows: Iterable[Mapping[str, Any]] | pd.DataFrame, path: str | Path) -> int:
    """Write a table as CSV (``%.6g`` floats, empty cells for missing values) and its dtypes
    beside it. Returns the row count."""
    df = rows if isinstance(rows, pd.DataFrame) else to_frame(rows)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if len(df.columns):
        df.to_csv(p, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
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
                df[c] = df[c].map({"True": True, "False": False, True: True, False: False},
                                  na_action="ignore").astype("boolean")
    except (ValueError, TypeError) as e:
        raise InputError(str(p), f"a cell does not fit its column's dtype ({e})") from None
    return df


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a typed DataFrame as dicts of Python values, None for missing ones."""
    out = []
    for row in df.astype(object).itertuples(index=False, name=None):
        out.append({c: (None if v is pd.NA or (isinstance(v, float) and math.isnan(v))
                        else v.item() if isinstance(v, np.generic) else v)
                    for c, v in zip(df.columns, row, strict=True)})
    return out


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """:func:`read_table` as dict rows of Python values (:func:`records`): how a derived
    table (model.csv) is read back, typed, by every report, figure and paragraph."""
    return records(read_table(path))


def number(value: Any) -> float | None:
    """The one rule for a numeric cell of a row (typed, or a CSV/JSON cell): None when
    missing (None, "" or NaN), else the float."""
    if value is None or value == "":
        return None
    v = float(value)
    return None if math.isnan(v) else v


def flag(value: Any) -> bool:
    """The one rule for a boolean cell of a typed row (:func:`read_rows`, or a table's JSON
    twin): True or False as it is, missing (None) is False; anything else (a "True" read by
    hand as text) is refused."""
    if value is None:
        return False
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise TypeError(f"not a boolean cell: {value!r} (read the table with "
                    "claimcheck.core.frames.read_rows)")
