"""Argument construction for server and client, straight from the shipped YAML."""

import textwrap

import pytest

from claimcheck.claims.registryfiles import load_claims
from claimcheck.config.configfiles import get_engine, get_protocol, load_engines, load_protocols
from claimcheck.config.engines import server_argv
from claimcheck.config.protocols import check_source_claims
from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG, ROOT
from claimcheck.measure.bench import client_argv

VLLM = ["vllm"]


def test_bf16_dummy_server_argv():
    e = get_engine("bf16-dummy")
    argv = server_argv(e, vllm=VLLM, host="127.0.0.1", port=8000, tokenizer_dir="/tok")
    assert argv == [
        "vllm", "serve", str(ROOT / "data/raw/models/qwen3.8-27b"), "--host", "127.0.0.1",
        "--port", "8000", "--served-model-name", "qwen3.8-27b", "--load-format", "dummy",
        "--tokenizer", "/tok", "--max-num-seqs", "64", "--max-model-len", "4096",
        "--gpu-memory-utilization", "0.9", "--gdn-prefill-backend", "triton",
        "--limit-mm-per-prompt", '{"image":0,"video":0}']
    assert e.dummy


def test_fp8_hyperqwen_flags():
    argv = server_argv(get_engine("fp8-hyperqwen-dummy"), vllm=VLLM, host="127.0.0.1",
                       port=8000, tokenizer_dir="/tok")
    joined = " ".join(argv)
    for flag in ("--quantization fp8", "--kv-cache-dtype fp8",
                 "--mamba-ssm-cache-dtype float16", "--enable-prefix-caching",
                 "--load-format dummy"):
        assert flag in joined


def test_real_checkpoint_path_is_kept():
    e = get_engine("w4a16-hyperqwen")
    assert not e.dummy
    assert e.hub_repo_revision == ("dbirks/Qwen3.8-27B-W4A16-AutoRound", "1f05c44")
    argv = server_argv(e, vllm=VLLM, host="127.0.0.1", port=8000, tokenizer_dir=None)
    assert argv[2] == "dbirks/Qwen3.8-27B-W4A16-AutoRound"
    assert argv[argv.index("--revision") + 1] == "1f05c44"
    assert "--load-format" not in argv and "--tokenizer" not in argv
    assert e.config_json() is None


def test_hyperqwen_batch_client_argv():
    p = get_protocol("hyperqwen-batch")
    assert (p.input_len, p.output_len, p.repeats, p.report) == (128, 512, 2, "last")
    assert [(s.streams, s.requests) for s in p.steps] == [(64, 256)]
    argv = client_argv(p, p.steps[0], vllm=VLLM, base_url="http://127.0.0.1:8000",
                       model="qwen3.8-27b", tokenizer="/tok", seed=7, result_dir="/r")
    a = " ".join(argv)
    for part in ("bench serve", "--dataset-name random", "--random-input-len 128",
                 "--random-output-len 512", "--num-prompts 256", "--max-concurrency 64",
                 "--seed 7", "--save-result", "--save-detailed", "--ignore-eos",
                 "--request-rate inf"):
        assert part in a


def test_ladder_and_ci_profile():
    p = get_protocol("ladder")
    assert [(s.streams, s.requests) for s in p.steps] == [(1, 16), (8, 64), (16, 128),
                                                           (32, 128), (64, 256)]
    ci = get_protocol("ladder", profile="ci")
    # capped at 4 streams, 2 requests per stream, duplicates dropped
    assert [(s.streams, s.requests) for s in ci.steps] == [(1, 2), (4, 8)]
    assert (ci.input_len, ci.output_len) == (32, 16)


def test_source_claims_exist():
    ids = {c["id"] for c in load_claims()}
    check_source_claims(load_protocols(), ids, str(CONFIG / "protocols.yaml"))


def test_bad_protocol_yaml_names_line_and_key(tmp_path):
    text = (CONFIG / "protocols.yaml").read_text().replace(
        "- {streams: 16, requests: 128}", "- {streams: 0, requests: 128}")
    bad = tmp_path / "protocols.yaml"
    bad.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "streams: 0" in ln)
    with pytest.raises(InputError) as e:
        load_protocols(bad)
    assert f"protocols.yaml:{line}: protocols.ladder.steps.2.streams:" in str(e.value)
    assert "less than the minimum of 1" in str(e.value)


def test_bad_engine_yaml(tmp_path):
    bad = tmp_path / "engines.yaml"
    bad.write_text(textwrap.dedent("""\
        engines:
          x:
            description: d
            model: m
            weights: hub:repo-without-revision
            served_model_name: s
        """))
    with pytest.raises(InputError, match=r"engines.yaml:5: engines.x.weights: .* does not match"):
        load_engines(bad)


def test_unknown_names_refused():
    with pytest.raises(InputError, match="unknown engine 'nope'"):
        get_engine("nope")
    with pytest.raises(InputError, match="unknown protocol 'nope'; known: ") as ex:
        get_protocol("nope")
    known = str(ex.value).split("known: ")[1].split(", ")
    assert known == sorted(known) and {"hyperqwen-batch", "ladder"} <= set(known)
    with pytest.raises(InputError, match="unknown profile 'nope'"):
        get_protocol("ladder", profile="nope")


@pytest.mark.parametrize(("value", "words"), [
    ("'0.33'", r"engines.yaml:7: engines.x.vllm_version: '0.33' does not match"),
    ("latest", r"engines.yaml:7: engines.x.vllm_version: 'latest' does not match"),
    ("-1.0.0", r"engines.yaml:7: engines.x.vllm_version: '-1.0.0' does not match"),
    ("0.33.0", None),
])
def test_vllm_version_pin_is_a_release_number(tmp_path, value, words):
    """An engine's vllm_version names a release X.Y.Z, or the file is refused at the line."""
    p = tmp_path / "engines.yaml"
    p.write_text(textwrap.dedent(f"""\
        engines:
          x:
            description: d
            model: m
            weights: dummy
            served_model_name: s
            vllm_version: {value}
        """))
    if words is None:
        assert load_engines(p)["x"].vllm_version == "0.33.0"
        return
    with pytest.raises(InputError, match=words):
        load_engines(p)
