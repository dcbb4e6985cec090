"""Predictions written before a run, set against what the run measured (issue 31).

``data/raw/predictions/`` holds ``claimcheck predict --json`` output for protocols that had
no run when it was written, each file listed in ``index.csv`` with the commit it was
written at and what the model had then. :func:`against` sets one prediction against a run
of the same card, engine and protocol, one row per measured step and repeat, with the
measured aggregates read off the token timeline by :mod:`claimcheck.readings.definitions`
(the functions the model table and :func:`claimcheck.predict.verify.compare` call) and the
errors of :mod:`claimcheck.verdicts.accuracy` (predicted / measured - 1). :func:`summary` counts
the hits. The index and the pipeline's ``data/derived/beforehand.csv`` are
:mod:`claimcheck.pipeline.beforehand_index`; the words (summary line, step table, appendix
section, body paragraph) :mod:`claimcheck.update.beforehand_words`. Units: tok/s
(aggregate: summed over the streams), ms (TPOT), s (TTFT, load).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.files.frames import flag, number
from claimcheck.files.readers import read_json
from claimcheck.predict.verify import PREDICTED_KEYS
from claimcheck.runs.run import Run
from claimcheck.runs.steptable import measured_values
from claimcheck.verdicts.accuracy import error, within, within_both
from claimcheck.verdicts.verdicts import TOLERANCE

MATCHED = ("streams", "requests", "input_len", "output_len")
"""A prediction step's keys that must equal the run's step of that index."""
TOP_KEYS = ("card", "engine", "protocol", "steps")
NOT_MEASURED = "not measured yet"


def check_prediction(obj: Any, source: str) -> dict[str, Any]:
    """A parsed ``claimcheck predict --json`` object, checked (InputError naming ``source``
    and the key otherwise), with ``file`` set to ``source``."""
    if not isinstance(obj, dict):
        raise InputError(source, "not a `claimcheck predict --json` file (a JSON object with "
                         f"{', '.join(TOP_KEYS)}), got {type(obj).__name__}")
    for k in TOP_KEYS:
        if k not in obj:
            raise InputError(source, "not a `claimcheck predict --json` file: no such key",
                             key=k)
    if not isinstance(obj["steps"], list) or not obj["steps"]:
        raise InputError(source, "a prediction's steps must be a non-empty list", key="steps")
    seen: set[int] = set()
    for i, s in enumerate(obj["steps"]):
        if not isinstance(s, dict):
            raise InputError(source, "each step must be an object", key=f"steps[{i}]")
        for k in ("index", *MATCHED, *PREDICTED_KEYS):
            if k not in s:
                raise InputError(source, "no such key in a predicted step",
                                 key=f"steps[{i}].{k}")
        for k in ("index", *MATCHED):
            if not isinstance(s[k], int) or isinstance(s[k], bool):
                raise InputError(source, f"must be an integer, got {s[k]!r}",
                                 key=f"steps[{i}].{k}")
        if s["index"] in seen:
            raise InputError(source, f"step index {s['index']} given twice",
                             key=f"steps[{i}].index")
        seen.add(s["index"])
    return {**obj, "file": source}


def load_prediction(path: str | Path) -> dict[str, Any]:
    """A committed prediction file, checked (:func:`check_prediction`)."""
    return check_prediction(read_json(path), str(path))


def check_matches(prediction: Mapping[str, Any], run: Run) -> None:
    """Refuse (InputError naming the prediction file and key) a run of another card, engine
    or protocol, or one whose step of an index has other streams, requests or lengths."""
    src = prediction.get("file", "<prediction>")
    prov = run.provenance
    for k in ("card", "engine", "protocol"):
        if prediction[k] != getattr(prov, k):
            raise InputError(src, f"predicted for {prediction[k]!r}, but run {run.name} is of "
                             f"{getattr(prov, k)!r}: not the run this prediction was written for",
                             key=k)
    by_index = {p["index"]: (i, p) for i, p in enumerate(prediction["steps"])}
    for s in run.traces:
        k = int(s.record["step"])
        if k not in by_index:
            raise InputError(src, f"run {run.name} has a step {k} the prediction does not "
                             f"(indices {sorted(by_index)})", key="steps")
        i, p = by_index[k]
        for key in MATCHED:
            if p[key] != s.record.get(key):
                raise InputError(src, f"{p[key]} predicted, but run {run.name}'s step {k} "
                                 f"(repeat {s.record['repeat']}) has {s.record.get(key)}",
                                 key=f"steps[{i}].{key}")


def against(prediction: Mapping[str, Any], run: Run,
            tolerance: float = TOLERANCE) -> list[dict[str, Any]]:
    """One row per measured step and repeat of ``run``: its lengths, the predicted and
    measured e2e and decode aggregate (tok/s), median TPOT (ms) and TTFT (s), each error
    (predicted / measured - 1) and whether the step is within ``tolerance`` on both
    aggregates (:func:`~claimcheck.verdicts.accuracy.within_both`; a failed step never is) and
    on end to end alone. Checked first (:func:`check_matches`)."""
    check_matches(prediction, run)
    by_index = {p["index"]: p for p in prediction["steps"]}
    prov = run.provenance
    base = {"prediction_file": Path(prediction.get("file", "")).name,
            "card": prediction["card"], "engine": prediction["engine"],
            "protocol": prediction["protocol"], "kind": prediction.get("kind"),
            "weights": prov.weights or prediction.get("weights"),
            "weight_format": prov.engine_config.recorded.get("weight_format"),
            "run": run.name, "run_duration_s": number(prov.duration_s),
            "prediction_repeats": by_index[min(by_index)].get("repeats")}
    rows = []
    for s in run.traces:
        p = by_index[int(s.record["step"])]
        m = measured_values(run, s)
        status = s.record.get("status") or "complete"
        pe2e, pdec = p["predicted_e2e_tok_s"], p["predicted_decode_tok_s"]
        row = {**base, "status": status, "step": p["index"], "repeat": s.record["repeat"],
               "streams": p["streams"], "requests": p["requests"],
               "input_len": p["input_len"], "output_len": p["output_len"],
               "context_tokens": p["input_len"] + p["output_len"],
               "predicted_e2e_tok_s": pe2e, "measured_e2e_tok_s": m["e2e"],
               "e2e_error": error(pe2e, m["e2e"]),
               "predicted_decode_tok_s": pdec, "measured_decode_tok_s": m["decode"],
               "decode_error": error(pdec, m["decode"]),
               "predicted_median_tpot_ms": p["predicted_median_tpot_ms"],
               "measured_median_tpot_ms": m["tpot"],
               "tpot_error": error(p["predicted_median_tpot_ms"], m["tpot"]),
               "predicted_median_ttft_s": p["predicted_median_ttft_s"],
               "measured_median_ttft_s": m["ttft"],
               "ttft_error": error(p["predicted_median_ttft_s"], m["ttft"]),
               "predicted_load_s": p["predicted_load_s"],
               "measured_send_to_last_s": m["send_to_last_s"],
               "measured_client_s": m["client_s"]}
        ok = status == "complete"
        row["within"] = ok and within_both(row["e2e_error"], row["decode_error"], tolerance)
        row["within_e2e"] = ok and row["e2e_error"] is not None and within(row["e2e_error"],
                                                                            tolerance)
        rows.append(row)
    return rows


def not_measured(prediction: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per predicted step of a prediction with no run yet (nothing measured, no
    error)."""
    return [{"prediction_file": Path(prediction.get("file", "")).name,
             "card": prediction["card"], "engine": prediction["engine"],
             "protocol": prediction["protocol"], "kind": prediction.get("kind"),
             "weights": prediction.get("weights"), "run": "", "status": NOT_MEASURED,
             "step": p["index"], "repeat": None, "streams": p["streams"],
             "requests": p["requests"], "input_len": p["input_len"],
             "output_len": p["output_len"],
             "context_tokens": p["input_len"] + p["output_len"],
             **{k: p[k] for k in PREDICTED_KEYS}, "within": False, "within_e2e": False}
            for p in prediction["steps"]]


def summary(rows: Sequence[Mapping[str, Any]], tolerance: float = TOLERANCE
            ) -> dict[str, Any]:
    """What :func:`against`'s rows (or the csv's, read back typed) add up to: measured
    rows, distinct steps, within ``tolerance`` on both e2e and decode and on e2e alone,
    mean |error| of each aggregate (a fraction), the largest miss (either aggregate, with its
    step, streams and lengths), and the load seconds per repeat: predicted (first send to
    last token as simulated: each step's client start-up and the engine start left out)
    against measured first send to last token summed over the steps, the clients' spans
    (their start-up included) and the run's duration (engine start left out)."""
    done = [r for r in rows if r.get("status") != NOT_MEASURED]
    first = rows[0] if rows else {}
    out: dict[str, Any] = {
        k: first.get(k) for k in ("prediction_file", "written_at_commit", "what_model",
                                   "card", "engine", "protocol", "kind", "weights",
                                   "weight_format", "run")}
    out.update(tolerance=tolerance, measured=len(done),
               steps=len({r["step"] for r in done}),
               predicted_steps=len({r["step"] for r in rows}))
    if not done:
        return {**out, "status": NOT_MEASURED}
    out["status"] = "measured"
    out["within"] = sum(flag(r["within"]) for r in done)
    out["within_e2e"] = sum(flag(r["within_e2e"]) for r in done)
    for k in ("e2e", "decode"):
        errs = [abs(e) for r in done if (e := number(r.get(f"{k}_error"))) is not None]
        out[f"mean_abs_{k}_error"] = statistics.fmean(errs) if errs else None
    misses = [(abs(e), k, r) for r in done for k in ("e2e", "decode")
              if (e := number(r.get(f"{k}_error"))) is not None]
    if misses:
        _, k, r = max(misses, key=lambda x: x[0])
        out["largest_miss"] = {"metric": k, "error": number(r[f"{k}_error"]),
                               "step": r["step"], "repeat": r["repeat"],
                               "streams": r["streams"], "input_len": r["input_len"],
                               "output_len": r["output_len"]}
    else:
        out["largest_miss"] = None
    repeats = sorted({r["repeat"] for r in done})
    out["repeats"] = len(repeats)
    steps_once = {r["step"]: r for r in done}
    out["predicted_load_s_per_repeat"] = sum(
        number(r["predicted_load_s"]) or 0.0 for r in steps_once.values())
    for key in ("measured_send_to_last_s", "measured_client_s"):
        out[f"{key}_per_repeat"] = statistics.fmean(
            sum(number(r[key]) or 0.0 for r in done if r["repeat"] == rep) for rep in repeats)
    dur = number(first.get("run_duration_s"))
    out["run_duration_s"] = dur
    return out


def summaries(rows: Iterable[Mapping[str, Any]], tolerance: float = TOLERANCE
              ) -> list[dict[str, Any]]:
    """:func:`summary` of each prediction file's rows (and run's), in first-seen order."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["prediction_file"], r.get("run") or ""), []).append(r)
    return [summary(g, tolerance) for g in groups.values()]
