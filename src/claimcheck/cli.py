"""Command-line interface: ``claimcheck geometry|roofline|claims|measure ...``."""

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
from claimcheck.core.cards import TENSOR_COLUMN, get_card
from claimcheck.core.claims import load_claims
from claimcheck.core.errors import InputError
from claimcheck.core.formats import KV_FORMATS, STATE_DTYPE_BYTES, WEIGHT_FORMATS
from claimcheck.core.geometry import geometry_from_file
from claimcheck.core.paths import RUNS
from claimcheck.core.units import GIB, MIB
from claimcheck.measure import server as srv
from claimcheck.measure import telemetry
from claimcheck.measure.engines import get_engine
from claimcheck.measure.protocols import get_protocol
from claimcheck.measure.runner import run_protocol, start_engine, tokenizer_for


def _print(obj: Any, as_json: bool, table: str) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False) if as_json else table)


def check_dtypes(a: argparse.Namespace, g: Any) -> None:
    """--kv-dtype/--state-dtype known, and the KV format's scale groups fit the head_dim."""
    _choice(a, "kv_dtype", KV_FORMATS)
    _choice(a, "state_dtype", STATE_DTYPE_BYTES)
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


def build_roofline(a: argparse.Namespace) -> tuple[rl.Roofline, dict[str, Any]]:
    """Turn roofline arguments into model inputs plus a description of each input."""
    from claimcheck.core.weights import weight_bytes

    g = geometry_from_file(a.config)
    card = get_card(a.card)
    w, w_label = weight_bytes(g, gb=a.weights_gb, gib=a.weights_gib, fmt=a.weights_format)
    tflops = a.tflops if a.tflops is not None else card.tflops(a.compute_dtype)
    state_dtype = a.state_dtype or "fp32"
    m = rl.for_model(g, weight_bytes=w, bandwidth_bytes_s=card.bandwidth_bytes_s,
                     tflops=tflops, eta=a.eta, state_dtype=state_dtype, kv_dtype=a.kv_dtype,
                     context_tokens=a.context, rows=a.rows, tau=a.tau)
    inputs = {"card": card.card, "bandwidth_gb_s": card.memory_bw_gb_s, "eta": a.eta,
              "weights": w_label, "weight_bytes": w, "tflops": tflops,
              "tflops_source": "--tflops" if a.tflops is not None
              else f"datasheet dense {a.compute_dtype}",
              "state_dtype": state_dtype, "state_bytes_per_stream": m.state_bytes,
              "kv_dtype": a.kv_dtype, "kv_bytes_per_token": m.kv_bytes_per_token,
              "context_tokens_per_stream": a.context, "rows_verified_per_step": a.rows,
              "tokens_kept_per_step": a.tau, "flops_per_row": g.flops_per_token}
    return m, inputs


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


def check_fits_card(a: argparse.Namespace, m: rl.Roofline) -> None:
    """Weights plus one stream (state + KV at --context), and weights plus --free-gib,
    must fit in the card's memory (cards.csv memory_gib, GiB)."""
    card = get_card(a.card)
    mem = card.memory_gib * GIB
    one = m.state_bytes + m.kv_bytes_per_token * m.context_tokens
    opt = next(o for o, v in (("--weights-gb", a.weights_gb), ("--weights-gib", a.weights_gib),
                              ("--weights-format", a.weights_format)) if v is not None)
    if m.weight_bytes + one > mem:
        raise InputError(opt, f"{m.weight_bytes / GIB:.2f} GiB of weights plus one stream's "
                         f"state and KV ({one / GIB:.2f} GiB) do not fit in {card.card}'s "
                         f"{card.memory_gib:g} GiB (cards.csv memory_gib)")
    if a.free_gib is not None and one <= 0:
        raise InputError("--free-gib", "a stream of this model needs no memory at --context "
                         f"{a.context:g} (no recurrent state, no KV): give --context")
    if a.free_gib is not None and a.free_gib * GIB + m.weight_bytes > mem:
        raise InputError("--free-gib", f"{a.free_gib:g} GiB free plus "
                         f"{m.weight_bytes / GIB:.2f} GiB of weights exceeds {card.card}'s "
                         f"{card.memory_gib:g} GiB (cards.csv memory_gib)")


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
    check_fits_card(a, m)
    pts = rl.curve(m, a.streams)
    out: dict[str, Any] = {
        "inputs": inputs,
        "points": [p.as_dict() for p in pts],
        "ceiling_b1_tok_s": rl.ceiling_b1_tok_s(m),
        "bend_streams": rl.bend_streams(m),
        "compute_plateau_tok_s": rl.compute_plateau_tok_s(m),
    }
    if a.free_gib is not None:
        out["memory_wall_streams"] = rl.memory_wall_streams(
            a.free_gib * GIB, m.state_bytes, m.kv_bytes_per_token, m.context_tokens)
    lines = [f"{inputs['card']}: W = {inputs['weights']}, BW = {inputs['bandwidth_gb_s']:g} GB/s"
             f" x eta {a.eta:g}, P = {inputs['tflops']:g} TFLOP/s ({inputs['tflops_source']})",
             f"per stream: state {m.state_bytes / MIB:g} MiB ({inputs['state_dtype']}), KV "
             f"{m.kv_bytes_per_token / 1024:g} KiB/token ({a.kv_dtype}) x {a.context:g} tokens "
             f"of context; {a.rows:g} row(s) verified, {a.tau:g} token(s) kept per step",
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
        lines.append(f"{p.streams:>8} {p.step_ms:>9.2f} {p.memory_ms:>9.2f} "
                     f"{p.compute_ms:>9.2f} {p.bound:>8} {p.aggregate_tok_s:>16.1f} "
                     f"{p.per_stream_tok_s:>17.1f}{moe}")
    if m.moe:
        out["moe"] = {"experts_per_token": m.experts_per_token, "num_experts": m.num_experts,
                      "routing": "uniform, independent: fraction touched 1 - (1 - k/E)^B",
                      "routed_expert_bytes": m.routed_expert_bytes,
                      "weight_bytes_read": {str(p.streams): rl.weight_read_bytes(m, p.streams)
                                            for p in pts}}
    lines.append(f"B=1 bandwidth ceiling (weights only): {out['ceiling_b1_tok_s']:.1f} tok/s; "
                 f"bend at {out['bend_streams']:.1f} streams; compute plateau "
                 f"{out['compute_plateau_tok_s']:.0f} tok/s aggregate")
    if "memory_wall_streams" in out:
        lines.append(f"memory wall: {out['memory_wall_streams']} streams in {a.free_gib:g} GiB")
    if a.target is not None:
        b = a.streams[-1]
        out["tau_needed"] = {"streams": b, "aggregate_tok_s": a.target,
                             "tau": rl.tau_needed(m, b, a.target)}
        lines.append(f"{a.target:g} tok/s at {b} streams needs tau = "
                     f"{out['tau_needed']['tau']:.2f} tokens kept per stream per step")
    _print(out, a.json, "\n".join(lines))
    return 0


def cmd_claims(a: argparse.Namespace) -> int:
    from claimcheck.core.cards import load_cards

    claims = load_claims(a.file, cards=set(load_cards()))
    if a.check:
        print(f"{a.file or 'data/raw/claims.csv'}: {len(claims)} claims OK")
        return 0
    rows = [c.tidy() for c in claims]
    lines = [f"{'id':<34} {'card':<8} {'streams':>7} {'relation':<20} {'context':>8} "
             f"{'speculation (rows/step)':<24} {'metric':<32} {'value tok/s':>11} "
             f"{'per stream tok/s':>16}"]
    for r in rows:
        spec = r["spec_method"] or "?"
        if spec not in ("none", "?"):
            spec += f" ({r['spec_draft_tokens'] + 1})" if r["spec_draft_tokens"] else " (?)"
        lines.append(f"{r['id']:<34} {r['card']:<8} {r['streams']:>7} "
                     f"{r['stream_relation']:<20} {r['context_tokens'] or '?':>8} "
                     f"{spec:<24} {r['metric_label']:<32} {r['value']:>11g} "
                     f"{r['per_stream_tok_s']:>16.1f}")
    lines.append("per stream = value / streams for sums, the value itself for per-stream "
                 "metrics; rows/step = draft tokens + 1 verified per stream per step")
    _print(rows, a.json, "\n".join(lines))
    return 0


# ------------------------------------------------------------------ measuring side


def add_measure_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="start vllm serve for an engine config (detached)")
    s.add_argument("--engine", required=True)
    s.add_argument("--engines-file", default=None)
    s.add_argument("--state", default=".claimcheck/server", help="server state directory")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--health-timeout", type=float, default=900, help="seconds")
    s.add_argument("--no-wait", action="store_true", help="return once started")
    s.set_defaults(func=cmd_serve)

    s = sub.add_parser("wait", help="wait for a detached server to answer /health")
    s.add_argument("--state", default=".claimcheck/server")
    s.add_argument("--health-timeout", type=float, default=900, help="seconds")
    s.set_defaults(func=cmd_wait)

    s = sub.add_parser("stop", help="stop a detached server")
    s.add_argument("--state", default=".claimcheck/server")
    s.set_defaults(func=cmd_stop)

    m = sub.add_parser("measure", help="replay protocols on this machine's GPU")
    m.add_argument("--card", required=True,
                   help="card registry name (rtx3090, h200, ...), or cpu for a CPU engine")
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
    m.add_argument("--port", type=int, default=8000)
    m.add_argument("--state", default=".claimcheck/server")
    m.add_argument("--runs-dir", default=str(RUNS))
    m.add_argument("--health-timeout", type=float, default=900, help="seconds")
    m.add_argument("--step-timeout", type=float, default=None, help="seconds per bench call")
    m.add_argument("--gpus", default=None, help="NVML indices to sample, e.g. 0,1")
    m.add_argument("--protocols-file", default=None)
    m.add_argument("--engines-file", default=None)
    m.add_argument("--keep-server", action="store_true", help="leave a started server up")
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
    srv.stop(s, source=str(Path(a.state) / "server.json"))
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


def cmd_measure(a: argparse.Namespace) -> int:
    # Refuse bad input before anything starts. "cpu" names a run with no GPU (CPU engine).
    if a.card != "cpu":
        get_card(a.card)
    engine = get_engine(a.engine, a.engines_file)
    protos = [get_protocol(p, a.protocols_file, a.profile) for p in a.protocol]
    if a.repeats is not None:
        if a.repeats < 1:
            raise InputError("--repeats", f"must be >= 1, got {a.repeats}")
        protos = [dataclasses.replace(p, repeats=a.repeats) for p in protos]
    gpus = parse_gpus(a.gpus)
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
                                           step_timeout_s=a.step_timeout)
            print(f"claimcheck: {proto.name}: {status}: {run_dir}", file=sys.stderr)
            if status != "complete":
                exit_code = 4
                if own and server.alive() and not server.healthy():
                    srv.stop(server)
    finally:
        if own and server is not None and not a.keep_server:
            srv.stop(server)
    return exit_code


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="claimcheck", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    g = sub.add_parser("geometry", help="parameter, KV and state counts from a config.json")
    g.add_argument("config")
    g.add_argument("--kv-dtype", default="bf16")
    g.add_argument("--state-dtype", default=None, help="default: the config's mamba_ssm_dtype")
    g.add_argument("--json", action="store_true")
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
    r.add_argument("--config", required=True)
    r.add_argument("--card", required=True)
    w = r.add_mutually_exclusive_group(required=True)
    w.add_argument("--weights-gb", type=float,
                   help="measured weight bytes in GB (1e9); a MoE's: all experts")
    w.add_argument("--weights-gib", type=float,
                   help="measured weight bytes in GiB (2^30); a MoE's: all experts")
    w.add_argument("--weights-format", help="bf16, fp8, int8, w4a16, nvfp4")
    r.add_argument("--eta", type=float, default=1.0, help="fraction of bandwidth achieved")
    r.add_argument("--tflops", type=float, help="compute ceiling override, TFLOP/s")
    r.add_argument("--compute-dtype", default="bf16", help="datasheet column if no --tflops")
    r.add_argument("--state-dtype", default=None, help="fp32 (default), fp16, bf16")
    r.add_argument("--kv-dtype", default="bf16")
    r.add_argument("--context", type=float, default=0.0, help="tokens of context per stream")
    r.add_argument("--tau", type=float, default=1.0, help="tokens kept per stream per step")
    r.add_argument("--rows", type=float, default=1.0, help="positions verified per stream")
    r.add_argument("--free-gib", type=float, help="memory free for streams, GiB")
    r.add_argument("--target", type=float, help="claimed aggregate tok/s: print tau needed")
    r.add_argument("--streams", type=_streams, default=[1, 8, 64])
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_roofline)

    c = sub.add_parser("claims", help="list or validate the claims registry")
    c.add_argument("--file", default=None)
    c.add_argument("--check", action="store_true")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_claims)

    add_measure_parser(sub)
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
