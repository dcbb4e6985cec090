"""A protocol predicted step by step for an engine on a card, and its verify plan.

The calibration is :func:`claimcheck.calibration.calibrate.choose`'s for the engine on the card;
the engine shape (weights, state, KV, token budget) is the engine's first run's, or for an
engine with no run its twin's (:func:`_twin`) with its own slots and context length. The
verify plan (:func:`verify_plan`) says which steps a verify run measures and the predicted
load seconds of that plan against the whole protocol and suite.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

from claimcheck.calibration.calibrate import Choice, choose, run_key
from claimcheck.calibration.calibration import calibration
from claimcheck.calibration.layout import layout_words, parallel_layout, run_layout, run_version
from claimcheck.calibration.stepsim import predicted_step
from claimcheck.calibration.termsources import borrowed_terms, term_sources
from claimcheck.files.errors import InputError
from claimcheck.model import model as m
from claimcheck.readings import definitions as d
from claimcheck.runs.run import Run, StepTrace
from claimcheck.verdicts.accuracy import error

PROTOCOL_ASSUMPTIONS = (
    "every request has the step's input_len prompt tokens and runs to its output_len (as "
    "with --ignore-eos, or dummy weights that never stop); closed-loop clients at the step's "
    "streams (a new request is sent when one finishes); load seconds = first send to last "
    "token as simulated, engine start and each step's client start-up not counted")
WARM = ("the engine already warm (the cold start, where a term line gives one, is not added: "
        "a protocol sent first to a freshly started engine reaches its first wave's tokens "
        "that much later; --fresh-engine adds it)")
FRESH = ("the engine freshly started (--fresh-engine): the first step's first repeat pays the "
         "cold start where a term line gives one, every later step and repeat finds it warm")


def _step_shape(run: Run, rec: dict[str, Any]
                ) -> tuple[int, int, int, int, str]:
    """(streams, requests, input_len, output_len, kind) of a recorded step; lengths and
    kind the recorded protocol's where the step record lacks them (older records)."""
    proto = run.provenance.protocol_config or {}
    steps = proto.get("steps") or []
    ps = steps[rec["step"]] if isinstance(rec.get("step"), int) and rec["step"] < len(steps) \
        else {}

    def get(k: str) -> Any:
        return rec.get(k) or ps.get(k) or proto.get(k)
    return (int(rec["streams"]), int(rec["requests"]), int(get("input_len") or 0),
            int(get("output_len") or 0), get("kind") or "bench")


def _engine_runs(runs: list[Run], card: str, engine: str
                 ) -> list[Run]:
    on_card = [r for r in runs if run_key(r)[0] == card]
    if not on_card:
        cards = sorted({str(run_key(r)[0]) for r in runs})
        raise InputError("--card", f"no committed run on card {card!r} (cards with runs: "
                         f"{', '.join(cards) or 'none'})")
    own = [r for r in on_card if run_key(r)[1] == engine]
    if not own:
        engines = sorted({str(run_key(r)[1]) for r in on_card})
        raise InputError("--engine", f"no committed run of engine {engine!r} on {card} "
                         f"(engines with runs there: {', '.join(engines)})")
    return sorted(own, key=lambda r: (str(r.provenance.started_utc or ""), r.name))


def _fit(step: Any, proto: Any, eng: dict[str, Any]) -> tuple[bool, str]:
    """Whether the engine can run the step (prompt + output within max_model_len, the
    measure runner's margin included) and what to say when it queues past its slots."""
    from claimcheck.config.protocols import FIT_MARGIN_TOKENS
    max_len, seqs = eng.get("max_model_len"), eng.get("max_num_seqs")
    need = step.input_len + step.output_len + FIT_MARGIN_TOKENS
    if max_len and need > int(max_len):
        return False, (f"{step.input_len} + {step.output_len} tokens + {FIT_MARGIN_TOKENS} "
                       f"margin exceed max_model_len {max_len}: not predicted")
    if d.is_queued(step.streams, seqs):
        return True, (f"{step.streams} streams on {seqs} slots: requests queue in the "
                      "server" + ("" if proto.queue_ok else " (measure refuses it: the "
                                  "protocol does not set queue_ok)"))
    return True, ""


def plan_step(shape: m.EngineShape, cal: m.Calibration, streams: int, requests: int,
              input_len: int, output_len: int, cold: bool = False) -> dict[str, Any]:
    """:func:`~claimcheck.calibration.calibration.predicted_step` of a planned step: ``requests``
    requests of ``input_len`` prompt and ``output_len`` output tokens at ``streams``
    (``cold``: on a freshly started engine)."""
    pred, _ = predicted_step(shape, cal, [input_len] * requests, [output_len] * requests,
                             streams, cold)
    return pred


def prefix_caching_of(run: Run | None) -> bool | None:
    """Whether the engine of ``run`` caches prefixes, from its engine config
    (``prefix_caching``), else from vLLM's own word in its start log
    (``enable_prefix_caching=True/False``); None when neither says."""
    if run is None:
        return None
    v = run.provenance.engine_config.recorded.get("prefix_caching")
    if v is not None:
        return bool(v)
    found = re.findall(r"enable_prefix_caching'?[=:] ?(True|False)", run.start_log)
    return found[-1] == "True" if found else None


def prefix_cache_hits(seed: Any, caching: bool | None) -> dict[str, Any]:
    """What the model can say of prefix-cache hits: from the protocol's seed policy
    (``fresh``: a new seed per call, so prompts share no prefix; a fixed number: request i
    of every step starts with the same tokens) and the engine's prefix caching.
    ``expected``: False (none), True (hits the model does not price: the prediction is
    marked) or None (cannot be known); ``words``: the reason."""
    if seed == "fresh":
        return {"expected": False, "words": "prefix-cache hits: none (seed: fresh, a new "
                "seed per call: prompts share no prefix)"}
    if caching is False:
        return {"expected": False, "words": f"prefix-cache hits: none (seed fixed at {seed}, "
                "but the engine's prefix caching is off)"}
    if caching is None:
        return {"expected": None, "words": f"prefix-cache hits cannot be known (seed fixed at "
                f"{seed}: request i of every step starts with the same tokens; the engine's "
                "prefix caching is not said in its config or start log); the model assumes "
                "none"}
    return {"expected": True, "words": f"MARKED: prefix-cache hits expected (seed fixed at "
            f"{seed}: request i of every step after the first starts with the same tokens, "
            "and the engine caches prefixes); the model assumes none, so a step may measure "
            "faster than predicted"}


TWIN_FIELDS = ("model", "weights", "weight_format", "quantization", "kv_cache_dtype",
               "mamba_ssm_cache_dtype", "prefix_caching")
"""Engine settings that decide the model's bytes, FLOPs and chunking besides the slots and
the context length: an engine with no run borrows the shape of a run whose engine agrees on
all of them and on its parallel layout (:func:`parallel_layout`)."""


def _twin(runs: list[Run], card: str, engine: str, spec: Any
          ) -> Run:
    """The first run on ``card`` of an engine that differs from ``spec`` (an
    :class:`~claimcheck.measure.engines.Engine` with no run) only in slots and context:
    never one of another parallel layout (a run records 1 GPU when it records no size)."""
    want = {k: getattr(spec, k) for k in TWIN_FIELDS}
    layout = parallel_layout(spec.__dict__)
    twins = [r for r in runs if run_key(r)[0] == card and run_layout(r) == layout and all(
        r.provenance.engine_config.recorded.get(k) == v for k, v in want.items())]
    if not twins:
        raise InputError("--engine", f"no committed run of engine {engine!r} on {card}, nor "
                         "of an engine that differs from it only in max_num_seqs and "
                         f"max_model_len ({', '.join(TWIN_FIELDS)} and the parallel layout, "
                         f"{layout_words(layout)}, equal)")
    return min(twins, key=lambda r: (spec.vllm_version is not None
                                     and run_version(r) != spec.vllm_version,
                                     str(r.provenance.started_utc or ""), r.name))


@dataclass(frozen=True)
class ProtocolPrediction:
    """A protocol predicted for an engine on a card: ``report`` is what is printed and
    written (JSON: card, engine, steps with predicted tok/s, TPOT ms, TTFT s and load s,
    the calibration's values and sources); the engine shape, calibration, choice and engine
    config it was made with, kept typed for a verify plan or a new card's prediction."""

    report: dict[str, Any]
    shape: m.EngineShape
    calibration: m.Calibration
    choice: Choice
    engine_config: dict[str, Any]


def predict_protocol(runs: list[Run], card: str, engine: str, proto: Any,
                     engines: dict[str, Any] | None = None,
                     user_cards: str | None = None,
                     fresh_engine: bool = False) -> ProtocolPrediction:
    """Every step of protocol ``proto`` predicted for ``engine`` on ``card`` from the
    committed ``runs`` (calibration by :func:`choose`, engine shape from the engine's first
    run); a step measured already (same streams, requests, lengths and kind in a run of the
    engine on the card) carries its measured end to end and decode aggregate (median over
    the matching steps) and the errors. An engine of ``engines`` (config/engines.yaml) with
    no run on the card takes the shape of its twin's first run (:func:`_twin`) with its own
    slots and context length, said in ``engine_run``. ``user_cards``: a cards file merged
    over the registry (:func:`claimcheck.physics.cardfiles.load_cards`). ``fresh_engine``:
    the protocol is the first on a freshly started engine (its first step cold)."""
    try:
        own = _engine_runs(runs, card, engine)
        base = own[0]
        shape, info = base.engine
        eng = dict(base.provenance.engine_config.recorded)
        fmt, engine_run = run_key(base)[2], base.name
    except InputError as e:
        if not engines or engine not in engines or e.source != "--engine":
            raise
        spec = engines[engine]
        own, base = [], _twin(runs, card, engine, spec)
        shape, info = base.engine
        shape = replace(shape, max_num_seqs=int(spec.max_num_seqs or shape.max_num_seqs))
        info = {**info, "max_num_seqs": shape.max_num_seqs,
                "kv_pool_source": f"{info['kv_pool_source']} of {base.name} (the twin's: "
                                  f"{engine}'s own pool not measured)"}
        eng = {"weights": spec.weights, "max_model_len": spec.max_model_len,
               "max_num_seqs": shape.max_num_seqs}
        fmt = spec.weight_format
        engine_run = (f"{base.name} (engine {run_key(base)[1]}; {engine} has no run: same "
                      f"{', '.join(TWIN_FIELDS)}, same parallel layout "
                      f"({layout_words(run_layout(base))}), its {shape.max_num_seqs} slots and "
                      f"max_model_len {spec.max_model_len} from config/engines.yaml"
                      + ("" if spec.vllm_version in (None, run_version(base)) else
                         f"; that run is of vLLM {run_version(base)}, this engine pins "
                         f"{spec.vllm_version}, which has no run of it on {card}") + ")")
    choice = choose(runs, card, engine, fmt, layout=run_layout(base),
                    version=run_version(base))
    cal = calibration(choice, info["compute_dtype"], user_cards=user_cards)
    used = choice.steps()
    measured: dict[tuple[Any, ...], list[tuple[Run, StepTrace]]] = {}
    for r in own:
        for s in r.traces:
            measured.setdefault(_step_shape(r, s.record), []).append((r, s))
    steps = []
    for i, st in enumerate(proto.steps):
        fits, note = _fit(st, proto, eng)
        row: dict[str, Any] = {
            "index": i, "streams": st.streams, "requests": st.requests,
            "input_len": st.input_len, "output_len": st.output_len,
            "repeats": proto.repeats, "fits": fits, "note": note}
        row.update(plan_step(shape, cal, st.streams, st.requests, st.input_len,
                             st.output_len, fresh_engine and i == 0) if fits else
                   {k: None for k in ("predicted_e2e_tok_s", "predicted_decode_tok_s",
                                      "predicted_median_tpot_ms", "predicted_median_ttft_s",
                                      "predicted_load_s")})
        got = measured.get((st.streams, st.requests, st.input_len, st.output_len, proto.kind),
                           [])
        row["measured_in"] = [f"{r.name} step {s.record['step']} repeat {s.record['repeat']}"
                              for r, s in got]
        row["calibration_step"] = any((r.name, s.record["dir"]) in used for r, s in got)
        m_e2e = (statistics.median(d.e2e_aggregate_tok_s(s.timeline) for _, s in got)
                 if got else None)
        decs = [d.decode_aggregate_tok_s(s.timeline) for _, s in got
                if not s.held_prefill]
        m_dec = statistics.median(decs) if decs else None
        p_e2e, p_dec = row.get("predicted_e2e_tok_s"), row.get("predicted_decode_tok_s")
        row.update({"measured_e2e_tok_s": m_e2e, "measured_decode_tok_s": m_dec,
                    "e2e_error": error(p_e2e, m_e2e), "decode_error": error(p_dec, m_dec)})
        steps.append(row)
    load = sum((r["predicted_load_s"] or 0) * r["repeats"] for r in steps)
    sources = term_sources(choice, engine)
    return ProtocolPrediction(
        report={"card": card, "engine": engine, "protocol": proto.name, "kind": proto.kind,
                "weights": eng.get("weights"), "engine_run": engine_run,
                "engine_shape": info, "calibration": cal.as_dict(),
                "choice": choice.as_dict(),
                "assumptions": f"{PROTOCOL_ASSUMPTIONS}; {FRESH if fresh_engine else WARM}",
                "term_sources": sources,
                "prefix_cache": prefix_cache_hits(getattr(proto, "seed", "fresh"),
                                                  prefix_caching_of(base)),
                "borrowed_terms": borrowed_terms(sources),
                "steps": steps, "predicted_load_s": load},
        shape=shape, calibration=cal, choice=choice, engine_config=eng)


def verify_plan(prediction: ProtocolPrediction, n: int, suite: list[Any]
                ) -> dict[str, Any]:
    """Verify mode for a predicted protocol: measure the calibration steps that fit the
    engine (one that does not, borrowed from an engine with a longer context, is left out
    with its reason: its value stays the one measured there) and ``n`` of the
    protocol's steps (evenly spread over its step list, the last included; one repeat
    each), predict the rest; predicted load seconds for that plan against the whole
    protocol and the whole ``suite`` (every protocol given, every step that fits the engine,
    every repeat), and for the suite in verify mode (the calibration steps once, ``n``
    sampled steps of each protocol once)."""
    if n < 0:
        raise InputError("--verify", f"the number of sampled steps must be >= 0, got {n}")
    shape, cal, choice = prediction.shape, prediction.calibration, prediction.choice
    pred, eng = prediction.report, prediction.engine_config
    calib: list[dict[str, Any]] = []
    left_out: list[dict[str, Any]] = []
    seen = set()
    for role, p in (("bandwidth", choice.bandwidth), ("overhead", choice.overhead),
                    ("compute", choice.compute)):
        if p is None:
            continue
        sh = _step_shape(p.run, p.step.record)
        if sh in seen:
            continue
        streams, requests, il, ol, _ = sh
        step = SimpleNamespace(streams=streams, requests=requests, input_len=il,
                               output_len=ol)
        fits, note = _fit(step, SimpleNamespace(queue_ok=True), eng)
        if not fits:  # its value is the one measured in p.label; not planned here
            left_out.append({"role": role, "streams": streams, "requests": requests,
                             "input_len": il, "output_len": ol, "measured_in": p.label,
                             "reason": note.removesuffix(": not predicted")})
            continue
        seen.add(sh)
        load = plan_step(shape, cal, streams, requests, il, ol)["predicted_load_s"]
        calib.append({"role": role, "streams": streams, "requests": requests, "input_len": il,
                      "output_len": ol, "measured_in": p.label, "predicted_load_s": load})
    def shape_of(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["streams"], r["requests"], r["input_len"], r["output_len"], pred["kind"])
    cand = [r for r in pred["steps"] if r["fits"] and shape_of(r) not in seen]
    pick = _spread(len(cand), n)
    sampled = [cand[i]["index"] for i in pick]
    calib_s = sum(c["predicted_load_s"] for c in calib)
    verify_s = calib_s + sum(cand[i]["predicted_load_s"] for i in pick)
    suite_s, suite_verify_s = 0.0, calib_s
    for proto in suite:
        loads = [(st, plan_step(shape, cal, st.streams, st.requests, st.input_len,
                                 st.output_len)["predicted_load_s"])
                 for st in proto.steps if _fit(st, proto, eng)[0]]
        suite_s += proto.repeats * sum(x for _, x in loads)
        left = [x for st, x in loads if (st.streams, st.requests, st.input_len,
                                         st.output_len, proto.kind) not in seen]
        suite_verify_s += sum(left[i] for i in _spread(len(left), n))
    return {"sampled": n, "calibration_steps": calib, "calibration_left_out": left_out,
            "sampled_steps": sampled,
            "calibration_protocol_steps": [r["index"] for r in pred["steps"]
                                           if shape_of(r) in seen],
            "predicted_steps": [r["index"] for r in pred["steps"] if r["fits"]
                                and r["index"] not in sampled and shape_of(r) not in seen],
            "verify_load_s": verify_s, "protocol_load_s": pred["predicted_load_s"],
            "suite_load_s": suite_s, "suite_verify_load_s": suite_verify_s,
            "suite_protocols": len(suite)}


def _spread(k: int, n: int) -> list[int]:
    """``n`` of ``k`` indices evenly spread, the last included (all when n >= k)."""
    if n >= k:
        return list(range(k))
    if n == 1:
        return [k - 1]
    return sorted({round(i * (k - 1) / (n - 1)) for i in range(n)})
