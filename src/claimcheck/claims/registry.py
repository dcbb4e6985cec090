"""The claims registry (``data/raw/claims.csv``, ``data/raw/claims_excluded.csv``) parsed
from its text (the files are read by :mod:`claimcheck.claims.registryfiles`) and its row
checks: each row's fields, its ``assumed`` entries and bound, then the rows of one run
against each other. The first bad row raises :class:`InputError` naming the file, line and
field, before any work starts. The row type and the columns are
:mod:`claimcheck.claims.claims`; the quotes are checked against the seeds by
:func:`claimcheck.claims.seeds.check_quotes`.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from claimcheck.claims.claims import (
    ASSUMABLE,
    COLUMNS,
    EXCLUDED_COLUMNS,
    FLOAT_FIELDS,
    FORBIDDEN,
    INT8_LAYERS,
    INT_FIELDS,
    KINDS,
    OPTIONAL,
    RELATIONS,
    REQUIRED,
    RUN_FIELDS,
    SEEDS,
    UNITS,
    Claim,
)
from claimcheck.claims.claimtext import BOUND_BEFORE, BOUNDS, bound_backed
from claimcheck.claims.metrics import METRICS
from claimcheck.files.errors import InputError
from claimcheck.physics.formats import KV_FORMATS


def _convert(src: str, line: int, key: str, val: str) -> Any:
    if key in INT_FIELDS:
        try:
            out: Any = int(val)
        except ValueError:
            raise InputError(src, f"not a whole number: {val!r}", line=line, key=key) from None
        if out < 1:
            raise InputError(src, "must be >= 1", line=line, key=key)
        return out
    if key in FLOAT_FIELDS:
        try:
            out = float(val)
        except ValueError:
            raise InputError(src, f"not a number: {val!r}", line=line, key=key) from None
        if not (math.isfinite(out) and out > 0):
            raise InputError(src, f"must be a finite number > 0, got {val!r}", line=line,
                             key=key)
        return out
    return val


def parse_assumed(src: str, line: int, text: str) -> dict[str, tuple[str, str]]:
    """``col=value; reason | col=value; reason`` -> {col: (value text, reason)}."""
    out: dict[str, tuple[str, str]] = {}
    for part in (p.strip() for p in text.split(" | ") if p.strip()):
        head, sep, reason = part.partition(";")
        col, eq, val = head.partition("=")
        col, val, reason = col.strip(), val.strip(), reason.strip()
        if not eq or not sep or not val or not reason:
            raise InputError(src, f"entry {part!r} is not 'column=value; reason'", line=line,
                             key="assumed")
        if col not in ASSUMABLE:
            raise InputError(src, f"{col!r} cannot be assumed; assumable: {list(ASSUMABLE)}",
                             line=line, key="assumed")
        if col in out:
            raise InputError(src, f"{col} assumed twice", line=line, key="assumed")
        out[col] = (val, reason)
    return out


def _check_bound(src: str, line: int, bound: str, quote: str, value: float,
                 value_text: str) -> None:
    if bound not in BOUNDS:
        raise InputError(src, f"{bound!r} is not one of '', 'at_least', 'at_most'", line=line,
                         key="bound")
    if bound and not bound_backed(bound, quote, value):
        words = ", ".join(f"'{w}'" for w in BOUND_BEFORE[bound][:4])
        raise InputError(src, f"{bound} is not backed by the quote: no {words} or the like "
                         f"next to {value_text}; leave bound empty for an exact figure",
                         line=line, key="bound")


def _check_row(src: str, line: int, raw: dict[str | None, Any]) -> Claim:
    if None in raw:
        extra = raw[None]
        raise InputError(src, f"{len(extra) if extra else 0} more fields than the "
                         f"{len(COLUMNS)} columns (an unquoted comma?)", line=line)
    stated: dict[str, Any] = {}
    for key in COLUMNS:
        val = raw.get(key)
        stated[key] = val.strip() if isinstance(val, str) else ""
    assumed_text = parse_assumed(src, line, stated["assumed"])
    assumed: dict[str, tuple[Any, str]] = {}
    for col, (val, reason) in assumed_text.items():
        if stated[col]:
            raise InputError(src, f"both stated ({stated[col]!r}) and assumed ({val!r}); "
                             "a column is one or the other", line=line, key=col)
        assumed[col] = (_convert(src, line, col, val), reason)
    for key in REQUIRED:
        if not stated[key] and key not in assumed:
            raise InputError(src, "required field is empty", line=line, key=key)
    checks = [("kind", KINDS), ("seed", set(SEEDS)), ("stream_relation", RELATIONS),
              ("int8_layers", set(INT8_LAYERS)), ("kv_dtype", {"", *KV_FORMATS}),
              ("metric", set(METRICS)), ("unit", UNITS)]
    for key, allowed in checks:
        val = stated[key] or assumed.get(key, ("",))[0]
        if val not in allowed:
            raise InputError(src, f"{val!r} is not one of {sorted(allowed)}",
                             line=line, key=key)
    value_text = stated["value"]
    try:
        value = float(value_text)
    except ValueError:
        raise InputError(src, f"not a number: {value_text!r}", line=line, key="value") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(src, f"must be a finite number > 0 tok/s, got {value_text!r}",
                         line=line, key="value")
    _check_bound(src, line, stated["bound"], stated["quote"], value, value_text)
    for key in INT_FIELDS + FLOAT_FIELDS:
        stated[key] = _convert(src, line, key, stated[key]) if stated[key] else None
    stated["value"] = value
    row = dict(stated)
    for key in COLUMNS:
        if key != "assumed" and row[key] in ("", None) and key not in assumed:
            row[key] = None if key in INT_FIELDS + FLOAT_FIELDS else ""
    for col, (val, _) in assumed.items():
        row[col] = val
    n, running = row["streams"], row["streams_running"]
    if (row["stream_relation"] == "single_user") != (n == 1):
        raise InputError(src, f"{row['stream_relation']} with streams={n}: "
                         "single_user is used exactly when streams is 1", line=line,
                         key="stream_relation")
    kept, k, rows = row["tokens_kept_per_step"], row["spec_draft_tokens"], row["verify_rows"]
    most = rows or (k + 1 if k else None)  # a kept token is a verified one
    if kept is not None and most is not None and kept > most:
        raise InputError(src, f"{kept:g} tokens kept per step is more than the {most:g} rows "
                         "each stream verifies (verify_rows, else spec_draft_tokens + 1)",
                         line=line, key="tokens_kept_per_step")
    if running is not None and not running < n:
        raise InputError(src, f"streams_running {running:g} must be below streams {n} "
                         "(leave it empty when all requested streams ran)", line=line,
                         key="streams_running")
    return Claim(row=row, line=line, stated={k: v for k, v in stated.items() if k in COLUMNS},
                 assumed=assumed, value_text=value_text)


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def _check_runs(src: str, claims: list[Claim]) -> None:
    """Run-level fields agree within a run; one row per (run, metric); no figure twice;
    no per-stream figure typed by hand."""
    runs: dict[str, list[Claim]] = {}
    for c in claims:
        runs.setdefault(c["run"], []).append(c)
    figures: dict[tuple, Claim] = {}
    for c in claims:
        first = runs[c["run"]][0]
        for key in RUN_FIELDS:
            if c[key] != first[key]:
                raise InputError(src, f"run {c['run']!r} has {key}={first[key]!r} on line "
                                 f"{first.line}; one run, one setup", line=c.line, key=key)
        same = [o for o in runs[c["run"]] if o["metric"] == c["metric"] and o is not c]
        if same:
            raise InputError(src, f"run {c['run']!r} already has metric {c['metric']} on "
                             f"line {same[0].line}", line=c.line, key="metric")
        fig = (c["seed"], c["card"], c["streams"], c["metric"], c["value"])
        if fig in figures and figures[fig]["run"] != c["run"]:
            o = figures[fig]
            raise InputError(src, f"the same figure as line {o.line} (run {o['run']!r}); "
                             "one run appears once, its metrics linked by run", line=c.line,
                             key="run")
        figures.setdefault(fig, c)
        if METRICS[c["metric"]].scope != "per_stream":
            continue
        for o in runs[c["run"]]:
            if METRICS[o["metric"]].scope == "aggregate" and \
                    round(o.per_stream_tok_s, _decimals(c.value_text)) == c["value"]:
                raise InputError(src, f"{c.value_text} is line {o.line}'s {o.value_text} / "
                                 f"{o.streams_sharing:g} streams: per-stream speed is "
                                 "derived, never typed", line=c.line, key="value")


def parse_claims(text: str, source: str, cards: set[str] | None = None) -> list[Claim]:
    """Validate every row of claims.csv's text (read from ``source``); the first bad row
    raises :class:`InputError`."""
    src = source
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    bad = FORBIDDEN & set(header)
    if bad:
        raise InputError(src, "per-stream speed is derived, never typed: remove column",
                         line=1, key=sorted(bad)[0])
    missing = [c for c in COLUMNS if c not in header and c not in OPTIONAL]
    if missing:
        raise InputError(src, f"missing columns {missing}", line=1)
    out: list[Claim] = []
    seen: dict[str, int] = {}
    for raw in reader:
        line = reader.line_num
        c = _check_row(src, line, raw)
        if c["id"] in seen:
            raise InputError(src, f"duplicate id {c['id']!r} (line {seen[c['id']]})",
                             line=line, key="id")
        if cards is not None and c["card"] not in cards:
            raise InputError(src, f"unknown card {c['card']!r}; known: {sorted(cards)}",
                             line=line, key="card")
        seen[c["id"]] = line
        out.append(c)
    if not out:
        raise InputError(src, "no claims")
    _check_runs(src, out)
    return out


def claims_by_id(claims: list[Claim]) -> dict[str, Claim]:
    return {c["id"]: c for c in claims}


def check_excluded(rows: list[dict[str, str]], source: str) -> list[dict[str, str]]:
    """Figures deliberately left out of the registry, each with a reason: the rows of
    claims_excluded.csv (read from ``source``), its columns checked."""
    missing = [c for c in EXCLUDED_COLUMNS if rows and c not in rows[0]]
    if missing:
        raise InputError(source, f"missing columns {missing}", line=1)
    return rows
