"""Engines that draft (issue 41): the speculative field served as vLLM reads it, checked
before a start, and a step's speculation counted from vLLM's /metrics counters (the recorded
text of a real vLLM 0.26.0 server on the H200 after a forced-acceptance run)."""

import json
from pathlib import Path

import pytest

from claimcheck.config.configfiles import get_engine, load_engines
from claimcheck.config.engines import (
    Engine,
    acceptance_words,
    engine_refusal,
    server_argv,
    speculative_config,
)
from claimcheck.files.errors import InputError
from claimcheck.readings.promtext import counters, delta
from claimcheck.readings.speculation import speculation_columns

METRICS = Path(__file__).parent / "data" / "vllm026-metrics-mtp3-forced2.5.txt"


def _engine(spec, extra=(), tp=1):
    return Engine(name="e", description="d", model="data/raw/models/qwen3.8-27b",
                  weights="dummy", served_model_name="m", speculative=spec,
                  extra_args=tuple(extra), tensor_parallel_size=tp)


def test_the_committed_drafting_engine_serves_vllms_synthetic_acceptance():
    e = get_engine("bf16-dummy-16k-mtp3-forced2.5")
    argv = server_argv(e, vllm=["vllm"], host="127.0.0.1", port=8000, tokenizer_dir=None)
    i = argv.index("--speculative-config")
    assert json.loads(argv[i + 1]) == {
        "method": "mtp", "num_speculative_tokens": 3,
        "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5}
    assert (e.draft_tokens, e.verify_rows) == (3, 4)
    assert e.acceptance_words() == ("MTP k=3 (4 rows verified per stream), acceptance "
                                    "forced at 2.5 tokens kept per verify")


def test_rates_and_weights_decide():
    assert speculative_config({"method": "mtp", "num_speculative_tokens": 2,
                               "acceptance": {"rates": [0.9, 0.5]}}) == {
        "method": "mtp", "num_speculative_tokens": 2, "rejection_sample_method": "synthetic",
        "synthetic_acceptance_rates": [0.9, 0.5]}
    spec = {"method": "mtp", "num_speculative_tokens": 2}
    assert speculative_config(spec) == spec
    assert acceptance_words(spec).endswith("acceptance left to the weights")
    assert acceptance_words(None) is None
    assert get_engine("bf16-dummy-16k").verify_rows == 1


@pytest.mark.parametrize("spec,extra,words", [
    ({"method": "mtp", "num_speculative_tokens": 3, "acceptance": {"length": 4.5}}, (),
     "speculative.acceptance.length 4.5 is outside [1, 4]"),
    ({"method": "mtp", "num_speculative_tokens": 3, "acceptance": {"rates": [1, 0.5]}}, (),
     "speculative.acceptance.rates has 2 entries; num_speculative_tokens is 3"),
    ({"method": "mtp", "num_speculative_tokens": 2, "acceptance": {"rates": [0.5, 0.9]}}, (),
     "speculative.acceptance.rates [0.5, 0.9] must be non-increasing"),
    ({"method": "mtp", "num_speculative_tokens": 1, "acceptance": {"rates": [1.5]}}, (),
     "speculative.acceptance.rates [1.5] has a rate outside [0, 1]"),
    (None, ("--speculative-config", '{"method":"mtp"}'),
     "extra_args sets --speculative-config; put the drafter in the engine's speculative"),
])
def test_a_drafter_vllm_would_refuse_is_refused_before_a_start(spec, extra, words):
    assert words in engine_refusal(_engine(spec, extra))


def test_the_multicast_guard_still_reads_a_drafting_engine_on_two_gpus():
    spec = {"method": "mtp", "num_speculative_tokens": 3, "acceptance": {"length": 2.5}}
    why = engine_refusal(_engine(spec, tp=2))
    assert why is not None and "fuse_allreduce_rms false" in why
    ok = _engine(spec, ("--compilation-config",
                        '{"pass_config":{"fuse_allreduce_rms":false}}'), tp=2)
    assert engine_refusal(ok, base_env={}) is None


def test_an_engines_file_with_a_bad_drafter_names_the_engine(tmp_path):
    p = tmp_path / "engines.yaml"
    p.write_text("engines:\n  d:\n    description: x\n    model: m\n    weights: dummy\n"
                 "    served_model_name: m\n    speculative: {method: mtp, "
                 "num_speculative_tokens: 1, acceptance: {length: 3}}\n")
    with pytest.raises(InputError) as e:
        load_engines(p)
    assert "engines.d" in str(e.value) and "outside [1, 2]" in str(e.value)


def test_counters_read_from_a_real_vllm_metrics_text():
    c = counters(METRICS.read_text())
    # the values as the server printed them after the speculation run (four steps and
    # the engine's own warm-up), by hand from the file
    assert c['vllm:spec_decode_num_drafts_total{engine="0"}'] == 43391.0
    assert c['vllm:spec_decode_num_draft_tokens_total{engine="0"}'] == 130173.0
    assert 130173 == 3 * 43391  # k = 3 drafted tokens per verify
    pos = [c[f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",position="{i}"}}']
           for i in range(3)]
    assert pos[2] == 0.0  # forced at 2.5: the third draft never accepted
    assert pos[0] == c['vllm:spec_decode_num_drafts_total{engine="0"}']  # first always
    assert sum(pos) == c['vllm:spec_decode_num_accepted_tokens_total{engine="0"}']
    assert not any(k.endswith("_created") or "_bucket" in k for k in c)


def test_a_sample_that_cannot_be_read_names_its_line():
    with pytest.raises(ValueError, match="line 2"):
        counters("# HELP x\nvllm:a_total{engine=0} 1\n")
    with pytest.raises(ValueError, match="went down"):
        delta({"a": 5.0}, {"a": 4.0})


def test_a_steps_speculation_by_hand():
    spec = {"method": "mtp", "num_speculative_tokens": 3, "acceptance": {"length": 2.5}}
    p = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",position="{}"}}'
    before = {'vllm:spec_decode_num_drafts_total{engine="0"}': 100.0,
              'vllm:spec_decode_num_draft_tokens_total{engine="0"}': 300.0,
              'vllm:spec_decode_num_accepted_tokens_total{engine="0"}': 150.0,
              p.format(0): 100.0, p.format(1): 50.0, p.format(2): 0.0}
    after = {'vllm:spec_decode_num_drafts_total{engine="0"}': 900.0,   # 800 verifies
             'vllm:spec_decode_num_draft_tokens_total{engine="0"}': 2700.0,
             'vllm:spec_decode_num_accepted_tokens_total{engine="0"}': 1350.0,  # 1,200
             p.format(0): 900.0, p.format(1): 450.0, p.format(2): 0.0}
    cols = speculation_columns(spec, {"before": {"counters": before},
                                      "after": {"counters": after}})
    assert cols["verify_rows_per_stream"] == 4
    assert (cols["spec_drafts"], cols["spec_draft_tokens"], cols["spec_accepted_tokens"]) \
        == (800, 2400, 1200)
    assert cols["spec_accepted_per_verify"] == 1.5        # 1,200 / 800
    assert cols["tokens_kept_per_verify"] == 2.5
    assert cols["spec_acceptance_rate"] == 0.5            # 1,200 / 2,400
    assert cols["spec_acceptance_per_position"] == "1,0.5,0"
    plain = speculation_columns(None, None)
    assert plain["verify_rows_per_stream"] == 1 and plain["tokens_kept_per_verify"] is None
    failed = speculation_columns(spec, {"before": {"error": "URLError"}, "after": {}})
    assert failed["spec_drafts"] is None and failed["verify_rows_per_stream"] == 4


def test_the_committed_forced_run_keeps_what_it_was_forced_to():
    from claimcheck.runs.run import load_run
    run = load_run(Path(__file__).parents[1] / "data/raw/runs"
                   / "h200-20261203-bf16-dummy-16k-mtp3-forced2.5-speculation")
    t = run.table
    assert list(t["streams"]) == [1, 8, 32, 64]
    assert set(t["verify_rows_per_stream"]) == {4}
    # forced at 2.5: every step kept 2.5 tokens per verify to within 1% (the synthetic
    # sampler draws the second draft's acceptance at random, rate 0.5)
    assert all(abs(v - 2.5) < 0.025 for v in t["tokens_kept_per_verify"])
    assert all(p.endswith(",0") and p.startswith("1,") for p in
               t["spec_acceptance_per_position"])


def test_a_figure_of_a_run_whose_name_holds_a_dot_keeps_its_name(tmp_path):
    from claimcheck.figures import figstyle
    fig = figstyle.notice("a run whose name holds a dot")
    out = figstyle.save(fig, tmp_path / "definitions-h200-mtp3-forced2.5-speculation")
    assert [p.name for p in out] == ["definitions-h200-mtp3-forced2.5-speculation.png",
                                     "definitions-h200-mtp3-forced2.5-speculation.svg"]
    assert all(p.exists() for p in out)
