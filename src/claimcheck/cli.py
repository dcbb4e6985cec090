"""Command-line interface: claimcheck geometry|roofline|claims|measure|metrics|model ..."""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from claimcheck.core import roofline as rl
from claimcheck.core.cards import TENSOR_COLUMN, detect_card, get_card, load_cards
from claimcheck.core.claims import load_claims
from claimcheck.core.errors import InputError
from claimcheck.core.formats import KV_FORMATS, STATE_DTYPE_BYTES, WEIGHT_FORMATS
from claimcheck.core.geometry import geometry_from_file
from claimcheck.core.paths import RUNS
from claimcheck.core.units import GIB, MIB
from claimcheck.measure import clientproc, telemetry
from claimcheck.measure import server as srv
from claimcheck.measure.engines import engine_python, get_engine, vllm_command
from claimcheck.measure.protocols import check_fit, get_protocol
from claimcheck.measure.runner import (
    Interrupted,
    raise_on_signals,
    run_protocol,
    start_engine,
    tokenizer_for,
)


def _print(obj: Any, as_json: bool, table: str) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False) if as_json else table)


def check_dtypes(a: argparse.Namespace, g: Any) -> None:
    """--kv-dtype/--state-dtype known, and the KV format's scale groups fit the head_dim."""
    _choice(a, "kv_dtype", KV_FORMATS)
    _choice(a, "state_dtype", STATE_DTYPE_BYTES)
    if a.kv_dtype is None:  # roofline: resolved from the weights row (core.inputs)
        return
    try:
        g.kv_bytes_per_token(a.kv_dtype)
    except ValueError as e:  # e.g. k8v4's 32-value scale groups and a head_dim of 100
        raise InputError("--kv-dtype", f"{a.kv_dtype} does not fit this model: {e}") from None


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
    _print(s, a.json, table)
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


# Roofline fields (core.roofline) -> the roofline option that sets them.
FIELD_OPTION = {"eta": "--eta", "peak_flops_s": "--tflops", "rows": "--rows", "tau": "--tau",
                "context_tokens": "--context", "free_bytes": "--free-gib"}


def build_roofline(a: argparse.Namespace) -> tuple[rl.Roofline, dict[str, Any]]:
    """Turn roofline arguments into model inputs plus a description of each input, by the
    one roofline path (:func:`claimcheck.core.inputs.roofline_for`), with the card's memory
    so that the roofline's own memory check refuses what does not fit."""
    from claimcheck.core.cards import load_ceilings
    from claimcheck.core.inputs import Weights, load_weight_rows, roofline_for

    g = geometry_from_file(a.config)
    card = get_card(a.card)
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
                            context_source="--context")
    except rl.RooflineInputError as e:
        opt = _weights_option(a) if e.field == "weight_bytes" else FIELD_OPTION.get(
            e.field, a.config)
        mem = " (" + card.card + ": cards.csv memory_gib)" if e.field in (
            "weight_bytes", "free_bytes") else ""
        raise InputError(opt, f"{e}{mem}") from None


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
    """The most streams that fit beside the weights: in --free-gib, else in the card's
    memory less the weights (cards.csv memory_gib); streams asked past it are refused
    unless --allow-past-wall. Empty when a stream needs no memory (no wall)."""
    per = m.state_bytes + m.kv_bytes_per_token * m.context_tokens
    if per <= 0:
        if a.free_gib is not None:
            raise InputError("--free-gib", "a stream of this model needs no memory at "
                             f"--context {a.context:g} (no recurrent state, no KV): give "
                             "--context")
        return {}
    card = get_card(a.card)
    if a.free_gib is not None:
        free, source = a.free_gib * GIB, "--free-gib"
    else:
        free, source = card.memory_gib * GIB - m.weight_bytes, (
            f"{card.card}'s {card.memory_gib:g} GiB less the weights")
    wall = rl.memory_wall_streams(free, m.state_bytes, m.kv_bytes_per_token,
                                  m.context_tokens)
    past = [b for b in a.streams if b > wall]
    if past and not a.allow_past_wall:
        raise InputError("--streams", f"{max(past):,} streams is past the memory wall: "
                         f"{wall:,} streams of {per / MIB:,.1f} MiB each (state and KV at "
                         f"--context {a.context:g}) fit in {free / GIB:.2f} GiB ({source}); "
                         "give --allow-past-wall to compute them anyway")
    return {"memory_wall_streams": wall, "memory_wall_free_gib": free / GIB,
            "memory_wall_source": source}


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
        card = get_card(a.card)
        if a.compute_dtype not in card.tensor_tflops:
            raise InputError("--compute-dtype", f"card {card.card} has no dense "
                             f"{a.compute_dtype} rate in cards.csv; give --tflops or one of "
                             f"{', '.join(sorted(card.tensor_tflops))}")
    check_dtypes(a, geometry_from_file(a.config))
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
             f"per stream: state {m.state_bytes / MIB:g} MiB ({inputs['state_dtype']}), KV "
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
    _print(out, a.json, "\n".join(lines))
    return 0


def cmd_claims(a: argparse.Namespace) -> int:
    """List the registry, or with --check validate it: structure, then every quote against
    its seed and the exclusions beside it (the seeds' absence is said, never passed over)."""
    from claimcheck.core.cards import load_cards
    from claimcheck.core.claims import check_against_seeds, load_excluded, seeds_dir
    from claimcheck.core.io import dumps_json
    from claimcheck.core.paths import RAW

    path = Path(a.file) if a.file else RAW / "claims.csv"
    claims = load_claims(path, cards=set(load_cards()))
    if a.check:
        beside = path.parent / "claims_excluded.csv"
        excl_path = beside if beside.exists() else RAW / "claims_excluded.csv"
        folder = seeds_dir()
        if folder is None:
            print(f"{path}: {len(claims)} claims, structure OK; quotes NOT checked: no seed "
                  "articles at ../shared/seeds beside the repository (set CLAIMCHECK_SEEDS)")
            return 0
        excluded = load_excluded(excl_path)
        check_against_seeds(claims, str(path), folder, excluded, str(excl_path))
        n_assumed = sum(1 for c in claims if c.assumed)
        print(f"{path}: {len(claims)} claims OK (quotes found in {folder}; {n_assumed} rows "
              f"carry assumed fields); {excl_path.name}: {len(excluded)} exclusions OK")
        return 0
    rows = [c.tidy() for c in claims]
    if a.json:
        print(dumps_json(rows, indent=2))
        return 0
    lines = [f"{'id':<34} {'card':<8} {'streams':>13} {'relation':<20} {'context':>8} "
             f"{'speculation (rows/step)':<24} {'metric':<32} {'value tok/s':>11} "
             f"{'per stream tok/s':>16}  assumed (project-supplied)"]
    bound_mark = {"at_least": ">=", "at_most": "<="}
    for c, r in zip(claims, rows, strict=True):
        spec = r["spec_method"] or "?"
        if spec not in ("none", "?"):
            spec += f" ({r['spec_draft_tokens'] + 1})" if r["spec_draft_tokens"] else " (?)"
        streams = str(r["streams"]) + (f" ({r['streams_running']:g} run)"
                                       if r["streams_running"] else "")
        marks = {k: "*" if c.is_assumed(k) else "" for k in ("card", "streams",
                                                             "context_tokens", "spec_method")}
        lines.append(f"{r['id']:<34} {r['card'] + marks['card']:<8} "
                     f"{streams + marks['streams']:>13} {r['stream_relation']:<20} "
                     f"{str(r['context_tokens'] or '?') + marks['context_tokens']:>8} "
                     f"{spec + marks['spec_method']:<24} {r['metric_label']:<32} "
                     f"{bound_mark.get(r.get('bound') or '', '') + format(r['value'], 'g'):>11} "
                     f"{r['per_stream_tok_s']:>16.1f}  "
                     f"{r['assumed_fields'] or '-'}")
    lines.append("per stream = value / streams for sums (/ streams running where a server cap "
                 "or a measured average batch says fewer ran), the value itself for per-stream "
                 "metrics; rows/step = draft tokens + 1 verified per stream per step; >= and <= "
                 "mark a figure the seed gives as a bound; * and the last column: the "
                 "project's assumption, not the seed's statement")
    print("\n".join(lines))
    return 0


# ------------------------------------------------------------------ measuring side


def add_measure_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="start vllm serve for an engine config (detached)")
    s.add_argument("--engine", required=True, help="engine config name (config/engines.yaml)")
    s.add_argument("--engines-file", default=None,
                   help="engine configs to read instead of config/engines.yaml")
    s.add_argument("--state", default=".claimcheck/server", help="server state directory")
    s.add_argument("--port", type=int, default=8000, help="server port (default 8000)")
    s.add_argument("--health-timeout", type=float, default=900, help="seconds")
    s.add_argument("--no-wait", action="store_true", help="return once started")
    s.set_defaults(func=cmd_serve)

    s = sub.add_parser("wait", help="wait for a detached server to answer /health")
    s.add_argument("--state", default=".claimcheck/server",
                   help="server state directory written by serve")
    s.add_argument("--health-timeout", type=float, default=900, help="seconds")
    s.set_defaults(func=cmd_wait)

    s = sub.add_parser("stop", help="stop a detached server")
    s.add_argument("--state", default=".claimcheck/server",
                   help="server state directory written by serve")
    s.set_defaults(func=cmd_stop)

    m = sub.add_parser("measure", help="replay protocols on this machine's GPU")
    m.add_argument("--card", required=True,
                   help="card registry name (rtx3090, h200, ...), auto (NVML's GPU name "
                        "mapped through cards.csv nvml_name), or cpu for a CPU engine; a "
                        "named card is checked against the GPU NVML sees")
    m.add_argument("--engine", required=True, help="engine config name (config/engines.yaml)")
    m.add_argument("--protocol", action="append", required=True,
                   help="protocol name (config/protocols.yaml); repeat for several")
    m.add_argument("--profile", default=None, help="scale protocols (e.g. ci)")
    m.add_argument("--repeats", type=int, default=None,
                   help="override the protocol's repeats (recorded in provenance)")
    g = m.add_mutually_exclusive_group()
    g.add_argument("--attach", default=None, help="state dir of a server started by serve")
    g.add_argument("--base-url", default=None, help="an already running server")
    m.add_argument("--server-log", default=None, help="its log file, with --base-url")
    m.add_argument("--port", type=int, default=8000,
                   help="server port; 0 picks a free one (several jobs on one node)")
    m.add_argument("--state", default=".claimcheck/server",
                   help="state directory for a server this command starts")
    m.add_argument("--runs-dir", default=str(RUNS),
                   help="where new run directories go (default data/raw/runs)")
    m.add_argument("--health-timeout", type=float, default=900, help="seconds")
    m.add_argument("--step-timeout", type=float, default=None,
                   help="seconds per step's client (default: 300 + waves x "
                   "(prompt/10 + output/1), waves = ceil(requests/streams))")
    m.add_argument("--gpus", default=None, help="NVML indices to sample, e.g. 0,1")
    m.add_argument("--protocols-file", default=None,
                   help="protocols to read instead of config/protocols.yaml")
    m.add_argument("--engines-file", default=None,
                   help="engine configs to read instead of config/engines.yaml")
    m.add_argument("--keep-server", action="store_true", help="leave a started server up")
    m.add_argument("--one-client-process", action="store_true",
                   help="run every `vllm bench serve` step in one process (saves vLLM's "
                        "import, ~22 s a step on the H200); each step still records its "
                        "exact equivalent command")
    m.set_defaults(func=cmd_measure)


def cmd_serve(a: argparse.Namespace) -> int:
    engine = get_engine(a.engine, a.engines_file)
    try:
        start_engine(engine, state_dir=Path(a.state), port=a.port,
                     health_timeout_s=a.health_timeout, wait=not a.no_wait)
    except srv.ServerError as e:
        print(f"claimcheck: error: {e}", file=sys.stderr)
        return 3
    return 0


def cmd_wait(a: argparse.Namespace) -> int:
    s = srv.Server.load(Path(a.state))
    try:
        srv.wait_healthy(s, a.health_timeout)
    except srv.ServerError as e:
        print(f"claimcheck: error: {e}", file=sys.stderr)
        return 3
    s.save(Path(a.state))
    print(f"claimcheck: {s.base_url} healthy", file=sys.stderr)
    return 0


def cmd_stop(a: argparse.Namespace) -> int:
    s = srv.Server.load(Path(a.state))
    if s.pid is None or not s.alive():
        print(f"claimcheck: the server in {a.state} (pid {s.pid}) is not running; "
              "nothing to stop", file=sys.stderr)
        return 0
    if not srv.stop(s, source=str(Path(a.state) / "server.json")):
        print(f"claimcheck: error: pid {s.pid} is still running after SIGTERM and SIGKILL "
              "to its process group", file=sys.stderr)
        return 1
    print(f"claimcheck: stopped pid {s.pid}", file=sys.stderr)
    return 0


def parse_gpus(text: str | None) -> list[int] | None:
    """``--gpus 0,1`` as NVML indices; :class:`InputError` naming the option otherwise.

    Indices past the GPUs NVML sees are refused when NVML is available.
    """
    if text is None:
        return None
    parts = [x.strip() for x in text.split(",")]
    if not all(x.isdigit() for x in parts):
        raise InputError("--gpus", f"wants NVML indices like 0 or 0,1, got {text!r}")
    gpus = [int(x) for x in parts]
    if len(set(gpus)) != len(gpus):
        raise InputError("--gpus", f"repeats an index: {text!r}")
    ok, _ = telemetry.nvml_status()
    if ok:
        n = telemetry.gpu_count()
        bad = [g for g in gpus if g >= n]
        if bad:
            raise InputError("--gpus", f"no GPU {bad[0]}: NVML sees {n} (indices 0-{n - 1})")
    return gpus


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the OS picks it)."""
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def measure_card(requested: str, facts: dict[str, Any], tp: int = 1) -> str:
    """The card a measure run records: ``cpu`` as given; ``auto`` from NVML's names of the
    GPUs used; a named card checked against them when NVML answers. Refuses a GPU count
    below the engine's tensor-parallel size."""
    if requested == "cpu":
        return "cpu"
    cards = load_cards()
    if requested != "auto":
        get_card(requested)
    if not facts.get("available"):
        if requested == "auto":
            raise InputError("--card", f"auto needs NVML: {facts.get('reason')}")
        return requested
    names = [g.get("name") or "" for g in facts.get("gpus", [])]
    if len(names) < tp:
        raise InputError("--gpus", f"the engine's tensor_parallel_size is {tp} but "
                         f"{len(names)} GPU(s) are given or visible")
    found = detect_card(names, cards)
    if requested not in ("auto", found):
        raise InputError("--card", f"{requested!r} asked for, but NVML sees "
                         f"{', '.join(sorted(set(names)))} = card {found!r}")
    return found


def cmd_measure(a: argparse.Namespace) -> int:
    # Refuse bad input before anything starts. "cpu" names a run with no GPU (CPU engine).
    engine = get_engine(a.engine, a.engines_file)
    gpus = parse_gpus(a.gpus)
    a.card = measure_card(a.card, telemetry.gpu_facts(gpus) if a.card != "cpu" else {},
                          engine.tensor_parallel_size)
    protos = [get_protocol(p, a.protocols_file, a.profile) for p in a.protocol]
    if a.repeats is not None:
        if a.repeats < 1:
            raise InputError("--repeats", f"must be >= 1, got {a.repeats}")
        protos = [dataclasses.replace(p, repeats=a.repeats) for p in protos]
    for proto in protos:  # every protocol must fit the engine before anything starts
        check_fit(proto, engine.max_model_len, engine.max_num_seqs, engine.name,
                  str(a.engines_file or "config/engines.yaml"))
    if a.port == 0:
        a.port = free_port()
    server: srv.Server | None = None
    if a.attach:
        server = srv.Server.load(Path(a.attach))
        if not server.healthy():
            raise InputError(a.attach, f"server at {server.base_url} is not healthy",
                             key="server.json")
    elif a.base_url:
        server = srv.Server(base_url=a.base_url.rstrip("/"), log_path=a.server_log or "",
                            engine=engine.name)
        if not server.healthy():
            raise InputError("--base-url", f"{a.base_url}/health does not answer")
    own = a.attach is None and a.base_url is None
    ok, why = telemetry.nvml_status()
    if not ok:
        print(f"claimcheck: warning: {why}; runs will record no GPU telemetry",
              file=sys.stderr)
    tok = tokenizer_for(engine)
    exit_code = 0
    worker = (clientproc.BenchWorker(engine_python(vllm_command()))
              if a.one_client_process else None)
    raise_on_signals()  # SIGTERM (SLURM's time limit) / SIGINT: record, stop, exit 143/130
    try:
        for proto in protos:
            if own and (server is None or not server.alive()):
                try:
                    server = start_engine(engine, state_dir=Path(a.state), port=a.port,
                                          health_timeout_s=a.health_timeout)
                except srv.ServerError as e:
                    print(f"claimcheck: error: {e}", file=sys.stderr)
                    return 3
            assert server is not None
            run_dir, status = run_protocol(protocol=proto, engine=engine, card=a.card,
                                           server=server, runs=Path(a.runs_dir),
                                           tokenizer=tok, gpus=gpus, profile=a.profile,
                                           step_timeout_s=a.step_timeout, worker=worker)
            print(f"claimcheck: {proto.name}: {status}: {run_dir}", file=sys.stderr)
            if status != "complete":
                exit_code = 4
                if own and server.alive() and not server.healthy():
                    srv.stop(server)
    except Interrupted as e:
        print(f"claimcheck: {e}; what was measured is kept, the server is stopped",
              file=sys.stderr)
        exit_code = e.code
    finally:
        if worker is not None:
            worker.close()
        if own and server is not None and not a.keep_server:
            srv.stop(server, grace_s=10 if exit_code > 128 else 30)
    return exit_code


# ------------------------------------------------------------------ timeline: metrics, model
# (issue 11) `claimcheck metrics RUN_DIR` and `claimcheck model RUN_DIR`; one block.


def add_timeline_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("metrics", help="every tok/s definition, recomputed from a run's "
                       "token timeline")
    s.add_argument("run_dir", help="a run directory (data/raw/runs/<run>)")
    s.add_argument("--json", action="store_true", help="print JSON instead of the table")
    s.set_defaults(func=cmd_metrics)

    s = sub.add_parser("model", help="calibrated step model: predict every step of a run")
    s.add_argument("run_dir", help="a run directory (data/raw/runs/<run>)")
    s.add_argument("--calibrate-from", default=None,
                   help="run directory with a 1-stream step (default: chosen among the "
                        "runs beside RUN_DIR on its card, as `snakemake all` does: the same "
                        "engine first, then the same weight format)")
    s.add_argument("--tolerance", type=float, default=0.05,
                   help="relative miss allowed before a term is named (default 0.05)")
    s.add_argument("--json", action="store_true", help="print JSON instead of the table")
    s.set_defaults(func=cmd_model)


def _fmt(v: float | None, spec: str = ",.1f") -> str:
    return "null" if v is None else format(v, spec)


def cmd_metrics(a: argparse.Namespace) -> int:
    from claimcheck.core.definitions import DEFINITIONS, REGISTRY_METRIC
    from claimcheck.report import steps as run_steps

    run = run_steps.load(a.run_dir)
    proto = run.provenance.get("protocol_config", {})
    rows = [run_steps.step_metrics(s) for s in run.steps]
    ctx = f"{proto.get('input_len', '?')} prompt + {proto.get('output_len', '?')} output"
    status = run.provenance.get("status")
    lines = [f"{run.name}: {run.provenance.get('card', '?')}, engine "
             f"{run.provenance.get('engine', '?')}, protocol {proto.get('name', '?')}"
             + ("" if status == "complete" else
                f"; run {status}: {run.provenance.get('failure')}"),
             "streams are independent requests, a closed loop (a new one starts when one "
             f"finishes); context per stream up to {ctx} tokens"]
    for r in rows:
        lines.append("")
        lines.append(f"step {r['step']} repeat {r['repeat']}: {r['streams']} stream(s), "
                     f"{r['requests']} requests ({r['completed']} completed), "
                     f"{r['output_tokens']:,} output tokens, {r['wall_s']:.2f} s first send "
                     f"to last token, decode window {r['decode_window_s']:.2f} s")
        lines.append(f"  {'definition':<34} {'aggregate':>12} {'per stream':>11}  unit")
        for name, dfn in DEFINITIONS.items():
            ps = r.get(f"{name}_per_stream")
            agg = _fmt(r[name], ",.3f" if dfn.unit == "tok/J" else ",.1f")
            lines.append(f"  {name:<34} {agg:>12} "
                         f"{_fmt(ps) if f'{name}_per_stream' in r else '':>11}  {dfn.unit}")
        ln = r["lanes"]
        lines.append(f"  lanes line: {ln['lanes']} lanes, {ln['total_tokens']:,} tok in "
                     f"{ln['wall_s']:.2f} s, {_fmt(ln['decode_tok_s'])} tok/s decode / "
                     f"{ln['e2e_tok_s']:,.1f} tok/s e2e, plan {ln['plan_s'] * 1e3:,.0f} ms, "
                     f"tail {ln['tail_s'] * 1e3:,.0f} ms, fastest second "
                     f"{ln['fastest_second_tok_s']:,.0f} tok/s, per lane "
                     f"{_fmt(ln['per_lane_tok_s'])} tok/s")
    for why in run.skipped:
        lines.append(f"skipped {why}")
    lines.append("")
    lines.append("what each definition divides by, and leaves out:")
    for name, dfn in DEFINITIONS.items():
        lines.append(f"  {name}: {dfn.divides_by}; leaves out {dfn.leaves_out}")
    lines.append("aggregate = summed over the streams; per stream = aggregate / streams "
                 "(per_request_decode is one stream's own speed)")
    out = {"run": run.name, "card": run.provenance.get("card"),
           "engine": run.provenance.get("engine"), "protocol": proto.get("name"),
           "definitions": {k: {"label": v.label, "unit": v.unit, "scope": v.scope,
                               "phase": v.phase, "divides_by": v.divides_by,
                               "leaves_out": v.leaves_out,
                               "registry_metric": REGISTRY_METRIC[k]}
                           for k, v in DEFINITIONS.items()},
           "steps": rows, "skipped": list(run.skipped)}
    _print(out, a.json, "\n".join(lines))
    return 0


def cmd_model(a: argparse.Namespace) -> int:
    from claimcheck.report import predict
    from claimcheck.report import steps as run_steps

    target = run_steps.load(a.run_dir)
    if a.calibrate_from:
        out = predict.predict(target, run_steps.load(a.calibrate_from))
    else:  # as the pipeline does: by the stated rule among the runs beside this one
        here = Path(a.run_dir).resolve()
        sibs = [target] + [run_steps.load(p) for p in sorted(here.parent.iterdir())
                           if p != here and (p / "provenance.json").is_file()]
        out = predict.predict_run(target, predict.choose_for(target, sibs))
    proto = target.provenance.get("protocol_config", {})
    card = get_card(target.provenance["card"])
    out["calibration"]["bandwidth_share_of_datasheet"] = (
        out["calibration"]["bandwidth_gb_s"] / card.memory_bw_gb_s)
    for r in out["steps"]:
        r["miss"] = predict.miss_term(r, a.tolerance)
    c, e = out["calibration"], out["engine"]
    lines = [f"{out['run']}: calibrated on {out['calibrated_on']}",
             f"  effective bandwidth {c['bandwidth_gb_s']:,.0f} GB/s "
             f"({c['bandwidth_gb_s'] / card.memory_bw_gb_s:.0%} of the {card.name}'s "
             f"{card.memory_bw_gb_s:,.0f} GB/s datasheet) from {c['bandwidth_source']}",
             f"  effective compute {c['tflops']:,.1f} TFLOP/s from {c['compute_source']}",
             f"  per-request overhead {c['request_overhead_s'] * 1e3:.1f} ms from "
             f"{c['overhead_source']}",
             *(f"  {k} step: {v['run']} step {v['step']} repeat {v['repeat']}, {v['why']}"
               for k, v in out["choice"].items() if isinstance(v, dict)),
             *([f"  compute step: none ({out['choice']['compute_missing']})"]
               if out["choice"]["compute"] is None else []),
             f"  engine: W {e['weights']}",
             f"  engine: state {e['state_bytes_per_stream'] / 1e6:,.1f} MB per stream "
             f"({e['state_dtype']} recurrent + {e['conv_state_dtype']} conv, read and written "
             "each step)",
             f"  engine: KV {e['kv_bytes_per_token'] / 1024:g} KiB per token "
             f"({e['kv_dtype']})",
             f"  engine: token budget {e['max_num_batched_tokens']} "
             f"({e['max_num_batched_tokens_source']}); {e['max_num_seqs']} slots",
             "  aggregates in tok/s summed over the streams (independent requests, closed "
             "loop); e2e = all tokens / first send to last token; decode = tokens after "
             "each first / time with any request decoding",
             f"  context per stream: up to {proto.get('input_len', '?')} prompt + "
             f"{proto.get('output_len', '?')} output tokens (protocol "
             f"{proto.get('name', '?')}); simulated with each request's recorded prompt and "
             "output lengths",
             "  per stream = aggregate / streams; TPOT = median time per output token "
             "after the first",
             f"{'step':>4} {'rep':>3} {'streams':>7} {'pred e2e':>9} {'meas e2e':>9} "
             f"{'err':>6} {'e2e/stream p/m':>14} {'pred dec':>9} {'meas dec':>9} {'err':>6} "
             f"{'pred TPOT':>10} {'meas TPOT':>10}  bound (share of time)"]
    for r in out["steps"]:
        dec_err = "null" if r["decode_error"] is None else f"{r['decode_error']:+.1%}"
        lines.append(
            f"{r['step']:>4} {r['repeat']:>3} {r['streams']:>7} "
            f"{r['predicted_e2e_tok_s']:>9,.1f} {r['measured_e2e_tok_s']:>9,.1f} "
            f"{r['e2e_error']:>+6.1%} "
            f" {r['predicted_e2e_tok_s'] / r['streams']:>6.1f}/"
            f"{r['measured_e2e_tok_s'] / r['streams']:<6.1f} "
            f"{_fmt(r['predicted_decode_tok_s']):>9} "
            f"{_fmt(r['measured_decode_tok_s']):>9} {dec_err:>6} "
            f"{r['predicted_median_tpot_ms']:>7.2f} ms {r['measured_median_tpot_ms']:>7.2f} ms"
            f"  {r['bound']} ({r.get('memory_bound_share', 0):.0%} memory: weights "
            f"{r.get('weights_share_of_memory', 0):.0%}, state "
            f"{r.get('state_share_of_memory', 0):.0%}, KV {r.get('kv_share_of_memory', 0):.0%})"
            + (" [calibration step]" if r["calibration_step"] else ""))
        if r["miss"]:
            lines.append(f"       miss beyond {a.tolerance:.0%}: {r['miss']}")
    _print(out, a.json, "\n".join(lines))
    return 0


# ------------------------------------------------------------------ end timeline block


# ------------------------------------------------------------------ predict (issue 19)
# `claimcheck predict`: a protocol predicted from the committed runs of an engine on a card.


def add_predict_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("predict", help="predict every step of a protocol for an engine on a "
                       "card from its committed runs (calibrated step model)")
    s.add_argument("--card", required=True, help="card name (data/raw/cards.csv)")
    s.add_argument("--engine", required=True, help="engine name with committed runs")
    s.add_argument("--protocol", required=True, help="protocol name in the protocols file")
    s.add_argument("--protocols-file", default=None,
                   help="protocols YAML (default config/protocols.yaml)")
    s.add_argument("--runs", default=None, help="runs folder (default data/raw/runs)")
    s.add_argument("--verify", type=int, default=None, metavar="N",
                   help="plan verify mode: measure the calibration steps and N sampled "
                        "steps, predict the rest; predicted load seconds against the suite")
    s.add_argument("--json", action="store_true", help="print JSON instead of the table")
    s.set_defaults(func=cmd_predict)


def cmd_predict(a: argparse.Namespace) -> int:
    from claimcheck.core.paths import CONFIG, RUNS
    from claimcheck.measure.engines import load_engines
    from claimcheck.measure.protocols import load_protocols
    from claimcheck.report import predict
    from claimcheck.report import steps as run_steps

    if a.verify is not None and a.verify < 0:
        raise InputError("--verify", f"the number of sampled steps must be >= 0, got {a.verify}")
    try:
        card = get_card(a.card)
    except InputError as e:
        raise InputError("--card", e.reason) from None
    pfile = Path(a.protocols_file) if a.protocols_file else CONFIG / "protocols.yaml"
    protos = load_protocols(pfile)
    if a.protocol not in protos:
        raise InputError("--protocol", f"{a.protocol!r} is not in {pfile} (known: "
                         f"{', '.join(sorted(protos))})")
    root = Path(a.runs) if a.runs else RUNS
    if not root.is_dir():
        raise InputError("--runs", f"{root} is not a folder")
    runs = [run_steps.load(p) for p in sorted(root.iterdir())
            if (p / "provenance.json").is_file()]
    out = predict.predict_protocol(runs, a.card, a.engine, protos[a.protocol],
                                   load_engines())
    if a.verify is not None:
        out["verify"] = predict.verify_plan(out, a.verify, list(protos.values()))
    out = {k: v for k, v in out.items() if not k.startswith("_")}
    c = out["calibration"]
    dummy = " (dummy weights)" if out["weights"] == "dummy" else ""
    lines = [f"{a.protocol} predicted for {a.engine}{dummy} on the {card.name} from the "
             f"committed runs on that card; engine shape from {out['engine_run']}",
             f"  effective bandwidth {c['bandwidth_gb_s']:,.0f} GB/s from "
             f"{c['bandwidth_source']}",
             f"  effective compute {c['tflops']:,.1f} TFLOP/s from {c['compute_source']}",
             f"  per-request overhead {c['request_overhead_s'] * 1e3:.1f} ms from "
             f"{c['overhead_source']}",
             *(f"  {k} step chosen because {v['why']}" for k, v in out["choice"].items()
               if isinstance(v, dict)),
             f"  assumed: {out['assumptions']}",
             "  tok/s aggregate = summed over the streams (independent requests); per stream "
             "= aggregate / streams; e2e = all tokens / first send to last token; decode = "
             "tokens after each first / time with any request decoding; context per stream "
             "= input + output tokens",
             f"{'step':>4} {'streams':>7} {'requests':>8} {'in+out':>12} {'pred e2e':>9} "
             f"{'/stream':>7} {'pred dec':>9} {'TPOT ms':>8} {'TTFT s':>7} {'load s':>7} "
             f"{'meas e2e':>9} {'err':>6} {'meas dec':>9} {'err':>6}"]
    for r in out["steps"]:
        e2e = r["predicted_e2e_tok_s"]
        lines.append(
            f"{r['index']:>4} {r['streams']:>7} {r['requests']:>8} "
            f"{r['input_len']:>6}+{r['output_len']:<5} {_fmt(e2e):>9} "
            f"{_fmt(e2e / r['streams'] if e2e else None):>7} "
            f"{_fmt(r['predicted_decode_tok_s']):>9} "
            f"{_fmt(r['predicted_median_tpot_ms'], '.2f'):>8} "
            f"{_fmt(r['predicted_median_ttft_s'], '.3f'):>7} "
            f"{_fmt(r['predicted_load_s']):>7} {_fmt(r['measured_e2e_tok_s']):>9} "
            f"{_fmt(r['e2e_error'], '+.1%'):>6} {_fmt(r['measured_decode_tok_s']):>9} "
            f"{_fmt(r['decode_error'], '+.1%'):>6}"
            + (" [calibration step]" if r["calibration_step"] else "")
            + (f"  {r['note']}" if r["note"] else ""))
    lines.append(f"predicted load for the whole protocol ({out['steps'][0]['repeats']} "
                 f"repeat(s) per step): {out['predicted_load_s']:,.0f} s")
    v = out.get("verify")
    if v:
        lines.append(f"verify mode, {v['sampled']} sampled step(s): measure the calibration "
                     "steps " + "; ".join(
                         f"{x['role']}: {x['streams']} stream(s) x {x['requests']} requests "
                         f"of {x['input_len']}+{x['output_len']} tokens "
                         f"({x['predicted_load_s']:,.0f} s)" for x in v["calibration_steps"])
                     + f" (protocol step(s) {v['calibration_protocol_steps']}) and "
                     f"protocol step(s) {v['sampled_steps']} once each; predict step(s) "
                     f"{v['predicted_steps']}")
        lines.append(f"  predicted load: verify {v['verify_load_s']:,.0f} s against "
                     f"{v['protocol_load_s']:,.0f} s for this protocol in full and "
                     f"{v['suite_load_s']:,.0f} s for the full suite ({v['suite_protocols']} "
                     f"protocols of {pfile.name}, every step that fits, every repeat); the "
                     f"suite in verify mode (calibration once, {v['sampled']} sampled "
                     f"step(s) per protocol once): {v['suite_verify_load_s']:,.0f} s")
    _print(out, a.json, "\n".join(lines))
    return 0


# ------------------------------------------------------------------ end predict block


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="claimcheck", description="Check LLM-serving throughput claims: model "
        "geometry, the batching roofline, the claims registry, replaying protocols on a GPU, "
        "and what a run's token timeline gives. Bad input exits 2 with one line naming the "
        "file, line or option.")
    sub = p.add_subparsers(dest="cmd", required=True)

    g = sub.add_parser("geometry", help="parameter, KV and state counts from a config.json")
    g.add_argument("config", help="a Hugging Face config.json")
    g.add_argument("--kv-dtype", default="bf16", help="KV-cache format (default bf16)")
    g.add_argument("--state-dtype", default=None, help="default: the config's mamba_ssm_dtype")
    g.add_argument("--json", action="store_true", help="print JSON instead of the table")
    g.set_defaults(func=cmd_geometry)

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
    r.add_argument("--free-gib", type=float, help="memory free for streams, GiB")
    r.add_argument("--target", type=float, help="claimed aggregate tok/s: print tau needed")
    r.add_argument("--allow-past-wall", action="store_true",
                   help="compute stream counts past the memory wall (marked in the output)")
    r.add_argument("--streams", type=_streams, default=[1, 8, 64],
                   help="stream counts, comma-separated (default 1,8,64)")
    r.add_argument("--json", action="store_true", help="print JSON instead of the table")
    r.set_defaults(func=cmd_roofline)

    c = sub.add_parser("claims", help="list or validate the claims registry")
    c.add_argument("--file", default=None,
                   help="a registry CSV to read instead of data/raw/claims.csv")
    c.add_argument("--check", action="store_true",
                   help="validate: structure, every quote against its seed article, the "
                        "exclusions")
    c.add_argument("--json", action="store_true", help="print JSON instead of the table")
    c.set_defaults(func=cmd_claims)

    add_measure_parser(sub)
    add_timeline_parser(sub)
    add_predict_parser(sub)
    for action in sub._choices_actions:  # each command's --help opens with its one line
        cmd = sub.choices[action.dest]
        cmd.description = cmd.description or action.help
    return p


WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _NamedStdout:
    """stdout whose write errors say they were writing standard output (a full disk or
    a closed pipe otherwise raises an OSError that names no file)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except OSError as e:
            if e.filename is None:
                e.filename = "standard output"
            raise

    def write(self, text: str) -> int:
        return self._call(self._inner.write, text)

    def flush(self) -> None:
        self._call(self._inner.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(argv: list[str] | None = None) -> int:
    """Run one command. Exit 2 with one line for bad input (:class:`InputError` only);
    a closed stdout (``| head``) ends quietly with 0; a full or read-only disk gives one
    line naming the path and exit 1; any other exception shows its traceback."""
    a = parser().parse_args(argv)
    real_stdout = sys.stdout
    sys.stdout = _NamedStdout(real_stdout)  # type: ignore[assignment]
    try:
        rc = a.func(a)
        sys.stdout.flush()
        return rc
    except InputError as e:
        print(f"claimcheck: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except OSError as e:
        if e.errno not in WRITE_ERRNOS:
            raise
        where = e.filename if e.filename is not None else "a file (the system did not say which)"
        print(f"claimcheck: error: cannot write {where}: {e.strerror}", file=sys.stderr)
        _silence_stdout()
        return 1
    finally:
        sys.stdout = real_stdout


if __name__ == "__main__":
    sys.exit(main())
