"""A verdict's kind decided apart from its words (issue 40 item 2): ``verdict_rules.decide``
gives a typed record, ``verdict_words.reason`` writes the sentence from that record alone.
Numbers worked by hand on the roofline of tests/test_verdicts.py (10 ms per step at one
stream: a plain 100 tok/s; eta 0.8: 12.5 ms, 80 tok/s; 0.1 ms of arithmetic per stream)."""

from __future__ import annotations

import dataclasses

import pytest

from claimcheck.verdicts import verdict_rules as vr
from claimcheck.verdicts import verdict_words as vw
from claimcheck.verdicts import verdicts as v
from tests.test_verdicts import ceiling, claim, source


def test_every_rule_has_a_writer_and_every_band_rule_a_kind():
    assert set(vw.WRITERS) == set(vr.Rule)
    assert set(vr.BAND_KINDS) <= set(vr.Rule)
    assert set(vr.BAND_KINDS.values()) <= set(v.KINDS)


def test_the_decision_is_a_frozen_record_of_kind_rule_and_numbers():
    # 250 tok/s at one stream over a plain 100: 2.5x, no drafter stated
    d = vr.decide(vr.Evidence(claim(250.0), ceiling(1)))
    assert (d.kind, d.rule) == (v.NEEDS_SPECULATION, vr.Rule.NEEDS_DRAFTER)
    assert d.reference == pytest.approx(100.0)
    assert d.numbers["tau_needed"] == pytest.approx(2.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.kind = v.WITHIN  # type: ignore[misc]
    # the same figure read 3x above end to end: 250 / 3 = 83.3 tok/s fits under 100
    d = vr.decide(vr.Evidence(claim(250.0), ceiling(1), inflation=3.0, inflation_source="s"))
    assert (d.kind, d.rule) == (v.DEFINITION_INFLATES, vr.Rule.INFLATES_PLAIN)
    assert d.numbers["inflation"] == 3.0
    # ... but read 2x: 125 tok/s is 25% over 100, still a drafter
    assert vr.decide(vr.Evidence(claim(250.0), ceiling(1), inflation=2.0)).rule \
        is vr.Rule.NEEDS_DRAFTER


def test_evidence_after_the_source_is_by_name_only():
    with pytest.raises(TypeError):
        vr.Evidence(claim(80.0), ceiling(1), None, 3.0)  # type: ignore[misc]


def test_a_band_decision_names_its_side_floor_and_bound_met():
    # at least 70 tok/s at one stream against the eta-0.8 model: ceiling 80, floor
    # 1 / 12.6 ms = 79.37 tok/s; 70 is under the floor, but a lower bound the band meets
    d = vr.decide(vr.Evidence(claim(70.0, bound="at_least"), ceiling(1), source(1)))
    assert (d.kind, d.rule, d.side) == (v.AT_SOURCE, vr.Rule.AT_SOURCE, "inside")
    assert d.reference == pytest.approx(80.0) and d.floor == pytest.approx(1000 / 12.6)
    assert d.bound_met
    # 70 stated as a figure (no bound): 70 / 79.37 = 88.2%, beyond 5% under: short
    d = vr.decide(vr.Evidence(claim(70.0), ceiling(1), source(1)))
    assert (d.kind, d.rule, d.side, d.bound_met) == (v.SHORT, vr.Rule.SHORT, "below", False)


def test_a_seed_decision_says_where_the_figure_lies():
    rep = v.SeedReproduction("000", 1000.0, 1100.0, ("a", "b"), ("x", "y"))
    # spread 10% widens the 5% tolerance: 1,200 is 9.1% over 1,100, within it
    d = vr.decide(vr.Evidence(claim(1200.0, 64), ceiling(64), seed_reproduction=rep))
    assert (d.kind, d.side) == (v.SEED_REPRODUCED, "above")
    assert d.tolerance == pytest.approx(0.1)
    assert vr.decide(vr.Evidence(claim(900.0, 64), ceiling(64), seed_reproduction=rep)).side \
        == "below"
    d = vr.decide(vr.Evidence(claim(1250.0, 64), ceiling(64), seed_reproduction=rep))
    assert (d.kind, d.side) == (v.SEED_NOT_REPRODUCED, "above")  # 13.6% over: beyond 10%


def test_the_words_are_written_from_the_record_alone():
    # a record made by hand, never decided: the writer prints what it holds
    e = vr.Evidence(claim(80.0), ceiling(1))
    d = vr.Decision(v.WITHIN, vr.Rule.WITHIN, e, {}, reference=100.0)
    assert vw.reason(d) == (
        "80.0 tok/s at 1 stream is 80.0% of the plain roofline 100.0 tok/s (memory bound); "
        "its source publishes no one-stream, no-drafter figure to calibrate on, so eta = 1 "
        "(the plain roofline).")
    # the same evidence recorded as a replay not reproduced: the words follow the record
    e = vr.Evidence(claim(80.0), ceiling(1), reproduction=v.Reproduction(100.0, 100.0, "r"))
    d = vr.Decision(v.NOT_REPRODUCED, vr.Rule.REPLAY, e, {}, reference=100.0)
    assert vw.reason(d) == ("80.0 tok/s at 1 stream is -20.0% from 100.0 tok/s measured here "
                            "(r), beyond 5%.")
    out = vw.verdict(e)  # decided: 80 is 20% under 100, beyond 5%
    assert (out.kind, out.reason) == (d.kind, vw.reason(d))
