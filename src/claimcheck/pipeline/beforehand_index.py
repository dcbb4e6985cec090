"""The kept predictions' index and the pipeline's table: ``data/raw/predictions/index.csv``
read and checked, every prediction it lists loaded, and ``data/derived/beforehand.csv``
(every indexed prediction against each run of its card, engine and protocol, by
:func:`claimcheck.predict.beforehand.against`); ``claimcheck model RUN --before PRED``
(:func:`compare`). I/O at this edge; the arithmetic is :mod:`claimcheck.predict.beforehand`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.files.gitfiles import at_commit, commit_time
from claimcheck.files.readers import read_csv_lines
from claimcheck.physics.cards import Card
from claimcheck.predict.beforehand import (
    against,
    check_matches,
    load_prediction,
    not_measured,
    summaries,
    summary,
)
from claimcheck.runs.run import Run, load_run
from claimcheck.update.beforehand_words import render, summary_line
from claimcheck.verdicts.verdicts import TOLERANCE

INDEX_COLUMNS = ("file", "protocol", "engine", "card", "written_at_commit", "what_model")
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


def read_index(path: str | Path) -> list[dict[str, str]]:
    """``data/raw/predictions/index.csv``, checked: its columns, a file that exists beside
    it, a commit of 7-40 hex digits, no file twice, and each file's bytes those its commit
    holds (where git can read that commit: a clone without it, or a copy without git,
    leaves this one check out); errors name the file, line and column."""
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
        at = at_commit(path.parent / r["file"], r["written_at_commit"])
        if at.checked and (not at.commit_found or at.data is None):
            raise InputError(str(path), f"{r['file']}: commit {r['written_at_commit']} does "
                             "not hold it: a kept prediction is committed before its run",
                             line=line, key="written_at_commit")
        if at.data is not None and at.data != (path.parent / r["file"]).read_bytes():
            raise InputError(str(path), f"{r['file']} differs from the bytes commit "
                             f"{r['written_at_commit']} holds: a kept prediction is not "
                             "edited after it is written", line=line, key="file")
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
    """:func:`~claimcheck.predict.beforehand.load_prediction`, with its
    ``written_at_commit`` and ``what_model`` when an ``index.csv`` beside it lists it
    (``claimcheck model --before``)."""
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
            tolerance: float = TOLERANCE, cards: Mapping[str, Card] | None = None
            ) -> dict[str, Any]:
    """``claimcheck model RUN_DIR --before PREDICTION``: the prediction file (checked before
    the run is read) against the run, as rows, their summary and text lines."""
    pred = load_listed(prediction_path)
    run = load_run(run_dir, cards)
    extra = {k: pred[k] for k in ("written_at_commit", "what_model") if k in pred}
    rows = [{**r, **extra} for r in against(pred, run, tolerance)]
    return {"prediction": str(prediction_path), "run": run.name, "rows": rows,
            "summary": summary(rows, tolerance), "lines": render(rows, tolerance)}


def started_before(run: Run, written: str | None) -> bool:
    """Whether ``run`` started before the prediction's commit (``written``, ISO 8601, from
    git): such a run was measured before the prediction existed, so it is no test of it.
    False where git cannot date the commit (a copy without git: every run of the
    prediction's card, engine and protocol is set against it)."""
    started = run.provenance.started_utc
    if written is None or not started:
        return False
    return datetime.fromisoformat(started) < datetime.fromisoformat(written)


def its_shape(prediction: Mapping[str, Any], run: Run) -> bool:
    """Whether ``run``'s steps have the prediction's streams, requests and lengths
    (:func:`~claimcheck.predict.beforehand.check_matches` passes). Where git cannot date the
    prediction, a run of its card, engine and protocol measured at other lengths (the
    protocol as it stood before a change) cannot be the run it was written for, so it is not
    set against it."""
    try:
        check_matches(prediction, run)
    except InputError:
        return False
    return True


def table(index_csv: str | Path, run_dirs: Sequence[str | Path],
          tolerance: float = TOLERANCE, cards: Mapping[str, Card] | None = None
          ) -> list[dict[str, Any]]:
    """``data/derived/beforehand.csv``'s rows: every indexed prediction against each of
    ``run_dirs`` of its card, engine and protocol (a run's provenance is read first, its
    steps only when it matches) that did not start before the prediction's commit (where
    git cannot date that commit, each such run of the prediction's step shapes:
    :func:`its_shape`), or listed :data:`NOT_MEASURED` when none is."""
    from claimcheck.runs.runload import read_provenance

    preds = indexed_predictions(index_csv)
    keys = {(p["card"], p["engine"], p["protocol"]) for p in preds}
    matching: dict[tuple[str, str, str], list[Run]] = {}
    for rd in sorted(Path(x) for x in run_dirs):
        prov = read_provenance(rd).raw
        k = (prov.get("card"), prov.get("engine"), prov.get("protocol"))
        if k in keys:
            matching.setdefault(k, []).append(load_run(rd, cards))
    written = {c: commit_time(Path(index_csv), c) for c in {p["written_at_commit"] for p in preds}}
    rows = []
    for p in preds:
        extra = {"written_at_commit": p["written_at_commit"], "what_model": p["what_model"]}
        when = written[p["written_at_commit"]]
        runs = [r for r in matching.get((p["card"], p["engine"], p["protocol"]), [])
                if not started_before(r, when) and (when is not None or its_shape(p, r))]
        got = ([r for run in runs for r in against(p, run, tolerance)] if runs
               else not_measured(p))
        rows += [{"prediction_file": r["prediction_file"], **extra, **r} for r in got]
    return rows


def write_table(index_csv: str | Path, run_dirs: Sequence[str | Path], out_csv: str | Path,
                user_cards: str | None = None) -> list[str]:
    """Write :func:`table` to ``out_csv`` (with its dtypes); one log line per prediction.
    Each run's card is read from the registry and ``user_cards`` merged over it."""
    from claimcheck.physics.cardfiles import load_cards
    from claimcheck.runs.tables import write_csv

    rows = table(index_csv, run_dirs, cards=load_cards(user_path=user_cards))
    write_csv(rows, out_csv)
    return [summary_line(s) for s in summaries(rows)]
