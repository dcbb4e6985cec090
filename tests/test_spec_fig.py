"""The speculation figure: deterministic, drafting claims only, the run's stream counts said."""

from __future__ import annotations

import pandas as pd

from claimcheck.figures import figstyle
from claimcheck.figures.spec_fig import speculation_figure

VERDICTS = pd.DataFrame({
    "id": ["b-claim", "a-claim", "plain"], "card": ["rtx5090", "rtx3090", "rtx3090"],
    "verify_rows_per_stream": [16, 4, 1], "verify_rows_high": [None, 11, None],
    "tau_needed": [4.3, 2.1, 0.5], "tau_needed_high": [None, 2.3, None],
    "tokens_kept_stated": [5.016, None, None]})
SPEC = pd.DataFrame({"run": ["r"] * 2, "streams": [8, 1], "verify_rows_per_stream": [4, 4],
                     "tokens_kept_per_verify": [2.49, 2.51]})


def test_the_same_tables_give_the_same_bytes(tmp_path):
    a = figstyle.save(speculation_figure(VERDICTS, SPEC), tmp_path / "a")
    b = figstyle.save(speculation_figure(VERDICTS, SPEC), tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_drafting_claims_only_and_the_runs_streams_in_the_legend():
    fig = speculation_figure(VERDICTS, SPEC)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "H200 run, 1, 8 streams: 4 rows, 2.49-2.51 kept (forced)" in labels
    # the plain claim (1 row) is not drawn: no point at (1, 0.5)
    pts = {(float(x), float(y)) for ln in ax.get_lines()
           for x, y in zip(ln.get_xdata(), ln.get_ydata(), strict=True)}
    assert (4.0, 2.1) in pts and (16.0, 4.3) in pts and (16.0, 5.016) in pts
    assert (1.0, 0.5) not in pts
    assert ax.get_xlabel() and ax.get_ylabel() and "Source:" in " ".join(
        t.get_text() for t in fig.texts)


def test_the_caption_says_each_runs_forced_acceptance_from_the_table():
    two = pd.concat([SPEC, pd.DataFrame({"run": ["s"] * 2, "streams": [1, 64],
                                         "verify_rows_per_stream": [2, 2],
                                         "tokens_kept_per_verify": [2.0, 2.0]})])
    words = " ".join(t.get_text() for t in speculation_figure(VERDICTS, two).texts)
    assert ("Stars: the H200 drafting runs (dummy weights), acceptance forced at 4 rows, "
            "2.5 tokens kept; 2 rows, 2 tokens kept per verify.") in " ".join(words.split())
    labels = [t.get_text() for t in speculation_figure(VERDICTS, two).axes[0]
              .get_legend().get_texts()]
    assert "H200 run, 1, 64 streams: 2 rows, 2.00 kept (forced)" in labels
    one = " ".join(t.get_text() for t in speculation_figure(VERDICTS, SPEC).texts)
    assert "Star: the H200 drafting run (dummy weights), acceptance forced at 4 rows, 2.5 " \
        "tokens kept per verify." in " ".join(one.split())
