"""The decode-row term's source steps (see :mod:`claimcheck.calibration.calibrate`'s rule):
one-wave decode steps of protocols that say ``model_term: decode_rows`` (the engine's own
on the card, else its weight format's: :func:`row_sources`), the intercepts of the
engine's own KV lines (:func:`line_rows`), and last its own closed-loop short-prompt steps
(:func:`closed_loop_rows`). The factors' arithmetic is
:mod:`claimcheck.calibration.calibration`'s."""

from __future__ import annotations

from typing import Any

from claimcheck.calibration.context_cost import MIN_CONTEXTS
from claimcheck.calibration.picks import (
    ROW_TERM,
    Pick,
    decode_intervals,
    earliest,
    median_prompt,
    one_wave,
    run_kernel,
    run_key,
)
from claimcheck.config.configfiles import load_model_terms
from claimcheck.config.protocols import Terms
from claimcheck.model import model as m
from claimcheck.runs.run import Run, StepTrace


def _is_row_source(r: Run, s: StepTrace, terms: Terms) -> bool:
    """A one-wave decode step (tokens out after the first) of a decode-row source."""
    return (one_wave(r, s, terms, ROW_TERM) and decode_intervals(s) > 0
            and not s.held_prefill)


def _is_closed_loop_row(r: Run, s: StepTrace) -> bool:
    """A closed-loop decode step of short prompts: 2 or more streams, more requests than
    streams (replacements join as others finish), prompts shorter than
    :data:`~claimcheck.model.model.LONG_PROMPT_TOKENS`, tokens out after the first."""
    tl = s.timeline
    return (2 <= tl.streams < len(tl.requests) and tl.streams <= r.engine[0].max_num_seqs
            and decode_intervals(s) > 0 and not s.held_prefill
            and median_prompt(s) < m.LONG_PROMPT_TOKENS)


def closed_loop_rows(runs: list[Run], card: str, engine: str) -> tuple[Pick, ...]:
    """The decode-row term's steps when neither the engine nor its weight format has a
    one-wave decode step on the card: the engine's own closed-loop short-prompt steps
    (:func:`_is_closed_loop_row`), each step's measured median TPOT over the model's
    simulated one of the same closed loop (its replacements' prefills included)."""
    pairs = [(r, s) for r in runs if run_key(r)[:2] == (card, engine) for s in r.traces
             if _is_closed_loop_row(r, s)]
    if not pairs:
        return ()
    rows = sorted({s.timeline.streams for _, s in pairs})
    why = (f"decode rows: {len(pairs)} closed-loop short-prompt step(s) at {len(rows)} "
           f"stream count(s) ({', '.join(map(str, rows))}) of engine {engine} on {card} "
           "(no one-wave decode step of it or of its weight format there)")
    return tuple(Pick(r, s, why) for r, s in sorted(pairs, key=lambda p: earliest(*p)))


def beyond_rows(rows: tuple[Pick, ...], closed: tuple[Pick, ...]) -> tuple[Pick, ...]:
    """The closed-loop steps (:func:`closed_loop_rows`) at stream counts above the most rows
    the decode-row term's ``rows`` steps measured: there a measured closed loop of the
    engine's own gives the factor, where the last measured one would stand in (a kernel's
    tile changes past it: on the H200 Marlin's step at 56 and 64 rows is x1.23-1.28 the
    model's, its KV lines' top, 48 rows, x1.15)."""
    if not rows or not closed:
        return ()
    hi = max(p.step.timeline.streams for p in rows)
    return tuple(Pick(p.run, p.step, p.why + f"; above the {hi} rows of the better source")
                 for p in closed if p.step.timeline.streams > hi)


def on_lines(pairs: list[tuple[Run, StepTrace]]) -> list[tuple[Run, StepTrace]]:
    """The pairs that lie on lines: one run's steps at the same streams and
    :data:`~claimcheck.calibration.context_cost.MIN_CONTEXTS` or more prompt lengths."""
    lines: dict[tuple[str, int], list] = {}
    for r, s in pairs:
        lines.setdefault((r.name, s.timeline.streams), []).append((r, s))
    return [p for g in lines.values()
            if len({s.record.get("input_len") for _, s in g}) >= MIN_CONTEXTS for p in g]


def line_rows(kv: tuple[Pick, ...], card: str, engine: str) -> tuple[Pick, ...]:
    """The decode-row term's steps when the engine has no decode-row steps of its own: its
    KV-read steps on lines (:func:`on_lines`), whose intercepts (the step at no KV) over the
    model's decode step give the factor at their stream counts."""
    lined = on_lines([(p.run, p.step) for p in kv])
    if not lined:
        return ()
    rows = sorted({s.timeline.streams for _, s in lined})
    why = (f"decode rows: the intercepts of {len(rows)} KV line(s) at "
           f"{', '.join(map(str, rows))} rows ({len(lined)} one-wave steps at three or more "
           f"contexts of engine {engine} on {card}; it has no decode-row steps)")
    return tuple(Pick(r, s, why) for r, s in lined)


def row_sources(runs: list[Run], card: str, engine: str, weight_format: Any,
                terms: Terms | None = None) -> tuple[tuple[Pick, ...], str | None]:
    """The decode-row term's source steps for ``engine`` on ``card``: the engine's own, else
    those of the first engine of its weight format there that has them, on the same
    quantized kernel where the engine's runs name one (:func:`run_kernel`: rows grow by the
    kernel, Machete's slower than Marlin's on the H200); and that engine."""
    terms = load_model_terms() if terms is None else terms
    on_card = [r for r in runs if run_key(r)[0] == card]
    kernel = next((run_kernel(r) for r in on_card if run_key(r)[1] == engine
                   and run_kernel(r)), None)
    for who in ([engine] + sorted({run_key(r)[1] for r in on_card
                                   if run_key(r)[2] == weight_format and run_key(r)[1] != engine
                                   and (kernel is None or run_kernel(r) == kernel)
                                   and r.traces},
                                  key=lambda e: min(earliest(r, r.traces[0]) for r in on_card
                                                    if run_key(r)[1] == e and r.traces))):
        pairs = [(r, s) for r in on_card if run_key(r)[1] == who for s in r.traces
                 if _is_row_source(r, s, terms)]
        if pairs:
            rows = sorted({p[1].timeline.streams for p in pairs})
            why = (f"decode rows: {len(pairs)} one-wave decode step(s) at {len(rows)} row "
                   f"count(s) ({', '.join(map(str, rows))}) of engine {who} on {card}"
                   + ("" if who == engine else f" (engine {engine} has none; same weight "
                      f"format {weight_format})"))
            return (tuple(Pick(r, s, why) for r, s in sorted(pairs, key=lambda p:
                                                              earliest(*p))), who)
    return (), None
