"""The source-calibrated model's calibration choice and the one-comparison-per-claim rules
(issue 17 item 3) on hand-made figures, claims and measured steps, worked by hand."""

from __future__ import annotations

import pytest

from claimcheck.verdicts import sourcemodel as sm
from claimcheck.verdicts.verdict_assembly import seed_aggregate
from claimcheck.verdicts.verdict_evidence import comparable_steps, protocol_replays
from tests.conftest import ROOT


def fig(id: str, value: float, *, streams: float = 1, phase: str = "decode",
        context: float = 0, drafter: str = "none", plain: float = 100.0,
        order: int = 0, run: str = "", bound: str = "") -> sm.Figure:
    return sm.Figure(id=id, run=run or id, order=order, streams_sharing=streams, phase=phase,
                     context_tokens=context, drafter=drafter, aggregate_tok_s=value,
                     plain_tok_s=plain, plain_bound="memory", bound=bound)


def test_eta_is_the_figure_over_its_plain_roofline():
    assert sm.eta_from(46.0, 57.95) == pytest.approx(0.7938, abs=1e-4)
    with pytest.raises(ValueError, match="eta needs"):
        sm.eta_from(120.0, 100.0)  # above the no-drafter line: not a bandwidth fraction


def test_calibration_orders_by_context_first_then_decode_then_stated_none():
    figs = [fig("unspec", 45.6, phase="unspecified", drafter="", order=0),
            fig("long", 41.2, context=8192, order=1),
            fig("short-unstated", 43.0, context=640, drafter="", order=2),
            fig("short", 43.4, context=640, order=3)]
    # a claim at 640 tokens: the 640-token figures, decode, "none" stated first
    assert sm.pick_calibration(figs, 640).id == "short"
    assert sm.pick_calibration(figs[:3], 640).id == "short-unstated"
    # a claim at 8K: the 8K figure, though a 640-token decode figure exists (issue 28 item 6)
    assert sm.pick_calibration(figs, 8192).id == "long"
    # a claim stating no context: the figure stating none, then the shortest
    assert sm.pick_calibration(figs).id == "unspec"
    assert sm.pick_calibration(figs[1:]).id == "short"
    assert sm.pick_calibration(figs[1:2], 640).id == "long"   # the only candidate


def test_calibration_refuses_drafters_streams_bounds_and_figures_above_the_line():
    assert sm.pick_calibration([
        fig("mtp", 80.0, drafter="MTP"),             # a drafter
        fig("eight", 80.0, streams=8),                # not one stream
        fig("bound", 80.0, bound="at_least"),         # a bound, not a figure
        fig("above", 101.0),                          # above the plain 100: not no-drafter
        fig("prefill", 80.0, phase="prefill"),        # not a decode rate
    ]) is None


def test_source_key_groups_a_publisher_system_mode_checkpoint_card_power_and_format():
    claim = {"kind": "claim", "seed": "000", "system": "S", "card": "rtx3090",
             "power_limit_w": 250.0}
    relayed = {**claim, "seed": "001"}                # a claim relayed by another seed
    repro = {**claim, "kind": "reproduction", "power_limit_w": 390.0}
    assert sm.source_key(claim, "w4a16") == ("", "S", "", "", "rtx3090", "250", "w4a16")
    assert sm.source_key(relayed, "w4a16") == sm.source_key(claim, "w4a16")
    assert sm.source_key(repro, "w4a16") == ("seed 000 reproduction", "S", "", "", "rtx3090",
                                             "390", "w4a16")
    assert sm.source_key(claim, "nvfp4") != sm.source_key(claim, "w4a16")
    assert sm.source_key(claim, "w4a8") != sm.source_key(claim, "w4a16")  # two checkpoints
    # a seed's own runs of one checkpoint are one source whatever the script's label
    runs = [{**repro, "system": s, "checkpoint": "org/ckpt"} for s in ("S batch", "S")]
    assert sm.source_key(runs[0], "w4a16") == sm.source_key(runs[1], "w4a16") == (
        "seed 000 reproduction", "org/ckpt", "", "org/ckpt", "rtx3090", "390", "w4a16")
    # a claim keeps its system even when a checkpoint is given; the checkpoint parts it
    with_ckpt = sm.source_key({**claim, "checkpoint": "org/ckpt"}, "w4a16")
    assert with_ckpt[1] == "S" and with_ckpt != sm.source_key(claim, "w4a16")


def test_two_modes_of_one_system_never_calibrate_each_other():
    # HyperQwen's batch-mode 64-stream figure and its single-user one-stream cell: two
    # sources, so the batch figure has no calibration of its own (eta = 1)
    batch = {"kind": "claim", "seed": "001", "system": "HyperQwen", "mode": "batch",
             "card": "rtx3090", "power_limit_w": 250.0}
    single = {**batch, "mode": "single-user"}
    assert sm.source_key(batch, "w4a8") != sm.source_key(single, "w4a8")
    groups: dict = {}
    for row, f in ((batch, fig("batch-64", 1222.0, streams=64)),
                   (single, fig("single-1", 46.0))):
        groups.setdefault(sm.source_key(row, "w4a8"), []).append(f)
    assert sm.pick_calibration(groups[sm.source_key(batch, "w4a8")]) is None
    assert sm.pick_calibration(groups[sm.source_key(single, "w4a8")]).id == "single-1"


def test_compare_and_binding_words():
    assert sm.compare(104.0, 100.0, 0.05) == "consistent"
    assert sm.compare(106.0, 100.0, 0.05) == "above"
    assert sm.compare(94.0, 100.0, 0.05) == "below"
    assert sm.binding_text("compute", 47.8) == "compute-bound: past the bend at 47.8 streams"
    assert sm.binding_text("memory", float("inf")) == "memory-bound (no bend)"


def step(run: str, protocol: str, streams: int, e2e: float, roof: float, *, card="h200",
         out=512, reported=True, **kw) -> dict:
    return {"run": run, "protocol": protocol, "streams": streams, "card": card,
            "status": "complete", "output_len": out, "reported": reported,
            "e2e_aggregate_tok_s": e2e, "roofline_tok_s": roof, **kw}


STEPS = [step("batch-run", "batch", 64, 700.0, 1000.0),
         step("batch-run", "batch", 64, 600.0, 1000.0, reported=False),   # not the kept pass
         step("gate-run", "gate", 64, 900.0, 1200.0),
         step("gate-run", "gate", 8, 300.0, 400.0),                       # other streams
         step("single", "single", 1, 2.9, 88.0, out=2),                   # held prefill
         step("single", "single", 1, 60.0, 88.0)]


def test_held_prefill_steps_never_enter_a_comparison():
    kept = comparable_steps(STEPS)
    assert all(s["output_len"] > 2 for s in kept) and len(kept) == 5
    reps, repro = protocol_replays({"metric": "e2e_aggregate", "streams": 1,
                                    "card": "rtx3090"}, ["single"], kept, "e2e_aggregate_tok_s")
    assert repro is None
    assert [r["fraction"] for r in reps] == [pytest.approx(60.0 / 88.0)]  # 2.9 left out


def test_a_per_request_decode_claim_is_set_beside_the_summed_speed():
    # 2 streams at 40 tok/s each against a plain 100: 80%
    steps = [step("r", "p", 2, 70.0, 100.0, per_request_decode_tok_s=40.0)]
    reps, _ = protocol_replays({"metric": "per_request_decode", "streams": 2,
                                "card": "rtx3090"}, ["p"], steps, "per_request_decode_tok_s")
    assert reps[0]["fraction"] == pytest.approx(0.80)


def test_a_claim_in_two_protocols_is_set_beside_each():
    c = {"metric": "e2e_aggregate", "streams": 64, "card": "rtx3090"}
    reps, repro = protocol_replays(c, ["batch", "gate"], comparable_steps(STEPS),
                                   "e2e_aggregate_tok_s")
    assert repro is None  # another card: context only
    assert [(r["protocol"], r["run"]) for r in reps] == [("batch", "batch-run"),
                                                       ("gate", "gate-run")]
    # reported steps only: 700 / 1000, not the median with the unkept 600; 900 / 1200
    assert [r["fraction"] for r in reps] == [pytest.approx(0.70), pytest.approx(0.75)]
    assert reps[0]["definition"] == "end-to-end aggregate"


def test_a_claim_on_a_card_measured_here_is_reproduced_by_its_protocol():
    c = {"metric": "e2e_aggregate", "streams": 64, "card": "h200"}
    reps, repro = protocol_replays(c, ["batch", "gate"], comparable_steps(STEPS),
                                   "e2e_aggregate_tok_s")
    assert reps == []
    # each protocol's reported 64-stream step on its own: 700 (batch) and 900 (gate)
    assert (repro.low_tok_s, repro.high_tok_s) == (pytest.approx(700.0), pytest.approx(900.0))
    assert repro.source == ("protocol batch, batch-run: 700.0 tok/s; "
                            "protocol gate, gate-run: 900.0 tok/s")


def test_a_per_request_figure_takes_its_rowsseed_aggregate():
    agg = {"id": "b-64", "run": "b-c64", "metric": "e2e_aggregate", "streams": 64,
           "value": 3215.0}
    per = {"id": "b-64-per", "run": "b-c64", "metric": "per_request", "streams": 64,
           "value": 50.0}
    other = {"id": "x", "run": "other", "metric": "e2e_aggregate", "streams": 64,
             "value": 1.0}
    assert seed_aggregate(per, [other, agg, per]) is agg
    assert seed_aggregate(agg, [agg, per]) is None       # an aggregate keeps its own
    assert seed_aggregate(per, [other, per]) is None     # no seed aggregate for its run


# ------------------------------------------------- a hand-made registry through verdict_rows

def _registry(tmp_path, rows: list[dict]) -> str:
    import csv
    real = ROOT / "data" / "raw" / "claims.csv"
    with real.open(newline="") as f:
        reader = csv.DictReader(f)
        header, template = reader.fieldnames, next(reader)
    base = {k: "" for k in header} | {k: template[k] for k in ("seed", "section", "url",
                                                               "quote")}
    out = tmp_path / "claims.csv"
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(base | {"kind": "claim", "system": "HyperQwen hand", "card": "rtx3090",
                               "power_limit_w": "250", "quantization": "w4a16",
                               "stream_relation": "independent_requests", "unit": "tok/s",
                               "spec_method": "none"} | r)
    return str(out)


def test_hand_made_registry_calibrates_each_source_on_its_own_figure(tmp_path):
    from claimcheck.pipeline.derive import verdict_rows
    from claimcheck.verdicts import verdicts as v
    raw = ROOT / "data" / "raw"
    one = {"streams": "1", "stream_relation": "single_user"}
    claims = _registry(tmp_path, [
        {"id": "cal", "run": "r1", "metric": "single_stream_decode", "value": "46", **one},
        {"id": "other-1", "run": "r2", "metric": "unspecified", "value": "45", **one},
        {"id": "big", "run": "r3", "metric": "e2e_aggregate", "value": "1100",
         "streams": "64", "context_tokens": "640"},
        {"id": "big-per", "run": "r3", "metric": "per_request", "value": "15",
         "streams": "64", "context_tokens": "640"},
        {"id": "drafted", "run": "r4", "metric": "single_stream_decode", "value": "150",
         "spec_method": "DFlash2", **one},
        {"id": "nocal", "run": "r5", "metric": "e2e_aggregate", "value": "300",
         "streams": "8", "system": "Other", "checkpoint": "dbirks/Qwen3.8-27B-W4A16-AutoRound"},
    ])
    rows = verdict_rows(claims, raw / "cards.csv", raw / "ceilings.csv", raw / "weights.csv",
                        raw / "models" / "qwen3.8-27b" / "config.json",
                        ROOT / "config" / "protocols.yaml", [])
    by = {r["id"]: r for r in rows}
    # plain at one stream: (16e9 + 2 x (75,497,472 FP16 state + 1,474,560 x 2 BF16 conv
    # state) bytes) / 936e9 = 17.262 ms, 57.93 tok/s; eta = 46 / 57.93 = 0.794 (HyperQwen's
    # weights row: 16 GB, FP16 state; the conv state at the model's BF16, as for a step)
    assert by["cal"]["roofline_tok_s"] == pytest.approx(57.932, abs=1e-3)
    # "cal" is tested on the other run's figure: eta 45 / 57.95; 46 / 45 = +2.2%
    assert by["cal"]["calibrated_on"] == "other-1"
    assert by["cal"]["claim_over_source"] == pytest.approx(46 / 45)
    # (one stream: no bend, so inside the band is at its one-stream model)
    assert by["cal"]["verdict"] == by["other-1"]["verdict"] == v.AT_SOURCE
    # "other-1" on the decode figure: 45 / 46 = -2.2%
    assert by["other-1"]["calibrated_on"] == "cal"
    assert by["other-1"]["claim_over_source"] == pytest.approx(45 / 46)
    # 64 streams: 64 x 51.2 GFLOP / 63 TFLOP/s = 52 ms > 36.9 ms of memory at eta 0.794
    # (the conv state in S, issue 27: 36.4 ms without it): compute-bound at about 1,230
    # tok/s (the seed's own figure); with no overlap the step is 36.9 + 52.0 = 88.9 ms, a
    # floor of 64 / 88.9 ms = 720 tok/s (724 without): 1,100 is in the bend region,
    # at 1,100 / 1,229.4 = 89.5% of the ceiling
    big = by["big"]
    assert big["verdict"] == v.BAND and big["binding_term"] == "compute"
    assert big["source_model_tok_s"] == pytest.approx(1230, abs=2)
    assert big["source_floor_tok_s"] == pytest.approx(720, abs=1)
    assert "at 89.5% of its source's ceiling" in big["reason"]
    assert "63 TFLOP/s (ceiling hyperqwen-3090-250w" in big["calibration"]
    # the per-request 15 x 64 = 960 would contradict the run's own 1,100: the seed's is used
    assert by["big-per"]["aggregate_tok_s"] == pytest.approx(1100.0)
    assert "would read 960.0 tok/s against the seed's own 1,100.0" in by["big-per"]["reason"]
    # a drafter above the plain line: 150 / 57.93 = 2.59 tokens kept per step
    assert by["drafted"]["verdict"] == v.NEEDS_SPECULATION
    assert by["drafted"]["tau_needed"] == pytest.approx(150 / 57.932, abs=1e-4)
    assert "drafter DFlash2 stated" in by["drafted"]["reason"]
    # another system with no one-stream figure: plain roofline at 8 streams,
    # (16e9 + 8 x 2 x 78,446,592 state + conv bytes) / 936e9 = 18.435 ms -> 434.0 tok/s;
    # 300 is 69.1% (435.1 and 68.9% with the conv state left out, before issue 27)
    assert by["nocal"]["verdict"] == v.WITHIN and by["nocal"]["calibrated_on"] == ""
    assert by["nocal"]["roofline_tok_s"] == pytest.approx(433.96, abs=0.01)
    assert "69.1% of the plain roofline 434.0 tok/s" in by["nocal"]["reason"]


# ------------------------------------------------- issue 28 item 5: activation precision

def test_int8_layers_set_the_compute_by_hand():
    from claimcheck.files.paths import RAW
    from claimcheck.physics.modelfiles import load_config
    # half the FLOPs at 400 TOP/s, half at 100 TFLOP/s: 1 / (0.5/400 + 0.5/100) = 160
    assert sm.split_compute_tflops(0.5, 100.0, 400.0) == pytest.approx(160.0)
    assert sm.split_compute_tflops(0.0, 100.0, 400.0) == pytest.approx(100.0)
    # the 3090's range 63 (measured at 250 W) to 71 (datasheet), int8 284 datasheet: the low
    # end's int8 is 284 x 63 / 71 = 252; MLPs half the FLOPs: 1/(0.5/252 + 0.5/63) = 100.8,
    # 1/(0.5/284 + 0.5/71) = 113.6; every layer: 252 to 284
    rates = [(63.0, "measured"), (71.0, "datasheet")]
    mlp = sm.int8_rates(rates, "mlp", 0.5, 284.0, 71.0)
    assert [r for r, _ in mlp] == [pytest.approx(100.8), pytest.approx(113.6)]
    assert "the MLP GEMMs (50.0% of the FLOPs, config.json) at int8 252 TOP/s" in mlp[0][1]
    allint8 = sm.int8_rates(rates, "all", 0.5, 284.0, 71.0)
    assert [r for r, _ in allint8] == [pytest.approx(252.0), pytest.approx(284.0)]
    assert sm.int8_rates(rates, "", 0.5, 284.0, 71.0) == rates
    # Qwen3.8-27B: 64 layers x 3 x 5,120 x 17,408 MLP weights of the weights per token
    cfg = load_config(RAW / "models" / "qwen3.8-27b" / "config.json")
    from claimcheck.physics.geometry import geometry
    share = 64 * 3 * 5120 * 17408 / geometry(cfg).weights_per_token
    assert sm.mlp_flop_fraction(cfg) == pytest.approx(share)
    assert share == pytest.approx(0.668, abs=0.001)


# --------------------------------------------------- issue 28 item 8: the source's spread

def test_eta_from_the_median_of_the_sources_one_stream_figures():
    # the article's cohorts: 43.6 and 47.8 at one stream, context not stated, both
    # unspecified: a tie, so eta is the median of 43.6 / 58 and 47.8 / 58 = 0.7890
    figs = [fig("kept-1", 43.6, phase="unspecified", drafter="", plain=58.0, order=0),
            fig("first-1", 47.8, phase="unspecified", drafter="", plain=58.0, order=1),
            fig("long-1", 41.0, context=8192, plain=57.0, order=2)]
    got = sm.calibration_set(figs)
    assert [f.id for f in got] == ["kept-1", "first-1"]
    import statistics
    assert statistics.median(sm.eta_from(f.aggregate_tok_s, f.plain_tok_s) for f in got) == \
        pytest.approx((43.6 + 47.8) / 2 / 58.0)
    assert [f.id for f in sm.calibration_set(figs, 8192)] == ["long-1"]
    assert sm.calibration_set([fig("mtp", 80.0, drafter="MTP")]) == []


def test_the_spread_a_source_shows_between_its_runs_of_one_workload():
    wl = ("e2e_aggregate", 64, 128, 512, 640)
    from dataclasses import replace
    figs = [replace(fig("pass1", 1087.0, streams=64, run="p1"), workload=wl),
            replace(fig("ladder", 990.5, streams=64, run="p2"), workload=wl)]
    spread, words = sm.shown_spread(figs)
    assert spread == pytest.approx(1087.0 / 990.5 - 1)  # 9.74%, the article's "10%"
    assert words.startswith("9.7%, the spread its source shows between 2 runs of one workload "
                            "(e2e_aggregate at 64 streams: 990.5 (ladder) to 1,087.0 tok/s "
                            "(pass1))")
    # one run, or a drafter's runs (acceptance moves with the prompts), show no spread
    assert sm.shown_spread(figs[:1]) == (0.0, "")
    drafted = [replace(f, drafter="DSpine") for f in figs]
    assert sm.shown_spread(drafted) == (0.0, "")
    # nor does a prefill range ("~1,440-1,810 tok/s" of seed 001: two prompt lengths)
    prefill = [replace(f, phase="prefill") for f in figs]
    assert sm.shown_spread(prefill) == (0.0, "")


def test_a_bend_past_the_memory_wall_is_never_reached():
    assert sm.binding_text("memory", 197.9, 101) == (
        "memory-bound: the bend at 197.9 streams lies past the card's memory wall at 101 "
        "streams (state and KV at this context beside the weights), so it is never reached")
    assert sm.binding_text("memory", 47.8, 101) == "memory-bound: below the bend at 47.8 streams"
    assert sm.binding_text("memory", 47.8) == "memory-bound: below the bend at 47.8 streams"
