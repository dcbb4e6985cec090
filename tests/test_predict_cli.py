"""`claimcheck predict`: every protocol on every engine with committed runs, a protocol file
it has never seen (hand-made runs and protocols), verify mode and bad input."""

from __future__ import annotations

import json
import statistics

import pytest

from claimcheck.cli import main
from claimcheck.config.configfiles import load_protocols
from claimcheck.files.paths import RUNS
from claimcheck.predict import protocolpredict
from claimcheck.runs import runfiles
from tests.fabricate import copy_run

LADDER = "h200-20261129-bf16-dummy-ladder"
KEYS = ("streams", "requests", "predicted_e2e_tok_s", "predicted_decode_tok_s",
        "predicted_median_tpot_ms", "predicted_median_ttft_s")

NEW_PROTOCOLS = """\
protocols:
  never-seen:
    description: a protocol no one has run (test)
    source_claims: [none]
    metrics: [e2e_aggregate]
    dataset: random
    input_len: 128
    output_len: 512
    steps:
      - {streams: 1, requests: 2, input_len: 128, output_len: 2}
      - {streams: 1, requests: 4}
      - {streams: 4, requests: 8}
      - {streams: 12, requests: 24}
      - {streams: 24, requests: 48}
      - {streams: 40, requests: 80}
"""


@pytest.fixture(scope="module")
def committed(committed_runs):
    return list(committed_runs)


def test_every_protocol_on_every_engine_with_committed_runs(committed):
    protos = load_protocols()
    # a drafting engine has its own model (tests/test_specpredict.py)
    # (and an engine whose one run measured no step prices nothing: w4a8-dummy-humming-16k)
    engines = sorted({r.provenance.engine for r in committed if not r.drafts and r.traces})
    assert len(engines) == 10  # bf16-dummy(-16k, -16k-vllm033, -256),
    # fp8-hyperqwen-dummy(-16k, -16k-vllm033), w4a16-dummy-marlin-16k and -machete-16k,
    # w4a8-int8g-dummy-humming-16k
    for e in engines:
        for name, proto in protos.items():
            out = protocolpredict.predict_protocol(committed, "h200", e, proto).report
            assert len(out["steps"]) == len(proto.steps), (e, name)
            for r, st in zip(out["steps"], proto.steps, strict=True):
                assert all(k in r for k in KEYS)
                if not r["fits"]:  # only a prompt longer than the engine's max_model_len
                    assert "max_model_len" in r["note"] and st.input_len + st.output_len > 4000
                    continue
                assert r["predicted_e2e_tok_s"] > 0 and r["predicted_median_ttft_s"] > 0
                # a held-prefill step (2 tokens out) has no decode; every other has one
                assert (r["predicted_decode_tok_s"] is None) == (st.output_len <= 2)
                # the aggregate shared by the streams is never above streams x one stream's
                # decode at that TPOT (tok/s = streams x 1000 / TPOT)
                if r["predicted_median_tpot_ms"] and st.output_len > 2:
                    assert r["predicted_e2e_tok_s"] <= (
                        st.streams * 1000 / r["predicted_median_tpot_ms"] * 1.0001)


def test_measured_steps_carry_their_error(committed):
    out = protocolpredict.predict_protocol(committed, "h200", "bf16-dummy",
                                           load_protocols()["ladder"]).report
    by = {r["streams"]: r for r in out["steps"]}
    assert by[1]["calibration_step"] and not by[8]["calibration_step"]
    assert by[8]["measured_in"] == [f"{LADDER} step 1 repeat 1"]
    b = json.loads(runfiles.bench_bytes(RUNS / LADDER / "steps" / "01-c8-r1"))
    # measured e2e = all output tokens / (first send to last token), from bench.json
    t0 = min(b["start_times"])
    t1 = max(s + t + sum(i) for s, t, i in zip(b["start_times"], b["ttfts"], b["itls"],
                                               strict=True))
    assert by[8]["measured_e2e_tok_s"] == pytest.approx(sum(b["output_lens"]) / (t1 - t0),
                                                        rel=1e-6)
    assert by[8]["e2e_error"] == pytest.approx(
        by[8]["predicted_e2e_tok_s"] / by[8]["measured_e2e_tok_s"] - 1)
    assert abs(by[8]["e2e_error"]) < 0.05


def _tmp_runs_and_protocols(tmp_path):
    copy_run(tmp_path, LADDER)
    pfile = tmp_path / "new-protocols.yaml"
    pfile.write_text(NEW_PROTOCOLS)
    return tmp_path / "runs", pfile


def test_a_protocol_file_it_has_never_seen(tmp_path, capsys):
    runs, pfile = _tmp_runs_and_protocols(tmp_path)
    assert main(["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol",
                 "never-seen", "--protocols-file", str(pfile), "--runs", str(runs),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    steps = out["steps"]
    assert [(s["streams"], s["requests"]) for s in steps] == [
        (1, 2), (1, 4), (4, 8), (12, 24), (24, 48), (40, 80)]
    assert out["weights"] == "dummy"
    b = json.loads((runs / LADDER / "steps" / "00-c1-r1" / "bench.json").read_text())
    # one stream of 128-token prompts: the first token comes at the ladder's own median TTFT
    # (overhead = that TTFT less the model's prefill, by construction) ...
    assert steps[0]["predicted_median_ttft_s"] == pytest.approx(statistics.median(b["ttfts"]),
                                                                rel=1e-9)
    # ... and at the ladder's context (128 + 511/2 tokens mean) the step time is its median
    # TPOT (bandwidth = bytes / that TPOT); bench.json keeps per-request TPOT in ms
    itls = sorted(x for r in b["itls"] for x in r)
    assert steps[1]["predicted_median_tpot_ms"] == pytest.approx(
        statistics.median(itls) * 1e3, rel=2e-3)
    assert steps[0]["predicted_decode_tok_s"] is None  # 2 tokens out: prefill only
    # nothing of this protocol was measured
    assert all(s["measured_e2e_tok_s"] is None and not s["measured_in"] for s in steps)
    assert out["choice"]["bandwidth"]["run"] == LADDER
    assert out["choice"]["compute"] is None  # no 2,048+ token prompt here: said
    assert out["calibration"]["compute_source"].startswith("fallback")


def test_verify_mode_plans_calibration_plus_a_sample(tmp_path, capsys):
    runs, pfile = _tmp_runs_and_protocols(tmp_path)
    assert main(["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol",
                 "never-seen", "--protocols-file", str(pfile), "--runs", str(runs),
                 "--verify", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    v = out["verify"]
    # calibration: the ladder's 1-stream step (16 x 128+512), bandwidth and overhead alike
    assert [(c["role"], c["streams"], c["requests"]) for c in v["calibration_steps"]] == [
        ("bandwidth", 1, 16)]
    # none of the protocol's steps is that shape: 2 of 6 spread over them, first and last
    assert v["sampled_steps"] == [0, 5] and v["predicted_steps"] == [1, 2, 3, 4]
    load = {s["index"]: s["predicted_load_s"] for s in out["steps"]}
    assert v["verify_load_s"] == pytest.approx(
        v["calibration_steps"][0]["predicted_load_s"] + load[0] + load[5])
    assert v["protocol_load_s"] == pytest.approx(sum(load.values()))
    assert v["suite_load_s"] == pytest.approx(v["protocol_load_s"])  # one protocol here
    assert v["suite_verify_load_s"] == pytest.approx(v["verify_load_s"])
    assert main(["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol",
                 "never-seen", "--protocols-file", str(pfile), "--runs", str(runs),
                 "--verify", "1"]) == 0
    text = capsys.readouterr().out
    assert "verify mode, 1 sampled step(s)" in text and "protocol step(s) [5] once" in text
    assert "for the full suite (1 protocols of new-protocols.yaml" in text


@pytest.mark.parametrize("args, words", [
    (["--protocol", "nope"], "--protocol: 'nope' is not in"),
    (["--engine", "nope"], "--engine: no committed run of engine 'nope' on h200"),
    # a card with no run is predicted with borrowed terms (issue 30); nothing to borrow:
    (["--card", "h100", "--engine", "nope"], "--engine: no committed run of engine 'nope' "
     "nor of weight format None on any card: nothing to borrow for h100"),
    (["--card", "zzz"], "--card: unknown card 'zzz'"),
    (["--verify", "-1"], "--verify: the number of sampled steps must be >= 0, got -1"),
])
def test_bad_input_is_one_line_naming_the_option(tmp_path, capsys, args, words):
    runs, pfile = _tmp_runs_and_protocols(tmp_path)
    base = {"--card": "h200", "--engine": "bf16-dummy", "--protocol": "never-seen"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    argv = ["predict", "--protocols-file", str(pfile), "--runs", str(runs)]
    for k, v in base.items():
        argv += [k, v]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_bad_protocols_file_is_named(tmp_path, capsys):
    runs, pfile = _tmp_runs_and_protocols(tmp_path)
    pfile.write_text(NEW_PROTOCOLS.replace("streams: 40", "streams: -40"))
    assert main(["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol",
                 "never-seen", "--protocols-file", str(pfile), "--runs", str(runs)]) == 2
    err = capsys.readouterr().err
    assert str(pfile) in err and "protocols.never-seen.steps.5.streams" in err
    assert main(["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol",
                 "never-seen", "--protocols-file", str(tmp_path / "missing.yaml"),
                 "--runs", str(runs)]) == 2
    assert "missing.yaml: no such file" in capsys.readouterr().err


def test_an_engine_with_no_run_borrows_its_twins_shape(tmp_path, capsys):
    """bf16-dummy-256 (config/engines.yaml) differs from bf16-dummy only in its 256 slots:
    predicted from the ladder's run, and 384 streams queue on 256 slots, not 128 on 64."""
    runs, pfile = _tmp_runs_and_protocols(tmp_path)
    pfile.write_text(NEW_PROTOCOLS.replace("{streams: 40, requests: 80}",
                                           "{streams: 384, requests: 384}"))
    assert main(["predict", "--card", "h200", "--engine", "bf16-dummy-256", "--protocol",
                 "never-seen", "--protocols-file", str(pfile), "--runs", str(runs),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_run"].startswith(f"{LADDER} (engine bf16-dummy; bf16-dummy-256 has no "
                                        "run")
    assert out["engine_shape"]["max_num_seqs"] == 256
    notes = [s["note"] for s in out["steps"]]
    assert notes[-1].startswith("384 streams on 256 slots") and not any(notes[:-1])
    # the same workload on the 64-slot engine queues from 65 streams on: slower per stream
    assert main(["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol",
                 "never-seen", "--protocols-file", str(pfile), "--runs", str(runs),
                 "--json"]) == 0
    small = json.loads(capsys.readouterr().out)
    assert small["steps"][-1]["note"].startswith("384 streams on 64 slots")
    assert small["steps"][-1]["predicted_median_ttft_s"] > \
        out["steps"][-1]["predicted_median_ttft_s"]
    # an engine with no run and no twin among the runs is refused naming --engine
    assert main(["predict", "--card", "h200", "--engine", "fp8-hyperqwen-dummy",
                 "--protocol", "never-seen", "--protocols-file", str(pfile), "--runs",
                 str(runs)]) == 2
    assert "--engine: no committed run of engine 'fp8-hyperqwen-dummy' on h200, nor of an " \
        "engine that differs from it only in" in capsys.readouterr().err
