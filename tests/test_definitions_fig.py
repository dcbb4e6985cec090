"""The definitions figure: written for a committed run, byte-stable, default step chosen."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from claimcheck.figures import definitions_fig
from claimcheck.runs.run import load_run

RUN = Path(__file__).resolve().parents[1] / "data" / "raw" / "runs" / \
    "h200-20261129-bf16-dummy-hyperqwen-batch"


def test_definitions_figure_png_only_and_byte_stable(tmp_path):
    data = load_run(RUN)
    # the most streams, last repeat: step 0 repeat 2
    assert data.traces[definitions_fig.default_step(data)].record["repeat"] == 2
    a = definitions_fig.write(data, tmp_path / "a" / "defs")
    b = definitions_fig.write(RUN, tmp_path / "b" / "defs")
    assert [p.suffix for p in a] == [".png"]  # a per-run figure: PNG only
    assert not (tmp_path / "a" / "defs.svg").exists()
    for pa, pb in zip(a, b, strict=True):
        assert pa.stat().st_size > 10_000
        assert pa.read_bytes() == pb.read_bytes()


def test_default_step_skips_the_held_prefill_step():
    # single-stream-2: steps 0 (128 + 512), 1 (7,681 + 511), 2 (16 x 7,681 + 2), all 1 stream;
    # step 2 sorts last but has no decode to draw, so step 1 is drawn
    data = load_run(RUN.parent / "h200-20261129-bf16-dummy-16k-single-stream-2")
    assert data.traces[definitions_fig.default_step(data)].record["step"] == 1


def test_definitions_figure_refuses_a_run_without_steps(tmp_path):
    data = dataclasses.replace(load_run(RUN), traces=())  # complete, yet no timeline
    with pytest.raises(ValueError, match="no step has a bench.json"):
        definitions_fig.write(data, tmp_path / "x")


def test_held_prefill_is_a_named_rule():
    from claimcheck.readings.definitions import is_held_prefill
    assert is_held_prefill(2) and is_held_prefill(1)
    assert not is_held_prefill(3) and not is_held_prefill(None)


def test_the_run_record_reads_no_decode_rate_from_a_held_step():
    run = load_run(RUN.parent / "h200-20261129-bf16-dummy-16k-single-stream-2")
    held = [s for s in run.rows if s["output_len"] == 2]
    assert len(held) == 1
    s = held[0]
    # bench.json keeps its median TPOT (one gap, ~10 ms); no tok/s is made of it
    assert s["median_tpot_ms"] is not None and 5 < s["median_tpot_ms"] < 20
    assert s["streams_x_1000_over_median_tpot_tok_s_per_stream"] is None
    assert s["streams_x_1000_over_median_tpot_tok_s"] is None
    assert s["streams_x_1000_over_mean_tpot_tok_s"] is None
    assert s["e2e_aggregate_tok_s"] > 0  # end to end stays (2 tokens per request)
