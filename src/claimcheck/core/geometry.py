"""Model geometry from a Hugging Face ``config.json``.

Counts parameters (total, and the weights touched per generated token), FLOPs per
token, KV-cache values per token of context and recurrent-state values per stream,
for dense GQA transformers (Llama, Qwen2/3), MoE variants (active vs total), and the
Qwen3.5/Qwen3.8 hybrid family (Gated DeltaNet ``linear_attention`` layers mixed with
gated ``full_attention`` layers, a vision tower and an MTP module).

Everything here is a pure function of the config dict; :func:`load_config` is the only
I/O. Counts are plain numbers of values (weights, parameters); byte sizes come from
:mod:`claimcheck.core.formats`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimcheck.core.errors import InputError
from claimcheck.core.formats import kv_format, state_dtype_bytes

QK_NORM_TYPES = {"qwen3", "qwen3_moe", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"}
QKV_BIAS_TYPES = {"qwen2", "qwen2_moe"}


@dataclass(frozen=True)
class Geometry:
    """Counts derived from one config. Units: numbers of values unless named otherwise.

    ``components`` maps a part name (``embed``, ``head``, ``layers.full_attention`` ...)
    to its parameter count, so totals can be audited.
    """

    model_type: str
    hidden_size: int
    num_layers: int
    num_full_attention_layers: int
    num_linear_attention_layers: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    components: dict[str, int]
    weights_per_token: int
    """Weights read per generated token: linear layers (active experts only) and the
    output head; not the input embeddings, vision tower or MTP module."""
    kv_values_per_token: int
    """KV-cache values per token of context, summed over all attention layers."""
    state_values_per_stream: int
    """Recurrent (DeltaNet) state values per stream: layers x v-heads x dk x dv."""
    conv_state_values_per_stream: int
    """Short-convolution state values per stream (kept apart; small)."""
    tied_embeddings: bool
    mamba_ssm_dtype: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def total_params(self) -> int:
        """All parameters: embeddings, layers, head (if untied), vision tower, MTP."""
        return sum(self.components.values())

    @property
    def flops_per_token(self) -> int:
        """Forward FLOPs per generated token from the weights: 2 per weight touched."""
        return 2 * self.weights_per_token

    def kv_bytes_per_token(self, kv_dtype: str = "bf16") -> float:
        """KV-cache bytes per token of context for a KV format name (bf16, fp8, k8v4 ...)."""
        fmt = kv_format(kv_dtype)
        return self.num_full_attention_layers * self.num_kv_heads * fmt.bytes_per_head(
            self.head_dim)

    def state_bytes_per_stream(self, state_dtype: str = "fp32") -> int:
        """Recurrent-state bytes per stream at a state dtype (fp32, fp16, bf16)."""
        return self.state_values_per_stream * state_dtype_bytes(state_dtype)

    def summary(self, kv_dtype: str = "bf16", state_dtype: str | None = None) -> dict[str, Any]:
        """The numbers ``claimcheck geometry`` prints, each with its unit in the key."""
        sd = state_dtype or _dtype_alias(self.mamba_ssm_dtype) or "fp32"
        return {
            "model_type": self.model_type,
            "total_params": self.total_params,
            "weights_per_token": self.weights_per_token,
            "flops_per_token": self.flops_per_token,
            "kv_values_per_token": self.kv_values_per_token,
            "kv_dtype": kv_dtype,
            "kv_bytes_per_token": self.kv_bytes_per_token(kv_dtype),
            "state_values_per_stream": self.state_values_per_stream,
            "state_dtype": sd,
            "state_bytes_per_stream": self.state_bytes_per_stream(sd),
            "conv_state_values_per_stream": self.conv_state_values_per_stream,
            "num_full_attention_layers": self.num_full_attention_layers,
            "num_linear_attention_layers": self.num_linear_attention_layers,
            "components": dict(self.components),
        }


def _dtype_alias(name: str | None) -> str | None:
    if name is None:
        return None
    return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(name, name)


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json; a clear error names the file on failure."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise InputError(str(p), "no such file") from None
    except json.JSONDecodeError as e:
        raise InputError(str(p), f"not valid JSON: {e.msg}", line=e.lineno) from None
    if not isinstance(data, dict):
        raise InputError(str(p), "top level is not a JSON object")
    return data


def geometry_from_file(path: str | Path) -> Geometry:
    """Load a config.json and compute its geometry, naming the file on bad input."""
    cfg = load_config(path)
    try:
        return geometry(cfg)
    except KeyError as e:
        raise InputError(str(path), "required key missing", key=str(e.args[0])) from None
    except (TypeError, ValueError) as e:
        raise InputError(str(path), str(e)) from None


def geometry(config: dict[str, Any]) -> Geometry:
    """Compute the geometry of a (possibly multimodal) config dict."""
    text = config.get("text_config") or config
    t = text.get("model_type", config.get("model_type", "unknown"))
    h = int(text["hidden_size"])
    n_layers = int(text["num_hidden_layers"])
    n_heads = int(text["num_attention_heads"])
    n_kv = int(text.get("num_key_value_heads", n_heads))
    hd = int(text.get("head_dim") or h // n_heads)
    vocab = int(text["vocab_size"])
    tied = bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False)))
    layer_types = _layer_types(text, n_layers)
    n_full = layer_types.count("full_attention")
    n_lin = layer_types.count("linear_attention")

    attn_total, attn_linear = _full_attention_params(text, t, h, n_heads, n_kv, hd)
    mlp_total, mlp_active = _mlp_params(text, h)
    norms = 2 * h

    comps: dict[str, int] = {"embed": vocab * h}
    weights = 0
    if n_full:
        comps["layers.full_attention"] = n_full * (attn_total + mlp_total + norms)
        weights += n_full * (attn_linear + mlp_active)
    gdn_total = gdn_linear = 0
    if n_lin:
        gdn_total, gdn_linear = _gdn_params(text, h)
        comps["layers.linear_attention"] = n_lin * (gdn_total + mlp_total + norms)
        weights += n_lin * (gdn_linear + mlp_active)
    comps["final_norm"] = h
    if not tied:
        comps["head"] = vocab * h
    weights += vocab * h  # the output head is read every token, tied or not

    if "vision_config" in config and config["vision_config"]:
        comps["vision"] = _vision_params(config["vision_config"])
    n_mtp = int(text.get("mtp_num_hidden_layers", config.get("mtp_num_hidden_layers", 0)) or 0)
    if n_mtp:
        comps["mtp"] = n_mtp * (attn_total + mlp_total + norms) + 2 * h * h + 3 * h

    kv_values = n_full * 2 * n_kv * hd
    state_values = conv_values = 0
    if n_lin:
        nv = int(text["linear_num_value_heads"])
        dk = int(text["linear_key_head_dim"])
        dv = int(text["linear_value_head_dim"])
        nk = int(text["linear_num_key_heads"])
        kernel = int(text.get("linear_conv_kernel_dim", 4))
        state_values = n_lin * nv * dk * dv
        conv_values = n_lin * (2 * nk * dk + nv * dv) * (kernel - 1)
    return Geometry(
        model_type=t, hidden_size=h, num_layers=n_layers, num_full_attention_layers=n_full,
        num_linear_attention_layers=n_lin, num_kv_heads=n_kv, head_dim=hd, vocab_size=vocab,
        components=comps, weights_per_token=weights, kv_values_per_token=kv_values,
        state_values_per_stream=state_values, conv_state_values_per_stream=conv_values,
        tied_embeddings=tied,
        mamba_ssm_dtype=text.get("mamba_ssm_dtype", config.get("mamba_ssm_dtype")),
    )


def _layer_types(text: dict[str, Any], n_layers: int) -> list[str]:
    lt = text.get("layer_types")
    if lt is None and "full_attention_interval" in text:
        k = int(text["full_attention_interval"])
        lt = ["full_attention" if (i + 1) % k == 0 else "linear_attention"
              for i in range(n_layers)]
    if lt is None:
        return ["full_attention"] * n_layers
    if len(lt) != n_layers:
        raise ValueError(f"layer_types has {len(lt)} entries, num_hidden_layers is {n_layers}")
    # sliding_attention layers (Gemma-style) still keep a KV cache; count them as attention.
    out = ["full_attention" if x in ("full_attention", "sliding_attention") else x for x in lt]
    unknown = set(out) - {"full_attention", "linear_attention"}
    if unknown:
        raise ValueError(f"layer_types has unsupported entries {sorted(unknown)}")
    return out


def _full_attention_params(text: dict[str, Any], t: str, h: int, nh: int, nkv: int,
                           hd: int) -> tuple[int, int]:
    """(all params, linear weights) of one softmax-attention block."""
    q_out = nh * hd * (2 if text.get("attn_output_gate") else 1)
    linear = h * q_out + 2 * h * nkv * hd + nh * hd * h
    bias = 0
    if text.get("attention_bias") or t in QKV_BIAS_TYPES:
        bias += q_out + 2 * nkv * hd
    if text.get("attention_bias") and t not in QKV_BIAS_TYPES:
        bias += h  # o_proj bias (Llama-style attention_bias=True)
    norms = 2 * hd if t in QK_NORM_TYPES else 0
    return linear + bias + norms, linear


def _mlp_params(text: dict[str, Any], h: int) -> tuple[int, int]:
    """(all params, active linear weights) of one MLP or MoE block."""
    n_exp = text.get("num_experts") or text.get("num_local_experts") or 0
    if not n_exp:
        i = int(text["intermediate_size"])
        return 3 * h * i, 3 * h * i
    n_exp = int(n_exp)
    k = int(text["num_experts_per_tok"])
    mi = int(text.get("moe_intermediate_size") or text["intermediate_size"])
    si = int(text.get("shared_expert_intermediate_size") or 0)
    router = h * n_exp
    shared = 3 * h * si + (h if si else 0)  # shared expert + its sigmoid gate
    total = router + n_exp * 3 * h * mi + shared
    active = router + k * 3 * h * mi + shared
    return total, active


def _gdn_params(text: dict[str, Any], h: int) -> tuple[int, int]:
    """(all params, linear weights) of one Gated DeltaNet block."""
    nk = int(text["linear_num_key_heads"])
    nv = int(text["linear_num_value_heads"])
    dk = int(text["linear_key_head_dim"])
    dv = int(text["linear_value_head_dim"])
    kernel = int(text.get("linear_conv_kernel_dim", 4))
    key_dim, value_dim = nk * dk, nv * dv
    in_qkvz = h * (2 * key_dim + 2 * value_dim)
    in_ba = h * 2 * nv
    out = value_dim * h
    conv = (2 * key_dim + value_dim) * kernel
    small = 2 * nv + dv  # dt_bias, A_log, gated RMSNorm over dv
    linear = in_qkvz + in_ba + out
    return linear + conv + small, linear


def _vision_params(v: dict[str, Any]) -> int:
    """Parameters of a Qwen3-VL/Qwen3.5-style vision tower (biases and LayerNorms)."""
    d = int(v["depth"])
    hv = int(v["hidden_size"])
    iv = int(v["intermediate_size"])
    patch = int(v["patch_size"])
    tpatch = int(v.get("temporal_patch_size", 1))
    cin = int(v.get("in_channels", 3))
    merge = int(v.get("spatial_merge_size", 2))
    out = int(v["out_hidden_size"])
    pos = int(v.get("num_position_embeddings", 0))
    patch_embed = cin * tpatch * patch * patch * hv + hv
    block = (hv * 3 * hv + 3 * hv) + (hv * hv + hv) + (hv * iv + iv) + (iv * hv + hv) + 4 * hv
    merged = hv * merge * merge

    def merger(postshuffle: bool) -> int:
        norm = 2 * (merged if postshuffle else hv)
        return norm + (merged * merged + merged) + (merged * out + out)

    n_deep = len(v.get("deepstack_visual_indexes") or [])
    return patch_embed + pos * hv + d * block + merger(False) + n_deep * merger(True)
