"""Model geometry against the article's hand arithmetic (shared/seeds/000)."""

import json

import pytest

from claimcheck.files.errors import InputError
from claimcheck.physics.formats import KvFormat
from claimcheck.physics.geometry import geometry
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.physics.units import KIB, MIB

from .conftest import QWEN


@pytest.fixture(scope="module")
def g():
    return geometry_from_file(QWEN)


def test_kv_values_and_bytes(g):
    # 16 attention layers x 2 (K,V) x 4 KV heads x 256 head_dim
    assert g.kv_values_per_token == 16 * 2 * 4 * 256 == 32_768
    assert g.kv_bytes_per_token("bf16") == 64 * KIB
    assert g.kv_bytes_per_token("fp8") == 32 * KIB
    # K8V4: 16 layers x (1,024 + 8 + 512 + 64) bytes = 25.125 KiB
    assert g.kv_bytes_per_token("k8v4") == 16 * (1024 + 8 + 512 + 64)
    assert g.kv_bytes_per_token("k8v4") / KIB == 25.125


def test_k8v4_scale_layout_is_a_parameter():
    per_head_k_scale = KvFormat(8, 4, k_scale_group=0, v_scale_group=32, scale_bytes=2)
    coarser_v = KvFormat(8, 4, k_scale_group=0, v_scale_group=64, scale_bytes=2)
    assert per_head_k_scale.bytes_per_head(256) == 256 + 2 + 128 + 16
    assert coarser_v.bytes_per_head(256) == 256 + 2 + 128 + 8


def test_state_values_and_bytes(g):
    assert g.state_values_per_stream == 48 * 48 * 128 * 128 == 37_748_736
    assert g.state_bytes_per_stream("fp32") == 144 * MIB
    assert g.state_bytes_per_stream("fp16") == 72 * MIB
    assert g.state_bytes_per_stream("bf16") == 72 * MIB


def test_weights_and_flops_per_token(g):
    assert round(g.weights_per_token / 1e9, 2) == 25.62
    assert round(g.flops_per_token / 1e9, 1) == 51.2
    assert g.flops_per_token == 2 * g.weights_per_token


def test_mlp_weights_per_token_by_hand(g):
    # 64 layers, each a gated MLP of 3 x 5,120 x 17,408 = 267,386,880 weights
    assert g.mlp_weights_per_token == 64 * 3 * 5120 * 17408 == 17_112_760_320
    # 0.703 of the body's weights (all but the 248,320 x 5,120 output head)
    body = g.weights_per_token - 248_320 * 5120
    assert g.mlp_weights_per_token / body == pytest.approx(0.70277, abs=1e-5)


def test_total_params_matches_hugging_face(g):
    assert g.total_params == 27_781_427_952
    # the article's closing: embeddings 1.27 B, vision ~0.46 B, MTP ~0.42 B
    assert round(g.components["embed"] / 1e9, 2) == 1.27
    assert round(g.components["vision"] / 1e9, 2) == 0.46
    assert round(g.components["mtp"] / 1e9, 2) == 0.42


def test_dense_gqa_llama_like():
    # A Llama-style config, counted by hand.
    cfg = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
           "vocab_size": 100, "tie_word_embeddings": True}
    g = geometry(cfg)
    attn = 64 * 64 + 2 * 64 * 32 + 64 * 64  # q, k, v (2 heads of 16), o
    mlp = 3 * 64 * 128
    assert g.weights_per_token == 2 * (attn + mlp) + 100 * 64
    assert g.total_params == 100 * 64 + 2 * (attn + mlp + 2 * 64) + 64  # tied head
    assert g.kv_values_per_token == 2 * 2 * 2 * 16
    assert g.state_values_per_stream == 0


def test_moe_active_vs_total():
    cfg = {"model_type": "qwen3_moe", "hidden_size": 8, "num_hidden_layers": 1,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
           "intermediate_size": 32, "moe_intermediate_size": 4, "num_experts": 8,
           "num_experts_per_tok": 2, "vocab_size": 10}
    g = geometry(cfg)
    attn_lin = 8 * 8 + 2 * 8 * 4 + 8 * 8
    router = 8 * 8
    assert g.weights_per_token == attn_lin + router + 2 * 3 * 8 * 4 + 10 * 8
    assert g.components["layers.full_attention"] == (attn_lin + 2 * 4 + router
                                                     + 8 * 3 * 8 * 4 + 2 * 8)


def test_bad_config_names_file_and_key(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    with pytest.raises(InputError, match=r"config.json: num_hidden_layers: required key"):
        geometry_from_file(p)
    p.write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(InputError, match=r"config.json: model_type: missing: the model's "
                                         "type says which counts apply"):
        geometry_from_file(p)
    p.write_text("{not json")
    with pytest.raises(InputError, match=r"config.json:1: not valid JSON"):
        geometry_from_file(p)
