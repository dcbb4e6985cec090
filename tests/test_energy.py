"""One energy per step (readings.energy): telemetry over the load window, else the NVML counter,
and every table of the report divides by that one figure."""

from types import SimpleNamespace

import pytest

from claimcheck.files.paths import RUNS
from claimcheck.readings.energy import COUNTER, TELEMETRY, StepEnergy, step_energy
from claimcheck.runs.run import load_run
from claimcheck.update import sections

GATE = "h200-20261129-bf16-dummy-16k-serving-gate"


def test_telemetry_first_then_the_counter_then_none():
    flat = [(0.0, 100.0), (2.0, 100.0)]  # 100 W for 2 s = 200 J
    assert step_energy({"energy": {"joules": 999.0}}, flat, 0.0, 2.0) == StepEnergy(
        pytest.approx(200.0), TELEMETRY)
    # samples that start after the window opens do not cover it: the counter, said so
    late = [(0.5, 100.0), (2.0, 100.0)]
    assert step_energy({"energy": {"joules": 999.0}}, late, 0.0, 2.0) == StepEnergy(999.0, COUNTER)
    assert step_energy({}, [], 0.0, 2.0) == StepEnergy(None, None)
    assert step_energy({"energy": {"joules": 0}}, [], 0.0, 2.0) == StepEnergy(None, None)


def test_every_column_of_a_committed_run_divides_by_the_one_energy():
    run = load_run(RUNS / GATE)
    assert run.traces
    for s, cols in zip(run.traces, run.rows, strict=True):
        assert s.energy_source == TELEMETRY  # every committed step's window is covered
        assert cols["energy_source"] == TELEMETRY
        assert cols["energy_j"] == s.energy_j
        want = s.timeline.output_tokens / s.energy_j
        assert cols["tokens_per_joule"] == pytest.approx(want)
        assert "tok_s_per_measured_w" not in cols  # one column: tokens_per_joule
    first = run.traces[0]  # the first call of the client process: its start-up is left out
    assert (first.record["step"], first.record["repeat"]) == (0, 1)
    assert first.energy_j < first.record["energy"]["joules"]


def test_the_gate_sentence_names_each_source_and_the_fallbacks_steps():
    def run(*sources):
        return SimpleNamespace(rows=[{"status": "complete", "energy_source": x}
                                     for x in sources])

    assert sections.energy_words([run(TELEMETRY, TELEMETRY)]) == (
        "board power (1 Hz telemetry) integrated over the step's load window")
    assert sections.energy_words([run(TELEMETRY), run(COUNTER)]) == (
        "board power (1 Hz telemetry) integrated over the step's load window and NVML "
        "energy counter over the whole client call, start-up included (1 step, where "
        "telemetry does not cover the load window)")
    assert sections.energy_words([run(None)]) == "board energy (none recorded)"
