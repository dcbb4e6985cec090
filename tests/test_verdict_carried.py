"""Issue 42 item 4: a verdict reads against the claim's card's carried model first
(verdicts.verdict_carried), the source-calibrated kind beside it; the Update's claim sections
and its RTX 3090 ladder sentence (update.update_values, update.carry_words). Hand numbers."""

import pytest

from claimcheck.update import carry_words as CW
from claimcheck.update import update_values as UV
from claimcheck.verdicts import verdict_carried as vc
from claimcheck.verdicts import verdicts as v

ASSUMED = "carried from the H200's runs; W4A16 eta and compute assumed from BF16"
BAND = v.Verdict(v.BAND, "X is in the bend region of its source's model.", {"roofline_tok_s":
                                                                           1500.0})


def judge(agg, carried=1000.0, res=BAND, tol=0.05, bound="", **kw):
    c = vc.Carried(carried, ASSUMED, **kw) if carried is not None else vc.Carried(None, **kw)
    return vc.carried_verdict(res, {"aggregate_tok_s": agg, "bound": bound}, c, tol)


@pytest.mark.parametrize("agg, kind, ratio_text", [
    (1100.0, vc.MATCHES, "+10.0% from it, within 10%"),  # 1,100 / 1,000: on the edge, in
    (1105.0, vc.ABOVE, "+10.5% from it, beyond 10%"),
    (900.0, vc.MATCHES, "-10.0% from it, within 10%"),
    (850.0, vc.SHORT, "-15.0% from it, beyond 10%"),
    (1000.0, vc.MATCHES, "+0.0% from it, within 10%"),
])
def test_the_carried_model_decides_a_model_kind(agg, kind, ratio_text):
    out = judge(agg)
    assert out.kind == kind
    assert out.numbers["claim_over_carried_model"] == pytest.approx(agg / 1000.0)
    assert out.numbers["carried_model_tok_s"] == 1000.0
    assert out.numbers["source_verdict"] == v.BAND  # the cross-check, kept
    assert out.numbers["roofline_tok_s"] == 1500.0  # the source verdict's numbers, kept
    assert out.numbers["carried_tolerance"] == 0.10  # max(5%, 10%)
    assert ratio_text in out.reason
    assert f"1,000.0 tok/s for it ({ASSUMED})" in out.reason
    assert out.reason.endswith("Cross-check, its source's model reads *in the bend region of "
                               "its source's model*: X is in the bend region of its "
                               "source's model.")


def test_a_wider_source_spread_widens_the_carried_tolerance():
    # the source's own runs spread 15%: 1,120 / 1,000 = +12.0% is within it
    out = judge(1120.0, tol=0.15)
    assert out.kind == vc.MATCHES and out.numbers["carried_tolerance"] == 0.15
    assert "within 15%" in out.reason


def test_bounds_against_the_carried_model():
    # "at least 800": the model's 1,000 meets it; "at most 1,200": a peak reported, above
    assert judge(800.0, bound="at_least").kind == vc.MATCHES
    assert judge(1200.0, bound="at_most").kind == vc.ABOVE
    assert judge(700.0, bound="at_most").kind == vc.SHORT


@pytest.mark.parametrize("kind", vc.STANDS)
def test_measured_and_physics_kinds_stand_with_the_carried_model_beside(kind):
    out = judge(1500.0, res=v.Verdict(kind, "R.", {}))
    assert out.kind == kind and out.numbers["source_verdict"] == kind
    assert out.numbers["claim_over_carried_model"] == pytest.approx(1.5)
    assert out.reason.startswith("R. Beside it, this card's carried model gives 1,000.0")
    assert "+50.0% from it, beyond 10%" in out.reason


def test_without_a_carried_prediction_the_source_kind_stands_with_the_reason():
    why = ("a drafter's figure: it needs 2.73 tokens kept per stream per step at 1 verify "
           "row per stream")
    out = judge(1100.0, carried=None, reason=why, tau_needed=2.73, verify_rows=1.0)
    assert out.kind == v.BAND
    assert out.reason == f"{BAND.reason} No carried model: {why}."
    assert out.numbers["carried_model_tok_s"] is None
    assert out.numbers["claim_over_carried_model"] is None
    assert out.numbers["carried_reason"] == why and out.numbers["carried_tau_needed"] == 2.73
    nothing = vc.carried_verdict(BAND, {"aggregate_tok_s": 1.0}, None, 0.05)
    assert nothing.kind == v.BAND and "no carried prediction was made" in nothing.reason


def test_every_carried_kind_has_its_place_in_the_kinds():
    assert set(vc.KINDS) <= set(v.KINDS) and len(set(v.KINDS)) == len(v.KINDS)


CLAIM = {"id": "x", "system": "S", "value": 1035.0, "card": "rtx3090", "streams": 64,
         "streams_running": None, "stream_relation": "independent_requests",
         "per_stream_tok_s": 16.17, "context_tokens": 640, "spec_method": "none",
         "spec_draft_tokens": None, "metric": "streams_x_1000_over_median_tpot"}
VERDICT = {"id": "x", "verdict": vc.ABOVE, "roofline_tok_s": 1780.0,
           "claim_over_roofline": 0.58, "tau_needed": None, "aggregate_tok_s": 1035.0,
           "carried_model_tok_s": 773.9, "carried_assumptions": ASSUMED, "carried_reason": ""}


def test_a_claim_section_prints_the_carried_prediction_and_what_it_assumed():
    p = UV.prediction_of(VERDICT)
    assert p == {"tok_s": 773.9, "words": ASSUMED, "reason": ""}
    v_ = {x.name: x for x in UV.claim_values(CLAIM, VERDICT, {"x": p})}
    assert v_["x.predicted"].value is True and v_["x.local"].text == "774"
    assert v_["x.local_ratio"].text == "1.34"  # 1,035 / 773.9
    assert v_["x.local_words"].text == ASSUMED and v_["x.has_local_words"].value is True


def test_a_claim_section_without_a_number_prints_the_carried_reason():
    why = "no NVFP4 run on the local card, nor of the precision its GEMMs multiply at"
    row = {**VERDICT, "carried_model_tok_s": None, "carried_assumptions": "",
           "carried_reason": why}
    v_ = {x.name: x for x in UV.claim_values(CLAIM, row, {"x": UV.prediction_of(row)})}
    assert v_["x.predicted"].value is False and v_["x.local"].text == why
    assert v_["x.has_local_words"].value is False
    assert UV.prediction_of({"id": "x"}) is None  # a verdicts table made without them


def test_the_lead_counts_the_carried_verdicts_apart():
    fam = [{"key": "f", "title": "t", "claims": ["x", "y"]}]
    claims = [CLAIM, {**CLAIM, "id": "y"}]
    verdicts = [VERDICT, {**VERDICT, "id": "y", "verdict": v.NEEDS_SPECULATION}]
    vals = {x.name: x for x in UV.family_values(fam, claims, verdicts, "f.yaml")}
    assert (vals["lead.carried"].value, vals["lead.drafter"].value,
            vals["lead.other"].value) == (1, 1, 0)
    assert (vals["lead.predicted"].value, vals["lead.has_predicted"].value) == (0, False)


def test_the_lead_counts_the_claims_with_a_carried_number():
    """Two claims, one with the carried model's number and one with only its reason: the
    lead says one claim has a number on its own card."""
    fam = [{"key": "f", "title": "t", "claims": ["x", "y"]}]
    claims = [CLAIM, {**CLAIM, "id": "y"}]
    verdicts = [VERDICT, {**VERDICT, "id": "y"}]
    preds = {"x": {"tok_s": 773.9, "words": ASSUMED, "reason": ""},
             "y": {"tok_s": None, "words": "", "reason": "no NVFP4 run on the local card"}}
    vals = {x.name: x for x in UV.family_values(fam, claims, verdicts, "f.yaml", preds)}
    assert (vals["lead.predicted"].value, vals["lead.has_predicted"].value) == (1, True)


def ladder(ratios):
    out = []
    for (n, kind), r in zip([(n, k) for n in (1, 8, 16, 32, 64) for k in ("tpot", "e2e")],
                            ratios, strict=True):
        out.append({"claim_id": f"article-ladder-{n}-{kind}", "power_limit_w": "390",
                    "predicted_over_published": str(r)})
    return out + [{"claim_id": "article-ladder-64-log", "power_limit_w": "390",
                   "predicted_over_published": "0.5"}]  # a log line: not a ladder figure


def test_the_ladder_sentence_values_by_hand():
    rows = ladder([0.960, 0.955, 0.975, 0.937, 0.988, 0.921, 1.018, 0.902, 0.834, 0.733])
    said = [{"id": "article-ladder-1-tpot", "carried_assumptions":
             "carried from the H200's runs; W4A16 eta and compute assumed from BF16, no "
             "W4A16 run on the H200; host overheads assumed"}]
    v_ = {x.name: x for x in CW.ladder_values(rows, said)}
    assert v_["carry.has"].value is True and v_["carry.n"].text == "10"
    # 0.902 is -9.8%: in; 0.834 and 0.733 (both at 64 streams) are out
    assert v_["carry.within"].text == "8" and v_["carry.miss_streams"].text == "64"
    assert (v_["carry.miss_lo"].text, v_["carry.miss_hi"].text) == ("-26.7%", "-16.6%")
    assert v_["carry.under"].value is True and v_["carry.power"].text == "390"
    # |errors| sorted: .012 .018 .025 .040 .045 .063 .079 .098 .166 .267: median .054
    assert v_["carry.median"].text == "5.4%"
    assert (v_["carry.short_lo"].text, v_["carry.short_hi"].text) == ("16.6%", "26.7%")
    assert v_["carry.short"].text == "16.6% to 26.7%"
    # every figure under (1.018 is over): not all under
    assert v_["carry.all_under"].value is False
    under = {x.name: x for x in CW.ladder_values(ladder([0.99] * 9 + [0.894]))}
    # one miss (-10.6%): one value, not "10.6% to 10.6%"; all ten under, 1.0% to 10.6%
    assert under["carry.short"].text == "10.6%"
    assert under["carry.all_under"].value is True
    assert under["carry.under_span"].text == "1.0% to 10.6%"
    assert v_["carry.assumed"].text == ("W4A16 eta and compute assumed from BF16, no W4A16 "
                                        "run on the H200")
    assert v_["carry.int8.has"].value is False  # nothing said of int8 activations
    said[0]["carried_assumptions"] += ("; int8 activations on the MLPs: prompts run at "
                                       "73.1 TFLOP/s, from x's run")
    v_ = {x.name: x for x in CW.ladder_values(rows, said)}
    assert v_["carry.int8.has"].value is True
    assert v_["carry.int8"].text == "prompts run at 73.1 TFLOP/s, from x's run"
    over = {x.name: x for x in CW.ladder_values(ladder([1.0] * 9 + [1.2]))}
    assert over["carry.under"].value is False and over["carry.misses"].value is True
    assert {x.name: x for x in CW.ladder_values([])}["carry.has"].value is False


def test_carried_words_said_once_then_pointed_back_to():
    """A later claim's carried-model words name the earlier claim that assumed nothing it
    does not, then only what differs (hand-made assumption lists)."""
    first = ("carried from the H200's runs; SM clock at 250 W assumed (x0.894); host "
             "overheads assumed as on the H200; int8 activations on the MLPs: 63 TFLOP/s")
    earlier = [("1,035", first)]
    # the int8 assumption replaced, one added: both said after "but"
    later = ("carried from the H200's runs; SM clock at 250 W assumed (x0.894); host "
             "overheads assumed as on the H200; int8 activations on the GEMMs not modelled; "
             "context not stated: 640 tokens assumed")
    assert UV.words_after(later, earlier) == (
        "as for the 1,035 tok/s above, but int8 activations on the GEMMs not modelled; "
        "context not stated: 640 tokens assumed")
    assert UV.words_after(first, earlier) == "as for the 1,035 tok/s above"
    # the earlier claim assumed int8 prompts, which this one does not: not pointed back to
    no_int8 = "carried from the H200's runs; SM clock at 350 W assumed (x1.000)"
    assert UV.words_after(no_int8, earlier) == no_int8
    # of two candidates, the one with fewer differences
    two = earlier + [("127", later)]
    assert UV.words_after(later + "", two) == "as for the 127 tok/s above"
    assert UV.words_after("other; words", []) == "other; words"
