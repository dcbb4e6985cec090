"""The engine release as a factor (issue 32 item 3) on hand-made step tables: the same
steps on two vLLM releases, the changes and the base release's own spread worked out by
hand; the body reads one release; the figures made with the other release named."""

from __future__ import annotations

import pandas as pd
import pytest

from claimcheck.findings import engine_version as EV
from claimcheck.findings import stepframe as SF

GB = 1e9
ENGINE = {"kind": "bench", "weight_format": "bf16", "kv_dtype": "bf16", "state_dtype": "fp32",
          "weight_bytes": 50 * GB, "state_bytes": 0.1 * GB, "kv_bytes_per_token": 1e5,
          "speculative": False, "ignore_eos": True, "prefix_caching": False}
RUNS = {"old1": "0.26.0", "old2": "0.26.0", "new": "0.33.0", "fp8": "0.33.0",
        "fp8old": "0.26.0"}


def engines() -> pd.DataFrame:
    rows = [{"run": r, **ENGINE} for r in ("old1", "old2", "new")]
    rows += [{"run": r, **ENGINE, "weight_format": "fp8", "kv_dtype": "fp8"}
             for r in ("fp8", "fp8old")]
    return pd.DataFrame(rows)


def step(run, streams, e2e, decode, ttft_ms=100.0, input_len=128, output_len=512,
         requests=None):
    return {"run": run, "status": "complete", "reported": True, "streams": streams,
            "requests": requests or 4 * streams, "max_num_seqs": 64, "input_len": input_len,
            "output_len": output_len, "context_tokens_per_stream": input_len + output_len,
            "all_streams_decoding_tok_s": decode, "roofline_tok_s": 2 * (decode or 1.0),
            "streams_x_1000_over_mean_tpot_tok_s": decode, "roofline_bound": "memory",
            "e2e_aggregate_tok_s": e2e, "median_ttft_ms": ttft_ms, "tokens_per_joule": 1.0,
            "telemetry_mean_power_w": 500.0, "vllm": RUNS[run],
            "weights_label": "dummy weights", "timeline_output_tokens": 1}


def frame(rows) -> pd.DataFrame:
    return SF.step_frame(pd.DataFrame(rows), engines())


ROWS = [
    # 1 stream: 0.26.0 twice (100 and 104 end to end: spread 4%), 0.33.0 once (110)
    step("old1", 1, 100.0, 110.0), step("old2", 1, 104.0, 112.0), step("new", 1, 110.0, 121.0),
    # 8 streams: 800 -> 776 (-3%), decode 900 -> 918 (+2%)
    step("old1", 8, 800.0, 900.0), step("new", 8, 776.0, 918.0),
    # long prompts at 8 streams, 2 waves: TTFT 2.0 s -> 2.5 s (+25%)
    step("old1", 8, 300.0, 400.0, ttft_ms=2000.0, input_len=7681, output_len=511),
    step("new", 8, 306.0, 412.0, ttft_ms=2500.0, input_len=7681, output_len=511),
    # a held prefill (2 tokens out) on both: no tok/s row
    step("old1", 1, 3.0, None, input_len=7681, output_len=2),
    step("new", 1, 3.1, None, input_len=7681, output_len=2),
    # 16 streams on 0.26.0 only, and FP8 on 0.33.0 only: nothing to set against
    step("old1", 16, 1500.0, 1600.0), step("fp8", 8, 1200.0, 1300.0),
]


def test_main_version_is_the_release_with_most_steps_lower_on_a_tie():
    f = frame(ROWS)
    assert EV.main_version(f) == "0.26.0"  # 6 steps against 5
    tie = frame([step("old1", 1, 1.0, 1.0), step("new", 1, 1.0, 1.0)])
    assert EV.main_version(tie) == "0.26.0"
    assert set(EV.of_version(f, "0.33.0")["run"]) == {"new", "fp8"}


def test_version_levels_changes_and_spread_by_hand():
    lv = EV.version_levels(frame(ROWS), "0.26.0", "0.33.0")
    assert list(zip(lv["streams"], lv["input_len"], strict=True)) == [(1, 128), (8, 128),
                                                                       (8, 7681)]
    one, eight, long = (lv.iloc[i] for i in range(3))
    assert one["e2e_aggregate_tok_s_base"] == pytest.approx(102.0)  # median of 100 and 104
    assert one["e2e_change"] == pytest.approx(110 / 102 - 1)
    assert one["decode_change"] == pytest.approx(121 / 111 - 1)
    assert one["spread_base"] == pytest.approx(0.04)
    assert eight["e2e_change"] == pytest.approx(-0.03)
    assert eight["decode_change"] == pytest.approx(0.02)
    assert pd.isna(eight["spread_base"])  # one 0.26.0 step: no spread
    assert long["ttft_change"] == pytest.approx(0.25)


def test_the_finding_words_and_numbers():
    x = EV.engine_version(frame(ROWS), "0.26.0")
    assert x.holds
    assert x.numbers["levels"] == 3 and x.numbers["faster"] == 2
    assert x.numbers["e2e_min"] == pytest.approx(-0.03)
    assert x.numbers["e2e_max"] == pytest.approx(110 / 102 - 1)
    # |changes| 7.8%, 3.0%, 2.0% against a spread of 4.0%: 1 larger
    assert x.numbers["past_spread"] == 1
    assert x.sentence == (
        "On the same card and BF16 weights, 3 steps measured on both vLLM 0.26.0 and 0.33.0 "
        "(1 to 8 streams) change by −3.0% to +7.8% end to end from 0.26.0 to 0.33.0 (median "
        "+2.0%; 0.33.0 faster "
        "at 2 of 3) and by +2.0% to +9.0% while all streams decode; 0.26.0's own repeated "
        "runs of one step differ by up to 4.0% end to end, and 1 of the 3 changes are larger "
        "than that. With 7,681-token prompts at 8 streams, the median time to first "
        "token moves by +25.0% (2.00 s on 0.26.0, 2.50 s on 0.33.0 at 8 streams).")


def test_the_table_divides_by_the_rows_streams_and_names_its_runs():
    t = EV.version_table(EV.engine_version(frame(ROWS), "0.26.0"))
    assert "| BF16 | 8 (32) | 128 + 512 | 800.0 (100.0) | 776.0 (97.0) | −3.0% (+2.0%) |" in t
    assert "| BF16 | 8 (32) | 7,681 + 511 | 300.0 (37.5) | 306.0 (38.2) | +2.0% (+3.0%) |" in t
    assert "Runs: new, old1, old2 (dummy weights)" in t
    assert "fp8" not in t.split("Runs:")[1]


def test_each_weight_format_is_read_apart():
    """BF16 slower and FP8 faster on 0.33.0: one range over both would hide that each
    format moved one way; the words give each its own range, median and TTFT."""
    rows = ROWS + [
        # FP8 on 0.26.0 too: 8 streams 1000 -> 1200 (+20%), decode 1100 -> 1300 (+18.2%);
    # |changes| 7.8, 3.0, 2.0 (BF16), 20.0, 5.0 (FP8) against a spread of 4.0%: 3 larger
        step("fp8old", 8, 1000.0, 1100.0),
        # long prompts, FP8: TTFT 4.0 s -> 3.0 s (-25%), e2e 400 -> 420 (+5%)
        step("fp8old", 8, 400.0, 500.0, ttft_ms=4000.0, input_len=7681, output_len=511),
        step("fp8", 8, 420.0, 550.0, ttft_ms=3000.0, input_len=7681, output_len=511)]
    x = EV.engine_version(frame(rows), "0.26.0")
    assert x.numbers["levels"] == 5 and x.numbers["fp8_levels"] == 2
    assert x.numbers["fp8_e2e_min"] == pytest.approx(0.05)
    assert x.numbers["fp8_e2e_max"] == pytest.approx(0.2)
    assert x.numbers["bf16_e2e_min"] == pytest.approx(-0.03)
    assert x.numbers["fp8_ttft_min"] == pytest.approx(-0.25)
    assert x.sentence == (
        "On the same card, 5 steps were measured on both vLLM 0.26.0 and 0.33.0 with every "
        "other property equal: with BF16 weights, 3 of them (1 to 8 streams) change by −3.0% "
        "to +7.8% end to end from 0.26.0 to 0.33.0 (median +2.0%; 0.33.0 faster at 2 of 3) "
        "and by +2.0% to +9.0% while all streams decode; with FP8 weights, 2 of them (8 "
        "streams) change by +5.0% to +20.0% end to end from 0.26.0 to 0.33.0 (median +12.5%; "
        "0.33.0 faster at 2 of 2) and by +10.0% to +18.2% while all streams decode. Repeated "
        "runs on 0.26.0 of one step differ by up to 4.0% end to end, and 3 of the 5 changes "
        "are larger than that. With 7,681-token prompts at 8 streams, the median time to "
        "first token moves by +25.0% (2.00 s on 0.26.0, 2.50 s on 0.33.0 at 8 streams) with "
        "BF16 weights and by −25.0% (4.00 s on 0.26.0, 3.00 s on 0.33.0 at 8 streams) "
        "with FP8 weights.")
    t = EV.version_table(x)
    assert "| FP8 | 8 (32) | 7,681 + 511 | 400.0 (50.0) | 420.0 (52.5) | +5.0% (+10.0%) |" in t


def test_one_release_holds_no_finding():
    one = frame([r for r in ROWS if r["run"] != "new" and r["run"] != "fp8"])
    x = EV.engine_version(one, EV.main_version(one))
    assert not x.holds and x.why == "the runs are of one vLLM release"
    apart = frame([step("old1", 1, 1.0, 1.0), step("new", 2, 1.0, 1.0)])
    y = EV.engine_version(apart, "0.26.0")
    assert not y.holds and "no step of vLLM 0.33.0 matches one of 0.26.0" in y.why


def test_release_of_reads_the_registrys_words():
    assert EV.release_of("vLLM 0.33.0") == "0.33.0"
    assert EV.release_of("vLLM v0.27.1") == "0.27.1"
    assert EV.release_of("v1.2.5-dspine.3") is None and EV.release_of("") is None
    assert EV.release_of(None) is None
    assert EV.commit_words("g4ba787ec9") == "4ba787ec9" and EV.commit_words("3d6c954") == "3d6c954"


def test_published_with_names_the_releases_figures_at_the_rows_shapes():
    claims = [
        {"id": "a", "engine_version": "vLLM 0.33.0", "card": "rtx3090", "power_limit_w": 390.0,
         "streams": 8, "prompt_tokens": 128, "output_tokens": 512},
        {"id": "b", "engine_version": "vLLM 0.33.0", "card": "rtx3090", "power_limit_w": 390.0,
         "streams": 4, "prompt_tokens": 128, "output_tokens": 512},
        {"id": "c", "engine_version": "vLLM 0.29.0", "card": "b200", "power_limit_w": None,
         "streams": 8, "prompt_tokens": 128, "output_tokens": 512}]
    pub = EV.published_with(claims, "0.33.0")
    assert [c["id"] for c in pub.rows] == ["a", "b"]
    assert pub.cards == ["NVIDIA GeForce RTX 3090 at 390 W"]
    words = EV.published_words(EV.engine_version(frame(ROWS), "0.26.0"), pub, "commit 4ba787e")
    assert words.startswith("The seeds made 2 of their published figures with vLLM 0.33.0, "
                            "all on NVIDIA GeForce RTX 3090 at 390 W; 1 of them are at a "
                            "shape")
    assert "(commit 4ba787e)" in words
    assert EV.published_words(EV.engine_version(frame(ROWS), "0.26.0"),
                              EV.published_with(claims, "0.31.0")) == (
        "No published figure in the registry was made with vLLM 0.31.0.")


def test_model_words_count_the_releases_own_steps():
    base = {"step_status": "complete", "calibrated_on": "new"}
    rows = [{**base, "run": "new", "calibration_step": False, "e2e_error": 0.01,
             "decode_error": 0.02},
            {**base, "run": "new", "calibration_step": False, "e2e_error": 0.07,
             "decode_error": 0.01},
            {**base, "run": "new", "calibration_step": True, "e2e_error": 0.0,
             "decode_error": 0.0},
            {**base, "run": "old1", "calibration_step": False, "e2e_error": 0.5,
             "decode_error": 0.5}]
    assert EV.model_words(rows, {"new"}, "0.33.0").endswith(
        "lands within 5% on both end to end and decode on 1 of their 2 other steps.")
    assert EV.model_words(rows, {"nothing"}, "0.33.0") == ""


def test_published_table_lists_each_figure_and_whether_a_row_has_its_shape():
    claims = [
        {"id": "at-8", "engine_version": "vLLM 0.33.0", "card": "rtx3090",
         "power_limit_w": 390.0, "streams": 8, "prompt_tokens": 128, "output_tokens": 512,
         "value": 304.2, "metric": "e2e_aggregate", "metric_label": "end-to-end aggregate"},
        {"id": "cohort", "engine_version": "vLLM 0.33.0", "card": "rtx3090",
         "power_limit_w": 390.0, "streams": 4, "prompt_tokens": None, "output_tokens": None,
         "value": 165.4, "metric": "unspecified"}]
    t = EV.published_table(EV.engine_version(frame(ROWS), "0.26.0"),
                           EV.published_with(claims, "0.33.0"))
    assert ("| `cohort` | NVIDIA GeForce RTX 3090 at 390 W | 4 | not stated | "
            "165.4 (unspecified) | no |") in t
    assert ("| `at-8` | NVIDIA GeForce RTX 3090 at 390 W | 8 | 128 + 512 | "
            "304.2 (end-to-end aggregate) | yes |") in t
