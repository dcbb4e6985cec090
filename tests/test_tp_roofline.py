"""Tensor-parallel roofline: at one card it is today's formula exactly; at two cards the
memory and compute terms halve and a ring all-reduce over the card link is added. Expected
values are worked out by hand from the formula in physics/roofline.py's docstring."""

import csv
from types import SimpleNamespace

import pytest

from claimcheck.claims.registryfiles import load_weight_rows
from claimcheck.config.engines import Engine, server_argv
from claimcheck.files.errors import InputError
from claimcheck.files.paths import RAW
from claimcheck.physics import roofline as rl
from claimcheck.physics.cardfiles import load_cards, load_ceilings
from claimcheck.physics.inputs import Weights, roofline_for
from claimcheck.physics.modelfiles import geometry_from_file

GEOM = geometry_from_file(RAW / "models/qwen3.8-27b/config.json")
CARDS = load_cards()
CEILINGS = load_ceilings()
WEIGHTS = load_weight_rows()

# 10 GB weights, 1 TB/s, 2 GFLOP per token, 100 TFLOP/s, 1 MB state, 0.1 MB KV per token
BASE = dict(weight_bytes=10e9, bandwidth_bytes_s=1e12, flops_per_row=2e9,
            peak_flops_s=100e12, eta=0.8, state_bytes=1e6, kv_bytes_per_token=1e5,
            context_tokens=1000)


def test_one_card_is_todays_formula_exactly():
    m = rl.Roofline(**BASE)
    assert m.cards == 1
    for b in (1, 7, 64, 5000):
        mem = (10e9 + b * (2 * 1e6 + 1e5 * 1000)) / (0.8 * 1e12)
        comp = b * 1 * 2e9 / 100e12
        p = rl.point(m, b)
        assert p.memory_ms == mem * 1e3 and p.compute_ms == comp * 1e3
        assert p.step_ms == max(mem, comp) * 1e3
        assert p.aggregate_tok_s == b / max(mem, comp)
    assert rl.ceiling_b1_tok_s(m) == 0.8 * 1e12 / 10e9
    assert rl.compute_plateau_tok_s(m) == 100e12 / 2e9
    assert rl.allreduce_time_s(m, 64) == 0.0


def test_two_cards_by_hand():
    # all-reduce: 2 all-reduces x 4 layers x hidden 1000 x 2 bytes = 16,000 B per token
    m = rl.Roofline(**BASE, cards=2, allreduce_bytes_per_row=16000, link_bytes_s=50e9)
    b = 8
    mem = (10e9 + 8 * 102e6) / 0.8e12 / 2          # 6.76 ms
    comp = 8 * 2e9 / 100e12 / 2                      # 0.08 ms
    link = 2 * (2 - 1) / 2 * 8 * 16000 / 50e9        # 2.56 us
    p = rl.point(m, b)
    assert p.memory_ms == pytest.approx(6.76)
    assert p.compute_ms == pytest.approx(comp * 1e3) == pytest.approx(0.08)
    assert p.step_ms == pytest.approx((mem + link) * 1e3)
    assert p.step_ms == pytest.approx(6.76256)
    assert p.aggregate_tok_s == pytest.approx(8 / 6.76256e-3)
    assert p.bound == "memory"
    # one stream: 10 GB / (2 x 0.8 TB/s) = 6.25 ms, + 16,000 B / 50 GB/s = 0.32 us
    assert rl.ceiling_b1_tok_s(m) == pytest.approx(1 / (6.25e-3 + 0.32e-6))
    # compute plateau: per stream 2e9 / 200e12 = 10 us + 0.32 us of link
    assert rl.compute_plateau_tok_s(m) == pytest.approx(1 / 10.32e-6)
    # both terms halve, so the bend is the one-card bend
    assert rl.bend_streams(m) == pytest.approx(rl.bend_streams(rl.Roofline(**BASE)))


def test_allreduce_bytes_from_geometry():
    g = SimpleNamespace(num_layers=4, hidden_size=1000)
    assert rl.allreduce_bytes_per_row(g) == 16000
    assert rl.allreduce_bytes_per_row(g, activation_bytes=1) == 8000


def test_tp_needs_a_link_and_an_integer_card_count():
    with pytest.raises(ValueError, match="link_bytes_s"):
        rl.Roofline(**BASE, cards=2, allreduce_bytes_per_row=16000)
    with pytest.raises(ValueError, match="cards must be an integer"):
        rl.Roofline(**BASE, cards=0)


def test_two_cards_fit_what_one_cannot():
    one_gib = 2**30
    big = dict(BASE, weight_bytes=30 * one_gib, state_bytes=0, kv_bytes_per_token=0)
    with pytest.raises(ValueError, match="do not fit"):
        rl.Roofline(**big, memory_bytes=24 * one_gib)
    m = rl.Roofline(**big, memory_bytes=24 * one_gib, cards=2,
                    allreduce_bytes_per_row=1, link_bytes_s=1e9)
    assert m.cards == 2


def test_roofline_for_one_card_unchanged_and_two_cards_use_the_link():
    kw = dict(weights=Weights(format="bf16"), ceilings=CEILINGS, weight_rows=WEIGHTS,
              context_tokens=2048)
    m0, s0 = roofline_for(GEOM, CARDS["h200"], **kw)
    m1, s1 = roofline_for(GEOM, CARDS["h200"], **kw, cards=1)
    assert m0 == m1 and s0 == s1 and "cards" not in s1
    m2, s2 = roofline_for(GEOM, CARDS["h200"], **kw, cards=2)
    with open(RAW / "cards.csv", encoding="utf-8-sig", newline="") as f:
        h200 = next(r for r in csv.DictReader(f) if r["card"] == "h200")
    assert m2.link_bytes_s == float(h200["link_bw_gb_s"]) * 1e9
    assert s2["link_source"] == h200["source_link"] and s2["cards"] == 2
    assert m2.allreduce_bytes_per_row == 2 * GEOM.num_layers * GEOM.hidden_size * 2
    for b in (1, 32):
        expect = (max(rl.memory_time_s(m1, b), rl.compute_time_s(m1, b)) / 2
                  + (2 * 1 / 2) * b * m2.allreduce_bytes_per_row / m2.link_bytes_s)
        assert rl.step_time_s(m2, b) == pytest.approx(expect)


def test_card_without_link_refused_for_tp(tmp_path):
    text = (RAW / "cards.csv").read_text(encoding="utf-8-sig").splitlines()
    header = text[0].split(",")
    i = header.index("link_bw_gb_s")
    rows = list(csv.reader(text))
    for r in rows[1:]:
        r[i] = ""
    p = tmp_path / "cards.csv"
    with open(p, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    card = load_cards(p)["h200"]
    with pytest.raises(InputError, match="no link bandwidth"):
        roofline_for(GEOM, card, weights=Weights(format="bf16"), ceilings=CEILINGS,
                     weight_rows=WEIGHTS, cards=2)


def test_engine_tensor_parallel_argv():
    e = Engine(name="x", description="", model="m", weights="dummy", served_model_name="x",
               tensor_parallel_size=2)
    argv = server_argv(e, vllm=["vllm"], host="127.0.0.1", port=1, tokenizer_dir=None)
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    one = Engine(name="x", description="", model="m", weights="dummy", served_model_name="x")
    assert "--tensor-parallel-size" not in server_argv(one, vllm=["vllm"], host="h", port=1,
                                                       tokenizer_dir=None)
