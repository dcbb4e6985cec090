"""Every throughput figure in the three seeds is a registry row or a listed exclusion.

The walk is written here independently of the loader: it reads the seed text itself and
finds (1) numbers followed by a throughput unit, including lists and ranges joined by
"and", "to", "-", "vs" ("45.6, 83.7, 162.7 and 321.0 tok/s", "~1,440-1,810 tok/s") and
(2) the number cells of the seeds' tables (markdown ``|`` rows and tab-separated rows) in
columns that are not counts (streams, requests, clients, concurrency) and in cells that
hold numbers only (times such as "54.27 ms" are not tok/s).
"""

from __future__ import annotations

import re

from claimcheck.core.claims import SEEDS, load_claims, load_excluded, seeds_dir

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
        for v, ctx in unit_figures(text) + table_figures(text):
            if (key, v) not in rows and (key, v) not in excluded:
                missing.append(f"{key} {v:g}: {ctx[:90]}")
    assert not missing, "throughput figures neither a row nor excluded:\n" + "\n".join(
        sorted(set(missing)))


@needs_seeds
def test_exclusions_are_not_also_rows():
    rows = {(c["seed"], c["value"]) for c in load_claims()}
    both = [r for r in load_excluded() if (r["seed"], float(r["value"])) in rows]
    assert not both
