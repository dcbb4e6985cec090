"""Predictions written before a run, set against what the run measured (issue 31).

``data/raw/predictions/`` holds ``claimcheck predict --json`` output for protocols that had
no run when it was written, each file listed in ``index.csv`` with the commit it was
written at and what the model had then. :func:`against` sets one prediction against a run
of the same card, engine and protocol, one row per measured step and repeat, with the
measured aggregates read off the token timeline by :mod:`claimcheck.core.definitions`
(the functions the model table and :func:`claimcheck.report.verify.compare` call) and the
errors of :mod:`claimcheck.core.accuracy` (predicted / measured - 1). :func:`summary` counts
the hits; :func:`table` is the pipeline's ``data/derived/beforehand.csv``;
:func:`appendix_section` and :func:`body_sentence` are its words. Units: tok/s (aggregate:
summed over the streams), ms (TPOT), s (TTFT, load).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from claimcheck.core import definitions as d
from claimcheck.core.accuracy import error, within, within_both
from claimcheck.core.errors import InputError
from claimcheck.core.frames import flag, number
from claimcheck.core.io import read_csv_lines, read_json
from claimcheck.core.protocols import relation_words
from claimcheck.core.verdicts import TOLERANCE
from claimcheck.report import mdtext as md
from claimcheck.report import steps as run_steps
from claimcheck.report.verify import PREDICTED_KEYS

MATCHED = ("streams", "requests", "input_len", "output_len")
"""A prediction step's keys that must equal the run's step of that index."""
TOP_KEYS = ("card", "engine", "protocol", "steps")
INDEX_COLUMNS = ("file", "protocol", "engine", "card", "written_at_commit", "what_model")
NOT_MEASURED = "not measured yet"
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
METRIC_WORDS = {"e2e": "end to end", "decode": "decode"}


# ------------------------------------------------------------------ loading, checked

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


def check_matches(prediction: Mapping[str, Any], run: run_steps.RunData) -> None:
    """Refuse (InputError naming the prediction file and key) a run of another card, engine
    or protocol, or one whose step of an index has other streams, requests or lengths."""
    src = prediction.get("file", "<prediction>")
    prov = run.provenance
    for k in ("card", "engine", "protocol"):
        if prediction[k] != prov.get(k):
            raise InputError(src, f"predicted for {prediction[k]!r}, but run {run.name} is of "
                             f"{prov.get(k)!r}: not the run this prediction was written for",
                             key=k)
    by_index = {p["index"]: (i, p) for i, p in enumerate(prediction["steps"])}
    for s in run.steps:
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


# ------------------------------------------------------------------ the comparison

def measured(s: run_steps.StepData) -> dict[str, float | None]:
    """One step's measured aggregates, medians and seconds, through the definitions the
    model table uses: e2e and decode aggregate (tok/s, summed over the streams; no decode
    for a held prefill), median TPOT (ms) and TTFT (s), first send to last token (s) and
    the client's span from start to end (s, its start-up included)."""
    tl = s.timeline
    tpots = d.tpots_ms(tl)
    rec = s.record
    span = (rec["end_unix_s"] - rec["start_unix_s"]
            if rec.get("end_unix_s") is not None and rec.get("start_unix_s") is not None
            else None)
    return {"e2e": d.e2e_aggregate_tok_s(tl),
            "decode": None if s.held_prefill else d.decode_aggregate_tok_s(tl),
            "tpot": statistics.median(tpots) if tpots else None,
            "ttft": statistics.median(r.ttft_s for r in tl.requests) if tl.requests else None,
            "send_to_last_s": tl.wall_s, "client_s": span}


def against(prediction: Mapping[str, Any], run: run_steps.RunData,
            tolerance: float = TOLERANCE) -> list[dict[str, Any]]:
    """One row per measured step and repeat of ``run``: its lengths, the predicted and
    measured e2e and decode aggregate (tok/s), median TPOT (ms) and TTFT (s), each error
    (predicted / measured - 1) and whether the step is within ``tolerance`` on both
    aggregates (:func:`~claimcheck.core.accuracy.within_both`; a failed step never is) and
    on end to end alone. Checked first (:func:`check_matches`)."""
    check_matches(prediction, run)
    by_index = {p["index"]: p for p in prediction["steps"]}
    prov = run.provenance
    base = {"prediction_file": Path(prediction.get("file", "")).name,
            "card": prediction["card"], "engine": prediction["engine"],
            "protocol": prediction["protocol"], "kind": prediction.get("kind"),
            "weights": prov.get("weights") or prediction.get("weights"),
            "weight_format": (prov.get("engine_config") or {}).get("weight_format"),
            "run": run.name, "run_duration_s": number(prov.get("duration_s")),
            "prediction_repeats": by_index[min(by_index)].get("repeats")}
    rows = []
    for s in run.steps:
        p = by_index[int(s.record["step"])]
        m = measured(s)
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


# ------------------------------------------------------------------ the index and the table

def read_index(path: str | Path) -> list[dict[str, str]]:
    """``data/raw/predictions/index.csv``, checked: its columns, a file that exists beside
    it, a commit of 7-40 hex digits, no file twice; errors name the file, line and column."""
    path = Path(path)
    _, rows = read_csv_lines(path, INDEX_COLUMNS)
    seen: set[str] = set()
    out = []
    for line, r in rows:
        for k in INDEX_COLUMNS:
            if not r[k].strip():
                raise InputError(str(path), "empty", line=line, key=k)
        if not (path.parent / r["file"]).is_file():
            raise InputError(str(path), f"{r['file']}: no such file beside the index",
                             line=line, key="file")
        if not COMMIT.match(r["written_at_commit"]):
            raise InputError(str(path), f"not a commit (7-40 hex digits): "
                             f"{r['written_at_commit']!r}", line=line, key="written_at_commit")
        if r["file"] in seen:
            raise InputError(str(path), f"{r['file']} listed twice", line=line, key="file")
        seen.add(r["file"])
        out.append({**r, "line": line})
    return out


def indexed_predictions(index_csv: str | Path) -> list[dict[str, Any]]:
    """Every prediction the index lists, loaded and checked against its index row (its
    card, engine and protocol), with ``written_at_commit`` and ``what_model``; a prediction
    JSON beside the index that it does not list is refused."""
    index_csv = Path(index_csv)
    rows = read_index(index_csv)
    listed = {r["file"] for r in rows}
    for p in sorted(index_csv.parent.glob("*.json")):
        if p.name not in listed:
            raise InputError(str(index_csv), f"{p.name} is beside the index but not listed in "
                             "it (every kept prediction needs its commit)", key="file")
    out = []
    for r in rows:
        pred = load_prediction(index_csv.parent / r["file"])
        for k in ("protocol", "engine", "card"):
            if pred[k] != r[k]:
                raise InputError(str(index_csv), f"{r[k]!r}, but {r['file']} is predicted "
                                 f"for {pred[k]!r}", line=r["line"], key=k)
        out.append({**pred, "written_at_commit": r["written_at_commit"],
                    "what_model": r["what_model"]})
    return out


def load_listed(path: str | Path) -> dict[str, Any]:
    """:func:`load_prediction`, with its ``written_at_commit`` and ``what_model`` when an
    ``index.csv`` beside it lists it (``claimcheck model --before``)."""
    path = Path(path)
    pred = load_prediction(path)
    index = path.parent / "index.csv"
    if index.is_file():
        for r in read_index(index):
            if r["file"] == path.name:
                pred.update(written_at_commit=r["written_at_commit"],
                            what_model=r["what_model"])
    return pred


def compare(prediction_path: str | Path, run_dir: str | Path,
            tolerance: float = TOLERANCE) -> dict[str, Any]:
    """``claimcheck model RUN_DIR --before PREDICTION``: the prediction file (checked before
    the run is read) against the run, as rows, their summary and text lines."""
    pred = load_listed(prediction_path)
    run = run_steps.load(run_dir)
    extra = {k: pred[k] for k in ("written_at_commit", "what_model") if k in pred}
    rows = [{**r, **extra} for r in against(pred, run, tolerance)]
    return {"prediction": str(prediction_path), "run": run.name, "rows": rows,
            "summary": summary(rows, tolerance), "lines": render(rows, tolerance)}


def table(index_csv: str | Path, run_dirs: Sequence[str | Path],
          tolerance: float = TOLERANCE) -> list[dict[str, Any]]:
    """``data/derived/beforehand.csv``'s rows: every indexed prediction against each of
    ``run_dirs`` of its card, engine and protocol (a run's provenance is read first, its
    steps only when it matches), or listed :data:`NOT_MEASURED` when none is."""
    from claimcheck.runio.runload import read_provenance

    preds = indexed_predictions(index_csv)
    keys = {(p["card"], p["engine"], p["protocol"]) for p in preds}
    matching: dict[tuple[str, str, str], list[run_steps.RunData]] = {}
    for rd in sorted(Path(x) for x in run_dirs):
        prov = read_provenance(rd).raw
        k = (prov.get("card"), prov.get("engine"), prov.get("protocol"))
        if k in keys:
            matching.setdefault(k, []).append(run_steps.load(rd))
    rows = []
    for p in preds:
        extra = {"written_at_commit": p["written_at_commit"], "what_model": p["what_model"]}
        runs = matching.get((p["card"], p["engine"], p["protocol"]), [])
        got = ([r for run in runs for r in against(p, run, tolerance)] if runs
               else not_measured(p))
        rows += [{"prediction_file": r["prediction_file"], **extra, **r} for r in got]
    return rows


def write_table(index_csv: str | Path, run_dirs: Sequence[str | Path], out_csv: str | Path
                ) -> list[str]:
    """Write :func:`table` to ``out_csv`` (with its dtypes); one log line per prediction."""
    from claimcheck.report.tables import write_csv

    rows = table(index_csv, run_dirs)
    write_csv(rows, out_csv)
    return [summary_line(s) for s in summaries(rows)]


# ------------------------------------------------------------------ words

def _pct(v: float | None) -> str:
    return md.num(v, "{:+.1%}")


def _ctx(r: Mapping[str, Any]) -> str:
    return f"{int(r['input_len']):,} + {int(r['output_len']):,}"


def miss_words(m: Mapping[str, Any] | None) -> str:
    """'+9.5% on end to end at 48 streams of 12,000-token prompts'."""
    if not m:
        return "no miss to name (no error could be computed)"
    return (f"{m['error']:+.1%} on {METRIC_WORDS[m['metric']]} at {int(m['streams'])} streams "
            f"of {int(m['input_len']):,}-token prompts")


def summary_line(s: Mapping[str, Any]) -> str:
    """One line of a prediction's :func:`summary`: the file, the commit it was written at,
    the run it is set against and what it adds up to, with the load seconds per repeat."""
    head = (f"`{s['prediction_file']}` (written at commit {s.get('written_at_commit') or '?'}"
            + (f"; model: {s['what_model']}" if s.get("what_model") else "") + ")")
    if s["status"] == NOT_MEASURED:
        return (f"{head}: {NOT_MEASURED} (no run of {s['protocol']} on {s['engine']}, "
                f"{s['card']}); {s['predicted_steps']} steps predicted")
    n, tol = s["measured"], s["tolerance"]
    of = (f"{n} measured steps" if n == s["steps"]
          else f"{n} measurements ({s['steps']} steps x {s['repeats']} repeats)")
    dummy = " (dummy weights)" if s.get("weights") == "dummy" else ""
    miss = s.get("largest_miss")
    line = (f"{head} against {s['run']}{dummy}: {s['within']} of {of} within {tol:.0%} on "
            f"both end to end and decode aggregate, {s['within_e2e']} within {tol:.0%} on end "
            f"to end alone; mean |error| {md.num(s['mean_abs_e2e_error'], '{:.1%}')} end to "
            f"end, {md.num(s['mean_abs_decode_error'], '{:.1%}')} decode; largest miss "
            + (f"{miss_words(miss)} (step {miss['step']})" if miss else "none computed"))
    line += (f". Load per repeat: predicted {s['predicted_load_s_per_repeat']:,.0f} s (first "
             "send to last token as simulated; each step's client start-up and the engine "
             "start left out), measured "
             f"{s['measured_send_to_last_s_per_repeat']:,.0f} s first send to last token "
             f"summed over the steps and {s['measured_client_s_per_repeat']:,.0f} s of the "
             "clients' spans (their start-up included)")
    if s.get("run_duration_s"):
        line += (f"; the whole run, {s['repeats']} repeat(s): {s['run_duration_s']:,.0f} s "
                 "(engine start left out)")
    return line + "."


def step_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown step table of one prediction's rows: predicted / measured, each with
    its error, every tok/s column labelled."""
    head = ["step", "rep", "streams", "context per stream (in + out tokens)",
            "e2e aggregate tok/s pred / meas", "e2e err",
            "e2e per stream tok/s pred / meas", "decode aggregate tok/s pred / meas",
            "decode err", "median TPOT ms pred / meas", "median TTFT s pred / meas",
            f"within {TOLERANCE:.0%} on both"]
    body = []
    for r in rows:
        n = int(r["streams"])
        pe, me = number(r.get("predicted_e2e_tok_s")), number(r.get("measured_e2e_tok_s"))
        body.append([
            str(r["step"]), md.num(number(r.get("repeat")), "{:.0f}"), str(n), _ctx(r),
            f"{md.num(pe)} / {md.num(me)}", _pct(number(r.get("e2e_error"))),
            f"{md.num(None if pe is None else pe / n)} / "
            f"{md.num(None if me is None else me / n)}",
            f"{md.num(number(r.get('predicted_decode_tok_s')))} / "
            f"{md.num(number(r.get('measured_decode_tok_s')))}",
            _pct(number(r.get("decode_error"))),
            f"{md.num(number(r.get('predicted_median_tpot_ms')), '{:.2f}')} / "
            f"{md.num(number(r.get('measured_median_tpot_ms')), '{:.2f}')}",
            f"{md.num(number(r.get('predicted_median_ttft_s')), '{:.3f}')} / "
            f"{md.num(number(r.get('measured_median_ttft_s')), '{:.3f}')}",
            "yes" if flag(r.get("within")) else "no"])
    return md.table(head, body)


def legend(kind: str | None) -> str:
    """What every tok/s column of :func:`step_table` is."""
    return (f"Aggregates in tok/s summed over the streams ({relation_words(kind)}); per "
            "stream = aggregate / streams; context per stream = input + output tokens; end to "
            "end (e2e) = all output tokens / first send to last token (prefill included); "
            "decode = tokens after each request's first / time with any request decoding "
            "(first tokens and the time before them left out); error = predicted / measured "
            "- 1. Median TPOT: time per output token after the first.")


def appendix_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """"### Predicted before the run": one line per prediction file (its commit, its run,
    its summary), then each one's step table."""
    out = ["### Predicted before the run", "",
           "Predictions written and committed before the run they are set against "
           "(`data/raw/predictions/`, `claimcheck predict --json`); every measured number "
           "read off the run's token timeline as in the model table.", ""]
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["prediction_file"], r.get("run") or ""), []).append(r)
    out += [f"- {summary_line(summary(g))}" for g in groups.values()]
    kinds = sorted({str(g[0].get("kind")) for g in groups.values()
                    if g[0].get("status") != NOT_MEASURED})
    for k in kinds:
        words = legend(k if k != "None" else None)
        out.append(f"\nIn the step tables, {words[0].lower()}{words[1:]}")
    for (f, run), g in groups.items():
        if g[0].get("status") == NOT_MEASURED:
            continue
        dummy = " (dummy weights)" if g[0].get("weights") == "dummy" else ""
        out += ["", f"#### `{f}` against {run}{dummy}", "", step_table(g)]
    return "\n".join(out) + "\n"


def body_sentence(summary_rows: Sequence[Mapping[str, Any]]) -> str:
    """One sentence per engine (card and engine, first-seen order) from :func:`summary`
    rows: the last measured prediction listed for it leads (the index lists them in the
    order written); any other for the same engine is named in a clause with its own count.
    Every number from the rows."""
    groups: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for s in summary_rows:
        if s.get("status") == "measured":
            groups.setdefault((s["card"], s["engine"]), []).append(s)
    out = []
    for g in groups.values():
        lead, others = g[-1], g[:-1]
        fmt = (lead.get("weight_format") or "").upper() or lead["engine"]
        dummy = ", dummy weights" if lead.get("weights") == "dummy" else ""
        of = (f"{lead['measured']} {fmt} steps" if lead["measured"] == lead["steps"]
              else f"{lead['measured']} {fmt} measurements")
        rest = "".join(f"; the predictions of commit {o.get('written_at_commit') or '?'}"
                       f" ({o.get('what_model') or 'an earlier model'}) land within "
                       f"{o['tolerance']:.0%} on {o['within']} of {o['measured']}"
                       for o in others)
        out.append(
            f"Written before the {lead['protocol']} protocol ran (commit "
            f"{lead.get('written_at_commit') or '?'}), the model's predictions land within "
            f"{lead['tolerance']:.0%} of the measured end-to-end and decode speed on "
            f"{lead['within']} of {of} ({lead['engine']}{dummy}); its largest miss is "
            f"{miss_words(lead.get('largest_miss'))}{rest}.")
    return " ".join(out)


def render(rows: Sequence[Mapping[str, Any]], tolerance: float = TOLERANCE) -> list[str]:
    """Plain-text lines for ``claimcheck model RUN --before PRED``: the summary line, the
    legend and one line per row."""
    s = summary(rows, tolerance)
    lines = [summary_line(s).replace("`", ""), legend(s.get("kind")),
             f"{'step':>4} {'rep':>3} {'streams':>7} {'in+out':>11} {'pred e2e':>9} "
             f"{'meas e2e':>9} {'err':>6} {'e2e/stream p/m':>15} {'pred dec':>9} "
             f"{'meas dec':>9} {'err':>6} {'TPOT ms p/m':>13} {'TTFT s p/m':>13}  within"]
    for r in rows:
        n = int(r["streams"])
        pe, me = number(r["predicted_e2e_tok_s"]), number(r["measured_e2e_tok_s"])
        lines.append(
            f"{r['step']:>4} {r['repeat']:>3} {n:>7} "
            f"{int(r['input_len']):>6}+{int(r['output_len']):<4} {md.num(pe):>9} "
            f"{md.num(me):>9} {_pct(r['e2e_error']):>6} "
            f"{md.num(None if pe is None else pe / n):>7}/"
            f"{md.num(None if me is None else me / n):<7} "
            f"{md.num(r['predicted_decode_tok_s']):>9} "
            f"{md.num(r['measured_decode_tok_s']):>9} {_pct(r['decode_error']):>6} "
            f"{md.num(r['predicted_median_tpot_ms'], '{:.2f}'):>6}/"
            f"{md.num(r['measured_median_tpot_ms'], '{:.2f}'):<6} "
            f"{md.num(r['predicted_median_ttft_s'], '{:.3f}'):>6}/"
            f"{md.num(r['measured_median_ttft_s'], '{:.3f}'):<6}  "
            + ("yes" if r["within"] else "no"))
    return lines


def _step_row(rows: Sequence[Mapping[str, Any]], s: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
    """The table row of a summary's largest miss (same file, step and repeat)."""
    m = s.get("largest_miss") or {}
    return next((r for r in rows if r.get("prediction_file") == s["prediction_file"]
                 and r.get("step") == m.get("step") and r.get("repeat") == m.get("repeat")),
                None)


def body_paragraph(rows: Sequence[Mapping[str, Any]]) -> str:
    """The Update body's words on the predictions kept before a run, from the table rows
    (:func:`table`): per protocol, the latest-written predictions' count within the
    tolerance on both end to end and decode per weight format, the earlier predictions'
    counts, and each format's largest miss with its step's median TTFT and TPOT predicted
    against measured. No run or engine names (the appendix has them); '' when nothing
    kept before a run was measured."""
    sums = [s for s in summaries(rows) if s.get("status") == "measured"]
    if not sums:
        return ""
    out = []
    for proto in dict.fromkeys(s["protocol"] for s in sums):
        mine = [s for s in sums if s["protocol"] == proto]
        commits = list(dict.fromkeys(s.get("written_at_commit") or "?" for s in mine))
        lead = [s for s in mine if (s.get("written_at_commit") or "?") == commits[-1]]
        fmt = lambda s: (s.get("weight_format") or "").upper() or "?"  # noqa: E731
        counts = " and ".join(f"{s['within']} of {s['measured']} {fmt(s)} steps"
                              for s in lead)
        text = (f"Set against the predictions written before the {proto.replace('-', ' ')} "
                f"ran (commit {commits[-1]}), the measured steps land within "
                f"{lead[0]['tolerance']:.0%} on both end to end and decode on {counts}")
        for c in commits[:-1]:
            old = [s for s in mine if (s.get("written_at_commit") or "?") == c]
            text += (f" (the predictions of commit {c}, before its "
                     f"{'latest term' if len(commits) == 2 else 'later terms'}: "
                     + " and ".join(f"{s['within']} {fmt(s)}" for s in old) + ")")
        misses = []
        for s in lead:
            r = _step_row(rows, s)
            words = miss_words(s.get("largest_miss"))
            if r is not None and r.get("measured_median_ttft_s") is not None:
                first = ", the run's first step" if r["step"] == 0 else ""
                words += (f" ({fmt(s)}{first}:"
                          f" median TTFT {float(r['predicted_median_ttft_s']):.2f} s predicted, "
                          f"{float(r['measured_median_ttft_s']):.2f} s measured; median TPOT "
                          f"{float(r['predicted_median_tpot_ms']):.1f} ms against "
                          f"{float(r['measured_median_tpot_ms']):.1f})")
            misses.append(words)
        out.append(text + "; the largest misses are " + " and ".join(misses) + ".")
    return " ".join(out)
