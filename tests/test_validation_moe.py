"""Class: a mixture of experts at batch reads the experts its streams touch.

With k of E experts per token and B streams routing uniformly and independently, the
expected fraction of experts touched in one step is 1 - (1 - k/E)^B (worked by hand here).
"""

import json

import pytest

from claimcheck.physics import roofline as rl
from claimcheck.physics.geometry import geometry
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.physics.units import GB

from ._cli import QWEN, cli, one_line_error

# Mixtral-8x7B's published config.json (the keys the geometry reads).
MIXTRAL = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
           "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
           "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
           "num_experts_per_tok": 2, "vocab_size": 32000, "tie_word_embeddings": False}

# By hand: one expert = 3 x 4096 x 14336 = 176,160,768 weights; 32 layers.
EXPERT = 3 * 4096 * 14336
ATTN = 4096 * 4096 * 2 + 2 * 4096 * 1024  # q, o (32 heads of 128) + k, v (8 KV heads)
ROUTER = 4096 * 8
HEAD = 32000 * 4096


def test_mixtral_geometry_by_hand():
    g = geometry(MIXTRAL)
    assert (g.num_experts, g.experts_per_token) == (8, 2)
    assert g.routed_expert_weights == 32 * 8 * EXPERT
    assert g.weights_per_token == 32 * (ATTN + ROUTER + 2 * EXPERT) + HEAD
    assert g.weights_all_experts == 32 * (ATTN + ROUTER + 8 * EXPERT) + HEAD
    assert round(g.weights_all_experts / 1e9, 2) == 46.57  # Mixtral's ~46.7 B less embeddings


@pytest.mark.parametrize(("k", "e", "b", "by_hand"), [
    (2, 8, 1, 0.25),                       # one stream: the active experts only
    (2, 8, 2, 1 - 0.75**2),                # 0.4375
    (2, 8, 8, 1 - 0.1001129150390625),     # 0.75^8 = 0.100112915...
    (8, 128, 1, 0.0625),                   # Qwen3-MoE-style 8 of 128
    (8, 128, 16, 1 - (120 / 128) ** 16),   # 0.6446...
    (1, 1, 5, 1.0),                        # one expert: always all of it
])
def test_expert_coverage_formula(k, e, b, by_hand):
    assert rl.expert_coverage(k, e, b) == pytest.approx(by_hand, rel=1e-12)


def test_coverage_limits():
    assert rl.expert_coverage(2, 8, 1000) == pytest.approx(1.0, abs=1e-12)  # all experts
    assert rl.expert_coverage(2, 8, 0) == 0.0
    with pytest.raises(ValueError, match="k <= E"):
        rl.expert_coverage(9, 8, 1)


def mixtral_h200(**kw):
    g = geometry(MIXTRAL)
    w_all = g.weights_all_experts * 2  # bf16 bytes
    return rl.for_model(g, weight_bytes=w_all, bandwidth_bytes_s=4800 * GB, tflops=989.4, **kw)


def test_weight_read_at_limits_and_between():
    m = mixtral_h200()
    routed = 32 * 8 * EXPERT * 2
    assert m.routed_expert_bytes == pytest.approx(routed)
    # B = 1: every weight but the 6 untouched experts of each layer = active weights x 2 B
    assert rl.weight_read_bytes(m, 1) == pytest.approx(geometry(MIXTRAL).weights_per_token * 2)
    # B = 8: W_all - routed x 0.75^8
    assert rl.weight_read_bytes(m, 8) == pytest.approx(m.weight_bytes - routed * 0.75**8)
    # large B: every expert
    assert rl.weight_read_bytes(m, 4096) == pytest.approx(m.weight_bytes)
    assert rl.ceiling_b1_tok_s(m) == pytest.approx(4800e9 / (geometry(MIXTRAL)
                                                             .weights_per_token * 2))


def test_mixtral_h200_64_streams_is_not_12000(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(MIXTRAL))
    r = cli("roofline", "--config", cfg, "--card", "h200", "--weights-format", "bf16",
            "--streams", "1,64", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    pts = {p["streams"]: p for p in out["points"]}
    w_all = (32 * (ATTN + ROUTER + 8 * EXPERT) + HEAD) * 2
    w_64 = w_all - 32 * 8 * EXPERT * 2 * 0.75**64  # 0.75^64 = 1.0e-8: all experts
    assert pts[64]["bound"] == "memory"
    assert pts[64]["aggregate_tok_s"] == pytest.approx(64 * 4800e9 / w_64, rel=1e-9)
    assert 3200 < pts[64]["aggregate_tok_s"] < 3400  # not ~12,000 (active experts only)
    # one stream still reads only the active experts: 4800 GB/s / 25.5 GB = 188 tok/s
    assert round(pts[1]["aggregate_tok_s"]) == 188
    assert out["moe"]["routing"].startswith("uniform, independent")
    text = cli("roofline", "--config", cfg, "--card", "h200", "--weights-format", "bf16",
               "--streams", "1,64").stdout
    assert "1 - (1 - k/E)^B (uniform, independent routing)" in text
    assert "(25% of experts" in text and "(100% of experts" in text
    assert "uniform, independent routing" in cli("roofline", "--help").stdout


def test_shared_expert_is_always_read():
    cfg = {**MIXTRAL, "model_type": "qwen2_moe", "num_local_experts": None, "num_experts": 8,
           "moe_intermediate_size": 1024, "shared_expert_intermediate_size": 4096}
    g = geometry(cfg)
    shared = 3 * 4096 * 4096 + 4096  # the shared expert and its gate, every layer
    assert g.routed_expert_weights == 32 * 8 * 3 * 4096 * 1024
    m = rl.for_model(g, weight_bytes=g.weights_all_experts * 2.0, bandwidth_bytes_s=GB,
                     tflops=1.0)
    # at B = 1 the read holds 2 of 8 routed experts and the whole shared expert
    assert rl.weight_read_bytes(m, 1) == pytest.approx(g.weights_per_token * 2)
    assert g.weights_per_token - 32 * 2 * 3 * 4096 * 1024 >= 32 * shared


def test_moe_bend_meets_both_terms():
    m = mixtral_h200(context_tokens=0)
    b = rl.bend_streams(m)
    assert rl.memory_time_s(m, b) == pytest.approx(rl.compute_time_s(m, b), rel=1e-9)
    # past the bend every expert is read: the dense closed form with W_all gives the same
    dense = rl.Roofline(weight_bytes=m.weight_bytes, bandwidth_bytes_s=m.bandwidth_bytes_s,
                        flops_per_row=m.flops_per_row, peak_flops_s=m.peak_flops_s)
    assert b == pytest.approx(rl.bend_streams(dense), rel=1e-6)


def test_dense_model_is_unchanged():
    g = geometry_from_file(QWEN)
    m = rl.for_model(g, weight_bytes=16 * GB, bandwidth_bytes_s=936 * GB, tflops=63)
    assert not m.moe and rl.weight_read_bytes(m, 64) == 16 * GB


def test_experts_per_token_above_experts_is_refused(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**MIXTRAL, "num_experts_per_tok": 9}))
    line = one_line_error(cli("roofline", "--config", cfg, "--card", "h200",
                              "--weights-format", "bf16"))
    assert "num_experts_per_tok: 9 experts per token is more than the 8 experts" in line
