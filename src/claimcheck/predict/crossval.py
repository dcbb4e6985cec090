"""The model on shapes it has not seen: leave-one-run-out cross-validation.

Each committed run's steps are predicted with a calibration chosen by the one rule
(:func:`claimcheck.calibration.calibrate.choose_for`) among all the OTHER runs: the run is left
out of every term (bandwidth, overhead, compute, decode rows, admission, KV read), so no
step's own run feeds its prediction. A run whose engine has no calibration on its card
without it (its only one-stream decode step was its own) is predicted by the carried path
from the other cards' runs alone (:mod:`claimcheck.predict.crossval_carry`: every term
carried to its card by the datasheets, nothing measured on its card in any term), the card
the terms came from in ``carried_from``; such a step is a prediction like any other. Where
that path refuses too (no other card runs the engine's weight format or its activation
path), the run is kept with no prediction and both reasons (``cv_note``); it counts as a
miss.

Beside each cross-validated error stands the in-sample one (the model table's: every run in
the pool, :func:`claimcheck.predict.modeltable.table_rows`), and ``calibration_step`` marks
the steps the in-sample calibration took a term from. Summaries per engine
(:func:`by_engine`) and per term (:func:`by_term`) count the complete steps within the
tolerance on end to end, on decode, and on both.

Each step is simulated with its streams and each request's prompt and output tokens, its
waves sent at the card's admission interval (the other runs' median) as a prediction made
before it ran would send them. Beside it, ``send_interval_ms``: the step's own interval
between its first wave's sends (``Timeline.send_interval_s``, the host's pace; None for one
stream). No prediction reads a step's own interval: it is known only once the step has
run (the per-sequence term is solved on its source steps over their own intervals,
``Calibration.sequence_per_send``). ``as_sent_*_error``: what the held-out prediction would
miss by at that interval (None where it changes nothing): how much of a miss the host's
pace explains, not a prediction.

Beside them, ``sm_clock_mhz``: the step's own SM clock at work (the median of its
telemetry samples in its load window drawing at least half the power limit, read as the
carried model reads it: :func:`claimcheck.predict.carry.step_sm_clock`). It is a condition
of the card the run met, read from its telemetry like its power limit, and no term uses it:
at the same 700 W cap two H200s ran the 256-slot BF16 engine's 256-row step at different
clocks (docs/model.md, "The same card at its power cap").

And beside them, the same step measured by the other runs (``replicate_*``,
:func:`with_replicates`): the median of what the other runs of the engine, card and
protocol measured at the same step (index, streams and requests), set against this run's
measurement as if it were the prediction. It is the measurement's own reproducibility from
one run to another (on the lent machines, mostly another card of the same kind): where two
runs of a step lie more than (1 + t) / (1 - t) - 1 apart (10.5% at t = 5%), no one
prediction of the engine on its card lands within t of both. :func:`summary` counts it
(``replicated``) beside the model's count over the same steps.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from typing import Any

from claimcheck.calibration.calibrate import choose_for, run_key
from claimcheck.calibration.termsources import TERM_WORDS, TERMS, borrowed_terms, term_sources
from claimcheck.config.configfiles import load_engines, load_model_terms
from claimcheck.config.protocols import Terms
from claimcheck.files.errors import InputError
from claimcheck.model import model as m
from claimcheck.predict.carry import step_sm_clock
from claimcheck.predict.crossval_carry import CARRY_ERRORS, carried_prediction
from claimcheck.predict.modeltable import predict_run, table_rows
from claimcheck.runs.run import Run
from claimcheck.verdicts.accuracy import error, within, within_both
from claimcheck.verdicts.verdicts import TOLERANCE

COLUMNS = ("run", "card", "engine", "weight_format", "weights", "protocol", "step", "repeat",
           "streams", "requests", "step_status", "calibration_step",
           "predicted_e2e_tok_s", "measured_e2e_tok_s", "e2e_error",
           "predicted_decode_tok_s", "measured_decode_tok_s", "decode_error",
           "in_sample_e2e_error", "in_sample_decode_error", "cv_note", "carried_from",
           "borrowed_terms", *(f"{t}_runs" for t in TERMS), "send_interval_ms",
           "as_sent_e2e_error", "as_sent_decode_error", "sm_clock_mhz",
           "replicate_runs", "replicate_e2e_error", "replicate_decode_error")
"""crossval.csv's columns (data/derived/crossval.csv), in order."""


def left_out_words() -> str:
    """Every term a run is left out of under cross-validation, as a sentence lists them."""
    return ", ".join(TERM_WORDS[t] for t in TERMS)


def held_out_rows(target: Run, runs: list[Run],
                  cache: dict[tuple[Any, ...], m.Calibration] | None = None,
                  terms: Terms | None = None, user_cards: str | None = None,
                  engines: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """``target``'s steps predicted with ``target`` left out of ``runs`` (every term chosen
    among the others); with no calibration left on its card, every term carried from the
    other cards' runs (:func:`~claimcheck.predict.crossval_carry.carried_prediction`,
    ``engines``: config/engines.yaml's, read here when not given); where that is refused
    too, its steps with no prediction and why."""
    others = [r for r in runs if r is not target and r.name != target.name]
    prov = target.provenance
    base = {"run": target.name, "card": prov.card, "engine": prov.engine,
            "weight_format": run_key(target)[2],
            "weights": prov.engine_config.recorded.get("weights"),
            "protocol": (prov.protocol_config or {}).get("name")}
    try:
        choice = choose_for(target, others, terms)
        out = predict_run(target, choice, cache, user_cards, as_sent=True)
        src, steps, carried_from = term_sources(choice, str(prov.engine)), out["steps"], ""
    except InputError as e:
        if engines is None:
            engines = load_engines()
        try:
            c = carried_prediction(target, runs, engines, user_cards)
        except CARRY_ERRORS as e2:
            return _unpredicted(target, base, f"no calibration without this run: {e}; nor "
                                f"carried from another card: {e2}")
        src, steps, carried_from = c["sources"], c["steps"], c["from_card"]
    terms_runs = {f"{t}_runs": "; ".join(src[t]["runs"]) for t in TERMS}
    return [{**base, **{k: r[k] for k in (
        "step", "repeat", "streams", "requests", "step_status", "predicted_e2e_tok_s",
        "measured_e2e_tok_s", "e2e_error", "predicted_decode_tok_s",
        "measured_decode_tok_s", "decode_error", "as_sent_e2e_error", "as_sent_decode_error")},
        "cv_note": "", "carried_from": carried_from,
        "borrowed_terms": "; ".join(borrowed_terms(src)), **terms_runs} for r in steps]


def _unpredicted(target: Run, base: dict[str, Any], note: str) -> list[dict[str, Any]]:
    """``target``'s steps with no prediction, ``note`` saying why."""
    return [{**base, "step": s.record["step"], "repeat": s.record["repeat"],
             "streams": s.timeline.streams, "requests": len(s.timeline.requests),
             "step_status": s.record.get("status") or "complete",
             "predicted_e2e_tok_s": None, "predicted_decode_tok_s": None,
             "e2e_error": None, "decode_error": None, "borrowed_terms": "",
             "cv_note": note, "carried_from": "", **{f"{t}_runs": "" for t in TERMS}}
            for s in target.traces]


def cross_validate(runs: list[Run], user_cards: str | None = None) -> list[dict[str, Any]]:
    """Every step of every run, cross-validated (:func:`held_out_rows`), with its in-sample
    errors and ``calibration_step`` from the model table's calibration over all ``runs``;
    columns :data:`COLUMNS`; ``user_cards``: a cards file merged over the registry."""
    inside = {(r["run"], r["step"], r["repeat"]): r for r in table_rows(runs, [], user_cards)}
    cache: dict[tuple[Any, ...], m.Calibration] = {}
    terms = load_model_terms()  # config/protocols.yaml, read once here
    engines = load_engines()  # config/engines.yaml: the carried path's engine of a run
    rows = []
    for target in runs:
        if target.drafts:  # no plain model of a drafting step to validate (choose_for)
            continue
        clocks = {(s.record["step"], s.record["repeat"]): step_sm_clock(target, s)[0]
                  for s in target.traces}
        sends = {(s.record["step"], s.record["repeat"]): s.timeline.send_interval_s
                 for s in target.traces}
        for r in held_out_rows(target, runs, cache, terms, user_cards, engines):
            ins = inside.get((r["run"], r["step"], r["repeat"]), {})
            r["sm_clock_mhz"] = clocks.get((r["step"], r["repeat"]))
            gap = sends.get((r["step"], r["repeat"]))
            r["send_interval_ms"] = None if gap is None else gap * 1e3
            if r.get("measured_e2e_tok_s") is None and ins:
                r["measured_e2e_tok_s"] = ins["measured_e2e_tok_s"]
                r["measured_decode_tok_s"] = ins["measured_decode_tok_s"]
            r["calibration_step"] = bool(ins.get("calibration_step", False))
            r["in_sample_e2e_error"] = ins.get("e2e_error")
            r["in_sample_decode_error"] = ins.get("decode_error")
            rows.append(r)
    return [{c: r.get(c) for c in COLUMNS} for r in with_replicates(rows)]


REPLICATE_KEY = ("card", "engine", "protocol", "step", "streams", "requests")
"""What makes two runs' steps the same step for :func:`with_replicates`."""


def _median(values: list[Any]) -> float | None:
    vs = [float(v) for v in values if v is not None]
    return statistics.median(vs) if vs else None


def replicate_key(r: Mapping[str, Any]) -> tuple[str, ...]:
    """What makes two rows the same step (:data:`REPLICATE_KEY`), as text."""
    return tuple(str(r.get(k)) for k in REPLICATE_KEY)


def with_replicates(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` each with ``replicate_runs`` (the other runs that measured the same step,
    :data:`REPLICATE_KEY`, complete; "" where none did) and ``replicate_e2e_error`` /
    ``replicate_decode_error``: the median of those runs' measured end to end (decode)
    aggregates over all their repeats of the step, as a prediction of this row's
    measurement (None without another run, or where either side measured no decode)."""
    same: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in complete(rows):
        same.setdefault(replicate_key(r), []).append(r)
    out = []
    for r in rows:
        others = [o for o in same.get(replicate_key(r), []) if o["run"] != r["run"]]
        e2e = _median([o["measured_e2e_tok_s"] for o in others])
        dec = _median([o["measured_decode_tok_s"] for o in others])
        out.append({**r, "replicate_runs": "; ".join(sorted({str(o["run"]) for o in others})),
                    "replicate_e2e_error": error(e2e, r.get("measured_e2e_tok_s")),
                    "replicate_decode_error": error(dec, r.get("measured_decode_tok_s"))})
    return out


def _counts(rows: list[dict[str, Any]], prefix: str, tolerance: float) -> dict[str, int]:
    """Rows within ``tolerance`` on e2e, on decode and on both; a row with no e2e error (no
    prediction) is within on neither."""
    pairs = [(r[f"{prefix}e2e_error"], r[f"{prefix}decode_error"]) for r in rows]
    return {"e2e_within": sum(e is not None and within(e, tolerance) for e, _ in pairs),
            "decode_within": sum(e is not None and within(d, tolerance) for e, d in pairs),
            "both_within": sum(within_both(e, d, tolerance) for e, d in pairs)}


def complete(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of complete steps (a failed step is never compared)."""
    return [r for r in rows if r["step_status"] == "complete"]


def summary(rows: list[dict[str, Any]], tolerance: float = TOLERANCE) -> dict[str, Any]:
    """Counts over the complete ``rows``: ``steps``, ``unpredicted`` (no calibration without
    their run, nor a carried one), ``carried`` (predicted from terms carried from another
    card: ``carried_from``), and within ``tolerance`` on e2e, decode (a held prefill's null
    decode is no miss) and both: ``cross_validated`` and ``in_sample``; ``as_sent``: within
    on both at each step's own send interval (:func:`_as_sent`), known only once it ran."""
    rows = complete(rows)
    return {"steps": len(rows), "unpredicted": sum(bool(r["cv_note"]) for r in rows),
            "carried": sum(bool(r.get("carried_from")) for r in rows),
            "cross_validated": _counts(rows, "", tolerance),
            "in_sample": _counts(rows, "in_sample_", tolerance),
            "replicated": _replicated(rows, tolerance),
            "one_value": one_value(rows, tolerance),
            "as_sent": sum(within_both(*_as_sent(r), tolerance) for r in rows)}


def _as_sent(r: dict[str, Any]) -> tuple[Any, Any]:
    """A row's (e2e, decode) error at its step's own send interval where that changes the
    prediction (``as_sent_*``), else its held-out errors: what :func:`summary` counts as
    ``as_sent``."""
    if r.get("as_sent_e2e_error") is None:
        return r["e2e_error"], r["decode_error"]
    return r["as_sent_e2e_error"], r.get("as_sent_decode_error")


def _one_value_hits(rows: list[dict[str, Any]], tolerance: float) -> int:
    """The most of one step's ``rows`` a single predicted (end to end, decode) pair puts
    within ``tolerance`` on both. A point of most cover can be moved up to the top of some
    row's interval on each axis (a measurement m is hit by p in [m (1 - tol), m (1 + tol)]),
    so those tops are the only candidates; a row that measured no decode is no miss there."""
    shade = 1 + tolerance * (1 - 1e-9)  # just inside the top, clear of rounding
    e2e = [r["measured_e2e_tok_s"] * shade for r in rows if r.get("measured_e2e_tok_s")]
    dec = [r["measured_decode_tok_s"] * shade
           for r in rows if r.get("measured_decode_tok_s")] or [None]
    return max((sum(within_both(error(pe, r.get("measured_e2e_tok_s")),
                                error(pd, r.get("measured_decode_tok_s")), tolerance)
                    for r in rows) for pe in e2e for pd in dec), default=0)


def one_value(rows: list[dict[str, Any]], tolerance: float = TOLERANCE) -> int:
    """Over the complete ``rows``: the most of them one value per step
    (:data:`REPLICATE_KEY`: every run's and repeat's measurement of that step) puts within
    ``tolerance`` on both end to end and decode: what the measurements' own spread leaves
    to a model that gives a step one number (a row with no measurement is a miss). Not a
    bound on the cross-validated model, whose prediction of a step may differ run by run
    (each run leaves itself out)."""
    same: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in complete(rows):
        same.setdefault(replicate_key(r), []).append(r)
    return sum(_one_value_hits(rs, tolerance) for rs in same.values())


def _replicated(rows: list[dict[str, Any]], tolerance: float) -> dict[str, int]:
    """Over the complete ``rows`` another run measured too (``replicate_runs``): their
    count, how many that other measurement lands within ``tolerance`` of on both end to
    end and decode (:func:`with_replicates`), and how many the cross-validated model
    does."""
    rep = [r for r in rows if r.get("replicate_runs")]
    return {"steps": len(rep),
            "both_within": sum(within_both(r["replicate_e2e_error"],
                                           r["replicate_decode_error"], tolerance)
                               for r in rep),
            "model_both_within": sum(within_both(r["e2e_error"], r["decode_error"], tolerance)
                                     for r in rep)}


def carried_groups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The complete steps predicted from terms carried from another card
    (``carried_from``), per card and the card the terms came from: ``card``,
    ``from_card``, ``steps`` and ``runs`` (counts), by card then source card."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in complete(rows):
        if r.get("carried_from"):
            out.setdefault((str(r["card"]), str(r["carried_from"])), []).append(r)
    return [{"card": c, "from_card": f, "steps": len(rs), "runs": len({r["run"] for r in rs})}
            for (c, f), rs in sorted(out.items())]


def group_key(rows: list[dict[str, Any]]) -> Callable[[Mapping[str, Any]], str]:
    """The name a row is counted under: its engine where every row is of one card, else
    "ENGINE on CARD", so no card's steps are counted as another card's."""
    one_card = len({r.get("card") for r in rows}) <= 1
    return lambda r: str(r["engine"]) if one_card else f"{r['engine']} on {r.get('card')}"


def by_engine(rows: list[dict[str, Any]], tolerance: float = TOLERANCE
              ) -> dict[str, dict[str, Any]]:
    """:func:`summary` per engine (per engine and card where the rows hold more than one
    card: :func:`group_key`), complete steps only."""
    return grouped(rows, group_key(rows), tolerance)


def grouped(rows: list[dict[str, Any]], key: Callable[[Mapping[str, Any]], str],
            tolerance: float = TOLERANCE) -> dict[str, dict[str, Any]]:
    """:func:`summary` of the ``rows`` of each ``key``, keys sorted (a group of failed
    steps alone is listed with none)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    return {k: summary(groups[k], tolerance) for k in sorted(groups)}


def by_protocol(rows: list[dict[str, Any]], tolerance: float = TOLERANCE
                ) -> dict[str, dict[str, Any]]:
    """:func:`summary` per protocol, every engine and card together, complete steps only:
    where the misses sit, and (``one_value``) what that protocol's measurements' own spread
    leaves a model that gives each step one number."""
    return grouped(complete(rows), lambda r: str(r["protocol"]), tolerance)


def count_line(name: str, v: Mapping[str, Any]) -> str:
    """One :func:`summary` as the text table's line: steps, in sample and cross-validated
    within (e2e / decode / both), and what else it counted where it did."""
    i, c, rep = v["in_sample"], v["cross_validated"], v["replicated"]
    return (f"{name:<34} {v['steps']:>5} {i['e2e_within']:>4} /{i['decode_within']:>4} "
            f"/{i['both_within']:>4} {c['e2e_within']:>5} /{c['decode_within']:>4} "
            f"/{c['both_within']:>4}"
            + (f"  ({v['unpredicted']} with no calibration without their run)"
               if v["unpredicted"] else "")
            + (f"  ({v['carried']} with every term carried from another card)"
               if v["carried"] else "")
            + (f"  (another run measured {rep['steps']}: its measurement within at "
               f"{rep['both_within']}, the model at {rep['model_both_within']})"
               if rep["steps"] else "")
            + f"  (one value per step: {v['one_value']})")


def by_term(rows: list[dict[str, Any]], tolerance: float = TOLERANCE
            ) -> dict[str, dict[str, Any]]:
    """Per term, over the complete cross-validated steps: how many had it measured
    (``with``), how many took it from another engine (``borrowed``), and the
    :func:`summary` of the steps with it and of those without."""
    rows = [r for r in complete(rows) if not r["cv_note"]]  # "" in memory, None from csv
    out = {}
    for t in TERMS:
        has = [r for r in rows if r[f"{t}_runs"]]
        out[t] = {"with": len(has),
                  "borrowed": sum(f"{t} (" in (r["borrowed_terms"] or "") for r in has),
                  "summary_with": summary(has, tolerance),
                  "summary_without": summary([r for r in rows if not r[f"{t}_runs"]],
                                             tolerance)}
    return out


def update_sentence(rows: list[dict[str, Any]], tolerance: float = TOLERANCE) -> str:
    """The one sentence an Update can print from the table: the pooled cross-validated
    count and each engine's."""
    s = summary(rows, tolerance)
    per = by_engine(rows, tolerance)
    parts = ", ".join(f"{e} {v['cross_validated']['both_within']} of {v['steps']}"
                      for e, v in per.items())
    return (f"Each run predicted with that run left out of every term of the model, "
            f"{s['cross_validated']['both_within']} of {s['steps']} committed steps land "
            f"within {tolerance:.0%} on both end to end and decode ({parts}).")


def read(path: str) -> list[dict[str, Any]]:
    """crossval.csv read back typed, every column of :data:`COLUMNS` there: InputError
    naming the file and the missing columns otherwise (a table of another version)."""
    from claimcheck.files.framefiles import read_rows

    rows = read_rows(path)
    missing = [c for c in COLUMNS if rows and c not in rows[0]]
    if missing:
        raise InputError(str(path), f"missing column(s) {', '.join(missing)}: not a "
                         "cross-validation table of this version (rule crossval writes one)")
    return rows


def write(run_dirs: list[str], out_csv: str, user_cards: str | None = None) -> list[str]:
    """crossval.csv from the run directories, read once; returns the log lines: the row
    count, the pooled and per-engine counts (in sample, then cross-validated) and the
    Update's sentence (:func:`update_sentence`). Each run's card is read from the registry
    and ``user_cards`` merged over it."""
    from claimcheck.physics.cardfiles import load_cards
    from claimcheck.runs.run import load_run
    from claimcheck.runs.tables import write_csv

    cards = load_cards(user_path=user_cards)
    rows = cross_validate([load_run(d, cards) for d in run_dirs], user_cards)
    write_csv(rows, out_csv)
    lines = [f"{out_csv}: {len(rows)} rows"]
    for e, v in {"all": summary(rows), **by_engine(rows)}.items():
        i, c = v["in_sample"], v["cross_validated"]
        lines.append(f"{e}: {v['steps']} steps; within e2e / decode / both: in sample "
                     f"{i['e2e_within']} / {i['decode_within']} / {i['both_within']}, "
                     f"cross-validated {c['e2e_within']} / {c['decode_within']} / "
                     f"{c['both_within']}")
    lines.append(update_sentence(rows))
    return lines
