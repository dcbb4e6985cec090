"""The Update's named values on hand-made step tables: the corrected sentences' conditions
(long prompts under or at the short share per format, the power state of the steps at the
cap, energy at the same streams, the open question read on one-wave long prompts) and the
claims' five asks from hand-made registry and verdict rows."""

from __future__ import annotations

import pytest

from claimcheck.findings import findings as F
from claimcheck.findings import findings_decode as FD
from claimcheck.findings.stepframe import Finding
from claimcheck.update import format_values as FV
from claimcheck.update import update_values as UV
from tests.test_findings import frame, step


def test_long_prompts_under_the_short_share_only_where_every_level_is():
    # long-prompt levels against the short prompts' share at the same streams
    rows = [{"weight_format": "bf16", "streams": 8, "share": 0.70, "short_share": 0.69},
            {"weight_format": "bf16", "streams": 16, "share": 0.71, "short_share": 0.70},
            {"weight_format": "fp8", "streams": 8, "share": 0.51, "short_share": 0.53},
            {"weight_format": "fp8", "streams": 16, "share": 0.50, "short_share": 0.54}]
    v = {x.name: x for x in UV.long_values(Finding("long prompts", "", {}, "", True, "",
                                                     rows))}
    # bf16 one point over at both: not under, largest gap 1 point
    assert v["long.bf16.under"].value is False and v["long.bf16.gap"].text == "1"
    # fp8 2 and 4 points under at every level
    assert v["long.fp8.under"].value is True and v["long.fp8.gap"].text == "4"
    rows[2]["share"] = 0.53  # one fp8 level at its short share: no longer under everywhere
    v = {x.name: x for x in UV.long_values(Finding("long prompts", "", {}, "", True, "",
                                                     rows))}
    assert v["long.fp8.under"].value is False


def test_the_power_state_of_the_steps_at_the_cap():
    rows = [{"streams": n, "step_ms": ms, "telemetry_max_power_w": w,
             "telemetry_power_limit_w": 700.0, "telemetry_mean_sm_clock_mhz": c}
            for n, ms, w, c in [(1, 15.0, 500.0, 1980.0), (64, 21.0, 693.0, 1958.0),
                                (128, 28.0, 700.5, 1818.0), (256, 45.0, 698.0, 1644.0)]]
    x = Finding("step growth", "", {"growth": 3.0, "bytes_growth": 2.7}, "", True, "", rows)
    v = {y.name: y for y in UV.growth_values(x)}
    # 693 W is 99.0% of 700 (under the 99.5% mark); 698 W is 99.7%: at the cap
    assert v["growth.capped"].value is True
    assert v["growth.cap_streams"].text == "128"
    assert (v["growth.clock_hi"].text, v["growth.clock_ref"].text,
            v["growth.ref_streams"].text) == ("1,644", "1,958", "64")
    assert (v["growth.lo_ms"].text, v["growth.hi_ms"].text) == ("15.0", "45.0")


def test_energy_compares_both_formats_at_the_same_streams():
    # bf16 runs to 8 streams at 0.9 tokens per joule, fp8 only to 1; both at 1 stream
    rows = [step("a", 1, 70, 100, tpj=0.10), step("a", 8, 520, 800, tpj=0.90),
            step("b", 1, 100, 200, tpj=0.25)]
    v = {x.name: x for x in UV.energy_values(frame(rows))}
    assert v["energy.streams"].text == "1"
    assert (v["energy.fp8"].text, v["energy.bf16"].text) == ("0.25", "0.10")
    with pytest.raises(ValueError, match="energy: no stream count run on both formats"):
        UV.energy_values(frame(rows[1:2] + rows[2:]))


def test_the_open_question_reads_one_wave_of_the_several_wave_prompt_length():
    long_ = {"ctx": 8192, "input_len": 7681}
    rows = [step("a", 8, 460, 660, requests=8, mean=380, **long_),  # one wave: read
            step("a", 8, 440, 660, requests=16, mean=300, **long_),  # two waves
            step("a", 8, 470, 700, ctx=4480, input_len=4096),  # other prompt length
            step("b", 8, 646, 1260, requests=8, mean=550, **long_),
            step("b", 8, 600, 1260, requests=16, mean=500, **long_)]
    v = {x.name: x for x in UV.open_question(frame(rows))}
    assert v["open.prompt"].text == "7,681"
    assert (v["open.bf16.decode"].text, v["open.bf16.mean"].text) == ("460.0", "380.0")
    assert v["open.bf16.eta"].text == "70%"  # 460 / 660
    assert v["open.fp8.eta"].text == "51%"  # 646 / 1260
    # per stream: the sum over the 8 streams / 8; context per stream is the step's level
    assert (v["open.bf16.per_stream"].text, v["open.bf16.mean_per_stream"].text,
            v["open.fp8.per_stream"].text) == ("57.5", "47.5", "80.8")
    assert v["open.context"].text == "8,192"
    rows[3]["context_tokens_per_stream"] = 8000  # fp8 at another context: no one level
    with pytest.raises(ValueError, match="different contexts per stream"):
        UV.open_question(frame(rows))


def test_a_claims_five_asks_and_its_verdict_by_name():
    claim = {"id": "x-764", "system": "TensorFold", "value": 764.0, "card": "rtx5090",
             "streams": 8, "streams_running": None, "stream_relation": "lanes_of_one_prompt",
             "per_stream_tok_s": 95.5, "context_tokens": None, "spec_method": "DFlash2",
             "spec_draft_tokens": 15, "metric": "decode_aggregate"}
    verdict = {"id": "x-764", "verdict": "needs a drafter", "roofline_tok_s": 606.25,
               "claim_over_roofline": 1.26, "tau_needed": 1.26,
               "label_speculation_rows": "given by the publication",
               "label_speculation_acceptance": "missing"}
    v = {x.name: x for x in UV.claim_values(claim, verdict)}
    assert v["x-764.printed"].text == "764" and v["x-764.card"].text == "RTX 5090"
    assert v["x-764.relation"].text == "lanes of one prompt"
    assert v["x-764.rows"].text == "16"  # 15 drafted + 1 verified
    assert v["x-764.has_rows"].value is True
    assert (v["x-764.rows_label"].text, v["x-764.acceptance"].text) == (
        "given by the source", "not given")
    assert v["x-764.has_context"].value is False and v["x-764.context"].text == "not stated"
    assert v["x-764.needs_drafter"].value is True and v["x-764.tau"].text == "1.26"
    assert v["x-764.roofline"].text == "606"
    # no prediction yet: a reason, never a number
    assert v["x-764.predicted"].value is False
    assert v["x-764.local"].text == UV.PREDICTION_REASON
    v = {x.name: x for x in UV.claim_values(claim, verdict, {"x-764": 731.0})}
    assert v["x-764.predicted"].value is True and v["x-764.local"].text == "731"
    assert UV.tok(2439.6) == "2,439.6" and UV.tok(1035.0) == "1,035"


def test_a_family_claim_missing_from_the_registry_is_refused_by_name():
    fam = [{"key": "tf", "title": "t", "claims": ["nope"]}]
    with pytest.raises(ValueError, match="family 'tf': claim 'nope' is not in the registry"):
        UV.family_values(fam, [], [], "config/update_claims.yaml")


def test_card_values_refuse_a_finding_not_computed():
    f = frame([step("a", 1, 70, 100)])
    with pytest.raises(ValueError, match="finding 'what FP8 buys' was not computed"):
        UV.card_values([FD.bandwidth_share(f)], f)
    assert F.READS.keys() == {fn.__name__ for fn in F.FINDINGS}


def test_tau_is_said_at_the_verify_rows_it_was_counted_at():
    """The seed's Cinference arithmetic: 4.3 tokens at a 16-position verify, so the claim
    section says the rows beside the number (1.91 is the one-row ratio)."""
    from claimcheck.update.update_values import tau_rows_words
    v = {"verify_rows_per_stream": 16, "verify_rows_source": "verify rows assumed by the "
         "registry"}
    assert tau_rows_words(v) == ("at 16 verify rows per stream (verify rows assumed by the "
                                 "registry)")
    assert tau_rows_words({"verify_rows_per_stream": 1}) == (
        "at one verify row per stream (the plain roofline's ratio)")
    assert tau_rows_words({}).startswith("at one verify row")


def _fmt_rows(fm, wb, share, decode):
    return [{"run": f"r-{fm}", "card": "h200", "weight_format": fm, "weight_bytes": wb,
             "context_tokens_per_stream": 640.0, "streams": float(n), "decode": d,
             "share": share} for n, d in decode.items()]


def test_the_lowest_format_against_the_next_larger_weights_by_hand():
    """Three formats: the lowest median share (W4A16 here, 16 GB) set against the format of
    the next larger weights (FP8, 27 GB) at one stream and the most streams both ran; the
    sentence holds where the smaller format's step is longer there, and its kernel's
    architectures (Marlin: Ampere and Ada) are not the H200's (Hopper)."""
    import pandas as pd
    f = pd.DataFrame(_fmt_rows("bf16", 50e9, 0.70, {1: 66.0, 64: 2900.0})
                     + _fmt_rows("fp8", 27e9, 0.53, {1: 100.0, 64: 4000.0})
                     + _fmt_rows("w4a16", 16e9, 0.37, {1: 125.0, 64: 3200.0}))
    v = {x.name: x for x in FV.low_values(f)}
    assert v["share.low.has"].value is True and v["share.low.foreign"].value is True
    assert v["share.low.name"].text == "W4A16" and v["share.low.vs"].text == "FP8"
    assert v["share.low.eta"].text == "37%" and v["share.low.top"].text == "64"
    assert v["share.low.one_ms"].text == "8.0" and v["share.low.vs_one_ms"].text == "10.0"
    assert v["share.low.top_ms"].text == "20.0"      # 64 x 1000 / 3,200
    assert v["share.low.vs_top_ms"].text == "16.0"   # 64 x 1000 / 4,000
    assert v["share.low.kernel"].text == "Marlin"
    assert v["share.low.kernel_arch"].text == "Ampere and Ada"
    # faster than FP8 at 64 streams too: no sentence
    f.loc[(f.weight_format == "w4a16") & (f.streams == 64), "decode"] = 4500.0
    assert {x.name: x for x in FV.low_values(f)}["share.low.has"].value is False
    # two formats only: nothing to set apart
    v = {x.name: x for x in FV.low_values(f[f.weight_format != "w4a16"])}
    assert v["share.low.has"].value is False and v["share.low.name"].value is None


def test_a_format_on_another_kernel_is_its_own_sentence_by_hand():
    """W4A16 on Marlin (the claim cards' kernel) and on Machete ('w4a16:machete'): the
    lowest-format sentence reads Marlin's rows alone, Machete's get theirs, each step
    streams x 1000 / tok/s."""
    import pandas as pd
    f = pd.DataFrame(_fmt_rows("bf16", 50e9, 0.70, {1: 66.0, 64: 2900.0})
                     + _fmt_rows("fp8", 27e9, 0.53, {1: 100.0, 64: 4000.0})
                     + _fmt_rows("w4a16", 16e9, 0.37, {1: 125.0, 64: 3200.0})
                     + _fmt_rows("w4a16:machete", 16e9, 0.33, {1: 100.0, 64: 4000.0}))
    low = {x.name: x for x in FV.low_values(f)}
    assert low["share.low.name"].text == "W4A16" and low["share.low.one_ms"].text == "8.0"
    alt = {x.name: x for x in FV.alt_values(f)}
    assert alt["share.alt.has"].value is True
    assert alt["share.alt.kernel"].text == "Machete kernels"
    assert alt["share.alt.name"].text == "W4A16"
    assert alt["share.alt.one_ms"].text == "10.0"       # 1 x 1000 / 100
    assert alt["share.alt.top_ms"].text == "16.0"       # 64 x 1000 / 4,000
    assert alt["share.alt.base_one_ms"].text == "8.0"
    assert alt["share.alt.base_top_ms"].text == "20.0"
    assert alt["share.alt.base_kernel"].text == "Marlin" and alt["share.alt.eta"].text == "33%"
    # share_values names formats only: no slot for a kernel's series
    assert not [x for x in FV.share_values(f) if "machete" in x.name]
    # no second kernel: no sentence
    assert FV.alt_values(f[f.weight_format != "w4a16:machete"])[0].value is False
    # a kernel whose start log names int8 activations gets the second slot, said so
    f2 = pd.concat([f, pd.DataFrame(_fmt_rows("w4a16:humming+int8", 16e9, 0.39,
                                              {1: 125.0, 64: 5000.0}))])
    alt = {x.name: x for x in FV.alt_values(f2)}
    assert alt["share.alt.kernel"].text == "Machete kernels"
    assert alt["share.alt2.kernel"].text == ("Humming kernels with int8 activations on the "
                                             "MLP")
    assert alt["share.alt2.top_ms"].text == "12.8"      # 64 x 1000 / 5,000


def test_a_run_that_measured_nothing_is_named_not_counted():
    from types import SimpleNamespace as NS

    from claimcheck.update import update_body as UB

    def run(name, status, steps):
        return NS(name=name, provenance=NS(status=status), rows=[{"status": s} for s in steps])
    runs = [run("a", "complete", ["complete", "failed"]), run("b", "interrupted", ["interrupted"]),
            run("c", "failed", [])]
    assert [UB.measured(r) for r in runs] == [True, False, False]
    v = {x.name: x for x in UB.unmeasured_values(runs)}
    assert v["unmeasured.has"].value is True
    assert v["unmeasured.words"].value == ("2 more runs were recorded with no step measured: "
                                           "`b` (interrupted) and `c` (failed).")
    v = {x.name: x for x in UB.unmeasured_values(runs[:1])}
    assert v["unmeasured.has"].value is False


def test_runs_on_other_cards_are_said_apart():
    """Runs on another card than the Update's: counted per card with their engines and the
    cards their NVML uuids tell apart, said to be in none of the body's counts; none: not
    said."""
    from types import SimpleNamespace as NS

    from claimcheck.update import update_body as UB

    def run(card, gpu, engine, uuid=None):
        return NS(provenance=NS(card=card, gpu=NS(name=gpu, uuid=uuid), engine=engine))
    runs = [run("h200", "NVIDIA H200", "a", "GPU-1"), run("h100", "NVIDIA H100", "a", "GPU-2"),
            run("h100", "NVIDIA H100", "b", "GPU-3"), run("h100", "NVIDIA H100", "b", "GPU-2"),
            run("l40s", None, "a")]
    v = {x.name: x for x in UB.other_card_values(runs, "h200")}
    assert v["other.has"].value is True
    # h100: 3 runs of engines a and b on 2 cards (GPU-2 twice); l40s: 1 run, no GPU name
    # recorded (the card's name), no uuid (one run is on one card)
    assert v["other.words"].value == (
        "1 more run of 1 engine on one l40s and 3 more runs of 2 engines on 2 NVIDIA H100 "
        "cards (one card a run, told apart by NVML uuid) "
        "are in none of these counts or the sections below: the model's count with each "
        "run left out includes them, and its appendix table lists them run by run.")
    one = {x.name: x for x in UB.other_card_values(runs[:2], "h200")}
    words = one["other.words"].value
    assert words.startswith("1 more run of 1 engine on one NVIDIA H100 is ")
    assert "includes it, and its appendix table lists it run by run." in words
    none = {x.name: x for x in UB.other_card_values(runs[:1], "h200")}
    assert none["other.has"].value is False


def test_cards_phrase_counts_cards_by_uuid():
    """Where runs ran, by NVML uuid: one uuid (or one run) is one card; several uuids are
    that many cards; runs with no uuid make the count a floor and are counted; none at all:
    said so, no count."""
    from types import SimpleNamespace as NS

    from claimcheck.update.update_body import cards_phrase

    def runs(*uuids):
        return [NS(provenance=NS(gpu=NS(uuid=u))) for u in uuids]
    assert cards_phrase(runs("GPU-a", "GPU-a", "GPU-a"), "NVIDIA H200") == "on one NVIDIA H200"
    assert cards_phrase(runs(None), "NVIDIA H200", "dummy weights") == (
        "on one NVIDIA H200 (dummy weights)")
    assert cards_phrase(runs("GPU-a", "GPU-b", "GPU-a", "GPU-c"), "NVIDIA H200",
                        "dummy weights") == (
        "on 3 NVIDIA H200 cards (one card a run, told apart by NVML uuid; dummy weights)")
    assert cards_phrase(runs("GPU-a", None, "GPU-b", None), "NVIDIA H100") == (
        "on 2 or more NVIDIA H100 cards (one card a run, told apart by NVML uuid, 2 runs "
        "recording none)")
    assert cards_phrase(runs("GPU-a", None), "NVIDIA H100") == (
        "on 1 or more NVIDIA H100 cards (one card a run, told apart by NVML uuid, 1 run "
        "recording none)")
    assert cards_phrase(runs(None, None), "NVIDIA H100") == (
        "on one NVIDIA H100 each (no run records its card's NVML uuid)")
