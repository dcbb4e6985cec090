"""The body of the Update (figures/update.md) read as its author reads it: the article's
own form, findings that carry their numbers, narrow tables labelled in words, nothing
written before a run printed as a result."""

from __future__ import annotations

import re

import pytest

from claimcheck.config.yamlfiles import load_validated
from claimcheck.files.paths import CONFIG, RAW
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.update.update_body import render_body

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


# Hand-made registry rows for two of VERDICTS' claims, and the families naming them.
CLAIMS = [
    {"id": "a-64", "system": "Alpha", "value": 1100.0, "card": "rtx3090", "streams": 64,
     "streams_running": None, "stream_relation": "independent_requests",
     "per_stream_tok_s": 1100 / 64, "context_tokens": 640, "spec_method": "",
     "spec_draft_tokens": None, "metric": "e2e_aggregate"},
    {"id": "b-32", "system": "Beta", "value": 2000.0, "card": "rtx5090", "streams": 32,
     "streams_running": None, "stream_relation": "independent_requests",
     "per_stream_tok_s": 62.5, "context_tokens": None, "spec_method": "MTP",
     "spec_draft_tokens": 3, "metric": "decode_aggregate"}]
FAMILIES = [{"key": "a", "title": "Alpha's {{a-64.printed}}", "claims": ["a-64"]},
            {"key": "b", "title": "Beta's {{b-32.printed}}", "claims": ["b-32"]}]
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z*\d`])")


@pytest.fixture(scope="module")
def body(committed):
    runs, rows = committed
    log: list[str] = []
    extra: list[str] = []
    values: dict = {}
    geom = geometry_from_file(RAW / "models" / "qwen3.8-27b" / "config.json")
    md = render_body(runs, "h200", {"h200": "h200.png", "long": "long.png"}, VERDICTS,
                     [], "update-appendix.md", "Qwen3.8-27B", geom,
                     verdict_figure="verdicts.png", log=log, claims=CLAIMS,
                     families=FAMILIES, appendix_extra=extra, values_out=values)
    return md, log, "\n".join(extra), values


def sentences(md: str) -> list[str]:
    """The body's sentences: headings, images, tables and blank lines left out."""
    md = re.sub(r"`[^`]*`", "Code", md)  # a code span is a word of its sentence
    text = " ".join(line.lstrip("> ") for line in prose(md).splitlines()
                    if line.strip() and not line.startswith("#"))
    return [s for s in SENTENCE.split(text) if s.strip()]


def test_title_lead_and_the_dummy_box(body):
    md, *_ = body
    title = md.splitlines()[0]
    assert title.startswith("## Update, ") and "(dummy weights)" in title
    assert "> **Dummy weights.**" in md
    lead = md.split("\n\n")[2]
    # VERDICTS: a-64 above its source's model, b-32 needs speculation: neither a drafter's
    # nor a reproduction's verdict, so both are read against their roofline alone
    assert "Of the 2 headline figures below, 0 need a drafter" in lead
    assert "reproduces 0 of them, and the registry reads 2 against" in lead


def test_one_section_per_family_names_its_claim_with_its_number(body):
    md, *_ = body
    assert md.index("### Alpha's 1,100") < md.index("### Beta's 2,000") \
        < md.index("### What this card showed") < md.index("### Provenance")
    alpha = md.split("### Alpha's 1,100\n\n")[1].split("\n\n")[0]
    assert alpha.startswith("**Alpha, 1,100 tok/s** (end-to-end aggregate) is summed over 64 "
                            "independent requests on one RTX 3090.")
    assert "Each stream gets 17.2 tok/s" in alpha  # 1,100 / 64
    assert "Each stream holds 640 tokens of context." in alpha
    assert "No drafting is stated" in alpha
    beta = md.split("### Beta's 2,000\n\n")[1].split("\n\n")[0]
    assert "The source does not say how much context each stream holds." in beta
    assert "It drafts with MTP" in beta
    assert "Each stream verifies 4 positions per step." in beta  # 3 drafted + 1
    for part in (alpha, beta):  # the optional local prediction: a reason, no number
        assert part.endswith("On its own card it is not predicted: this card's model "
                             "carries no term for the claim's own card and no drafting rows "
                             "yet.")


def test_what_this_card_showed_answers_the_open_question_first(body):
    md, *_ = body
    showed = md.split("### What this card showed\n\n")[1]
    assert showed.startswith("The article left one question open: would admitting every "
                             "stream at once, and timing only the decode, close its gap?")
    assert showed.split("\n")[1].startswith("Admitted together, 8 BF16 streams of "
                                            "7,681-token prompts decode at")
    # the sum says its streams, per-stream speed, context per stream and the window read
    assert re.search(r"decode at [\d,.]+ tok/s summed, [\d.]+ tok/s per stream", showed)
    assert "independent requests sent as one wave, each holding 8,192 tokens of context" in showed
    assert "prefill, ramp and tail are left out, and nothing drafts" in showed


def test_the_corrected_sentences_are_gone(body):
    md, _, extra, _ = body
    for gone in ("none of its inputs came from", "with every other property equal",
                 "it is the state, not compute", "decode itself stays at the short prompts'",
                 "requests free to stop early all running", "[1](",
                 "median of each column over the repeats and runs"):
        assert gone not in md and gone not in extra, gone
    # the FP8 KV read rate is printed once, as the ns a token of context costs
    assert "GB/s" not in md
    # the power state of the steps that bent, and energy at the same streams
    assert "W cap" in md and "SM clock" in md
    assert re.search(r"At (\d+) streams, FP8 gives [\d.]+ output tokens per joule against "
                     r"BF16's [\d.]+\.", md)


def test_under_150_lines_and_at_most_30_words_a_sentence(body):
    md, *_ = body
    assert len(md.splitlines()) < 150
    words = [len(s.split()) for s in sentences(md)]
    assert sum(words) / len(words) <= 30, sum(words) / len(words)


def test_every_number_is_a_named_value(body):
    md, _, _, values = body
    printed = {v.text for v in values.values() if v.unit not in ("flag", "text")}
    prose_md = re.sub(r"\([^)]*\.(png|md)\)", "", md)  # link targets
    for n in re.findall(r"(?<![\w.])[+−-]?\d[\d,.]*%?", prose_md):
        n = n.rstrip(".,")
        assert n in printed or any(n in v.text for v in values.values()), n


def test_captions_name_at_most_three_runs(body):
    _, _, extra, _ = body
    findings = extra.split("## vLLM")[0]  # the findings' tables (the release table lists all)
    assert findings.count("Runs: ") >= 4
    for cap in re.findall(r"Runs: ([^*]*)\(dummy weights\)", findings):
        names = [x for x in re.findall(r"h200-[\w-]+", cap)]
        assert len(names) <= 3, cap


def test_words_of_the_body(committed, body):
    md, *_ = body
    runs, _ = committed
    words = prose(md)
    assert "issue" not in words.lower()
    assert SNAKE.findall(words) == []
    assert not any(r.name in words for r in runs)
    assert "η" in words and "bandwidth line" in words


def test_every_finding_holds_on_the_committed_runs(body):
    _, log, *_ = body
    assert log == []


def test_nothing_from_the_protocol_descriptions(body):
    md, *_ = body
    protocols = load_validated(CONFIG / "protocols.yaml", "protocols")["protocols"]
    for p in protocols.values():
        for text in (p["description"], p.get("purpose", "")):
            # any eight words in a row of a description or purpose
            words = " ".join(text.split()).split(" ")
            for i in range(0, max(len(words) - 8, 0), 4):
                assert " ".join(words[i:i + 8]) not in md


def test_per_stream_is_the_sum_over_the_row_streams(body):
    _, _, extra, _ = body
    for t in tables(extra):
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
    _, _, extra, _ = body
    t = next(t for t in tables(extra) if "Context per stream, tokens" in cells(t[0])
             and any("streams, tok/s" in h for h in cells(t[0])))
    head = cells(t[0])
    for row in t[2:]:
        for h, v in zip(head[2:], cells(row)[2:], strict=True):
            if v == "no line":  # fewer than three contexts at those streams: no line
                continue
            n = float(h.split(" ")[0].replace(",", ""))
            m = re.fullmatch(r"([\d,.]+) \(([\d,.]+)\), (\d+)%", v)
            assert m, v
            total, per = (float(x.replace(",", "")) for x in m.groups()[:2])
            assert per == pytest.approx(total / n, abs=0.06)


def test_appendix_table_says_each_steps_lengths_when_they_differ(committed):
    """The context ladder's rows at 8 streams differ only in their prompts: the protocol
    table gives each row its prompt + output tokens (it printed five alike rows)."""
    from claimcheck.update.update import protocol_table
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
