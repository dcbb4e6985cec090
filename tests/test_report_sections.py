"""The protocol-driven blocks of the Update section on hand-made inputs: the lanes
arithmetic (seed 000's TensorFold line), the per-request span rate, the median repeat, the
assumed claim fields and the recorded serving-gate ladder. Expected values are worked out
here from the inputs, never copied from output."""

import statistics
from types import SimpleNamespace

import pytest

from claimcheck.files.paths import RAW
from claimcheck.readings.timeline import RequestTimeline, Timeline
from claimcheck.runs.run import load_run
from claimcheck.runs.steprow import lanes_text, median_step, per_request_span_tok_s
from claimcheck.update.sections import (
    admit_block,
    lanes_arithmetic,
    lanes_block,
    nominal_lines,
    published_scaling,
)
from claimcheck.update.update import assumed_reasons, claim_head, compare_sentence


def test_lanes_arithmetic_seed_000():
    # seed 000: 8,859 tok in 13.32 s, 764 tok/s decode, plan 1051 ms, tail 2333 ms
    a = lanes_arithmetic(8859, 13.32, 1.051, 2.333, 764)
    assert round(a["e2e"], 1) == 665.1
    assert round(a["decode_window_s"], 2) == 11.60
    assert round(a["less_plan"]) == 722
    assert round(a["less_tail"]) == 806
    assert round(a["less_both"]) == 892


def test_lanes_block_reads_the_quote_from_the_registry_row():
    quote = ("'(uLane: 8 parallel code lanes · 1,000 tok in 10.00s · 125 tok/s decode / "
             "100.0 tok/s e2e · plan 1000ms · tail 1000ms)'")
    claims = [{"id": "x-dec", "run": "x", "metric": "decode_aggregate", "value": 125.0,
               "quote": quote},
              {"id": "x-e2e", "run": "x", "metric": "e2e_aggregate", "value": 100.0,
               "quote": quote}]

    class P:  # the fields lanes_block reads
        metrics = ("lanes_stats",)
        source_claims = ("x-dec", "x-e2e")

    md = lanes_block(P, [], claims)
    # 1000 / 10 = 100.0; window 1000 / 125 = 8 s; 1000 / 9 = 111; / 8 = 125; both / 8 = 125
    assert "1,000 / 10.00 s = 100.0 tok/s (printed 100.0)" in md
    assert "decode window of 1,000 / 125 = 8.00 s" in md
    assert "removing plan gives 111, tail 111, both 125 tok/s" in md


def test_lanes_text():
    line = {"lanes": 8, "total_tokens": 8000, "wall_s": 10.0, "decode_tok_s": 850.0,
            "e2e_tok_s": 800.0, "plan_s": 0.5, "tail_s": 0.25,
            "fastest_second_tok_s": 900.0, "per_lane_tok_s": 106.25}
    assert lanes_text(line) == ("8 lanes · 8,000 tok in 10.00s · 850.0 tok/s decode / "
                                "800.0 tok/s e2e · plan 500ms · tail 250ms · fastest second "
                                "900 tok/s · 106.2 tok/s per lane")


def test_per_request_span_is_tokens_over_last_minus_first_chunk():
    a = RequestTimeline(0.0, 1.0, 10, (1.0, 1.5, 2.0), 3)  # 3 tokens / 1.0 s
    b = RequestTimeline(0.0, 0.5, 10, (0.5, 1.0), 2)  # 2 tokens / 0.5 s
    assert per_request_span_tok_s(Timeline(2, (a, b))) == pytest.approx((3.0 + 4.0) / 2)


def test_median_step():
    s = [(i, {"e2e_aggregate_tok_s": v}) for i, v in enumerate([10.0, 30.0, 20.0])]
    assert median_step(s) == 2
    assert median_step(s + [(3, {"e2e_aggregate_tok_s": 40.0})]) == 2  # lower middle


def test_report_median_keeps_the_median_repeat_of_each_level():
    run = load_run(RAW / "runs/h200-20261129-bf16-dummy-16k-serving-gate")
    assert run.protocol.report == "median"
    kept = run.reported
    levels = sorted({s["step"] for s in run.rows if s["status"] == "complete"})
    assert [s["step"] for s in kept] == levels
    for k in kept:
        vals = [s["e2e_aggregate_tok_s"] for s in run.rows if s["step"] == k["step"]]
        assert len(vals) == 3
        assert k["e2e_aggregate_tok_s"] == statistics.median(vals)


CLAIM = {"id": "c-64", "value": 3215.0, "metric": "e2e_aggregate", "streams": 64,
         "streams_running": 48.0, "stream_relation": "independent_requests",
         "per_stream_tok_s": 3215.0 / 48, "context_tokens": 612, "card": "b200",
         "power_limit_w": None, "quantization": "nvfp4",
         "assumed_fields": "context_tokens,prompt_tokens",
         "assumed": "prompt_tokens=100; '~100-token prompts' | context_tokens=612; "
                    "~100 in + 512 out"}


def test_assumed_fields_show_as_assumed():
    assert assumed_reasons(CLAIM) == {"prompt_tokens": "'~100-token prompts'",
                                      "context_tokens": "~100 in + 512 out"}
    head = claim_head(CLAIM)
    assert "612 tokens of context per stream (assumed: ~100 in + 512 out)" in head
    # per-stream speed divides by the streams that ran at once
    assert "64 independent requests, 48 running at once, 67.0 tok/s per stream" in head
    assert "nvfp4 weights;" not in head and "(assumed" not in head.split("weights")[-1]


def test_nominal_watts_from_limit_or_rated_power():
    lines = nominal_lines([CLAIM, {**CLAIM, "id": "c-1", "value": 1035.0, "card": "rtx3090",
                                   "power_limit_w": 250.0, "streams": 64}],
                          {"b200": 1000.0})
    assert lines[0].endswith("= 3.2 tok/s per nominal W at 64 streams")
    assert "(b200 rated board power)" in lines[0]
    assert "1,035.0 tok/s / 250 W (rtx3090 power limit) = 4.1" in lines[1]


def test_published_scaling_seed_000():
    # seed 000: qwen-warp's docs, 424.9 at four clients over 154.4 at one = 2.75
    line = published_scaling(("qwen-warp", "rtx3090", 350.0, "docs"),
                             {1: 154.4, 4: 424.9})
    assert "4 → 424.9 tok/s (2.75× one client)" in line
    assert "no one-client figure" in published_scaling(("x", "c", None, "s"), {4: 1.0})


def _run(name, proto_name, steps, engine="e"):
    """A run's fields the blocks read: its step rows (every completed one reported)."""
    proto = SimpleNamespace(name=proto_name, report="all", metrics=("all_streams_decoding",))
    return SimpleNamespace(name=name, protocol=proto, rows=steps,
                           reported=[s for s in steps if s["status"] == "complete"],
                           provenance=SimpleNamespace(card="h200", engine=engine,
                                                      engine_config=SimpleNamespace(
                                                          max_num_seqs=None)))


def test_admit_block_answers_with_numbers():
    # 8 streams of 1,000 + 100 tokens: all-decoding 400 tok/s against a roofline of 500
    # (80%); a run of another protocol at the same prompt length and streams reads 200 by
    # streams x 1000 / median TPOT, so decode alone is 2.0x that
    step = {"step": 0, "repeat": 1, "status": "complete", "streams": 8, "input_len": 1000,
            "output_len": 100, "context_tokens_per_stream": 1100,
            "all_streams_decoding_tok_s": 400.0}
    other = {**step, "all_streams_decoding_tok_s": None,
             "streams_x_1000_over_median_tpot_tok_s": 200.0,
             "e2e_aggregate_tok_s": 150.0}
    admit = _run("a", "admit", [{**step, "roofline_tok_s": 500.0}])
    long = _run("b", "long", [other])
    md = admit_block(admit.protocol, [admit], [admit, long])
    assert ("**Answer:** decode alone (all streams decoding, prefills done) reaches 80% of "
            "the roofline") in md
    assert "below the line, and 2.0× what the same prompt length reads" in md
    assert "400 tok/s (50.0 per stream), 80% of the roofline's 500 tok/s" in md
    # a run of the same prompt length at other streams is not compared
    far = _run("c", "long", [{**other, "streams": 16}])
    md = admit_block(admit.protocol, [admit], [far])
    assert "prefills share" not in md
    # nor one on another engine (FP8 long prompts are no yardstick for BF16 decode)
    fp8 = _run("d", "long", [other], engine="fp8")
    md = admit_block(admit.protocol, [admit], [fp8])
    assert "prefills share" not in md


def test_compare_sentence_per_stream_reading_is_the_same_definitions():
    # fastest second 500 tok/s at 8 streams: 62.5 per stream, not 1000 / median TPOT (40.0)
    claim = {**CLAIM, "id": "f", "metric": "fastest_second", "value": 1000.0, "streams": 8,
             "streams_running": None, "per_stream_tok_s": 125.0, "assumed_fields": "",
             "assumed": ""}
    run = SimpleNamespace(provenance=SimpleNamespace(
        card="h200", engine="e", weights_label="dummy weights",
        engine_config=SimpleNamespace(max_num_seqs=None)))
    m = {"streams": 8, "fastest_second_tok_s": 500.0, "per_stream_tok_s": 40.0}
    text = compare_sentence(claim, [(run, m)])
    assert "500 tok/s on h200 e (62.5 per stream)" in text and "the claim)" not in text


def test_single_stream_block_gives_a_held_step_its_prefill_rate_only():
    from claimcheck.update.sections import single_stream_block
    proto = SimpleNamespace(name="one", report="all", metrics=("prefill_tok_s",))
    held = {"step": 2, "repeat": 1, "status": "complete", "streams": 1, "requests": 16,
            "input_len": 7681, "output_len": 2, "context_tokens_per_stream": 7683,
            "per_stream_tok_s": 100.5, "e2e_aggregate_tok_s": 2.9, "prefill_tok_s": 11221.8}
    run = _run("r", "one", [held])
    md = single_stream_block(proto, [run])
    assert "16 prompts of 7,681 tokens back to back, 2 out each" in md
    assert "prefill 11,222 prompt tok/s" in md
    assert "100.5" not in md and "B = 1 ceiling" not in md
