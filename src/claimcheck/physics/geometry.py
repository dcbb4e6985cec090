"""Model geometry from a Hugging Face ``config.json``.

Counts parameters (total, and the weights touched per generated token), FLOPs per
token, KV-cache values per token of context and recurrent-state values per stream,
for dense GQA transformers (Llama, Qwen2/3), MoE variants (active vs total), and the
Qwen3.5/Qwen3.8 hybrid family (Gated DeltaNet ``linear_attention`` layers mixed with
gated ``full_attention`` layers, a vision tower and an MTP module).

Everything here is a pure function of the config dict (its text parsed by
:func:`config_from_text`; the file is read by :mod:`claimcheck.physics.modelfiles`). Counts are
plain numbers of values (weights, parameters); byte sizes come from
:mod:`claimcheck.physics.formats`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.files.io import read_json_text
from claimcheck.physics.formats import kv_format, state_dtype_bytes

QK_NORM_TYPES = {"qwen3", "qwen3_moe", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"}
QKV_BIAS_TYPES = {"qwen2", "qwen2_moe"}
# The model types whose weights these counts describe (the families named above); any
# other is refused, never computed as if it were one of them.
MODEL_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
               "qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}


# Keys of architectures whose weights these counts do not describe: refused, never guessed.
UNMODELLED_KEYS = {"n_routed_experts": "DeepSeek-style MoE (n_routed_experts)",
                   "kv_lora_rank": "multi-head latent attention (kv_lora_rank)",
                   "first_k_dense_replace": "dense first layers before MoE"}


class ConfigError(ValueError):
    """A config value that cannot describe a real model; ``key`` names it."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


_MISSING = object()


def _count(d: dict[str, Any], key: str, *, minimum: int = 1, default: Any = _MISSING,
           prefix: str = "") -> int:
    """A whole-number count from a config dict, refused unless it is >= ``minimum``.

    32 and 32.0 are accepted; 32.7, "32", true and -1 are refused (never truncated).
    A missing key raises KeyError unless ``default`` is given.
    """
    if key not in d or d[key] is None:
        if default is _MISSING:
            raise KeyError(prefix + key)
        return default
    v = d[key]
    ok = (isinstance(v, int) and not isinstance(v, bool)) or (
        isinstance(v, float) and math.isfinite(v) and v.is_integer())
    if not ok:
        raise ConfigError(prefix + key, f"must be a whole number, got {v!r}")
    if v < minimum:
        raise ConfigError(prefix + key, f"must be >= {minimum}, got {v!r}")
    return int(v)


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
    num_experts: int = 0
    """Routed experts per MoE layer, E (0 for a dense MLP)."""
    experts_per_token: int = 0
    """Routed experts each token uses, k (0 for a dense MLP)."""
    routed_expert_weights: int = 0
    """Linear weights of all E routed experts, summed over the layers read per token."""
    active_routed_expert_weights: int = 0
    """The part of ``weights_per_token`` that is the k routed experts of one token."""
    max_position_embeddings: int | None = None
    """The longest context the model takes, tokens (None when the config does not say)."""
    mlp_weights_per_token: int = 0
    """The part of ``weights_per_token`` in the layers' MLPs (the active experts of a MoE
    layer, its shared experts and router included): what an engine with int8 activations
    on the MLP GEMMs multiplies at int8."""

    @property
    def weights_all_experts(self) -> int:
        """Weights a step can read when every routed expert is touched (= weights per
        token for a dense model); shared experts, router, attention and head included."""
        return (self.weights_per_token - self.active_routed_expert_weights
                + self.routed_expert_weights)

    @property
    def total_params(self) -> int:
        """All parameters: embeddings, layers, head (if untied), vision tower, MTP."""
        return sum(self.components.values())

    @property
    def head_weights(self) -> int:
        """The output head's weights, read every token: vocabulary x hidden size."""
        return self.vocab_size * self.hidden_size

    @property
    def body_weights_per_token(self) -> int:
        """``weights_per_token`` less the output head: what every position multiplies."""
        return self.weights_per_token - self.head_weights

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


def config_from_text(text: str, source: str) -> dict[str, Any]:
    """A config.json's text (read from ``source``) as a dict; a clear error names the file
    on failure, and a key given twice in one object (JSON parsers keep the last) is
    refused."""
    data = read_json_text(text, source)
    if not isinstance(data, dict):
        raise InputError(source, "top level is not a JSON object")
    json.loads(text, object_pairs_hook=lambda pairs: _unique_pairs(pairs, source))
    return data


def _unique_pairs(pairs: list[tuple[str, Any]], source: str) -> dict[str, Any]:
    seen: set[str] = set()
    for k, _ in pairs:
        if k in seen:
            raise InputError(source, "given twice in one object (a JSON reader keeps the "
                             "last without a word)", key=k)
        seen.add(k)
    return dict(pairs)


def geometry_of(config: dict[str, Any], source: str) -> Geometry:
    """:func:`geometry` of a config read from ``source``, naming the file and key on bad
    input."""
    try:
        return geometry(config)
    except KeyError as e:
        raise InputError(source, "required key missing", key=str(e.args[0])) from None
    except ConfigError as e:
        raise InputError(source, e.reason, key=e.key) from None


def geometry(config: dict[str, Any]) -> Geometry:
    """Compute the geometry of a (possibly multimodal) config dict.

    Refuses (:class:`ConfigError`, naming the key) counts that are not whole numbers >= 1,
    head counts that do not divide, more experts per token than experts, and a
    ``text_config``/``vision_config`` that is not an object.
    """
    if not isinstance(config, dict):
        raise ConfigError("(top level)", f"must be a JSON object, got {type(config).__name__}")
    tc = config.get("text_config")
    if tc is not None and not isinstance(tc, dict):
        raise ConfigError("text_config", f"must be a JSON object, got {type(tc).__name__} "
                          f"{tc!r:.40}")
    text = tc or config
    px = "text_config." if tc else ""
    t = text.get("model_type", config.get("model_type"))
    if t is None:
        raise ConfigError(px + "model_type", "missing: the model's type says which counts "
                          "apply")
    if not isinstance(t, str):
        raise ConfigError(px + "model_type", f"must be a string, got {t!r}")
    if t not in MODEL_TYPES:
        raise ConfigError(px + "model_type", f"unknown model_type {t!r}: its weights are not "
                          f"modelled here; modelled: {', '.join(sorted(MODEL_TYPES))}")
    h = _count(text, "hidden_size", prefix=px)
    n_layers = _count(text, "num_hidden_layers", prefix=px)
    n_heads = _count(text, "num_attention_heads", prefix=px)
    n_kv = _count(text, "num_key_value_heads", default=n_heads, prefix=px)
    if n_kv > n_heads or n_heads % n_kv:
        raise ConfigError(px + "num_key_value_heads", f"{n_kv} KV heads must divide the "
                          f"{n_heads} attention heads")
    if text.get("head_dim") is None and h % n_heads:
        raise ConfigError(px + "num_attention_heads", f"hidden_size {h} is not a multiple "
                          f"of {n_heads} heads and no head_dim is given")
    hd = _count(text, "head_dim", default=h // n_heads, prefix=px)
    vocab = _count(text, "vocab_size", prefix=px)
    tied = bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False)))
    layer_types = _layer_types(text, n_layers, px)
    n_full = layer_types.count("full_attention")
    n_lin = layer_types.count("linear_attention")

    attn_total, attn_linear = _full_attention_params(text, t, h, n_heads, n_kv, hd)
    mlp = _mlp_params(text, h, px)
    mlp_total, mlp_active = mlp[0], mlp[1]
    norms = 2 * h

    comps: dict[str, int] = {"embed": vocab * h}
    weights = 0
    if n_full:
        comps["layers.full_attention"] = n_full * (attn_total + mlp_total + norms)
        weights += n_full * (attn_linear + mlp_active)
    gdn_total = gdn_linear = 0
    if n_lin:
        gdn_total, gdn_linear = _gdn_params(text, h, px)
        comps["layers.linear_attention"] = n_lin * (gdn_total + mlp_total + norms)
        weights += n_lin * (gdn_linear + mlp_active)
    comps["final_norm"] = h
    if not tied:
        comps["head"] = vocab * h
    weights += vocab * h  # the output head is read every token, tied or not

    vc = config.get("vision_config")
    if vc:
        if not isinstance(vc, dict):
            raise ConfigError("vision_config", f"must be a JSON object, got "
                              f"{type(vc).__name__}")
        comps["vision"] = _vision_params(vc)
    n_mtp = _count(text, "mtp_num_hidden_layers", minimum=0, prefix=px,
                   default=_count(config, "mtp_num_hidden_layers", minimum=0, default=0))
    if n_mtp:
        comps["mtp"] = n_mtp * (attn_total + mlp_total + norms) + 2 * h * h + 3 * h

    kv_values = n_full * 2 * n_kv * hd
    state_values = conv_values = 0
    if n_lin:
        nv = _count(text, "linear_num_value_heads", prefix=px)
        dk = _count(text, "linear_key_head_dim", prefix=px)
        dv = _count(text, "linear_value_head_dim", prefix=px)
        nk = _count(text, "linear_num_key_heads", prefix=px)
        kernel = _count(text, "linear_conv_kernel_dim", default=4, prefix=px)
        state_values = n_lin * nv * dk * dv
        conv_values = n_lin * (2 * nk * dk + nv * dv) * (kernel - 1)
    n_layers_moe = n_full + n_lin
    return Geometry(
        model_type=t, hidden_size=h, num_layers=n_layers, num_full_attention_layers=n_full,
        num_linear_attention_layers=n_lin, num_kv_heads=n_kv, head_dim=hd, vocab_size=vocab,
        components=comps, weights_per_token=weights, kv_values_per_token=kv_values,
        state_values_per_stream=state_values, conv_state_values_per_stream=conv_values,
        tied_embeddings=tied,
        mamba_ssm_dtype=text.get("mamba_ssm_dtype", config.get("mamba_ssm_dtype")),
        num_experts=mlp[2], experts_per_token=mlp[3],
        routed_expert_weights=n_layers_moe * mlp[4],
        active_routed_expert_weights=n_layers_moe * mlp[5],
        max_position_embeddings=_count(text, "max_position_embeddings", default=None,
                                       prefix=px),
        mlp_weights_per_token=n_layers_moe * mlp_active,
    )


def check_context(geom: Geometry, tokens: float, source: str) -> None:
    """Refuse a context per stream (tokens) above the model's max_position_embeddings;
    ``source`` names the option or key it came from."""
    limit = geom.max_position_embeddings
    if limit is not None and tokens > limit:
        raise InputError(source, f"{tokens:,.0f} tokens of context per stream exceeds the "
                         f"model's max_position_embeddings {limit:,}")


def _layer_types(text: dict[str, Any], n_layers: int, px: str = "") -> list[str]:
    lt = text.get("layer_types")
    if lt is None and "full_attention_interval" in text:
        k = _count(text, "full_attention_interval", prefix=px)
        lt = ["full_attention" if (i + 1) % k == 0 else "linear_attention"
              for i in range(n_layers)]
    if lt is None:
        return ["full_attention"] * n_layers
    if not isinstance(lt, list) or not all(isinstance(x, str) for x in lt):
        raise ConfigError(px + "layer_types", "must be a list of strings")
    if len(lt) != n_layers:
        raise ConfigError(px + "layer_types", f"has {len(lt)} entries, num_hidden_layers "
                          f"is {n_layers}")
    # sliding_attention layers (Gemma-style) still keep a KV cache; count them as attention.
    out = ["full_attention" if x in ("full_attention", "sliding_attention") else x for x in lt]
    unknown = set(out) - {"full_attention", "linear_attention"}
    if unknown:
        raise ConfigError(px + "layer_types", f"has unsupported entries {sorted(unknown)}")
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


def _mlp_params(text: dict[str, Any], h: int,
                px: str = "") -> tuple[int, int, int, int, int, int]:
    """One MLP or MoE block: (all params, active linear weights, experts E, experts per
    token k, routed-expert weights of all E, routed-expert weights of the k active).

    A dense MLP has E = k = 0 and no routed weights.
    """
    for key in UNMODELLED_KEYS:
        if text.get(key):
            raise ConfigError(px + key, f"{UNMODELLED_KEYS[key]} is not modelled here; the "
                              "counts would be wrong")
    exp_key = "num_experts" if text.get("num_experts") is not None else "num_local_experts"
    n_exp = _count(text, exp_key, minimum=0, default=0, prefix=px)
    if n_exp and (text.get("mlp_only_layers") or _count(text, "decoder_sparse_step",
                                                         default=1, prefix=px) != 1):
        raise ConfigError(px + ("mlp_only_layers" if text.get("mlp_only_layers")
                                else "decoder_sparse_step"),
                          "dense MLP layers between MoE layers are not modelled here; the "
                          "counts would be wrong")
    if not n_exp:
        i = _count(text, "intermediate_size", prefix=px)
        return 3 * h * i, 3 * h * i, 0, 0, 0, 0
    k = _count(text, "num_experts_per_tok", prefix=px)
    if k > n_exp:
        raise ConfigError(px + "num_experts_per_tok", f"{k} experts per token is more than "
                          f"the {n_exp} experts ({exp_key})")
    mi = _count(text, "moe_intermediate_size", prefix=px,
                default=_count(text, "intermediate_size", prefix=px)
                if text.get("moe_intermediate_size") is None else None)
    si = _count(text, "shared_expert_intermediate_size", minimum=0, default=0, prefix=px)
    router = h * n_exp
    shared = 3 * h * si + (h if si else 0)  # shared expert + its sigmoid gate
    expert = 3 * h * mi
    total = router + n_exp * expert + shared
    active = router + k * expert + shared
    return total, active, n_exp, k, n_exp * expert, k * expert


def _gdn_params(text: dict[str, Any], h: int, px: str = "") -> tuple[int, int]:
    """(all params, linear weights) of one Gated DeltaNet block."""
    nk = _count(text, "linear_num_key_heads", prefix=px)
    nv = _count(text, "linear_num_value_heads", prefix=px)
    dk = _count(text, "linear_key_head_dim", prefix=px)
    dv = _count(text, "linear_value_head_dim", prefix=px)
    kernel = _count(text, "linear_conv_kernel_dim", default=4, prefix=px)
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
    px = "vision_config."
    d = _count(v, "depth", prefix=px)
    hv = _count(v, "hidden_size", prefix=px)
    iv = _count(v, "intermediate_size", prefix=px)
    patch = _count(v, "patch_size", prefix=px)
    tpatch = _count(v, "temporal_patch_size", default=1, prefix=px)
    cin = _count(v, "in_channels", default=3, prefix=px)
    merge = _count(v, "spatial_merge_size", default=2, prefix=px)
    out = _count(v, "out_hidden_size", prefix=px)
    pos = _count(v, "num_position_embeddings", minimum=0, default=0, prefix=px)
    patch_embed = cin * tpatch * patch * patch * hv + hv
    block = (hv * 3 * hv + 3 * hv) + (hv * hv + hv) + (hv * iv + iv) + (iv * hv + hv) + 4 * hv
    merged = hv * merge * merge

    def merger(postshuffle: bool) -> int:
        norm = 2 * (merged if postshuffle else hv)
        return norm + (merged * merged + merged) + (merged * out + out)

    n_deep = len(v.get("deepstack_visual_indexes") or [])
    return patch_embed + pos * hv + d * block + merger(False) + n_deep * merger(True)
