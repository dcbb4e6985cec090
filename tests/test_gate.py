"""The serving gate on recorded ladders (hand-made level rows): one that passes, one failing
each rule, and plateaus set by max-num-seqs, by the card and by neither. Expected medians,
spreads and growths are worked out here by hand."""

import pytest

from claimcheck.readings.gate import Gate, LevelRow, check, levels, verdict

GATE = Gate(min_levels=3, min_repeats=3, plateau_pct=1.0)


def ladder(spec, roof=None, reference=(), tokens=None, joules=None):
    """spec: {streams: [aggregate per repeat]}; roof: {streams: roofline tok/s}."""
    return [LevelRow(streams=n, aggregate_tok_s=v, reference=n in reference,
                     output_tokens=(tokens or {}).get(n), energy_j=(joules or {}).get(n),
                     roofline_tok_s=(roof or {}).get(n))
            for n, vals in spec.items() for v in vals]


# a ladder that keeps growing: 1 -> 8 -> 32 streams, 3 repeats each
GROWING = {1: [50.0, 52.0, 51.0], 8: [400.0, 390.0, 410.0], 32: [1500.0, 1400.0, 1450.0]}
ROOF = {1: 60.0, 8: 470.0, 32: 1800.0, 64: 3400.0, 128: 3400.0}


def test_levels_median_spread_growth_and_tok_per_w():
    lv = levels(ladder(GROWING, ROOF, tokens={8: 4096}, joules={8: 2048.0}))
    assert [x.streams for x in lv] == [1, 8, 32]
    assert (lv[1].median_tok_s, lv[1].min_tok_s, lv[1].max_tok_s) == (400.0, 390.0, 410.0)
    assert lv[0].growth_pct is None
    assert lv[1].growth_pct == pytest.approx((400 / 51 - 1) * 100)
    assert lv[1].tok_s_per_w == pytest.approx(2.0)  # 4096 tokens / 2048 J
    assert lv[0].tok_s_per_w is None


def test_gate_passes():
    res = check(ladder(GROWING, ROOF), GATE, max_num_seqs=64)
    assert res.passed and not res.plateaus
    line = verdict(res, GATE)
    assert line.startswith("Gate **passes**")
    assert "No plateau" in line


def test_gate_fails_too_few_levels_reference_not_counted():
    spec = {1: [50.0, 51.0, 52.0], 8: [400.0, 401.0, 402.0], 128: [900.0, 910.0, 905.0]}
    res = check(ladder(spec, ROOF, reference=(128,)), GATE, max_num_seqs=64)
    assert not res.passed
    assert "too few levels: 2 counted" in verdict(res, GATE)
    assert "at least 3" in res.failures[0]


def test_gate_fails_too_few_repeats():
    spec = {**GROWING, 8: [400.0, 410.0]}
    res = check(ladder(spec, ROOF), GATE, max_num_seqs=64)
    assert not res.passed
    assert res.failures == ("too few repeats: 2 at 8 streams; the gate needs at least 3 "
                            "per level",)
    assert verdict(res, GATE).startswith("Gate **fails**: too few repeats")


def test_plateau_set_by_max_num_seqs():
    # 48 slots: 64 streams queue 16; median 3200 -> 3210 is +0.3125 %
    spec = {**GROWING, 48: [3200.0, 3190.0, 3205.0], 64: [3210.0, 3215.0, 3190.0]}
    roof = {**ROOF, 48: 2600.0}
    res = check(ladder(spec, roof), GATE, max_num_seqs=48)
    assert res.passed  # a plateau is reported, it does not fail the gate
    (p,) = res.plateaus
    assert (p.from_streams, p.to_streams, p.cause) == (48, 64, "max-num-seqs")
    assert p.growth_pct == pytest.approx((3210 / 3200 - 1) * 100)
    line = verdict(res, GATE)
    assert "48 → 64 streams changes +0.3%, set by max-num-seqs" in line
    assert "max-num-seqs = 48" in line


def test_plateau_set_by_card_and_by_neither():
    # the roofline stops growing from 64 to 96 (compute bound): the card
    spec = {**GROWING, 64: [3000.0] * 3, 96: [3010.0] * 3}
    res = check(ladder(spec, {**ROOF, 96: 3400.0}), GATE, max_num_seqs=128)
    assert res.plateaus[0].cause == "card"
    assert "set by card" in verdict(res, GATE)
    # the roofline still grows and the measured is far below it: neither
    res = check(ladder(spec, {**ROOF, 64: 6000.0, 96: 9000.0}), GATE, max_num_seqs=128)
    assert res.plateaus[0].cause == "neither"
    assert "neither max-num-seqs nor the card" in verdict(res, GATE)
    assert "33% of the roofline's 9,000" in verdict(res, GATE)
