"""The findings layer on hand-made step tables: numbers worked out by hand, and a finding
whose condition fails is left out and named."""

from __future__ import annotations

import pandas as pd
import pytest

from claimcheck.findings import findings as F
from claimcheck.findings import findings_decode as FD
from claimcheck.findings import stepframe as SF

GB = 1e9
# two engines: W = 50 GB, S = 0.1 GB per stream, kappa = 1e5 B/token (bf16);
# W = 25 GB, S = 0.05 GB, kappa = 5e4 (fp8)
ENGINES = pd.DataFrame([
    {"run": "a", "kind": "bench", "weight_format": "bf16", "kv_dtype": "bf16",
     "state_dtype": "fp32",
     "weight_bytes": 50 * GB, "state_bytes": 0.1 * GB, "kv_bytes_per_token": 1e5,
     "speculative": False, "ignore_eos": True, "prefix_caching": False},
    {"run": "b", "kind": "bench", "weight_format": "fp8", "kv_dtype": "fp8",
     "state_dtype": "fp16",
     "weight_bytes": 25 * GB, "state_bytes": 0.05 * GB, "kv_bytes_per_token": 5e4,
     "speculative": False, "ignore_eos": False, "prefix_caching": True}])


def step(run, streams, decode, roof, ctx=1000, requests=None, e2e=None, input_len=100,
         **kw):
    out = 1000 - input_len if ctx == 1000 else ctx - input_len
    return {"run": run, "status": "complete", "reported": True, "streams": streams,
            "requests": requests or streams, "max_num_seqs": 256, "input_len": input_len,
            "output_len": out, "context_tokens_per_stream": ctx,
            "all_streams_decoding_tok_s": decode, "roofline_tok_s": roof,
            "streams_x_1000_over_mean_tpot_tok_s": kw.get("mean", decode),
            "roofline_bound": "memory",
            "e2e_aggregate_tok_s": e2e or 0.9 * decode, "tokens_per_joule": kw.get("tpj", 1.0),
            "telemetry_mean_power_w": 500.0, "vllm": "0.26.0", "weights_label": "dummy weights",
            "timeline_output_tokens": (requests or streams) * out}


def frame(rows):
    return SF.step_frame(pd.DataFrame(rows), ENGINES)


ROWS = [step("a", 1, 70, 100), step("a", 8, 520, 800), step("a", 8, 500, 700, ctx=8000,
                                                            input_len=7000),
        step("b", 1, 100, 200), step("b", 8, 800, 1600), step("b", 8, 700, 1300, ctx=8000,
                                                               input_len=7000)]


def test_share_of_the_line_per_format():
    x = FD.bandwidth_share(frame(ROWS))
    # bf16: 70/100, 520/800 = 0.65, 500/700 = 0.714; fp8: 0.5, 0.5, 700/1300 = 0.538
    assert x.holds
    assert x.numbers["bf16_min"] == pytest.approx(0.65)
    assert x.numbers["fp8_max"] == pytest.approx(700 / 1300)
    assert x.sentence.startswith("BF16 decodes at 65%–71% of its bandwidth line from 1 to 8 "
                                 "streams, at 1,000 to 8,000 tokens of context per stream; "
                                 "FP8 decodes at 50%–54%")


def test_a_failing_condition_is_left_out_and_named():
    # fp8 at 8 streams above bf16's lowest share: the bands overlap
    rows = ROWS[:4] + [step("b", 8, 1100, 1600), ROWS[5]]
    x = FD.bandwidth_share(frame(rows))
    assert not x.holds and "overlap" in x.why
    log = F.report([x])
    assert log == [f"finding 'bandwidth share' not printed: {x.condition} does not hold "
                   f"({x.why})"]


def test_bands_are_set_against_each_other_at_a_shared_context_only():
    # fp8 at 8,000 tokens (0.68) above bf16's lowest (0.65, at 1,000): bf16 has no step at
    # 8,000, so the two contexts are not compared and the finding holds
    rows = [step("a", 1, 70, 100), step("a", 8, 520, 800),
            step("b", 1, 50, 100), step("b", 8, 680, 1000, ctx=8000, input_len=7000)]
    assert FD.bandwidth_share(frame(rows)).holds
    # bf16 measured there too, at 0.60: under fp8's 0.68 at 8,000 tokens, named
    x = FD.bandwidth_share(frame(rows + [step("a", 8, 600, 1000, ctx=8000, input_len=7000)]))
    assert not x.holds
    assert x.why == "BF16 60% and FP8 68% overlap at 8,000 tokens of context per stream"


def test_fp8_buys_against_its_byte_ratio():
    x = FD.fp8_buys(frame(ROWS))
    # 1 stream, 1000 ctx: bytes bf16 50 + 0.2 + 0.1 = 50.3, fp8 25 + 0.1 + 0.05 = 25.15
    assert x.holds and x.numbers["levels"] == 3
    assert x.numbers["bytes_min"] == pytest.approx(2.0)
    # gains 100/70 = 1.43, 800/520 = 1.54, 700/500 = 1.40
    assert x.numbers["gain_max"] == pytest.approx(800 / 520)
    assert "1.40×–1.54× as fast as BF16" in x.sentence and "2.00× fewer bytes" in x.sentence


def test_step_growth_names_the_state_crossover():
    rows = [step("a", 1, 70, 100), step("a", 64, 64 * 50, 64 * 71.4),
            step("a", 128, 128 * 33, 128 * 50)]
    x = FD.step_growth(frame(rows))
    # step ms: 1000 / 70 = 14.3; 1000 * 64 / 3200 = 20.0; 1000 * 128 / 4224 = 30.3
    # shares 0.70, 0.70, 0.66; bytes at 1: 50.3 GB, at 128: 50 + 25.6 + 12.8 = 88.4
    assert x.holds, x.why
    assert x.numbers["growth"] == pytest.approx((128000 / 4224) / (1000 / 70))
    assert x.numbers["bytes_growth"] == pytest.approx(88.4 / 50.3)
    assert x.numbers["cross_bf16"] == pytest.approx(250)  # 50 GB / (2 x 0.1 GB)
    assert "to 20.0 ms at 64 (η 70% and 70%)" in x.sentence
    # the same run with the last level back on its line: eta does not fall, left out
    flat = FD.step_growth(frame(rows[:2] + [step("a", 128, 128 * 35, 128 * 50)]))
    assert not flat.holds and "does not fall" in flat.why
    assert "25.6 GB of recurrent state read and written and 12.8 GB of KV" in x.sentence


def test_long_prompts_and_second_wave():
    rows = [step("a", 8, 520, 800, e2e=480),   # short, one wave: share 0.65
            step("a", 8, 500, 800, requests=16, e2e=490),   # short, two waves
            step("a", 8, 530, 800, ctx=8000, input_len=7000, requests=16, mean=265, e2e=300),
            step("a", 8, 540, 800, ctx=8000, input_len=7000, e2e=297)]
    f = frame(rows)
    x = F.long_prompts(f)
    # all decoding 530 / mean-TPOT 265 = 2.0x; share 530 / 800 = 0.66 against the short
    # prompts' median of 0.65 and 0.625 = 0.64
    assert x.holds and x.numbers["over_mean_max"] == pytest.approx(2.0)
    assert "BF16 66% against 64%" in x.sentence
    w = F.second_wave(f)
    # short: 490 / 480 - 1 = +2.1%; long: 300 / 297 - 1 = +1.0%
    assert w.holds and w.numbers["change_max"] == pytest.approx(490 / 480 - 1)
    assert "+2.1% with short prompts" in w.sentence and "+1.0% with long" in w.sentence


def test_energy_and_what_cannot_be_said():
    rows = [step("a", 1, 70, 100, tpj=0.1), step("a", 8, 520, 800, tpj=0.9)]
    e = F.energy(frame(rows))
    assert e.holds and ("BF16 0.10 output tokens per joule at 1 stream (500 W mean draw) and 0.90 "
                       "at 8 streams") in e.sentence
    c = F.cannot_say(frame(ROWS))
    # run b does not ignore EOS: its 3 steps, 1 + 8 + 8 = 17 requests, all at the cap; the
    # sentence counts no requests (the reported passes are not every repeat)
    assert c.holds and "every request free to stop early running to its 900–1,000-token cap" \
        in c.sentence and "17" not in c.sentence
    assert "they read one vLLM release (0.26.0), so a finding may not hold on another" \
        in c.sentence
    short = ROWS[:3] + [{**r, "timeline_output_tokens": r["timeline_output_tokens"] - 1}
                        for r in ROWS[3:]]
    assert not F.cannot_say(frame(short)).holds


def test_a_missing_column_stops_the_render_naming_finding_and_column():
    f = frame(ROWS).drop(columns=["tokens_per_joule"])
    with pytest.raises(F.FindingError, match=r"finding 'energy': column 'tokens_per_joule' "
                                             "is missing"):
        F.all_findings(f)


def test_an_optional_finding_is_left_out_with_its_reason(monkeypatch):
    monkeypatch.setitem(F.OPTIONAL, "energy", "no board energy on this card")
    found = F.all_findings(frame(ROWS).drop(columns=["tokens_per_joule"]))
    e = next(x for x in found if x.key == "energy")
    assert not e.holds and e.why == ("optional (no board energy on this card); column "
                                     "'tokens_per_joule' is missing")


def test_an_error_inside_a_finding_names_it_and_is_not_too_few_steps():
    def energy(f):  # stands in for the finding of that name, failing inside
        return 1 / 0

    with pytest.raises(F.FindingError) as e:
        F.run_finding(energy, frame(ROWS))
    assert str(e.value) == ("finding 'energy' failed on its inputs: ZeroDivisionError: "
                            "division by zero")

    def unknown(f):
        return None

    with pytest.raises(F.FindingError, match="finding 'unknown' declares no columns"):
        F.run_finding(unknown, frame(ROWS))


def test_step_frame_refuses_a_missing_column_by_name():
    rows = [{k: v for k, v in r.items() if k != "roofline_tok_s"} for r in ROWS]
    with pytest.raises(ValueError, match=r"step table: column 'roofline_tok_s' is missing"):
        frame(rows)
    # a declared optional column (a run without telemetry) reads as not measured
    assert "tokens_per_joule" in SF.OPTIONAL_COLUMNS
    f = frame([{k: v for k, v in r.items() if k != "tokens_per_joule"} for r in ROWS])
    assert f["tokens_per_joule"].isna().all()
    with pytest.raises(ValueError, match="engine rows: column 'kv_bytes_per_token'"):
        SF.step_frame(pd.DataFrame(ROWS), ENGINES.drop(columns=["kv_bytes_per_token"]))


def test_a_renamed_column_stops_the_finding_naming_the_column():
    # issue 40 item 3: a column renamed after the step frame is built must not read as
    # "too few steps"; the finding and the column it lost are named in one line
    f = frame(ROWS).rename(columns={"e2e_aggregate_tok_s": "e2e_tok_s"})
    with pytest.raises(F.FindingError) as e:
        F.all_findings(f)
    assert str(e.value) == ("finding 'second wave': column 'e2e_aggregate_tok_s' is missing "
                            "from the step frame")
    # renamed in the step table itself: the step frame refuses it, never fills it in
    rows = [{("e2e_tok_s" if k == "e2e_aggregate_tok_s" else k): v for k, v in r.items()}
            for r in ROWS]
    with pytest.raises(ValueError, match=r"step table: column 'e2e_aggregate_tok_s' is "
                                         "missing"):
        frame(rows)


def test_too_few_steps_is_a_stated_omission_not_an_error():
    # no long-prompt step sent in several waves (no run of that protocol): every column is
    # there, so the finding runs, says why it cannot hold, and the log names it
    x = F.run_finding(F.long_prompts, frame(ROWS))
    assert not x.holds and x.why == "no multi-wave long-prompt step with decode"
    assert F.report([x]) == [f"finding 'long prompts' not printed: {x.condition} does not "
                             "hold (no multi-wave long-prompt step with decode)"]
    found = F.all_findings(frame(ROWS))  # the others still run
    assert [x.key for x in found if x.key == "long prompts" and not x.holds] == ["long prompts"]
