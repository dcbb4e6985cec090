"""The vectorised fastest window (readings.definitions.fastest_window) against the per-start
bisect it replaced, on hand-made times and on every committed run's timelines."""

from __future__ import annotations

import bisect
from pathlib import Path

import pytest

from claimcheck.readings import definitions as d
from claimcheck.readings.timeline import Timeline, request_timeline

RUNS = Path(__file__).resolve().parents[1] / "data" / "raw" / "runs"


def bisect_window(times: list[float], window_s: float) -> tuple[float, int]:
    """The implementation before vectorising: try every token's arrival as a start."""
    best_t, best_n = times[0], 0
    for i, t in enumerate(times):
        n = bisect.bisect_left(times, t + window_s, lo=i) - i
        if n > best_n:
            best_t, best_n = t, n
    return best_t, best_n


@pytest.mark.parametrize(("times", "window_s", "expected"), [
    # 3 in [0.0, 1.0); the end is open, so 1.0 is not in the first window.
    ([0.0, 0.5, 0.9, 1.0], 1.0, (0.0, 3)),
    # Tie between the windows at 0.0 and 2.0 (2 each): the first start wins.
    ([0.0, 0.3, 2.0, 2.1], 1.0, (0.0, 2)),
    # Repeated arrivals (a chunk of 3 tokens at 0.6) count each token.
    ([0.5, 0.6, 0.6, 0.6, 0.8], 0.15, (0.5, 4)),
    # The best window starts late.
    ([0.0, 1.5, 1.6, 1.7, 1.8], 0.5, (1.5, 4)),
    # One token.
    ([3.25], 1.0, (3.25, 1)),
    # A zero-length window holds nothing: (first time, 0).
    ([0.0, 1.0], 0.0, (0.0, 0)),
])
def test_hand_made_windows(times, window_s, expected):
    assert d.window_with_most(times, window_s) == expected
    assert bisect_window(times, window_s) == expected


def test_timeline_window_counts_tokens_not_chunks():
    # One request, tokens at 0.5 | 0.6 0.6 0.6 | 0.8 (middle chunk carries 3 tokens).
    tl = Timeline(streams=1, requests=(
        request_timeline(0.0, 0.5, [0.1, 0.2], 5, 100, [1, 3, 1]),))
    assert d.fastest_window(tl, 0.15) == (pytest.approx(0.5), 4)
    assert d.fastest_window(tl, 1.0) == (pytest.approx(0.5), 5)


def test_empty_times_still_refused():
    with pytest.raises(IndexError):
        d.window_with_most([], 1.0)


def _committed_timelines(runs):
    for run in runs:  # each run's timelines as runs.run.load_run read them
        for step in run.traces:
            if step.timeline.requests:
                yield f"{run.path.name}/{step.record['dir']}", step.timeline


@pytest.mark.data
def test_equals_bisect_on_every_committed_timeline(committed_runs):
    seen = 0
    for where, tl in _committed_timelines(committed_runs):
        times = tl.token_times()
        if not times:
            continue
        assert d.fastest_window(tl) == bisect_window(times, 1.0), where
        seen += 1
    assert seen >= 50
