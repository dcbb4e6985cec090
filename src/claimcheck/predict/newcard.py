"""A protocol predicted on a card with no committed run (``claimcheck predict --card NEW``).

Bandwidth and compute come from the new card's datasheet (its cards file); what only a
measurement gives is borrowed, each value marked ``assumed``, from the nearest engine that
has runs: the same engine on another card, else the same weight format there (the card
with the most runs of it). Borrowed: eta (the source calibration's effective bandwidth over
its card's datasheet bandwidth), the compute efficiency (effective over datasheet at the
engine's compute dtype), the per-request overhead, the admission interval and the
decode-row factors, as measured there. The engine shape (W, S, kappa, token budget, slots)
is the source engine's run. Then the calibration steps that would replace the assumptions:
the protocols of the source's calibration steps, as one ``claimcheck measure`` command, and
their predicted GPU minutes on the new card (send to last token; engine start not counted).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from claimcheck.calibration.calibrate import run_key
from claimcheck.calibration.layout import layout_words, parallel_layout, run_layout
from claimcheck.files.errors import InputError
from claimcheck.model.model import Calibration, EngineShape
from claimcheck.physics import roofline as rl
from claimcheck.physics.cardfiles import get_card
from claimcheck.physics.cards import Card
from claimcheck.physics.inputs import ENGINE_MEMORY_SHARE, fit_reason, memory_wall
from claimcheck.predict.protocolpredict import ProtocolPrediction, plan_step, predict_protocol
from claimcheck.runs.run import Run


def source_card(runs: list[Run], card: str, engine: str, weight_format: Any,
                layout: tuple[tuple[str, int], ...] = ()) -> tuple[str, str]:
    """(card, engine) to borrow from: ``engine`` on the card with the most of its runs,
    else an engine of ``weight_format`` likewise (ties: the card name), only among runs of
    the engine's parallel ``layout`` (:func:`claimcheck.calibration.layout.parallel_layout`: a
    step over two GPUs is not priced from one GPU's, as for a twin on a measured card).
    Refused when no run of either exists."""
    def best(pick: Any) -> tuple[str, str] | None:
        count: dict[tuple[str, str], int] = {}
        for r in runs:
            c, e, f = run_key(r)
            if c != card and run_layout(r) == layout and pick(e, f):
                count[(str(c), str(e))] = count.get((str(c), str(e)), 0) + 1
        return min(count, key=lambda k: (-count[k], k)) if count else None
    hit = best(lambda e, f: e == engine) or best(lambda e, f: f == weight_format)
    if hit is None:
        raise InputError("--engine", f"no committed run of engine {engine!r} nor of weight "
                         f"format {weight_format!r} on any card: nothing to borrow for {card}"
                         + (f" (only runs of its parallel layout, {layout_words(layout)}, "
                            "are borrowed: a step over several GPUs is not priced from one "
                            "GPU's)" if layout else ""))
    return hit


def borrowed_calibration(cal: Calibration, src: Card, new: Card, dtype: str
                         ) -> tuple[Calibration, dict[str, Any]]:
    """The source calibration moved to the new card: its datasheet bandwidth x the
    source's eta, its datasheet compute x the source's compute efficiency; overhead,
    admission and row factors as measured on the source. Returns it and the assumed
    values, each with where it came from."""
    eta = cal.bandwidth_bytes_s / src.bandwidth_bytes_s
    eff = cal.flops_s / (src.tflops(dtype) * 1e12)
    new_dtype = next((d for d in (dtype, "fp16", "bf16") if d in new.tensor_tflops), None)
    if new_dtype is None:
        raise InputError(new.registry or "cards.csv", f"card {new.card} has no dense "
                         f"{dtype}, fp16 or bf16 rate", key=f"{dtype}_dense_tflops")
    assumed = {
        "eta": {"value": eta, "assumed": True, "from": f"{src.card}: effective "
                f"{cal.bandwidth_bytes_s / 1e9:,.0f} GB/s over the datasheet "
                f"{src.memory_bw_gb_s:g} GB/s ({cal.bandwidth_source})"},
        "compute_efficiency": {"value": eff, "assumed": True, "from": f"{src.card}: "
                               f"effective {cal.flops_s / 1e12:,.1f} TFLOP/s over the "
                               f"datasheet dense {dtype} {src.tflops(dtype):g} "
                               f"({cal.compute_source})"},
        "request_overhead_s": {"value": cal.request_overhead_s, "assumed": True,
                               "from": f"{src.card}: {cal.overhead_source}"},
        "admission_interval_s": {"value": cal.admission_interval_s, "assumed": True,
                                 "from": f"{src.card}: {cal.admission_source or 'none'}"},
        "row_factors": {"value": [list(x) for x in cal.row_factors], "assumed": True,
                        "from": f"{src.card}: {cal.row_factor_source or 'none measured'}"},
    }
    kv_eta = (cal.kv_bandwidth_bytes_s / src.bandwidth_bytes_s
              if cal.kv_bandwidth_bytes_s else None)
    if kv_eta is not None:  # a rate, like eta: its share of the datasheet moves, not GB/s
        assumed["kv_read_eta"] = {
            "value": kv_eta, "assumed": True, "from": f"{src.card}: KV read at "
            f"{cal.kv_bandwidth_bytes_s / 1e9:,.0f} GB/s over the datasheet "
            f"{src.memory_bw_gb_s:g} GB/s ({cal.kv_source})"}
    if new_dtype != dtype:
        assumed["compute_dtype"] = {
            "value": new_dtype, "assumed": True,
            "from": f"{new.card} has no dense {dtype} rate in its cards file: its "
            f"{new_dtype} rate stands in (a lower bound where {dtype} runs faster)"}
    new_cal = dataclasses.replace(
        cal, bandwidth_bytes_s=eta * new.bandwidth_bytes_s,
        flops_s=eff * new.tflops(new_dtype) * 1e12,
        bandwidth_source=f"{new.name} datasheet {new.memory_bw_gb_s:g} GB/s "
        f"({new.sources.get('source_bandwidth', '')}) x eta {eta:.3f} assumed from {src.card}",
        compute_source=f"{new.name} datasheet dense {new_dtype} {new.tflops(new_dtype):g} "
        "TFLOP/s "
        f"({new.sources.get('source_tensor', '')}) x {eff:.3f} assumed from {src.card}",
        overhead_source=f"assumed: as measured on {src.card} ({cal.overhead_source})",
        # a GEMM's row buckets are its dispatch on one architecture: kept on a card of it
        row_buckets=cal.row_buckets if new.arch is not None and new.arch == src.arch else (),
        kv_bandwidth_bytes_s=None if kv_eta is None else kv_eta * new.bandwidth_bytes_s,
        kv_source="" if kv_eta is None else (
            f"{new.name} datasheet {new.memory_bw_gb_s:g} GB/s x KV-read share {kv_eta:.3f} "
            f"assumed from {src.card}"))
    return new_cal, assumed


def fits(shape: EngineShape, new: Card, context: float, gpus: int = 1) -> int | None:
    """The memory wall of the engine's shape on the new card at ``context`` tokens per
    stream (the one check: :func:`claimcheck.physics.inputs.memory_wall`), the weights and each
    stream's state and KV split over the ``gpus`` that hold one copy of the model (tensor x
    pipeline parallel); None: no wall. Weights that cannot fit are refused naming --card."""
    split = {} if gpus == 1 else {  # the memory check reads no link: any positive values
        "cards": gpus, "allreduce_bytes_per_row": 1.0, "link_bytes_s": 1.0}
    try:
        m = rl.Roofline(weight_bytes=shape.weight_bytes, bandwidth_bytes_s=new.bandwidth_bytes_s,
                        flops_per_row=1.0, peak_flops_s=1.0, state_bytes=shape.state_bytes,
                        kv_bytes_per_token=shape.kv_bytes_per_token, context_tokens=context,
                        memory_bytes=new.memory_gib * 2**30, **split)
        wall = memory_wall(m, new, memory_share=ENGINE_MEMORY_SHARE)
    except rl.RooflineInputError as e:
        raise InputError("--card", f"the engine's weights do not fit {new.card}"
                         + (f" over {gpus} GPUs" if gpus > 1 else "")
                         + f": {fit_reason(e, new)}") from None
    return wall.streams if wall else None


def model_gpus(layout: tuple[tuple[str, int], ...]) -> int:
    """The GPUs one copy of the model is split over: tensor x pipeline parallel (a data
    parallel replica holds a whole copy)."""
    sizes = dict(layout)
    return int(sizes.get("tensor_parallel_size", 1)) * int(sizes.get("pipeline_parallel_size", 1))


def predict_new_card(runs: list[Run], card: str, engine: str, proto: Any,
                     protos: dict[str, Any], engines: dict[str, Any] | None = None,
                     cards_file: str | None = None) -> ProtocolPrediction:
    """Every step of ``proto`` predicted for ``engine`` on ``card`` (no run there) by the
    module's rule: :func:`claimcheck.predict.protocolpredict.predict_protocol`'s result,
    its calibration the new card's, its report with ``borrowed`` (every assumed value and
    its source), ``calibrate`` (the measure command and its GPU minutes) and each step's
    ``past_memory_wall``."""
    new = get_card(card, user_path=cards_file)
    spec = engines[engine] if engines and engine in engines else None
    fmt = spec.weight_format if spec is not None else None
    layout = parallel_layout(spec.__dict__) if spec is not None else ()
    gpus = model_gpus(layout)
    src_card, src_engine = source_card(runs, card, engine, fmt, layout)
    pred = predict_protocol(runs, src_card, src_engine, proto, engines, cards_file)
    shape, cal, choice, base = pred.shape, pred.calibration, pred.choice, pred.report
    dtype = base["engine_shape"]["compute_dtype"]
    src = get_card(src_card, user_path=cards_file)
    new_cal, assumed = borrowed_calibration(cal, src, new, dtype)
    steps = []
    for row in base["steps"]:
        out = {k: v for k, v in row.items() if not k.startswith("measured")
               and k not in ("e2e_error", "decode_error", "calibration_step")}
        out.update(measured_in=[], calibration_step=False, measured_e2e_tok_s=None,
                   measured_decode_tok_s=None, e2e_error=None, decode_error=None)
        if row["fits"]:
            out.update(plan_step(shape, new_cal, row["streams"], row["requests"],
                                 row["input_len"], row["output_len"]))
            wall = fits(shape, new, row["input_len"] + row["output_len"], gpus)
            if wall is not None and row["streams"] > wall:
                out["note"] = (out["note"] + "; " if out["note"] else "") + (
                    f"past the memory wall on {card} ({wall} streams fit)")
        steps.append(out)
    fits(shape, new, 0, gpus)  # the weights and one stream at least
    calib_protos = sorted({p.run.provenance.protocol or "" for p in
                           (choice.bandwidth, choice.overhead, choice.compute,
                            *choice.rows, *choice.admission, *choice.kv) if p is not None} - {""})
    gpu_s = 0.0
    for name in calib_protos:
        for st in protos[name].steps if name in protos else []:
            gpu_s += protos[name].repeats * (plan_step(
                shape, new_cal, st.streams, st.requests, st.input_len,
                st.output_len)["predicted_load_s"] or 0)
    cmd = (f"claimcheck measure{f' --cards-file {cards_file}' if cards_file else ''} "
           f"--card {card} --engine {engine} "
           + " ".join(f"--protocol {n}" for n in calib_protos))
    load = sum((r["predicted_load_s"] or 0) * r["repeats"] for r in steps)
    report = {**base, "card": card, "engine": engine, "steps": steps,
              "predicted_load_s": load, "calibration": new_cal.as_dict(),
              "engine_run": f"{base['engine_run']} (engine {src_engine} on {src_card}; no "
              f"run on {card})",
              "borrowed": {"from_card": src_card, "from_engine": src_engine,
                           "values": assumed},
              "calibrate": {"command": cmd, "protocols": calib_protos,
                            "gpu_minutes": gpu_s / 60,
                            "counted": "predicted send to last token of every step and "
                            "repeat on the new card; engine start not counted"}}
    return dataclasses.replace(pred, report=report, calibration=new_cal)


def has_runs(runs: list[Run], card: str) -> bool:
    """Whether any committed run was measured on ``card``."""
    return any(run_key(r)[0] == card for r in runs)


def lines(out: dict[str, Any]) -> list[str]:
    """What ``claimcheck predict`` prints for a card with no run: every borrowed value,
    marked assumed, and the calibration command with its GPU minutes."""
    b, c = out["borrowed"], out["calibrate"]
    v = b["values"]
    rows = [f"  no run on {out['card']}: bandwidth and compute from its datasheet; assumed "
            f"(borrowed from engine {b['from_engine']} on {b['from_card']}, to be replaced "
            f"by a calibration on {out['card']}):",
            f"    eta {v['eta']['value']:.3f} (assumed; {v['eta']['from']})",
            f"    compute efficiency {v['compute_efficiency']['value']:.3f} (assumed; "
            f"{v['compute_efficiency']['from']})",
            f"    per-request overhead {v['request_overhead_s']['value'] * 1e3:.1f} ms "
            f"(assumed; {v['request_overhead_s']['from']})",
            f"    admission interval {v['admission_interval_s']['value'] * 1e3:.3f} ms "
            f"(assumed; {v['admission_interval_s']['from']})",
            "    decode-row factors "
            + (", ".join(f"{n} rows x{f:.3f}" for n, f in v["row_factors"]["value"]) or "none")
            + " (assumed; "
            f"{v['row_factors']['from']})"]
    if "kv_read_eta" in v:
        rows.append(f"    KV-read share of the datasheet bandwidth {v['kv_read_eta']['value']:.3f} "
                    f"(assumed; {v['kv_read_eta']['from']})")
    if "compute_dtype" in v:
        rows.append(f"    compute dtype {v['compute_dtype']['value']} (assumed; "
                    f"{v['compute_dtype']['from']})")
    rows.append(f"calibrate first: {c['command']}")
    rows.append(f"  about {c['gpu_minutes']:,.1f} GPU-minutes ({c['counted']})")
    return rows


def has_format(runs: list[Run], engines: dict[str, Any], engine: str) -> bool:
    """Whether ``engine`` or an engine of its weight format has a committed run on any
    card (so :func:`source_card` has something to borrow); an engine not in ``engines``
    counts by its own runs alone."""
    fmt = engines[engine].weight_format if engine in engines else None
    return any(run_key(r)[1] == engine or (fmt is not None and run_key(r)[2] == fmt)
               for r in runs)
