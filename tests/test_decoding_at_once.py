"""How many requests decode at one moment (``most_decoding_at_once``): below the step's
streams, some of them never decoded beside the others, and a figure that multiplies one
request's speed by the streams sums requests that were waiting."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimcheck.figures import definitions_fig
from claimcheck.readings.timeline import most_at_once
from claimcheck.runs.run import load_run

RUNS = Path(__file__).resolve().parents[1] / "data" / "raw" / "runs"
POOL_RUN = RUNS / "h100-20261206-bf16-dummy-256-decode-rows-to-256"


@pytest.mark.parametrize(("intervals", "most"), [
    ([], 0),
    ([(0.0, 2.0)], 1),
    ([(0.0, 2.0), (1.0, 3.0), (2.5, 4.0)], 2),  # the first closes before the third opens
    ([(0.0, 1.0), (1.0, 2.0)], 1),  # half-open: one closing as the next opens
    ([(0.0, 5.0), (1.0, 4.0), (2.0, 3.0)], 3),
    ([(1.0, 1.0), (0.0, 2.0)], 1),  # an empty interval is never open
])
def test_most_at_once_by_hand(intervals, most):
    assert most_at_once(intervals) == most


def test_the_pool_limited_step_held_what_the_engine_logged():
    """The engine's own log line in that step: "Running: 90 reqs, Waiting: 70 reqs"
    (data/raw/runs/SESSIONS.md); the 64-stream step all decoded together."""
    run = load_run(POOL_RUN)
    got = {(r["step"], r["streams"]): r["most_decoding_at_once"]
           for r in run.table.to_dict("records")}
    assert got[(0, 64)] == 64
    assert got[(1, 160)] == 90
    assert "Running: 90 reqs, Waiting: 70 reqs" in (POOL_RUN / "server.log").read_text()


def test_the_definitions_figure_says_which_bars_sum_streams_that_never_ran_together():
    run = load_run(POOL_RUN)
    step = next(i for i, t in enumerate(run.traces) if t.record["streams"] == 160)
    note = definitions_fig.figure(run, step).axes[0].get_title(loc="left").replace("\n", " ")
    assert "at most 90 of the 160 decoding at once" in note
    assert "streams x 1000 / median TPOT" in note.split("at most 90")[1]
    quiet = definitions_fig.figure(run, 0).axes[0].get_title(loc="left")
    assert "at once" not in quiet.replace("\n", " ")
