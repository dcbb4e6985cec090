"""Issue 22 item 4: the CLI and the config refuse impossible physics, one line each naming
the option or key and the numbers. Real CLI subprocesses on copies of the committed
Qwen3.8 config.json; every expected number worked out by hand in the comments."""

import json
import math

import pytest

from claimcheck import cli as cli_mod
from claimcheck.physics import roofline as rl
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.physics.units import GIB, MIB

from ._cli import QWEN, cli, one_line_error, qwen_copy

# Qwen3.8-27B reads 25.62 B weights per token (51.24 GB at BF16), F = 51.24 GFLOP/token.
R3090 = ("--card", "rtx3090", "--weights-gb", "16")


def roofline(tmp_path, *extra, config=None):
    return cli("roofline", "--config", config or qwen_copy(tmp_path), *extra)


def test_weights_below_half_a_byte_per_weight(tmp_path):
    # 1 GB / 25.62 B weights = 0.039 byte each; the floor is 0.5 x 25.62 B = 12.81 GB
    line = one_line_error(roofline(tmp_path, "--card", "rtx3090", "--weights-gb", "1"))
    assert line == ("claimcheck: error: --weights-gb: 1.00 GB of weights is 0.039 byte per "
                    "weight for the model's 25.62 B weights; below 0.5 byte (4-bit) no "
                    "checkpoint holds them (at least 12.81 GB)")
    # 12 GiB = 12.88 GB is above the floor and fits a 24 GiB card
    assert roofline(tmp_path, "--card", "rtx3090", "--weights-gib", "12").returncode == 0


def test_context_above_max_position_embeddings(tmp_path):
    line = one_line_error(roofline(tmp_path, "--card", "h200", "--weights-format", "bf16",
                                   "--context", "1000000"))
    assert line.endswith("--context: 1,000,000 tokens of context per stream exceeds the "
                         "model's max_position_embeddings 262,144")
    ok = roofline(tmp_path, "--card", "h200", "--weights-format", "bf16", "--context",
                  "262144", "--streams", "1")
    assert ok.returncode == 0, ok.stderr


RESERVE = ("rtx3090's 24 GiB x 0.9 (the engine's gpu_memory_utilization; the rest is its "
           "reserve) less the weights")


def test_streams_past_the_memory_wall(tmp_path):
    # 24 GiB x 0.9 (vLLM's default share) = 21.60 GiB - 16 GB (14.90 GiB) = 6.70 GiB; S at
    # context 0: FP32 recurrent state 144 MiB + the conv state at the model's bf16
    # (2,949,120 B = 2.8125 MiB) = 146.8125 MiB: 6.6988 GiB x 1024 / 146.8125 = 46.7 -> 46
    line = one_line_error(roofline(tmp_path, *R3090, "--streams", "1,1000000000"))
    assert line.endswith("--streams: 1,000,000,000 streams is past the memory wall: 46 "
                         "streams of 146.8 MiB each (state and KV at 0 tokens of context) fit "
                         f"in 6.70 GiB ({RESERVE}); give --allow-past-wall to compute them "
                         "anyway")
    r = roofline(tmp_path, *R3090, "--streams", "1,46,47", "--allow-past-wall", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["memory_wall_streams"] == 46
    assert [p["past_memory_wall"] for p in out["points"]] == [False, False, True]
    text = roofline(tmp_path, *R3090, "--streams", "47", "--allow-past-wall").stdout
    assert "(past the memory wall)" in text
    assert f"memory wall: 46 streams in 6.70 GiB ({RESERVE})" in text
    # the whole card for streams (no reserve): 24 GiB - 14.90 GiB = 9.0988 GiB x 1024 /
    # 146.8125 MiB = 63.5 -> 63 streams
    out = json.loads(roofline(tmp_path, *R3090, "--gpu-memory-utilization", "1", "--streams",
                              "63", "--json").stdout)
    assert out["memory_wall_streams"] == 63
    assert out["memory_wall_source"] == "rtx3090's 24 GiB less the weights"
    # with --free-gib the wall is in that memory: 6.2 GiB / (72 MiB fp16 recurrent + 2.8125
    # MiB bf16 conv + 640 x 32 KiB fp8 KV = 94.8125 MiB) = 6,348.8 / 94.8125 = 66.96 -> 66
    line = one_line_error(roofline(tmp_path, *R3090, "--state-dtype", "fp16", "--kv-dtype",
                                   "fp8", "--context", "640", "--free-gib", "6.2",
                                   "--streams", "67"))
    assert "--streams: 67 streams is past the memory wall: 66 streams of 94.8 MiB" in line
    assert "fit in 6.20 GiB (--free-gib)" in line


def test_weights_that_leave_no_room_beside_the_reserve(tmp_path):
    # 21 GB = 19.56 GiB fits the 24 GiB card with one stream, but 24 x 0.9 = 21.60 GiB less
    # 19.56 GiB = 2.04 GiB ... at 0.82 the share is 19.68 GiB: 0.12 GiB < 146.8 MiB (144 MiB
    # fp32 recurrent state + 2.8125 MiB bf16 conv state)
    line = one_line_error(roofline(tmp_path, "--card", "rtx3090", "--weights-gb", "21",
                                   "--gpu-memory-utilization", "0.82", "--streams", "1"))
    assert line.endswith("--weights-gb: 19.56 GiB of weights leave 0.12 GiB for streams in "
                         "rtx3090's 24 GiB x 0.82 (the engine's gpu_memory_utilization; the "
                         "rest is its reserve), less than one stream's 146.8 MiB of state and "
                         "KV (rtx3090: cards.csv memory_gib)")


def test_streams_too_many_for_floating_point(tmp_path):
    big = "1" + "0" * 400
    line = one_line_error(roofline(tmp_path, *R3090, "--streams", big, "--allow-past-wall"))
    assert line == ("claimcheck: error: --streams: a 401-digit count of streams is too many "
                    "to compute in floating point")


def test_unreachable_target(tmp_path):
    # compute-bound at 64 streams with 63 TFLOP/s: no tau beats P / F = 63e12 / 51.24e9
    # = 1,229.4 tok/s (more kept tokens need as many more verified rows)
    # (63 streams fit the whole card, no reserve: the wall above)
    line = one_line_error(roofline(tmp_path, *R3090, "--tflops", "63", "--streams", "63",
                                   "--gpu-memory-utilization", "1", "--target", "1300"))
    assert line.endswith("--target: 1,300 tok/s at 63 streams is unreachable: no number of "
                         "tokens kept per stream per step gives it, the compute plateau being "
                         "1,229.4 tok/s aggregate")
    # memory-bound at 8 streams, eta 0.79 x 936 GB/s = 739.44 GB/s: t_step = (16e9 + 8 x
    # (2 x 78,446,592 B of S (fp16 recurrent + bf16 conv), read and written + 640 x 32 KiB
    # of fp8 KV read)) / 739.44e9 = 17.4229e9 / 739.44e9 = 23.56 ms; tau = 500 x t / 8
    out = json.loads(roofline(tmp_path, *R3090, "--tflops", "63", "--eta", "0.79",
                              "--state-dtype", "fp16", "--kv-dtype", "fp8", "--context",
                              "640", "--streams", "8", "--target", "500", "--json").stdout)
    assert out["tau_needed"]["tau"] == pytest.approx(500 * 23.562e-3 / 8, rel=1e-3)


def test_tau_needed_is_infinite_past_the_compute_plateau():
    g = geometry_from_file(QWEN)
    m = rl.for_model(g, weight_bytes=16e9, bandwidth_bytes_s=936e9, tflops=63)
    plateau = 63e12 / g.flops_per_token
    assert rl.tau_needed(m, 8, plateau * 1.01) == math.inf
    assert rl.tau_needed(m, 64, plateau * 1.01) == math.inf
    # just below the plateau at 8 streams, memory-bound: (16 GB + 8 x 2 x 144 MiB of FP32
    # state) / 936 GB/s = 19.675 ms; tau = 1,217.2 tok/s x 19.675 ms / 8 = 2.99 tokens, the
    # rows verified rising with it (8 x 2.99 x 0.81 ms = 19.5 ms, still below 19.675 ms)
    t = plateau * 0.99
    mem_s = (16e9 + 8 * 2 * 144 * MIB) / 936e9
    assert rl.tau_needed(m, 8, t) == pytest.approx(t * mem_s / 8)
    assert round(rl.tau_needed(m, 8, t), 2) == 2.99


def test_free_memory_above_the_card(tmp_path):
    # 60 GiB + 16 GB (14.90 GiB) on a 24 GiB card
    line = one_line_error(roofline(tmp_path, *R3090, "--free-gib", "60"))
    assert line.endswith("--free-gib: 60 GiB free plus 14.90 GiB of weights exceeds the "
                         "card's 24 GiB (rtx3090: cards.csv memory_gib)")


def test_the_roofline_memory_check_is_the_one_check():
    assert not hasattr(cli_mod, "check_fits_card")
    base = dict(weight_bytes=16e9, bandwidth_bytes_s=936e9, flops_per_row=51.24e9,
                peak_flops_s=63e12, memory_bytes=24 * GIB)
    with pytest.raises(rl.RooflineInputError) as e:
        rl.Roofline(**base, free_bytes=10 * GIB)  # 10 + 14.90 > 24
    assert e.value.field == "free_bytes"
    assert str(e.value) == ("10 GiB free plus 14.90 GiB of weights exceeds the card's 24 "
                            "GiB")
    with pytest.raises(rl.RooflineInputError) as e:
        rl.Roofline(**{**base, "weight_bytes": 30e9})  # 27.94 GiB
    assert e.value.field == "weight_bytes" and "27.94 GiB of weights" in str(e.value)
    rl.Roofline(**base, free_bytes=9 * GIB)  # 9 + 14.90 fits


def test_non_finite_input_and_result(tmp_path):
    # 1e300 TFLOP/s is 1e312 FLOP/s: inf in floating point
    line = one_line_error(roofline(tmp_path, *R3090, "--tflops", "1e300"))
    assert line.endswith("--tflops: peak_flops_s must be a finite number > 0, got inf")
    assert cli_mod._non_finite({"points": [{"a": 1.0}, {"a": math.nan}]})[0] == "points.1.a"
    assert cli_mod._non_finite({"bend_streams": None, "x": [1.0, 2]}) is None
    # a bend that never comes is said in words (JSON null), never printed as inf
    out = json.loads(roofline(tmp_path, *R3090, "--tflops", "1e6", "--streams", "1",
                              "--json").stdout)
    assert out["bend_streams"] is None
    text = roofline(tmp_path, *R3090, "--tflops", "1e6", "--streams", "1").stdout
    assert "no bend (memory-bound at every stream count)" in text and "inf" not in text


def _model_type(value):
    def edit(cfg):
        cfg["text_config"]["model_type"] = value
    return edit


def test_unknown_model_type(tmp_path):
    cfg = qwen_copy(tmp_path, _model_type("gpt_oss"))
    line = one_line_error(cli("geometry", cfg))
    assert line.startswith(f"claimcheck: error: {cfg}: text_config.model_type: unknown "
                           "model_type 'gpt_oss': its weights are not modelled here; "
                           "modelled: llama, mistral, mixtral, qwen2, ")
    line = one_line_error(roofline(tmp_path, "--card", "h200", "--weights-format", "bf16",
                                   config=cfg))
    assert "text_config.model_type: unknown model_type 'gpt_oss'" in line


def test_duplicate_json_key(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(QWEN.read_text().replace('"text_config": {',
                                          '"text_config": {\n    "hidden_size": 4096,', 1))
    line = one_line_error(cli("geometry", p))
    assert line == (f"claimcheck: error: {p}: hidden_size: given twice in one object (a JSON "
                    "reader keeps the last without a word)")


def test_memory_wall_needs_memory_per_stream():
    # the wall of 9.10 GiB at 144 MiB per stream, by the one function
    assert rl.memory_wall_streams(24 * GIB - 16e9, 144 * MIB, 0, 0) == 64
