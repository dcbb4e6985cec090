"""The timeline and model commands: ``claimcheck metrics`` (every tok/s definition of a run's
token timeline), ``claimcheck model`` (the calibrated step model on one run) and
``claimcheck predict`` (a protocol predicted from an engine's committed runs on a card)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from claimcheck.cli.common import emit, fmt, pool_lines
from claimcheck.cli.physics import cards_file
from claimcheck.config.protocols import context_words, relation_words
from claimcheck.files.errors import InputError
from claimcheck.physics.cardfiles import get_card, load_cards


def term_lines(c: dict[str, Any]) -> list[str]:
    """One line per measured term of a calibration (``Calibration.as_dict()``), with its
    source: decode-row factors, the admission interval, the KV-read rate, the mixed-prefill
    factor, the output lag, the cold start."""
    out = []
    if c.get("row_factor_source"):
        out.append(f"  decode rows: {c['row_factor_source']}")
    if c.get("admission_source"):
        out.append(f"  admission: {c['admission_source']}")
    if c.get("kv_source"):
        out.append(f"  KV read: {c['kv_source']}")
    if c.get("mixed_prefill_source"):
        out.append(f"  mixed prefill: {c['mixed_prefill_source']}")
    if c.get("output_lag_source"):
        out.append(f"  output lag: {c['output_lag_source']}")
    if c.get("cold_start_source"):
        out.append(f"  cold start: {c['cold_start_source']}")
    return out


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``metrics``, ``model`` and ``predict`` commands and their options."""
    s = sub.add_parser("metrics", help="every tok/s definition, recomputed from a run's "
                       "token timeline")
    s.add_argument("run_dir", help="a run directory (data/raw/runs/<run>)")
    s.add_argument("--json", action="store_true", help="print JSON instead of the table")

    s = sub.add_parser("model", help="calibrated step model: predict every step of a run")
    s.add_argument("run_dir", nargs="?", default=None,
                   help="a run directory (data/raw/runs/<run>); none with --cross-validate")
    s.add_argument("--cross-validate", action="store_true",
                   help="instead: every committed run's steps predicted with that run left "
                        "out of every term (bandwidth, overhead, compute, decode rows, "
                        "admission, KV read, sequence prefill, cold start, output lag); "
                        "per step and per engine and term, beside the in-sample errors")
    s.add_argument("--runs", default=None,
                   help="runs folder for --cross-validate (default data/raw/runs)")
    s.add_argument("--calibrate-from", default=None,
                   help="run directory with a 1-stream step (default: chosen among the "
                        "runs beside RUN_DIR on its card, as `snakemake all` does: the same "
                        "engine first, then the same weight format)")
    s.add_argument("--tolerance", type=float, default=0.05,
                   help="relative miss allowed before a term is named (default 0.05)")
    s.add_argument("--before", default=None, metavar="PREDICTION.json",
                   help="instead: set a prediction written before the run (`claimcheck "
                        "predict --json` output, e.g. data/raw/predictions/*.json) against "
                        "what RUN_DIR measured, step by step")
    s.add_argument("--json", action="store_true", help="print JSON instead of the table")

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
    s.add_argument("--power-limit", type=float, default=None, metavar="W",
                   help="the card's power limit in W, for a card with no run (default: its "
                        "cards.csv default_power_w): compute carried x the cube root of "
                        "W / default, bandwidth unchanged (claimcheck.model.carry)")
    s.add_argument("--carry", action="store_true",
                   help="for a card with no run: carry every term from the local card's "
                        "runs (claimcheck.predict.carry) instead of borrowing one engine's "
                        "calibration; implied by --power-limit and by a weight format with "
                        "no run on any card")
    s.add_argument("--tokens-kept", type=float, default=None, metavar="TAU",
                   help="for an engine that drafts: tokens kept per verify (1 to k + 1; "
                        "default: the engine's forced acceptance length)")
    s.add_argument("--fresh-engine", action="store_true",
                   help="the protocol is the first on a freshly started engine (as device.sh "
                        "serve then measure): its first step pays the cold-start term")
    s.add_argument("--json", action="store_true", help="print JSON instead of the table")


def lengths(record: dict[str, Any], proto: dict[str, Any]) -> str:
    """'1,024 + 384 tokens' from a step record, the protocol's lengths where the record
    (an interrupted run's) has none."""
    i = record.get("input_len", proto.get("input_len"))
    o = record.get("output_len", proto.get("output_len"))
    return f"{i:,} + {o:,} tokens" if i is not None and o is not None else "? + ? tokens"


def cmd_metrics(a: argparse.Namespace) -> int:
    from claimcheck.readings.definitions import DEFINITIONS, REGISTRY_METRIC, has_per_stream_column
    from claimcheck.runs.run import load_run
    from claimcheck.runs.steptable import lanes_of, metric_rows

    run = load_run(a.run_dir, load_cards(user_path=cards_file(a)))
    prov = run.provenance
    proto = prov.protocol_config
    rows = [{**{k: v for k, v in m.items() if not k.startswith("lanes_")},
             "lanes": lanes_of(m)} for m in metric_rows(run)]
    ctx = context_words(run.rows)  # each step's lengths, the protocol's where it has none
    lines = [f"{run.name}: {prov.card}, engine {prov.engine}, protocol "
             f"{proto.get('name', '?')}"
             + ("" if prov.complete else f"; run {prov.status}: {prov.failure}"),
             f"streams: {relation_words(prov.protocol_kind)}; context per stream: {ctx}"]
    w = max(len(n) for n in DEFINITIONS)  # the definitions' column, as wide as the longest
    for st, r in zip(run.traces, rows, strict=True):
        lines.append("")
        lines.append(f"step {r['step']} repeat {r['repeat']}: {r['streams']} stream(s), "
                     f"{r['requests']} requests ({r['completed']} completed) of "
                     f"{lengths(st.record, proto)}, "
                     f"{r['output_tokens']:,} output tokens, {r['wall_s']:.2f} s first send "
                     f"to last token, decode window {r['decode_window_s']:.2f} s")
        lines.append(f"  {'definition':<{w}} {'aggregate':>12} {'per stream':>11}  unit")
        for name, dfn in DEFINITIONS.items():
            if dfn.scope == "aggregate":  # its per-stream reading beside it, where it has one
                agg = fmt(r[name], ",.3f" if dfn.unit == "tok/J" else ",.1f")
                ps = fmt(r[f"{name}_per_stream"]) if has_per_stream_column(name) else ""
            else:  # one stream's own speed
                agg, ps = "", fmt(r[name])
            lines.append(f"  {name:<{w}} {agg:>12} {ps:>11}  {dfn.unit}")
        ln = r["lanes"]
        lines.append(f"  lanes line: {ln['lanes']} lanes, {ln['total_tokens']:,} tok in "
                     f"{ln['wall_s']:.2f} s, {fmt(ln['decode_tok_s'])} tok/s decode / "
                     f"{ln['e2e_tok_s']:,.1f} tok/s e2e, plan {ln['plan_s'] * 1e3:,.0f} ms, "
                     f"tail {ln['tail_s'] * 1e3:,.0f} ms, fastest second "
                     f"{ln['fastest_second_tok_s']:,.0f} tok/s, per lane "
                     f"{fmt(ln['per_lane_tok_s'])} tok/s")
    for why in run.skipped:
        lines.append(f"skipped {why}")
    lines.append("")
    lines.append("what each definition divides by, and leaves out:")
    for name, dfn in DEFINITIONS.items():
        lines.append(f"  {name}: {dfn.divides_by}; leaves out {dfn.leaves_out}")
    own = [n for n, v in DEFINITIONS.items() if v.scope != "aggregate"]
    lines.append("aggregate = summed over the streams; per stream = aggregate / streams "
                 f"running at once ({', '.join(own)}: one stream's own speed)")
    out = {"run": run.name, "card": prov.card, "engine": prov.engine,
           "protocol": proto.get("name"),
           "definitions": {k: {"label": v.label, "unit": v.unit, "scope": v.scope,
                               "phase": v.phase, "divides_by": v.divides_by,
                               "leaves_out": v.leaves_out,
                               "registry_metric": REGISTRY_METRIC[k]}
                           for k, v in DEFINITIONS.items()},
           "steps": rows, "skipped": list(run.skipped)}
    emit(out, a.json, "\n".join(lines))
    return 0


def cmd_model(a: argparse.Namespace) -> int:
    from claimcheck.calibration.calibrate import choose_for
    from claimcheck.predict.modeltable import miss_term, predict, predict_run
    from claimcheck.runs.run import find_runs, load_run

    if a.cross_validate:
        return cmd_cross_validate(a)
    if a.run_dir is None:
        raise InputError("run_dir", "give a run directory (or --cross-validate)")
    if a.before:  # a prediction kept before the run, against what it measured
        from claimcheck.pipeline.beforehand_index import compare
        if a.calibrate_from:
            raise InputError("--before", "sets a kept prediction against the run; it takes "
                             "no --calibrate-from (the prediction has its calibration)")
        c = compare(a.before, a.run_dir, a.tolerance)
        emit({k: v for k, v in c.items() if k != "lines"}, a.json, "\n".join(c["lines"]))
        return 0
    cards = load_cards(user_path=cards_file(a))
    target = load_run(a.run_dir, cards)
    if a.calibrate_from:
        out = predict(target, load_run(a.calibrate_from, cards))
    else:  # as the pipeline does: by the stated rule among the runs beside this one
        here = Path(a.run_dir).resolve()
        sibs = [target] + [load_run(p, cards) for p in find_runs(here.parent)
                           if p.resolve() != here]
        out = predict_run(target, choose_for(target, sibs))
    proto = target.provenance.protocol_config
    card = get_card(target.provenance.card, user_path=cards_file(a))
    out["calibration"]["bandwidth_share_of_datasheet"] = (
        out["calibration"]["bandwidth_gb_s"] / card.memory_bw_gb_s)
    for r in out["steps"]:
        r["miss"] = miss_term(r, a.tolerance)
    c, e = out["calibration"], out["engine"]
    lines = [f"{out['run']}: calibrated on {out['calibrated_on']}",
             f"  effective bandwidth {c['bandwidth_gb_s']:,.0f} GB/s "
             f"({c['bandwidth_gb_s'] / card.memory_bw_gb_s:.0%} of the {card.name}'s "
             f"{card.memory_bw_gb_s:,.0f} GB/s datasheet) from {c['bandwidth_source']}",
             f"  effective compute {c['tflops']:,.1f} TFLOP/s from {c['compute_source']}",
             f"  per-request overhead {c['request_overhead_s'] * 1e3:.1f} ms from "
             f"{c['overhead_source']}",
             *pool_lines(out.get("engine_shape") or {}),
             *term_lines(c),
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
             f"  aggregates in tok/s summed over the streams ({relation_words(proto.get('kind'))}"
             "); e2e = all tokens / first send to last token; decode = tokens after "
             "each first / time with any request decoding",
             f"  context per stream: {context_words(target.rows)} "
             f"(protocol {proto.get('name', '?')}); simulated with each request's recorded "
             "prompt and output lengths",
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
            f"{fmt(r['predicted_decode_tok_s']):>9} "
            f"{fmt(r['measured_decode_tok_s']):>9} {dec_err:>6} "
            f"{r['predicted_median_tpot_ms']:>7.2f} ms {r['measured_median_tpot_ms']:>7.2f} ms"
            f"  {r['bound']} ({r.get('memory_bound_share', 0):.0%} memory: weights "
            f"{r.get('weights_share_of_memory', 0):.0%}, state "
            f"{r.get('state_share_of_memory', 0):.0%}, KV {r.get('kv_share_of_memory', 0):.0%})"
            + (" [calibration step]" if r["calibration_step"] else ""))
        if r["miss"]:
            lines.append(f"       miss beyond {a.tolerance:.0%}: {r['miss']}")
    emit(out, a.json, "\n".join(lines))
    return 0


def cmd_cross_validate(a: argparse.Namespace) -> int:
    """``claimcheck model --cross-validate``: :mod:`claimcheck.predict.crossval` over the
    committed runs."""
    from claimcheck.files.paths import RUNS
    from claimcheck.predict import crossval as cv
    from claimcheck.runs.run import load_runs

    if a.run_dir or a.before or a.calibrate_from:
        raise InputError("--cross-validate", "predicts every committed run with that run "
                         "left out; it takes no RUN_DIR, --before or --calibrate-from")
    root = Path(a.runs) if a.runs else RUNS
    if not root.is_dir():
        raise InputError("--runs", f"{root} is not a folder")
    rows = cv.cross_validate(load_runs(root))
    out = {"tolerance": a.tolerance, "summary": cv.summary(rows, a.tolerance),
           "engines": cv.by_engine(rows, a.tolerance),
           "protocols": cv.by_protocol(rows, a.tolerance), "terms": cv.by_term(rows, a.tolerance),
           "sentence": cv.update_sentence(rows, a.tolerance), "steps": rows}
    lines = [f"leave-one-run-out over {root}: each run's steps predicted with that run left "
             "out of every term; within "
             f"{a.tolerance:.0%} (e2e / decode / both), complete steps",
             f"{'engine':<34} {'steps':>5} {'in sample':>14} {'cross-validated':>16}",
             "(one value per step: the most steps one number per step, every run's and "
             "repeat's measurement of it, puts within on both: the measurements' own spread)"]
    lines += [cv.count_line(e, v) for e, v in {"all": out["summary"], **out["engines"]}.items()]
    lines += ["per protocol, every engine and card together:"]
    lines += [cv.count_line(p, v) for p, v in out["protocols"].items()]
    lines.append("per term (steps with it measured, borrowed from another engine or card, "
                 "both within; without it):")
    for t, v in out["terms"].items():
        lines.append(f"  {t:<10} {v['with']:>4} with ({v['borrowed']} borrowed), "
                     f"{v['summary_with']['cross_validated']['both_within']} within; "
                     f"{v['summary_without']['steps']} without, "
                     f"{v['summary_without']['cross_validated']['both_within']} within")
    lines.append(f"{'run':<58} {'step':>4} {'rep':>3} {'e2e err':>8} {'dec err':>8} "
                 f"{'in-sample':>17}")
    for r in rows:
        lines.append(f"{r['run']:<58} {r['step']:>4} {r['repeat']:>3} "
                     f"{fmt(r['e2e_error'], '+.1%'):>8} {fmt(r['decode_error'], '+.1%'):>8} "
                     f"{fmt(r['in_sample_e2e_error'], '+.1%'):>8} "
                     f"{fmt(r['in_sample_decode_error'], '+.1%'):>8}"
                     + (" [calibration step]" if r["calibration_step"] else "")
                     + (f" [carried from {r['carried_from']}]" if r["carried_from"] else "")
                     + (f" {r['cv_note']}" if r["cv_note"] else ""))
    lines.append(out["sentence"])
    emit(out, a.json, "\n".join(lines))
    return 0


def cmd_predict(a: argparse.Namespace) -> int:
    from claimcheck.calibration.termsources import source_lines
    from claimcheck.config.configfiles import load_engines, load_protocols
    from claimcheck.files.paths import CONFIG, RUNS
    from claimcheck.predict.protocolpredict import predict_protocol, verify_plan
    from claimcheck.runs.run import load_runs

    if a.verify is not None and a.verify < 0:
        raise InputError("--verify", f"the number of sampled steps must be >= 0, got {a.verify}")
    try:
        card = get_card(a.card, user_path=cards_file(a))
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
    engines = load_engines()  # each engine's exact command checked before any run is read
    runs = load_runs(root, load_cards(user_path=cards_file(a)))
    tau = getattr(a, "tokens_kept", None)
    if a.engine in engines and engines[a.engine].speculative:
        # an engine that drafts: the verify-rows model (claimcheck.predict.specpredict)
        from claimcheck.predict import specpredict
        for opt, v in (("--verify", a.verify), ("--power-limit", getattr(a, "power_limit", None))):
            if v is not None:
                raise InputError(opt, f"{a.engine} drafts; {opt} is for plain engines")
        out = specpredict.predict_drafting(runs, a.card, a.engine, protos[a.protocol],
                                           engines, tau, cards_file(a))
        emit(out, a.json, "\n".join(specpredict.lines(out)))
        return 0
    if tau is not None:
        raise InputError("--tokens-kept", f"{a.engine} does not draft (no speculative field "
                         "in config/engines.yaml)")
    from claimcheck.predict import newcard
    power = getattr(a, "power_limit", None)
    if power is not None and not (power > 0 and power < float("inf")):
        raise InputError("--power-limit", f"must be a number of W > 0, got {power}")
    carried = None
    if getattr(a, "fresh_engine", False) and not newcard.has_runs(runs, a.card):
        raise InputError("--fresh-engine", f"{a.card} has no committed run, so no cold start "
                         "measured there; a prediction carried to it takes the engine warm")
    if newcard.has_runs(runs, a.card):
        if power is not None:
            raise InputError("--power-limit", f"{a.card} has committed runs, measured at its "
                             "own limit; --power-limit carries terms to a card with none")
        pred = predict_protocol(runs, a.card, a.engine, protos[a.protocol], engines,
                                cards_file(a), fresh_engine=getattr(a, "fresh_engine", False))
    elif getattr(a, "carry", False) or power is not None or (
            a.engine in engines and not newcard.has_format(runs, engines, a.engine)):
        # every term carried from the local card, each said measured/carried/assumed
        from claimcheck.predict.carry import predict_carried
        carried = predict_carried(runs, a.card, a.engine, protos[a.protocol], engines, power,
                                  user_cards=cards_file(a))
    else:  # a card with no run: datasheet, borrowed terms marked assumed, what to measure
        # the calibration steps are the project's protocols whatever --protocols-file says
        pred = newcard.predict_new_card(runs, a.card, a.engine, protos[a.protocol],
                                       load_protocols(), engines, cards_file(a))
    out = dict(pred.report) if carried is None else carried
    if a.verify is not None and carried is not None:
        raise InputError("--verify", "plans a run of a card with runs or a borrowed "
                         "calibration; a carried prediction has no calibration steps to plan")
    if a.verify is not None:
        out["verify"] = verify_plan(pred, a.verify, list(protos.values()))
    c = out["calibration"]
    dummy = " (dummy weights)" if out["weights"] == "dummy" else ""
    b = out.get("borrowed")
    whence = (f"{out['carried']['from_card']}'s runs, every term carried by its datasheet"
              if carried else "the committed runs on that card" if not b else
              "its datasheet, no run on it: "
              f"eta and the engine terms borrowed from {b['from_engine']} on "
              f"{b['from_card']} (assumed)")
    lines = [f"{a.protocol} predicted for {a.engine}{dummy} on the {card.name} from "
             f"{whence}; engine shape from {out['engine_run']}",
             f"  effective bandwidth {c['bandwidth_gb_s']:,.0f} GB/s from "
             f"{c['bandwidth_source']}",
             f"  effective compute {c['tflops']:,.1f} TFLOP/s from {c['compute_source']}",
             f"  per-request overhead {c['request_overhead_s'] * 1e3:.1f} ms from "
             f"{c['overhead_source']}",
             *pool_lines(out.get("engine_shape") or {}),
             *term_lines(c),
             *(f"  {k} step chosen because {v['why']}" for k, v in out["choice"].items()
               if isinstance(v, dict)),
             *source_lines(out.get("term_sources") or {}),
             *([f"  borrowed from another engine or card: {'; '.join(out['borrowed_terms'])}"]
               if out.get("borrowed_terms") else []),
             *([f"  {out['prefix_cache']['words']}"] if out.get("prefix_cache") else []),
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
            f"{r['input_len']:>6}+{r['output_len']:<5} {fmt(e2e):>9} "
            f"{fmt(e2e / r['streams'] if e2e else None):>7} "
            f"{fmt(r['predicted_decode_tok_s']):>9} "
            f"{fmt(r['predicted_median_tpot_ms'], '.2f'):>8} "
            f"{fmt(r['predicted_median_ttft_s'], '.3f'):>7} "
            f"{fmt(r['predicted_load_s']):>7} {fmt(r['measured_e2e_tok_s']):>9} "
            f"{fmt(r['e2e_error'], '+.1%'):>6} {fmt(r['measured_decode_tok_s']):>9} "
            f"{fmt(r['decode_error'], '+.1%'):>6}"
            + (" [calibration step]" if r["calibration_step"] else "")
            + (f"  {r['note']}" if r["note"] else ""))
    lines.append(f"predicted load for the whole protocol ({out['steps'][0]['repeats']} "
                 f"repeat(s) per step): {out['predicted_load_s']:,.0f} s")
    if "borrowed" in out:
        lines += newcard.lines(out)
    if carried:
        from claimcheck.predict.carry import lines as carry_lines
        lines += carry_lines(out)
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
        for x in v.get("calibration_left_out", []):
            lines.append(f"  not planned: the {x['role']} step ({x['streams']} stream(s) x "
                         f"{x['requests']} requests of {x['input_len']}+{x['output_len']} "
                         f"tokens, measured in {x['measured_in']}): {x['reason']}")
        lines.append(f"  predicted load: verify {v['verify_load_s']:,.0f} s against "
                     f"{v['protocol_load_s']:,.0f} s for this protocol in full and "
                     f"{v['suite_load_s']:,.0f} s for the full suite ({v['suite_protocols']} "
                     f"protocols of {pfile.name}, every step that fits, every repeat); the "
                     f"suite in verify mode (calibration once, {v['sampled']} sampled "
                     f"step(s) per protocol once): {v['suite_verify_load_s']:,.0f} s")
    emit(out, a.json, "\n".join(lines))
    return 0
