"""The model figure: its count of steps within 5% (hand-made rows) and that it draws."""

from __future__ import annotations

from claimcheck.figures import model_fig


def _row(protocol, streams, e2e_err, dec_err, calib=False):
    m = 100.0 * streams
    return {"engine": "e", "card": "h200", "weights": "dummy", "protocol": protocol,
            "run": f"r-{protocol}", "streams": streams, "step": 0, "repeat": 1,
            "calibration_step": calib,
            "predicted_e2e_tok_s": m * (1 + e2e_err), "measured_e2e_tok_s": m,
            "e2e_error": e2e_err,
            "predicted_decode_tok_s": None if dec_err is None else m * (1 + dec_err),
            "measured_decode_tok_s": None if dec_err is None else m,
            "decode_error": dec_err,
            "bandwidth_step": "r-a step 0 repeat 1", "compute_step": "r-a step 2 repeat 1",
            "compute_source": "x", "overhead_step": "r-a step 0 repeat 1"}


ROWS = [_row("a", 1, 0.30, None, calib=True),   # calibration step: left out of the count
        _row("a", 8, 0.02, 0.04),               # both within 5%
        _row("b", 32, 0.03, 0.08),              # e2e only
        _row("b", 64, -0.06, None),             # neither (held: no decode)
        _row("b", 64, 0.05, -0.05)]             # on the band's edge: within


def test_hits_counts_non_calibration_steps_by_hand():
    assert model_fig.hits(ROWS) == (2, 3, 4)


def test_figure_is_drawn_and_saved(tmp_path):
    paths = model_fig.write_rows(ROWS, "e", tmp_path / "model-e")
    assert [p.suffix for p in paths] == [".png", ".svg"]
    svg = paths[1].read_text()
    assert paths[0].stat().st_size > 10_000 and "<svg" in svg
    # an engine none of whose runs could be calibrated (a CPU run in the SLURM test) draws a
    # notice naming it, not a failed rule
    fig = model_fig.figure(ROWS, "f")
    assert fig.axes[0].texts[0].get_text().startswith("f: no calibrated model: none of its runs")


def test_a_failed_step_is_neither_counted_nor_drawn():
    failed = {**_row("b", 16, 0.01, 0.01), "step_status": "failed"}
    assert model_fig.hits(ROWS + [failed]) == (2, 3, 4)  # as without it
    fig = model_fig.figure(ROWS + [failed], "e")
    assert "(1 failed step not drawn)" in fig._suptitle.get_text()
    drawn = sum(len(c.get_offsets()) for c in fig.axes[0].collections[:-1])
    assert drawn == sum(len(c.get_offsets()) for c in
                        model_fig.figure(ROWS, "e").axes[0].collections[:-1])


def test_batch_writes_every_engine_from_one_read(tmp_path):
    from claimcheck.pipeline.batch import model_figures
    from claimcheck.runs.tables import write_csv

    csv = tmp_path / "model.csv"
    write_csv([{**r, "engine": e} for e in ("e", "f") for r in ROWS], csv)
    written = list(model_figures(csv, ["e", "f"], str(tmp_path / "model-{engine}")))
    assert written == [str(tmp_path / "model-e.png"), str(tmp_path / "model-f.png")]
    for w in written:
        assert (tmp_path / w).with_suffix(".svg").exists()
