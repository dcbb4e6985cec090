"""The seed articles and the registry's quotes against them: their sections, and
:func:`check_quotes` (every quote in its section holding its value; every stated field
written where the seed describes the run). Pure: the seeds are found and read by
:mod:`claimcheck.claims.seedfiles`. Errors name the file, line and field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from claimcheck.claims.claims import (
    EVIDENCE_NUM,
    EVIDENCE_STR,
    EXCLUDED_COLUMNS,
    INT8_LAYERS,
    SEEDS,
    Claim,
)
from claimcheck.claims.claimtext import normalise, number_occurs, numbers_in
from claimcheck.files.errors import InputError


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


def _seed_parts(texts: dict[str, str]) -> dict[str, tuple[dict[str, Section], str, str]]:
    """Per seed key: its sections, colophon and whole text, normalised."""
    out = {}
    for key in SEEDS:
        text = texts[key]
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


def check_quotes(claims: list[Claim], src: str, texts: dict[str, str],
                 excluded: list[dict[str, str]] | None = None,
                 excluded_src: str = "claims_excluded.csv") -> None:
    """Every quote is in its seed's section and holds the value. Every stated field in
    EVIDENCE_* must be written where the seed describes the row's run: the sections its rows
    cite; for the article's own runs (kinds other than ``claim``) also the whole top-level
    section and the colophon, which describe those runs; for a publisher's claim the
    colophon only for ``code_read`` (it lists the commits read). So a value the project
    supplies, or one the seed gives for a different run, cannot pass as stated. Exclusions
    are checked like rows. ``texts``: each seed's text by its key (:data:`~claimcheck.claims.
    claims.SEEDS`). Raises :class:`InputError` naming line and field."""
    seeds = _seed_parts(texts)
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

