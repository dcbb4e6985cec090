"""The calibration arithmetic on the steps :mod:`claimcheck.calibration.calibrate` chose.

BW_eff (bytes/s) from the bandwidth step's median TPOT, the per-request overhead (s) from
the overhead step's median TTFT, P_eff (FLOP/s) from the compute step's (else the card's
datasheet rate, said), and the three measured terms: the decode-row factors (measured
median TPOT / the model's, by row count), the admission interval (s between a wave's
sends) and the KV-read rate (bytes/s while every stream decodes). Also the one simulated
step (:func:`predicted_step`) that the calibration, the model table and a protocol's
prediction all read.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from claimcheck.calibration.buckets import bucket_words, kernel_buckets
from claimcheck.calibration.calibrate import Choice, Pick, median_prompt, same_format_kv
from claimcheck.calibration.context_cost import LINES_MARK, MIN_CONTEXTS, fit_line
from claimcheck.calibration.kvcarry import carried_kv
from claimcheck.calibration.stepsim import predicted_step
from claimcheck.model import model as m
from claimcheck.model import simulator, solve
from claimcheck.physics.cardfiles import get_card
from claimcheck.readings import definitions as d


def _choice_key(choice: Choice, compute_dtype: str) -> tuple[Any, ...]:
    picks = [choice.bandwidth, choice.overhead, choice.compute, *choice.rows,
             *choice.rows_beyond, *choice.admission, *choice.kv, *choice.sequence,
             *choice.cold, *choice.lag]
    return (choice.card, choice.engine, compute_dtype,
            tuple(p.label if p else "" for p in picks), choice.rows_kind, choice.compute_scale,
            _choice_key(choice.rows_base, compute_dtype) if choice.rows_base else None,
            _choice_key(choice.kv_base, compute_dtype) if choice.kv_base else None,
            tuple(_choice_key(b, compute_dtype) if b else None for b in choice.cold_base),
            tuple(_choice_key(b, compute_dtype) if b else None for b in choice.lag_base))


def calibration(choice: Choice, compute_dtype: str,
                cache: dict[tuple[Any, ...], m.Calibration] | None = None,
                user_cards: str | None = None) -> m.Calibration:
    """:func:`base_calibration` with the decode-row factors of ``choice.rows``: at each
    measured row count, the median over its source steps of measured median TPOT / the
    model's (simulated with the rows' own engine shape and calibration, no factors).
    ``cache``: calibrations already worked out over the same loaded runs (one table's
    runs share a few), keyed by the steps chosen. ``user_cards``: a cards file merged over
    the registry for the datasheet fallback (:func:`base_calibration`)."""
    key = _choice_key(choice, compute_dtype)
    if cache is not None and key in cache:
        return cache[key]
    cal = base_calibration(choice, compute_dtype, user_cards)
    buckets = kernel_buckets(choice, user_cards)
    if buckets is not None:
        cal = replace(cal, row_buckets=buckets.bounds)
    if choice.admission:
        gaps = [p.step.timeline.send_interval_s for p in choice.admission]
        gap = statistics.median(g for g in gaps if g is not None)
        cal = replace(cal, admission_interval_s=gap, admission_source=(
            f"{choice.admission[0].run.name} ({len(gaps)} one-wave steps): the median "
            f"interval between a wave's sends, {gap * 1e3:.3f} ms (last send - first send "
            "over requests - 1)"))
    if choice.rows and choice.rows_from_lines:
        cal = line_row_factors(cal, choice.rows)
    elif choice.rows:
        src_cal = cal
        if choice.rows_base is not None:
            _, info = choice.rows[0].run.engine
            src_cal = replace(base_calibration(choice.rows_base, info["compute_dtype"],
                                               user_cards),
                              admission_interval_s=cal.admission_interval_s)
        pts = step_row_factors(src_cal, choice.rows)
        src = (f"{', '.join(sorted({p.run.name for p in choice.rows}))} ({len(choice.rows)} "
               f"{choice.rows_kind} steps): "
               "measured median TPOT / the model's at "
               + ", ".join(f"{n} rows x{f:.3f}" for n, f in pts)
               + "; linear between, the nearest outside")
        cal = replace(cal, row_factors=pts, row_factor_source=src)
    if choice.rows_beyond:  # the engine's own closed loops past the measured rows
        more = step_row_factors(cal, choice.rows_beyond)
        pts = tuple(sorted(dict(cal.row_factors + more).items()))
        cal = replace(cal, row_factors=pts, row_factor_source=(
            f"{cal.row_factor_source}; beyond those rows, "
            f"{', '.join(sorted({p.run.name for p in choice.rows_beyond}))} "
            f"({len(choice.rows_beyond)} closed-loop short-prompt steps, measured median TPOT "
            "/ the model's of the same closed loop) at "
            + ", ".join(f"{n} rows x{f:.3f}" for n, f in more)))
    if choice.kv_base is not None and choice.kv_base.card != choice.card:  # another card's
        src = calibration(choice.kv_base, compute_dtype, cache, user_cards)
        cal = carried_kv(cal, src, choice.kv_base.card)
    elif choice.kv_base is not None:  # another engine's KV steps: its calibration's terms
        _, info = choice.kv[0].run.engine
        src = calibration(choice.kv_base, info["compute_dtype"], cache, user_cards)
        said = f"borrowed from engine {choice.kv_base.engine}: "
        cal = replace(cal, kv_bandwidth_bytes_s=src.kv_bandwidth_bytes_s,
                      kv_source=said + src.kv_source)
        if same_format_kv(choice):  # a GEMM's factor: only from the same weight format
            cal = replace(cal, mixed_prefill_factor=src.mixed_prefill_factor,
                          mixed_prefill_source=(said + src.mixed_prefill_source
                                                if src.mixed_prefill_source else ""))
    elif choice.kv:
        cal = kv_calibration(cal, choice.kv)
        cal = mixed_calibration(cal, choice.kv)
    if choice.sequence:
        cal = sequence_calibration(cal, choice.sequence)
    if choice.lag:  # before the cold start, whose gap is read against the first tokens
        cal = lag_calibration(cal, choice, cache, user_cards)
    if choice.cold:
        cal = cold_calibration(cal, choice, cache, user_cards)
    if buckets is not None and cal.row_factors:
        cal = replace(cal, row_factor_source=f"{cal.row_factor_source}; {bucket_words(buckets)}")
    if cache is not None:
        cache[key] = cal
    return cal


def _sources(cal: m.Calibration, picks: tuple[Pick, ...], bases: tuple[Choice | None, ...],
             cache: dict[tuple[Any, ...], m.Calibration] | None, user_cards: str | None
             ) -> Iterator[tuple[m.EngineShape, m.Calibration, Any]]:
    """Each source step's engine shape, the calibration it is simulated with (``cal`` for
    this engine's steps, its own engine's, from ``bases``, for another's: one per engine,
    kept in ``cache``) and its timeline."""
    cache = {} if cache is None else cache
    for p, base in zip(picks, bases, strict=True):
        shape, info = p.run.engine
        own = cal if base is None else calibration(base, info["compute_dtype"], cache,
                                                   user_cards)
        yield shape, own, p.step.timeline


def cold_calibration(cal: m.Calibration, choice: Choice,
                     cache: dict[tuple[Any, ...], m.Calibration] | None = None,
                     user_cards: str | None = None) -> m.Calibration:
    """``cal`` with the cold-start term: the median over ``choice.cold``'s steps of the
    measured median TTFT less the model's (each step simulated warm with its own engine's
    calibration: ``cal`` for this engine's, ``choice.cold_base``'s for another's); 0 where
    that median is not above 0."""
    gaps = []
    for shape, own, tl in _sources(cal, choice.cold, choice.cold_base, cache, user_cards):
        pred, _ = predicted_step(shape, own, [r.prompt_tokens for r in tl.requests],
                                 [r.output_tokens for r in tl.requests], tl.streams,
                                 sends=tl.send_interval_s)
        gaps.append(statistics.median(r.ttft_s for r in tl.requests)
                    - pred["predicted_median_ttft_s"])
    gap = max(statistics.median(gaps), 0.0)
    runs = sorted({p.run.name for p in choice.cold})
    return replace(cal, cold_start_s=gap, cold_start_source=(
        f"{', '.join(runs)} ({len(gaps)} one-wave step(s), each the first on a freshly "
        f"started engine): the first wave of several prompts reaches its first tokens "
        f"{gap * 1e3:,.0f} ms later than the warm model, the median of "
        + ", ".join(f"{g * 1e3:+,.0f}" for g in sorted(gaps)) + " ms"))


def step_row_factors(cal: m.Calibration, picks: tuple[Pick, ...]
                     ) -> tuple[tuple[int, float], ...]:
    """(rows, factor) at each stream count of ``picks``: the median over its steps of the
    measured median TPOT over the model's (each step simulated with ``cal``, no factors:
    its own prompts, outputs and streams)."""
    cal = replace(cal, row_factors=())
    by_rows: dict[int, list[float]] = {}
    for p in picks:
        tl = p.step.timeline
        shape, _ = p.run.engine
        pred, _ = predicted_step(shape, cal, [r.prompt_tokens for r in tl.requests],
                                 [r.output_tokens for r in tl.requests], tl.streams,
                                 sends=tl.send_interval_s)
        by_rows.setdefault(tl.streams, []).append(
            statistics.median(d.tpots_ms(tl)) / pred["predicted_median_tpot_ms"])
    return tuple((n, statistics.median(v)) for n, v in sorted(by_rows.items()))


def line_row_factors(cal: m.Calibration, picks: tuple[Pick, ...]) -> m.Calibration:
    """``cal`` with decode-row factors from KV lines (one run's one-wave steps at the same
    streams and three or more contexts): at each stream count b, the line's intercept (the
    step time at no KV: :func:`kv_window`'s step s against b x kappa x mean context,
    :func:`~claimcheck.calibration.context_cost.fit_line`) over the model's decode step of b
    rows at no context (weights and state at ``cal``'s bandwidth, or its compute); the
    median where several runs have a line at b."""
    groups: dict[tuple[str, int], list[tuple[float, float]]] = {}
    shapes = {}
    for p in picks:
        shape, _ = p.run.engine
        step_s, ctx = kv_window(p.step.timeline)
        b = p.step.timeline.streams
        shapes[b] = shape
        groups.setdefault((p.run.name, b), []).append(
            (b * shape.kv_bytes_per_token * ctx, step_s))
    by_rows: dict[int, list[float]] = {}
    for (_, b), pts in sorted(groups.items()):
        _, intercept, _ = fit_line([x for x, _ in pts], [y for _, y in pts])
        base = m.step_cost_sum(shapes[b], cal, b, 0, b, b).time_s
        by_rows.setdefault(b, []).append(intercept / base)
    pts = tuple((b, statistics.median(v)) for b, v in sorted(by_rows.items()))
    src = (f"{', '.join(sorted({run for run, _ in groups}))} ({len(picks)} one-wave steps on "
           f"{len(groups)} KV line(s) {LINES_MARK}): each line's intercept (the step at no KV) "
           "over the model's decode step at " + ", ".join(f"{b} rows x{f:.3f}" for b, f in pts)
           + "; linear between, the nearest outside")
    return replace(cal, row_factors=pts, row_factor_source=src)


def lag_calibration(cal: m.Calibration, choice: Choice,
                    cache: dict[tuple[Any, ...], m.Calibration] | None = None,
                    user_cards: str | None = None) -> m.Calibration:
    """``cal`` with the output lag: over ``choice.lag``'s steps, the median of the lag at
    which the step's simulated first token (its earliest, from the first send) comes when
    the measured one did (:func:`claimcheck.model.solve.lag_from_first_token`, from the
    simulation at 0 and that token a whole next step later at 1, nothing before it moving;
    each step with its own engine's calibration: ``cal`` for this
    engine's, ``choice.lag_base``'s for another's; no cold start, as the steps are warm),
    within 0 to 1. No step it moves: ``cal`` unchanged."""
    fs = []
    for shape, own, tl in _sources(cal, choice.lag, choice.lag_base, cache, user_cards):
        prompts = [r.prompt_tokens for r in tl.requests]
        outputs = [r.output_tokens for r in tl.requests]
        first, after = simulator.first_token(shape, own, prompts, outputs, tl.streams)
        at = (first, first + after)  # at a lag of 1 a whole next step later
        sent = min(r.start_s for r in tl.requests)
        lag = solve.lag_from_first_token(min(r.first_token_s for r in tl.requests) - sent,
                                         *at)
        if lag is not None:
            fs.append(lag)
    if not fs:
        return cal
    lag = min(max(statistics.median(fs), 0.0), 1.0)
    runs = sorted({p.run.name for p in choice.lag})
    return replace(cal, output_lag=lag, output_lag_source=(
        f"{', '.join(runs)} ({len(fs)} one-wave steps of several prompts on a warm engine): "
        f"a token sampled at the end of one step reaches its client {lag:.2f} of the next "
        f"step later (0: at its step's end, 1: at the next one's), the median of "
        f"{min(fs):+.2f} to {max(fs):+.2f} over the steps, each the lag at which the "
        f"model's first token of the wave comes when the measured one did"))


def _readings(p: Pick, cal: m.Calibration, term: str, values: tuple[float, ...],
              reading: str = "wall_s") -> tuple[float, list[float]]:
    """A step's measured ``reading`` (a :class:`~claimcheck.readings.timeline.Timeline`
    time: its wall, first send to last token, unless told) and its simulated one with the
    calibration's ``term`` at each of ``values`` (every other term as ``cal`` has it): what
    a term solved from a step's timeline is fitted from."""
    tl = p.step.timeline
    shape, _ = p.run.engine
    prompts = [r.prompt_tokens for r in tl.requests]
    outputs = [r.output_tokens for r in tl.requests]
    return getattr(tl, reading), [
        getattr(predicted_step(shape, replace(cal, **{term: v}), prompts, outputs,
                               tl.streams, sends=tl.send_interval_s)[1].timeline, reading)
        for v in values]


def mixed_calibration(cal: m.Calibration, picks: tuple[Pick, ...]) -> m.Calibration:
    """``cal`` with the mixed-prefill factor (``Calibration.mixed_prefill_factor``): over
    the KV-read term's one-wave steps (``picks``: a wave's prompts prefill together and
    beside its first requests' decode), the median of the factor at which each step's
    simulated time to its last request's first token equals the measured one
    (:func:`claimcheck.model.solve.mixed_factor_from_time`, from the simulation at factors
    1 and 2, every other term as ``cal`` has it): the prefill alone, where the wall is
    mostly the wave's decode (docs/model.md, "The mixed-prefill factor read off the
    prefill"). No step the factor moves: ``cal`` unchanged."""
    ks = []
    for p in picks:
        at_s, at = _readings(p, cal, "mixed_prefill_factor", (1.0, 2.0), "prefilled_s")
        k = solve.mixed_factor_from_time(at_s, *at)
        if k is not None and k > 0:
            ks.append(k)
    if not ks:
        return cal
    k = statistics.median(ks)
    runs = sorted({p.run.name for p in picks})
    src = (f"{', '.join(runs)} ({len(ks)} one-wave steps, a wave's prompts prefilling "
           f"together and beside its first requests' decode): the measured time to their "
           f"last first token puts a step in which a prompt chunk shares the step with other "
           f"requests at x{k:.3f} its compute term (the held one-prompt prefill's), the "
           f"median of x{min(ks):.3f}-x{max(ks):.3f}")
    return replace(cal, mixed_prefill_factor=k, mixed_prefill_source=src)


SEQUENCE_PROBE_S = 1e-3
"""The per-sequence cost (s) of the second simulation :func:`sequence_calibration` solves
from (the wall is linear in it)."""


def sequence_calibration(cal: m.Calibration, picks: tuple[Pick, ...]) -> m.Calibration:
    """``cal`` with the per-sequence prefill cost (``Calibration.sequence_per_send``): over
    the admission term's one-wave steps (``picks``: a wave of short prompts, each request
    only its prefill), the median of the cost at which each step's simulated wall equals
    its measured one (:func:`claimcheck.model.solve.sequence_cost_from_wall`, from the
    simulation at 0 and :data:`SEQUENCE_PROBE_S`, every other term as ``cal`` has it), each
    over the step's own send interval (``Timeline.send_interval_s``); a negative median is
    no cost. ``sequence_prefill_s``: that per-send cost at the admission interval (a step
    not yet sent). No step it moves: ``cal`` unchanged."""
    ks = []
    for p in picks:
        wall, at = _readings(p, cal, "sequence_prefill_s", (0.0, SEQUENCE_PROBE_S))
        c = solve.sequence_cost_from_wall(wall, *at, SEQUENCE_PROBE_S)
        if c is not None and p.step.timeline.send_interval_s:
            ks.append(c / p.step.timeline.send_interval_s)
    if not ks:
        return cal
    k = max(statistics.median(ks), 0.0)
    c = k * cal.admission_interval_s
    runs = sorted({p.run.name for p in picks})
    src = (f"{', '.join(runs)} ({len(ks)} one-wave steps of short prompts, each request only "
           f"its prefill): their measured wall puts each request with a prompt chunk in a "
           f"step at {k:.2f} x its wave's send interval more, the median of {min(ks):.2f} "
           f"to {max(ks):.2f} (at the {cal.admission_interval_s * 1e3:.3f} ms admission "
           f"interval, {c * 1e3:.2f} ms)")
    return replace(cal, sequence_per_send=k, sequence_prefill_s=c,
                   sequence_prefill_source=src)


def kv_window(tl: Any) -> tuple[float, float]:
    """(step s, mean context tokens) of a step's spans with every stream decoding: streams
    over the all-streams-decoding rate, and each request's prompt plus the tokens it had at
    the middle of those spans (their length-weighted midpoint)."""
    spans = d.all_decoding_spans(tl)
    length = sum(b - a for a, b in spans)
    mid = sum((a + b) / 2 * (b - a) for a, b in spans) / length
    rate = d.all_streams_decoding_tok_s(tl)
    ctx = statistics.fmean(r.prompt_tokens + sum(t <= mid for t in r.token_times_s)
                           for r in tl.requests)
    return tl.streams / rate, ctx


def kv_lines(cal: m.Calibration, picks: tuple[Pick, ...]) -> list[tuple[str, int, float]]:
    """(run, streams, bytes/s) for each run and stream count whose source steps span
    :data:`claimcheck.calibration.context_cost.MIN_CONTEXTS` or more contexts: the inverse slope
    of the step time (:func:`kv_window`, over the decode-row factor at those rows) against
    the KV bytes the step reads (rows x kappa x mean context), the line
    :func:`claimcheck.calibration.context_cost.fit_line` fits. At fixed streams only the KV read
    grows with context, so this is the KV-read rate with no other term in it."""
    groups: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for p in picks:
        shape, _ = p.run.engine
        step_s, ctx = kv_window(p.step.timeline)
        b = p.step.timeline.streams
        factor = simulator.decode_row_factor(cal.row_factors, b, cal.row_buckets)
        groups.setdefault((p.run.name, b), []).append(
            (b * shape.kv_bytes_per_token * ctx, step_s / factor))
    out = []
    for (run, b), pts in sorted(groups.items()):
        if len({round(x / 1e6) for x, _ in pts}) < MIN_CONTEXTS:
            continue
        slope, _, _ = fit_line([x for x, _ in pts], [y for _, y in pts])
        if slope > 0:
            out.append((run, b, 1 / slope))
    return out


def kv_calibration(cal: m.Calibration, picks: tuple[Pick, ...]) -> m.Calibration:
    """``cal`` with the KV-read rate. Where a source run measured the same streams at
    three or more contexts (:func:`kv_lines`), the median of those lines' rates; else the
    median over ``picks`` of :func:`claimcheck.model.model.kv_bandwidth_from_decode` at each
    step's streams, its all-streams-decoding step time and mean context
    (:func:`kv_window`), over ``cal``'s decode-row factor at those rows. The source text
    names every run the rate came from."""
    lines = kv_lines(cal, picks)
    if lines:
        rates = [r for *_, r in lines]
        rate = statistics.median(rates)
        runs = sorted({run for run, *_ in lines})
        streams = sorted({b for _, b, _ in lines})
        src = (f"{', '.join(runs)} ({len(lines)} line(s) of one-wave steps {LINES_MARK}, "
               f"at {', '.join(map(str, streams))} streams, every stream decoding; KV read at "
               f"{rate / 1e9:,.0f} GB/s, the median of "
               f"{min(rates) / 1e9:,.0f}-{max(rates) / 1e9:,.0f} GB/s, each the KV bytes a "
               "step adds over the time it adds at the same streams"
               + (", each step over the decode-row factor at its rows)" if cal.row_factors
                  else ")"))
        return replace(cal, kv_bandwidth_bytes_s=rate, kv_source=src)
    rates = []
    for p in picks:
        shape, _ = p.run.engine
        step_s, ctx = kv_window(p.step.timeline)
        b = p.step.timeline.streams
        factor = simulator.decode_row_factor(cal.row_factors, b, cal.row_buckets)
        rates.append(m.kv_bandwidth_from_decode(shape, cal, b, ctx, step_s, factor))
    rate = statistics.median(rates)
    streams = sorted({p.step.timeline.streams for p in picks})
    runs = sorted({p.run.name for p in picks})
    src = (f"{', '.join(runs)} ({len(picks)} one-wave steps at "
           f"{', '.join(map(str, streams))} streams, every stream decoding): KV read at "
           f"{rate / 1e9:,.0f} GB/s, the median of {min(rates) / 1e9:,.0f}-"
           f"{max(rates) / 1e9:,.0f} GB/s (weights and state at "
           f"{cal.bandwidth_bytes_s / 1e9:,.0f} GB/s)")
    return replace(cal, kv_bandwidth_bytes_s=rate, kv_source=src)


def base_calibration(choice: Choice, compute_dtype: str, user_cards: str | None = None
                     ) -> m.Calibration:
    """BW_eff from the bandwidth step (its median TPOT at its mean context, bytes of its own
    engine), the overhead from the overhead step (median TTFT less the model's prefill of its
    prompt) and P_eff from the compute step (prompt x F_body / (median TTFT less the
    overhead)), else the card's datasheet dense rate at ``compute_dtype`` (said)."""
    s = choice.bandwidth.step
    tl = s.timeline
    shape, _ = choice.bandwidth.run.engine
    tpot_s = statistics.median(d.tpots_ms(tl)) / 1e3
    ctx = statistics.fmean(r.prompt_tokens + (r.output_tokens - 1) / 2 for r in tl.requests)
    bw_src = (f"{choice.bandwidth.label} (1 stream): median TPOT {tpot_s * 1e3:.3f} ms at "
              f"{ctx:.0f} tokens of mean context")
    o = choice.overhead.step
    oshape, _ = choice.overhead.run.engine
    prompt = round(median_prompt(o))
    ttft = statistics.median(r.ttft_s for r in o.timeline.requests)
    bw = m.bandwidth_from_decode(shape, tpot_s, ctx)

    def overhead(flops: float) -> float:
        cal = m.Calibration(bw, flops, 0.0, "", "")
        return max(0.0, ttft - m.prefill_time_s(oshape, cal, prompt))
    x = choice.compute
    if x is not None:
        p = median_prompt(x.step)
        t = statistics.median(r.ttft_s for r in x.step.timeline.requests)
        flops = m.compute_from_prefill(shape, p, t)  # first pass: whole TTFT is compute
        ov = 0.0
        for _ in range(3):  # the overhead (a short prompt) depends little on P_eff
            ov = overhead(flops)
            flops = m.compute_from_prefill(shape, p, max(t - ov, 1e-9))
        c_src = (f"{x.label} (1 stream): {p:.0f}-token prompts x "
                 f"{shape.flops_body_per_token / 1e9:.1f} GFLOP/token over median TTFT "
                 f"{t:.3f} s less the {ov * 1e3:.1f} ms per-request overhead")
        if choice.compute_scale is not None:
            c_src += (f" = {flops / 1e12:.1f} TFLOP/s on {x.run.provenance.card} (this card's "
                      f"overhead assumed there), x {choice.compute_scale:.4g}: "
                      f"{x.why.removeprefix('compute: ')}")
            flops *= choice.compute_scale
            ov = overhead(flops)
    else:
        card = get_card(choice.card, user_path=user_cards)
        flops = card.tflops(compute_dtype) * 1e12
        c_src = (f"fallback: {card.name} datasheet dense {compute_dtype} "
                 f"{card.tflops(compute_dtype):g} TFLOP/s ({choice.compute_missing})")
        ov = overhead(flops)
    o_src = (f"{choice.overhead.label} (1 stream): median TTFT {ttft * 1e3:.1f} ms of "
             f"{prompt}-token prompts less the model's prefill")
    return m.Calibration(bandwidth_bytes_s=bw, flops_s=flops, request_overhead_s=ov,
                         bandwidth_source=bw_src, compute_source=c_src,
                         overhead_source=o_src)

