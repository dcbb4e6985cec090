"""Verdict rules on hand-made claims and rooflines, each answer worked by hand; and the
derived verdicts table holds every registry claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimcheck.core import roofline as rl
from claimcheck.core import verdicts as v

# A roofline worked by hand: 1e10 weight bytes at 1e12 bytes/s = 10 ms per step, nothing
# else read, compute negligible (1 FLOP per row at 1e18 FLOP/s). One stream: 100 tok/s;
# two streams: 200 tok/s (the step still reads the weights once).
R = rl.Roofline(weight_bytes=1e10, bandwidth_bytes_s=1e12, flops_per_row=1.0,
                peak_flops_s=1e18, state_bytes=0.0, kv_bytes_per_token=0.0,
                context_tokens=0, rows=1)


def ceiling(streams: int, agg: float) -> v.Ceiling:
    p = rl.point(R, streams)
    return v.Ceiling(p.aggregate_tok_s, rl.tau_needed(R, streams, agg), p.bound)


def claim(value: float, streams: int = 1, metric: str = "e2e_aggregate", **kw) -> dict:
    row = {"id": "c", "metric": metric, "value": value, "aggregate_tok_s": value,
           "streams": streams, "streams_running": None, "spec_method": "none",
           "assumed_fields": ""}
    row.update(kw)
    return row


def test_roofline_by_hand():
    assert rl.point(R, 1).aggregate_tok_s == pytest.approx(100.0)
    assert rl.point(R, 2).aggregate_tok_s == pytest.approx(200.0)


def test_consistent_within_tolerance():
    # 104 <= 100 x 1.05: consistent; 104% of the roofline
    out = v.verdict(claim(104.0), ceiling(1, 104.0))
    assert out.kind == v.CONSISTENT
    assert "104% of the plain roofline 100.0 tok/s" in out.reason
    assert out.numbers["claim_over_roofline"] == pytest.approx(1.04)


def test_needs_speculation_gives_tau():
    # 250 tok/s at one stream on a 10 ms step: 2.5 tokens kept per step
    out = v.verdict(claim(250.0), ceiling(1, 250.0))
    assert out.kind == v.NEEDS_SPECULATION
    assert out.numbers["tau_needed"] == pytest.approx(2.5)
    assert "2.50 tokens kept per stream per step" in out.reason


def test_definition_inflates_by_the_measured_ratio():
    # 112 tok/s over a 100 tok/s roofline; the fastest second reads 10% above end to end
    # on our timelines: 112 / 1.10 = 101.8 <= 105 fits
    out = v.verdict(claim(112.0, metric="fastest_second"), ceiling(1, 112.0),
                    inflation=1.10, inflation_source="hand")
    assert out.kind == v.DEFINITION_INFLATES
    assert "+10% above end to end" in out.reason and "101.8 tok/s fits" in out.reason
    # the same ratio cannot rescue 130: 130 / 1.1 = 118.2 > 105
    assert v.verdict(claim(130.0, metric="fastest_second"), ceiling(1, 130.0),
                     inflation=1.10).kind == v.NEEDS_SPECULATION


def test_not_comparable_for_prefill_and_for_no_roofline():
    assert v.verdict(claim(5000.0, metric="prefill"), ceiling(1, 5000.0)).kind == \
        v.NOT_COMPARABLE
    out = v.verdict(claim(50.0), v.Ceiling(None, None, "", "no byte count for weights 'q4'"))
    assert out.kind == v.NOT_COMPARABLE and "no byte count" in out.reason


def test_reproduced_and_not_reproduced():
    rep = v.Reproduction(97.0, 97.0, "hand")
    # 100 / 97 - 1 = +3.1%: within 5%
    assert v.verdict(claim(100.0), ceiling(1, 100.0), reproduction=rep).kind == v.REPRODUCED
    # 100 / 80 - 1 = +25%
    out = v.verdict(claim(100.0), ceiling(1, 100.0), reproduction=v.Reproduction(80, 80, "h"))
    assert out.kind == v.NOT_REPRODUCED and "+25% from 80.0 tok/s" in out.reason
    # an unstated definition is reproduced anywhere within the definitions' range
    rng = v.Reproduction(80.0, 96.0, "h")
    assert v.verdict(claim(100.0, metric="unspecified"), ceiling(1, 100.0),
                     reproduction=rng).kind == v.REPRODUCED  # 100 <= 96 x 1.05 = 100.8


def test_not_testable_with_a_real_drafter():
    # 250 at one stream needs tau 2.5; MTP is stated, its acceptance needs real weights
    out = v.verdict(claim(250.0, spec_method="MTP"), ceiling(1, 250.0))
    assert out.kind == v.NOT_TESTABLE and "2.50 tokens" in out.reason and "MTP" in out.reason
    rep = v.Reproduction(100.0, 100.0, "replay")
    assert v.verdict(claim(250.0, spec_method="MTP"), ceiling(1, 250.0),
                     reproduction=rep).kind == v.NOT_TESTABLE


def test_streams_running_and_assumed_fields():
    # 240 tok/s summed over 2 running (8 requested): 120 per stream; roofline at 2 = 200
    c = claim(240.0, streams=8, streams_running=2, assumed_fields="card,context_tokens")
    out = v.verdict(c, ceiling(2, 240.0))
    assert out.numbers["per_stream_tok_s"] == pytest.approx(120.0)
    assert out.numbers["claim_over_roofline"] == pytest.approx(1.2)
    assert "2 streams running (streams_running; 8 requested)" in out.reason
    assert "Weaker evidence: card, context_tokens assumed" in out.reason


ROOT = Path(__file__).resolve().parents[1]


def test_every_claim_gets_one_verdict_and_a_label_audit(tmp_path):
    from claimcheck.core.claims import load_claims
    from claimcheck.report.derive import run_record, verdict_rows
    raw = ROOT / "data" / "raw"
    runs = sorted(p for p in (raw / "runs").iterdir() if p.is_dir())
    cfg = raw / "models" / "qwen3.8-27b" / "config.json"
    recs = []
    for d in runs:
        run_record(d, raw / "cards.csv", raw / "ceilings.csv", cfg, tmp_path / f"{d.name}.json")
        recs.append(tmp_path / f"{d.name}.json")
    rows = verdict_rows(raw / "claims.csv", raw / "cards.csv", raw / "ceilings.csv",
                        raw / "weights.csv", cfg, ROOT / "config" / "protocols.yaml", runs, recs)
    ids = [c["id"] for c in load_claims(raw / "claims.csv")]
    assert [r["id"] for r in rows] == ids
    for r in rows:
        assert r["verdict"] in v.KINDS and r["reason"]
        assert all(r[f"label_{k}"] for k in ("streams", "decode_or_e2e", "left_out"))


def test_assumed_drafter_is_said_to_be_assumed():
    out = v.verdict(claim(250.0, spec_method="MTP", assumed_fields="spec_method"),
                    ceiling(1, 250.0))
    assert "drafter MTP (assumed by the registry)" in out.reason
    assert "Weaker evidence: spec_method assumed" in out.reason


def test_render_verdicts_one_line_per_claim():
    from claimcheck.report.verdicts_md import render_verdicts
    rows = []
    for cid, val, kw in (("a", 104.0, {}), ("b", 250.0, {"assumed_fields": "card"})):
        c = claim(val, **kw)
        out = v.verdict(c, ceiling(1, val))
        rows.append({"id": cid, "card": "x", "metric": "e2e_aggregate", "streams": 1,
                     "streams_running": None, "verdict": out.kind, "reason": out.reason,
                     "labels_given": "streams", "labels_supplied": "context_per_stream",
                     "labels_missing": "", **out.numbers})
    md = render_verdicts(rows)
    lines = md.splitlines()
    assert lines[0] == "### Verdicts"
    assert "2 registry claims: 1 consistent, 1 needs speculation" in md
    items = [x for x in lines if x.startswith("- **")]
    assert len(items) == 2
    assert items[0].startswith("- **a** (x, e2e_aggregate): *consistent*: 104.0 tok/s")
    assert "card assumed by the registry" in items[1] and "tau needed 2.50" in items[1]
    assert "supplied by the registry: context_per_stream" in items[1]
