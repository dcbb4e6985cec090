"""The definitions figure of one run: why several tok/s figures are all true of one step.

Left: one step's aggregate under every definition, as a ratio to end to end. Right: that
step's token timeline (tokens per 100 ms, as tok/s, and the number of streams decoding)
with each definition's window drawn beneath it. Drawn in :mod:`claimcheck.figures.figstyle`.
"""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from claimcheck.figures import figstyle as fs
from claimcheck.readings import definitions as d
from claimcheck.readings.timeline import (
    binned_tokens,
    concurrency_steps,
    decoding_intervals,
    intervals_with_at_least,
)
from claimcheck.runs.run import Run, StepTrace, load_run

BIN_S = 0.1
LOG_INTERVAL_S = 10.0  # vLLM's stats lines cover the 10 s before their stamp

# Bars in this order, each a definition name from readings.definitions.
BAR_ORDER = ("e2e_aggregate_tok_s", "decode_aggregate_tok_s", "per_request_decode_tok_s",
             "streams_x_1000_over_mean_tpot_tok_s", "streams_x_1000_over_median_tpot_tok_s",
             "all_streams_decoding_tok_s", "engine_log_steady_tok_s", "fastest_second_tok_s")


def load_client(kind: str | None) -> str:
    """What made a run's load, in words, from its protocol's ``kind``: vLLM's benchmark
    client (``bench``, the default) or claimcheck's own client (every other kind)."""
    if (kind or "bench") == "bench":
        return "vllm bench serve --save-detailed: start, TTFT, ITLs, usage token counts"
    return (f"claimcheck's own load client (python -m claimcheck.measure.loadclient, {kind}): "
            "per-chunk arrival times and usage token counts")


def max_num_seqs(run: Run) -> int | None:
    """The server's max-num-seqs as the run's provenance records it."""
    return run.provenance.engine_config.max_num_seqs


def queued(run: Run, i: int) -> bool:
    """Whether step ``i`` asked for more streams than the server runs at once."""
    return d.is_queued(run.traces[i].record["streams"], max_num_seqs(run))


def default_step(run: Run) -> int:
    """Index of the step drawn by default: the most streams, last repeat, among steps that
    decode (a held-prefill step, 2 tokens or fewer out per request, has no decode to show)
    and whose streams all ran at once (a queued level's streams x 1000 / TPOT is no
    aggregate of what ran); the others are drawn only when nothing else is there."""
    def decodes(i: int) -> bool:
        return not run.traces[i].held_prefill

    best = max(range(len(run.traces)),
               key=lambda i: (decodes(i), not queued(run, i), run.traces[i].record["streams"],
                              run.traces[i].record["repeat"], run.traces[i].record["step"]))
    return best


def _log_windows(s: StepTrace) -> list[tuple[float, float]]:
    """The 10-s windows of the steady log lines, s from the step's first send (to +-1 s:
    the log is stamped in whole seconds on the server's clock)."""
    steady = [ln for ln in s.log_lines if ln.running >= s.timeline.streams
              and ln.prompt_tok_s == 0 and ln.generation_tok_s > 0 and ln.time]
    year = int(dt.datetime.fromtimestamp(s.window_unix_s[0], dt.UTC).year)
    out = []
    for ln in steady:
        t = dt.datetime.strptime(f"{year}-{ln.time}", "%Y-%m-%d %H:%M:%S")
        end = t.replace(tzinfo=dt.UTC).timestamp() - s.window_unix_s[0]
        out.append((end - LOG_INTERVAL_S, end))
    return out


def figure(run: Run, step_index: int | None = None) -> Any:
    """The figure for one step of a loaded run (default :func:`default_step`)."""
    i = default_step(run) if step_index is None else step_index
    s = run.traces[i]
    tl = s.timeline
    row = run.row_of(s)
    vals = {name: row[name] for name in d.DEFINITIONS}  # the step's row of the run's table
    e2e = vals["e2e_aggregate_tok_s"]
    t0 = tl.first_send_s

    fs.apply()
    fig = plt.figure(figsize=(11.5, 5.0))
    gs = fig.add_gridspec(2, 2, width_ratios=[1.0, 2.1], height_ratios=[2.2, 1.0],
                          wspace=0.42, hspace=0.12)
    ax_bar = fig.add_subplot(gs[:, 0])
    ax_tl = fig.add_subplot(gs[0, 1])
    ax_win = fig.add_subplot(gs[1, 1], sharex=ax_tl)

    # -- left: ratio to end to end
    names = [n for n in BAR_ORDER if vals.get(n) is not None]
    missing = [n for n in BAR_ORDER if vals.get(n) is None]
    aggs = [d.aggregate(n, vals[n], tl.streams, max_num_seqs(run)) for n in names]
    ratios = [a / e2e for a in aggs]
    y = list(range(len(names)))[::-1]
    colours = [fs.PALETTE[BAR_ORDER.index(n) % len(fs.PALETTE)] for n in names]
    ax_bar.barh(y, ratios, color=colours, height=0.62)
    for yy, r, a in zip(y, ratios, aggs, strict=True):
        ax_bar.annotate(f"{a:,.0f} tok/s  ({r:.3f}x)", (r, yy), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=7)
    ax_bar.set_yticks(y, [d.DEFINITIONS[n].label for n in names])
    ax_bar.axvline(1.0, color=fs.INK, lw=0.8)
    lo = min(ratios)
    ax_bar.set_xlim(min(0.9, lo - 0.02), max(ratios) * 1.32)
    ax_bar.set_xlabel(f"aggregate / end-to-end aggregate (ratio; axis from "
                      f"{ax_bar.get_xlim()[0]:g})")
    ax_bar.grid(axis="y", visible=False)
    asked = [d.DEFINITIONS[n].label for n in names if d.DEFINITIONS[n].sums_over == "asked"]
    most = row["most_decoding_at_once"]  # the step row's (runs.steprow), not recounted
    note = (f"{tl.streams} stream{'s' if tl.streams != 1 else ''}, {len(tl.requests)} "
            f"requests; aggregate = summed over the streams, per-request decode x "
            f"{tl.streams}")
    if queued(run, i):
        note += (f"; queued: the server runs {max_num_seqs(run)} at once, so the "
                 "streams x 1000 / TPOT bars count streams that did not run together")
    elif asked and most < tl.streams:
        note += (f"; at most {most} of the {tl.streams} decoding at once: "
                 f"{', '.join(asked)} sum streams that never decoded together")
    if missing:
        note += "; null here: " + ", ".join(d.DEFINITIONS[n].label for n in missing)
    note_lines = textwrap.wrap(note, 58)
    ax_bar.set_title("\n".join(note_lines), loc="left", fontsize=7, color=fs.MUTED)

    # -- right top: tokens per 100 ms and streams decoding
    xs, counts = binned_tokens(tl, BIN_S)
    ax_tl.step(xs, [c / BIN_S for c in counts], where="post", color=fs.PALETTE[5], lw=0.5,
               alpha=0.7, label="tokens per 100 ms, as tok/s")
    k = round(1.0 / BIN_S)
    smooth = [sum(counts[max(0, j - k + 1):j + 1]) / (k * BIN_S) for j in range(len(counts))]
    ax_tl.plot([x + BIN_S for x in xs], smooth, color=fs.INK, lw=0.9,
               label="tokens in the last 1 s, as tok/s")
    for n, ls in (("e2e_aggregate_tok_s", "-"), ("all_streams_decoding_tok_s", "--"),
                  ("fastest_second_tok_s", ":")):
        if vals.get(n) is not None:
            ax_tl.axhline(vals[n], color=fs.PALETTE[BAR_ORDER.index(n)], lw=0.9, ls=ls,
                          label=f"{d.DEFINITIONS[n].label}: {vals[n]:,.0f} tok/s")
    ax_tl.set_ylabel("aggregate, tok/s")
    ax_tl.set_ylim(0, max(c / BIN_S for c in counts) * 1.25)
    ax_tl.tick_params(labelbottom=False)
    ax2 = ax_tl.twinx()
    steps_ = concurrency_steps(decoding_intervals(tl))
    ax2.step([0.0] + [t - t0 for t, _ in steps_], [0] + [c for _, c in steps_], where="post",
             color=fs.PALETTE[1], lw=0.9, label="streams decoding")
    ax2.set_ylim(0, tl.streams * 1.25)
    ax2.set_ylabel("streams decoding", color=fs.PALETTE[1])
    ax2.grid(False)
    ax2.spines["right"].set_visible(True)
    h1, l1 = ax_tl.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax_tl.legend(h1 + h2, l1 + l2, loc="upper left", bbox_to_anchor=(1.09, 1.0))
    ax_tl.set_title(f"{s.label}: token timeline", loc="left")
    weights = run.provenance.weights_label or run.provenance.weights or ""
    if run.drafts:  # "dummy weights, acceptance forced" (the words in the source line)
        weights += ", acceptance forced" if "forced" in str(run.acceptance) else ", drafting"
    fig.suptitle(f"{run.name}" + (f" ({weights})" if weights else "")
                 + ": one step's aggregate under each tok/s definition",
                 x=0.02, y=1.02 + 0.025 * max(0, len(note_lines) - 4), ha="left",
                 fontsize=11)  # above the note, however many lines it wraps to

    # -- right bottom: each definition's window
    fw_start, _ = d.fastest_window(tl)
    rows: list[tuple[str, list[tuple[float, float]]]] = [
        ("e2e_aggregate_tok_s", "end to end", [(0.0, tl.wall_s)]),
        ("decode_aggregate_tok_s", "decode", [
            (a - t0, b - t0) for a, b in intervals_with_at_least(decoding_intervals(tl), 1)]),
        ("all_streams_decoding_tok_s", f"all {tl.streams} decoding",
         [(a - t0, b - t0) for a, b in d.all_decoding_spans(tl)]),
        ("fastest_second_tok_s", "fastest second", [(fw_start - t0, fw_start - t0 + 1.0)]),
        ("engine_log_steady_tok_s", "engine log, steady", _log_windows(s)),
    ]
    for k, (name, _, spans) in enumerate(rows):
        yy = len(rows) - 1 - k
        for a, b in spans:
            ax_win.plot([a, b], [yy, yy], color=fs.PALETTE[BAR_ORDER.index(name)], lw=5,
                        solid_capstyle="butt")
        if not spans:
            ax_win.annotate("none", (0, yy), fontsize=6.5, color=fs.MUTED, va="center")
    ax_win.set_yticks(range(len(rows))[::-1], [r[1] for r in rows])
    ax_win.set_ylim(-0.7, len(rows) - 0.3)
    ax_win.set_xlim(-0.01 * tl.wall_s, tl.wall_s * 1.01)
    ax_win.set_xlabel("time from the first request sent, s")
    ax_win.grid(axis="y", visible=False)

    kind = run.provenance.protocol_kind
    fs.source_line(fig, f"data/raw/runs/{run.name}/steps/{s.record['dir']}/bench.json "
                   f"({load_client(kind)}) and server.log; "
                   + (f"{weights}; " if weights else "")
                   + (f"{run.acceptance}; " if run.acceptance else "")
                   + "claimcheck readings/definitions. Engine-log windows to +-1 s.")
    return fig


def write(run: str | Path | Run, out_base: str | Path,
          step_index: int | None = None) -> list[Path]:
    """Draw the definitions figure of a run directory (or loaded run); write its PNG
    (a per-run figure: :data:`~claimcheck.figures.figstyle.RUN_FORMATS`).

    ``out_base`` is the path without suffix; returns the paths written.
    """
    data = run if isinstance(run, Run) else load_run(run)
    status = data.provenance.status
    if not data.traces and status in (None, "complete"):
        raise ValueError(f"{data.path}: no step has a bench.json")
    if not data.traces:  # an interrupted or failed run before its first result: say so
        return fs.save(fs.notice(f"{data.path.name}: run {status}, no step measured\n"
                                 f"{data.provenance.failure}"), out_base,
                       fs.RUN_FORMATS)
    return fs.save(figure(data, step_index), out_base, fs.RUN_FORMATS)
