"""A run's telemetry.csv (NVML samples at 1 Hz) parsed from its text, and a window of it
summarized. The sampler that writes the file is :mod:`claimcheck.measure.telemetry`; the
reader of a run's file, :func:`claimcheck.runs.runload.read_telemetry`.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections import defaultdict
from typing import Any

from claimcheck.files.errors import InputError


def parse_telemetry(text: str, source: str) -> list[dict[str, Any]]:
    """Rows of a telemetry.csv's text read from ``source``. Numbers must be finite; a bad
    cell is refused naming the source, line and column."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [k for k in ("t_unix_s", "gpu") if k not in (reader.fieldnames or [])]
    if missing:
        raise InputError(source, f"missing columns {missing} in the header", line=1)
    rows = []
    for r in reader:
        line = reader.line_num
        if None in r:
            raise InputError(source, "more fields than the header", line=line)
        if None in r.values():
            raise InputError(source, "fewer fields than the header (a row cut off?)",
                             line=line)
        row: dict[str, Any] = {}
        for k, v in r.items():
            if k == "throttle_reasons" or v in ("", None):
                row[k] = v
                continue
            try:
                x = float(v)
            except ValueError:
                raise InputError(source, f"not a number: {v[:40]!r}", line=line,
                                 key=k) from None
            if not math.isfinite(x):
                raise InputError(source, f"not a finite number: {v!r}", line=line, key=k)
            row[k] = x
        if row.get("t_unix_s") in ("", None):
            raise InputError(source, "empty", line=line, key="t_unix_s")
        rows.append(row)
    return rows


def summarize(rows: list[dict[str, Any]], t0: float | None = None,
              t1: float | None = None) -> dict[str, Any]:
    """Mean and max power (W), mean SM clock (MHz), max temperature (C) within [t0, t1]."""
    sel = [r for r in rows if (t0 is None or r["t_unix_s"] >= t0)
           and (t1 is None or r["t_unix_s"] <= t1)]
    if not sel:
        return {"samples": 0}

    def col(k):
        return [r[k] for r in sel if isinstance(r.get(k), float)]

    power = col("power_w")
    return {
        "samples": len(sel),
        "mean_power_w": statistics.fmean(power) if power else None,
        "max_power_w": max(power) if power else None,
        "power_limit_w": max(col("power_limit_w")) if col("power_limit_w") else None,
        "mean_sm_clock_mhz": statistics.fmean(col("sm_clock_mhz")) if col("sm_clock_mhz")
        else None,
        "max_temp_c": max(col("temp_c")) if col("temp_c") else None,
        "max_mem_used_mib": max(col("mem_used_mib")) if col("mem_used_mib") else None,
    }


def busy_sm_clock(rows: list[dict[str, Any]], t0: float, t1: float
                  ) -> tuple[float | None, int]:
    """The median SM clock (MHz) of the samples within [t0, t1] that draw at least half
    their power limit (the GPU at work, not waiting for a client), and how many; (None, 0)
    without such samples."""
    clocks = [r["sm_clock_mhz"] for r in rows
              if all(isinstance(r.get(k), float)
                     for k in ("power_w", "power_limit_w", "sm_clock_mhz"))
              and t0 <= r["t_unix_s"] <= t1 and r["power_w"] >= 0.5 * r["power_limit_w"]]
    return (statistics.median(clocks), len(clocks)) if clocks else (None, 0)


def power_samples(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(time s, board power W summed over the GPUs) from telemetry rows, by time."""
    by_t: dict[float, float] = defaultdict(float)
    for r in rows:
        if isinstance(r.get("power_w"), float) and isinstance(r.get("t_unix_s"), float):
            by_t[r["t_unix_s"]] += r["power_w"]
    return sorted(by_t.items())
