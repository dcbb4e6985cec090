"""The bend carried to another card (:func:`bend_term`): how a path overlaps its weight
reads with its math once a decode step's compute nears its memory time, as the exponent p
of ``(memory^p + compute^p)^(1/p)`` (:func:`claimcheck.model.model.bend_seconds`), fitted on
the local card's measured decode-row factors of the path whose memory and compute terms are
carried: the format's own kernel where its local runs stand for the target card's, else the
path that stands in for them (the 16-bit one, as for eta and compute). p is a ratio of
times, so it carries unchanged; the terms it joins are the target card's own carried
memory and compute."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from claimcheck.calibration.calibrate import run_key
from claimcheck.calibration.picks import run_kernel
from claimcheck.model import carry as cc
from claimcheck.model import model as m
from claimcheck.runs.run import Run


def _context(picks: Any, rows: int) -> float:
    """The mean context of the row steps at ``rows`` over their decode: the median prompt
    plus half the median output."""
    steps = [p.step.timeline for p in picks if p.step.timeline.streams == rows]
    return (statistics.median(r.prompt_tokens for tl in steps for r in tl.requests)
            + statistics.median(r.output_tokens for tl in steps for r in tl.requests) / 2)


def path_engines(runs: list[Run], local: str, fmt: str, kernel: str | None) -> list[str]:
    """The local engines of weight format ``fmt`` that ran ``kernel`` (any kernel when
    None), with a measured step."""
    return sorted({run_key(r)[1] for r in runs if run_key(r)[0] == local and r.traces
                   and str(run_key(r)[2]) == fmt
                   and (kernel is None or run_kernel(r) == kernel)})


def bend_points(engines: list[str], cal_of: Callable[[str], tuple[m.Calibration, Any, Run]]
                ) -> tuple[list[tuple[int, float, float, float]], list[str], list[str]]:
    """Per measured row count of each of ``engines`` (its own row steps only, not a weight
    format's borrowed ones): (rows, the model's memory and compute times at that row count
    and context, the measured factor over ``max``). ``cal_of`` gives an engine's
    calibration, choice and run. With the engines that had rows and the source runs."""
    points, used, sources = [], [], set()
    for e in engines:
        cal, ch, run = cal_of(e)
        own = [p for p in ch.rows if run_key(p.run)[1] == e]
        if not own or not cal.row_factors:
            continue
        shape, _ = run.engine
        rows_measured = {p.step.timeline.streams for p in own}
        for rows, factor in cal.row_factors:
            if rows not in rows_measured:
                continue
            ctx = _context(own, rows)
            cost = m.step_cost_sum(shape, cal, rows, round(rows * ctx), rows, rows)
            points.append((rows, cost.memory_s, cost.compute_s, factor))
        used.append(e)
        sources.update(p.run.name for p in own)
    return points, used, sorted(sources)


def bend_term(engines: list[str], path: str, local: str,
              cal_of: Callable[[str], tuple[m.Calibration, Any, Run]]) -> cc.Term | None:
    """The bend exponent of ``path`` (its words: a kernel, or the 16-bit path that stands
    in) as a carried term from ``engines``' decode rows (:func:`bend_points`,
    :func:`claimcheck.model.carry.fit_bend_exponent`); None when none of them measured rows
    where the exponent shows."""
    points, engines, sources = bend_points(engines, cal_of)
    pairs = [(min(mem, comp) / max(mem, comp), f) for _, mem, comp, f in points]
    try:
        p = cc.fit_bend_exponent(pairs)
    except cc.CarryError:
        return None
    at = ", ".join(f"{rows} rows: compute {comp / mem:.2f} x memory, x{f:.3f}"
                   for rows, mem, comp, f in points)
    rule = (f"a decode step on {path} costs (memory^p + "
            f"compute^p)^(1/p), p = {p:.2f} fitted on {local}'s measured decode-row factors "
            f"(measured step over max(memory, compute)) of {', '.join(engines)} ({at}); "
            f"carried unchanged as a ratio of times (x{cc.bend_factor(1.0, p):.3f} of either "
            "term where they are equal)")
    return cc.Term("bend_exponent", p, "exponent", "carried", tuple(sources), rule)
