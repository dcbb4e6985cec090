"""The load client cross-checks the server's usage against what it streamed (issue 26
item 4): text after the final usage chunk, every token counted on the first chunk, a
count that stops before the text does, prompt tokens far from the prompt's own length or
above the engine's max_model_len. Each is a failed request with its cause.

The server is tests/fakes/fake_vllm.py on 127.0.0.1 (FAKE_VLLM_MODE picks the fault);
the client is the package's own, unmodified. A result with a request whose tokens all
share one instant (TPOT 0 s, on which ``metrics`` divided by zero) is refused by every
reader in one line."""

import json

import pytest

from claimcheck.cli import main
from claimcheck.measure import loadclient
from claimcheck.measure.tokenizer import build_synthetic_tokenizer
from tests.fabricate import LADDER, copy_run, edit_json
from tests.test_measure_faults import client_argv, fake_server, only_run  # noqa: F401
from tests.test_runner_faults import fake_engine_env, measure, provenance

# 2 lanes of one 8-word prompt, 16 tokens each (tests.test_measure_faults.client_argv)
CASES = [
    # 4 chunks with running usage 1..4, the final usage chunk (16), then 12 text chunks
    ("usage_then_text:4", (), "12 chunks carrying text arrived after the final usage chunk "
     "had said the request was complete at 16 completion tokens"),
    # usage 16 on the first chunk, then 15 chunks of text at 16
    ("usage_first", (), "all 16 completion tokens were counted on the first chunk that "
     "carried text, and 15 more chunks carried text with no new token"),
    # usage 1, 2, 3, then 16 on chunk 4: chunk 5 is the first text with no new token
    ("usage_early:4", (), "usage.completion_tokens stopped growing at 16 while text went "
     "on: chunk 5 of 16 carrying text brought no new token (the last token would be dated "
     "early)"),
    # no tokenizer file: 8 words of "w<id>" (51 characters with the seed 1 prompt) may be
    # 8 - 32 .. 51 + 32 tokens
    ("prompt_tokens:100000", (), "usage reports 100000 prompt tokens for a prompt of 8 "
     "words and 51 characters (no tokenizer file: at least one token per word, at most one "
     "per character): outside 0..83"),
    ("prompt_tokens:5000", ("--max-model-len", "4096"), "usage reports 5000 prompt tokens, "
     "above the engine's max_model_len of 4096"),
    # 8 prompt + 16 completion tokens = 24 > 20
    ("ok", ("--max-model-len", "20"), "usage reports 8 prompt + 16 completion tokens, above "
     "the engine's max_model_len of 20"),
]


@pytest.mark.parametrize(("mode", "extra", "error"), CASES, ids=[c[0] for c in CASES])
def test_the_load_client_fails_usage_the_stream_does_not_bear_out(
        tmp_path, fake_server, mode, extra, error):  # noqa: F811
    url = fake_server(mode)
    result = tmp_path / "r.json"
    rc = loadclient.main(client_argv(url, result) + list(extra))
    res = json.loads(result.read_text())
    assert res["errors"] == [error, error]
    assert rc == 1 and res["completed"] == 0 and res["failed"] == 2
    assert res["total_output_tokens"] == 0 and res["median_tpot_ms"] is None


def test_prompt_tokens_against_the_synthetic_tokenizer(tmp_path, fake_server):  # noqa: F811
    tok = build_synthetic_tokenizer(64, tmp_path / "tok")
    ok = fake_server("ok")
    res = tmp_path / "ok.json"
    assert loadclient.main(client_argv(ok, res) + ["--tokenizer", str(tok)]) == 0
    assert json.loads(res.read_text())["input_lens"] == [8, 8]
    # 100 tokens for 8 words that tokenize to 8: beyond 8 +- 32
    bad = fake_server("prompt_tokens:100")
    assert loadclient.main(client_argv(bad, res) + ["--tokenizer", str(tok)]) == 1
    assert json.loads(res.read_text())["errors"][0] == (
        "usage reports 100 prompt tokens for a prompt of 8 words that tokenizes to 8 "
        "tokens: outside 0..40")


def test_measure_passes_the_engines_max_model_len_and_fails_the_step(tmp_path):
    tmp, env = fake_engine_env(tmp_path)
    engines = tmp / "engines.yaml"
    engines.write_text(engines.read_text() + "    max_model_len: 4096\n")
    r = measure(tmp, env, "lanes", mode="prompt_tokens:100000")
    assert r.returncode == 4, r.stderr
    p = provenance(only_run(tmp))
    argv = p["steps"][0]["client_argv"]
    assert argv[argv.index("--max-model-len") + 1] == "4096"
    assert p["status"] == "failed" and p["failure"] == (
        "the load client exited with code 1; 4 of 4 requests failed (first error: usage "
        "reports 100000 prompt tokens, above the engine's max_model_len of 4096)")


def test_a_request_with_no_time_after_its_first_token_is_refused(tmp_path, capsys):
    """Every gap of the 8-stream step set to 0 s: each request's 512 tokens at its first
    (main divided by zero in streams x 1000 / median TPOT)."""
    run = copy_run(tmp_path, LADDER)
    path = run / "steps" / "01-c8-r1" / "bench.json"

    def zero(b):
        b["itls"] = [[0.0] * len(g) for g in b["itls"]]
    edit_json(path, zero)
    assert main(["metrics", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"claimcheck: error: {path}: itls: request 0 reports 512 output tokens all "
                   "dated at its first (its inter-token gaps sum to 0 s): a time per output "
                   "token of 0 s is impossible"]


def test_the_client_reports_no_tpot_of_zero():
    """A request of 4 tokens in one chunk has no TPOT (not 0 ms); the other's is
    (10.9 - 10.3) / (4 - 1) = 200 ms."""
    a = loadclient.RequestRecord(0, 10.0, 8, 4, [10.5], [4])
    b = loadclient.RequestRecord(1, 10.0, 8, 4, [10.3, 10.5, 10.9], [1, 2, 1])
    r = loadclient.result_json([a, b], kind="lanes", model="m", streams=2, input_len=8,
                               output_len=4)
    assert r["median_tpot_ms"] == pytest.approx(200.0)


def test_every_token_on_the_one_chunk_has_no_tpot():
    rec = loadclient.RequestRecord(client=0, start=0.0)
    for t, e in ((0.5, {"choices": [{"text": "w1 w2 w3"}], "usage": {
            "prompt_tokens": 8, "completion_tokens": 3}}),
                 (0.5, {"choices": [], "usage": {"prompt_tokens": 8,
                                                 "completion_tokens": 3}})):
        loadclient.read_chunk(e, rec, t)
    rec.done = True
    assert loadclient.stream_problem(rec, max_tokens=3, ignore_eos=True) == (
        "all 3 completion tokens were counted on the first chunk that carried text, so no "
        "time per output token can be measured")


def test_two_tokens_in_one_chunk_are_a_prefill_measurement_not_a_fault():
    """CPU vLLM streamed a 2-token answer's both tokens in one chunk (gaps sum to 0 s): a
    request of at most 2 tokens is read for no decode rate, so it is kept; 3 tokens with no
    time after the first are refused."""
    from claimcheck.files.errors import InputError
    from claimcheck.runs.runchecks import check_decode_time

    check_decode_time({"output_lens": [2, 2], "itls": [[0.0], [0.0]]}, source="b.json")
    with pytest.raises(InputError, match="request 1 reports 3 output tokens all dated at its "
                                         "first"):
        check_decode_time({"output_lens": [2, 3], "itls": [[0.0], [0.0, 0.0]]},
                          source="b.json")
