"""Derived tables as pandas DataFrames with dtypes (written as CSV with a dtypes file beside
it and read back with those dtypes by :mod:`claimcheck.files.framefiles`, so no reader re-parses
"True"/"true" or numbers by hand), and the one rule for a numeric and a boolean cell.

Column dtypes are worked out from the values: booleans -> ``boolean``, integers ->
``Int64``, any float among numbers -> ``float64``, text -> ``string``; None is a missing
value (an empty cell). Floats are written with 6 significant digits (``%.6g``), as the
tables always were; anything else (a list, a dict) is written as its text, ``object``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

FLOAT_FORMAT = "%.6g"
"""How a float cell is written (6 significant digits)."""
FLOAT_FORMAT_BY_SUFFIX = {"_unix_s": "%.3f"}
"""Columns whose values need more than 6 significant digits, by name suffix: a unix time in
s (about 1.8e9) is written to the ms, not rounded to 1.79597e+09 (thousands of s)."""
DTYPES = ("boolean", "Int64", "float64", "string", "object")
"""The dtypes a column may have (:func:`column_dtype`)."""


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


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a typed DataFrame as dicts of Python values, None for missing ones."""
    out = []
    for row in df.astype(object).itertuples(index=False, name=None):
        out.append({c: (None if v is pd.NA or (isinstance(v, float) and math.isnan(v))
                        else v.item() if isinstance(v, np.generic) else v)
                    for c, v in zip(df.columns, row, strict=True)})
    return out


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
                    "claimcheck.files.framefiles.read_rows)")
