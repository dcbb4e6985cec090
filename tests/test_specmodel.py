"""The drafting step model (claimcheck.model.specmodel), by hand: pure functions, no run."""

from __future__ import annotations

import json

import pytest

from claimcheck.files.paths import ROOT
from claimcheck.model import specmodel as sm

CONFIG = ROOT / "data/raw/models/qwen3.8-27b/config.json"


def test_a_draft_pass_reads_the_mtp_layer_its_fc_and_the_head():
    cfg = json.loads(CONFIG.read_text())
    # by hand from config.json: hidden 5120, 24 heads x 256 with the output gate (x2),
    # 4 KV heads x 256, MLP 17,408, vocab 248,320, one MTP layer
    q = 5120 * 24 * 256 * 2          # 62,914,560
    kv = 2 * 5120 * 4 * 256          # 10,485,760
    o = 24 * 256 * 5120              # 31,457,280
    mlp = 3 * 5120 * 17408           # 267,386,880
    fc = 2 * 5120 * 5120             # 52,428,800
    head = 248320 * 5120             # 1,271,398,400
    assert sm.draft_pass_params(cfg) == q + kv + o + mlp + fc + head == 1_696_071_680
    assert sm.draft_pass_bytes(cfg) == 3_392_143_360  # BF16: about the 3.4 GB of the hand rule


def test_a_config_without_mtp_is_named():
    cfg = {"hidden_size": 8, "num_attention_heads": 1, "num_key_value_heads": 1,
           "head_dim": 8, "intermediate_size": 16, "vocab_size": 32}
    with pytest.raises(sm.SpecModelError, match="mtp_num_hidden_layers"):
        sm.draft_pass_params(cfg)


def test_the_step_is_plain_plus_rows_bent_plus_draft_passes():
    # 10 ms plain at 8 streams, k = 3 (4 rows), 0.1 ms a row, 1 ms of bytes and 0.2 ms of
    # overhead a pass, bend 1.5: (10 + 8 x 3 x 0.1) x 1.5 + 3 x 1.2 = 18.6 + 3.6 = 22.2 ms
    v = sm.verify_step(0.010, 8, 3, 1e-4, 1e-3, 2e-4, bend=1.5)
    assert v.verify_rows == 4 and v.rows_s == pytest.approx(2.4e-3)
    assert v.target_s == pytest.approx(18.6e-3)
    assert v.step_s == pytest.approx(22.2e-3)
    assert v.tpot_s(2.5) == pytest.approx(8.88e-3)  # 22.2 / 2.5


@pytest.mark.parametrize("kept", [0.5, 0.0, float("nan")])
def test_fewer_than_one_token_kept_is_refused(kept):
    with pytest.raises(sm.SpecModelError, match="tokens kept"):
        sm.tpot_s(0.02, kept)


def test_a_step_needs_a_stream_and_a_draft():
    with pytest.raises(sm.SpecModelError, match="k >= 1"):
        sm.verify_step(0.01, 1, 0, 1e-4, 1e-3, 0.0)


BEND = ((96, 1.02), (128, 1.01), (192, 1.10), (256, 1.15))


@pytest.mark.parametrize("streams,rows,want", [
    (1, 4, 1.0),            # 4 rows: not measured, 1
    (8, 4, 1.0),            # 32 rows: below the first measured count, 1
    (32, 4, 1.01),          # 128 rows
    (48, 4, 1.10),          # 192 rows
    (64, 4, 1.15),          # 256 rows over 64 rows (1): the plain step's bend
    (40, 4, 1.055),         # 160 rows: halfway between 1.01 and 1.10
    (128, 2, 1.15 / 1.01),  # the plain step at 128 streams carries its own 1.01
])
def test_the_bend_is_the_row_factor_at_b_x_r_over_the_one_at_b(streams, rows, want):
    assert sm.bend(BEND, streams, rows) == pytest.approx(want)


def test_the_overhead_is_the_least_squares_fit_and_leave_one_out_refits():
    # three k = 3 steps predicted at 10, 20, 30 ms without overhead, measured 10.3, 20.9,
    # 30.6: residuals 0.3, 0.9, 0.6 ms, so c = (3 x 1.8) / (3 x 9) = 0.2 ms a pass
    steps = [(sm.verify_step(t, 1, 3, 0.0, 0.0, 0.0), t + r)
             for t, r in ((0.010, 0.3e-3), (0.020, 0.9e-3), (0.030, 0.6e-3))]
    assert sm.fit_pass_overhead_s(steps) == pytest.approx(0.2e-3)
    # leave the first out: c from 0.9 and 0.6 = 0.25 ms, so 10 + 0.75 = 10.75 ms
    loo = sm.leave_one_out(steps)
    assert loo[0] == pytest.approx(10.75e-3)
    assert loo[1] == pytest.approx(20.45e-3)  # c = 0.15 from 0.3 and 0.6
    assert loo[2] == pytest.approx(30.6e-3)   # c = 0.2 from 0.3 and 0.9
    assert sm.leave_one_out(steps[:1]) == [None]  # nothing left to fit on
    with pytest.raises(sm.SpecModelError, match="no drafting step"):
        sm.fit_pass_overhead_s([])
