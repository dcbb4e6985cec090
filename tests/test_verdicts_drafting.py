"""Verdicts count the rows a drafter verifies (issue 41 item 5): the tokens kept per stream
per step a drafting figure needs at its own verify rows, B r rows through every matrix
(seed 000, "Speculation spends the same arithmetic"), checked against the seed's own
arithmetic by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimcheck.verdicts import verdict_drafting as vd
from claimcheck.verdicts import verdict_rules as vr
from claimcheck.verdicts import verdict_words as vw
from claimcheck.verdicts import verdicts as v

ROOT = Path(__file__).resolve().parents[1]
F = 51.2e9
"""FLOP per position, seed 000 ("Where the line bends": 25.6 billion weights touched, 2 each)."""
P_5090 = 209.5e12
"""The RTX 5090's dense BF16 reference Cinference's benchmarks use (seed 000)."""


def c_ms(streams: float) -> float:
    """The arithmetic of one row per stream, B F / P, in ms, on the 5090."""
    return streams * F / P_5090 * 1e3


def test_seed_cinference_needs_about_4_3_at_a_16_position_verify():
    # seed 000: "128 rows x 51.2 GFLOP is 6.55 TFLOP per step, 31 ms even at the 209.5
    # TFLOP/s ... 1,099 tok/s across eight lanes needs about 4.3 tokens per lane per step"
    flops = 8 * 16 * F
    assert flops == pytest.approx(6.55e12, rel=1e-3)
    assert 16 * c_ms(8) == pytest.approx(31.28, abs=0.01)
    # the memory term (8 / 575.6 tok/s = 13.9 ms at eta 1) is under the 31 ms: compute binds
    tau = vd.tau_at_rows(1099.0, 8, 13.9, c_ms(8), 16)
    assert tau == pytest.approx(1099 / 8 * 0.03128, abs=1e-3)
    assert round(tau, 1) == 4.3
    # at one row the verify is free and the plain ratio comes back: 1099 / 8 x 13.9 ms
    assert vd.tau_at_rows(1099.0, 8, 13.9, c_ms(8), 1) == pytest.approx(1.91, abs=0.01)


def test_seed_ninfer_needs_about_7_with_dspine_k11():
    # DSpine K11 (--draft-tokens 11): 12 rows per lane; 32 x 12 x 51.2 GFLOP at 209.5
    # TFLOP/s is 93.8 ms a step; 2,439.6 / 32 = 76.24 tok/s per lane x 93.8 ms = 7.15
    assert 12 * c_ms(32) == pytest.approx(93.85, abs=0.05)
    tau = vd.tau_at_rows(2439.6, 32, 18.7, c_ms(32), 12)
    assert tau == pytest.approx(2439.6 / 32 * 0.09385, abs=0.01)
    assert 6.9 < tau < 7.3  # the "about 7"
    with pytest.raises(ValueError, match="rows >= 1"):
        vd.tau_at_rows(2439.6, 32, 18.7, c_ms(32), 0)


def _row(**kw):
    return {"spec_method": "", "spec_draft_tokens": None, "verify_rows": None,
            "tokens_kept_per_step": None, **kw}


def test_verify_rows_come_from_the_registry_never_from_a_name():
    rows = [_row(spec_method="Alpha", spec_draft_tokens=7),
            _row(spec_method="alpha", spec_draft_tokens=15),
            _row(spec_method="Beta", spec_draft_tokens=3),
            _row(spec_method="Gamma", verify_rows=16),
            _row(spec_method="none", spec_draft_tokens=5)]  # no drafter: not a size
    doc = vd.documented_rows(rows)
    assert doc == {"alpha": (8, 16), "beta": (4,), "gamma": (16,)}
    # stated k: k + 1; verify_rows given: as given, assumed or stated
    assert vd.verify_rows(_row(spec_method="Beta", spec_draft_tokens=11), [], doc)[:2] == \
        (12, 12)
    assert vd.verify_rows(_row(spec_method="Gamma", verify_rows=16), ["verify_rows"], doc) \
        == (16, 16, "verify rows assumed by the registry")
    # not stated: the range over the documented sizes, or the one size, said so
    lo, hi, words = vd.verify_rows(_row(spec_method="ALPHA"), [], doc)
    assert (lo, hi) == (8, 16) and "not stated" in words and "Alpha" not in words
    assert vd.verify_rows(_row(spec_method="Beta"), [], doc)[:2] == (4, 4)
    # no size documented anywhere: at least the tokens its source says it keeps, else one
    assert vd.verify_rows(_row(spec_method="Delta", tokens_kept_per_step=5.6), [], doc)[:2] \
        == (6, 6)
    lo, hi, words = vd.verify_rows(_row(spec_method="Delta"), [], doc)
    assert (lo, hi) == (1, 1) and "the verify taken as free" in words
    assert vd.verify_rows(_row(spec_method="none"), [], doc) == (1, 1, "")


def _claim(agg: float, streams: int) -> dict:
    return {"metric": "decode_aggregate", "aggregate_tok_s": agg, "streams": streams,
            "streams_running": None, "spec_method": "X", "assumed_fields": "",
            "per_stream_tok_s": agg / streams}


def test_the_verdict_says_the_rows_and_the_acceptance():
    # 8 streams on a 10 ms step (800 tok/s plain), arithmetic 1 ms per row: 1,600 tok/s at
    # 12 rows needs 200 x 12 ms = 2.4 tokens, at one row 2.0
    d = vd.Drafting(12, 12, "X drafts 11 (stated), plus the target's own position",
                    vd.tau_at_rows(1600, 8, 10, 1, 12), vd.tau_at_rows(1600, 8, 10, 1, 12),
                    kept=2.0, kept_words="its model card")
    out = vw.verdict(vr.Evidence(_claim(1600.0, 8), v.Ceiling(800.0, "memory"), drafting=d))
    assert out.kind == v.NEEDS_SPECULATION
    assert out.numbers["tau_needed"] == pytest.approx(2.4)
    assert out.numbers["verify_rows_per_stream"] == 12
    assert out.numbers["claim_over_roofline"] == pytest.approx(2.0)  # the plain ratio stays
    assert "it needs 2.40 tokens kept per stream per step at 12 verify rows per stream (X " \
           "drafts 11 (stated), plus the target's own position)" in out.reason
    assert "its source states 2 tokens kept per step (its model card): 1.20x short of it" \
        in out.reason
    # kept at least what it needs: enough; more than the rows verified: out of reach
    enough = vd.Drafting(12, 12, "", 2.4, 2.4, kept=2.5, kept_words="w")
    assert "(w): enough" in enough.reach_text()
    assert "more than the 4 rows it verifies" in vd.Drafting(4, 4, "", 4.5, 4.5).reach_text()
    # a range of rows: both ends' needs
    rng = vd.Drafting(8, 16, "not stated", vd.tau_at_rows(1600, 8, 10, 1, 8),
                      vd.tau_at_rows(1600, 8, 10, 1, 16))
    assert rng.need_text().startswith("2.00 to 3.20 tokens kept per stream per step at 8 to "
                                      "16 verify rows per stream (not stated)")
    assert rng.numbers()["tau_needed_high"] == pytest.approx(3.2)
    # one stream's solo figures of the same drafter: the batch needs more than any kept
    solo = vd.Drafting(12, 12, "", 7.16, 7.16, solo=(vd.Solo("en", 155.5, 1.86),
                                                      vd.Solo("py", 511.0, 6.13)))
    assert "needed 1.86 (en, 155.5 tok/s) and 6.13 (py, 511.0 tok/s) at their rows: more " \
           "than any of them needed alone" in solo.reach_text()


@pytest.fixture(scope="module")
def rows():
    """The verdict rows of the committed registry with no run record (the drafting numbers
    need none)."""
    from claimcheck.pipeline.derive import verdict_rows
    raw = ROOT / "data" / "raw"
    return {r["id"]: r for r in verdict_rows(
        raw / "claims.csv", raw / "cards.csv", raw / "ceilings.csv", raw / "weights.csv",
        raw / "models" / "qwen3.8-27b" / "config.json", ROOT / "config" / "protocols.yaml",
        [])}


def test_registry_drafting_figures_at_their_rows(rows):
    c = rows["cinference-1099-decode"]  # the article's 16-position verify (assumed)
    assert c["verify_rows_per_stream"] == 16
    assert c["tau_needed"] == pytest.approx(4.30, abs=0.01)
    assert c["claim_over_roofline"] == pytest.approx(1.91, abs=0.01)
    assert "4.30 tokens kept per stream per step at 16 verify rows per stream" in c["reason"]
    # fafstmobel's 4.016 accepted per round plus the target's token covers it, as the seed
    assert c["tokens_kept_stated"] == pytest.approx(5.016) and ": enough" in c["reason"]
    n = rows["ninfer-dspine-2439-windows"]  # K11: 12 rows
    assert n["verify_rows_per_stream"] == 12 and 6.9 < n["tau_needed"] < 7.3
    # more than even the Python solo run needed at one stream (511.0 tok/s)
    assert "more than any of them needed alone" in n["reason"]
    assert "ninfer-dspine-solo-python=" in n["solo_tau"]
    # MTP3 at 8 streams: 4 rows, 32 rows in all, still under the memory term
    m = rows["ninfer-mtp3-8"]
    assert m["verify_rows_per_stream"] == 4
    assert "at 4 verify rows per stream" in m["reason"]
    assert m["tau_needed"] == pytest.approx(m["claim_over_roofline"])
    # seed 002's 7 drafts: 8 rows, and its ~2.5 tokens per chunk
    r = rows["repro3090-chat-greedy"]
    assert r["verify_rows_per_stream"] == 8 and r["tokens_kept_stated"] == 2.5
    # TensorFold's DFlash2 (assumed, size unstated): the registry's DFlash2 sizes, 8 to 16
    t = rows["tensorfold-764-decode"]
    assert (t["verify_rows_per_stream"], t["verify_rows_high"]) == (8, 16)
    assert t["tau_needed"] < t["tau_needed_high"]
    assert "not stated: the sizes the registry documents for DFlash2" in t["reason"]
    # HyperQwen's quoting mode: DFLASH_TOKENS=15, 16 rows
    assert rows["hyperqwen-381-quoting"]["verify_rows_per_stream"] == 16
    # no drafter: one row, tau the plain ratio
    h = rows["hyperqwen-1035-front"]
    assert h["verify_rows_per_stream"] == 1
    assert h["tau_needed"] == pytest.approx(h["claim_over_roofline"])
