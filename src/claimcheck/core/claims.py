"""Claims registry (``data/raw/claims.csv``): load, validate, derive per-stream speed.

One row is one throughput figure as a seed article prints it. Columns hold only what the
seed states for that figure; anything the project supplies goes in ``assumed`` as
``column=value; reason`` entries separated by `` | ``. ``claim[col]`` is the value the
arithmetic uses (stated, else assumed); :attr:`Claim.stated` holds the seed's values only
and :attr:`Claim.assumed` maps a column to ``(value, reason)``.

Column meanings (one each):

- ``run``: one measurement (or one publication of one); its several metrics are rows with
  the same ``run``, and run-level fields agree across them.
- ``mode``: the system's serving mode as the seed names it ("batch mode", "single-user
  mode"), when it names one; with ``system`` and ``checkpoint`` it makes the source a
  figure is calibrated within (:func:`claimcheck.core.sourcemodel.source_key`).
- ``engine_version``: what produced the number, when the seed states it; ``code_read``:
  the commit the article read (not necessarily the build that produced the number).
- ``streams``: concurrency requested (clients, lanes, slots); ``streams_running``: how many
  ran at once when a server cap or a measured average batch says fewer did. Per-stream
  speed divides by ``streams_running`` when present.
- ``output_tokens``: per request; ``total_output_tokens``: the sum a publication prints.
- ``stream_relation``: ``single_user`` exactly when ``streams`` is 1 (one stream relates to
  nothing, whether it came from one chat, one closed-loop client or one request at a time).
- ``bound``: empty for an exact figure; ``at_least`` when the seed says the true figure is
  at least the value ("over 1,000"), ``at_most`` when at most ("bursts of up to 900"). The
  quote must say so next to the value (:data:`BOUND_BEFORE`, :data:`BOUND_AFTER`).
- ``quote``: the seed's exact words holding the figure (whitespace-normalised); checked
  against the seed's ``section`` by :func:`check_against_seeds`.
- ``int8_layers``: which linear layers multiply in int8 (int8 activations), when the seed
  says: ``mlp`` (the MLP GEMMs only) or ``all`` (every layer); empty for 16-bit
  activations or not stated. When stated, the run's text must say "int8" and, for
  ``mlp``, "MLP", for ``all``, "every layer" (:func:`check_against_seeds`).
- ``kv_dtype``: the KV cache's dtype (``fp8``, ``int8``, ``bf16`` ...) when the seed states
  it for the run ("fp8 KV"); the roofline reads it before the weights.csv row's. When
  stated, the run's text must write it followed by "KV" (:func:`check_against_seeds`).
- ``quantization``: when stated, every part of it (split at ``-`` and ``+``) is written in
  the seed where it describes the run (:func:`check_against_seeds`).

``data/raw/claims_excluded.csv`` (seed, section, value, quote, reason) lists the throughput
figures the seeds print that are deliberately not rows (the article's own divisions and
model ceilings, restatements of a figure registered from another seed, per-dollar ratios);
rows plus exclusions cover every tok/s figure in the seeds (``tests/test_seed_walk.py``).
The seeds are read from ``CLAIMCHECK_SEEDS`` or ``shared/seeds`` beside the repository.

Per-stream speed is always computed, never typed. Errors name the file, line and field.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimcheck.core.errors import InputError
from claimcheck.core.formats import KV_FORMATS
from claimcheck.core.io import read_csv, read_text
from claimcheck.core.metrics import METRICS
from claimcheck.core.paths import RAW, ROOT

COLUMNS = ("id", "run", "kind", "seed", "section", "url", "system", "mode", "engine_version",
           "code_read", "card", "power_limit_w", "checkpoint", "quantization", "int8_layers",
           "kv_dtype", "streams",
           "streams_running", "stream_relation", "prompt_tokens", "output_tokens",
           "total_output_tokens", "context_tokens", "spec_method", "spec_draft_tokens",
           "metric", "value", "unit", "bound", "quote", "assumed", "note")
# columns a registry written before they existed may lack (read as empty)
OPTIONAL = ("bound", "int8_layers", "mode", "kv_dtype")
REQUIRED = ("id", "run", "kind", "seed", "section", "system", "card", "streams",
            "stream_relation", "metric", "value", "unit", "quote")
# columns the project may supply (with a reason) when the seed does not state them; metric
# too, for a figure whose window the seed gives only in part (a log line not said to be free
# of prompt tokens)
ASSUMABLE = ("system", "mode", "engine_version", "code_read", "card", "power_limit_w", "checkpoint",
             "quantization", "int8_layers", "kv_dtype", "streams", "streams_running",
             "stream_relation",
             "prompt_tokens",
             "output_tokens", "total_output_tokens", "context_tokens", "spec_method",
             "spec_draft_tokens", "metric")
# fields one run shares across its metric rows
RUN_FIELDS = ("kind", "seed", "system", "mode", "engine_version", "code_read", "card",
              "power_limit_w", "checkpoint", "quantization", "int8_layers", "kv_dtype",
              "streams",
              "stream_relation",
              "prompt_tokens", "output_tokens", "total_output_tokens", "context_tokens",
              "spec_method", "spec_draft_tokens")
KINDS = {"claim", "reproduction", "control", "measured"}
SEEDS = {"000": "000_c17ed6d62e51e6bc.txt", "001": "001_661b21414414fac5.txt",
         "002": "002_894ef22a7c4f7ce5.txt"}
INT8_LAYERS = {"": (), "mlp": ("int8", "mlp"), "all": ("int8", "every layer")}
"""``int8_layers`` values and the words the run's text must hold for each (any case)."""
RELATIONS = {"lanes_of_one_prompt", "independent_requests", "closed_loop_clients",
             "single_user"}
UNITS = {"tok/s"}
FORBIDDEN = {"per_stream", "per_stream_tok_s", "per_stream_speed"}
INT_FIELDS = ("streams", "prompt_tokens", "output_tokens", "total_output_tokens",
              "context_tokens", "spec_draft_tokens")
FLOAT_FIELDS = ("power_limit_w", "streams_running")
# stated fields whose value must appear in the cited part of the seed
EVIDENCE_NUM = ("power_limit_w", "streams", "streams_running", "prompt_tokens",
                "output_tokens", "total_output_tokens", "context_tokens", "spec_draft_tokens")
EVIDENCE_STR = ("mode", "engine_version", "code_read", "checkpoint")
EXCLUDED_COLUMNS = ("seed", "section", "value", "quote", "reason")
# a bound ("over 1,000", "up to 900") must be written next to the value in the quote:
# words before the number, or words after it ("17 tok/s or less")
BOUND_BEFORE = {"at_least": ("over", "more than", "at least", "above", "past", "upwards of",
                             "in excess of", "no less than"),
                "at_most": ("up to", "at most", "no more than", "under", "below", "less than",
                            "bounded near")}
BOUND_AFTER = {"at_least": ("or more", "plus"), "at_most": ("or less", "at most")}
BOUNDS = ("", *BOUND_BEFORE)


@dataclass(frozen=True)
class Claim:
    """One throughput figure. ``value`` in tok/s; derived speeds are properties.

    ``row`` holds the values the arithmetic uses (stated, else assumed); ``stated`` only
    what the seed states; ``assumed`` maps column -> (value, reason).
    """

    row: dict[str, Any]
    line: int
    stated: dict[str, Any] = field(default_factory=dict)
    assumed: dict[str, tuple[Any, str]] = field(default_factory=dict)
    value_text: str = ""

    def __getitem__(self, key: str) -> Any:
        return self.row[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``row[key]``, or ``default`` for a column the row does not have."""
        return self.row.get(key, default)

    def is_assumed(self, key: str) -> bool:
        """True when ``key``'s value is the project's, not the seed's."""
        return key in self.assumed

    @property
    def streams_sharing(self) -> float:
        """Streams that shared the aggregate: ``streams_running`` if given, else streams."""
        return self.row["streams_running"] or self.row["streams"]

    @property
    def per_stream_tok_s(self) -> float:
        """Speed one running stream sees, tok/s: value / streams_sharing for sums, value
        for per-stream metrics."""
        m = METRICS[self.row["metric"]]
        v = self.row["value"]
        return v / self.streams_sharing if m.scope == "aggregate" else v

    @property
    def aggregate_tok_s(self) -> float:
        """Sum over the running streams, tok/s: value for sums, value x streams_sharing for
        per-stream metrics."""
        m = METRICS[self.row["metric"]]
        v = self.row["value"]
        return v if m.scope == "aggregate" else v * self.streams_sharing

    def tidy(self) -> dict[str, Any]:
        """The row plus derived columns, for tables. ``assumed_fields`` names the columns
        whose values are the project's; ``assumed`` keeps ``column=value; reason``."""
        m = METRICS[self.row["metric"]]
        return {**self.row, "line": self.line, "metric_scope": m.scope,
                "metric_phase": m.phase, "metric_label": m.label,
                "assumed_fields": ",".join(sorted(self.assumed)),
                "per_stream_tok_s": self.per_stream_tok_s,
                "aggregate_tok_s": self.aggregate_tok_s}


def normalise(text: str) -> str:
    """Whitespace runs to one space, ends stripped."""
    return " ".join(text.split())


_NUM = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?([kK](?![a-zA-Z]))?")
_WORDS = {"one": 1, "single": 1, "alone": 1, "two": 2, "three": 3, "four": 4, "five": 5,
          "six": 6, "seven": 7, "eight": 8, "eleven": 11, "fifteen": 15, "sixteen": 16,
          "thirty-two": 32, "sixty-four": 64}


def numbers_in(text: str, words: bool = False) -> list[float]:
    """Every number in ``text`` in the seeds' formatting ("1,035", "~1,035", "1.6k",
    "1600tps"); with ``words``, also the small number words ("eight", "sixty-four")."""
    out = []
    for m in _NUM.finditer(text):
        v = float(m.group(1).replace(",", "") + (m.group(2) or ""))
        out.append(v * 1000 if m.group(3) else v)
    if words:
        out += [v for w, v in _WORDS.items() if re.search(rf"\b{w}\b", text, re.I)]
    return out


def number_occurs(value: float, text: str, words: bool = False) -> bool:
    """True when ``value`` is one of the numbers written in ``text``."""
    return any(math.isclose(value, n, rel_tol=1e-9) for n in numbers_in(text, words))


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


def bound_words(bound: str, quote: str, value: float) -> tuple[str, str]:
    """The words the seed writes for a bound next to ``value``: (before, after), e.g.
    ("up to", "") for "bursts of up to 900", ("", "or less") for "17 tok/s or less"; ("",
    "") for an exact figure or when none is found."""
    if not bound:
        return "", ""
    q = normalise(quote).lower()
    before = "|".join(re.escape(w) for w in BOUND_BEFORE[bound])
    after = "|".join(re.escape(w) for w in BOUND_AFTER[bound])
    for m in _NUM.finditer(q):
        v = float(m.group(1).replace(",", "") + (m.group(2) or ""))
        if not math.isclose(v * (1000 if m.group(3) else 1), value, rel_tol=1e-9):
            continue
        b = re.search(rf"\b({before})\s*~?\s*$", q[:m.start()])
        if b:
            return b.group(1), ""
        a = re.match(rf"\s*(?:[a-z/]+\s+)?({after})\b", q[m.end():])
        if a:
            return "", a.group(1)
    return "", ""


def bound_backed(bound: str, quote: str, value: float) -> bool:
    """True when ``quote`` writes a word of ``bound`` next to ``value``: "over 1,000" for
    ``at_least``, "up to 900" or "17 tok/s or less" for ``at_most`` (:func:`bound_words`
    finds them)."""
    return any(bound_words(bound, quote, value))


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


def load_claims(path: str | Path | None = None, cards: set[str] | None = None) -> list[Claim]:
    """Read and validate every row; the first bad row raises :class:`InputError`."""
    p = Path(path) if path else RAW / "claims.csv"
    src = str(p)
    reader = csv.DictReader(io.StringIO(read_text(p), newline=""))
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


# ------------------------------------------------------------------ against the seeds


def seeds_dir() -> Path | None:
    """Where the seed articles are: ``CLAIMCHECK_SEEDS``, else ``shared/seeds`` beside the
    repository root; None when that folder is absent."""
    env = os.environ.get("CLAIMCHECK_SEEDS")
    p = Path(env) if env else ROOT.parent / "shared" / "seeds"
    return p if p.is_dir() else None


@dataclass(frozen=True)
class Section:
    name: str
    level: int
    text: str  # normalised, subsections included
    top: str  # normalised text of the top-level section holding it


_HEAD = re.compile(r"^(#{1,6})\s+(.*)$")


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, title): markdown headings; in a seed with none, a short line
    between blank lines that does not end in punctuation (a plain-text heading)."""
    md = [(i, len(m.group(1)), m.group(2).strip()) for i, m in
          ((i, _HEAD.match(ln)) for i, ln in enumerate(lines)) if m]
    if md:
        return [h for h in md if h[1] > 1]  # level 1 is the title: part of the intro
    out = []
    for i, ln in enumerate(lines[1:], start=1):
        s = ln.strip()
        prev, nxt = lines[i - 1].strip(), lines[i + 1].strip() if i + 1 < len(lines) else ""
        if s and len(s) < 70 and not prev and not nxt and s[-1] not in ".:;,!?)":
            out.append((i, 2, s))
    return out


def parse_seed(text: str) -> tuple[dict[str, Section], str]:
    """Sections by title (plus ``intro``, before the first heading) and the colophon (text
    after the last ``---`` rule: the article's methods note, which applies throughout)."""
    lines = text.split("\n")
    heads = _headings(lines)
    rule = max((i for i, ln in enumerate(lines) if ln.strip() == "---"), default=None)
    colophon = normalise("\n".join(lines[rule + 1:])) if rule is not None else ""
    first = heads[0][0] if heads else len(lines)
    intro = normalise("\n".join(lines[:first]))
    out = {"intro": Section("intro", 1, intro, intro)}
    for k, (i, level, title) in enumerate(heads):
        end = next((j for j, lv, _ in heads[k + 1:] if lv <= level), len(lines))
        top_i = max((j for j, lv, _ in heads[:k + 1] if lv == 2), default=i)
        top_end = next((j for j, lv, _ in heads if j > top_i and lv <= 2), len(lines))
        out[title] = Section(title, level, normalise("\n".join(lines[i:end])),
                             normalise("\n".join(lines[top_i:top_end])))
    return out, colophon


def find_section(sections: dict[str, Section], name: str) -> Section | None:
    """The one section whose title starts with ``name`` (whitespace-normalised)."""
    name = normalise(name)
    hits = [s for t, s in sections.items() if t == name or normalise(t).startswith(name)]
    return hits[0] if len(hits) == 1 else None


def _seed_texts(folder: Path) -> dict[str, tuple[dict[str, Section], str, str]]:
    out = {}
    for key, fname in SEEDS.items():
        text = read_text(folder / fname)
        sections, colophon = parse_seed(text)
        out[key] = (sections, colophon, normalise(text))
    return out


def _check_quote(src: str, line: int, seeds: dict, seed: str, section: str, quote: str,
                 value: float, value_text: str) -> Section:
    sections, _, whole = seeds[seed]
    sec = find_section(sections, section)
    if sec is None:
        raise InputError(src, f"no section of seed {seed} ({SEEDS[seed]}) starts with "
                         f"{section!r}", line=line, key="section")
    q = normalise(quote)
    if q not in sec.text:
        where = [t for t, s in sections.items() if q in s.text and s.level == 2]
        hint = (f"; it is in section {where[0]!r}" if where else
                "; found elsewhere in the seed" if q in whole else "")
        raise InputError(src, f"quote not found in seed {seed} section {sec.name!r}{hint}",
                         line=line, key="quote")
    if not number_occurs(value, q):
        raise InputError(src, f"value {value_text} does not occur in its quote "
                         f"({numbers_in(q)[:8]} do)", line=line, key="value")
    return sec


def _check_quantization(src: str, c: Claim, sec: Section, scope: str) -> None:
    """A stated quantization must be written where the seed describes the run: each part
    of it (``nvfp4-mlp+fp8`` -> nvfp4, mlp, fp8) as a word of ``scope``, any case."""
    q = c.stated.get("quantization") or ""
    low = scope.lower()
    for part in filter(None, re.split(r"[-+]", q.lower())):
        if not re.search(rf"(?<![a-z0-9]){re.escape(part)}(?![a-z0-9])", low):
            raise InputError(src, f"stated quantization {q!r} ({part!r}) is not written in "
                             f"section {sec.name!r} of seed {c['seed']} (nor where the seed "
                             f"describes run {c['run']!r}); if the project supplies it, move "
                             "it to assumed", line=c.line, key="quantization")


def check_against_seeds(claims: list[Claim], src: str, folder: Path,
                        excluded: list[dict[str, str]] | None = None,
                        excluded_src: str = "claims_excluded.csv") -> None:
    """Every quote is in its seed's section and holds the value. Every stated field in
    EVIDENCE_* must be written where the seed describes the row's run: the sections its rows
    cite; for the article's own runs (kinds other than ``claim``) also the whole top-level
    section and the colophon, which describe those runs; for a publisher's claim the
    colophon only for ``code_read`` (it lists the commits read). So a value the project
    supplies, or one the seed gives for a different run, cannot pass as stated. Exclusions
    are checked like rows. Raises :class:`InputError` naming line and field."""
    seeds = _seed_texts(folder)
    where: dict[str, dict[str, str]] = {}  # run -> section title -> text counted as its
    secs = {}
    for c in claims:
        sec = _check_quote(src, c.line, seeds, c["seed"], c["section"], c["quote"],
                           c["value"], c.value_text)
        secs[c.line] = sec
        where.setdefault(c["run"], {})[sec.name] = sec.text if c["kind"] == "claim" \
            else sec.top
    for c in claims:
        sec, colophon = secs[c.line], seeds[c["seed"]][1]
        run_text = " ".join(where[c["run"]].values())
        own = c["kind"] != "claim"
        for key in EVIDENCE_NUM:
            v = c.stated.get(key)
            scope = run_text + (" " + colophon if own else "")
            if v is not None and not number_occurs(float(v), scope, words=True):
                raise InputError(src, f"stated {v:g} is not in section {sec.name!r} of seed "
                                 f"{c['seed']} (nor where the seed describes run "
                                 f"{c['run']!r}); if the project supplies it, move it to "
                                 "assumed", line=c.line, key=key)
        for key in EVIDENCE_STR:
            v = c.stated.get(key)
            scope = (run_text + (" " + colophon if own or key == "code_read" else "")).lower()
            for part in (v.split("@") if v else []):
                if part and part.lower() not in scope:
                    raise InputError(src, f"stated {part!r} is not in section {sec.name!r} "
                                     f"of seed {c['seed']} (nor where the seed describes run "
                                     f"{c['run']!r}); if the project supplies it, move it "
                                     "to assumed", line=c.line, key=key)
        _check_quantization(src, c, sec, run_text + (" " + colophon if own else ""))
        kv = c.stated.get("kv_dtype") or ""
        if kv and not re.search(rf"(?<![a-z0-9]){re.escape(kv.lower())}[ -]kv\b",
                                (run_text + (" " + colophon if own else "")).lower()):
            raise InputError(src, f"stated kv_dtype {kv!r} needs '{kv} KV' in section "
                             f"{sec.name!r} of seed {c['seed']} (nor where the seed describes "
                             f"run {c['run']!r}); if the project supplies it, move it to "
                             "assumed", line=c.line, key="kv_dtype")
        words = INT8_LAYERS.get(c.stated.get("int8_layers") or "", ())
        scope = (run_text + (" " + colophon if own else "")).lower()
        missing = [w for w in words if w not in scope]
        if missing:
            raise InputError(src, f"stated int8_layers {c.stated['int8_layers']!r} needs "
                             f"{' and '.join(repr(w) for w in missing)} in section "
                             f"{sec.name!r} of seed {c['seed']} (nor where the seed describes "
                             f"run {c['run']!r}); if the project supplies it, move it to "
                             "assumed", line=c.line, key="int8_layers")
    for i, r in enumerate(excluded or [], start=2):
        for key in EXCLUDED_COLUMNS:
            if not (r.get(key) or "").strip():
                raise InputError(excluded_src, "required field is empty", line=i, key=key)
        if r["seed"] not in SEEDS:
            raise InputError(excluded_src, f"{r['seed']!r} is not one of {sorted(SEEDS)}",
                             line=i, key="seed")
        try:
            v = float(r["value"])
        except ValueError:
            raise InputError(excluded_src, f"not a number: {r['value']!r}", line=i,
                             key="value") from None
        _check_quote(excluded_src, i, seeds, r["seed"], r["section"], r["quote"], v,
                     r["value"])


def load_excluded(path: str | Path | None = None) -> list[dict[str, str]]:
    """Figures deliberately left out of the registry, each with a reason."""
    p = Path(path) if path else RAW / "claims_excluded.csv"
    rows = read_csv(p)
    missing = [c for c in EXCLUDED_COLUMNS if rows and c not in rows[0]]
    if missing:
        raise InputError(str(p), f"missing columns {missing}", line=1)
    return rows
