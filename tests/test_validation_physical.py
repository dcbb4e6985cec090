"""Class: physically impossible inputs are refused, naming the option or key and the bound.

Every case runs the real CLI on a copy of the committed Qwen3.8 config.json.
"""

import pytest

from claimcheck.physics import roofline as rl
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.physics.units import GB, GIB
from claimcheck.physics.weights import weight_bytes

from ._cli import QWEN, cli, one_line_error, qwen_copy

H200_BF16 = ("--card", "h200", "--weights-format", "bf16")

ROOFLINE_CASES = [
    # (extra options, words the message must hold)
    (("--eta", "1.7", *H200_BF16), "--eta: must be a finite number in (0, 1], got 1.7"),
    (("--eta", "0", *H200_BF16), "--eta: must be a finite number in (0, 1], got 0"),
    (("--eta", "nan", *H200_BF16), "--eta: must be a finite number in (0, 1], got nan"),
    (("--free-gib", "-5", *H200_BF16), "--free-gib: must be a finite number > 0, got -5"),
    (("--free-gib", "0", *H200_BF16), "--free-gib: must be a finite number > 0, got 0"),
    (("--free-gib", "inf", *H200_BF16), "--free-gib: must be a finite number > 0, got inf"),
    (("--card", "h200", "--weights-gb", "inf"), "--weights-gb: must be a finite number > 0"),
    (("--card", "h200", "--weights-gb", "-16"), "--weights-gb: must be a finite number > 0"),
    (("--card", "h200", "--weights-gib", "-1"), "--weights-gib: must be a finite number > 0"),
    (("--target", "-1099", *H200_BF16), "--target: must be a finite number > 0, got -1099"),
    (("--tflops", "0", *H200_BF16), "--tflops: must be a finite number > 0, got 0"),
    (("--tflops", "-63", *H200_BF16), "--tflops: must be a finite number > 0, got -63"),
    (("--tflops", "inf", *H200_BF16), "--tflops: must be a finite number > 0, got inf"),
    (("--context", "-640", *H200_BF16), "--context: must be a finite number >= 0, got -640"),
    (("--rows", "0.5", *H200_BF16), "--rows: must be a finite number >= 1, got 0.5"),
    (("--tau", "3", *H200_BF16),
     "--tau: 3 tokens kept per stream per step cannot exceed --rows 1 positions verified"),
    (("--kv-dtype", "fp7", *H200_BF16), "--kv-dtype: unknown 'fp7'; known: "),
    (("--compute-dtype", "fp4", *H200_BF16), "--compute-dtype: card h200 has no dense fp4 "
                                             "rate in cards.csv"),
    # 200 GB = 186.26 GiB of weights on a 140.4 GiB card
    (("--card", "h200", "--weights-gb", "200"),
     "--weights-gb: 186.26 GiB of weights plus one stream's state and KV (0.14 GiB) do not "
     "fit in the card's 140.4 GiB (h200: cards.csv memory_gib)"),
    # the article's 3090: 16 GB = 14.90 GiB of weights; 20 GiB more cannot be free on 24 GiB
    (("--card", "rtx3090", "--weights-gb", "16", "--free-gib", "20"),
     "--free-gib: 20 GiB free plus 14.90 GiB of weights exceeds the card's 24 GiB "
     "(rtx3090: cards.csv memory_gib)"),
]


@pytest.mark.parametrize(("extra", "words"), ROOFLINE_CASES,
                         ids=[" ".join(c[0][:2]) for c in ROOFLINE_CASES])
def test_roofline_options_out_of_bounds(tmp_path, extra, words):
    line = one_line_error(cli("roofline", "--config", qwen_copy(tmp_path), *extra))
    assert words in line


def _set(key, value):
    def edit(cfg):
        cfg["text_config"][key] = value
    return edit


def _moe(cfg):
    cfg["text_config"].update(num_experts=8, num_experts_per_tok=9, moe_intermediate_size=512)


def _vision_depth(cfg):
    cfg["vision_config"]["depth"] = 0


GEOMETRY_CASES = [
    (_set("num_hidden_layers", 0), "text_config.num_hidden_layers: must be >= 1, got 0"),
    (_set("num_hidden_layers", 32.7),
     "text_config.num_hidden_layers: must be a whole number, got 32.7"),
    (_set("hidden_size", -5120), "text_config.hidden_size: must be >= 1, got -5120"),
    (_set("num_attention_heads", 0), "text_config.num_attention_heads: must be >= 1, got 0"),
    (_set("num_key_value_heads", 5),
     "text_config.num_key_value_heads: 5 KV heads must divide the 24 attention heads"),
    (_set("linear_num_value_heads", "48"),
     "text_config.linear_num_value_heads: must be a whole number, got '48'"),
    (_set("vocab_size", True), "text_config.vocab_size: must be a whole number, got True"),
    (_moe, "text_config.num_experts_per_tok: 9 experts per token is more than the 8 experts"),
    (_vision_depth, "vision_config.depth: must be >= 1, got 0"),
    (lambda cfg: cfg.update(text_config="qwen3_5_text"),
     "text_config: must be a JSON object, got str"),
    (lambda cfg: cfg.update(text_config=[1, 2]), "text_config: must be a JSON object, got list"),
]


@pytest.mark.parametrize(("edit", "words"), GEOMETRY_CASES,
                         ids=[c[1].split(":")[0] + str(i) for i, c in enumerate(GEOMETRY_CASES)])
def test_impossible_geometry_is_refused(tmp_path, edit, words):
    cfg = qwen_copy(tmp_path, edit)
    line = one_line_error(cli("geometry", cfg))
    assert f"{cfg}: {words}" in line


@pytest.mark.parametrize(("edit", "words"), GEOMETRY_CASES[:3] + GEOMETRY_CASES[-2:-1])
def test_roofline_refuses_the_same_geometry(tmp_path, edit, words):
    cfg = qwen_copy(tmp_path, edit)
    line = one_line_error(cli("roofline", "--config", cfg, *H200_BF16))
    assert f"{cfg}: {words}" in line


def test_whole_float_layer_count_is_the_same_model(tmp_path):
    # 64.0 layers is 64 layers; 32.7 is refused above, never truncated to 32.
    a = geometry_from_file(QWEN)
    b = geometry_from_file(qwen_copy(tmp_path, _set("num_hidden_layers", 64.0)))
    assert b.total_params == a.total_params == 27_781_427_952


def test_pure_constructors_refuse_the_same_bounds():
    g = geometry_from_file(QWEN)
    base = dict(weight_bytes=16 * GB, bandwidth_bytes_s=936 * GB, flops_per_row=5e10,
                peak_flops_s=63e12)
    for bad, words in (({"eta": 1.7}, "eta"), ({"weight_bytes": float("inf")}, "weight_bytes"),
                       ({"state_bytes": -1.0}, "state_bytes"), ({"tau": 2.0}, "tau"),
                       ({"memory_bytes": 10 * GIB}, "do not fit")):
        with pytest.raises(ValueError, match=words):
            rl.Roofline(**{**base, **bad})
    with pytest.raises(ValueError, match="finite number > 0"):
        weight_bytes(g, gb=float("inf"))
    with pytest.raises(ValueError, match="free memory"):
        rl.memory_wall_streams(-5 * GIB, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="target"):
        rl.tau_needed(rl.Roofline(**base), 8, -1.0)
    # the article's 3090 inputs fit: 16 GB + 72 MiB + 640 x 32 KiB < 24 GiB
    rl.Roofline(**base, state_bytes=72 * 2**20, kv_bytes_per_token=32 * 1024,
                context_tokens=640, memory_bytes=24 * GIB)


@pytest.mark.parametrize(("extra", "words"), [
    ({"n_routed_experts": 64}, "text_config.n_routed_experts: DeepSeek-style MoE "
                               "(n_routed_experts) is not modelled here"),
    ({"kv_lora_rank": 512}, "text_config.kv_lora_rank: multi-head latent attention"),
    ({"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 512,
      "mlp_only_layers": [0, 1]}, "text_config.mlp_only_layers: dense MLP layers between MoE "
                                  "layers are not modelled here"),
])
def test_architectures_not_modelled_are_refused_not_guessed(tmp_path, extra, words):
    cfg = qwen_copy(tmp_path, lambda c: c["text_config"].update(extra))
    assert f"{cfg}: {words}" in one_line_error(cli("geometry", cfg))
