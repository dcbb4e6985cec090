"""The figures an article could print: the H200 decode figure (BF16 and FP8 against their
bandwidth lines), the long-prompt figure, the wave-admission figure (times to first token,
not an empty throughput plot), the bend figure (queued levels, the departure from the line)
and published points of other cards named by their card."""

from __future__ import annotations

import pandas as pd
import pytest

from claimcheck.figures import figstyle, h200_fig, run_plots
from claimcheck.files.paths import RAW, RUNS
from claimcheck.findings import findings_decode as FD
from claimcheck.physics.cardfiles import load_cards, load_ceilings
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.pipeline.run_figures import wave_run_figure
from claimcheck.runs.runfiles import bench_data

WAVE = "h200-20261201-bf16-dummy-256-wave-admission"


@pytest.fixture(scope="module")
def committed(committed_records):
    runs = list(committed_records)
    geom = geometry_from_file(RAW / "models/qwen3.8-27b/config.json")
    cards, ceilings = load_cards(), load_ceilings(RAW / "ceilings.csv")
    return runs, [s for r in runs for s in r.rows], geom, cards, ceilings


@pytest.fixture(scope="module")
def panels(committed):
    runs, rows, geom, cards, ceilings = committed
    return h200_fig.decode_panels(runs, "h200", geom, cards, ceilings)


def panel(p, ctx, fmt):
    return next(x for x in p.panels[ctx] if x.fmt == fmt)


def test_decode_figure_draws_the_body_tables_numbers(committed, panels):
    runs, rows, *_ = committed
    assert sorted(panels.panels) == [640, 8192]  # the contexts of the body's first table
    bf16 = panel(panels, 640, "bf16")
    pts = {n: (v, s) for n, v, s in bf16.points}
    assert set(pts) >= {1, 8, 16, 32, 64, 96, 128, 192, 256}
    # the body's first table prints 5,644.0 tok/s and 65% at 256 streams, 640 tokens: the
    # median of the eight 256-row steps reported (the bend runs' 5,647.6 and 5,653.1;
    # decode-rows-to-256's 5,499.9 and 5,494.7 on 2026-12-04, 5,661.4 and 5,662.4 on
    # 2026-12-06, 5,622.5 and 5,640.4 in its second run that day): (5,640.4 + 5,647.6) / 2
    assert pts[256][0] == pytest.approx((5640.434935 + 5647.552492) / 2, abs=0.05)
    assert round(pts[256][1], 2) == 0.65
    # one road: the bandwidth-share finding's rows, the same levels
    _, frame = h200_fig.card_frame(runs, "h200")
    d = pd.DataFrame(FD.bandwidth_share(frame).rows)
    at = d[(d["weight_format"] == "fp8") & (d["context_tokens_per_stream"] == 8192)]
    assert [(n, v) for n, v, _ in panel(panels, 8192, "fp8").points] == list(
        zip(at["streams"], at["decode"], strict=True))
    assert max(n for n, _ in bf16.line) == 256
    assert max(n for n, _ in panel(panels, 8192, "bf16").line) == 64


def test_bandwidth_line_is_bytes_over_datasheet_bandwidth(committed, panels):
    runs, rows, *_ = committed
    ei = next(r for r in runs if r.name == "h200-20261201-bf16-dummy-256-bend").engine_inputs
    bytes_one = ei.weight_bytes + 2 * ei.state_bytes_per_stream + 640 * ei.kv_bytes_per_token
    line = dict(panel(panels, 640, "bf16").line)
    assert line[1] == pytest.approx(4800e9 / bytes_one, rel=1e-6)  # H200: 4,800 GB/s
    assert line[1] == pytest.approx(92.79, abs=0.01)  # the body table's 93
    # at every measured level, the line is the level's own roofline_tok_s
    _, frame = h200_fig.card_frame(runs, "h200")
    d = pd.DataFrame(FD.bandwidth_share(frame).rows)
    at = d[(d["weight_format"] == "bf16") & (d["context_tokens_per_stream"] == 640)]
    for n, roof in zip(at["streams"], at["roofline_tok_s"], strict=True):
        assert line[n] == pytest.approx(roof, rel=1e-9)


def test_crossover_and_eta_band_are_the_findings(committed, panels):
    runs, rows, *_ = committed
    ei = next(r for r in runs if r.name == "h200-20261201-bf16-dummy-256-bend").engine_inputs
    assert panels.crossover["bf16"] == pytest.approx(
        ei.weight_bytes / (2 * ei.state_bytes_per_stream))
    assert round(panels.crossover["bf16"]) == 167 and round(panels.crossover["fp8"]) == 173
    _, frame = h200_fig.card_frame(runs, "h200")
    d = pd.DataFrame(FD.bandwidth_share(frame).rows)
    at = d[(d["weight_format"] == "fp8") & (d["context_tokens_per_stream"] == 640)]
    assert panel(panels, 640, "fp8").eta_band == (at["share"].min(), at["share"].max())
    # each panel's band is its own context's (the body table: BF16 at 8,192 tokens 70% to
    # 74%; at 640 tokens 64% at 224 streams), not pooled over every context (64% to 74%)
    assert [round(x, 2) for x in panel(panels, 8192, "bf16").eta_band] == [0.70, 0.74]
    assert round(panel(panels, 640, "bf16").eta_band[0], 2) == 0.64


def texts(fig):
    return [t.get_text() for t in fig.texts] + [
        t.get_text() for ax in fig.axes for t in ax.texts]


def test_decode_figure_title_caption_and_same_bytes(committed, tmp_path):
    runs, rows, geom, cards, ceilings = committed
    make = lambda: h200_fig.decode_figure(runs, "h200", geom, cards, ceilings,  # noqa: E731
                                          "Qwen3.8-27B")
    fig = make()
    title = fig._suptitle.get_text()
    assert len(title) < 80 and "dummy weights" in title and "BF16, FP8 and W4A16" in title
    words = " ".join(texts(fig))
    assert "η: the share of that line a step reaches" in words
    assert "state read and written\n= weights at 99 (W4A16), 167 (BF16), 173 (FP8)" in words
    labels = fig.axes[0].get_legend_handles_labels()[1]
    # the first panel (640 tokens): BF16 71% down to 64% at 224 streams, its own band
    assert "BF16: η 64%–71% of its line (dashed edges)" in labels
    a = figstyle.save(fig, tmp_path / "a")
    b = figstyle.save(make(), tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_long_prompt_figure_draws_the_finding_rows(committed):
    runs, rows, *_ = committed
    lr = h200_fig.long_rows(runs, "h200")
    assert sorted((r["weight_format"], r["streams"]) for r in lr) == [
        ("bf16", 8), ("bf16", 16), ("bf16", 32), ("fp8", 8), ("fp8", 16), ("fp8", 32),
        ("w4a16", 8), ("w4a16", 16), ("w4a16", 32),
        # the int8 engine's run of 2026-12-05, complete
        ("w4a16:humming+int8", 8), ("w4a16:humming+int8", 16), ("w4a16:humming+int8", 32),
        # Machete's run was cut in its 32-stream step: 8 and 16 only
        ("w4a16:machete", 8), ("w4a16:machete", 16)]
    fig = h200_fig.long_figure(runs, "h200", "NVIDIA H200")
    assert len(fig._suptitle.get_text()) < 80 and "dummy weights" in fig._suptitle.get_text()
    a1, a2 = fig.axes
    lines = {ln.get_label(): ln for ln in a1.get_lines()}
    assert len(lines) == 15  # three readings of three formats, of Machete and of the int8 engine
    bf = sorted((r for r in lr if r["weight_format"] == "bf16"), key=lambda r: r["streams"])
    assert list(lines["BF16: all streams decoding"].get_ydata()) == [r["decode"] for r in bf]
    assert list(lines["BF16: end to end"].get_ydata()) == [r["e2e_aggregate_tok_s"] for r in bf]
    # the body's long table: BF16 at 8 streams, 460.0 all decoding and 289.7 end to end
    assert (round(bf[0]["decode"], 1), round(bf[0]["e2e_aggregate_tok_s"], 1)) == (460.0, 289.7)
    short = {ln.get_label(): ln for ln in a2.get_lines()}["BF16, short prompts"]
    assert list(short.get_ydata()) == [r["short_share"] for r in bf]


def test_wave_admission_draws_time_to_first_token_by_place(committed):
    runs, rows, *_ = committed
    run = next(r for r in runs if r.name == WAVE)
    done = [s for s in rows if s["run"] == WAVE and s["reported"]
            and s["status"] == "complete"]
    assert done and all(s["output_len"] <= 2 for s in done)
    fig = wave_run_figure(run, done)
    (ax,) = fig.axes
    assert ax.get_ylabel() == "time to first token, ms"
    lines = ax.get_lines()
    assert len(lines) == 12  # 4 steps x 3 repeats, none empty
    # the first series: step 0 repeat 1, every TTFT of its bench.json in ms
    bench = bench_data(RUNS / WAVE / "steps" / "00-c16-r1")
    assert sorted(lines[0].get_ydata()) == pytest.approx(
        sorted(1000 * t for t in bench["ttfts"]))
    assert list(lines[0].get_xdata()) == list(range(1, 17))


def test_bend_figure_draws_queued_levels_and_the_departure():
    roof = {96: 5400.0, 128: 6400.0, 192: 7800.0, 256: 8700.0}
    eta = {96: 0.70, 128: 0.71, 192: 0.65, 256: 0.62}
    pts = [{"streams": n, "headline": eta[n] * r, "headline_per_stream": eta[n] * r / n,
            "e2e": 0.9 * eta[n] * r, "roofline_tok_s": r, "roofline_per_stream_tok_s": r / n}
           for n, r in roof.items()]
    queued = [{"streams": 384, "running": 256, "e2e": 4640.0, "roofline_tok_s": 8700.0},
              {"streams": 512, "running": 256, "e2e": 4980.0, "roofline_tok_s": 8700.0}]
    fig = run_plots.measured_figure(pts, "bend", "src", "streams × 1000 / median TPOT",
                                queued=queued)
    a1 = fig.axes[0]
    lines = {ln.get_label(): ln for ln in a1.get_lines()}
    q = lines["queued: end to end (256 streams run at once, the rest wait)"]
    assert list(q.get_xdata()) == [384, 512] and list(q.get_ydata()) == [4640.0, 4980.0]
    held = lines["the line × η at 96 streams (70%): where the step keeps its share"]
    assert list(held.get_ydata()) == pytest.approx([0.70 * r for r in roof.values()])
    # only the levels more than 2 points off 70% carry their η
    assert sorted(t.get_text() for t in a1.texts if t.get_text().startswith("η")) == [
        "η 62%", "η 65%"]


def test_other_cards_published_points_name_their_card():
    pts = [{"streams": n, "headline": 10.0 * n, "headline_per_stream": 10.0, "e2e": None,
            "roofline_tok_s": 20.0 * n, "roofline_per_stream_tok_s": 20.0} for n in (1, 8)]
    claims = [{"streams": 8, "aggregate_tok_s": 90.0, "per_stream_tok_s": 11.0,
               "card": "b200", "same": True},
              {"streams": 1, "aggregate_tok_s": 30.0, "per_stream_tok_s": 30.0,
               "card": "rtx3090", "same": False}]
    fig = run_plots.measured_figure(pts, "t", "src", "h", claims=claims)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "published on B200 (its own card), same definition" in labels
    assert "published on RTX3090 (its own card), other definitions" in labels


def test_a_run_cut_short_says_so_in_its_figure_title(committed):
    from claimcheck.pipeline.run_figures import run_title
    runs = {r.name: r for r in committed[0]}
    cut = runs["h200-20261204-w4a16-dummy-machete-16k-long-prompts"]  # 3 of 4 steps
    assert run_title(cut) == (f"{cut.name}: {cut.label} · run interrupted: its complete "
                              "steps")
    whole = runs["h200-20261204-w4a16-dummy-marlin-16k-long-prompts"]
    assert run_title(whole) == f"{whole.name}: {whole.label}"


def test_levels_that_never_all_decoded_are_drawn_by_end_to_end_alone():
    """The H100's 256-slot engine (its KV pool holds 90 requests of 128 + 512 tokens): the
    160-, 224- and 256-stream levels queue inside the engine, not in the server, so they
    are hollow end-to-end squares with no max-num-seqs line; the 64-stream level stays."""
    pts = [{"streams": 64, "headline": 2220.0, "headline_per_stream": 34.7, "e2e": 2064.0,
            "roofline_tok_s": 2900.0, "roofline_per_stream_tok_s": 45.3}]
    waited = [{"streams": n, "running": 90, "e2e": e, "roofline_tok_s": None, "why": "waited"}
              for n, e in ((160, 2423.0), (224, 2325.0), (256, 2535.0))]
    fig = run_plots.measured_figure(pts, "t", "src", "streams × 1000 / median TPOT",
                                    queued=waited)
    a1 = fig.axes[0]
    lines = {ln.get_label(): ln for ln in a1.get_lines()}
    w = lines["never all decoding: end to end (at most 90 at once, the rest wait for a first "
              "token)"]
    assert list(w.get_xdata()) == [160, 224, 256]
    assert list(w.get_ydata()) == [2423.0, 2325.0, 2535.0]
    assert list(lines["measured: streams × 1000 / median TPOT"].get_xdata()) == [64]
    assert not any(t.get_text().startswith("queued past") for t in a1.texts)


def test_levels_with_no_all_streams_decoding_rate_are_drawn_by_end_to_end(tmp_path):
    """The H100's admit-then-decode (7,681 + 511 tokens a request; its KV pool held 28 of
    them at once): the 32- and 64-stream levels never had all streams decoding, so the
    protocol's headline (the rate while all decode) has no value there. Both are drawn as
    hollow end-to-end squares (342.0 and 383.0 tok/s, the step table's), not left out; the
    headline line keeps the 8- and 16-stream levels."""
    from claimcheck.pipeline.derive import claims_table, write_run_record
    from claimcheck.pipeline.run_figures import measured_run
    from claimcheck.runs.run import load_run

    run = load_run(RUNS / "h100-20261206-bf16-dummy-16k-admit-then-decode")
    config = RAW / "models/qwen3.8-27b/config.json"
    write_run_record(run, geometry_from_file(config), load_cards(),
                     load_ceilings(RAW / "ceilings.csv"), tmp_path / "run.json")
    claims_table(RAW / "claims.csv", RAW / "cards.csv", tmp_path / "claims.csv",
                 tmp_path / "claims.json")
    fig, _ = measured_run(str(tmp_path / "run.json"), str(tmp_path / "claims.json"),
                          str(config))
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    w = lines["never all decoding: end to end (at most 28 at once, the rest wait for a first "
              "token)"]
    assert list(w.get_xdata()) == [32, 64]
    assert [round(y, 1) for y in w.get_ydata()] == [342.0, 383.0]
    head = next(ln for label, ln in lines.items() if label.startswith("measured: all"))
    assert list(head.get_xdata()) == [8, 16]
