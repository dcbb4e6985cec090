"""Every throughput figure in the three seeds is a registry row or a listed exclusion.

The walk is written here independently of the loader: it reads the seed text itself and
finds (1) numbers followed by a throughput unit, including lists and ranges joined by
"and", "to", "-", "vs" ("45.6, 83.7, 162.7 and 321.0 tok/s", "~1,440-1,810 tok/s"),
(2) the number cells of the seeds' tables (markdown ``|`` rows and tab-separated rows) in
columns that are not counts (streams, requests, clients, concurrency) and in cells that
hold numbers only (times such as "54.27 ms" are not tok/s), and (3) figures no unit
directly follows, in one sentence: a bare number after a word that makes it a rate
("bursts of up to 900", "a ceiling of 85", "predicts about 300", "gives 806") or before
one ("76 end to end", "948 e2e"), and a bare number joined by "against", "and", "to",
"or", "rather than" or a comma to a figure found so (or to a rate (1) or (2) found in the
same seed and written with a decimal point or of 100 or more: "41.3 against 35.0",
"340 against 321"). A bare number is one no other unit follows (ms, GB, W, %, tokens,
streams, billion, ...) and that is not part of a date or version.
"""

from __future__ import annotations

import re

from claimcheck.claims.claims import SEEDS
from claimcheck.claims.registryfiles import load_claims, load_excluded
from claimcheck.claims.seedfiles import seeds_dir

from .conftest import needs_seeds

NUM = r"~?\d{1,3}(?:,\d{3})+(?:\.\d+)?|~?\d+(?:\.\d+)?[kK]?"
UNIT = r"(?:tok/s|tokens/s|tokens per second|tok/sec|tokens/sec|tps|t/s)"
JOIN = r"(?:\s*(?:,\s*(?:and\s+)?|\band\b|\bto\b|\bor\b|\bagainst\b|\bvs\.?|\bversus\b|-|–)\s*)"
RUN = re.compile(rf"((?:(?:{NUM}){JOIN})*(?:{NUM}))\s*{UNIT}(?![/\w])", re.I)
COUNT_HEADER = re.compile(r"^(streams|requests|clients|concurrency|run|claim|card|metric)$",
                          re.I)
CELL_WORDS = re.compile(r"\b(and|about|average|best|second|reference)\b|[~(),]")


def _value(n: str) -> float:
    n = n.lstrip("~")
    k = 1000.0 if n[-1] in "kK" else 1.0
    return float(n.rstrip("kK").replace(",", "")) * k


def unit_figures(text: str) -> list[tuple[float, str]]:
    out = []
    for m in RUN.finditer(text):
        for n in re.findall(NUM, m.group(1)):
            out.append((_value(n), " ".join(m.group(0).split())))
    return out


def table_figures(text: str) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    header: list[str] | None = None
    for line in text.split("\n"):
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
        elif "\t" in line:
            cells = [c.strip() for c in line.split("\t")]
        else:
            header = None
            continue
        if header is None:
            header = cells
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue
        for head, cell in zip(header, cells, strict=False):
            if COUNT_HEADER.match(head.strip()) or head == header[0] and not \
                    re.fullmatch(rf"\s*({NUM})\s*", cell):
                continue
            cell = re.sub(r"\(\d+ running\)", "", cell)
            rest = re.sub(NUM, "", CELL_WORDS.sub("", cell)).strip()
            if rest:
                continue  # a cell with a unit or words: a time, a label, not a tok/s figure
            out += [(_value(n), line.strip()) for n in re.findall(NUM, cell)]
    return out


BARE = re.compile(
    rf"(?<![\w.,/$@#:-])({NUM})(?![\w%×]|\.\d|,\d|-\d|\s*(?:%|x\b|×|ms\b|s\b|seconds?\b|"
    r"GB|GiB|MiB|KiB|W\b|TFLOP|GFLOP|MHz|°|C\b|billion|tokens?\b|tok\b|requests?\b|"
    r"streams?\b|lanes?\b|slots?\b|users?\b|clients?\b|layers?\b|concurrent|running|in\b|"
    r"out\b|sessions?|prompts?\b|rounds?\b|times\b|/\s*\d|[-–](?:bit|way|stream|row|token|"
    r"wide|layer|second|lane|request)))", re.I)
RATE_BEFORE = re.compile(r"\b(?:up to|ceiling (?:of|at)|predicts?|model's|gives|measured|"
                         r"measures|decod\w* at|rises to|at about|between about)\s+"
                         r"(?:about\s+|~)?$", re.I)
RATE_AFTER = re.compile(r"^\s*(?:end to end|e2e|decode\b|aggregate|steady|total\b|average|"
                        r"best second|without drafts|with drafts)", re.I)
PAIR = re.compile(r"\s*,\s*|\s+(?:and|to|or|against|vs\.?|versus|rather than)\s+"
                  r"(?:between\s+|about\s+|~)?")
SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n")


def bare_figures(text: str, known: set[float] = frozenset()) -> list[tuple[float, str]]:
    """Rates no unit directly follows (rule 3 of the module docstring); ``known`` holds the
    rates rules 1 and 2 found in the same seed."""
    out = []
    for s in SENTENCE.split(" ".join(text.split())):
        ms = list(BARE.finditer(s))
        found = {i for i, m in enumerate(ms) if RATE_BEFORE.search(s[:m.start()])
                 or RATE_AFTER.match(s[m.end():])}
        # a number of `known` is an anchor when written with a decimal point or >= 100
        # (counts such as "16 to 32" are not)
        sure = {i for i, m in enumerate(ms) if _value(m.group(1)) in known
                and ("." in m.group(1) or _value(m.group(1)) >= 100)}
        grew = True
        while grew:
            grew = False
            for i in set(range(len(ms))) - found:
                for j in (i - 1, i + 1):
                    a, b = sorted((i, j))
                    if 0 <= j < len(ms) and (j in found or j in sure) and \
                            PAIR.fullmatch(s[ms[a].end():ms[b].start()]):
                        found.add(i)
                        grew = True
                        break
        out += [(_value(ms[i].group(1)), s[max(0, ms[i].start() - 60):ms[i].end() + 30])
                for i in sorted(found)]
    return out


def seed_figures(text: str) -> list[tuple[float, str]]:
    """Every throughput figure of one seed by the three rules."""
    ruled = unit_figures(text) + table_figures(text)
    return ruled + bare_figures(text, {v for v, _ in ruled})


def test_walker_finds_figures_no_unit_follows():
    text = ("He said 350tps with bursts of up to 900 when coding. The model predicts about 300 at "
            "eight; a ceiling of 85, and the tail gives 806, both gives 892. Each request gets "
            "about 76 end to end. The better of two lines, 41.3 against 35.0; at sixteen, 15 "
            "were still running. 6% over at C8 (340 against 321 tok/s).\n\n"
            "| Streams | Log line |\n|---:|---:|\n| 1 | 41.3 |\n\n"
            "From 16 to 32 it grows 31%. It gives 25.6 billion weights. Measured 2026-10-28 at "
            "16 and 32 streams, 128 in / 512 out. The 50 and 200 diagonals; about 16 tok/s.")
    got = sorted({v for v, _ in seed_figures(text)})
    assert got == [16.0, 35.0, 41.3, 76.0, 85.0, 300.0, 321.0, 340.0, 350.0, 806.0, 892.0,
                   900.0]


def test_walker_finds_lists_ranges_and_table_cells():
    text = ("cohorts: 45.6, 83.7, 162.7\nand 321.0 tok/s at one, two; prefill ~1,440-1,810 tok/s; "
            "1.6k tps; 4.1 tok/s/W\n\n| Streams | Median TPOT | Aggregate |\n|---:|---:|---:|\n"
            "| 8 | 25.22 ms | 317 |\n| 16 | 27.71 ms | 443.0 (15 running) |\n")
    got = sorted(v for v, _ in unit_figures(text) + table_figures(text))
    assert got == [45.6, 83.7, 162.7, 317.0, 321.0, 443.0, 1440.0, 1600.0, 1810.0]


@needs_seeds
def test_every_throughput_figure_is_a_row_or_an_exclusion():
    folder = seeds_dir()
    rows = {(c["seed"], c["value"]) for c in load_claims()}
    excluded = {(r["seed"], float(r["value"])) for r in load_excluded()}
    missing = []
    for key, fname in SEEDS.items():
        text = (folder / fname).read_text(encoding="utf-8")
        for v, ctx in seed_figures(text):
            if (key, v) not in rows and (key, v) not in excluded:
                missing.append(f"{key} {v:g}: {ctx[:90]}")
    assert not missing, "throughput figures neither a row nor excluded:\n" + "\n".join(
        sorted(set(missing)))


@needs_seeds
def test_exclusions_are_not_also_rows():
    # one number may be a row in one section and a model ceiling in another (seed 000's
    # 577: the ladder's 16-stream aggregate, and Cinference's plain ceiling): by section
    rows = {(c["seed"], c["section"], c["value"]) for c in load_claims()}
    both = [r for r in load_excluded()
            if any((r["seed"], sec, float(r["value"])) in rows
                   for sec in {c["section"] for c in load_claims()}
                   if r["section"].startswith(sec))]
    assert not both


@needs_seeds
def test_the_figures_issue_17_named_are_found_and_placed():
    text = (seeds_dir() / SEEDS["000"]).read_text(encoding="utf-8")
    found = {v for v, _ in seed_figures(text)}
    assert {900.0, 35.0, 1230.0, 85.0, 300.0, 806.0, 892.0} <= found
    bounds = {c["value"]: c["bound"] for c in load_claims() if c["seed"] == "000"}
    assert bounds[900.0] == "at_most"
    reasons = {float(r["value"]): r["reason"] for r in load_excluded() if r["seed"] == "000"}
    assert "same run and metric" in reasons[35.0]
