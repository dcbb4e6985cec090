"""Label audit against seed 000's closing checklist, on hand-made registry rows."""

from __future__ import annotations

import pytest

from claimcheck.claims import labels as lb
from claimcheck.claims.metrics import METRICS
from claimcheck.claims.registryfiles import load_claims

DECODE = {"scope": "aggregate", "phase": "decode", "definition": "tokens over a decode window"}
HEADLINE = {"scope": "aggregate", "phase": "unspecified", "definition": "as posted"}


def test_batch_claim_with_workload_and_no_speculation():
    # "~1,035 tok/s aggregate decode" at 64 concurrent requests, 128 in / 512 out, batch
    # mode without speculation; the post printed the streams and that it is decode
    row = {"streams": 64, "stream_relation": "independent_requests", "prompt_tokens": 128,
           "output_tokens": 512, "context_tokens": None, "spec_method": "none",
           "spec_draft_tokens": None}
    st = lb.audit(row, DECODE, given={"streams", "decode_or_e2e"})
    assert st == {"streams": lb.GIVEN, "per_stream_speed": lb.SUPPLIED,
                  "context_per_stream": lb.SUPPLIED,
                  "speculation_rows": lb.NOT_APPLICABLE,
                  "speculation_acceptance": lb.NOT_APPLICABLE,
                  "decode_or_e2e": lb.GIVEN, "left_out": lb.SUPPLIED}


def test_speculating_lanes_without_context_or_rows():
    # eight lanes through a drafter, no prompt size, no draft length, no acceptance
    row = {"streams": 8, "stream_relation": "lanes_of_one_prompt", "prompt_tokens": None,
           "output_tokens": 8859, "context_tokens": None, "spec_method": "DFlash2",
           "spec_draft_tokens": None}
    st = lb.audit(row, DECODE)
    assert st["context_per_stream"] == lb.MISSING
    assert st["speculation_rows"] == lb.MISSING
    assert st["speculation_acceptance"] == lb.MISSING
    assert st["streams"] == lb.SUPPLIED


def test_headline_without_definition_and_unknown_speculation():
    row = {"streams": 8, "stream_relation": "lanes_of_one_prompt", "spec_method": "",
           "context_tokens": 2304}
    st = lb.audit(row, HEADLINE)
    assert st["decode_or_e2e"] == lb.MISSING and st["left_out"] == lb.MISSING
    assert st["per_stream_speed"] == lb.MISSING
    assert st["speculation_rows"] == lb.MISSING  # not known whether it speculates
    assert st["context_per_stream"] == lb.SUPPLIED
    groups = lb.summary(st)
    assert set(groups[lb.MISSING]) >= {"decode_or_e2e", "left_out", "per_stream_speed"}


def test_rows_given_with_speculation():
    row = {"streams": 32, "stream_relation": "independent_requests", "context_tokens": 2304,
           "spec_method": "DSpine", "spec_draft_tokens": 11, "acceptance": None}
    st = lb.audit(row, DECODE, given={"speculation_rows"})
    assert st["speculation_rows"] == lb.GIVEN
    assert st["speculation_acceptance"] == lb.MISSING


def test_unknown_label_is_refused():
    with pytest.raises(ValueError, match="unknown labels"):
        lb.audit({"streams": 1}, DECODE, given={"vibes"})


def test_every_registry_claim_can_be_audited():
    for c in load_claims():
        m = METRICS[c["metric"]]
        st = lb.audit(c.row, {"scope": m.scope, "phase": m.phase, "definition": m.definition})
        assert set(st) == {x.name for x in lb.LABELS}
        assert st["streams"] == lb.SUPPLIED  # streams and relation are required columns
