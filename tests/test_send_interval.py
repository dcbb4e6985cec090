"""The per-sequence cost priced in units of the load client's send interval: the interval
read off a hand-made timeline, the cost it sets in a hand-worked step, the refusals, and the
term read off the committed wave runs (docs/model.md, "The per-sequence cost in send
intervals")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from claimcheck.model import model as m
from claimcheck.model import simulator
from claimcheck.readings.timeline import RequestTimeline, Timeline
from tests.test_crossval import _toy  # 1 GB at 1 TB/s, 1 GFLOP a token at 100 TFLOP/s


def _req(start_s: float) -> RequestTimeline:
    return RequestTimeline(start_s=start_s, ttft_s=0.1, prompt_tokens=10,
                           token_times_s=(start_s + 0.1, start_s + 0.2), chunks=1)


def test_send_interval_is_the_first_waves_sends():
    """Three streams; sends at 1.000, 1.004 and 1.002 s (out of order), then a closed-loop
    fourth at 1.5 s: the first wave's interval is (1.004 - 1.000) / 2 = 2 ms, the fourth
    send not in it."""
    tl = Timeline(streams=3, requests=tuple(map(_req, (1.000, 1.004, 1.002, 1.5))))
    assert tl.send_interval_s == pytest.approx(0.002)
    assert Timeline(streams=1, requests=(_req(1.0), _req(1.3))).send_interval_s is None


def test_for_sends_prices_the_cost_at_the_steps_own_interval():
    """8 send intervals a request: a wave sent at 0.5 ms intervals costs 4 ms a prefilling
    request, so two 1,000-token prompts sharing one step take 10 + 10 + 2 x 4 = 28 ms."""
    shape, cal = _toy()
    per_send = replace(cal, sequence_per_send=8.0, sequence_prefill_s=0.001)
    at = per_send.for_sends(0.0005)
    assert at.sequence_prefill_s == pytest.approx(0.004)
    ttft = simulator.simulate(shape, at, [1000, 1000], [1, 1], 2).timeline.requests[0].ttft_s
    assert ttft == pytest.approx(0.028, abs=1e-9)
    # no interval (one stream, or a step not yet sent): the admission interval's cost kept
    assert per_send.for_sends(None) is per_send
    assert cal.for_sends(0.0005) is cal  # no per-send term: the interval changes nothing


@pytest.mark.parametrize("bad", [0.0, -0.001, float("nan"), float("inf")])
def test_for_sends_refuses_an_impossible_interval(bad):
    _, cal = _toy()
    with pytest.raises(m.ModelInputError, match=r"Calibration\.for_sends\.send_interval_s"):
        replace(cal, sequence_per_send=8.0).for_sends(bad)


def test_a_negative_per_send_cost_is_refused():
    _, cal = _toy()
    with pytest.raises(m.ModelInputError, match=r"Calibration\.sequence_per_send"):
        replace(cal, sequence_per_send=-1.0)


def test_sends_at_one_instant_have_no_interval():
    tl = Timeline(streams=2, requests=(_req(1.0), _req(1.0)))
    assert tl.send_interval_s is None


def test_the_h100_wave_runs_price_each_sequence_in_send_intervals(committed_runs):
    """The 256-slot BF16 engine's three H100 wave-admission runs (36 one-wave steps): 5.46
    send intervals a request (1.43 ms at the card's 0.262 ms admission interval); with the
    twenty-third session's run left out, 6.48 from the other two. Its 32-stream repeats,
    predicted at the other runs' 0.296 ms admission interval as before the run, miss by
    -8.5% to -8.7%; at their own 0.160-0.169 ms sends (the fastest of the three runs, known
    only once they ran) by -1.7% to -2.4%: the host's pace explains the miss."""
    from claimcheck.calibration.calibrate import choose_for
    from claimcheck.calibration.calibration import calibration
    from claimcheck.predict.modeltable import step_rows

    runs = [r for r in committed_runs if r.provenance.started_utc < "2026-12-07T12:00"]
    name = "h100-20261207-bf16-dummy-256-wave-admission"
    target = next(r for r in runs if r.name == name)
    cal = calibration(choose_for(target, runs), "bf16")
    assert cal.sequence_per_send == pytest.approx(5.46, abs=0.005)
    assert cal.sequence_prefill_s == pytest.approx(1.43e-3, abs=0.005e-3)
    assert "5.46 x its wave's send interval" in cal.sequence_prefill_source
    others = [r for r in runs if r is not target]
    left_out = calibration(choose_for(target, others), "bf16")
    assert left_out.sequence_per_send == pytest.approx(6.48, abs=0.005)
    assert left_out.admission_interval_s == pytest.approx(0.296e-3, abs=0.0005e-3)
    rows = [r for r in step_rows(target, target.engine[0], left_out, as_sent=True)
            if r["streams"] == 32]
    assert len(rows) == 3
    assert all(-0.088 < r["e2e_error"] < -0.084 for r in rows)
    assert all(-0.025 < r["as_sent_e2e_error"] < -0.016 for r in rows)
