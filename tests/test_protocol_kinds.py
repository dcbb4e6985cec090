"""Protocol kinds, the fit check and claimcheck's load client, on data made by hand."""

import dataclasses
import subprocess
import sys

import pytest
import yaml

from claimcheck.config.configfiles import get_engine, get_protocol, load_protocols
from claimcheck.config.protocols import FIT_MARGIN_TOKENS, Step, check_fit
from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG, ROOT
from claimcheck.measure.bench import client_argv
from claimcheck.measure.clientproc import bench_args
from claimcheck.measure.loadclient import RequestRecord, read_chunk, result_json


def test_fit_refuses_an_8k_protocol_on_a_4k_engine_naming_both_numbers():
    p, e = get_protocol("long-prompts"), get_engine("bf16-dummy")
    need = 7681 + 511 + FIT_MARGIN_TOKENS  # the seed's shape plus the declared margin
    with pytest.raises(InputError) as ex:
        check_fit(p, e.max_model_len, e.max_num_seqs, e.name, "config/engines.yaml")
    msg = str(ex.value)
    assert f"= {need} tokens" in msg and "max_model_len 4096" in msg
    assert "engines.bf16-dummy.max_model_len" in msg
    big = get_engine("bf16-dummy-16k")
    check_fit(p, big.max_model_len, big.max_num_seqs, big.name, "x")  # 8,256 <= 16,384


def test_fit_refuses_more_streams_than_slots_unless_queueing_is_the_protocol():
    e = get_engine("bf16-dummy-16k")
    ladder = get_protocol("ladder")
    with pytest.raises(InputError, match="runs 128 streams, engine 'bf16-dummy-16k' has "
                                         "max_num_seqs 64"):
        check_fit(dataclasses.replace(ladder, steps=(Step(128, 128, 128, 512),)),
                  e.max_model_len, e.max_num_seqs, e.name, "x")
    gate = get_protocol("serving-gate")
    assert gate.queue_ok and max(s.streams for s in gate.steps) == 128
    check_fit(gate, e.max_model_len, e.max_num_seqs, e.name, "x")


def test_cli_refuses_before_anything_starts(tmp_path):
    r = subprocess.run([sys.executable, "-m", "claimcheck.cli", "measure", "--card", "h200",
                        "--engine", "bf16-dummy", "--protocol", "long-prompts", "--runs-dir",
                        str(tmp_path / "runs")], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 2, r.stderr
    assert "max_model_len 4096" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "runs").exists()  # nothing was created


def _edit(tmp_path, name, **changes):
    data = yaml.safe_load((CONFIG / "protocols.yaml").read_text())
    data["protocols"][name].update(changes)
    p = tmp_path / "protocols.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


@pytest.mark.parametrize(("name", "changes", "words"), [
    ("ladder", {"steps": [{"streams": 8, "requests": 4}]},
     "8 streams but only 4 requests"),
    ("closed-loop", {"steps": [{"streams": 2, "requests": 5}]},
     "a closed loop of 2 clients x requests_per_client 3 sends 6 requests, not 5"),
    ("lanes", {"steps": [{"streams": 8, "requests": 16}]},
     "requests must equal streams (8), got 16"),
    ("serving-gate", {"repeats": 2}, "needs >= 3 levels and >= 3 repeats; this protocol "
                                     "has 4 levels and 2 repeats"),
    ("ladder", {"endpoint": "/v1/chat/completions"}, "runs on /v1/completions"),
])
def test_protocols_that_contradict_their_kind_are_refused(tmp_path, name, changes, words):
    path = _edit(tmp_path, name, **changes)
    with pytest.raises(InputError) as ex:
        load_protocols(path)
    assert words in str(ex.value) and str(path) in str(ex.value)
    assert f"protocols.{name}" in str(ex.value)


def test_step_lengths_default_to_the_protocol_and_can_be_set_per_step():
    p = get_protocol("single-stream")
    assert [(s.input_len, s.output_len) for s in p.steps] == [(128, 512), (7681, 511),
                                                               (7681, 2), (12000, 2)]
    assert [s.context_tokens for s in p.steps] == [640, 8192, 7683, 12002]
    argv = client_argv(p, p.steps[1], vllm=["vllm"], base_url="http://h", model="m",
                       tokenizer="t", seed=1, result_dir="/r")
    assert argv[argv.index("--random-input-len") + 1] == "7681"
    assert bench_args(argv)[:2] == ["--backend", "vllm"]


def test_loadclient_argv_for_a_closed_loop():
    p = get_protocol("closed-loop")
    argv = client_argv(p, p.steps[2], vllm=["vllm"], base_url="http://h", model="m",
                       tokenizer="t", seed=7, result_dir="/r")
    assert argv[1:3] == ["-m", "claimcheck.measure.loadclient"]
    assert argv[argv.index("--requests") + 1] == "12" and "--ignore-eos" not in argv
    assert bench_args(argv) is None


def test_read_chunk_counts_usage_not_chunks():
    """Continuous usage: cumulative completion_tokens 1, 4, 4 (a role-only chunk), 6."""
    rec = RequestRecord(client=0, start=100.0)
    chunks = [
        {"choices": [{"delta": {"role": "assistant", "content": ""}}],
         "usage": {"prompt_tokens": 9, "completion_tokens": 0}},
        {"choices": [{"delta": {"content": "a"}}], "usage": {"completion_tokens": 1}},
        {"choices": [{"delta": {"reasoning": "bcd"}}], "usage": {"completion_tokens": 4}},
        {"choices": [{"delta": {"content": ""}}], "usage": {"completion_tokens": 4}},
        {"choices": [{"delta": {"reasoning_content": "ef"}}],
         "usage": {"completion_tokens": 6}},
    ]
    for t, c in zip((100.1, 100.2, 100.3, 100.35, 100.4), chunks, strict=True):
        read_chunk(c, rec, t)
    assert rec.completion_tokens == 6 and rec.prompt_tokens == 9
    assert rec.chunk_tokens == [1, 3, 2] and rec.chunk_times == [100.2, 100.3, 100.4]
    assert rec.reasoning_chars == 5 and rec.content_chars == 1


def test_result_json_by_hand():
    """Two requests: 0 sends at t=10, first token at 10.5, last at 12.5 (5 tokens);
    1 sends at 11, tokens at 11.2 and 13.0 (2 tokens, 1 in each chunk); one failure."""
    a = RequestRecord(0, 10.0, 4, 5, [10.5, 11.5, 12.5], [1, 2, 2])
    b = RequestRecord(1, 11.0, 4, 2, [11.2, 13.0], [1, 1])
    c = RequestRecord(1, 13.0, error="HTTP 400: too long")
    r = result_json([a, b, c], kind="closed_loop", model="m", streams=2, input_len=4,
                    output_len=5)
    assert r["completed"] == 2 and r["failed"] == 1
    assert r["duration"] == pytest.approx(13.0 - 10.0)  # first send to last token
    assert r["total_output_tokens"] == 7
    assert r["output_throughput"] == pytest.approx(7 / 3.0)
    assert r["ttfts"][:2] == pytest.approx([0.5, 0.2])
    assert r["itls"][0] == pytest.approx([1.0, 1.0])
    # TPOT: (last - first chunk) / (tokens - 1): 2.0 / 4 = 0.5 s and 1.8 / 1 = 1.8 s
    assert r["median_tpot_ms"] == pytest.approx((500 + 1800) / 2)
    assert r["errors"][2] == "HTTP 400: too long" and r["output_lens"][2] == 0


@pytest.mark.parametrize(("name", "changes", "words"), [
    ("single-stream", {"steps": [{"streams": 1, "requests": 3, "input_len": -5}]},
     "protocols.single-stream.steps.0.input_len: -5 is less than the minimum of 1"),
    ("serving-gate", {"gate": {"min_levels": 3, "min_repeats": 3, "plateau_pct": 0}},
     "protocols.serving-gate.gate.plateau_pct: 0 is less than or equal to the minimum of 0"),
    ("closed-loop", {"requests_per_client": 0},
     "protocols.closed-loop.requests_per_client: 0 is less than the minimum of 1"),
    ("lanes", {"kind": "fanout"},
     "protocols.lanes.kind: 'fanout' is not one of ['bench', 'closed_loop', 'lanes']"),
    ("serving-gate", {"queue_ok": "yes"},
     "protocols.serving-gate.queue_ok: 'yes' is not of type 'boolean'"),
])
def test_impossible_values_of_the_new_protocol_keys(tmp_path, name, changes, words):
    """Each key this change added, fed an impossible value: one line naming file, line, key."""
    path = _edit(tmp_path, name, **changes)
    with pytest.raises(InputError) as ex:
        load_protocols(path)
    assert str(ex.value).startswith(f"{path}:") and words in str(ex.value)


def test_loadclient_refuses_requests_that_clients_cannot_share(tmp_path):
    r = subprocess.run([sys.executable, "-m", "claimcheck.measure.loadclient", "--base-url",
                        "http://127.0.0.1:9", "--model", "m", "--kind", "closed_loop",
                        "--streams", "3", "--requests", "4", "--input-len", "8",
                        "--output-len", "8", "--seed", "1", "--result",
                        str(tmp_path / "r.json")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "--requests (4) must be a positive multiple of --streams (3)" in r.stderr
    assert not (tmp_path / "r.json").exists()


def test_fit_refuses_synthetic_prompts_vllm_refuses_as_text_before_tokenizing(tmp_path):
    """The 15,000-token step that lost 2 of 4 requests to HTTP 400 on bf16-dummy-256
    (max_model_len 16,384, 2 tokens out, run h200-20261201-bf16-dummy-256-single-stream):
    vLLM 0.26.0 refuses prompt text over (16,384 - 2) x 7 = 114,674 characters, 7 being
    len("w248319"); 15,000 words of 7 characters and 14,999 spaces are 119,999."""
    from tokenizers import Tokenizer

    from claimcheck.measure.tokenizer import build_synthetic_tokenizer, synthetic_vocab_size

    e = get_engine("bf16-dummy-256")
    vocab = synthetic_vocab_size(e)
    assert vocab == 248320
    failed = dataclasses.replace(get_protocol("single-stream"),
                                 steps=(Step(1, 4, 15000, 2),))
    with pytest.raises(InputError) as ex:
        check_fit(failed, e.max_model_len, e.max_num_seqs, e.name, "x", vocab)
    msg = str(ex.value)
    assert "15000 synthetic tokens can take 119999 characters" in msg
    assert "= 114674 before tokenizing" in msg and "engines.bf16-dummy-256" in msg
    # The same text really is that long: 15,000 consecutive ids from 150,000 decoded by the
    # synthetic tokenizer itself (the random dataset's prompts are consecutive ids).
    tok = Tokenizer.from_file(str(build_synthetic_tokenizer(vocab, tmp_path) / "tokenizer.json"))
    assert len(tok.decode(list(range(150000, 165000)))) == 119999 > 114674
    assert len(tok.decode(list(range(10000, 25000)))) == 104999  # 5-digit ids pass
    # The protocol's step as it is now, and the context ladder, fit both 16k engines.
    check_fit(get_protocol("single-stream"), e.max_model_len, e.max_num_seqs, e.name, "x",
              vocab)
    for name in ("bf16-dummy-16k", "fp8-hyperqwen-dummy-16k"):
        e16 = get_engine(name)
        check_fit(get_protocol("context-ladder"), e16.max_model_len, e16.max_num_seqs,
                  e16.name, "x", synthetic_vocab_size(e16))
    # A checkpoint's own tokenizer is not the synthetic one: no character check.
    assert synthetic_vocab_size(get_engine("w4a16-hyperqwen")) is None
