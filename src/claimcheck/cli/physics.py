"""The physics commands: ``claimcheck geometry`` (parameter, KV and state counts from a
config.json) and ``claimcheck roofline`` (the article's batching roofline). Option checks
here; the arithmetic is :mod:`claimcheck.physics.geometry` and
:mod:`claimcheck.physics.roofline`."""

from __future__ import annotations

import argparse
import math
from typing import Any

from claimcheck.cli.common import emit
from claimcheck.files.errors import InputError
from claimcheck.physics import roofline as rl
from claimcheck.physics.cardfiles import get_card
from claimcheck.physics.cards import TENSOR_COLUMN
from claimcheck.physics.formats import KV_FORMATS, STATE_DTYPE_BYTES, WEIGHT_FORMATS
from claimcheck.physics.inputs import state_words
from claimcheck.physics.modelfiles import geometry_from_file, load_config
from claimcheck.physics.units import GIB, MIB


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``geometry`` and ``roofline`` commands and their options."""
    g = sub.add_parser("geometry", help="parameter, KV and state counts from a config.json")
    g.add_argument("config", help="a Hugging Face config.json")
    g.add_argument("--kv-dtype", default="bf16", help="KV-cache format (default bf16)")
    g.add_argument("--state-dtype", default=None, help="default: the config's mamba_ssm_dtype")
    g.add_argument("--json", action="store_true", help="print JSON instead of the table")

    r = sub.add_parser(
        "roofline", help="the article's batching roofline",
        description="The article's batching roofline: t_step(B) = max((W(B) + B (2S + kappa "
        "L)) / (eta BW), B r F / P). Inputs: a config.json (F, S, kappa, experts), a card "
        "(BW, P, memory), the weights (W: every expert of a MoE, as the checkpoint holds "
        "them). For a mixture of experts with k of E routed experts per token, W(B) reads "
        "the expected fraction of experts touched by B streams, 1 - (1 - k/E)^B, assuming "
        "uniform, independent routing (B = 1: the active experts only; large B: all); "
        "shared experts are always read. Bounds: 0 < eta <= 1, sizes and rates finite "
        "and > 0, tau <= rows, weights plus one stream must fit the card.")
    r.add_argument("--config", required=True, help="the model's config.json")
    r.add_argument("--card", required=True, help="card registry name (data/raw/cards.csv)")
    w = r.add_mutually_exclusive_group(required=True)
    w.add_argument("--weights-gb", type=float,
                   help="measured weight bytes in GB (1e9); a MoE's: all experts")
    w.add_argument("--weights-gib", type=float,
                   help="measured weight bytes in GiB (2^30); a MoE's: all experts")
    w.add_argument("--weights-format", help="bf16, fp8, int8, w4a16, nvfp4")
    w.add_argument("--weights", help="a weights.csv id (size and dtypes from the row)")
    r.add_argument("--eta", type=float, default=1.0, help="fraction of bandwidth achieved")
    r.add_argument("--tflops", type=float, help="compute ceiling override, TFLOP/s")
    r.add_argument("--ceiling", help="a ceilings.csv id (compute ceiling for this card)")
    r.add_argument("--compute-dtype", default="bf16", help="datasheet column if no --tflops")
    r.add_argument("--state-dtype", default=None,
                   help="fp32 (default; a --weights row's own), fp16, bf16")
    r.add_argument("--kv-dtype", default=None, help="bf16 (default; a --weights row's own)")
    r.add_argument("--context", type=float, default=0.0, help="tokens of context per stream")
    r.add_argument("--tau", type=float, default=1.0, help="tokens kept per stream per step")
    r.add_argument("--rows", type=float, default=1.0, help="positions verified per stream")
    r.add_argument("--free-gib", type=float, help="memory free for streams, GiB (default: "
                   "the card's memory x --gpu-memory-utilization less the weights)")
    r.add_argument("--gpu-memory-utilization", type=float, default=0.9,
                   help="share of the card's memory the engine takes, the rest its reserve "
                   "(vLLM's default 0.9); sets the memory wall when --free-gib is not given")
    r.add_argument("--target", type=float, help="claimed aggregate tok/s: print tau needed")
    r.add_argument("--allow-past-wall", action="store_true",
                   help="compute stream counts past the memory wall (marked in the output)")
    r.add_argument("--streams", type=_streams, default=[1, 8, 64],
                   help="stream counts, comma-separated (default 1,8,64)")
    r.add_argument("--json", action="store_true", help="print JSON instead of the table")


CARDS_FILE_COMMANDS = ("roofline", "predict", "measure", "metrics", "model")
"""The commands that take ``--cards-file`` (a user cards file merged over the registry)."""


def add_cards_file(p: argparse.ArgumentParser) -> None:
    """The ``--cards-file`` option of a command that names a card."""
    p.add_argument("--cards-file", metavar="CSV",
                   help="a cards file of your own merged over data/raw/cards.csv (its "
                   "columns: docs/own-card.md); it adds cards, never "
                   "replaces the registry's")


def cards_file(a: argparse.Namespace) -> str | None:
    """The command's ``--cards-file`` (None: none, or a command without the option): each
    card read of the command is given it by name."""
    return getattr(a, "cards_file", None) or None


def use_cards_file(a: argparse.Namespace) -> None:
    """Validate ``--cards-file`` row by row (one line naming file, line and column) before
    anything else is read; nothing is set for later reads (:func:`cards_file`)."""
    from claimcheck.physics.cardfiles import load_cards

    if cards_file(a):
        load_cards(user_path=cards_file(a))


def check_dtypes(a: argparse.Namespace, g: Any) -> None:
    """--kv-dtype/--state-dtype known, and the KV format's scale groups fit the head_dim."""
    _choice(a, "kv_dtype", KV_FORMATS)
    _choice(a, "state_dtype", STATE_DTYPE_BYTES)
    if a.kv_dtype is None:  # roofline: resolved from the weights row (physics.inputs)
        return
    try:
        g.kv_bytes_per_token(a.kv_dtype)
    except ValueError as e:  # e.g. k8v4's 32-value scale groups and a head_dim of 100
        raise InputError("--kv-dtype", f"{a.kv_dtype} does not fit this model: {e}") from None


def check_rows(a: argparse.Namespace, g: Any) -> None:
    """--rows (positions verified per stream per step) no more than the model's
    max_position_embeddings: a stream cannot verify more positions than it can hold."""
    limit = g.max_position_embeddings
    if limit is not None and a.rows > limit:
        raise InputError("--rows", f"{a.rows:,g} positions verified per stream per step "
                         f"exceeds the model's max_position_embeddings {limit:,} (a stream "
                         "cannot verify more positions than it can hold)")


def cmd_geometry(a: argparse.Namespace) -> int:
    g = geometry_from_file(a.config)
    check_dtypes(a, g)
    s = g.summary(kv_dtype=a.kv_dtype, state_dtype=a.state_dtype)
    table = "\n".join([
        f"model_type                {s['model_type']}",
        f"total_params              {s['total_params']:,} parameters",
        f"weights_per_token         {s['weights_per_token']:,} weights read per token",
        f"flops_per_token           {s['flops_per_token'] / 1e9:.2f} GFLOP per token",
        f"kv_values_per_token       {s['kv_values_per_token']:,} values per token of context",
        f"kv_bytes_per_token        {s['kv_bytes_per_token']:,.0f} B "
        f"({s['kv_bytes_per_token'] / 1024:g} KiB) per token at {a.kv_dtype}",
        f"state_values_per_stream   {s['state_values_per_stream']:,} values per stream",
        f"state_bytes_per_stream    {s['state_bytes_per_stream']:,} B "
        f"({s['state_bytes_per_stream'] / MIB:g} MiB) per stream at {s['state_dtype']}",
    ])
    emit(s, a.json, table)
    return 0


def _streams(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--streams wants integers like 1,8,64, got {text!r}"
                                         ) from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError("--streams values must be >= 1")
    return out


def _weights_option(a: argparse.Namespace) -> str:
    """The option that gave the weights (the one of the mutually exclusive four)."""
    return next((o for o, v in (("--weights", a.weights), ("--weights-gb", a.weights_gb),
                                ("--weights-gib", a.weights_gib),
                                ("--weights-format", a.weights_format)) if v is not None),
                "--weights")


# Roofline fields (physics.roofline) -> the roofline option that sets them.
FIELD_OPTION = {"eta": "--eta", "peak_flops_s": "--tflops", "rows": "--rows", "tau": "--tau",
                "context_tokens": "--context", "free_bytes": "--free-gib"}


def build_roofline(a: argparse.Namespace) -> tuple[rl.Roofline, dict[str, Any]]:
    """Turn roofline arguments into model inputs plus a description of each input, by the
    one roofline path (:func:`claimcheck.physics.inputs.roofline_for`), with the card's memory
    so that the roofline's own memory check refuses what does not fit."""
    from claimcheck.claims.registryfiles import load_weight_rows
    from claimcheck.physics.cardfiles import load_ceilings
    from claimcheck.physics.engine_inputs import model_dtype
    from claimcheck.physics.inputs import Weights, fit_reason, roofline_for

    g = geometry_from_file(a.config)
    conv = model_dtype(load_config(a.config))  # S with the conv state, as every road
    card = get_card(a.card, user_path=cards_file(a))
    if a.weights_gb is not None:
        weights = Weights(size=a.weights_gb, unit="GB", source="--weights-gb")
    elif a.weights_gib is not None:
        weights = Weights(size=a.weights_gib, unit="GiB", source="--weights-gib")
    elif a.weights is not None:
        weights = Weights(id=a.weights)
    else:
        weights = Weights(format=a.weights_format)
    try:
        return roofline_for(g, card, weights=weights, ceilings=load_ceilings(),
                            weight_rows=load_weight_rows(), compute_dtype=a.compute_dtype,
                            ceiling=a.ceiling, tflops=a.tflops, state_dtype=a.state_dtype,
                            kv_dtype=a.kv_dtype, context_tokens=a.context, eta=a.eta,
                            rows=a.rows, tau=a.tau, check_memory=True,
                            free_bytes=None if a.free_gib is None else a.free_gib * GIB,
                            context_source="--context", conv_state_dtype=conv)
    except rl.RooflineInputError as e:
        opt = _weights_option(a) if e.field == "weight_bytes" else FIELD_OPTION.get(
            e.field, a.config)
        raise InputError(opt, fit_reason(e, card)) from None


def _finite(a: argparse.Namespace, attr: str, *, low: float, low_ok: bool = False,
            high: float | None = None) -> None:
    """Refuse ``--attr`` unless finite and above ``low`` (or equal when ``low_ok``) and at
    most ``high``; the error names the option and the bound."""
    x = getattr(a, attr)
    if x is None:
        return
    opt = "--" + attr.replace("_", "-")
    lo = f">= {low:g}" if low_ok else f"> {low:g}"
    bound = f"{'[' if low_ok else '('}{low:g}, {high:g}]" if high is not None else lo
    if not math.isfinite(x) or (x < low if low_ok else x <= low) or (
            high is not None and x > high):
        raise InputError(opt, f"must be a finite number {'in ' if high else ''}{bound}, "
                         f"got {x:g}")


def _choice(a: argparse.Namespace, attr: str, known: Any) -> None:
    x = getattr(a, attr)
    if x is not None and x.lower() not in known:
        raise InputError("--" + attr.replace("_", "-"),
                         f"unknown {x!r}; known: {', '.join(sorted(known))}")


def check_roofline_args(a: argparse.Namespace) -> None:
    """Physical bounds of the roofline options, refused before any file is read."""
    _finite(a, "eta", low=0, high=1)
    _finite(a, "gpu_memory_utilization", low=0, high=1)
    for attr in ("weights_gb", "weights_gib", "tflops", "free_gib", "target", "tau"):
        _finite(a, attr, low=0)
    _finite(a, "context", low=0, low_ok=True)
    _finite(a, "rows", low=1, low_ok=True)
    if a.tau > a.rows:
        raise InputError("--tau", f"{a.tau:g} tokens kept per stream per step cannot exceed "
                         f"--rows {a.rows:g} positions verified")
    _choice(a, "kv_dtype", KV_FORMATS)
    _choice(a, "state_dtype", STATE_DTYPE_BYTES)
    _choice(a, "weights_format", WEIGHT_FORMATS)
    _choice(a, "compute_dtype", TENSOR_COLUMN)
    a.compute_dtype = a.compute_dtype.lower()  # the registry's columns are lower case


def memory_wall(a: argparse.Namespace, m: rl.Roofline) -> dict[str, Any]:
    """The most streams that fit beside the weights, by the one wall of every road
    (:func:`claimcheck.physics.inputs.memory_wall`: in --free-gib, else in the card's memory x
    --gpu-memory-utilization less the weights, cards.csv memory_gib); streams asked past it
    are refused unless --allow-past-wall. Empty when a stream needs no memory (no wall)."""
    from claimcheck.physics.inputs import fit_reason, past_wall_reason
    from claimcheck.physics.inputs import memory_wall as wall_of

    card = get_card(a.card, user_path=cards_file(a))
    try:
        wall = wall_of(m, card, free_bytes=None if a.free_gib is None else a.free_gib * GIB,
                       free_source="--free-gib", memory_share=a.gpu_memory_utilization)
    except rl.RooflineInputError as e:
        raise InputError(_weights_option(a), fit_reason(e, card)) from None
    if wall is None:
        if a.free_gib is not None:
            raise InputError("--free-gib", "a stream of this model needs no memory at "
                             f"--context {a.context:g} (no recurrent state, no KV): give "
                             "--context")
        return {}
    why = past_wall_reason(wall, max(a.streams), a.context)
    if why and not a.allow_past_wall:
        raise InputError("--streams", f"{why}; give --allow-past-wall to compute them anyway")
    return wall.as_dict()


def _non_finite(obj: Any, path: str = "") -> tuple[str, float] | None:
    """The first number in ``obj`` (dicts and lists walked) that is inf or nan, and its
    key path; None when every number is finite."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path, obj
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(
        obj, list) else ()
    for k, v in items:
        hit = _non_finite(v, f"{path}.{k}" if path else str(k))
        if hit:
            return hit
    return None


def cmd_roofline(a: argparse.Namespace) -> int:
    check_roofline_args(a)
    if a.tflops is None:
        card = get_card(a.card, user_path=cards_file(a))
        if a.compute_dtype not in card.tensor_tflops:
            raise InputError("--compute-dtype", f"card {card.card} has no dense "
                             f"{a.compute_dtype} rate in cards.csv; give --tflops or one of "
                             f"{', '.join(sorted(card.tensor_tflops))}")
    g = geometry_from_file(a.config)
    check_dtypes(a, g)
    check_rows(a, g)
    m, inputs = build_roofline(a)
    wall = memory_wall(a, m)
    try:
        pts = rl.curve(m, a.streams)
    except OverflowError:
        raise InputError("--streams", f"a {len(str(max(a.streams)))}-digit count of streams "
                         "is too many to compute in floating point") from None
    bend = rl.bend_streams(m)
    out: dict[str, Any] = {
        "inputs": inputs,
        "points": [p.as_dict() | ({"past_memory_wall": p.streams > wall[
            "memory_wall_streams"]} if wall else {}) for p in pts],
        "ceiling_b1_tok_s": rl.ceiling_b1_tok_s(m),
        "bend_streams": bend if math.isfinite(bend) else None,
        "compute_plateau_tok_s": rl.compute_plateau_tok_s(m),
        **wall,
    }
    lines = [f"{inputs['card']}: W = {inputs['weights']}",
             f"{inputs['card']}: BW = {inputs['bandwidth_gb_s']:g} GB/s x eta {a.eta:g}, P = "
             f"{inputs['tflops']:g} TFLOP/s ({inputs['tflops_source']})",
             f"per stream: state {m.state_bytes / MIB:g} MiB ({state_words(inputs)}), KV "
             f"{m.kv_bytes_per_token / 1024:g} KiB/token ({inputs['kv_dtype']}) x "
             f"{a.context:g} tokens of context; {a.rows:g} row(s) verified, {a.tau:g} "
             "token(s) kept per step",
             "decode only (no prefill, no ramp); streams are independent, all decoding",
             *([f"MoE: {m.experts_per_token} of {m.num_experts} routed experts per token; "
                "weights read per step = all but the untouched experts, expected fraction "
                "touched 1 - (1 - k/E)^B (uniform, independent routing); shared experts, "
                "router, attention and head read every step"] if m.moe else []),
             f"{'streams':>8} {'step ms':>9} {'mem ms':>9} {'comp ms':>9} {'bound':>8} "
             f"{'aggregate tok/s':>16} {'per stream tok/s':>17}"]
    for p in pts:
        moe = ""
        if m.moe:
            cov = rl.expert_coverage(m.experts_per_token, m.num_experts, p.streams)
            moe = (f"  ({cov:.0%} of experts, {rl.weight_read_bytes(m, p.streams) / 1e9:.1f}"
                   " GB of weights read)")
        past = "  (past the memory wall)" if wall and p.streams > wall[
            "memory_wall_streams"] else ""
        lines.append(f"{p.streams:>8} {p.step_ms:>9.2f} {p.memory_ms:>9.2f} "
                     f"{p.compute_ms:>9.2f} {p.bound:>8} {p.aggregate_tok_s:>16.1f} "
                     f"{p.per_stream_tok_s:>17.1f}{moe}{past}")
    if m.moe:
        out["moe"] = {"experts_per_token": m.experts_per_token, "num_experts": m.num_experts,
                      "routing": "uniform, independent: fraction touched 1 - (1 - k/E)^B",
                      "routed_expert_bytes": m.routed_expert_bytes,
                      "weight_bytes_read": {str(p.streams): rl.weight_read_bytes(m, p.streams)
                                            for p in pts}}
    bend_txt = (f"bend at {bend:.1f} streams" if math.isfinite(bend) else
                "no bend (memory-bound at every stream count)")
    lines.append(f"B=1 bandwidth ceiling (weights only): {out['ceiling_b1_tok_s']:.1f} tok/s; "
                 f"{bend_txt}; compute plateau {out['compute_plateau_tok_s']:.0f} tok/s "
                 "aggregate")
    if wall:
        lines.append(f"memory wall: {wall['memory_wall_streams']} streams in "
                     f"{wall['memory_wall_free_gib']:.2f} GiB ({wall['memory_wall_source']})")
    if a.target is not None:
        b = a.streams[-1]
        tau = rl.tau_needed(m, b, a.target)
        if not math.isfinite(tau):
            plateau = rl.compute_plateau_tok_s(m.with_(rows=1.0, tau=1.0))
            raise InputError("--target", f"{a.target:,g} tok/s at {b} streams is unreachable: "
                             "no number of tokens kept per stream per step gives it, the "
                             f"compute plateau being {plateau:,.1f} tok/s aggregate")
        out["tau_needed"] = {"streams": b, "aggregate_tok_s": a.target, "tau": tau}
        lines.append(f"{a.target:g} tok/s at {b} streams needs tau = "
                     f"{tau:.2f} tokens kept per stream per step")
    bad = _non_finite(out)
    if bad:
        raise InputError("roofline", f"result {bad[0]} is {bad[1]} (not a finite number) "
                         "for these inputs; nothing printed")
    emit(out, a.json, "\n".join(lines))
    return 0
