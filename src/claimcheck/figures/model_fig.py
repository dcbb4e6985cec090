"""The model figure of one engine: predicted against measured for every committed step.

Left: predicted against measured aggregate tok/s (end to end filled, decode aggregate
hollow), log axes, the line of equality and the 5% band. Right: the error (predicted /
measured - 1) against streams, the same band. Colour is the protocol; calibration steps
(the model was fitted on them, so they test nothing) are drawn in grey. Reads
``data/derived/model.csv`` only (rows of :func:`claimcheck.predict.modeltable.table_rows`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from claimcheck.verdicts.accuracy import within, within_both
from claimcheck.files.frames import flag, number
from claimcheck.verdicts.verdicts import TOLERANCE
from claimcheck.figures import figstyle as fs
from claimcheck.files.framefiles import read_rows


def _calib(r: Mapping[str, Any]) -> bool:
    return flag(r.get("calibration_step"))


def hits(rows: Sequence[Mapping[str, Any]], tolerance: float = TOLERANCE
         ) -> tuple[int, int, int]:
    """(steps within ``tolerance`` on both end to end and decode aggregate, within it on end
    to end, steps) over the rows that are neither calibration (or term-source) steps nor
    failed steps."""
    rest = [r for r in rows if not _calib(r)
            and str(r.get("step_status") or "complete") == "complete"]
    both = sum(within_both(number(r["e2e_error"]), number(r["decode_error"]), tolerance)
               for r in rest)
    e2e = sum(within(number(r["e2e_error"]), tolerance) for r in rest)
    return both, e2e, len(rest)


def figure(rows: Sequence[Mapping[str, Any]], engine: str) -> Any:
    """The figure for one engine's rows of model.csv."""
    rows = [r for r in rows if r["engine"] == engine]
    if not rows:  # every run of it lacked a usable calibration on its card (named in the log)
        return fs.notice(f"{engine}: no calibrated model: none of its runs has a usable "
                         "calibration on its card (the model table's log names each run)")
    failed = [r for r in rows if str(r.get("step_status") or "complete") != "complete"]
    rows = [r for r in rows if r not in failed]  # a failed step is never compared
    protocols = sorted({r["protocol"] for r in rows})
    colour = fs.colours(protocols)
    fig, (ax, ax_err) = fs.new(11.5, 4.8, ncols=2)
    lo, hi = float("inf"), 0.0
    for r in rows:
        c = fs.MUTED if _calib(r) else colour[r["protocol"]]
        for kind, filled in (("e2e", True), ("decode", False)):
            p, m = number(r[f"predicted_{kind}_tok_s"]), number(r[f"measured_{kind}_tok_s"])
            if p is None or m is None:
                continue
            lo, hi = min(lo, p, m), max(hi, p, m)
            style = dict(s=28, marker="o" if filled else "D", linewidths=1.0,
                         facecolors=c if filled else "none", edgecolors=c, zorder=3)
            ax.scatter(m, p, **style)
            ax_err.scatter(int(r["streams"]), 100 * (p / m - 1), **style)
    span = [lo / 1.3, hi * 1.3]
    ax.fill_between(span, [x * (1 - TOLERANCE) for x in span],
                    [x * (1 + TOLERANCE) for x in span], color=fs.GRID, zorder=1,
                    label=f"within {TOLERANCE:.0%}")
    ax.plot(span, span, color=fs.INK, lw=0.7, zorder=2)
    ax.set(xscale="log", yscale="log", xlim=span, ylim=span,
           xlabel="measured aggregate tok/s (summed over the streams)",
           ylabel="predicted aggregate tok/s (calibrated step model)")
    ax_err.axhspan(-100 * TOLERANCE, 100 * TOLERANCE, color=fs.GRID, zorder=1)
    ax_err.axhline(0, color=fs.INK, lw=0.7, zorder=2)
    ax_err.set_xscale("log", base=2)
    ax_err.set(xlabel="streams (concurrent independent requests)",
               ylabel="predicted / measured - 1 (%)")
    handles = [plt.Line2D([], [], ls="", marker="s", color=colour[p], label=p)
               for p in protocols]
    handles += [plt.Line2D([], [], ls="", marker="s", color=fs.MUTED,
                           label="calibration or term-source step (fitted, tests nothing)"),
                plt.Line2D([], [], ls="", marker="o", color=fs.INK, label="end to end"),
                plt.Line2D([], [], ls="", marker="D", mfc="none", color=fs.INK,
                           label="decode aggregate"),
                plt.Rectangle((0, 0), 1, 1, color=fs.GRID, label=f"within {TOLERANCE:.0%}")]
    ax_err.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    both, e2e, n = hits(rows)
    first = rows[0]
    dummy = "dummy weights, " if first.get("weights") == "dummy" else ""
    card = first.get("card") or "?"
    fig.suptitle(f"{engine} on {card} ({dummy}each run on one card): the calibrated step "
                 f"model against every committed step\n{both} of {n} complete non-calibration steps within "
                 f"{TOLERANCE:.0%} on both end to end and decode aggregate, {e2e} of {n} on "
                 "end to end" + (f" ({len(failed)} failed step{'s' if len(failed) != 1 else ''}"
                                 " not drawn)" if failed else ""),
                 x=0.0, y=1.04, ha="left", fontsize=10)
    cals = sorted({(r["bandwidth_step"], r["compute_step"] or r["compute_source"],
                    r["overhead_step"]) for r in rows})
    cal_text = "; ".join(f"bandwidth {b}, compute {c}, overhead {o}" for b, c, o in cals)
    fs.source_line(fig, "\n".join(textwrap.wrap(
        f"data/derived/model.csv (claimcheck model; model/model.py, predict/modeltable.py), "
        f"{len({r['run'] for r in rows})} runs in data/raw/runs/, {dummy}each run measured "
        f"on one {card}. Calibration by the stated rule: {cal_text}. Decode aggregate = "
        "tokens after each first / time with any request decoding; end to end = all tokens / first "
        "send to last token.", 190)))
    return fig


def write_rows(rows: Sequence[Mapping[str, Any]], engine: str, out_base: str | Path
               ) -> list[Path]:
    """Draw one engine's figure from model.csv rows and save PNG + SVG."""
    return fs.save(figure(rows, engine), out_base)


def write(model_csv: str | Path, engine: str, out_base: str | Path) -> list[Path]:
    """Draw one engine's figure from model.csv and save PNG + SVG."""
    return write_rows(read_rows(model_csv), engine, out_base)
