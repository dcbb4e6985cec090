"""Measured points on the claim map and rooflines: only what ran at once is summed."""

from claimcheck.pipeline.figures import measured_points


def _row(streams, max_num_seqs, agg):
    return {"card": "h200", "streams": streams, "max_num_seqs": max_num_seqs,
            "streams_x_1000_over_median_tpot_tok_s": agg,
            "streams_x_1000_over_median_tpot_tok_s_per_stream": agg / streams,
            "run": "r", "weights_label": "dummy weights", "reported": True,
            "status": "complete"}


def test_a_queued_level_is_not_a_point():
    """128 requested on a 64-slot server: 128 x 1000 / TPOT would sum 64 requests that
    were waiting, not decoding (seed 001's B200 128 'reference' level)."""
    rows = [_row(64, 64, 2900.0), _row(128, 64, 5700.0), _row(8, None, 480.0)]
    pts = measured_points(rows)
    assert [p["streams"] for p in pts] == [64, 8]
    assert [p["aggregate_tok_s"] for p in pts] == [2900.0, 480.0]


def test_a_held_prefill_step_is_not_a_point():
    """16 prompts back to back with 2 tokens out: 1000 / its one inter-token gap read 100
    tok/s on the H200, above the B = 1 roofline; it measures prefill, not decode."""
    rows = [{**_row(1, 64, 64.7), "output_len": 512},
            {**_row(1, 64, 100.5), "output_len": 2}]
    assert [p["aggregate_tok_s"] for p in measured_points(rows)] == [64.7]


def test_a_step_whose_requests_stopped_at_two_tokens_is_not_a_point():
    """512 asked, but every request produced 2 (the observed tokens, ``max_output_tokens``):
    one gap per request, no decode rate, so the same rule leaves it out."""
    rows = [{**_row(1, 64, 64.7), "output_len": 512, "max_output_tokens": 512},
            {**_row(1, 64, 100.5), "output_len": 512, "max_output_tokens": 2}]
    assert [p["aggregate_tok_s"] for p in measured_points(rows)] == [64.7]


def test_a_preset_draws_only_steps_of_its_own_configuration():
    from claimcheck.pipeline.figures import matches_preset
    base = {"roofline_weights_gib": 50.22, "roofline_state_dtype": "fp32",
            "roofline_kv_dtype": "bf16", "context_tokens_per_stream": 640}
    want = dict(weight_gib=50.22, state_dtype="fp32", kv_dtype="bf16", context=640)
    assert matches_preset(base, **want)
    assert matches_preset({**base, "context_tokens_per_stream": 612}, **want)  # the gate
    assert not matches_preset({**base, "context_tokens_per_stream": 8192}, **want)
    assert not matches_preset({**base, "context_tokens_per_stream": 1171}, **want)  # lanes
    fp8 = {**base, "roofline_weights_gib": 27.64, "roofline_state_dtype": "fp16",
           "roofline_kv_dtype": "fp8"}
    assert not matches_preset(fp8, **want)


def test_a_step_whose_streams_never_all_decoded_is_not_a_point():
    """160 sent to a 256-slot engine whose KV pool held 90 of them (the H100's
    ``bf16-dummy-256`` run): no queue in the server, but 160 x 1000 / TPOT sums 70 requests
    that were waiting for a first token; the 64-stream step, all decoding together, stays."""
    rows = [{**_row(64, 256, 2160.0), "most_decoding_at_once": 64},
            {**_row(160, 256, 4857.0), "most_decoding_at_once": 90}]
    assert [p["streams"] for p in measured_points(rows)] == [64]
