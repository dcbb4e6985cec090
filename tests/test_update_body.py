"""The body of the Update (figures/update.md) read as its author reads it: the article's
own form, findings that carry their numbers, narrow tables labelled in words, nothing
written before a run printed as a result."""

from __future__ import annotations

import re

import pytest

from claimcheck.core.paths import CONFIG
from claimcheck.loaders.yamlcfg import load_validated
from claimcheck.report.update_body import render_body

GATE = "h200-20261129-bf16-dummy-16k-serving-gate"
# Hand-made verdict rows with the verdicts helper's contract columns.
VERDICTS = [
    {"id": "a-64", "card": "rtx3090", "metric": "e2e_aggregate", "value": 1100.0,
     "streams": 64, "streams_sharing": 64, "aggregate_tok_s": 1100.0, "verdict":
     "above its source's model", "claim_over_roofline": 0.9, "roofline_tok_s": 1222.2,
     "source_model_tok_s": 880.0, "claim_over_source": 1.25, "calibrated_on": "a-1",
     "calibration": "eta from a-1 (1 stream)", "binding_term": "memory"},
    {"id": "a-8", "card": "rtx3090", "metric": "e2e_aggregate", "value": 300.0,
     "streams": 8, "streams_sharing": 8, "aggregate_tok_s": 300.0,
     "verdict": "consistent with its source", "claim_over_roofline": 0.7,
     "roofline_tok_s": 428.6, "source_model_tok_s": 294.0, "claim_over_source": 300 / 294,
     "calibrated_on": "a-1", "calibration": "eta from a-1 (1 stream)",
     "binding_term": "memory"},
    {"id": "b-32", "card": "rtx5090", "metric": "decode_aggregate", "value": 2000.0,
     "streams": 32, "streams_sharing": 32, "aggregate_tok_s": 2000.0,
     "verdict": "needs speculation", "claim_over_roofline": 1.6, "roofline_tok_s": 1250.0,
     "source_model_tok_s": 1000.0, "claim_over_source": 2.0, "calibrated_on": "b-1;b-2",
     "calibration": "eta from b-1, compute from b-2", "binding_term": "compute"},
]
SNAKE = re.compile(r"\b[A-Za-z0-9]+_[A-Za-z0-9_]+\b")
NUMBER = re.compile(r"\d")


def prose(md: str) -> str:
    """The body's words: tables, images, link targets and code spans taken out."""
    md = "\n".join(line for line in md.splitlines() if not line.startswith("|"))
    md = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", md)
    md = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)
    return re.sub(r"`[^`]*`", "", md)


def tables(md: str) -> list[list[str]]:
    out, cur = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            out, cur = out + [cur], []
    return out


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


@pytest.fixture(scope="module")
def committed(committed_records):
    runs = list(committed_records)
    return runs, [s for r in runs for s in r.rows]


@pytest.fixture(scope="module")
def body(committed):
    runs, rows = committed
    log: list[str] = []
    md = render_body(runs, "h200", {"h200": "h200.png", "long": "long.png"}, VERDICTS,
                     [], "update-appendix.md", verdict_figure="verdicts.png", log=log)
    return md, log


def test_title_states_the_main_finding_and_the_box_says_dummy(body):
    md, _ = body
    title = md.splitlines()[0]
    assert title.startswith("## Update, ") and "(dummy weights)" in title
    assert "BF16 decodes at" in title and "% of its bandwidth line" in title
    assert "> **Dummy weights.**" in md


def test_at_most_five_tables_of_six_columns_labelled_in_words(committed, body):
    md, _ = body
    runs, _ = committed
    names = {r.name for r in runs} | {r.provenance.engine for r in runs}
    found = tables(md)
    assert 1 <= len(found) <= 5
    for t in found:
        assert len(cells(t[0])) <= 6
        for row in t[2:]:
            assert not any(n in c for n in names for c in cells(row))
    assert md.count("![") <= 4


def test_words_of_the_body(committed, body):
    md, _ = body
    runs, _ = committed
    words = prose(md)
    assert "issue" not in words.lower()
    assert SNAKE.findall(words) == []
    for r in runs:  # a run is named in its table's caption; its engine only in words
        words = words.replace(r.name, "")
    assert not any(r.provenance.engine in words for r in runs)
    assert "η" in words and "bandwidth line" in words


def test_every_finding_sentence_carries_a_number(body):
    md, log = body
    found = md.split("### What the runs found\n\n")[1].split("\n\n![")[0]
    paras = found.split("\n\n")
    assert len(paras) >= 6  # one paragraph per finding that holds
    sentences = [s for p in paras for s in re.split(r"(?<=[.])\s+(?=[A-Z])", p) if s]
    assert len(sentences) >= 6
    assert all(NUMBER.search(s) for s in sentences), sentences
    assert log == []  # every finding's condition holds on the committed runs


def test_nothing_from_the_protocol_descriptions(body):
    md, _ = body
    protocols = load_validated(CONFIG / "protocols.yaml", "protocols")["protocols"]
    for p in protocols.values():
        for text in (p["description"], p.get("purpose", "")):
            # any eight words in a row of a description or purpose
            words = " ".join(text.split()).split(" ")
            for i in range(0, max(len(words) - 8, 0), 4):
                assert " ".join(words[i:i + 8]) not in md


def test_per_stream_is_the_sum_over_the_row_streams(body):
    md, _ = body
    for t in tables(md):
        head = cells(t[0])
        if "Streams" not in head:
            continue
        k = head.index("Streams")
        for row in t[2:]:
            c = cells(row)
            n = float(c[k].replace(",", ""))
            for v in c:
                m = re.fullmatch(r"([\d,.]+) \(([\d,.]+)\)(, \d+ waves)?", v)
                if m:
                    total, per = (float(x.replace(",", "")) for x in m.groups()[:2])
                    assert per == pytest.approx(total / n, abs=0.06)


def test_context_table_per_stream_divides_by_the_column_streams(body):
    md, _ = body
    t = next(t for t in tables(md) if "Context per stream, tokens" in cells(t[0])
             and any("streams, tok/s" in h for h in cells(t[0])))
    head = cells(t[0])
    for row in t[2:]:
        for h, v in zip(head[2:], cells(row)[2:], strict=True):
            n = float(h.split(" ")[0].replace(",", ""))
            m = re.fullmatch(r"([\d,.]+) \(([\d,.]+)\), (\d+)%", v)
            assert m, v
            total, per = (float(x.replace(",", "")) for x in m.groups()[:2])
            assert per == pytest.approx(total / n, abs=0.06)


def test_appendix_table_says_each_steps_lengths_when_they_differ(committed):
    """The context ladder's rows at 8 streams differ only in their prompts: the protocol
    table gives each row its prompt + output tokens (it printed five alike rows)."""
    from claimcheck.report.update import protocol_table
    runs, rows = committed
    ladder = [r for r in runs if r.name == "h200-20261202-bf16-dummy-16k-context-ladder"]
    md = protocol_table(ladder[0].protocol, ladder, [], "bench")
    head = cells(md.splitlines()[0])
    assert head[3] == "Prompt + output, tokens per stream"
    got = [cells(line)[3] for line in md.splitlines()[2:] if cells(line)[1] == "8"]
    assert got == ["1,024 + 384", "2,048 + 384", "4,096 + 384", "8,192 + 384",
                   "12,000 + 384"]
    gate = [r for r in runs if r.protocol.name == "lanes"][0]
    one = protocol_table(gate.protocol, [gate], [], "bench")
    assert "Prompt + output" not in one  # one length for every step: no column
