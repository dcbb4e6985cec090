"""Leave-one-run-out cross-validation (issue 43): a step's own run never feeds its
prediction; the counts are the table's."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

import pytest

from claimcheck.calibration.calibrate import choose_for
from claimcheck.calibration.termsources import term_sources
from claimcheck.predict import crossval as cv
from tests._cli import cli

MARLIN_ROWS_H200 = "h200-20261204-w4a16-dummy-marlin-16k-decode-rows-to-64"
"""The Marlin engine's decode-rows run on the H200 (the H100 has one of the same protocol)."""


def _slowed(run, k: float):
    """``run`` with every measured time of its timelines stretched by ``k`` (sends, first
    tokens, token times): what the model reads off it, TPOT, TTFT and the interval between
    its sends, changes by k; its shapes (prompt and output tokens) do not."""
    traces = []
    for s in run.traces:
        reqs = tuple(replace(r, start_s=r.start_s * k, ttft_s=r.ttft_s * k,
                             token_times_s=tuple(t * k for t in r.token_times_s))
                     for r in s.timeline.requests)
        traces.append(replace(s, timeline=replace(s.timeline, requests=reqs)))
    return replace(run, traces=tuple(traces))


def _predictions(rows):
    return [(r["step"], r["repeat"], r["predicted_e2e_tok_s"], r["predicted_decode_tok_s"])
            for r in rows]


def test_own_run_never_feeds_its_cross_validated_prediction(committed_runs):
    runs = list(committed_runs)
    target = next(r for r in runs if r.name == "h200-20261129-bf16-dummy-16k-ninfer-32")
    # the run the target's in-sample bandwidth comes from: a source of other runs' terms
    src_name = choose_for(target, runs).bandwidth.run.name
    assert src_name != target.name
    src = next(r for r in runs if r.name == src_name)
    slowed = _slowed(src, 1.25)
    runs2 = [slowed if r is src else r for r in runs]
    # its own cross-validated prediction is the same whatever it measured ...
    assert _predictions(cv.held_out_rows(slowed, runs2)) == \
        _predictions(cv.held_out_rows(src, runs))
    # ... while the run it calibrates moves (the perturbation reaches the model) ...
    before = _predictions(cv.held_out_rows(target, runs))
    after = _predictions(cv.held_out_rows(target, runs2))
    assert before != after
    # ... and in sample its own prediction would have moved too
    ins = _predictions(cv.predict_run(src, choose_for(src, runs))["steps"])
    ins2 = _predictions(cv.predict_run(slowed, choose_for(slowed, runs2))["steps"])
    assert ins != ins2


def test_no_term_of_a_held_out_run_names_it(committed_runs):
    runs = list(committed_runs)
    for target in runs:
        others = [r for r in runs if r is not target]
        try:
            choice = choose_for(target, others)
        except Exception:  # no calibration without it: the table says so
            continue
        for t, s in term_sources(choice, target.provenance.raw["engine"]).items():
            assert target.name not in s["runs"], (target.name, t)


def _row(engine, e2e, dec, ins_e2e=0.0, ins_dec=0.0, note="", status="complete"):
    return {"engine": engine, "e2e_error": e2e, "decode_error": dec,
            "in_sample_e2e_error": ins_e2e, "in_sample_decode_error": ins_dec,
            "cv_note": note, "step_status": status}


def test_as_sent_counts_each_step_at_its_own_interval_by_hand():
    """Three rows: held out +8% (at its own sends +2%), +1% (sends change nothing: no
    as-sent error), +2% (at its own sends +7%): held out 2 within 5%, as sent 2 (the first
    and second), not the same two."""
    rows = [{**_row("a", 0.08, None), "as_sent_e2e_error": 0.02, "as_sent_decode_error": None},
            {**_row("a", 0.01, 0.01), "as_sent_e2e_error": None, "as_sent_decode_error": None},
            {**_row("a", 0.02, 0.0), "as_sent_e2e_error": 0.07, "as_sent_decode_error": 0.0}]
    s = cv.summary(rows)
    assert s["cross_validated"]["both_within"] == 2 and s["as_sent"] == 2
    rows[2]["as_sent_e2e_error"] = 0.03
    assert cv.summary(rows)["as_sent"] == 3


def test_summary_counts_by_hand():
    rows = [_row("a", 0.04, -0.05), _row("a", 0.06, 0.01), _row("a", 0.01, None),
            _row("b", None, None, note="no calibration without this run"),
            _row("b", -0.2, 0.2, ins_e2e=0.1, status="failed"),
            _row("b", 0.049, 0.051, ins_dec=-0.051)]
    s = cv.summary(rows)
    # 5 complete steps; e2e within: 0.04, 0.01, 0.049; decode within (with e2e known):
    # -0.05, 0.01, None (held prefill); both: rows 1 and 3
    assert s["steps"] == 5 and s["unpredicted"] == 1
    assert s["cross_validated"] == {"e2e_within": 3, "decode_within": 3, "both_within": 2}
    # in sample: every e2e 0.0; decode 0.0 except -0.051
    assert s["in_sample"] == {"e2e_within": 5, "decode_within": 4, "both_within": 4}
    e = cv.by_engine(rows)
    assert e["a"]["cross_validated"]["both_within"] == 2 and e["b"]["steps"] == 2
    assert cv.update_sentence(rows).startswith(
        "Each run predicted with that run left out of every term of the model, 2 of 5 ")
    assert "a 2 of 3, b 0 of 2" in cv.update_sentence(rows)


def test_by_protocol_counts_by_hand():
    """Protocol p: three repeats of one step measured 100, 104 and 120 tok/s end to end,
    held out +1%, +6% and +2%: 2 within on both; one value within 5% of a measurement m lies
    in [0.95 m, 1.05 m], so one in [98.8, 105] covers 100 and 104 but not 120 ([114, 126]): 2.
    Protocol q: one step of another engine, -20%, and a failed step never counted."""
    def r(proto, engine, e2e, measured, status="complete"):
        return {**_row(engine, e2e, None, status=status), "protocol": proto, "card": "h200",
                "step": 0, "streams": 16, "requests": 16, "measured_e2e_tok_s": measured,
                "measured_decode_tok_s": None}

    rows = [r("p", "a", 0.01, 100.0), r("p", "a", 0.06, 104.0), r("p", "b", 0.02, 120.0),
            r("q", "a", -0.2, 50.0), r("q", "a", 0.0, 50.0, status="failed")]
    rows[2]["engine"] = "a"  # one step: every key of REPLICATE_KEY the same
    got = cv.by_protocol(rows)
    assert sorted(got) == ["p", "q"]
    assert (got["p"]["steps"], got["p"]["cross_validated"]["both_within"],
            got["p"]["one_value"]) == (3, 2, 2)
    assert (got["q"]["steps"], got["q"]["cross_validated"]["both_within"],
            got["q"]["one_value"]) == (1, 0, 1)
    line = cv.count_line("p", got["p"])
    assert line.startswith("p ") and line.endswith("(one value per step: 2)")
    # in sample every error 0.0: 3 / 3 / 3; held out e2e 2 (not +6%), decode 3 (none
    # measured: no miss), both 2
    assert "   3    3 /   3 /   3     2 /   3 /   2  (one" in line


def test_by_engine_splits_an_engine_run_on_two_cards():
    """An engine with runs on two cards is counted per card, each under "ENGINE on CARD";
    with one card the engine's name stands alone."""
    rows = [{**_row("a", 0.01, 0.01), "card": "h200"}, {**_row("a", 0.2, 0.2), "card": "h100"},
            {**_row("a", 0.02, 0.0), "card": "h200"}, {**_row("b", 0.0, 0.0), "card": "h200"}]
    e = cv.by_engine(rows)
    assert sorted(e) == ["a on h100", "a on h200", "b on h200"]
    assert (e["a on h200"]["steps"], e["a on h200"]["cross_validated"]["both_within"]) == (2, 2)
    assert (e["a on h100"]["steps"], e["a on h100"]["cross_validated"]["both_within"]) == (1, 0)
    assert sorted(cv.by_engine([r for r in rows if r["card"] == "h200"])) == ["a", "b"]


def test_cli_cross_validate_json_is_the_table(committed_runs):
    p = cli("model", "--cross-validate", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    steps = [r for r in out["steps"] if r["step_status"] == "complete"]
    assert out["summary"]["steps"] == len(steps) == sum(
        v["steps"] for v in out["engines"].values())
    both = sum(r["e2e_error"] is not None and abs(r["e2e_error"]) <= 0.05
               and (r["decode_error"] is None or abs(r["decode_error"]) <= 0.05)
               for r in steps)
    assert out["summary"]["cross_validated"]["both_within"] == both
    # the H100's first BF16 single-stream run (4 steps) is calibrated on its card without
    # itself since the engine's second one there (2026-12-06): nothing is carried (the
    # carried path, with that run out of the pool: tests/test_crossval_carry.py). The
    # Marlin engine's has one since its H100 ladder (step 0, one stream): calibrated on the
    # H100, its compute carried (no long prompt of its weight format there but its own)
    assert out["summary"]["unpredicted"] == 0
    assert out["summary"]["carried"] == sum(bool(r["carried_from"]) for r in steps) == 0
    # (its bandwidth step: the one-stream step with the most decode intervals, since
    # 2026-12-06's H100 long-prompts run that run's 4 x 511 tokens, before the second
    # single-stream run's 3 x 512)
    first = [r for r in steps if r["run"] == "h100-20261205-bf16-dummy-16k-single-stream"]
    assert len(first) == 4 and {r["bandwidth_runs"] for r in first} == {
        "h100-20261206-bf16-dummy-16k-long-prompts"}
    marlin = [r for r in steps
              if r["run"] == "h100-20261205-w4a16-dummy-marlin-16k-single-stream"]
    assert len(marlin) == 4 and not any(r["carried_from"] for r in marlin)
    assert {r["bandwidth_runs"] for r in marlin} == {
        "h100-20261205-w4a16-dummy-marlin-16k-ladder"}
    assert {r["compute_runs"] for r in marlin} == {
        "h200-20261204-w4a16-dummy-marlin-16k-single-stream"}
    # per protocol, every engine and card together: the same steps, split another way
    assert sum(v["steps"] for v in out["protocols"].values()) == len(steps)
    assert out["protocols"]["wave-admission"]["steps"] == sum(
        r["protocol"] == "wave-admission" for r in steps)
    assert set(out["terms"]) == {"bandwidth", "overhead", "compute", "rows", "admission",
                                 "kv", "sequence", "cold", "lag"}
    # the same step measured by another run: the 256-slot BF16 engine's 64-stream wave of
    # 100-token prompts measured 182.7 tok/s end to end (2026-12-01, repeat 1); the
    # 2026-12-04 run's three repeats of that step 163.9, 166.6 and 167.6, the 2026-12-06
    # run's 191.6, 192.7 and 196.3: their median, (167.6 + 191.6) / 2 = 179.6, over it is
    # -1.7% (-8.8% before the 2026-12-06 run)
    wa = "h200-20261201-bf16-dummy-256-wave-admission"
    row = next(r for r in steps if (r["run"], r["step"], r["repeat"]) == (wa, 2, 1))
    others = (wa.replace("20261201", "20261204"), wa.replace("20261201", "20261206"))
    other = sorted(r["measured_e2e_tok_s"] for r in steps if r["step"] == 2
                   and r["run"] in others)
    assert [round(v, 1) for v in other] == [163.9, 166.6, 167.6, 191.6, 192.7, 196.3]
    assert round(row["measured_e2e_tok_s"], 1) == 182.7
    assert row["replicate_e2e_error"] == pytest.approx(
        (other[2] + other[3]) / 2 / row["measured_e2e_tok_s"] - 1)
    assert round(row["replicate_e2e_error"], 3) == -0.017
    assert row["replicate_runs"] == "; ".join(others)
    # that engine: 72 of its 75 steps measured by another run too (its three wave-admission
    # runs, 12 steps each, three decode-rows-to-256 runs, 8 each, and two bend runs, 6
    # each; not its single-stream run's); the other runs land within 5% on both at 53, the
    # model with the run left out at 45 (51 before the twenty-fifth session's model, which
    # prices this engine's H200 waves of 16 and 32 streams 4-24% faster)
    assert out["engines"]["bf16-dummy-256 on h200"]["replicated"] == {
        "steps": 72, "both_within": 53, "model_both_within": 45}
    # each step's own send interval, beside (not in) its prediction: the 32-stream wave of
    # 2026-12-07's H100 run sent its 32 requests over 4.95 ms (0.160 ms apart); one stream
    # has none, and nothing to price at it
    sends = {(r["run"], r["step"], r["repeat"]): r for r in steps}
    wave = sends[("h100-20261207-bf16-dummy-256-wave-admission", 1, 1)]
    assert wave["send_interval_ms"] == pytest.approx(0.1598, abs=1e-4)
    assert wave["as_sent_e2e_error"] > wave["e2e_error"]  # faster sends, a smaller cost
    one = sends[("h100-20261207-bf16-dummy-256-single-stream", 0, 1)]
    assert one["send_interval_ms"] is None and one["as_sent_e2e_error"] is None
    # each step's own SM clock at work, beside (not in) its prediction: at the same 700 W
    # cap the two H200s ran the 256-slot BF16 engine's 256-row step at 1,635 and 1,515 MHz
    # (the median of the telemetry samples in the step's window drawing >= 350 W, worked
    # out from telemetry.csv and step.json's start and end by hand: 26, 26 and 27 samples)
    clock = {(r["run"], r["step"], r["repeat"]): r["sm_clock_mhz"] for r in steps}
    assert clock[("h200-20261201-bf16-dummy-256-bend", 3, 1)] == 1635.0
    assert clock[("h200-20261204-bf16-dummy-256-decode-rows-to-256", 3, 1)] == 1515.0
    assert clock[("h200-20261204-bf16-dummy-256-decode-rows-to-256", 3, 2)] == 1515.0


def test_cli_cross_validate_refuses_a_run_dir():
    p = cli("model", "data/raw/runs/h200-20261129-bf16-dummy-target", "--cross-validate")
    assert p.returncode != 0
    assert "--cross-validate" in p.stderr and "RUN_DIR" in p.stderr


def test_row_factors_from_kv_line_intercepts(committed_runs):
    """An engine with no decode-row steps takes its row factors from its own KV lines'
    intercepts. FP8's context ladder (8 / 24 / 48 streams, 1K-12K tokens) gives them where
    its decode-rows run, left out, measured 1.17 at 24 rows and 1.01 at 48 (model.py's
    doc): the same kernel step, seen by another run."""
    from claimcheck.calibration.calibration import calibration

    runs = list(committed_runs)
    rows_run = next(r for r in runs
                    if r.name == "h200-20261201-fp8-hyperqwen-dummy-16k-decode-rows")
    others = [r for r in runs if r is not rows_run]
    choice = choose_for(rows_run, others)
    assert choice.rows_from_lines and choice.rows_base is None
    assert {p.run.name for p in choice.rows} == {
        "h200-20261202-fp8-hyperqwen-dummy-16k-context-ladder"}
    f = dict(calibration(choice, "fp8").row_factors)
    assert sorted(f) == [8, 24, 48]  # no closed loop of its own above 48 rows
    assert abs(f[8] - 1.0) < 0.02 and abs(f[24] - 1.17) < 0.02 and abs(f[48] - 1.01) < 0.02
    # with the decode-rows run in, its own steps are the term (not the lines)
    assert not choose_for(rows_run, runs).rows_from_lines


def test_fp8_rows_read_within_the_gemms_bucket_held_out(committed_runs):
    """The FP8 engine's decode step is 11.64 ms at 16 rows and 14.33 ms at 24 (its
    decode-rows run): CUTLASS's FP8 GEMM takes another tile above 16 rows. Held out, its
    16-row factor is the 8-row line intercept's (same bucket), not the 8 -> 24 blend."""
    from claimcheck.calibration.calibration import calibration
    from claimcheck.calibration.stepsim import predicted_step
    from claimcheck.model import simulator
    from claimcheck.readings import definitions as d

    runs = list(committed_runs)
    rows_run = next(r for r in runs
                    if r.name == "h200-20261201-fp8-hyperqwen-dummy-16k-decode-rows")
    cal = calibration(choose_for(rows_run, [r for r in runs if r is not rows_run]), "fp8")
    assert cal.row_buckets == (16, 64, 128)
    assert "scaled_mm_sm90_fp8_dispatch" in cal.row_factor_source
    f = dict(cal.row_factors)
    assert simulator.decode_row_factor(cal.row_factors, 16, cal.row_buckets) == f[8]
    step = next(s for s in rows_run.traces if s.timeline.streams == 16)
    tl = step.timeline
    measured = statistics.median(d.tpots_ms(tl))
    pred, _ = predicted_step(rows_run.engine[0], cal, [r.prompt_tokens for r in tl.requests],
                             [r.output_tokens for r in tl.requests], tl.streams)
    assert abs(pred["predicted_median_tpot_ms"] / measured - 1) < 0.02  # was +9.7%
    # the BF16 engine's GEMM has no buckets on record: every measured count is read
    bf16 = next(r for r in runs if r.name == "h200-20261129-bf16-dummy-ladder")
    assert calibration(choose_for(bf16, runs), "bf16").row_buckets == ()


def test_marlin_rows_read_within_its_16_row_blocks_held_out(committed_runs):
    """Marlin multiplies a 64-row slice in blocks of 16 rows: its H200 step is 17.83 ms at
    56 rows and 18.24 at 64 (one block count), 14.77 at 40. Held out, the 56-row step reads
    the 64-row factor of its block, not a blend with the 48-row one below it."""
    from claimcheck.calibration.calibration import calibration
    from claimcheck.model import simulator

    runs = list(committed_runs)
    rows_run = next(r for r in runs if r.name == MARLIN_ROWS_H200)
    cal = calibration(choose_for(rows_run, [r for r in runs if r is not rows_run]), "bf16")
    assert cal.row_buckets[:5] == (8, 16, 32, 48, 64)
    f = dict(cal.row_factors)
    assert 64 in f and not any(48 < n < 64 for n in f)
    assert simulator.decode_row_factor(cal.row_factors, 56, cal.row_buckets) == f[64]


def test_predict_names_each_terms_runs_and_what_it_borrowed():
    p = cli("predict", "--card", "h200", "--engine", "bf16-dummy-16k", "--protocol", "ladder",
            "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    src = out["term_sources"]
    # every engine's wave-admission runs on the card (three of the 256-slot BF16 engine's,
    # two of the int8 engine's of 2026-12-05)
    assert src["admission"]["runs"] == [
        "h200-20261201-bf16-dummy-256-wave-admission",
        "h200-20261204-bf16-dummy-256-wave-admission",
        "h200-20261205-w4a8-int8g-dummy-humming-16k-wave-admission",
        "h200-20261205-w4a8-int8g-dummy-humming-16k-wave-admission-2",
        "h200-20261206-bf16-dummy-256-wave-admission"]
    assert src["admission"]["borrowed_from"] == "bf16-dummy-256, w4a8-int8g-dummy-humming-16k"
    assert src["kv"]["runs"] == ["h200-20261202-bf16-dummy-16k-context-ladder"]
    assert src["kv"]["borrowed_from"] is None
    # no wave-admission of its own: the sequence prefill of the BF16 256-slot engine's (its
    # weight format's; since 2026-12-06); no cold first wave of its own (its runs recorded
    # no counters): the other engines'
    assert out["borrowed_terms"] == [
        "admission (bf16-dummy-256, w4a8-int8g-dummy-humming-16k)",
        "sequence (bf16-dummy-256)",
        "cold (bf16-dummy-256, w4a16-dummy-machete-16k, w4a16-dummy-marlin-16k, "
        "w4a8-int8g-dummy-humming-16k)"]
    text = cli("predict", "--card", "h200", "--engine", "bf16-dummy-16k", "--protocol",
               "ladder").stdout
    assert ("borrowed from another engine or card: admission (bf16-dummy-256, "
            "w4a8-int8g-dummy-humming-16k)") in text


def test_kv_and_rows_borrowed_across_engines_said(committed_runs):
    """FP8 on vLLM 0.33 has no KV-read or decode-row steps of its own: its KV read is the
    FP8 engine's (same weight format, KV dtype fp8, card) context-ladder lines, and its
    decode rows that engine's decode-rows run (another vLLM release), both said as
    borrowed."""
    runs = list(committed_runs)
    t = next(r for r in runs
             if r.name == "h200-20261202-fp8-hyperqwen-dummy-16k-vllm033-long-prompts")
    choice = choose_for(t, runs)
    src = term_sources(choice, "fp8-hyperqwen-dummy-16k-vllm033")
    assert src["kv"]["runs"] == ["h200-20261202-fp8-hyperqwen-dummy-16k-context-ladder"]
    assert src["kv"]["borrowed_from"] == "fp8-hyperqwen-dummy-16k"
    assert "borrowed from engine fp8-hyperqwen-dummy-16k" in choice.kv[0].why
    assert src["rows"]["runs"] == ["h200-20261201-fp8-hyperqwen-dummy-16k-decode-rows"]
    assert src["rows"]["borrowed_from"] == "fp8-hyperqwen-dummy-16k"
    # an engine with KV steps of its own keeps them
    own = next(r for r in runs if r.name == "h200-20261129-fp8-hyperqwen-dummy-16k-long-prompts")
    assert term_sources(choose_for(own, runs), "fp8-hyperqwen-dummy-16k")["kv"][
        "borrowed_from"] is None


def test_prefix_cache_hits_from_seed_policy_and_engine():
    from claimcheck.predict.protocolpredict import prefix_cache_hits

    assert prefix_cache_hits("fresh", True)["expected"] is False
    assert prefix_cache_hits(7, False)["expected"] is False
    assert prefix_cache_hits(7, None)["expected"] is None
    hit = prefix_cache_hits(7, True)
    assert hit["expected"] is True and hit["words"].startswith("MARKED")


def test_predict_marks_a_fixed_seed_on_a_prefix_caching_engine(tmp_path):
    import yaml

    from claimcheck.files.paths import CONFIG

    protos = yaml.safe_load((CONFIG / "protocols.yaml").read_text())["protocols"]
    fixed = {**protos["hyperqwen-batch"], "seed": 7}
    f = tmp_path / "protocols.yaml"
    f.write_text(yaml.safe_dump({"protocols": {"fixed-seed": fixed}}))
    # FP8 engine: prefix caching on in its config -> marked
    p = cli("predict", "--card", "h200", "--engine", "fp8-hyperqwen-dummy-16k", "--protocol",
            "fixed-seed", "--protocols-file", f, "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["prefix_cache"]["expected"] is True
    # bf16-dummy-16k: prefix_caching null in its config, its start log says False -> none
    p = cli("predict", "--card", "h200", "--engine", "bf16-dummy-16k", "--protocol",
            "fixed-seed", "--protocols-file", f)
    assert p.returncode == 0, p.stderr
    assert "prefix-cache hits: none (seed fixed at 7, but the engine's prefix caching is off)" \
        in p.stdout


def test_mixed_prefill_arithmetic_by_hand():
    from claimcheck.model import model as m
    from claimcheck.model import solve

    # last first token 1.0 s at k=1, 2.0 s at k=2, measured 1.2 s -> k = 1 + 0.2 / 1.0
    assert abs(solve.mixed_factor_from_time(1.2, 1.0, 2.0) - 1.2) < 1e-12
    assert abs(solve.mixed_factor_from_time(0.9, 1.0, 1.5) - 0.8) < 1e-12
    assert solve.mixed_factor_from_time(1.2, 1.0, 1.0) is None  # k moves nothing
    c = m.StepCost(weights_s=0.010, state_s=0.0, kv_s=0.0, compute_s=0.008)
    assert m.mixed_cost(c, 1.5).time_s == 0.008 * 1.5  # now compute-bound: 12 ms
    assert m.mixed_cost(c, 1.1).time_s == 0.010  # still memory-bound


def _toy():
    from claimcheck.model import model as m

    # 1 GB of weights at 1 TB/s (1 ms); 1 GFLOP a token at 100 TFLOP/s (10 us a token):
    # a 1,000-token chunk is 10 ms of compute, compute-bound
    shape = m.EngineShape(weight_bytes=1e9, state_bytes=0.0, kv_bytes_per_token=0.0,
                          flops_body_per_token=1e9, flops_head_per_token=0.0,
                          max_num_batched_tokens=4096, max_num_seqs=8)
    cal = m.Calibration(bandwidth_bytes_s=1e12, flops_s=1e14, request_overhead_s=0.0,
                        bandwidth_source="", compute_source="")
    return shape, cal


def test_mixed_prefill_charges_only_shared_prefill_steps():
    from dataclasses import replace as rep

    from claimcheck.model import simulator

    shape, cal = _toy()
    k = rep(cal, mixed_prefill_factor=1.5)
    # one request alone: its prefill step (10 ms) shares with nobody: unchanged
    one = [simulator.simulate(shape, c, [1000], [1], 1).timeline.requests[0].ttft_s
           for c in (cal, k)]
    assert abs(one[0] - 0.010) < 1e-9 and one[0] == one[1]
    # two prompts sent together share one 2,000-token step: 20 ms, then x1.5 = 30 ms
    two = [simulator.simulate(shape, c, [1000, 1000], [1, 1], 2).timeline.requests[0].ttft_s
           for c in (cal, k)]
    assert abs(two[0] - 0.020) < 1e-9 and abs(two[1] - 0.030) < 1e-9


def test_overhead_only_in_a_step_admitting_into_an_idle_engine():
    """Two 1,000-token prompts sent together into a 1,000-token budget, 2 output tokens
    each, 50 ms of per-request overhead. Step 1 admits the first into the idle engine: 10 ms
    of compute + 50 ms. Step 2 admits the second beside the first's decode (999 + 1 tokens):
    10 ms, no overhead (it was 60 ms while every admitting step paid it). Step 3 ends the
    second's prompt (1 token: the 1 ms weights read), step 4 its decode (1 ms)."""
    from dataclasses import replace as rep

    from claimcheck.model import simulator

    shape, cal = _toy()
    shape = rep(shape, max_num_batched_tokens=1000)
    cal = rep(cal, request_overhead_s=0.050)
    a, b = simulator.simulate(shape, cal, [1000, 1000], [2, 2], 2).timeline.requests
    assert a.token_times_s == pytest.approx((0.060, 0.070))
    assert b.token_times_s == pytest.approx((0.071, 0.072))


def test_mixed_factor_is_read_off_the_ladders_prefill(committed_runs):
    """The 256-slot BF16 engine's second H100 ladder, in sample: its nine one-wave KV steps'
    times to their last first token put the mixed-prefill factor at x1.017 (x0.951-x1.059);
    solved on their walls, mostly the 384 tokens of decode, the same steps put it at x1.02
    to x1.73 on the first H100 ladder (docs/model.md)."""
    from claimcheck.calibration.calibration import calibration

    runs = list(committed_runs)
    ladder = next(r for r in runs if r.name == "h100-20261207-bf16-dummy-256-context-ladder-2")
    cal = calibration(choose_for(ladder, runs), "bf16")
    assert cal.mixed_prefill_factor == pytest.approx(1.017, abs=0.001)
    assert "the measured time to their last first token" in cal.mixed_prefill_source
    assert "the median of x0.951-x1.059" in cal.mixed_prefill_source


def test_prefilled_s_is_first_send_to_the_last_first_token():
    """A hand-made timeline: sends at 1.0 and 1.2 s, first tokens at 1.5 and 1.4 s, last
    tokens at 2.0 and 3.0 s: prefilled 0.5 s (1.5 - 1.0), wall 2.0 s."""
    from claimcheck.readings.timeline import RequestTimeline, Timeline

    reqs = (RequestTimeline(start_s=1.0, ttft_s=0.5, prompt_tokens=10,
                            token_times_s=(1.5, 2.0), chunks=2),
            RequestTimeline(start_s=1.2, ttft_s=0.2, prompt_tokens=10,
                            token_times_s=(1.4, 3.0), chunks=2))
    tl = Timeline(streams=2, requests=reqs)
    assert tl.prefilled_s == pytest.approx(0.5) and tl.wall_s == pytest.approx(2.0)


def test_sequence_prefill_arithmetic_by_hand():
    from claimcheck.model import model as m
    from claimcheck.model import solve

    # wall 0.20 s at c = 0, 0.26 s at c = 1 ms (60 ms more: 60 prefilling requests-steps),
    # measured 0.23 s -> c = 1 ms x 0.03 / 0.06 = 0.5 ms
    assert abs(solve.sequence_cost_from_wall(0.23, 0.20, 0.26, 1e-3) - 0.5e-3) < 1e-15
    assert solve.sequence_cost_from_wall(0.17, 0.20, 0.26, 1e-3) < 0  # faster than the model
    assert solve.sequence_cost_from_wall(0.23, 0.20, 0.20, 1e-3) is None  # c moves nothing
    assert m.sequence_cost(0.010, 3, 0.002) == 0.010 + 3 * 0.002


def test_sequence_prefill_charges_each_prefilling_request_not_decode():
    from dataclasses import replace as rep

    from claimcheck.model import simulator

    shape, cal = _toy()
    c = rep(cal, sequence_prefill_s=0.004)
    # two 1,000-token prompts sent together share one step: 20 ms + 2 x 4 ms = 28 ms
    two = [simulator.simulate(shape, x, [1000, 1000], [1, 1], 2).timeline.requests[0].ttft_s
           for x in (cal, c)]
    assert abs(two[0] - 0.020) < 1e-9 and abs(two[1] - 0.028) < 1e-9
    # one prompt then 3 decode steps (1 GB at 1 TB/s: 1 ms each, not charged): 14 + 3 ms
    r = simulator.simulate(shape, c, [1000], [4], 1).timeline.requests[0]
    assert abs(r.ttft_s - 0.014) < 1e-9 and abs(r.token_times_s[-1] - 0.017) < 1e-9


def test_sequence_prefill_is_the_engines_own_waves_and_the_other_runs_under_cv(committed_runs):
    runs = list(committed_runs)
    waves = sorted(r.name for r in runs if r.name.endswith("bf16-dummy-256-wave-admission")
                   and r.provenance.card == "h200")  # the H100's run is another card's
    assert len(waves) == 3
    for name in waves:  # each wave-admission run's cost comes from the other two alone
        target = next(r for r in runs if r.name == name)
        choice = choose_for(target, [r for r in runs if r is not target])
        assert {p.run.name for p in choice.sequence} == set(waves) - {name}
    # another engine borrows the admission interval but not the sequence cost
    fp8 = next(r for r in runs if r.name == "h200-20261129-fp8-hyperqwen-dummy-16k-ninfer-32")
    choice = choose_for(fp8, runs)
    assert choice.admission and not choice.sequence
    assert "sequence" in term_sources(choice, "fp8-hyperqwen-dummy-16k")


def test_rows_beyond_are_closed_loops_above_the_better_sources_rows():
    """Hand-made picks: the decode-row term measured at 8, 24 and 48 rows; closed loops at
    16 and 64 streams: only the 64-stream one (above 48) extends the term."""
    from types import SimpleNamespace as NS

    from claimcheck.calibration.calibrate import Pick
    from claimcheck.calibration.rowterm import beyond_rows

    def pick(n):
        return Pick(NS(name=f"r{n}"), NS(timeline=NS(streams=n), record={"dir": f"s{n}"}),
                    "closed loop")

    rows = tuple(pick(n) for n in (8, 24, 48))
    got = beyond_rows(rows, (pick(16), pick(64)))
    assert [p.step.timeline.streams for p in got] == [64]
    assert "above the 48 rows" in got[0].why
    assert beyond_rows((), (pick(64),)) == () and beyond_rows(rows, ()) == ()


def test_held_out_marlin_rows_take_its_own_closed_loops_above_its_lines(committed_runs):
    """Marlin's decode-rows run left out: its rows are its KV lines' intercepts (8 / 24 / 48)
    and, above 48, its own 64-stream closed loops (ladder, hyperqwen-batch), which its
    decode-rows run measured as a one-wave step at 18.25 ms: the factor there is that
    step's 18.23 ms over the model's, within 3% of the one-wave factor (x1.232)."""
    from claimcheck.calibration.calibration import calibration

    runs = list(committed_runs)
    held = next(r for r in runs if r.name == MARLIN_ROWS_H200)
    choice = choose_for(held, [r for r in runs if r is not held])
    assert {p.step.timeline.streams for p in choice.rows_beyond} == {64}
    assert {p.run.name for p in choice.rows_beyond} == {
        "h200-20261204-w4a16-dummy-marlin-16k-ladder",
        "h200-20261204-w4a16-dummy-marlin-16k-hyperqwen-batch"}
    assert held.name not in term_sources(choice, "w4a16-dummy-marlin-16k")["rows"]["runs"]
    assert {(p.run.name, p.step.record["dir"]) for p in choice.rows_beyond} <= choice.steps()
    f = dict(calibration(choice, "fp16").row_factors)
    assert sorted(f) == [8, 24, 48, 64] and abs(f[64] / 1.232 - 1) < 0.03


def test_kv_read_borrowed_across_weight_formats_by_kv_dtype(committed_runs):
    """Marlin's and Machete's context ladders left out, Marlin (W4A16, FP8 KV) borrows the
    KV read of the int8 engine's two context ladders first: the same weight format, KV
    dtype and card (2026-12-05). With those left out too, Marlin has no KV-read steps of
    its weight format: it borrows the FP8 engine's context-ladder lines (KV dtype fp8,
    another weight format), said so, and not that engine's mixed-prefill factor (a
    GEMM's): its own is 1."""
    from claimcheck.calibration.calibration import calibration

    runs = list(committed_runs)
    held = next(r for r in runs if r.name.endswith("w4a16-dummy-marlin-16k-context-ladder"))
    out = {held.name, held.name.replace("marlin", "machete")}
    choice = choose_for(held, [r for r in runs if r.name not in out])
    src = term_sources(choice, "w4a16-dummy-marlin-16k")
    assert src["kv"]["runs"] == ["h200-20261205-w4a8-int8g-dummy-humming-16k-context-ladder",
                                 "h200-20261205-w4a8-int8g-dummy-humming-16k-context-ladder-2"]
    assert "same weight format w4a16, KV dtype fp8 and card h200" in choice.kv[0].why
    out |= {r.name for r in runs if "int8g" in r.name and "context-ladder" in r.name}
    choice = choose_for(held, [r for r in runs if r.name not in out])
    src = term_sources(choice, "w4a16-dummy-marlin-16k")
    assert src["kv"]["runs"] == ["h200-20261202-fp8-hyperqwen-dummy-16k-context-ladder"]
    assert src["kv"]["borrowed_from"] == "fp8-hyperqwen-dummy-16k"
    assert "weight format fp8, not w4a16" in choice.kv[0].why
    cal = calibration(choice, "fp16")
    assert cal.kv_source.startswith("borrowed from engine fp8-hyperqwen-dummy-16k")
    assert cal.mixed_prefill_factor == 1.0 and cal.mixed_prefill_source == ""


def test_kv_read_borrowed_from_the_same_weight_format_first(committed_runs):
    """Marlin's context ladder alone left out: Machete's (W4A16 too, FP8 KV; its run
    interrupted in step 9, 8 complete steps, lines at 8 and 24 streams) comes before the
    FP8 engine's."""
    runs = list(committed_runs)
    held = next(r for r in runs if r.name.endswith("w4a16-dummy-marlin-16k-context-ladder"))
    choice = choose_for(held, [r for r in runs if r is not held])
    src = term_sources(choice, "w4a16-dummy-marlin-16k")
    assert src["kv"]["runs"] == ["h200-20261204-w4a16-dummy-machete-16k-context-ladder"]
    assert src["kv"]["borrowed_from"] == "w4a16-dummy-machete-16k"


def test_native_kernel_compute_stands_in_from_a_dense_engine(committed_runs):
    """Machete's single-stream and long-prompts runs (its long prompts) left out: Machete is
    built for the H200's architecture (hopper), so a dense 16-bit engine's held prefill
    stands in for its compute (before Marlin's, another kernel's, 333 TFLOP/s), said so."""
    runs = list(committed_runs)
    held = next(r for r in runs if r.name.endswith("w4a16-dummy-machete-16k-single-stream"))
    out = {held.name, held.name.replace("single-stream", "long-prompts")}
    choice = choose_for(held, [r for r in runs if r.name not in out])
    assert "marlin" not in choice.compute.run.name
    assert choice.compute.run.engine[1]["compute_dtype"] == "bf16"
    assert "built for this card's architecture" in choice.compute.why
    assert term_sources(choice, "w4a16-dummy-machete-16k")["compute"]["borrowed_from"]
    # Marlin (built for ampere and ada) never takes a dense engine's compute
    marlin = next(r for r in runs if r.name.startswith("h200-")
                  and r.name.endswith("w4a16-dummy-marlin-16k-single-stream"))
    mc = choose_for(marlin, [r for r in runs if r is not marlin]).compute
    assert "marlin" in mc.run.name


def test_engine_fresh_from_the_prompt_counter_by_hand():
    """A step's engine is fresh when its prompt-token counter read 0 before it; unknown
    where the step recorded no counters."""
    from types import SimpleNamespace

    from claimcheck.calibration.wavesources import engine_fresh

    def step(before):
        rec = {"server_counters": {"before": {"counters": before}}} if before else {}
        return SimpleNamespace(record=rec)
    key = 'vllm:prompt_tokens_total{engine="0"}'
    assert engine_fresh(step({key: 0.0, "vllm:generation_tokens_total": 0.0})) is True
    assert engine_fresh(step({key: 8192.0})) is False
    assert engine_fresh(step(None)) is None
    # a counter that no server writes: refused, naming the step and the counter
    for bad in (-1.0, float("inf"), float("nan")):
        s = step({key: bad})
        s.record["dir"] = "00-c8-r1"
        with pytest.raises(ValueError, match=r"step 00-c8-r1: server_counters before: "
                           r"vllm:prompt_tokens_total is .*, not a count >= 0"):
            engine_fresh(s)


def test_cold_start_from_other_engines_first_waves(committed_runs):
    """Machete's context ladder left out (the first protocol on its engine: 8 prompts of
    1,024 tokens, median TTFT 1.595 s): Machete has no other cold first wave, so the term is
    the median over the other engines' (Marlin's context ladder, BF16's three
    decode-rows-to-256 runs and the int8 engine's wave admission, each the first on its
    engine); the 2026-12-02 runs recorded no counters and are not among them."""
    from claimcheck.calibration.calibration import calibration

    runs = list(committed_runs)
    held = next(r for r in runs if r.name.endswith("w4a16-dummy-machete-16k-context-ladder"))
    choice = choose_for(held, [r for r in runs if r is not held])
    src = term_sources(choice, "w4a16-dummy-machete-16k")
    assert src["cold"]["runs"] == ["h200-20261204-bf16-dummy-256-decode-rows-to-256",
                                   "h200-20261204-w4a16-dummy-marlin-16k-context-ladder",
                                   "h200-20261205-w4a8-int8g-dummy-humming-16k-wave-admission",
                                   "h200-20261206-bf16-dummy-256-decode-rows-to-256",
                                   "h200-20261206-bf16-dummy-256-decode-rows-to-256-2"]
    assert src["cold"]["borrowed_from"] == ("bf16-dummy-256, w4a16-dummy-marlin-16k, "
                                            "w4a8-int8g-dummy-humming-16k")
    cal = calibration(choice, "fp16")
    # 0.303 s, the median of the five (+196, +228, +303, +381, +522 ms), since only a step
    # admitting into an idle engine takes the per-request overhead and the mixed-prefill
    # factor is read off the prefill (twenty-fifth session); 0.276 s before (+216, +244,
    # +276, +429, +515 ms); 0.353 s, the median of the four, before the third BF16
    # decode-rows run; 0.43 s before the second (its first wave met 0.15 s less than
    # predicted), 0.45-0.60 before each admitting step took the per-request overhead (then a
    # first wave's admission took none of it, and the cold term carried more)
    assert cal.cold_start_s == pytest.approx(0.303, abs=0.005)
    # and its step 0, predicted cold, is within 10% end to end (16.7% warm; +9.8% now, +9.5%
    # with the 0.276 s term, +7.9% with 0.353 s, +6.4% with 0.43 s, under 6% before the
    # overhead moved to the admitting step)
    rows = {(r["step"], r["repeat"]): r for r in cv.held_out_rows(held, runs)}
    assert rows[(0, 1)]["e2e_error"] == pytest.approx(0.098, abs=0.002)


def test_output_lag_is_each_engines_own_else_its_releases_on_the_card(committed_runs):
    """The output lag, solved per one-wave step from its measured first token: Marlin's own
    steps (decode rows to 64, context ladder) put it near 0.7 of a step, Machete's (its
    context ladder) near 0.33; with Machete's context ladder left out it has no one-wave
    step of its own and takes the other vLLM 0.26.0 engines' on the card, said as
    borrowed, never a vLLM 0.33.0 run's."""
    from claimcheck.calibration.calibration import calibration

    runs = list(committed_runs)
    marlin = next(r for r in runs if r.name == MARLIN_ROWS_H200)
    cal = calibration(choose_for(marlin, runs), "fp16")
    assert 0.6 < cal.output_lag < 0.8
    assert MARLIN_ROWS_H200 in cal.output_lag_source
    held = next(r for r in runs if r.name.endswith("w4a16-dummy-machete-16k-context-ladder"))
    own = calibration(choose_for(held, runs), "fp16")
    assert 0.25 < own.output_lag < 0.45
    choice = choose_for(held, [r for r in runs if r is not held])
    src = term_sources(choice, "w4a16-dummy-machete-16k")
    assert src["lag"]["borrowed_from"] and "machete" not in src["lag"]["borrowed_from"]
    assert not any("vllm033" in n for n in src["lag"]["runs"])
    assert calibration(choice, "fp16").output_lag > own.output_lag


def test_predict_for_a_fresh_engine_adds_the_cold_start_to_its_first_step(committed_runs):
    """--fresh-engine: the protocol's first step pays the cold start (Machete's own context
    ladder's first wave, about 0.78 s over the warm model); every other step is as warm."""
    from claimcheck.config.configfiles import load_protocols
    from claimcheck.predict.protocolpredict import predict_protocol

    runs, proto = list(committed_runs), load_protocols()["context-ladder"]
    warm = predict_protocol(runs, "h200", "w4a16-dummy-machete-16k", proto)
    fresh = predict_protocol(runs, "h200", "w4a16-dummy-machete-16k", proto,
                             fresh_engine=True)
    cold = fresh.calibration.cold_start_s
    assert 0.7 < cold < 0.9
    w, f = warm.report["steps"], fresh.report["steps"]
    assert f[0]["predicted_median_ttft_s"] == pytest.approx(
        w[0]["predicted_median_ttft_s"] + cold)
    assert f[0]["predicted_e2e_tok_s"] < w[0]["predicted_e2e_tok_s"]
    assert [s["predicted_e2e_tok_s"] for s in f[1:]] == [s["predicted_e2e_tok_s"] for s in w[1:]]
    assert "freshly started" in fresh.report["assumptions"]
    assert "already warm" in warm.report["assumptions"]


def test_fresh_engine_on_a_card_with_no_run_is_refused():
    p = cli("predict", "--card", "rtx3090", "--engine", "w4a16-hyperqwen", "--protocol",
            "ladder", "--fresh-engine")
    assert p.returncode != 0
    assert ("--fresh-engine: rtx3090 has no committed run, so no cold start measured there; "
            "a prediction carried to it takes the engine warm") in p.stderr
