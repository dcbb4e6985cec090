"""Issue 42 items 3 and 5: the article's RTX 3090 figures (seed 000's Update: W4A16, 390 W)
predicted from the H200's committed runs alone, every term carried by the 3090's datasheet;
no run, ceiling or figure of the 3090 feeds a term."""

import csv
import dataclasses
import json
import statistics

import pytest

from claimcheck.calibration.calibrate import run_key
from claimcheck.calibration.picks import run_kernel
from claimcheck.config.configfiles import load_engines, load_protocols
from claimcheck.files.paths import CONFIG, RAW
from claimcheck.model import model as m
from claimcheck.predict import carry, carry_table, kernelwords
from claimcheck.runs.runrecord import provenance_of
from tests._cli import cli

H200_BF16_DENSE, RTX3090_FP16_DENSE, RTX3090_BW = 989.4, 71.0, 936.0
RUNS = RAW / "runs"


@pytest.fixture(scope="module")
def runs(committed_runs):
    return list(committed_runs)


@pytest.fixture(scope="module")
def claims():
    with open(RAW / "claims.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def predicted():
    r = cli("predict", "--card", "rtx3090", "--power-limit", "390", "--engine",
            "w4a16-hyperqwen", "--protocol", "ladder", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_predict_prints_every_step_and_term(predicted, runs):
    assert [s["streams"] for s in predicted["steps"]] == [1, 8, 16, 32, 64]
    # the H200's KV pool is its memory less its weights: not the 3090's, not carried
    assert predicted["engine_shape"]["kv_pool_tokens"] is None
    assert "h200's is not carried" in predicted["engine_shape"]["kv_pool_source"]
    for s in predicted["steps"]:
        assert s["predicted_median_tpot_ms"] > 0 and s["predicted_e2e_tok_s"] > 0
    terms = predicted["carried"]["terms"]
    assert {"eta", "compute_share", "power_clock_ratio", "request_overhead_s",
            "admission_interval_s"} <= set(terms)
    # the W4A16 runs on the H200 are Marlin on Hopper, off the kernel's architectures: eta
    # and compute stand in from the 16-bit path, said assumed, naming why and which runs
    assert terms["eta"]["status"] == terms["compute_share"]["status"] == "assumed"
    # each run's kernel as its start log names it: 6 Marlin runs, 13 Humming runs (the int8
    # MLP engine's, 3 of 2026-12-04 and 10 with steps of 2026-12-05; no architecture on
    # record for Humming) and 5 Machete runs
    assert ("the w4a16 runs on h200 are not carried, as 6 ran Marlin, built for Ampere and "
            "Ada (the NVIDIA H200 is Hopper), 13 Humming and 5 Machete (built for Hopper), "
            "kernels other than the one w4a16 runs on the NVIDIA GeForce RTX 3090 (Marlin)"
            ) in terms["eta"]["rule"]
    assert "h200-20261204-w4a16-dummy-marlin-16k-ladder" in terms["eta"]["rule"]
    assert "h200-20261204-w4a16-dummy-machete-16k-ladder" in terms["eta"]["rule"]
    # the shape is the 3090's kernel's (Marlin), although Machete's engine sorts first by name
    # and its description names Marlin
    assert predicted["carried"]["shape_engine"] == "w4a16-dummy-marlin-16k"
    # nor the per-request overhead: that run's one-stream prompts hold Marlin's prefill
    assert "w4a16" not in terms["request_overhead_s"]["source_runs"][0]
    # where compute (every position at the int8 split rate) meets memory, assumed as its
    # terms are: at 57 streams (test_the_article_bend_between_16_and_32_streams); the step
    # leaves the memory line well before, by the bend exponent
    assert terms["bend_streams"]["status"] == "assumed"
    assert 50 < terms["bend_streams"]["value"] < 60
    # the calibration is the terms by the rules, by hand: eta x 936 GB/s; the 16-bit rate
    # share x 71 TFLOP/s x (390 / 350)^(1/3), joined with the MLP's int8 share x 284 TOP/s x
    # the same ratio, 0.703 of the FLOPs at that (test_the_int8_prefill_term_and_its_rate)
    c = predicted["calibration"]
    assert c["bandwidth_gb_s"] == pytest.approx(terms["eta"]["value"] * RTX3090_BW)
    ratio = (390 / 350) ** (1 / 3)
    assert terms["power_clock_ratio"]["value"] == pytest.approx(ratio)
    rest = terms["compute_share"]["value"] * RTX3090_FP16_DENSE * 1e12 * ratio
    mlp = terms["int8_mlp_share"]["value"] * 284e12 * ratio
    assert c["flops_s"] == pytest.approx(1 / (0.70277 / mlp + 0.29723 / rest), rel=1e-4)
    # the share is the H200's own effective BF16 rate over its datasheet's, moved from the
    # SM clock its telemetry read in that step to the 1,830 MHz the datasheet's 989.4 is at
    bf16 = [r for r in runs if run_key(r)[1] == predicted["carried"]["eta_engine"]]
    assert bf16 and run_key(bf16[0])[2] == "bf16"
    rule = terms["compute_share"]["rule"]
    effective = float(rule.split("effective ")[1].split(" ")[0])
    clock = _rule_clock(rule)
    assert 1500 < clock < 1700  # at the cap, below the 1,980 MHz it reads when not capped
    assert abs(clock - _busy_clock(RUNS / terms["compute_share"]["source_runs"][0], 2)) < 50
    assert terms["compute_share"]["value"] == pytest.approx(
        effective / H200_BF16_DENSE * 1830 / clock, rel=2e-3)


def _rule_clock(rule):
    return float(rule.split("median SM clock of ")[1].split(" MHz")[0].replace(",", ""))


def _busy_clock(run_dir, step):
    """The median SM clock of a run's telemetry rows drawing half the limit or more inside
    one step's client window (steps.json; the model reads the load window inside it), read
    here with the csv module alone."""
    rec = json.loads((run_dir / "steps.json").read_text())[step]
    with open(run_dir / "telemetry.csv", newline="") as f:
        clocks = [float(r["sm_clock_mhz"]) for r in csv.DictReader(f)
                  if rec["start_unix_s"] <= float(r["t_unix_s"]) <= rec["end_unix_s"]
                  and float(r["power_w"]) >= 0.5 * float(r["power_limit_w"])]
    return statistics.median(clocks)


@pytest.mark.xfail(strict=True, reason="issue 42 open: compute at the carried int8 rate "
                   "meets memory at 57 streams; the step leaves the memory line earlier by "
                   "the bend exponent fitted on the H200's BF16 rows (p 1.95), x1.09 at 16 "
                   "streams against the article's 1.01x, so no one meeting point sits at "
                   "16-32")
def test_the_article_bend_between_16_and_32_streams(predicted):
    assert 16 < predicted["carried"]["terms"]["bend_streams"]["value"] < 32


def test_no_3090_number_feeds_a_term(predicted, runs):
    h200 = {r.name for r in runs if run_key(r)[0] == "h200"}
    for name, t in predicted["carried"]["terms"].items():
        assert t["source_runs"] or name == "power_clock_ratio", name
        assert set(t["source_runs"]) <= h200, name
    assert predicted["carried"]["from_card"] == "h200"
    # no measured 3090 ceiling (ceilings.csv: HyperQwen's 63 TFLOP/s) stands in for compute
    assert "ceiling" not in predicted["calibration"]["compute_source"]


def test_each_run_names_its_kernel_from_its_start_log(runs):
    kernels = {r.name: run_kernel(r) for r in runs}
    # "Using MacheteLinearKernel for AutoGPTQLinearMethod" (no --linear-backend) and
    # "Using MarlinLinearKernel ..." (--linear-backend marlin); BF16 names none
    assert kernels["h200-20261204-w4a16-dummy-machete-16k-ladder"] == "machete"
    assert kernels["h200-20261204-w4a16-dummy-marlin-16k-ladder"] == "marlin"
    assert kernels["h200-20261202-bf16-dummy-16k-vllm033-ladder"] is None


def test_int8_activations_read_from_the_start_log(runs):
    from claimcheck.readings.serverlog import int8_activation_scheme
    by = {r.name: r for r in runs}
    # the per-group int8 config: "Using HummingLinearKernel for CompressedTensorsWNA8Int"
    assert by["h200-20261204-w4a8-int8g-dummy-humming-16k-ladder"].int8_activations == \
        "CompressedTensorsWNA8Int"
    # the per-token one was built as FP8 W4A8 on the H200, not int8; W4A16 has none
    assert int8_activation_scheme(
        "INFO [compressed_tensors_w4a8_fp8.py:70] Using HummingLinearKernel for "
        "CompressedTensorsW4A8Fp8") is None
    assert by["h200-20261204-w4a16-dummy-marlin-16k-ladder"].int8_activations is None
    # kept in the run record the findings read back (its steps are a series of their own)
    from claimcheck.findings.stepframe import engine_rows
    from claimcheck.runs.run import from_record, to_record
    r = by["h200-20261204-w4a8-int8g-dummy-humming-16k-ladder"]
    back = from_record(json.loads(json.dumps(to_record(r))), "record")
    assert back.int8_activations == "CompressedTensorsWNA8Int"
    assert engine_rows([back])["weight_format"].tolist() == ["w4a16:humming+int8"]


def test_the_int8_prefill_term_and_its_rate(predicted):
    t = predicted["carried"]["terms"]["int8_mlp_share"]
    assert t["status"] == "carried"
    assert t["source_runs"] == ["h200-20261204-w4a8-int8g-dummy-humming-16k-single-stream"]
    # every position, decode too: vLLM applies a layer's quantization on every forward,
    # and seed 001 has more int8 layers raising the 64-stream batch figure
    assert "every position, prompt or decode, at" in t["rule"]
    assert ("seed 001 reports a higher 64-stream batch figure with every layer int8"
            in t["rule"])
    # no claim's number is written in the code's words
    assert "1,222" not in t["rule"] and "1,035" not in t["rule"]
    cal = predicted["calibration"]
    # the 3090's rate by the rule's own numbers: 0.703 of the FLOPs at the share of 284
    # TOP/s x the clock ratio, the rest at the 16-bit rate (share x 71 x the ratio)
    ratio = (390 / 350) ** (1 / 3)
    rest = predicted["carried"]["terms"]["compute_share"]["value"] * 71e12 * ratio
    want = 1 / (0.70277 / (t["value"] * 284e12 * ratio) + 0.29723 / rest)
    assert cal["flops_s"] == pytest.approx(want, rel=1e-4)
    assert cal["flops_s"] > rest and cal["prefill_flops_s"] is None


def test_the_bend_exponent_from_the_standing_in_paths_rows(predicted, runs):
    """The bend is the 16-bit path's, the path whose eta and compute stand in (the H200's
    W4A16 runs are Marlin off its architectures): fitted on the H200's BF16 decode rows
    alone, said carried, and the exponent is the fit of the points its rule lists."""
    t = predicted["carried"]["terms"]["bend_exponent"]
    assert t["status"] == "carried"
    bf16 = {r.name for r in runs if run_key(r)[:1] == ("h200",) and run_key(r)[2] == "bf16"}
    assert t["source_runs"] and set(t["source_runs"]) <= bf16
    assert "the bf16 path (standing in for w4a16, as for eta and compute)" in t["rule"]
    pts = _rule_points(t["rule"])
    assert len(pts) >= 6
    from claimcheck.model import carry as cc
    assert t["value"] == pytest.approx(cc.fit_bend_exponent(pts), abs=0.05)
    assert predicted["calibration"]["bend_exponent"] == t["value"]


def _rule_points(rule):
    """(ratio, factor) pairs from a bend rule's "N rows: compute R x memory, xF" list."""
    out = []
    for part in rule.split(" rows: ")[1:]:
        ratio = float(part.split("compute ")[1].split(" x memory")[0])
        factor = float(part.split(", x")[1].split(",")[0].split(")")[0])
        out.append((min(ratio, 1 / ratio), factor))
    return out


def test_not_carried_words_by_kernel():
    h200, r3090 = "NVIDIA H200", "NVIDIA GeForce RTX 3090"
    assert kernelwords.not_carried_words({"marlin": ["a"]}, "w4a16", "hopper", h200, r3090) == (
        "its kernel, Marlin, was built for Ampere and Ada, and the NVIDIA H200 is Hopper")
    assert kernelwords.not_carried_words({"machete": ["a", "b"]}, "w4a16", "hopper", h200,
                                   r3090) == ("their kernel, Machete, built for Hopper, is not "
                                              "the one w4a16 runs on the NVIDIA GeForce RTX "
                                              "3090 (Marlin)")
    # the target's kernel first, whatever the dict's order
    assert kernelwords.not_carried_words({"machete": ["c"], "marlin": ["a", "b"]}, "w4a16",
                                   "hopper", h200, r3090) == (
        "2 ran Marlin, built for Ampere and Ada (the NVIDIA H200 is Hopper) and 1 Machete "
        "(built for Hopper), not the one w4a16 runs on the NVIDIA GeForce RTX 3090 (Marlin)")
    # no run of the target's kernel; a run whose log names none is said last
    assert kernelwords.not_carried_words({None: ["d"], "machete": ["c"], "humming": ["e", "f"]},
                                   "w4a16", "hopper", h200, r3090) == (
        "2 ran Humming, 1 Machete (built for Hopper), kernels other than the one w4a16 runs "
        "on the NVIDIA GeForce RTX 3090 (Marlin) and 1 whose start logs name no kernel")


def test_a_run_of_the_format_is_used_when_one_exists(runs):
    # an FP8 engine: the H200 has FP8 runs, so eta is that format's own, carried
    spec = load_engines()["fp8-hyperqwen-dummy-16k-vllm033"]
    _, eta_engine, version, status = carry.pick_engines(runs, "h200", spec, None)
    assert (eta_engine, version, status) == ("fp8-hyperqwen-dummy-16k-vllm033", "0.33.0",
                                             "carried")


def _ladder(runs, claims):
    spec = load_engines()["w4a16-hyperqwen"]
    rows = carry_table.carried_rows(runs, [c for c in claims if c["id"].startswith(
        "article-ladder-") and not c["id"].endswith(("-log", "-logline"))], spec,
        load_protocols(CONFIG / "protocols.yaml"))
    return {r["claim_id"]: r for r in rows}


def test_memory_bound_ladder_steps_within_ten_percent(runs, claims):
    rows = _ladder(runs, claims)
    assert len(rows) == 10  # median TPOT and end to end at 1, 8, 16, 32, 64 streams
    assert all(r["local_card"] == "h200" and "rtx3090" not in r["term_source_runs"]
               for r in rows.values())
    # the article's 1-16 stream steps (its own ladder: 1.02-1.03x the memory-only step)
    for n in (1, 8, 16):
        for kind in ("tpot", "e2e"):
            r = rows[f"article-ladder-{n}-{kind}"]
            assert abs(r["predicted_over_published"] - 1) < 0.10, r


def test_done_when_every_ladder_figure_within_ten_percent(runs, claims):
    """Issue 42's done-when: the article's ten ladder figures (median TPOT and end to end at
    1, 8, 16, 32 and 64 streams) within 10%, their median within 5%. Met once the model
    spent each request's per-request overhead in the engine step that admits it rather
    than on its way to the scheduler (seen in the H200's long-prompts timelines, not in any
    3090 figure): before, 9 of 10 within 10%, median 5.2%, the 32-stream end to end -10.6%.
    With the second H200 decode-rows-to-256 run (2026-12-06; its rows enter the bend fitted
    on the H200's BF16 rows) the 32-stream end to end reads -8.6% (-9.8% before it), the
    median 4.1% (4.9%); with the 256-slot engine's H200 runs of the twenty-first session (a
    second bend, a third decode-rows-to-256) -8.1% and 3.7%. With the per-request overhead
    spent only by a step admitting into an idle engine and the mixed-prefill factor read off
    the ladders' prefill (twenty-fifth session) -8.9% and 4.2%."""
    ladder = _ladder(runs, claims)
    errs = [abs(r["predicted_over_published"] - 1) for r in ladder.values()]
    assert max(errs) < 0.10 and statistics.median(errs) < 0.05
    # every figure under the article's, the 64-stream median TPOT closest: -0.02% (+1.5%
    # over before the twenty-fifth session's model, +0.75% before the twenty-first
    # session's runs, -0.8% before the second decode-rows run)
    err = {k: r["predicted_over_published"] - 1 for k, r in ladder.items()}
    assert max(err, key=err.get) == "article-ladder-64-tpot"
    assert -0.005 < err["article-ladder-64-tpot"] < 0.0
    assert err["article-ladder-32-e2e"] == pytest.approx(-0.089, abs=0.001)


def test_table_reads_each_metric_from_the_prediction(runs, claims, predicted):
    spec = load_engines()["w4a16-hyperqwen"]
    rows = {r["claim_id"]: r for r in carry_table.carried_rows(
        runs, claims, spec, load_protocols(CONFIG / "protocols.yaml"))}
    # no speculation only: HyperQwen's DFlash single-stream 127 tok/s is not predicted
    assert "hyperqwen-127-single" not in rows
    assert {"article-batch-pass1-e2e", "article-batch-nocache-b-log", "article-long-16-log",
            "article-ladder-64-logline", "hyperqwen-1035-front"} <= set(rows)
    ladder = {s["streams"]: s for s in predicted["steps"]}
    # e2e: the predict command's own step; TPOT figures: streams x 1000 / predicted TPOT
    assert rows["article-ladder-32-e2e"]["predicted_tok_s"] == pytest.approx(
        ladder[32]["predicted_e2e_tok_s"])
    assert rows["article-ladder-8-tpot"]["predicted_tok_s"] == pytest.approx(
        8 * 1000 / ladder[8]["predicted_median_tpot_ms"])
    # the 64-stream log line (registry metric blank, 'metric=engine_log_line' in assumed)
    assert rows["article-ladder-64-logline"]["metric"] == "engine_log_line"
    # a log line: R running over one decode step at mid-output context, joined by the bend
    # exponent as the simulation joins a decode step; the long-prompt line at 16 streams
    # had 15 running (streams_running)
    t = carry.carried_terms(runs, "rtx3090", spec, 390, "0.33.0")
    cal = t["calibration"]
    step = m.step_cost_sum(t["shape"], cal, 15, 15 * (7681 + 255), 15, 15)
    p = cal.bend_exponent
    assert p is not None
    by_hand = (step.memory_s ** p + step.compute_s ** p) ** (1 / p)
    assert rows["article-long-16-log"]["predicted_tok_s"] == pytest.approx(15 / by_hand)
    # HyperQwen's own figures at their 250 W: the power term moves compute only
    t250 = carry.carried_terms(runs, "rtx3090", spec, 250, "0.33.0")
    assert rows["hyperqwen-1035-front"]["power_limit_w"] == 250
    assert t250["calibration"].bandwidth_bytes_s == t["calibration"].bandwidth_bytes_s
    assert t250["calibration"].flops_s / t["calibration"].flops_s == pytest.approx(
        (250 / 390) ** (1 / 3))


@pytest.mark.parametrize("args, words", [
    (["--card", "h200", "--engine", "bf16-dummy", "--power-limit", "500"],
     "--power-limit: h200 has committed runs"),
    (["--card", "rtx3090", "--engine", "w4a16-hyperqwen", "--power-limit", "-5"],
     "--power-limit: must be a number of W > 0, got -5.0"),
    (["--card", "rtx3090", "--engine", "w4a16-hyperqwen", "--power-limit", "390",
      "--verify", "1"], "--verify: plans a run"),
])
def test_power_limit_refusals_name_the_option(args, words):
    r = cli("predict", "--protocol", "ladder", *args)
    assert r.returncode == 2 and words in r.stderr, r.stderr


def test_power_rule_grounded_in_the_h200_telemetry(runs):
    # the H200's committed telemetry: at its 700 W cap (throttle bit 0x4) the SM clock falls
    # below its 1,980 MHz, the memory clock stays 3,201 MHz at every draw
    tel = carry.telemetry_at_cap(runs, "h200")
    assert tel["capped_samples"] > 0 and tel["power_w_capped"] == pytest.approx(700, rel=0.03)
    assert tel["sm_mhz_free"] == 1980 and tel["sm_mhz_capped"] < 0.9 * 1980
    assert tel["mem_mhz"] == [3201.0]
    assert carry.telemetry_at_cap(runs, "rtx3090") == {}


def _relabel(run, engine, fmt, extra):
    raw = dict(run.provenance.raw)
    raw["engine"] = engine
    raw["engine_config"] = {**raw["engine_config"], "weight_format": fmt, "extra_args": extra}
    prov = provenance_of(raw)  # every typed field from the relabelled record
    return dataclasses.replace(run, path=run.path.with_name(
        run.name.replace("fp8-hyperqwen-", f"{engine}-")), provenance=prov)


def test_a_w4a16_run_plugs_in_marlin_first_where_marlin_is_native(runs):
    # stand-ins for W4A16 runs: the FP8 vLLM 0.33.0 engine's runs relabelled, once as a
    # Marlin engine and once as a Machete one (the 3090's path is Marlin)
    src = [r for r in runs if run_key(r)[1] == "fp8-hyperqwen-dummy-16k-vllm033"]
    stand = [r for r in runs if run_key(r)[2] != "w4a16"] + [
        _relabel(r, "w4a16-machete", "w4a16", []) for r in src] + [
        _relabel(r, "w4a16-marlin", "w4a16", ["--linear-backend", "marlin"]) for r in src]
    spec = load_engines()["w4a16-hyperqwen"]
    # a local card of Marlin's own architecture: the Marlin run gives shape, eta and compute
    shape_e, eta_e, _, status = carry.pick_engines(stand, "h200", spec, "0.33.0", "ampere")
    assert (shape_e, eta_e, status) == ("w4a16-marlin", "w4a16-marlin", "carried")
    # the H200 is Hopper: the Marlin run gives the shape (its weights as the run measured
    # them, not weights.csv's 16 GB), and the BF16 path stands in for eta and compute
    t = carry.carried_terms(stand, "rtx3090", spec, 390, "0.33.0")
    assert t["shape_engine"] == "w4a16-marlin"
    assert run_key(next(r for r in runs if run_key(r)[1] == t["eta_engine"]))[2] == "bf16"
    assert t["terms"]["eta"].status == t["terms"]["compute_share"].status == "assumed"
    shape, _ = src[0].engine
    assert t["shape"].weight_bytes == shape.weight_bytes
    assert all(s.startswith("h200-") for s in t["terms"]["eta"].source_runs)


@pytest.mark.parametrize("fmt, arch, foreign", [
    ("w4a16", "hopper", True), ("w4a16", "ampere", False), ("w4a16", "ada", False),
    ("w4a16", None, False), ("bf16", "hopper", False), ("fp8", "ampere", False)])
def test_a_kernel_off_its_architectures_is_foreign(fmt, arch, foreign):
    why = carry.foreign_kernel(fmt, arch, "card X")
    assert (why is not None) == foreign
    if foreign:
        assert why == ("their kernel, Marlin, was built for Ampere and Ada, and the card X is "
                       f"{arch.capitalize()}")


def test_carry_flag_moves_a_measured_format_by_the_datasheet():
    # FP8 has H200 runs: on the RTX 5090 at its default 575 W, eta and the FP8 compute
    # share are carried (measured for the format), moved by its 1,792 GB/s and FP8 419 TFLOP/s
    r = cli("predict", "--card", "rtx5090", "--engine", "fp8-hyperqwen-dummy-16k-vllm033",
            "--protocol", "ladder", "--carry", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    t, c = out["carried"]["terms"], out["calibration"]
    assert t["eta"]["status"] == t["compute_share"]["status"] == "carried"
    assert out["carried"]["eta_engine"] == "fp8-hyperqwen-dummy-16k-vllm033"
    assert t["power_clock_ratio"]["value"] == 1.0
    # the H200 FP8 engine's own terms (h200 predict prints 2,723 GB/s and 867.0 TFLOP/s),
    # the compute share moved from the step's SM clock to the datasheet's 1,830 MHz
    assert t["eta"]["value"] == pytest.approx(2723 / 4800, abs=2e-4)
    clock = _rule_clock(t["compute_share"]["rule"])
    assert abs(clock - _busy_clock(RUNS / t["compute_share"]["source_runs"][0], 2)) < 50
    assert t["compute_share"]["value"] == pytest.approx(867.0 / 1978.9 * 1830 / clock,
                                                         rel=2e-3)
    assert c["bandwidth_gb_s"] == pytest.approx(t["eta"]["value"] * 1792)
    assert c["tflops"] == pytest.approx(t["compute_share"]["value"] * 419)


def test_a_share_measured_at_a_lower_clock_moves_to_the_rated_clock():
    from claimcheck.model import carry as cc
    # 0.625 of 989.4 TFLOP/s read at 1,612 MHz is 0.625 x 1,830 / 1,612 = 0.70953 at the
    # 1,830 MHz the rate is quoted at
    at, words = cc.share_at_rated_clock(0.625, 1612.0, 1830.0)
    assert at == pytest.approx(0.709522, abs=1e-6) and "x 1,830 / 1,612" in words
    # no clock either side: the share as measured, said so
    assert cc.share_at_rated_clock(0.625, None, 1830.0) == (
        0.625, "taken as at the rated clock (no telemetry in the step)")
    assert cc.share_at_rated_clock(0.625, 1612.0, None)[0] == 0.625


def test_step_clock_reads_the_busy_samples_of_the_step_window(tmp_path):
    # a hand-made telemetry file: two samples before the window, three inside drawing
    # >= 350 W (half of 700 W) at 1,500, 1,600 and 1,700 MHz, one inside idle at 1,980
    rows = ["t_unix_s,gpu,power_w,power_limit_w,sm_clock_mhz",
            "99,0,690,700,1400", "100.5,0,120,700,1980", "101,0,600,700,1500",
            "102,0,690,700,1700", "103,0,200,700,1980", "104,0,500,700,1600",
            "106,0,690,700,1300"]
    (tmp_path / "telemetry.csv").write_text("\n".join(rows) + "\n")
    run = dataclasses.make_dataclass("R", ["path"])(tmp_path)
    step = dataclasses.make_dataclass("S", ["window_unix_s"])((100.0, 105.0))
    assert carry.step_sm_clock(run, step) == (1600.0, 3)
    assert carry.step_sm_clock(run, step.__class__((200.0, 300.0))) == (None, 0)


@pytest.mark.parametrize("value", ["attention", "true", "8"])
def test_an_engines_int8_activations_other_than_mlp_is_refused_on_its_key(tmp_path, value):
    from claimcheck.config.configfiles import load_engines as load
    from claimcheck.files.errors import InputError
    p = tmp_path / "engines.yaml"
    p.write_text("engines:\n  d:\n    description: x\n    model: m\n    weights: dummy\n"
                 f"    served_model_name: m\n    int8_activations: {value}\n")
    with pytest.raises(InputError) as e:
        load(p)
    words = str(e.value)
    assert words.startswith(str(p)) and "int8_activations" in words
    assert "is not one of ['mlp', None]" in words and "\n" not in words
