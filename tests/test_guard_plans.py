"""Options and plans that are checked (issue 26 item 5): ``predict`` never borrows a run of
another parallel layout and says the layout it borrows only when it is the same, ``predict
--verify`` plans only calibration steps that fit the engine, ``measure`` refuses a protocol
citing a claim id the registry lacks (as the pipeline's registry_check does), and
``roofline --rows`` past the model's positions is refused naming the option."""

import json

from claimcheck.cli import main
from claimcheck.config.configfiles import load_engines
from claimcheck.files.paths import CONFIG
from claimcheck.predict import protocolpredict
from claimcheck.runs.run import load_runs
from tests._cli import QWEN, cli, one_line_error
from tests.fabricate import LADDER, copy_run, edit_json
from tests.test_runner_faults import fake_engine_env, measure

TP2 = "bf16-dummy-16k-tp2"  # config/engines.yaml: tensor_parallel_size 2, no run


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_predict_refuses_to_borrow_a_one_gpu_run_for_a_tp2_engine(capsys):
    # main borrowed h200-20261129-bf16-dummy-hyperqwen-batch (1 GPU) and said "same ...,
    # tensor_parallel_size"; every committed run is on one GPU
    assert main(["predict", "--card", "h200", "--engine", TP2, "--protocol", "ladder"]) == 2
    assert _one_line(capsys) == (
        f"claimcheck: error: --engine: no committed run of engine '{TP2}' on h200, nor of an "
        "engine that differs from it only in max_num_seqs and max_model_len (model, weights, "
        "weight_format, quantization, kv_cache_dtype, mamba_ssm_cache_dtype, prefix_caching "
        "and the parallel layout, tensor_parallel_size 2, equal)")


def test_a_tp2_engine_borrows_only_a_tp2_run_and_says_so(tmp_path):
    """The ladder run recorded as if on two GPUs (engine other-tp2) beside the one-GPU
    original: the TP=2 engine's shape and calibration come from the copy only."""
    name = "h200-20261129-other-tp2-ladder"
    run = copy_run(tmp_path, LADDER, name)
    copy_run(tmp_path, LADDER)

    def two(p):
        p["engine"] = "other-tp2"
        p["engine_config"].update(name="other-tp2", tensor_parallel_size=2)
    edit_json(run / "provenance.json", two)
    runs = load_runs(tmp_path / "runs")
    pred = protocolpredict.predict_protocol(runs, "h200", TP2, _ladder(), load_engines())
    out = pred.report
    assert out["engine_run"].startswith(f"{name} (engine other-tp2; {TP2} has no run: same ")
    assert "same parallel layout (tensor_parallel_size 2)" in out["engine_run"]
    picks = [pred.choice.bandwidth, pred.choice.overhead]
    assert {p.run.name for p in picks} == {name}


def test_a_one_gpu_twin_is_said_as_one_gpu(committed_runs):
    """An engine like bf16-dummy but unmeasured: its twin is a one-GPU run and the header
    says so, not "same tensor_parallel_size"."""
    import dataclasses
    engines = load_engines()
    spec = dataclasses.replace(engines["bf16-dummy"], name="bf16-dummy-new")
    out = protocolpredict.predict_protocol(list(committed_runs), "h200", "bf16-dummy-new",
                                           _ladder(),
                                           {**engines, "bf16-dummy-new": spec}).report
    assert "same parallel layout (one GPU)" in out["engine_run"]
    assert "tensor_parallel_size" not in out["engine_run"]


def _ladder():
    from claimcheck.config.configfiles import get_protocol
    return get_protocol("ladder")


def test_verify_plans_only_calibration_steps_that_fit(capsys):
    # bf16-dummy: max_model_len 4096; its compute calibration is the 16k engine's 7,681-token
    # prompts (+ 2 output + 64 margin = 7,747 > 4,096): measured there, not planned here
    assert main(["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol",
                 "ladder", "--verify", "1", "--json"]) == 0
    v = json.loads(capsys.readouterr().out)["verify"]
    assert [(c["role"], c["input_len"], c["output_len"]) for c in v["calibration_steps"]] \
        == [("bandwidth", 128, 512)]
    assert all(c["input_len"] + c["output_len"] + 64 <= 4096 for c in v["calibration_steps"])
    [left] = v["calibration_left_out"]
    assert left["role"] == "compute" and left["reason"] == (
        "7681 + 2 tokens + 64 margin exceed max_model_len 4096")
    assert left["measured_in"].startswith("h200-20261129-bf16-dummy-16k-single-stream-2")
    # the plan's load counts the bandwidth step (and the sampled step), not the 7,683-token one
    assert v["verify_load_s"] < 182


def test_measure_refuses_a_protocol_citing_an_unknown_claim(tmp_path):
    tmp, env = fake_engine_env(tmp_path)
    pfile = tmp / "protocols.yaml"
    text = (CONFIG / "protocols.yaml").read_text()
    cited = "source_claims: [tensorfold-764-decode,"
    assert text.count(cited) == 1
    pfile.write_text(text.replace(cited, "source_claims: [no-such-claim, tensorfold-764-"
                                         "decode,"))
    r = measure(tmp, env, "lanes", extra=("--protocols-file", str(pfile)))
    assert r.returncode == 2, r.stderr
    assert one_line_error(r) == (f"claimcheck: error: {pfile}: protocols.lanes.source_claims:"
                                 " unknown claim ids ['no-such-claim']")
    assert not (tmp / "runs").exists() or not any((tmp / "runs").iterdir())


def test_roofline_rows_past_the_models_positions_names_the_option(tmp_path):
    # main: "roofline: result points.0.step_ms is inf ..." naming no option
    base = ("roofline", "--config", str(QWEN), "--card", "h200", "--weights-format", "bf16",
            "--tau", "1")
    assert one_line_error(cli(*base, "--rows", "1e300")) == (
        "claimcheck: error: --rows: 1e+300 positions verified per stream per step exceeds "
        "the model's max_position_embeddings 262,144 (a stream cannot verify more positions "
        "than it can hold)")
    assert cli(*base, "--rows", "262144").returncode == 0
