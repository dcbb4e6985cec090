"""Issue 42 item 4 on the committed runs: every registry figure's carried prediction
(predict.carry_claims) and the verdicts read against it. A carried prediction never uses a
number measured on the claim's own card."""

import dataclasses

import pytest

from claimcheck.calibration.calibrate import run_key
from claimcheck.claims.registryfiles import load_claims, load_weight_rows
from claimcheck.config.configfiles import load_engines, load_protocols
from claimcheck.files.paths import CONFIG, RAW
from claimcheck.physics.cardfiles import load_cards
from claimcheck.predict import carry_claims as cc
from claimcheck.runs.runrecord import provenance_of
from claimcheck.verdicts import verdict_carried as vc
from claimcheck.verdicts import verdicts as v

RTX3090_BW = 936e9  # cards.csv memory_bw_gb_s, GB/s


@pytest.fixture(scope="module")
def claims():
    return load_claims(RAW / "claims.csv", cards=set(load_cards()))


def rows_of(runs, claims, ids=None):
    pick = [c for c in claims if ids is None or c["id"] in ids]
    return {r["claim_id"]: r for r in cc.carried_claim_rows(
        list(runs), pick, load_engines()["w4a16-hyperqwen"], load_weight_rows(),
        load_protocols(CONFIG / "protocols.yaml"))}


@pytest.fixture(scope="module")
def rows(committed_runs, claims):
    return rows_of(committed_runs, claims)


def test_every_figure_gets_a_prediction_or_a_reason(rows, claims):
    assert set(rows) == {c["id"] for c in claims}
    for r in rows.values():
        assert (r["carried_model_tok_s"] is None) == bool(r["carried_reason"]), r
    # the 3090's plain figures are predicted, each saying what it carried and assumed
    r = rows["article-ladder-8-tpot"]
    assert r["carried_model_tok_s"] > 0 and r["local_card"] == "h200"
    assert "carried from the H200's runs by the RTX 3090's datasheet" in \
        r["carried_assumptions"]
    assert "W4A16 eta and compute assumed from BF16" in r["carried_assumptions"]
    # NVFP4 has no H200 run nor a path that multiplies at its precision
    assert rows["b200-control-64"]["carried_reason"].startswith("no NVFP4 run on the local")
    assert "prefill" in rows["hyperqwen-prefill-low"]["carried_reason"]
    # a drafter's figure: tokens kept it needs at its verify rows, never a plain number
    d = rows["hyperqwen-127-single"]
    assert d["carried_model_tok_s"] is None and d["carried_verify_rows"] == 8
    assert d["carried_reason"].startswith("a drafter's figure: it needs "
                                          f"{d['carried_tau_needed']:.2f} tokens kept")


def test_a_one_stream_figure_by_hand(rows, committed_runs, claims):
    # HyperQwen's 46 tok/s at 1 stream, 250 W, context not stated (640 assumed): the step is
    # the memory term, 16 GB of weights (weights.csv) + S read and written + 640 tokens of
    # FP8 KV at eta x 936 GB/s; compute (51.2 GFLOP at ~35 TFLOP/s) is 1.5 ms of it
    from claimcheck.predict.carry import carried_terms
    spec = dataclasses.replace(load_engines()["w4a16-hyperqwen"], max_num_seqs=1)
    t = carried_terms(list(committed_runs), "rtx3090", spec, 250.0)
    eta = t["terms"]["eta"].value
    s, kv = t["shape"].state_bytes, t["shape"].kv_bytes_per_token
    step = (16e9 + 2 * s + 640 * kv) / (eta * RTX3090_BW)
    r = rows["hyperqwen-46-c1"]
    assert "context not stated: 640 tokens assumed" in r["carried_assumptions"]
    assert r["carried_model_tok_s"] == pytest.approx(1 / step, rel=2e-3)
    # qwen-warp's README 425 tok/s at 4 streams, its drafter's rows not stated (taken as
    # 1): it needs more than the one token kept per stream per step the plain model keeps
    w = rows["qwenwarp-425-readme"]
    assert w["carried_verify_rows"] == 1 and w["carried_tau_needed"] > 1


def test_a_carried_prediction_never_uses_a_number_of_the_claims_own_card(committed_runs,
                                                                          claims):
    # stand-ins for runs on an RTX 3090: H200 runs of the engines the carried model reads,
    # relabelled as the 3090's. Were any term read from the claim's own card, its name
    # would appear among the source runs, and its numbers (the H200's, 5x the 3090's
    # bandwidth) would move the prediction
    def on_3090(run):
        raw = {**run.provenance.raw, "card": "rtx3090"}
        prov = provenance_of(raw)  # every typed field from the relabelled record
        return dataclasses.replace(run, path=run.path.with_name(
            run.name.replace("h200-", "rtx3090-")), provenance=prov)
    runs = list(committed_runs)
    stand = runs + [on_3090(r) for r in runs if "vllm033" in run_key(r)[1]]
    assert sum(run_key(r)[0] == "rtx3090" for r in stand) >= 8
    ids = {"article-ladder-8-tpot", "article-ladder-64-e2e", "hyperqwen-1035-front",
           "article-long-16-log", "hyperqwen-127-single"}
    with_own, without = rows_of(stand, claims, ids), rows_of(runs, claims, ids)
    for i in ids:
        a, b = with_own[i], without[i]
        assert "rtx3090-" not in a["carried_source_runs"], i
        assert a["carried_source_runs"] and all(
            s.startswith("h200-") for s in a["carried_source_runs"].split()), i
        assert a["local_card"] == "h200"
        assert (a["carried_model_tok_s"], a.get("carried_tau_needed")) == (
            b["carried_model_tok_s"], b.get("carried_tau_needed")), i


def test_verdicts_read_against_the_carried_model_first(rows, committed_runs, tmp_path):
    from claimcheck.files.framefiles import write_table
    from claimcheck.files.paths import ROOT
    from claimcheck.physics.cardfiles import load_ceilings
    from claimcheck.physics.modelfiles import geometry_from_file
    from claimcheck.pipeline.derive import verdict_rows, write_run_record
    raw = ROOT / "data" / "raw"
    geom = geometry_from_file(raw / "models" / "qwen3.8-27b" / "config.json")
    cards, ceilings = load_cards(raw / "cards.csv"), load_ceilings(raw / "ceilings.csv")
    recs = []
    for run in committed_runs:
        write_run_record(run, geom, cards, ceilings, tmp_path / f"{run.path.name}.json")
        recs.append(tmp_path / f"{run.path.name}.json")
    carried = tmp_path / "carried_claims.csv"
    write_table([{k: r.get(k) for k in cc.COLUMNS} for r in rows.values()], carried)
    out = {r["id"]: r for r in verdict_rows(
        raw / "claims.csv", raw / "cards.csv", raw / "ceilings.csv", raw / "weights.csv",
        raw / "models" / "qwen3.8-27b" / "config.json", CONFIG / "protocols.yaml", recs,
        carried_csv=carried)}
    # the article's 8-stream ladder TPOT figure, 317.0 tok/s: the carried model's figure
    # decides (within 10%), the source model's band kept as the cross-check
    r = out["article-ladder-8-tpot"]
    pred = rows["article-ladder-8-tpot"]["carried_model_tok_s"]
    assert r["carried_model_tok_s"] == pytest.approx(pred, rel=1e-5)
    assert r["claim_over_carried_model"] == pytest.approx(317.0 / pred, rel=1e-5)
    assert r["verdict"] == (vc.MATCHES if abs(317.0 / pred - 1) <= 0.10 else vc.ABOVE
                            if pred < 317.0 else vc.SHORT)
    assert r["source_verdict"] == v.BAND and "Cross-check" in r["reason"]
    # a drafter's figure keeps its kind and says what it needs on the carried model
    d = out["tensorfold-764-decode"]
    assert d["verdict"] == d["source_verdict"] == v.NEEDS_SPECULATION
    assert d["carried_model_tok_s"] is None and "No carried model:" in d["reason"]
    # HyperQwen's 1,035 keeps its seed reproduction, the carried model beside it
    h = out["hyperqwen-1035-front"]
    assert h["verdict"] == v.SEED_REPRODUCED and "Beside it, this card's carried" in h["reason"]
