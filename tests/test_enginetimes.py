"""The engine's own timing of a step, from vLLM's histograms' sums and counts read before
and after the client's run (readings.enginetimes): the arithmetic by hand, the real
exposition text, and the steps recorded before the histograms were kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimcheck.files.paths import RUNS
from claimcheck.readings.enginetimes import COLUMNS, engine_time_columns
from claimcheck.readings.promtext import counters

METRICS = Path(__file__).parent / "data" / "vllm026-metrics-mtp1-forced2.txt"
E = '{engine="0"}'


def _reading(ttft=(10.0, 100), queue=(1.0, 100), prefill=(2.0, 100), steps=(50_000, 1000)):
    return {f"vllm:time_to_first_token_seconds_sum{E}": ttft[0],
            f"vllm:time_to_first_token_seconds_count{E}": ttft[1],
            f"vllm:request_queue_time_seconds_sum{E}": queue[0],
            f"vllm:request_queue_time_seconds_count{E}": queue[1],
            f"vllm:request_prefill_time_seconds_sum{E}": prefill[0],
            f"vllm:request_prefill_time_seconds_count{E}": prefill[1],
            f"vllm:iteration_tokens_total_sum{E}": steps[0],
            f"vllm:iteration_tokens_total_count{E}": steps[1]}


def test_a_steps_engine_times_by_hand():
    # 4 requests in the step: TTFT 0.9 s in all (225 ms each), 0.2 s queued (50 ms),
    # 0.4 s from first scheduled to first token (100 ms); 3 engine steps of 800 tokens
    before = _reading()
    after = _reading(ttft=(10.9, 104), queue=(1.2, 104), prefill=(2.4, 104),
                     steps=(50_800, 1003))
    got = engine_time_columns({"before": {"counters": before}, "after": {"counters": after}})
    assert got["server_requests"] == 4 and got["engine_steps"] == 3
    assert got["engine_tokens_per_step"] == pytest.approx(800 / 3)
    assert got["server_ttft_ms"] == pytest.approx(225.0)
    assert got["server_queue_ms"] == pytest.approx(50.0)
    assert got["server_prefill_ms"] == pytest.approx(100.0)


def test_no_reading_or_no_histogram_gives_none():
    assert engine_time_columns(None) == dict.fromkeys(COLUMNS)
    failed = {"before": {"counters": _reading()}, "after": None}
    assert engine_time_columns(failed) == dict.fromkeys(COLUMNS)
    # a step recorded when only the counters (_total) were kept
    old = {"before": {"counters": {f"vllm:prompt_tokens_total{E}": 0.0}},
           "after": {"counters": {f"vllm:prompt_tokens_total{E}": 800.0}}}
    assert engine_time_columns(old) == dict.fromkeys(COLUMNS)


def test_an_impossible_reading_names_the_histogram():
    before = _reading()
    with pytest.raises(ValueError, match="went down"):  # a restarted server
        engine_time_columns({"before": {"counters": before},
                             "after": {"counters": _reading(ttft=(9.0, 104))}})
    with pytest.raises(ValueError, match=r"time_to_first_token_seconds_sum.* moved by inf "
                                         "over the step, not a finite number"):
        engine_time_columns({"before": {"counters": before},
                             "after": {"counters": _reading(ttft=(float("inf"), 104))}})


def test_the_real_exposition_keeps_histogram_sums_and_counts():
    c = counters(METRICS.read_text())
    # by hand from the file (the speculation run's server at its end)
    assert c[f"vllm:time_to_first_token_seconds_sum{E}"] == pytest.approx(155.5492079257965)
    assert c[f"vllm:time_to_first_token_seconds_count{E}"] == 212.0
    assert c[f"vllm:iteration_tokens_total_count{E}"] == 2580.0
    assert not any("_bucket" in k for k in c)
    assert "vllm:num_requests_running" not in "".join(c)  # a gauge: not kept


def test_committed_steps_predate_the_histograms():
    from claimcheck.runs.run import load_run
    run = load_run(RUNS / "h200-20261205-w4a8-int8g-dummy-humming-16k-wave-admission")
    assert set(COLUMNS) <= set(run.table.columns)
    assert run.table[list(COLUMNS)].isna().all().all()


def test_a_run_with_an_impossible_histogram_names_its_file_and_step(tmp_path):
    from claimcheck.files.errors import InputError
    from claimcheck.runs.run import load_run
    from tests.fabricate import copy_run, edit_json

    name = "h200-20261205-w4a8-int8g-dummy-humming-16k-wave-admission"
    run = copy_run(tmp_path, name)

    def poison(after):
        def edit(prov):
            sc = prov["steps"][0]["server_counters"]
            sc["before"]["counters"].update(_reading())
            sc["after"]["counters"].update(after)
        return edit
    # a TTFT sum that went down over the step (a restarted server's reading)
    edit_json(run / "provenance.json", poison(_reading(ttft=(9.5, 116))))
    with pytest.raises(InputError) as e:
        load_run(run)
    assert str(e.value).startswith(str(run / "provenance.json"))
    assert "server_counters" in str(e.value) and "step 00-c16-r1" in str(e.value)
    assert "time_to_first_token_seconds_sum" in str(e.value) and "went down" in str(e.value)
    # an infinite one is refused by the record's reader, before any column
    edit_json(run / "provenance.json", poison(_reading(ttft=(float("inf"), 116))))
    with pytest.raises(InputError, match="not valid JSON .Infinity is not a JSON number."):
        load_run(run)
