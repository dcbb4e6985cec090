"""A drafting engine's protocol predicted with the verify-rows model
(:mod:`claimcheck.model.specmodel`), and the speculation table (issue 41 items 4 and 6).

The plain term is the plain step model of the engine's plain twin (:func:`plain_twin`: the
same engine without its ``speculative`` field), calibrated on the plain runs only
(:func:`claimcheck.calibration.calibrate.choose` takes no term from a drafting run). The one
free term, the draft pass overhead, is fitted on the drafting runs of the engine's card and
vLLM release only; with one drafting run on main it is fitted on that run's steps and each
step is also predicted with the overhead fitted on the other steps (leave one step out),
which is no test on another drafting run.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from claimcheck.calibration.calibrate import run_key
from claimcheck.calibration.layout import run_version
from claimcheck.files.errors import InputError
from claimcheck.model import specmodel as sm
from claimcheck.runs.run import Run

ASSUMPTIONS = (
    "every verify step checks k + 1 positions for every stream (no adaptive drafting); the "
    "plain step at B streams is the plain twin's calibrated step model (weights once, state "
    "and KV by the B streams); each of the B x k extra rows adds its FLOP (body and head) at "
    "the calibrated compute rate, on top of the plain step (measured: not hidden under the "
    "memory term); the verify pass (plain step and extra rows) x the plain decode-row factor "
    "measured at B x r rows over the one at B (the bend of the plain 192-256-row steps, "
    "x1.10-1.15; 1 where no plain step measured those rows); a draft pass reads the MTP "
    "layer, its fc and the output head at the plain bandwidth, plus a fixed overhead fitted "
    "on drafting steps; TPOT = step / tokens kept")


def plain_twin(engines: dict[str, Any], engine: str) -> str:
    """The engine that is ``engine`` without its drafter (every field equal but name,
    description and speculative); InputError naming ``--engine`` when there is none."""
    e = engines.get(engine)
    if e is None or not e.speculative:
        raise InputError("--engine", f"{engine!r} is not an engine that drafts in "
                         "config/engines.yaml (no speculative field)")
    def bare(x: Any) -> Any:
        return dataclasses.replace(x, name="", description="", speculative=None)
    twins = sorted(n for n, x in engines.items() if not x.speculative and bare(x) == bare(e))
    if not twins:
        raise InputError("--engine", f"{engine!r} has no plain twin in config/engines.yaml "
                         "(an engine equal to it without speculative): no plain term")
    return twins[0]


def bend_points(runs: list[Run], card: str, twin: str, proto: Any,
                engines: dict[str, Any], user_cards: str | None = None
                ) -> tuple[tuple[tuple[int, float], ...], str]:
    """The decode-row factors that reach the most rows among the plain engines of the
    twin's weight format on the card (the twin's own first, then the engine
    :func:`claimcheck.calibration.calibrate.row_sources` names for the format): each engine's
    calibrated ``row_factors`` and their source; ((), why) when none has any."""
    from claimcheck.calibration.calibrate import row_sources
    from claimcheck.predict.protocolpredict import predict_protocol
    fmt = engines[twin].weight_format
    _, other = row_sources(runs, card, twin, fmt)
    best: tuple[tuple[tuple[int, float], ...], str] = ((), "no decode-row factors measured")
    for who in dict.fromkeys([twin] + ([other] if other else [])):
        cal = predict_protocol(runs, card, who, proto, engines, user_cards).calibration
        if cal.row_factors and (not best[0] or cal.row_factors[-1][0] > best[0][-1][0]):
            best = cal.row_factors, f"engine {who}: {cal.row_factor_source}"
    return best


def _config(engine: Any) -> dict[str, Any]:
    path = engine.config_json()
    if path is None:
        raise InputError("--engine", f"{engine.name}: no config.json to size a draft pass")
    return json.loads(Path(path).read_text())


def drafting_steps(runs: list[Run], card: str, engine: str, version: Any = None
                   ) -> list[tuple[Run, dict[str, Any]]]:
    """The completed steps of the engine's drafting runs on the card (and vLLM release)."""
    out = []
    for r in runs:
        if not r.drafts or run_key(r)[:2] != (card, engine):
            continue
        if version is not None and run_version(r) != version:
            continue
        for row in r.table.to_dict("records"):
            if row.get("status") == "complete" and row.get("median_tpot_ms"):
                out.append((r, row))
    return out


def _verify(ps: dict[str, Any], k: int, t_row: float, pass_s: float, points: Any
            ) -> sm.VerifyStep:
    """The verify step at a plain step ``ps`` of the protocol's prediction (its streams and
    plain TPOT) drafting ``k`` tokens, with no draft pass overhead yet."""
    return sm.verify_step(ps["predicted_median_tpot_ms"] / 1e3, ps["streams"], k, t_row,
                          pass_s, 0.0, sm.bend(points, ps["streams"], k + 1))


def _measured_step_s(row: dict[str, Any]) -> float:
    """A drafting step's measured step time (s): median TPOT x tokens kept per verify."""
    return float(row["median_tpot_ms"]) / 1e3 * float(row["tokens_kept_per_verify"])


def _borrowed_overhead(runs: list[Run], card: str, engine: str, twin: str, proto: Any,
                       engines: dict[str, Any], t_row: float, pass_s: float,
                       points: Any, plain: Any) -> tuple[float, list[str], str]:
    """The draft pass overhead fitted on the drafting steps of the other engines of the
    same plain twin (so the same model and draft pass) on the card, each step at its own
    engine's k: (c in s, the runs fitted on, which engines and k); InputError naming
    ``--engine`` when no such engine has a drafting step."""
    fit, names, who = [], set(), []
    by_shape = {(ps["streams"], ps["requests"]): ps for ps in plain.report["steps"]}
    for other in sorted(n for n, x in engines.items() if x.speculative and n != engine):
        try:
            if plain_twin(engines, other) != twin:
                continue
        except InputError:
            continue
        k = engines[other].draft_tokens
        got = [(r, by_shape[key], row) for r, row in drafting_steps(runs, card, other)
               if (key := (int(row["streams"]), int(row["requests"]))) in by_shape]
        fit += [(_verify(ps, k, t_row, pass_s, points), _measured_step_s(row))
                for _, ps, row in got]
        names |= {r.name for r, _, _ in got}
        if got:
            who.append(f"engine {other}, k = {k}")
    if not fit:
        raise InputError("--engine", f"{engine}: no drafting step on {card} of it or of "
                         f"another engine drafting for {twin} to fit the draft pass "
                         "overhead on (the model's one free term)")
    return sm.fit_pass_overhead_s(fit), sorted(names), "; ".join(who)


def predict_drafting(runs: list[Run], card: str, engine: str, proto: Any,
                     engines: dict[str, Any], tokens_kept: float | None = None,
                     user_cards: str | None = None) -> dict[str, Any]:
    """Every step of ``proto`` predicted for the drafting ``engine``: per step the verify
    rows, tokens kept (the forced length, else ``tokens_kept``), the step's parts, TPOT and
    decode aggregate (streams / TPOT), and, where the step was measured, the measured step
    (median TPOT x tokens kept measured) and the leave-one-step-out prediction."""
    from claimcheck.predict.protocolpredict import predict_protocol
    twin = plain_twin(engines, engine)  # refuses an engine that is not there or not drafting
    e = engines[engine]
    k = e.draft_tokens
    acc = (e.speculative.get("acceptance") or {})
    kept = tokens_kept if tokens_kept is not None else acc.get("length")
    if kept is None:
        raise InputError("--tokens-kept", f"{engine} does not force an acceptance length; "
                         "give the tokens kept per verify (1 to k + 1)")
    if not 1 <= float(kept) <= k + 1:
        raise InputError("--tokens-kept", f"must be in [1, {k + 1}] for k = {k}, got {kept}")
    plain = predict_protocol(runs, card, twin, proto, engines, user_cards)
    cal, shape = plain.calibration, plain.shape
    points, bend_source = bend_points(runs, card, twin, proto, engines, user_cards)
    t_row = sm.row_s(shape.flops_body_per_token + shape.flops_head_per_token, cal.flops_s)
    pbytes = sm.draft_pass_bytes(_config(e))
    pass_s = pbytes / cal.bandwidth_bytes_s
    measured = {(int(row["streams"]), int(row["requests"])): (r, row) for r, row in
                drafting_steps(runs, card, engine)}
    bare, fit = [], []
    for ps in plain.report["steps"]:
        v = _verify(ps, k, t_row, pass_s, points)
        bare.append(v)
        m = measured.get((ps["streams"], ps["requests"]))
        if m:
            fit.append((v, _measured_step_s(m[1])))
    borrowed = ""
    if fit:
        c = sm.fit_pass_overhead_s(fit)
        fitted_on = sorted({measured[k_][0].name for k_ in measured})
    else:
        c, fitted_on, borrowed = _borrowed_overhead(runs, card, engine, twin, proto, engines,
                                                    t_row, pass_s, points, plain)
    loo = dict(zip([id(v) for v, _ in fit], sm.leave_one_out(fit), strict=True))
    steps = []
    for ps, v0 in zip(plain.report["steps"], bare, strict=True):
        v = dataclasses.replace(v0, draft_overhead_s=k * c)
        m = measured.get((ps["streams"], ps["requests"]))
        meas = m[1]["median_tpot_ms"] * m[1]["tokens_kept_per_verify"] if m else None
        tpot = v.tpot_s(float(kept)) * 1e3
        out_loo = loo.get(id(v0))
        steps.append({
            "index": ps["index"], "streams": v.streams, "requests": ps["requests"],
            "verify_rows_per_stream": v.verify_rows, "rows_per_step": v.streams * v.verify_rows,
            "tokens_kept_per_verify": float(kept), "plain_step_ms": v.plain_s * 1e3,
            "extra_rows_ms": v.rows_s * 1e3, "bend": v.bend,
            "draft_bytes_ms": v.draft_bytes_s * 1e3,
            "draft_overhead_ms": v.draft_overhead_s * 1e3, "predicted_step_ms": v.step_s * 1e3,
            "predicted_median_tpot_ms": tpot,
            "predicted_decode_aggregate_tok_s": v.streams * 1e3 / tpot,
            "measured_step_ms": meas,
            "measured_median_tpot_ms": m[1]["median_tpot_ms"] if m else None,
            "measured_tokens_kept_per_verify": m[1]["tokens_kept_per_verify"] if m else None,
            "step_error": (v.step_s * 1e3 / meas - 1) if meas else None,
            "loo_step_ms": out_loo * 1e3 if out_loo else None,
            "loo_step_error": (out_loo * 1e3 / meas - 1) if out_loo and meas else None})
    pcal = plain.report["calibration"]
    return {
        "card": card, "engine": engine, "plain_twin": twin, "draft_tokens": k,
        "tokens_kept_source": ("--tokens-kept" if tokens_kept is not None else
                               "the engine's forced acceptance length"),
        "acceptance": e.acceptance_words(), "weights": e.weights,
        "draft_pass_gb": pbytes / 1e9, "draft_pass_bytes_ms": pass_s * 1e3,
        "row_ms": t_row * 1e3, "draft_pass_overhead_ms": c * 1e3,
        "bend_points": [list(p) for p in points], "bend_source": bend_source,
        "fitted_on": fitted_on,
        "draft_overhead_borrowed_from": borrowed or None,
        "fit_note": borrowed and (
            f"the draft pass overhead is borrowed: fitted on the drafting steps of "
            f"{', '.join(fitted_on)} ({borrowed}, the same plain twin and card), as "
            f"{engine} has no drafting run of its own on {card}") or (
            f"the draft pass overhead is fitted on the {len(fit)} drafting step(s) "
            f"of {', '.join(fitted_on)} (least squares); loo = that step predicted "
            "with the overhead fitted on the others. " + (
                "With one drafting run the fitted term is not tested on another "
                "drafting run." if len(fitted_on) == 1 else "")),
        "plain_calibration": {k_: pcal[k_] for k_ in ("bandwidth_gb_s", "tflops",
                                                     "bandwidth_source", "compute_source")},
        "plain_term_sources": plain.report.get("term_sources"),
        "assumptions": ASSUMPTIONS, "steps": steps}


def lines(out: dict[str, Any]) -> list[str]:
    """The printed form of :func:`predict_drafting`."""
    c = out["plain_calibration"]

    def f(x: Any, spec: str) -> str:
        return "-" if x is None else format(x, spec)
    head = [
        f"{out['engine']} ({out['weights']} weights; {out['acceptance']}) on {out['card']}: "
        f"step = (plain step at B streams ({out['plain_twin']}'s calibrated model) + B x k "
        f"extra rows x {out['row_ms']:.4f} ms) x bend at B x r rows + "
        f"k = {out['draft_tokens']} draft passes x "
        f"({out['draft_pass_bytes_ms']:.3f} ms for {out['draft_pass_gb']:.2f} GB + "
        f"{out['draft_pass_overhead_ms']:.3f} ms fitted); TPOT = step / tokens kept "
        f"({out['tokens_kept_source']})",
        f"  plain bandwidth {c['bandwidth_gb_s']:,.0f} GB/s from {c['bandwidth_source']}",
        f"  plain compute {c['tflops']:,.1f} TFLOP/s from {c['compute_source']}",
        "  bend at B x r rows: " + ", ".join(f"{r} rows x{f:.3f}" for r, f in
                                            out["bend_points"]) + f" ({out['bend_source']})",
        f"  fitted: {out['fit_note']}",
        f"  assumed: {out['assumptions']}",
        f"{'streams':>7} {'rows':>4} {'kept':>5} {'plain':>6} {'+rows':>6} {'bend':>5} "
        f"{'+draft':>6} "
        f"{'step ms':>7} {'TPOT ms':>7} {'dec tok/s':>9} {'meas step':>9} {'err':>6} "
        f"{'loo':>6}"]
    for s in out["steps"]:
        head.append(
            f"{s['streams']:>7} {s['verify_rows_per_stream']:>4} "
            f"{s['tokens_kept_per_verify']:>5.2f} {s['plain_step_ms']:>6.2f} "
            f"{s['extra_rows_ms']:>6.2f} {s['bend']:>5.3f} "
            f"{s['draft_bytes_ms'] + s['draft_overhead_ms']:>6.2f} "
            f"{s['predicted_step_ms']:>7.2f} {s['predicted_median_tpot_ms']:>7.2f} "
            f"{s['predicted_decode_aggregate_tok_s']:>9,.1f} "
            f"{f(s['measured_step_ms'], '.2f'):>9} {f(s['step_error'], '+.1%'):>6} "
            f"{f(s['loo_step_error'], '+.1%'):>6}")
    return head
