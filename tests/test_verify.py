"""Verify mode (issue 19): a protocol cut to its sampled steps with every prediction kept
before measuring, and a finished run set against those predictions. The GPU part runs in
the CPU vLLM integration test (tests/integration); here on committed H200 runs (dummy
weights) and copies of them."""

from __future__ import annotations

import pytest

from claimcheck.cli import main
from claimcheck.config.configfiles import load_engines, load_protocols
from claimcheck.files.errors import InputError
from claimcheck.files.paths import ROOT
from claimcheck.predict import verify as vf
from claimcheck.runs.run import load_run
from tests.fabricate import copy_run, edit_json

ROWS = "h200-20261201-fp8-hyperqwen-dummy-16k-decode-rows"   # 16/24/32/40/48 rows x 3


@pytest.fixture(scope="module")
def committed(committed_runs):
    return list(committed_runs)


def test_plan_cuts_the_protocol_to_its_sample_and_keeps_every_prediction(committed):
    bend = load_protocols()["bend"]  # 96, 128, 192, 256, 384, 512 streams
    cut, rec = vf.plan(committed, "h200", "bf16-dummy-256", bend, 2, load_engines())
    # two steps evenly spread, the last included: the first and the last
    assert rec["sampled_steps"] == [0, 5] and rec["predicted_steps"] == [1, 2, 3, 4]
    assert [s.streams for s in cut.steps] == [96, 512] and cut.repeats == 1
    assert cut.name == "bend" and len(rec["steps"]) == 6
    assert all(s["predicted_e2e_tok_s"] > 0 for s in rec["steps"])
    assert rec["protocol_predicted_load_s"] > rec["verify_predicted_load_s"] > 0


def test_compare_sets_measured_against_the_kept_prediction(tmp_path, committed):
    proto = load_protocols()["decode-rows"]
    _, rec = vf.plan(committed, "h200", "fp8-hyperqwen-dummy-16k", proto, 5, load_engines())
    assert rec["sampled_steps"] == [0, 1, 2, 3, 4]
    # a stand-in for the run verify mode would write: the committed ladder with the record
    run = copy_run(tmp_path, ROWS)
    rec["steps"][2]["predicted_e2e_tok_s"] = 2000.0  # hand-set: 32 rows
    rec["steps"][2]["predicted_decode_tok_s"] = None
    edit_json(run / "provenance.json", lambda p: p.update(verify=rec))
    c = vf.compare(load_run(run))
    assert len(c["measured"]) == 15 and c["of_protocol"] == "decode-rows"
    row = next(r for r in c["measured"] if r["index"] == 2)
    from claimcheck.readings import definitions as d
    step = next(s for s in load_run(run).traces if s.record["dir"] == "02-c32-r1")
    measured = d.e2e_aggregate_tok_s(step.timeline)
    assert row["e2e_error"] == pytest.approx(2000.0 / measured - 1)
    assert 2100 < measured < 2200  # the committed 32-row step: about 2,140 tok/s e2e
    assert not row["within"]        # 2,000 against ~2,140 is off by more than 5%
    assert c["gpu_s"] > 0 and "GPU time: this run" in vf.render(c)[-1]


def test_compare_refuses_a_run_that_is_not_a_verify_run(committed):
    run = next(r for r in committed if r.name == ROWS)
    with pytest.raises(InputError, match="not a verify run"):
        vf.compare(run)


def test_measure_verify_without_calibration_is_refused_before_anything_starts(
        tmp_path, capsys):
    (tmp_path / "none").mkdir()
    code = main(["measure", "--card", "cpu", "--engine", "tiny-dense", "--engines-file",
                 str(ROOT / "envs/cpu/engines.yaml"), "--protocol", "ladder", "--verify", "1",
                 "--calibration-runs", str(tmp_path / "none"), "--runs-dir",
                 str(tmp_path / "runs")])
    assert code == 2
    assert "no committed run on card 'cpu'" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    assert main(["measure", "--card", "cpu", "--engine", "tiny-dense", "--engines-file",
                 str(ROOT / "envs/cpu/engines.yaml"), "--protocol", "ladder", "--verify",
                 "0"]) == 2
    assert "must be >= 1, got 0" in capsys.readouterr().err


def test_a_verify_record_that_does_not_fit_the_run_is_refused(tmp_path, committed):
    _, rec = vf.plan(committed, "h200", "fp8-hyperqwen-dummy-16k",
                     load_protocols()["decode-rows"], 2, load_engines())
    run = copy_run(tmp_path, ROWS)  # 5 steps, but the record samples 2
    edit_json(run / "provenance.json", lambda p: p.update(verify=rec))
    with pytest.raises(InputError, match=r"provenance.json: verify: its verify record samples "
                                         r"2 step\(s\), but the run has a step 2"):
        vf.compare(load_run(run))


def test_measure_verify_with_a_missing_calibration_folder(tmp_path, capsys):
    assert main(["measure", "--card", "cpu", "--engine", "tiny-dense", "--engines-file",
                 str(ROOT / "envs/cpu/engines.yaml"), "--protocol", "ladder", "--verify", "1",
                 "--calibration-runs", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: no such folder" in capsys.readouterr().err
