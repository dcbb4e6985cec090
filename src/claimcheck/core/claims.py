"""Claims registry (``data/raw/claims.csv``): load, validate, derive per-stream speed.

Per-stream speed is always computed from value, streams and the metric's scope; the CSV
may not carry it. Validation errors name the file, line, field and reason.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claimcheck.core.errors import InputError
from claimcheck.core.metrics import METRICS
from claimcheck.core.paths import RAW

COLUMNS = ("id", "kind", "seed", "section", "url", "system", "engine_version", "card",
           "power_limit_w", "checkpoint", "quantization", "streams", "stream_relation",
           "prompt_tokens", "output_tokens", "context_tokens", "spec_method",
           "spec_draft_tokens", "metric", "value", "unit", "note")
REQUIRED = ("id", "kind", "seed", "section", "system", "card", "streams", "stream_relation",
            "metric", "value", "unit")
KINDS = {"claim", "reproduction", "control", "measured"}
SEEDS = {"000": "000_c17ed6d62e51e6bc.txt", "001": "001_661b21414414fac5.txt",
         "002": "002_894ef22a7c4f7ce5.txt"}
RELATIONS = {"lanes_of_one_prompt", "independent_requests", "closed_loop_clients",
             "single_user"}
UNITS = {"tok/s"}
FORBIDDEN = {"per_stream", "per_stream_tok_s", "per_stream_speed"}
INT_FIELDS = ("streams", "prompt_tokens", "output_tokens", "context_tokens",
              "spec_draft_tokens")


@dataclass(frozen=True)
class Claim:
    """One throughput figure. ``value`` in tok/s; derived speeds are properties."""

    row: dict[str, Any]
    line: int

    def __getitem__(self, key: str) -> Any:
        return self.row[key]

    @property
    def per_stream_tok_s(self) -> float:
        """Speed one stream sees: value / streams for sums, value for per-stream metrics."""
        m = METRICS[self.row["metric"]]
        v, n = self.row["value"], self.row["streams"]
        return v / n if m.scope == "aggregate" else v

    @property
    def aggregate_tok_s(self) -> float:
        """Sum over the streams: value for sums, value x streams for per-stream metrics."""
        m = METRICS[self.row["metric"]]
        v, n = self.row["value"], self.row["streams"]
        return v if m.scope == "aggregate" else v * n

    def tidy(self) -> dict[str, Any]:
        """The row plus derived columns, for tables."""
        m = METRICS[self.row["metric"]]
        return {**self.row, "line": self.line, "metric_scope": m.scope,
                "metric_phase": m.phase, "metric_label": m.label,
                "per_stream_tok_s": self.per_stream_tok_s,
                "aggregate_tok_s": self.aggregate_tok_s}


def _check_row(src: str, line: int, raw: dict[str, str | None], seen: set[str]) -> dict:
    row: dict[str, Any] = {}
    for key in COLUMNS:
        val = raw.get(key)
        row[key] = val.strip() if isinstance(val, str) else val
    if None in raw:
        raise InputError(src, f"{len(raw[None]) if raw[None] else 0} more fields than the "
                         f"{len(COLUMNS)} columns (an unquoted comma?)", line=line)
    for key in REQUIRED:
        if not row.get(key):
            raise InputError(src, "required field is empty", line=line, key=key)
    if row["id"] in seen:
        raise InputError(src, f"duplicate id {row['id']!r}", line=line, key="id")
    checks = [("kind", KINDS), ("seed", set(SEEDS)), ("stream_relation", RELATIONS),
              ("metric", set(METRICS)), ("unit", UNITS)]
    for key, allowed in checks:
        if row[key] not in allowed:
            raise InputError(src, f"{row[key]!r} is not one of {sorted(allowed)}",
                             line=line, key=key)
    try:
        row["value"] = float(row["value"])
    except ValueError:
        raise InputError(src, f"not a number: {row['value']!r}", line=line,
                         key="value") from None
    if not row["value"] > 0:
        raise InputError(src, "must be > 0", line=line, key="value")
    for key in INT_FIELDS:
        if row[key] in ("", None):
            row[key] = None
            continue
        try:
            row[key] = int(row[key])
        except ValueError:
            raise InputError(src, f"not a whole number: {row[key]!r}", line=line,
                             key=key) from None
        if row[key] < 1:
            raise InputError(src, "must be >= 1", line=line, key=key)
    if row["streams"] is None:
        raise InputError(src, "required field is empty", line=line, key="streams")
    if row["stream_relation"] == "single_user" and row["streams"] != 1:
        raise InputError(src, f"single_user with streams={row['streams']}", line=line,
                         key="streams")
    if row["power_limit_w"]:
        try:
            row["power_limit_w"] = float(row["power_limit_w"])
        except ValueError:
            raise InputError(src, f"not a number: {row['power_limit_w']!r}", line=line,
                             key="power_limit_w") from None
    else:
        row["power_limit_w"] = None
    return row


def load_claims(path: str | Path | None = None, cards: set[str] | None = None) -> list[Claim]:
    """Read and validate every row; the first bad row raises :class:`InputError`."""
    p = Path(path) if path else RAW / "claims.csv"
    src = str(p)
    with p.open(newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        bad = FORBIDDEN & set(header)
        if bad:
            raise InputError(src, "per-stream speed is derived, never typed: remove column",
                             line=1, key=sorted(bad)[0])
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise InputError(src, f"missing columns {missing}", line=1)
        out: list[Claim] = []
        seen: set[str] = set()
        for raw in reader:
            line = reader.line_num
            row = _check_row(src, line, raw, seen)
            if cards is not None and row["card"] not in cards:
                raise InputError(src, f"unknown card {row['card']!r}; known: {sorted(cards)}",
                                 line=line, key="card")
            seen.add(row["id"])
            out.append(Claim(row=row, line=line))
    if not out:
        raise InputError(src, "no claims")
    return out


def claims_by_id(claims: list[Claim]) -> dict[str, Claim]:
    return {c["id"]: c for c in claims}
