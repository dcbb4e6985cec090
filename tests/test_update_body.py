"""The Update an article can print (issue 17 item 5): a short body with one narrow table per
protocol and plain words, an appendix with the rest, one headline metric per protocol, and
figures that hide nothing and say what they are."""

from __future__ import annotations

import re

import pytest

from claimcheck.core.cards import load_cards, load_ceilings
from claimcheck.core.claims import load_claims
from claimcheck.core.errors import InputError
from claimcheck.core.geometry import geometry_from_file
from claimcheck.core.paths import RAW, RUNS
from claimcheck.measure.protocols import Protocol, Step
from claimcheck.report import definitions_fig, figstyle, plots, steps, verdicts_md
from claimcheck.report.derive import with_timeline
from claimcheck.report.record import find_runs, load_run
from claimcheck.report.tables import run_rows
from claimcheck.report.update import (
    BODY_COLUMNS,
    headline_metric,
    plain_words,
    render_body,
    render_update,
)

GATE = "h200-20261129-bf16-dummy-16k-serving-gate"
SINGLE = "h200-20261129-bf16-dummy-16k-single-stream-2"
ADMIT = "h200-20261129-bf16-dummy-16k-admit-then-decode"


def prose(md: str) -> str:
    """The body's words: images, link targets and code spans taken out."""
    md = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", md)
    md = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)
    return re.sub(r"`[^`]*`", "", md)


SNAKE = re.compile(r"\b[A-Za-z0-9]+_[A-Za-z0-9_]+\b")


def tables(md: str) -> list[list[str]]:
    """Each Markdown table of a text as its lines."""
    out, cur = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def columns(line: str) -> int:
    return len(line.strip().strip("|").split("|"))


# Hand-made verdict rows with the verdicts helper's contract columns: two source models
# (one card each), one claim above its card's plain roofline.
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


@pytest.fixture(scope="module")
def committed():
    """Every committed run read as the pipeline reads it (timeline columns, rooflines)."""
    runs = [with_timeline(load_run(d)) for d in find_runs(RUNS)]
    rows = run_rows(runs, geometry_from_file(RAW / "models/qwen3.8-27b/config.json"),
                    load_cards(), ceilings=load_ceilings(RAW / "ceilings.csv"))
    return runs, rows


@pytest.fixture(scope="module")
def body(committed):
    runs, rows = committed
    figures = {"claim_map": "claim_map.png"} | {f"measured-{r.name}": f"measured-{r.name}.png"
                                                for r in runs}
    return render_body(runs, rows, "h200", figures, VERDICTS, [], "update-appendix.md",
                       verdict_figure="verdicts.png")


def test_body_is_short_narrow_and_in_plain_words(body):
    lines = body.splitlines()
    assert len(lines) < 300
    found = tables(body)
    assert found  # one per protocol with runs
    assert all(columns(t[0]) <= BODY_COLUMNS for t in found)
    assert SNAKE.findall(prose(body)) == []
    assert "1 streams" not in body and "? tokens" not in body
    # the appendix is linked, and so is the verdict figure
    assert "[the appendix](update-appendix.md)" in body
    assert "](verdicts.png)" in body


def test_body_one_table_per_protocol_and_one_label_per_row(committed, body):
    runs, _ = committed
    protocols = {r.protocol.name for r in runs}
    runs_tables = [t for t in tables(body) if t[0].startswith("| Run |")]
    assert len(runs_tables) == len(protocols)
    for t in runs_tables:
        for row in t[2:]:
            assert row.split("|")[1].strip()  # every row names its run


def test_body_marks_held_prefill_and_queued_levels(committed, body):
    runs, _ = committed
    gate = next(r for r in runs if r.name == GATE)
    seqs = gate.provenance.engine_config.max_num_seqs
    assert f"| {GATE}, dummy weights | 128 (queued: {seqs} run at once) |" in body
    assert f"| {SINGLE}, dummy weights | 1 (held prefill: 16 prompts of 7,681 tokens, " in body


def test_body_headlines_admit_then_decode_by_all_streams_decoding(committed, body):
    runs, rows = committed
    admit = next(r for r in runs if r.name == ADMIT)
    assert headline_metric(admit.protocol) == "all_streams_decoding"
    # its 64-stream step: all streams decoding / 64 per stream, over the roofline at 64
    row = next(r for r in rows if r["run"] == ADMIT and r["streams"] == 64)
    v, roof = row["all_streams_decoding_tok_s"], row["roofline_tok_s"]
    assert (f"64 streams of 8,192 tokens of context each: {v:,.1f} tok/s summed, "
            f"{v / 64:,.1f} per stream, {v / roof:.0%} of the plain roofline") in body


def test_body_findings_from_the_contract_columns(body):
    # counts by kind, the source models (two, one per card), the misses by binding term
    counts = next(line for line in body.splitlines()
                  if line.startswith("Of 3 published figures: "))
    for kind in ("needs speculation", "above its source's model",
                 "consistent with its source"):
        assert f"1 *{kind}*" in counts
    # median of 1.25 and 300 / 294 = 1.0204: 1.1352
    assert "| rtx3090 | `a-1` | η from a-1 (1 stream) | 2 | 1 of 2 | 1.14× |" in body
    assert "| rtx5090 | `b-1`, `b-2` | η from b-1, compute from b-2 | 1 | 0 of 1 | 2.00× |" \
        in body
    assert ("where the model is compute-bound at their streams (past the bend, where each "
            "added stream adds its share of arithmetic), median 2.00× the model; furthest "
            "`b-32` (2,000 tok/s summed over 32 streams, 62.5 per stream, rtx5090) at 2.00× "
            "its source's model of 1,000 tok/s") in body
    assert "1 figure sits above its card's plain roofline" in body
    assert "at 1.60× the plain roofline of 1,250 tok/s (*needs speculation*)" in body


def test_findings_without_the_contract_columns_say_so():
    rows = [{k: v for k, v in r.items() if k not in ("source_model_tok_s", "claim_over_source",
                                                      "calibration", "calibrated_on",
                                                      "binding_term")} for r in VERDICTS]
    md = verdicts_md.render_findings(rows)
    assert "carries no source-calibrated model yet" in md
    assert "No figure misses its source's model by more than the tolerance." in md


def test_appendix_holds_every_step(committed):
    runs, rows = committed
    md = render_update(runs, rows, [c.tidy() for c in load_claims()], "h200", {})
    assert "? tokens" not in md
    for r in runs:
        for s in r.steps:
            assert f"| {s['streams']} | {s['requests']} |" in md


def _proto(metrics, streams=(1, 8)) -> Protocol:
    return Protocol(name="made-up", description="", source_claims=(), metrics=tuple(metrics),
                    dataset="random", input_len=10, output_len=10, ignore_eos=True, seed=1,
                    repeats=1, report="all", endpoint="/v1/completions",
                    steps=tuple(Step(streams=n, requests=n, input_len=10, output_len=10)
                                for n in streams))


def test_one_headline_metric_per_protocol():
    # the first aggregate speed of the list; a per-stream speed only when every step runs
    # one stream; ms and W never
    assert headline_metric(_proto(["median_tpot_ms", "per_stream_tok_s",
                                   "streams_x_1000_over_median_tpot"])) \
        == "streams_x_1000_over_median_tpot"
    assert headline_metric(_proto(["per_stream_tok_s", "e2e_aggregate"], streams=(1, 1))) \
        == "per_stream_tok_s"
    assert headline_metric(_proto(["all_streams_decoding", "e2e_aggregate"])) \
        == "all_streams_decoding"
    with pytest.raises(InputError, match=r"protocols\.made-up\.metrics: no decode or "
                       r"end-to-end speed"):
        headline_metric(_proto(["median_tpot_ms", "mean_power_w"]))


def test_plain_words_sets_identifiers_as_code():
    assert plain_words("max_tokens 512 and usage.completion_tokens, not chunks") == \
        "`max_tokens` 512 and `usage.completion_tokens`, not chunks"


def test_verdict_figure_is_deterministic_and_labelled(tmp_path):
    kinds = verdicts_md.kinds_in_order(VERDICTS)
    pts = [{"verdict": r["verdict"], "claim_over_roofline": r["claim_over_roofline"],
            "claim_over_source": r["claim_over_source"]} for r in VERDICTS]
    a = figstyle.save(plots.verdict_figure(pts, kinds, "hand-made"), tmp_path / "a")
    b = figstyle.save(plots.verdict_figure(pts, kinds, "hand-made"), tmp_path / "b")
    assert a[0].read_bytes() == b[0].read_bytes() and a[1].read_bytes() == b[1].read_bytes()
    fig = plots.verdict_figure(pts, kinds, "hand-made")
    left, right = fig.axes[:2]
    assert "plain roofline" in left.get_xlabel() and "ratio" in left.get_xlabel()
    assert "source-calibrated" in right.get_xlabel()
    # one point per claim and ratio: three on each side
    assert sum(len(c.get_offsets()) for c in left.collections) == 3
    assert sum(len(c.get_offsets()) for c in right.collections) == 3
    # without claim_over_source the right panel says so instead of drawing
    bare = plots.verdict_figure([{**p, "claim_over_source": None} for p in pts], kinds, "x")
    assert sum(len(c.get_offsets()) for c in bare.axes[1].collections) == 0
    assert any("no figure has this ratio" in t.get_text() for t in bare.axes[1].texts)


def test_definitions_figure_skips_queued_levels_and_names_client_and_weights():
    data = steps.load(RUNS / GATE)
    # 128 streams on a 64-slot server queue: the default step is the 64-stream level
    assert data.steps[definitions_fig.default_step(data)].record["streams"] == 64
    fig = definitions_fig.figure(data)
    assert "(dummy weights)" in fig._suptitle.get_text()
    assert "vllm bench serve --save-detailed" in fig.texts[-1].get_text()
    lanes = "claimcheck's own load client"
    assert definitions_fig.load_client("lanes").startswith(lanes)
    assert "--save-detailed" not in definitions_fig.load_client("lanes")


def test_roofline_legend_lists_only_what_is_drawn():
    from claimcheck.core import roofline as rl
    from claimcheck.core.cards import get_card
    from claimcheck.core.inputs import Weights, roofline_for

    geom = geometry_from_file(RAW / "models/qwen3.8-27b/config.json")
    model, _ = roofline_for(geom, get_card("h200"), weights=Weights(size=50, unit="GiB",
                                                                      source="test"),
                            ceilings={}, weight_rows={}, compute_dtype="bf16",
                            state_dtype="fp32", kv_dtype="bf16", context_tokens=640)
    pts = rl.curve(model, list(range(1, 9)))  # memory-bound all the way at 8 streams
    assert all(p.memory_ms >= p.compute_ms for p in pts)
    fig = plots.roofline_figure({"η = 1": pts}, {}, None, [], title="t", source="s")
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert labels == ["η = 1"]


def test_zero_context_preset_title_says_no_context():
    from claimcheck.report.figures import context_words
    assert "0 tokens" not in context_words(0)
    assert context_words(640) == "640 tokens of context per stream"


def test_model_paragraph_names_each_miss_by_its_term_and_links_the_figures():
    from claimcheck.report.verdicts_md import miss_terms, model_paragraph

    def row(run, engine, streams, term, cal=False, e2e=0.01):
        return {"run": run, "engine": engine, "streams": streams, "step": 0, "repeat": 1,
                "calibration_step": cal, "e2e_error": e2e, "decode_error": e2e,
                "miss_term": term, "calibrated_on": "c"}
    ramp = "the ramp of each wave (admission and prefill), not the decode step"
    rows = [row("a", "fp8", 32, "the per-step memory term: predicted TPOT 13.1 ms", e2e=0.13),
            row("b", "fp8", 24, "the per-step memory term: predicted TPOT 12.0 ms", e2e=0.09),
            row("c", "bf16", 64, ramp + " (+2.5% on TPOT)", e2e=0.06),
            row("d", "bf16", 1, "", cal=True), row("e", "bf16", 8, None)]
    # two memory-term steps (fp8 at 24 and 32), one ramp step (bf16 at 64); the
    # calibration step and the step with no term are not misses
    assert miss_terms(rows) == [("the per-step memory term", 2, "fp8 at 24, 32 streams"),
                                (ramp, 1, "bf16 at 64 streams")]
    text = model_paragraph(rows)
    assert "2 steps the per-step memory term (fp8 at 24, 32 streams)" in text
    assert "[bf16](model-bf16.png), [fp8](model-fp8.png)" in text


def test_source_misses_group_by_binding_term_and_leave_out_bounds_and_near_ones():
    from claimcheck.report.verdicts_md import source_misses

    def row(i, agg, streams, model, term, bound=""):
        return {"id": i, "card": "rtx3090", "value": agg, "aggregate_tok_s": agg,
                "streams": streams, "streams_sharing": streams,
                "claim_over_source": agg / model, "source_model_tok_s": model,
                "binding_term": term, "bound": bound, "verdict": "x"}
    rows = [row("a", 1000.0, 64, 1250.0, "compute"),   # 0.80
            row("b", 900.0, 64, 1250.0, "compute"),    # 0.72
            row("c", 100.0, 8, 250.0, "memory"),       # 0.40
            row("d", 1040.0, 64, 1000.0, "compute"),   # +4%: within 5%, left out
            row("e", 1000.0, 64, 1250.0, "compute", bound="at_least")]  # a bound, left out
    text = source_misses(rows)
    assert text.startswith("3 figures miss their source's model by more than 5%: 2 where "
                           "the model is compute-bound")
    # median of 0.80 and 0.72 is 0.76; the furthest first (b at 0.72)
    assert "median 0.76× the model; furthest `b` (900 tok/s summed over 64 streams" in text
    assert "1 where the model is memory-bound" in text and "`c` (100 tok/s" in text
    assert "`d`" not in text and "`e`" not in text


def test_body_shows_one_row_per_level_and_names_failed_steps():
    """decode-rows reports every repeat (3 per level): the body shows the median repeat of
    each level, said; the appendix keeps all. A failed step is named under its table."""
    from claimcheck.report.update import body_steps, failed_steps_line
    rows = load_run(RUNS / "h200-20261201-fp8-hyperqwen-dummy-16k-decode-rows")
    shown = body_steps(rows)
    assert [(s["streams"], n) for s, n in shown] == [(16, 3), (24, 3), (32, 3), (40, 3),
                                                     (48, 3)]
    for s, _ in shown:  # the median of its level's three end-to-end aggregates
        level = sorted(x["e2e_output_tok_s"] for x in rows.steps if x["step"] == s["step"])
        assert s["e2e_output_tok_s"] == level[1]
    failed = load_run(RUNS / "h200-20261201-bf16-dummy-256-single-stream")
    line = failed_steps_line([failed, rows])
    assert line.startswith("Not in the table: h200-20261201-bf16-dummy-256-single-stream "
                           "step 4 (1 stream, 4 requests of 15,000 tokens) failed: 2 of 4 ")
    assert "marked failed" in line and "decode-rows" not in line
    assert failed_steps_line([rows]) == ""
