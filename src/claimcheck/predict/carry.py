"""A protocol predicted on a card with no run, every term carried from the local card's
runs by :mod:`claimcheck.model.carry`'s rules (``claimcheck predict --card C --power-limit W``
for a card with no committed run, or an engine whose weight format has no run anywhere).

The local card is the card with the most committed runs. From its engines:

* the **shape engine** gives the state, KV, FLOPs per token and token budget: a local
  engine of the target's weight format first (its weights then as its run measured them),
  then the one agreeing with the target on the most of KV dtype, state dtype and prefix
  caching, then on the kernel (:data:`KERNEL_PATH`), then on the vLLM release (the
  target's pinned one, else ``version``, where the local card has runs of it, else its
  newest), then by name. An engine of another format has its weights replaced by the
  target's (weights.csv by the engine's checkpoint, else the geometry at the target's
  weight format).
* the **eta and compute engine**: one of the target's weight format when the local card has
  run it (eta ``carried``; on the kernel of :data:`KERNEL_PATH` first), else one of the
  same activation path (:data:`ACTIVATION_PATH`: W4A16 dequantizes to 16 bits and
  multiplies on the 16-bit tensor path, so BF16 stands in, eta and compute ``assumed``),
  on the same vLLM release where one exists.

Every term is a :class:`~claimcheck.model.carry.Term` with its source runs; none comes from
a run on the target card (the CLI takes this path only for a card with no run).
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

import pandas as pd

from claimcheck.calibration.calibrate import choose, run_key
from claimcheck.calibration.calibration import calibration
from claimcheck.calibration.layout import run_layout, run_version
from claimcheck.calibration.picks import run_kernel
from claimcheck.claims.registryfiles import load_weight_rows
from claimcheck.files.errors import InputError
from claimcheck.model import carry as cc
from claimcheck.model import model as m
from claimcheck.physics.cardfiles import get_card
from claimcheck.physics.formats import KERNEL_PATH
from claimcheck.predict.carry_bend import bend_term, path_engines
from claimcheck.predict.carry_int8 import INT8_WORDS, int8_term
from claimcheck.predict.kernelwords import foreign_kernel, not_carried_words
from claimcheck.predict.newcard import fits
from claimcheck.predict.protocolpredict import PROTOCOL_ASSUMPTIONS, _fit, plan_step
from claimcheck.readings import definitions as d
from claimcheck.readings.telemetry import busy_sm_clock
from claimcheck.runs.run import Run
from claimcheck.runs.runload import read_telemetry

ACTIVATION_PATH = {"w4a16": "bf16", "w8a16": "bf16", "bf16": "bf16", "fp16": "bf16",
                   "fp8": "fp8"}
"""The local weight format whose kernel path stands in for a format with no local run:
the precision its GEMMs multiply at (W4A16 and W8A16 dequantize to 16 bits)."""
TARGET_DTYPE = {"w4a16": "fp16", "w8a16": "fp16"}
"""The datasheet rate a format's GEMMs run at on the target card (Marlin: FP16 MMA, FP32
accumulate); a format not named here runs at its engine's compute dtype."""
SHAPE_FIELDS = ("kv_cache_dtype", "mamba_ssm_cache_dtype", "prefix_caching")


def local_card(runs: list[Run], card: str) -> str:
    """The card (not ``card``) with the most committed runs; refused when there is none."""
    count: dict[str, int] = {}
    for r in runs:
        c = str(run_key(r)[0])
        if c != card:
            count[c] = count.get(c, 0) + 1
    if not count:
        raise InputError("--runs", f"no committed run on any card but {card}: nothing to "
                         "carry from")
    return min(count, key=lambda c: (-count[c], c))


def _engines_on(runs: list[Run], card: str) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {}
    for r in runs:
        if run_key(r)[0] == card:
            out.setdefault(str(run_key(r)[1]), []).append(r)
    return out


def _cfg(r: Run) -> dict[str, Any]:
    return dict(r.provenance.engine_config.recorded)


def _newest(versions: set[str | None]) -> str | None:
    vs = sorted((v for v in versions if v), key=lambda v: tuple(int(x) for x in
                                                                  v.split(".") if x.isdigit()))
    return vs[-1] if vs else None


def pick_engines(runs: list[Run], local: str, spec: Any, version: str | None,
                 local_arch: str | None = None) -> tuple[str, str, str | None, str]:
    """(shape engine, eta engine, vLLM release, eta status) on the local card by the
    module's rules. A run of the target's format on a card of ``local_arch`` off its
    kernel's architectures (:func:`foreign_kernel`) gives the shape, not eta and compute."""
    by = _engines_on(runs, local)
    have = {run_version(rs[0]) for rs in by.values()}
    want = next((v for v in (spec.vllm_version, version) if v in have), None) or _newest(have)

    def agree(e: str) -> int:
        return sum(_cfg(by[e][0]).get(k) == getattr(spec, k) for k in SHAPE_FIELDS)
    fmt = spec.weight_format
    kernel = KERNEL_PATH.get(str(fmt))

    def off_path(e: str) -> bool:
        return bool(kernel) and run_kernel(by[e][0]) != kernel

    def other_fmt(e: str) -> bool:
        return run_key(by[e][0])[2] != fmt
    shape_e = min(by, key=lambda e: (other_fmt(e), -agree(e), off_path(e),
                                     run_version(by[e][0]) != want, e))
    own = [] if foreign_kernel(fmt, local_arch, local) else [e for e in by if not other_fmt(e)]
    path = ACTIVATION_PATH.get(str(fmt))
    stand = own or [e for e in by if run_key(by[e][0])[2] == path]
    if not stand:
        raise InputError("--engine", f"no run of weight format {fmt!r} on {local}, nor of "
                         f"its activation path {path!r}: eta cannot be carried")
    eta_e = min(stand, key=lambda e: (off_path(e), run_version(by[e][0]) != want,
                                      -agree(e), e))
    return shape_e, eta_e, want, "carried" if own else "assumed"


def _cal(runs: list[Run], local: str, engine: str, user_cards: str | None = None
         ) -> tuple[m.Calibration, Any, Run]:
    base = min(_engines_on(runs, local)[engine], key=lambda r: r.name)
    _, info = base.engine
    ch = choose(runs, local, engine, run_key(base)[2], layout=run_layout(base),
                version=run_version(base))
    return calibration(ch, info["compute_dtype"], user_cards=user_cards), ch, base


def telemetry_at_cap(runs: list[Run], card: str) -> dict[str, Any]:
    """The local card's telemetry at and below its power cap (throttle bit 0x4, software
    power cap): median SM clock in each, the memory clocks seen, and the runs read."""
    frames = []
    for r in runs:
        p = r.path / "telemetry.csv"
        if run_key(r)[0] == card and p.is_file():
            t = pd.read_csv(p)
            need = {"power_w", "sm_clock_mhz", "mem_clock_mhz", "throttle_reasons"}
            if not need <= set(t.columns):
                raise InputError(str(p), f"telemetry lacks {sorted(need - set(t.columns))}")
            frames.append(t.assign(run=r.name))
    if not frames:
        return {}
    t = pd.concat(frames)
    capped = t["throttle_reasons"].map(lambda x: int(str(x), 16) & 0x4 != 0)
    return {"runs": sorted(t.loc[capped, "run"].unique()),
            "capped_samples": int(capped.sum()), "free_samples": int((~capped).sum()),
            "sm_mhz_capped": float(t.loc[capped, "sm_clock_mhz"].median()) if capped.any()
            else None,
            "sm_mhz_free": float(t.loc[~capped, "sm_clock_mhz"].median()),
            "power_w_capped": float(t.loc[capped, "power_w"].median()) if capped.any()
            else None,
            "mem_mhz": sorted(float(x) for x in t["mem_clock_mhz"].unique())}


def step_sm_clock(run: Run, step: Any) -> tuple[float | None, int]:
    """The median SM clock (MHz) of ``run``'s telemetry samples inside ``step``'s load
    window (``window_unix_s``) that draw at least half the power limit (the GPU at work, not
    waiting for the client), and how many samples (:func:`~claimcheck.readings.telemetry.
    busy_sm_clock` over the file as :func:`~claimcheck.runs.runload.read_telemetry` reads
    it); (None, 0) without such samples."""
    return busy_sm_clock(read_telemetry(run.path / "telemetry.csv"), *step.window_unix_s)


def target_weights(spec: Any, shape_run: Run) -> tuple[float, str]:
    """The target engine's weight bytes: weights.csv's row for its checkpoint (a size,
    not a speed), else the shape run's geometry at the target's weight format."""
    for row in load_weight_rows().values():
        if row.match_field == "checkpoint" and str(spec.model).startswith(row.match_prefix):
            return row.bytes, f"weights.csv {row.id}: {row.size:g} {row.unit} ({row.source})"
    from claimcheck.physics.weights import weight_bytes
    if shape_run.geometry is None:
        raise InputError("--engine", f"no weight size for {spec.model} in weights.csv and no "
                         "geometry to compute one")
    return weight_bytes(shape_run.geometry, fmt=spec.weight_format)


def _one_stream_points(ch: Any, cal: m.Calibration) -> tuple[float, float]:
    tl = ch.bandwidth.step.timeline
    tpot = statistics.median(d.tpots_ms(tl)) / 1e3
    return cal.bandwidth_bytes_s * tpot, tpot


def carried_terms(runs: list[Run], card: str, spec: Any, power_limit_w: float | None,
                  version: str | None = None, user_cards: str | None = None
                  ) -> dict[str, Any]:
    """Every term of ``spec`` (an engine) on ``card`` carried from the local card's runs:
    ``terms`` (name -> Term), the carried calibration and engine shape, and the engines
    and runs they came from. A run with no measured step (recorded as failed or
    interrupted) prices nothing and is not named."""
    runs = [r for r in runs if r.traces]
    local = local_card(runs, card)
    src, new = get_card(local, user_path=user_cards), get_card(card, user_path=user_cards)
    # a kernel off its architectures on the local card is off them on a card of the same
    # architecture too: there the local runs stand for it
    arch = None if src.arch == new.arch else src.arch
    shape_e, eta_e, want, eta_status = pick_engines(runs, local, spec, version, arch)
    s_cal, s_ch, s_run = _cal(runs, local, shape_e, user_cards)
    e_cal, e_ch, e_run = _cal(runs, local, eta_e, user_cards)
    fmt = str(spec.weight_format)
    _, e_info = e_run.engine
    dtype_src = e_info["compute_dtype"]
    dtype_new = TARGET_DTYPE.get(fmt, dtype_src)
    if dtype_new not in new.tensor_tflops:
        raise InputError(new.registry or "cards.csv", f"card {card} has no dense "
                         f"{dtype_new} rate", key=f"{dtype_new}_dense_tflops")
    limit = power_limit_w or new.default_power_w
    ratio = cc.power_clock_ratio(limit, new.default_power_w)
    tel = telemetry_at_cap(runs, local)
    eta = cc.share(e_cal.bandwidth_bytes_s, src.bandwidth_bytes_s, "eta")
    bw_run = e_ch.bandwidth.run.name
    # eta and a per-step time split by a line through the one-stream steps of two formats:
    # kept only when the line is physical (both formats' kernels equally efficient)
    pts = [_one_stream_points(s_ch, s_cal), _one_stream_points(e_ch, e_cal)]
    try:
        fit_eta, fit_t0 = cc.fit_eta_step(pts, src.bandwidth_bytes_s)
        split = f"; a line through {shape_e} and {eta_e}'s one-stream steps gives eta " \
                f"{fit_eta:.3f} and {fit_t0 * 1e3:.2f} ms per step (not used)"
    except cc.CarryError as e:
        split = f"; no per-step time split off ({e.reason})"
    foreign = foreign_kernel(fmt, arch, src.name)
    own = sorted((r for r in runs if run_key(r)[0] == local and run_key(r)[2] == fmt),
                 key=lambda r: r.name)
    own_runs = [r.name for r in own]
    groups: dict[str | None, list[str]] = {}
    for r in own:
        groups.setdefault(run_kernel(r), []).append(r.name)
    not_carried = not_carried_words(groups, fmt, str(src.arch), src.name, new.name)
    why = ("measured for this format" if eta_status == "carried" else
           (f"the {fmt} runs on {local} are not carried, as {not_carried}: "
            f"{', '.join(own_runs)}; " if foreign and own_runs else
            f"no {fmt} run on {local}: ") +
           f"the {run_key(e_run)[2]} path ({eta_e}) stands in, as {fmt} multiplies at 16 "
           "bits")
    # the per-request overhead of a foreign kernel's run holds that kernel's prefill
    o_cal, o_ch, o_e = (e_cal, e_ch, eta_e) if foreign and own_runs else (s_cal, s_ch, shape_e)
    comp = cc.share(e_cal.flops_s, src.tflops(dtype_src) * 1e12, "compute")
    clk, n_clk = (step_sm_clock(e_ch.compute.run, e_ch.compute.step) if e_ch.compute
                  else (None, 0))
    comp_at, clock_words = cc.share_at_rated_clock(comp, clk, src.tensor_clock_mhz)
    clock_words = (f"; measured at a median SM clock of {clk:,.0f} MHz ({n_clk} telemetry "
                   f"samples of the step drawing half the limit or more), {clock_words}"
                   if clk else f"; {clock_words}")
    t = {
        "eta": cc.Term("eta", eta, "share of datasheet bandwidth", eta_status, (bw_run,),
                       f"effective {e_cal.bandwidth_bytes_s / 1e9:,.0f} GB/s over {local}'s "
                       f"datasheet {src.memory_bw_gb_s:g} GB/s; on {card}: eta x "
                       f"{new.memory_bw_gb_s:g} GB/s ({why}){split}"),
        "compute_share": cc.Term(
            "compute_share", comp_at, f"share of dense {dtype_src} at its rated clock",
            eta_status, (e_ch.compute.run.name,) if e_ch.compute else (),
            f"effective {e_cal.flops_s / 1e12:,.0f} TFLOP/s over {local}'s dense {dtype_src} "
            f"{src.tflops(dtype_src):g} is {comp:.3f}{clock_words}; on {card}: share x dense "
            f"{dtype_new} {new.tflops(dtype_new):g} TFLOP/s (its datasheet rate, at its own "
            f"rated clock) x the power clock ratio ({why})"),
        "power_clock_ratio": cc.Term(
            "power_clock_ratio", ratio, "SM clock ratio", "assumed", tuple(tel.get("runs", ())),
            f"({limit:g} W / {card}'s default {new.default_power_w:g} W) ** (1/3), on compute "
            "only: dynamic power ~ f V^2, V ~ f. " + (
                f"{local}'s telemetry: {tel['capped_samples']} samples at its cap (median "
                f"{tel['power_w_capped']:.0f} W) at a median SM clock {tel['sm_mhz_capped']:.0f}"
                f" MHz against {tel['sm_mhz_free']:.0f} MHz below it; memory clock "
                f"{', '.join(f'{x:g}' for x in tel['mem_mhz'])} MHz at every draw, so "
                "bandwidth terms do not move with the limit" if tel.get("sm_mhz_capped")
                else f"no sample of {local} at its cap")),
        "request_overhead_s": cc.Term(
            "request_overhead_s", o_cal.request_overhead_s, "s", "assumed",
            (o_ch.overhead.run.name,), f"host-side seconds as measured on {local} "
            f"({o_e}), unchanged" + (
                f"; not {shape_e}'s, whose kernel is off its architecture (its one-stream "
                "prompts' time holds that kernel's prefill)" if o_e != shape_e else "")),
        "admission_interval_s": cc.Term(
            "admission_interval_s", s_cal.admission_interval_s, "s", "assumed",
            tuple(sorted({p.run.name for p in s_ch.admission})),
            f"host-side seconds between a wave's sends as on {local}, unchanged"),
    }
    kv_bw = None
    if s_cal.kv_bandwidth_bytes_s:
        kv = cc.share(s_cal.kv_bandwidth_bytes_s, src.bandwidth_bytes_s, "kv")
        kv_bw = cc.carried_rate(kv, new.bandwidth_bytes_s)
        t["kv_read_share"] = cc.Term("kv_read_share", kv, "share of datasheet bandwidth",
                                     "carried", tuple(sorted({p.run.name for p in s_ch.kv})),
                                     f"KV-read rate over {local}'s datasheet; x "
                                     f"{new.memory_bw_gb_s:g} GB/s on {card}")
    shape, s_info = s_run.engine
    if run_key(s_run)[2] == fmt:  # a run of the format: its weights as measured
        w, w_src = shape.weight_bytes, f"{s_run.name}: {s_info.get('weights')}"
    else:
        w, w_src = target_weights(spec, s_run)
    # the KV pool is the local card's memory less its weights: not carried (no limit)
    shape = replace(shape, weight_bytes=w, max_num_seqs=int(spec.max_num_seqs or
                                                            shape.max_num_seqs),
                    kv_pool_pages=None)
    bw = cc.carried_rate(eta, new.bandwidth_bytes_s)
    flops = cc.carried_rate(comp_at, new.tflops(dtype_new) * 1e12, ratio)
    i8 = int8_prefill(runs, local, spec, s_run, src, new, comp_at * src.tflops(dtype_src) * 1e12,
                      flops, ratio, eta_e, user_cards)
    if i8 is not None:
        t["int8_mlp_share"] = i8["term"]
    # the bend of the path whose eta and compute are carried: the format's own kernel, or
    # the path that stands in for it (a foreign kernel's rows are not the format's)
    e_fmt = str(run_key(e_run)[2])
    b_kernel = KERNEL_PATH.get(e_fmt) if eta_status == "carried" else None
    b_words = (f"the {b_kernel.capitalize()} kernel" if b_kernel else
               f"the {e_fmt} path" + ("" if eta_status == "carried" else
                                      f" (standing in for {fmt}, as for eta and compute)"))
    cals = {shape_e: (s_cal, s_ch, s_run), eta_e: (e_cal, e_ch, e_run)}

    def cal_of(e: str) -> tuple[m.Calibration, Any, Run]:
        if e not in cals:
            cals[e] = _cal(runs, local, e, user_cards)
        return cals[e]

    bend = bend_term(path_engines(runs, local, e_fmt, b_kernel), b_words, local, cal_of)
    if bend is not None:
        t["bend_exponent"] = bend
    cal = m.Calibration(
        bandwidth_bytes_s=bw, flops_s=i8["prefill_flops_s"] if i8 else flops,
        request_overhead_s=o_cal.request_overhead_s,
        admission_interval_s=s_cal.admission_interval_s, kv_bandwidth_bytes_s=kv_bw,
        bandwidth_source=f"{new.name} datasheet {new.memory_bw_gb_s:g} GB/s x eta "
        f"{eta:.3f} ({eta_status}, {bw_run})",
        compute_source=(f"{INT8_WORDS}{i8['prefill_flops_s'] / 1e12:,.1f} TFLOP/s with the "
                        f"rest of the body at " if i8 else "")
        + f"{new.name} dense {dtype_new} {new.tflops(dtype_new):g} TFLOP/s x "
        f"share {comp_at:.3f} ({eta_status}) x clock ratio {ratio:.4f} at {limit:g} W",
        overhead_source=f"assumed: as measured on {local} ({o_cal.overhead_source})",
        admission_source=s_cal.admission_source, kv_source="" if kv_bw is None else
        t["kv_read_share"].rule, bend_exponent=bend.value if bend else None,
        bend_source=bend.rule if bend else "")
    ctx = 640.0
    meet = cc.bend_streams(w, 0.0, shape.state_bytes, shape.kv_bytes_per_token * ctx, bw,
                           shape.flops_body_per_token, cal.flops_s)
    if meet is not None:
        t["bend_streams"] = cc.Term("bend_streams", meet, "streams", eta_status,
                                    t["eta"].source_runs + t["compute_share"].source_runs,
                                    "streams where a decode step's compute reaches its memory "
                                    f"time at {ctx:.0f} tokens of context, from the eta and "
                                    f"compute above ({eta_status} as they are)")
    return {"local_card": local, "shape_engine": shape_e, "eta_engine": eta_e,
            "vllm": want, "terms": t, "calibration": cal, "shape": shape,
            "weights_source": w_src, "shape_run": s_run.name, "choice": e_ch,
            "power_limit_w": limit, "compute_dtype": dtype_new, "card": new,
            "eta_not_carried": (not_carried, own_runs) if foreign and own_runs else None,
            "int8_prefill": i8}


def int8_prefill(runs: list[Run], local: str, spec: Any, shape_run: Run, src: Any, new: Any,
                 rest_local_flops_s: float, rest_new_flops_s: float, ratio: float,
                 rest_engine: str, user_cards: str | None = None) -> dict[str, Any] | None:
    """The prompt rate of ``spec`` with int8 activations on its MLP GEMMs from the first
    local run whose start log names an int8 scheme (:func:`~.carry_int8.int8_term`); None
    without int8 layers, such a run, the geometry or a card's int8 rate."""
    if getattr(spec, "int8_activations", None) != "mlp" or shape_run.geometry is None:
        return None
    if "int8" not in src.tensor_tflops or "int8" not in new.tensor_tflops:
        return None
    own = sorted((r for r in runs if run_key(r)[0] == local and r.int8_activations),
                 key=lambda r: r.name)
    if not own:
        return None
    i8_engine = run_key(own[0])[1]
    i_cal, i_ch, _ = _cal(runs, local, i8_engine, user_cards)
    if i_ch.compute is None:
        return None
    return int8_term(spec.name, i8_engine, str(own[0].int8_activations),
                     i_ch.compute.run.name, i_cal.flops_s,
                     step_sm_clock(i_ch.compute.run, i_ch.compute.step), shape_run.geometry,
                     src, new, rest_local_flops_s, rest_new_flops_s, ratio, rest_engine)


def predict_carried(runs: list[Run], card: str, engine: str, proto: Any,
                    engines: dict[str, Any], power_limit_w: float | None = None,
                    version: str | None = None, user_cards: str | None = None
                    ) -> dict[str, Any]:
    """Every step of ``proto`` for ``engine`` on ``card`` from the carried terms: the
    report ``claimcheck predict --json`` prints (``carried``: every term as a record);
    ``user_cards``: a cards file merged over the registry."""
    if engine not in engines:
        raise InputError("--engine", f"{engine!r} is not in config/engines.yaml")
    spec = engines[engine]
    c = carried_terms(runs, card, spec, power_limit_w, version, user_cards)
    shape, cal, new = c["shape"], c["calibration"], get_card(card, user_path=user_cards)
    eng = {"max_model_len": spec.max_model_len, "max_num_seqs": shape.max_num_seqs}
    steps = []
    for i, st in enumerate(proto.steps):
        ok, note = _fit(st, proto, eng)
        row: dict[str, Any] = {"index": i, "streams": st.streams, "requests": st.requests,
                               "input_len": st.input_len, "output_len": st.output_len,
                               "repeats": proto.repeats, "fits": ok, "note": note}
        keys = ("predicted_e2e_tok_s", "predicted_decode_tok_s", "predicted_median_tpot_ms",
                "predicted_median_ttft_s", "predicted_load_s")
        row.update(plan_step(shape, cal, st.streams, st.requests, st.input_len,
                             st.output_len) if ok else dict.fromkeys(keys))
        if ok:
            wall = fits(shape, new, st.input_len + st.output_len)
            if wall is not None and st.streams > wall:
                row["note"] = (row["note"] + "; " if row["note"] else "") + (
                    f"past the memory wall on {card} ({wall} streams fit)")
        row.update(measured_in=[], calibration_step=False, measured_e2e_tok_s=None,
                   measured_decode_tok_s=None, e2e_error=None, decode_error=None)
        steps.append(row)
    fits(shape, new, 0)
    info = {"weights": c["weights_source"], "state_bytes_per_stream": shape.state_bytes,
            "kv_bytes_per_token": shape.kv_bytes_per_token,
            "max_num_batched_tokens": shape.max_num_batched_tokens,
            "max_num_seqs": shape.max_num_seqs, "compute_dtype": c["compute_dtype"],
            "kv_pool_tokens": None, "kv_pool_pages": None,
            "kv_pool_source": f"{c['local_card']}'s is not carried, its memory less its "
                              "weights; the steps past the memory wall are noted"}
    load = sum((r["predicted_load_s"] or 0) * r["repeats"] for r in steps)
    return {"card": card, "engine": engine, "protocol": proto.name, "kind": proto.kind,
            "weights": spec.weights, "engine_shape": info,
            "engine_run": f"{c['shape_run']} (engine {c['shape_engine']} on "
            f"{c['local_card']}, its weights replaced: {c['weights_source']}; no run on "
            f"{card})", "calibration": cal.as_dict(), "choice": c["choice"].as_dict(),
            "assumptions": PROTOCOL_ASSUMPTIONS, "steps": steps, "predicted_load_s": load,
            "carried": {"from_card": c["local_card"], "shape_engine": c["shape_engine"],
                        "eta_engine": c["eta_engine"], "vllm": c["vllm"],
                        "power_limit_w": c["power_limit_w"],
                        "terms": {k: v.as_dict() for k, v in c["terms"].items()}}}


def lines(out: dict[str, Any]) -> list[str]:
    """What ``claimcheck predict`` prints under the table for a carried prediction."""
    c = out["carried"]
    rows = [f"  every term carried from {c['from_card']} (shape: {c['shape_engine']}; eta "
            f"and compute: {c['eta_engine']}; vLLM {c['vllm']}) at {c['power_limit_w']:g} W:"]
    for t in c["terms"].values():
        rows.append(f"    {t['name']} {t['value']:.4g} {t['unit']} ({t['status']}; "
                    f"{t['rule']}; runs: {', '.join(t['source_runs']) or 'none'})")
    return rows
