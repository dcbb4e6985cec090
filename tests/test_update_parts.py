"""Parts of the Update that are not the body: verdict lines, the verdict and roofline
figures, the definitions figure, the model paragraph, one headline metric per protocol."""

from __future__ import annotations

import pytest

from claimcheck.config.protocols import Protocol, Step
from claimcheck.figures import definitions_fig, figstyle, plots
from claimcheck.files.errors import InputError
from claimcheck.files.paths import RAW, RUNS
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.runs.run import load_run
from claimcheck.update.update_metrics import headline_metric
from claimcheck.update.update_words import plain_words
from claimcheck.verdicts import verdicts_md
from tests.test_update_body import GATE, VERDICTS


def test_findings_without_the_contract_columns_say_so():
    rows = [{k: v for k, v in r.items() if k not in ("source_model_tok_s", "claim_over_source",
                                                      "calibration", "calibrated_on",
                                                      "binding_term")} for r in VERDICTS]
    md = verdicts_md.render_findings(rows)
    assert "carries no source-calibrated model yet" in md
    assert "No figure misses its source's model by more than the tolerance." in md


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
    assert "carried from this card, else its source's" in right.get_xlabel()
    # one point per claim and ratio: three on each side
    assert sum(len(c.get_offsets()) for c in left.collections) == 3
    assert sum(len(c.get_offsets()) for c in right.collections) == 3
    # without claim_over_source the right panel says so instead of drawing
    bare = plots.verdict_figure([{**p, "claim_over_source": None} for p in pts], kinds, "x")
    assert sum(len(c.get_offsets()) for c in bare.axes[1].collections) == 0
    assert any("no figure has this ratio" in t.get_text() for t in bare.axes[1].texts)
    # the brackets give the verdict table's count of each kind, not the points drawn
    assert [t.get_text() for t in bare.axes[1].get_yticklabels()] == [
        f"{k} (1; 0 drawn)" for k in reversed(kinds)]
    assert [t.get_text() for t in left.get_yticklabels()] == [f"{k} (1)"
                                                             for k in reversed(kinds)]
    two = pts + [{"verdict": pts[0]["verdict"], "claim_over_roofline": None,
                  "claim_over_source": None}]
    assert plots.kind_label(two, pts[0]["verdict"], "claim_over_roofline") == \
        f"{pts[0]['verdict']} (2; 1 drawn)"


def test_definitions_figure_skips_queued_levels_and_names_client_and_weights():
    data = load_run(RUNS / GATE)
    # 128 streams on a 64-slot server queue: the default step is the 64-stream level
    assert data.traces[definitions_fig.default_step(data)].record["streams"] == 64
    fig = definitions_fig.figure(data)
    assert "(dummy weights)" in fig._suptitle.get_text()
    assert "vllm bench serve --save-detailed" in fig.texts[-1].get_text()
    lanes = "claimcheck's own load client"
    assert definitions_fig.load_client("lanes").startswith(lanes)
    assert "--save-detailed" not in definitions_fig.load_client("lanes")


def test_roofline_legend_lists_only_what_is_drawn():
    from claimcheck.physics import roofline as rl
    from claimcheck.physics.cardfiles import get_card
    from claimcheck.physics.inputs import Weights, roofline_for

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
    from claimcheck.pipeline.figures import context_words
    assert "0 tokens" not in context_words(0)
    assert context_words(640) == "640 tokens of context per stream"


def test_model_paragraph_names_each_miss_by_its_term_and_links_the_figures():
    from claimcheck.verdicts.verdicts_md import miss_terms, model_paragraph

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
    from claimcheck.verdicts.verdicts import SEED_REPRODUCED, SHORT
    from claimcheck.verdicts.verdicts_md import source_misses

    def row(i, agg, streams, model, term, bound="", verdict=SHORT):
        return {"id": i, "card": "rtx3090", "value": agg, "aggregate_tok_s": agg,
                "streams": streams, "streams_sharing": streams,
                "claim_over_source": agg / model, "source_model_tok_s": model,
                "binding_term": term, "bound": bound, "verdict": verdict}
    rows = [row("a", 1000.0, 64, 1250.0, "compute"),   # 0.80
            row("b", 900.0, 64, 1250.0, "compute"),    # 0.72
            row("c", 100.0, 8, 250.0, "memory"),       # 0.40
            row("d", 1040.0, 64, 1000.0, "compute"),   # +4%: within 5%, left out
            row("e", 1000.0, 64, 1250.0, "compute", bound="at_least"),  # a bound, left out
            row("f", 500.0, 64, 1250.0, "compute", verdict=SEED_REPRODUCED)]  # judged by a
    # seed's run, so not counted as a miss of the model (the tally's numbers)
    text = source_misses(rows)
    assert text.startswith("3 figures miss their source's model by more than its tolerance "
                           "(at least 5%, or the spread of the source's own runs): 2 where "
                           "the model is compute-bound")
    # median of 0.80 and 0.72 is 0.76; the furthest first (b at 0.72)
    assert "median 0.76× the model; furthest `b` (900 tok/s summed over 64 streams" in text
    assert "1 where the model is memory-bound" in text and "`c` (100 tok/s" in text
    assert "`d`" not in text and "`e`" not in text and "`f`" not in text


def test_the_verdict_figure_draws_a_carried_verdict_at_its_carried_ratio(tmp_path):
    """A verdict read against this card's carried model sits at claim / carried model on the
    right panel (1.5 here), not at its source model's ratio (0.5), which it was not read
    against; a source-read verdict keeps its source ratio."""
    import json

    from claimcheck.pipeline import figures
    from claimcheck.verdicts import verdicts as v
    rows = [{"verdict": v.ABOVE_CARRIED, "claim_over_roofline": 0.8,
             "claim_over_carried_model": 1.5, "claim_over_source": 0.5},
            {"verdict": "within the physics", "claim_over_roofline": 0.7,
             "claim_over_source": 0.9}]
    path = tmp_path / "verdicts.json"
    path.write_text(json.dumps(rows))
    fig = figures.verdict_figure(str(path))
    right = fig.axes[1]
    xs = sorted(round(float(o[0]), 6) for c in right.collections for o in c.get_offsets())
    assert xs == [0.9, 1.5]
