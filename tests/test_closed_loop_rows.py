"""The decode-row term's last resort (issue 43): an engine with no one-wave decode step of
its own or of its weight format on the card takes the term from its own closed-loop steps of
short prompts, said so; with a one-wave decode run it does not."""

import dataclasses
import statistics

import pytest

from claimcheck.calibration import calibrate, calibration
from claimcheck.calibration.calibrate import run_key
from claimcheck.readings import definitions as d

ENGINE = "w4a16-dummy-marlin-16k"
ROWS_RUN = "h200-20261204-w4a16-dummy-marlin-16k-decode-rows-to-64"
LINES_RUN = "h200-20261204-w4a16-dummy-marlin-16k-context-ladder"
"""One-wave steps at three or more contexts per stream count: KV lines, whose intercepts
come before the closed loops."""
NEITHER = (ROWS_RUN, LINES_RUN)


@pytest.fixture(scope="module")
def runs(committed_runs):
    return list(committed_runs)


def _choose(runs, all_runs):
    target = next(r for r in all_runs if r.name == ROWS_RUN)
    return calibrate.choose(runs, "h200", ENGINE, run_key(target)[2],
                            layout=calibrate.run_layout(target),
                            version=calibrate.run_version(target))


def test_one_wave_rows_first(runs):
    c = _choose(runs, runs)
    assert not c.rows_closed_loop
    assert {p.run.name for p in c.rows} == {ROWS_RUN}
    assert sorted({p.step.timeline.streams for p in c.rows}) == [8, 24, 40, 56, 64]


def test_kv_lines_come_before_the_closed_loops(runs):
    # without its decode-row run, the engine's context ladder (8, 24, 48 streams at five
    # prompt lengths) gives the rows by its lines' intercepts
    c = _choose([r for r in runs if r.name != ROWS_RUN], runs)
    assert c.rows_from_lines and not c.rows_closed_loop
    assert {p.run.name for p in c.rows} == {LINES_RUN}
    assert sorted({p.step.timeline.streams for p in c.rows}) == [8, 24, 48]


def test_closed_loop_rows_when_no_one_wave_step(runs):
    c = _choose([r for r in runs if r.name not in NEITHER], runs)
    assert c.rows_closed_loop
    # the engine's ladder (8, 16, 32, 64 streams; its one-stream step is no row count) and
    # its batch run (64 streams, 256 requests): more requests than streams, 128-token prompts
    assert {p.run.name for p in c.rows} == {
        "h200-20261204-w4a16-dummy-marlin-16k-ladder",
        "h200-20261204-w4a16-dummy-marlin-16k-hyperqwen-batch"}
    assert sorted({p.step.timeline.streams for p in c.rows}) == [8, 16, 32, 64]
    assert all(len(p.step.timeline.requests) > p.step.timeline.streams for p in c.rows)
    assert "closed-loop short-prompt" in c.rows[0].why
    cal = calibration.calibration(c, "bf16")
    assert "closed-loop short-prompt steps" in cal.row_factor_source
    # each factor: the step's measured median TPOT over the model's simulated one of the
    # same closed loop (no factors), the median where several steps share a stream count
    base = calibration.calibration(calibrate.choose(
        [r for r in runs if r.name not in NEITHER], "h200", ENGINE, "w4a16", with_rows=False,
        layout=calibrate.run_layout(c.rows[0].run),
        version=calibrate.run_version(c.rows[0].run)), "bf16")
    base = dataclasses.replace(base, admission_interval_s=cal.admission_interval_s)
    want = {}
    for p in c.rows:
        tl = p.step.timeline
        shape, _ = p.run.engine
        pred, _ = calibration.predicted_step(
            shape, base, [r.prompt_tokens for r in tl.requests],
            [r.output_tokens for r in tl.requests], tl.streams)
        want.setdefault(tl.streams, []).append(
            statistics.median(d.tpots_ms(tl)) / pred["predicted_median_tpot_ms"])
    got = dict(cal.row_factors)
    assert set(got) == set(want)
    for n, v in want.items():
        assert got[n] == pytest.approx(statistics.median(v), rel=1e-9)
    # Marlin on Hopper: its 64-stream step costs more than the model's max(memory, compute)
    assert got[64] > 1.1
