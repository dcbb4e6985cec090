"""Calibrate the step model by rule and predict every step of a run or a protocol (glue).

The calibration of a card + engine (+ weight format) is chosen by one stated rule among ALL
the runs of that engine on that card (:func:`choose`), never by which run happens to be
predicted, so a new run can never silently recalibrate the others:

- **bandwidth**: the one-stream decode step with the most decode intervals (tokens after
  each request's first, summed: the most samples of the per-step time) among the engine's
  runs on the card; else among the runs of its weight format there (an FP8 rate is no
  BF16 one);
- **per-request overhead**: the same choice among one-stream steps whose prompts are short
  (under :data:`~claimcheck.core.model.LONG_PROMPT_TOKENS`), so that the model's prefill,
  which is subtracted from their TTFT, is a small memory-bound step and does not depend on
  the compute being calibrated (usually the bandwidth step itself);
- **compute**: among one-stream steps with prompts of at least
  :data:`~claimcheck.core.model.LONG_PROMPT_TOKENS` of the same weight format on the card,
  the held-prefill step (prompts back to back, at most 2 tokens out, each prompt within one
  token budget), else a step whose prompt fits one token budget, else the longest prefill
  (split across steps); within a rank the engine's own runs, then the longest prompt, the
  most requests; never a short prompt's TTFT when a better measurement exists. None: the
  card's datasheet rate at the engine's compute dtype, said as a fallback.

Two measured terms come by the same kind of rule (:func:`row_sources`,
:func:`admission_sources`): the decode-row factors from one-wave decode steps of protocols
that say ``model_term: decode_rows`` (the engine's own runs on the card, else its weight
format's), and the admission interval from the send times of one-wave steps of protocols
that say ``model_term: admission`` (the engine's, else any run on the card: it is the load
client's). A card the registry does not know (a CPU engine's ``cpu``) takes compute from
its longest one-stream prefill, said as a lower bound.

Ties go to the run started first, then the name and step: an equal measurement committed
later does not take over. Engine shape (weights, state, KV, token budget) comes from the
predicted run's own record, or for a protocol no one has run from the engine's first run.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

from claimcheck.core import definitions as d
from claimcheck.core import model as m
from claimcheck.core.cards import get_card
from claimcheck.core.errors import InputError
from claimcheck.core.verdicts import TOLERANCE
from claimcheck.report import steps as run_steps


def _one_stream_steps(run: run_steps.RunData) -> list[run_steps.StepData]:
    return [s for s in run.steps if s.timeline.streams == 1]


def _median_prompt(s: run_steps.StepData) -> float:
    return statistics.median(r.prompt_tokens for r in s.timeline.requests)


def decode_intervals(s: run_steps.StepData) -> int:
    """Output tokens after each request's first, summed over the step's requests (the
    number of per-step times its median TPOT is taken over)."""
    return sum(max(r.output_tokens - 1, 0) for r in s.timeline.requests)


def _key(run: run_steps.RunData) -> tuple[str, str, Any]:
    """(card, engine, weight format) of a run."""
    p = run.provenance
    return (p.get("card"), p.get("engine"),
            (p.get("engine_config") or {}).get("weight_format"))


def parallel_layout(cfg: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """The parallel sizes above 1 of an engine config (a run's recorded ``engine_config``
    or an engine's fields): tensor from ``tensor_parallel_size`` (1 when not recorded, as
    vLLM defaults), the others from ``extra_args`` read as vLLM reads them; () is one GPU."""
    from claimcheck.core.vllmargv import SIZES, UnreadableArgv, read_serve_args
    sizes = {"tensor_parallel_size": int(cfg.get("tensor_parallel_size") or 1)}
    try:
        view = read_serve_args(list(cfg.get("extra_args") or ()))
    except UnreadableArgv as e:
        return (("unreadable extra_args", str(e)),)  # type: ignore[return-value]
    for dest in SIZES:
        sizes.setdefault(dest, view.size(dest))
    return tuple((k, v) for k, v in sizes.items() if v > 1)


def layout_words(layout: tuple[tuple[str, int], ...]) -> str:
    """``tensor_parallel_size 2``, or ``one GPU``."""
    return ", ".join(f"{k} {v}" for k, v in layout) or "one GPU"


def _layout(run: run_steps.RunData) -> tuple[tuple[str, int], ...]:
    return parallel_layout(run.provenance.get("engine_config") or {})


def _budget(run: run_steps.RunData) -> int:
    shape, _ = run_steps.engine_shape(run)
    return shape.max_num_batched_tokens


@dataclass(frozen=True)
class Pick:
    """One measured step chosen for a calibration input, and why."""

    run: run_steps.RunData
    step: run_steps.StepData
    why: str

    @property
    def label(self) -> str:
        r = self.step.record
        return f"{self.run.name} step {r['step']} repeat {r['repeat']}"

    def as_dict(self) -> dict[str, Any]:
        r = self.step.record
        return {"run": self.run.name, "step": r["step"], "repeat": r["repeat"],
                "why": self.why}


@dataclass(frozen=True)
class Choice:
    """The calibration inputs of one card + engine + weight format (see the module doc)."""

    card: str
    engine: str
    weight_format: Any
    bandwidth: Pick
    overhead: Pick
    compute: Pick | None
    compute_missing: str = ""
    """Why no compute step was chosen (then the datasheet fallback is used)."""
    rows: tuple[Pick, ...] = ()
    """The decode-row term's source steps (:func:`row_sources`); empty: none measured."""
    admission: tuple[Pick, ...] = ()
    """The admission term's source steps (:func:`admission_sources`)."""
    kv: tuple[Pick, ...] = ()
    """The KV-read term's source steps (:func:`kv_sources`)."""
    rows_base: Choice | None = None
    """The calibration of the rows' own engine when it is not this one (the factors are
    that engine's measured step over its own model)."""

    def steps(self) -> set[tuple[str, str]]:
        """(run name, step dir) of every step whose measured speed the calibration used,
        the decode-row and KV-read terms' sources included (the admission term's take only
        their send times, so their speeds remain a test of the model)."""
        picks = [self.bandwidth, self.overhead] + ([self.compute] if self.compute else [])
        return {(p.run.name, p.step.record["dir"])
                for p in picks + list(self.rows) + list(self.kv)}

    def as_dict(self) -> dict[str, Any]:
        return {"bandwidth": self.bandwidth.as_dict(), "overhead": self.overhead.as_dict(),
                "compute": self.compute.as_dict() if self.compute else None,
                "compute_missing": self.compute_missing,
                "rows": [p.as_dict() for p in self.rows],
                "admission": [p.as_dict() for p in self.admission],
                "kv": [p.as_dict() for p in self.kv]}


def _scope(runs: list[run_steps.RunData], card: str, engine: str, fmt: Any,
           usable: Any) -> tuple[list[tuple[run_steps.RunData, run_steps.StepData]], str]:
    """Usable (run, step) pairs of the engine's runs on the card, else of its weight
    format's; and the words for where they came from."""
    on_card = [r for r in runs if _key(r)[0] == card]
    own = [(r, s) for r in on_card if _key(r)[1] == engine for s in r.steps if usable(s)]
    if own:
        n = len({r.name for r, _ in own})
        return own, f"engine {engine} on {card} ({n} run{'s' if n != 1 else ''})"
    same = [(r, s) for r in on_card if _key(r)[2] == fmt for s in r.steps if usable(s)]
    n = len({r.name for r, _ in same})
    return same, (f"weight format {fmt} on {card} ({n} run{'s' if n != 1 else ''}; engine "
                  f"{engine} has none)")


def _earliest(r: run_steps.RunData, s: run_steps.StepData) -> tuple[str, str, int, int]:
    return (str(r.provenance.get("started_utc", "")), r.name, int(s.record["step"]),
            int(s.record["repeat"]))


def _is_decode(s: run_steps.StepData) -> bool:
    return s.timeline.streams == 1 and decode_intervals(s) > 0 \
        and not d.timeline_is_held_prefill(s.timeline)


def _best_decode(pairs: list[tuple[run_steps.RunData, run_steps.StepData]], where: str,
                 what: str) -> Pick:
    r, s = min(pairs, key=lambda p: (-decode_intervals(p[1]), _earliest(*p)))
    return Pick(r, s, f"{what}: the most decode intervals ({decode_intervals(s):,}, "
                f"{len(s.timeline.requests)} requests of {_median_prompt(s):,.0f}-token "
                f"prompts) of {len(pairs)} one-stream decode step(s) of {where}")


COMPUTE_RANKS = ("held prefill within one token budget", "prompt within one token budget",
                 "longest prefill (split across steps)")
"""The compute step's ranks, best first (see the module doc)."""


def _compute_rank(r: run_steps.RunData, s: run_steps.StepData) -> int:
    fits = _median_prompt(s) <= _budget(r)
    if fits and d.timeline_is_held_prefill(s.timeline):
        return 0
    return 1 if fits else 2


ROW_TERM = "decode_rows"
"""The ``model_term`` value (config/protocols.yaml) of protocols whose one-wave decode steps
are the decode-row term's source."""
ADMISSION_TERM = "admission"
"""The ``model_term`` value of protocols whose one-wave steps give the send interval."""
KV_TERM = "kv_read"
"""The ``model_term`` value of protocols whose one-wave steps, read while every stream
decodes, give the KV-read rate (:func:`claimcheck.core.model.kv_bandwidth_from_decode`)."""


@lru_cache(maxsize=4)
def term_protocols(term: str) -> frozenset[str]:
    """Names of the protocols in config/protocols.yaml that say ``model_term: TERM`` (a
    committed run's snapshot may predate the field, so the current file decides)."""
    from claimcheck.core.protocols import load_protocols
    return frozenset(n for n, p in load_protocols().items() if p.model_term == term)


def _one_wave(r: run_steps.RunData, s: run_steps.StepData, term: str) -> bool:
    """A one-wave step (requests = streams, 2 to the engine's slots) of a protocol that is
    ``term``'s source."""
    tl = s.timeline
    name = (r.provenance.get("protocol_config") or {}).get("name")
    return (name in term_protocols(term) and 2 <= tl.streams == len(tl.requests)
            and tl.streams <= run_steps.engine_shape(r)[0].max_num_seqs)


def _is_row_source(r: run_steps.RunData, s: run_steps.StepData) -> bool:
    """A one-wave decode step (tokens out after the first) of a decode-row source."""
    return (_one_wave(r, s, ROW_TERM) and decode_intervals(s) > 0
            and not d.timeline_is_held_prefill(s.timeline))


def _is_kv_source(r: run_steps.RunData, s: run_steps.StepData) -> bool:
    """A one-wave step of a KV-read source with a span in which every stream decodes."""
    return (_one_wave(r, s, KV_TERM) and decode_intervals(s) > 0
            and not d.timeline_is_held_prefill(s.timeline)
            and bool(d.all_decoding_spans(s.timeline)))


def kv_sources(runs: list[run_steps.RunData], card: str, engine: str) -> tuple[Pick, ...]:
    """The KV-read term's source steps: one-wave steps of the engine's own runs on the card
    (the rate is its KV dtype's attention kernel at its context; no other engine's)."""
    pairs = [(r, s) for r in runs if _key(r)[:2] == (card, engine) for s in r.steps
             if _is_kv_source(r, s)]
    why = (f"KV read: {len(pairs)} one-wave step(s) of engine {engine} on {card}, read while "
           "every stream decodes")
    return tuple(Pick(r, s, why) for r, s in sorted(pairs, key=lambda p: _earliest(*p)))


def admission_sources(runs: list[run_steps.RunData], card: str, engine: str
                      ) -> tuple[Pick, ...]:
    """The admission term's source steps: one-wave steps of the engine's own runs on the
    card, else of every run on the card (the interval is the load client's, on its host)."""
    on_card = [r for r in runs if _key(r)[0] == card]
    for pool, where in (([r for r in on_card if _key(r)[1] == engine], f"engine {engine}"),
                        (on_card, f"any engine (engine {engine} has none)")):
        pairs = [(r, s) for r in pool for s in r.steps if _one_wave(r, s, ADMISSION_TERM)]
        if pairs:
            why = (f"admission: {len(pairs)} one-wave step(s) of {where} on {card}: the "
                   "interval between a wave's sends")
            return tuple(Pick(r, s, why) for r, s in sorted(pairs, key=lambda p:
                                                              _earliest(*p)))
    return ()


def row_sources(runs: list[run_steps.RunData], card: str, engine: str, weight_format: Any
                ) -> tuple[tuple[Pick, ...], str | None]:
    """The decode-row term's source steps for ``engine`` on ``card``: the engine's own, else
    those of the first engine of its weight format there that has them; and that engine."""
    on_card = [r for r in runs if _key(r)[0] == card]
    for who in ([engine] + sorted({_key(r)[1] for r in on_card
                                   if _key(r)[2] == weight_format and _key(r)[1] != engine},
                                  key=lambda e: min(_earliest(r, r.steps[0]) for r in on_card
                                                    if _key(r)[1] == e and r.steps))):
        pairs = [(r, s) for r in on_card if _key(r)[1] == who for s in r.steps
                 if _is_row_source(r, s)]
        if pairs:
            rows = sorted({p[1].timeline.streams for p in pairs})
            why = (f"decode rows: {len(pairs)} one-wave decode step(s) at {len(rows)} row "
                   f"count(s) ({', '.join(map(str, rows))}) of engine {who} on {card}"
                   + ("" if who == engine else f" (engine {engine} has none; same weight "
                      f"format {weight_format})"))
            return (tuple(Pick(r, s, why) for r, s in sorted(pairs, key=lambda p:
                                                              _earliest(*p))), who)
    return (), None


def _has_datasheet(card: str) -> bool:
    """Whether the card registry knows ``card`` (a CPU engine's runs name none)."""
    try:
        get_card(card)
    except InputError:
        return False
    return True


def choose(runs: list[run_steps.RunData], card: str, engine: str, weight_format: Any,
           *, explicit: bool = False, with_rows: bool = True,
           layout: tuple[tuple[str, int], ...] | None = None) -> Choice:
    """The calibration of ``engine`` (``weight_format``) on ``card`` chosen among ``runs``
    by the module's rule. ``explicit``: ``runs`` were named by the user (``--calibrate-
    from``), so any engine and format among them counts. ``layout``
    (:func:`parallel_layout`): only runs of that parallel layout are borrowed. Raises
    InputError naming the card, engine and format when no one-stream decode step exists."""
    pool = ([r for r in runs if _key(r)[0] == card
             and (layout is None or _layout(r) == layout)] if not explicit else runs)
    if explicit:
        def scope(usable: Any) -> tuple[list[Any], str]:
            pairs = [(r, s) for r in pool for s in r.steps if usable(s)]
            return pairs, "the run(s) given with --calibrate-from"
    else:
        def scope(usable: Any) -> tuple[list[Any], str]:
            return _scope(pool, card, engine, weight_format, usable)
    dec, where = scope(_is_decode)
    if not dec:
        raise InputError(f"card {card}, engine {engine}", f"no usable calibration: no "
                         f"one-stream decode step among the runs of engine {engine} or of "
                         f"weight format {weight_format} on {card} ({len(pool)} run(s) on "
                         "the card" + ("" if layout is None else
                                       f" of its parallel layout, {layout_words(layout)}")
                         + "); measure a one-stream decode step "
                         "or pass --calibrate-from a run with one")
    bw = _best_decode(dec, where, "bandwidth")
    short, swhere = scope(lambda s: _is_decode(s) and _median_prompt(s) < m.LONG_PROMPT_TOKENS)
    if short:
        ov = _best_decode(short, swhere, "overhead (short prompts, so the prefill the model "
                          "subtracts is small)")
    else:
        ov = Pick(bw.run, bw.step, "overhead: the bandwidth step (no one-stream step with "
                  f"prompts under {m.LONG_PROMPT_TOKENS} tokens)")
    long = [(r, s) for r in (pool if explicit else
                             [r for r in pool if _key(r)[2] == weight_format])
            for s in _one_stream_steps(r) if _median_prompt(s) >= m.LONG_PROMPT_TOKENS]
    cp, missing = None, ""
    if long:
        r, s = min(long, key=lambda p: (_compute_rank(*p), not explicit and
                                        _key(p[0])[1] != engine, -_median_prompt(p[1]),
                                        -len(p[1].timeline.requests), _earliest(*p)))
        rank = _compute_rank(r, s)
        cp = Pick(r, s, f"compute: {COMPUTE_RANKS[rank]} ({len(s.timeline.requests)} x "
                  f"{_median_prompt(s):,.0f}-token prompts; rank {rank + 1} of "
                  f"{len(COMPUTE_RANKS)}: {'; '.join(COMPUTE_RANKS)}), of {len(long)} "
                  f"one-stream step(s) with prompts of {m.LONG_PROMPT_TOKENS:,}+ tokens "
                  + ("in the run(s) given" if explicit else
                     f"of weight format {weight_format} on {card}")
                  + ("" if explicit or _key(r)[1] == engine else f" (engine {_key(r)[1]})"))
    else:
        missing = (f"no one-stream step with prompts of {m.LONG_PROMPT_TOKENS:,}+ tokens "
                   + ("in the run(s) given" if explicit
                      else f"of weight format {weight_format} on {card}"))
        if not _has_datasheet(card):  # e.g. cpu: the longest prefill there is, said
            short_pf = [(r, s) for r, s in dec if _median_prompt(s) > 0]
            if short_pf:
                r, s = min(short_pf, key=lambda p: (-_median_prompt(p[1]), _earliest(*p)))
                cp = Pick(r, s, f"compute: {missing} and no datasheet rate for card {card}: "
                          f"the longest one-stream prefill there is ({_median_prompt(s):,.0f}"
                          "-token prompts; short, so a lower bound of the card's compute)")
                missing = ""
    rows: tuple[Pick, ...] = ()
    rows_base = None
    admission: tuple[Pick, ...] = ()
    kv: tuple[Pick, ...] = ()
    if with_rows and not explicit:
        rows, who = row_sources(pool, card, engine, weight_format)
        if rows and who != engine:
            rows_base = choose(pool, card, str(who), weight_format, with_rows=False,
                               layout=layout)
        admission = admission_sources(pool, card, engine)
        kv = kv_sources(pool, card, engine)
    return Choice(card=card, engine=engine, weight_format=weight_format, bandwidth=bw,
                  overhead=ov, compute=cp, compute_missing=missing, rows=rows,
                  rows_base=rows_base, admission=admission, kv=kv)


def choose_for(target: run_steps.RunData, runs: list[run_steps.RunData]) -> Choice:
    """:func:`choose` for the target run's own card, engine and weight format."""
    card, engine, fmt = _key(target)
    return choose(runs, card, engine, fmt, layout=_layout(target))


def _choice_key(choice: Choice, compute_dtype: str) -> tuple[Any, ...]:
    picks = [choice.bandwidth, choice.overhead, choice.compute, *choice.rows,
             *choice.admission, *choice.kv]
    return (choice.card, choice.engine, compute_dtype,
            tuple(p.label if p else "" for p in picks),
            _choice_key(choice.rows_base, compute_dtype) if choice.rows_base else None)


def calibration(choice: Choice, compute_dtype: str,
                cache: dict[tuple[Any, ...], m.Calibration] | None = None) -> m.Calibration:
    """:func:`base_calibration` with the decode-row factors of ``choice.rows``: at each
    measured row count, the median over its source steps of measured median TPOT / the
    model's (simulated with the rows' own engine shape and calibration, no factors).
    ``cache``: calibrations already worked out over the same loaded runs (one table's
    runs share a few), keyed by the steps chosen."""
    key = _choice_key(choice, compute_dtype)
    if cache is not None and key in cache:
        return cache[key]
    cal = base_calibration(choice, compute_dtype)
    if choice.admission:
        gaps = [m.send_interval_s([r.start_s for r in p.step.timeline.requests])
                for p in choice.admission]
        gap = statistics.median(g for g in gaps if g is not None)
        cal = replace(cal, admission_interval_s=gap, admission_source=(
            f"{choice.admission[0].run.name} ({len(gaps)} one-wave steps): the median "
            f"interval between a wave's sends, {gap * 1e3:.3f} ms (last send - first send "
            "over requests - 1)"))
    if choice.rows:
        src_cal = cal
        if choice.rows_base is not None:
            _, info = run_steps.engine_shape(choice.rows[0].run)
            src_cal = replace(base_calibration(choice.rows_base, info["compute_dtype"]),
                              admission_interval_s=cal.admission_interval_s)
        by_rows: dict[int, list[float]] = {}
        for p in choice.rows:
            tl = p.step.timeline
            shape, _ = run_steps.engine_shape(p.run)
            pred, _ = _row(shape, src_cal, [r.prompt_tokens for r in tl.requests],
                           [r.output_tokens for r in tl.requests], tl.streams)
            by_rows.setdefault(tl.streams, []).append(
                statistics.median(d.tpots_ms(tl)) / pred["predicted_median_tpot_ms"])
        pts = tuple((n, statistics.median(v)) for n, v in sorted(by_rows.items()))
        src = (f"{choice.rows[0].run.name} ({len(choice.rows)} one-wave decode steps): "
               "measured median TPOT / the model's at "
               + ", ".join(f"{n} rows x{f:.3f}" for n, f in pts)
               + "; linear between, 1 outside")
        cal = replace(cal, row_factors=pts, row_factor_source=src)
    if choice.kv:
        cal = kv_calibration(cal, choice.kv)
    if cache is not None:
        cache[key] = cal
    return cal


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


def kv_calibration(cal: m.Calibration, picks: tuple[Pick, ...]) -> m.Calibration:
    """``cal`` with the KV-read rate: the median over ``picks`` of
    :func:`claimcheck.core.model.kv_bandwidth_from_decode` at each step's streams, its
    all-streams-decoding step time and mean context (:func:`kv_window`), over ``cal``'s
    decode-row factor at those rows."""
    rates = []
    for p in picks:
        shape, _ = run_steps.engine_shape(p.run)
        step_s, ctx = kv_window(p.step.timeline)
        b = p.step.timeline.streams
        factor = m.row_factor(cal.row_factors, b) if cal.row_factors else 1.0
        rates.append(m.kv_bandwidth_from_decode(shape, cal, b, ctx, step_s, factor))
    rate = statistics.median(rates)
    streams = sorted({p.step.timeline.streams for p in picks})
    src = (f"{picks[0].run.name} ({len(picks)} one-wave steps at "
           f"{', '.join(map(str, streams))} streams, every stream decoding): KV read at "
           f"{rate / 1e9:,.0f} GB/s, the median of {min(rates) / 1e9:,.0f}-"
           f"{max(rates) / 1e9:,.0f} GB/s (weights and state at "
           f"{cal.bandwidth_bytes_s / 1e9:,.0f} GB/s)")
    return replace(cal, kv_bandwidth_bytes_s=rate, kv_source=src)


def base_calibration(choice: Choice, compute_dtype: str) -> m.Calibration:
    """BW_eff from the bandwidth step (its median TPOT at its mean context, bytes of its own
    engine), the overhead from the overhead step (median TTFT less the model's prefill of its
    prompt) and P_eff from the compute step (prompt x F_body / (median TTFT less the
    overhead)), else the card's datasheet dense rate at ``compute_dtype`` (said)."""
    s = choice.bandwidth.step
    tl = s.timeline
    shape, _ = run_steps.engine_shape(choice.bandwidth.run)
    tpot_s = statistics.median(d.tpots_ms(tl)) / 1e3
    ctx = statistics.fmean(r.prompt_tokens + (r.output_tokens - 1) / 2 for r in tl.requests)
    bw_src = (f"{choice.bandwidth.label} (1 stream): median TPOT {tpot_s * 1e3:.3f} ms at "
              f"{ctx:.0f} tokens of mean context")
    o = choice.overhead.step
    oshape, _ = run_steps.engine_shape(choice.overhead.run)
    prompt = round(_median_prompt(o))
    ttft = statistics.median(r.ttft_s for r in o.timeline.requests)
    bw = m.bandwidth_from_decode(shape, tpot_s, ctx)

    def overhead(flops: float) -> float:
        cal = m.Calibration(bw, flops, 0.0, "", "")
        return max(0.0, ttft - m.prefill_time_s(oshape, cal, prompt))
    x = choice.compute
    if x is not None:
        p = _median_prompt(x.step)
        t = statistics.median(r.ttft_s for r in x.step.timeline.requests)
        flops = m.compute_from_prefill(shape, p, t)  # first pass: whole TTFT is compute
        ov = 0.0
        for _ in range(3):  # the overhead (a short prompt) depends little on P_eff
            ov = overhead(flops)
            flops = m.compute_from_prefill(shape, p, max(t - ov, 1e-9))
        c_src = (f"{x.label} (1 stream): {p:.0f}-token prompts x "
                 f"{shape.flops_body_per_token / 1e9:.1f} GFLOP/token over median TTFT "
                 f"{t:.3f} s less the {ov * 1e3:.1f} ms per-request overhead")
    else:
        card = get_card(choice.card)
        flops = card.tflops(compute_dtype) * 1e12
        c_src = (f"fallback: {card.name} datasheet dense {compute_dtype} "
                 f"{card.tflops(compute_dtype):g} TFLOP/s ({choice.compute_missing})")
        ov = overhead(flops)
    o_src = (f"{choice.overhead.label} (1 stream): median TTFT {ttft * 1e3:.1f} ms of "
             f"{prompt}-token prompts less the model's prefill")
    return m.Calibration(bandwidth_bytes_s=bw, flops_s=flops, request_overhead_s=ov,
                         bandwidth_source=bw_src, compute_source=c_src,
                         overhead_source=o_src)


def _row(shape: m.EngineShape, cal: m.Calibration, prompts: list[int], outputs: list[int],
         streams: int) -> tuple[dict[str, Any], m.Simulation]:
    """Predicted end to end, decode aggregate, median TPOT and TTFT of one simulated step
    (decode None for a held-prefill step)."""
    sim = m.simulate(shape, cal, prompts, outputs, streams)
    tl = sim.timeline
    held = d.timeline_is_held_prefill(tl)
    tpots = d.tpots_ms(tl)
    return ({"predicted_e2e_tok_s": d.e2e_aggregate_tok_s(tl),
             "predicted_decode_tok_s": None if held else d.decode_aggregate_tok_s(tl),
             "predicted_median_tpot_ms": statistics.median(tpots) if tpots else None,
             "predicted_median_ttft_s": statistics.median(r.ttft_s for r in tl.requests),
             "predicted_load_s": tl.wall_s, "prefill_held": held, "bound": sim.bound,
             "engine_steps": sim.engine_steps, **m.shares(sim)}, sim)


def predict_run(target: run_steps.RunData, choice: Choice,
                cache: dict[tuple[Any, ...], m.Calibration] | None = None) -> dict[str, Any]:
    """Predicted and measured end to end and decode aggregate for every step of ``target``,
    with the calibration ``choice`` (steps it used are marked ``calibration_step``)."""
    shape, info = run_steps.engine_shape(target)
    cal = calibration(choice, info["compute_dtype"], cache)
    used = choice.steps()
    rows = []
    for s in target.steps:
        tl = s.timeline
        reqs = tl.requests
        pred, _ = _row(shape, cal, [r.prompt_tokens for r in reqs],
                       [r.output_tokens for r in reqs], tl.streams)
        held = pred["prefill_held"]
        m_e2e = d.e2e_aggregate_tok_s(tl)
        m_dec = None if held else d.decode_aggregate_tok_s(tl)
        p_e2e, p_dec = pred["predicted_e2e_tok_s"], pred["predicted_decode_tok_s"]
        tpots = d.tpots_ms(tl)
        rows.append({
            "step": s.record["step"], "repeat": s.record["repeat"], "streams": tl.streams,
            "requests": len(reqs),
            "calibration_step": (target.name, s.record["dir"]) in used,
            "step_status": s.record.get("status") or "complete",
            "predicted_e2e_tok_s": p_e2e, "measured_e2e_tok_s": m_e2e,
            "e2e_error": p_e2e / m_e2e - 1,
            "predicted_decode_tok_s": p_dec, "measured_decode_tok_s": m_dec,
            "decode_error": (p_dec / m_dec - 1) if p_dec and m_dec else None,
            "prefill_held": held,
            "predicted_median_tpot_ms": pred["predicted_median_tpot_ms"],
            "measured_median_tpot_ms": statistics.median(tpots) if tpots else None,
            "predicted_median_ttft_s": pred["predicted_median_ttft_s"],
            "measured_median_ttft_s": statistics.median(r.ttft_s for r in reqs),
            **{k: v for k, v in pred.items() if not k.startswith("predicted_")
               and k != "prefill_held"},
        })
    return {"run": target.name, "calibrated_on": choice.bandwidth.run.name,
            "calibration": cal.as_dict(), "choice": choice.as_dict(), "engine": info,
            "steps": rows}


def predict(target: run_steps.RunData, calib: run_steps.RunData,
            compute_run: run_steps.RunData | None = None) -> dict[str, Any]:
    """:func:`predict_run` calibrated only on the run(s) given (``--calibrate-from``):
    bandwidth, overhead and compute by the module's rule among ``calib`` (and
    ``compute_run``), whatever their engine."""
    card, engine, fmt = _key(target)
    given = [calib] + ([compute_run] if compute_run and compute_run is not calib else [])
    return predict_run(target, choose(given, card, engine, fmt, explicit=True))


PREFILL_SHARE = 0.25
"""A missed step whose simulated busy time was compute-bound (prefill chunks) for at least
this share is named for its prefill, even when memory bounded most of it: its TPOT carries
the stalls other prompts' chunks cause."""


def miss_term(row: dict[str, Any], tolerance: float = TOLERANCE) -> str | None:
    """Which term a missed step points at, or None when both aggregates are within
    ``tolerance``.

    The median TPOT isolates the per-step terms: when its speed is off by more than the
    tolerance, the step's memory (or compute) term is named with its largest part; when it
    is not, the miss is in what lies between decode steps: admission and prefill of each
    wave (the ramp), read off the predicted and measured median TTFT.
    """
    e2e, dec = row["e2e_error"], row["decode_error"] or 0.0
    if abs(e2e) <= tolerance and abs(dec) <= tolerance:
        return None
    if row.get("prefill_held"):
        return (f"the prefill (compute) term: predicted median TTFT "
                f"{row['predicted_median_ttft_s']:.3f} s, measured "
                f"{row['measured_median_ttft_s']:.3f} s")
    step_err = row["measured_median_tpot_ms"] / row["predicted_median_tpot_ms"] - 1
    if abs(step_err) > tolerance:
        head = (f"the per-step {row['bound']} term: predicted TPOT "
                f"{row['predicted_median_tpot_ms']:.2f} ms, measured "
                f"{row['measured_median_tpot_ms']:.2f} ms ({step_err:+.1%} speed)")
        share = row.get("compute_bound_share", 0) or 0
        if row["bound"] == "compute" or share >= PREFILL_SHARE:
            return (f"{head}; compute bounded {share:.0%} of the simulated busy time (prefill "
                    "chunks sharing decode steps: a request's TPOT waits on other prompts)")
        part = max(("weights", "state", "kv"),
                   key=lambda k: row.get(f"{k}_share_of_memory", 0.0))
        return (f"{head}; its largest part is {part} "
                f"({row.get(f'{part}_share_of_memory', 0):.0%} of the memory time)")
    return (f"the ramp of each wave (admission and prefill), not the decode step "
            f"({step_err:+.1%} on TPOT): predicted median TTFT "
            f"{row['predicted_median_ttft_s']:.2f} s, measured "
            f"{row['measured_median_ttft_s']:.2f} s")


def table_rows(runs: list[run_steps.RunData], unmodelled: list[str] | None = None
               ) -> list[dict[str, Any]]:
    """model.csv's rows: predicted / measured for every step of every run, each run
    calibrated by :func:`choose_for` among ``runs``, with the run, step and reason of each
    calibration input and the term a miss of more than 5% points at. A run that cannot be
    calibrated is left out, named with why in ``unmodelled`` (and on stderr)."""
    import sys
    rows = []
    cache: dict[tuple[Any, ...], m.Calibration] = {}
    for target in runs:
        try:
            choice = choose_for(target, runs)
            out = predict_run(target, choice, cache)
        except InputError as e:
            why = f"{target.name} not modelled: {e}"
            print(f"claimcheck: model: {why}", file=sys.stderr)
            if unmodelled is not None:
                unmodelled.append(why)
            continue
        cal, prov = out["calibration"], target.provenance
        picks = {"bandwidth": choice.bandwidth, "overhead": choice.overhead,
                 "compute": choice.compute}
        base = {"run": target.name, "card": prov.get("card"), "engine": prov.get("engine"),
                "weight_format": _key(target)[2],
                "protocol": (prov.get("protocol_config") or {}).get("name"),
                "weights": (prov.get("engine_config") or {}).get("weights"),
                "calibrated_on": choice.bandwidth.run.name,
                "bandwidth_gb_s": cal["bandwidth_gb_s"], "tflops": cal["tflops"],
                "request_overhead_ms": cal["request_overhead_s"] * 1e3,
                "bandwidth_source": cal["bandwidth_source"],
                "compute_source": cal["compute_source"],
                "overhead_source": cal["overhead_source"],
                "row_factors": "; ".join(f"{n}:{f:.4f}" for n, f in cal["row_factors"]),
                "row_factor_source": cal["row_factor_source"],
                "admission_interval_ms": cal["admission_interval_s"] * 1e3,
                "admission_source": cal["admission_source"],
                "kv_bandwidth_gb_s": (cal["kv_bandwidth_bytes_s"] / 1e9
                                      if cal["kv_bandwidth_bytes_s"] else None),
                "kv_source": cal["kv_source"]}
        for k, p in picks.items():
            base[f"{k}_step"] = p.label if p else ""
            base[f"{k}_why"] = p.why if p else choice.compute_missing
        for r in out["steps"]:
            rows.append({**base, **r, "miss_term": miss_term(r)})
    return rows


# ------------------------------------------------------------------ a protocol, predicted

PROTOCOL_ASSUMPTIONS = (
    "every request has the step's input_len prompt tokens and runs to its output_len (as "
    "with --ignore-eos, or dummy weights that never stop); closed-loop clients at the step's "
    "streams (a new request is sent when one finishes); load seconds = first send to last "
    "token as simulated, engine start and each step's client start-up not counted")


def _step_shape(run: run_steps.RunData, rec: dict[str, Any]
                ) -> tuple[int, int, int, int, str]:
    """(streams, requests, input_len, output_len, kind) of a recorded step; lengths and
    kind the recorded protocol's where the step record lacks them (older records)."""
    proto = run.provenance.get("protocol_config") or {}
    steps = proto.get("steps") or []
    ps = steps[rec["step"]] if isinstance(rec.get("step"), int) and rec["step"] < len(steps) \
        else {}

    def get(k: str) -> Any:
        return rec.get(k) or ps.get(k) or proto.get(k)
    return (int(rec["streams"]), int(rec["requests"]), int(get("input_len") or 0),
            int(get("output_len") or 0), get("kind") or "bench")


def _engine_runs(runs: list[run_steps.RunData], card: str, engine: str
                 ) -> list[run_steps.RunData]:
    on_card = [r for r in runs if _key(r)[0] == card]
    if not on_card:
        cards = sorted({str(_key(r)[0]) for r in runs})
        raise InputError("--card", f"no committed run on card {card!r} (cards with runs: "
                         f"{', '.join(cards) or 'none'})")
    own = [r for r in on_card if _key(r)[1] == engine]
    if not own:
        engines = sorted({str(_key(r)[1]) for r in on_card})
        raise InputError("--engine", f"no committed run of engine {engine!r} on {card} "
                         f"(engines with runs there: {', '.join(engines)})")
    return sorted(own, key=lambda r: (str(r.provenance.get("started_utc", "")), r.name))


def _fit(step: Any, proto: Any, eng: dict[str, Any]) -> tuple[bool, str]:
    """Whether the engine can run the step (prompt + output within max_model_len, the
    measure runner's margin included) and what to say when it queues past its slots."""
    from claimcheck.core.protocols import FIT_MARGIN_TOKENS
    max_len, seqs = eng.get("max_model_len"), eng.get("max_num_seqs")
    need = step.input_len + step.output_len + FIT_MARGIN_TOKENS
    if max_len and need > int(max_len):
        return False, (f"{step.input_len} + {step.output_len} tokens + {FIT_MARGIN_TOKENS} "
                       f"margin exceed max_model_len {max_len}: not predicted")
    if seqs and step.streams > int(seqs):
        return True, (f"{step.streams} streams on {seqs} slots: requests queue in the "
                      "server" + ("" if proto.queue_ok else " (measure refuses it: the "
                                  "protocol does not set queue_ok)"))
    return True, ""


def _plan_step(shape: m.EngineShape, cal: m.Calibration, streams: int, requests: int,
               input_len: int, output_len: int) -> dict[str, Any]:
    pred, _ = _row(shape, cal, [input_len] * requests, [output_len] * requests, streams)
    return pred


TWIN_FIELDS = ("model", "weights", "weight_format", "quantization", "kv_cache_dtype",
               "mamba_ssm_cache_dtype", "prefix_caching")
"""Engine settings that decide the model's bytes, FLOPs and chunking besides the slots and
the context length: an engine with no run borrows the shape of a run whose engine agrees on
all of them and on its parallel layout (:func:`parallel_layout`)."""


def _twin(runs: list[run_steps.RunData], card: str, engine: str, spec: Any
          ) -> run_steps.RunData:
    """The first run on ``card`` of an engine that differs from ``spec`` (an
    :class:`~claimcheck.measure.engines.Engine` with no run) only in slots and context:
    never one of another parallel layout (a run records 1 GPU when it records no size)."""
    want = {k: getattr(spec, k) for k in TWIN_FIELDS}
    layout = parallel_layout(spec.__dict__)
    twins = [r for r in runs if _key(r)[0] == card and _layout(r) == layout and all(
        (r.provenance.get("engine_config") or {}).get(k) == v for k, v in want.items())]
    if not twins:
        raise InputError("--engine", f"no committed run of engine {engine!r} on {card}, nor "
                         "of an engine that differs from it only in max_num_seqs and "
                         f"max_model_len ({', '.join(TWIN_FIELDS)} and the parallel layout, "
                         f"{layout_words(layout)}, equal)")
    return min(twins, key=lambda r: (str(r.provenance.get("started_utc", "")), r.name))


def predict_protocol(runs: list[run_steps.RunData], card: str, engine: str, proto: Any,
                     engines: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every step of protocol ``proto`` predicted for ``engine`` on ``card`` from the
    committed ``runs`` (calibration by :func:`choose`, engine shape from the engine's first
    run); a step measured already (same streams, requests, lengths and kind in a run of the
    engine on the card) carries its measured end to end and decode aggregate (median over
    the matching steps) and the errors. An engine of ``engines`` (config/engines.yaml) with
    no run on the card takes the shape of its twin's first run (:func:`_twin`) with its own
    slots and context length, said in ``engine_run``."""
    try:
        own = _engine_runs(runs, card, engine)
        base = own[0]
        shape, info = run_steps.engine_shape(base)
        eng = base.provenance.get("engine_config") or {}
        fmt, engine_run = _key(base)[2], base.name
    except InputError as e:
        if not engines or engine not in engines or e.source != "--engine":
            raise
        spec = engines[engine]
        own, base = [], _twin(runs, card, engine, spec)
        shape, info = run_steps.engine_shape(base)
        shape = replace(shape, max_num_seqs=int(spec.max_num_seqs or shape.max_num_seqs))
        info = {**info, "max_num_seqs": shape.max_num_seqs}
        eng = {"weights": spec.weights, "max_model_len": spec.max_model_len,
               "max_num_seqs": shape.max_num_seqs}
        fmt = spec.weight_format
        engine_run = (f"{base.name} (engine {_key(base)[1]}; {engine} has no run: same "
                      f"{', '.join(TWIN_FIELDS)}, same parallel layout "
                      f"({layout_words(_layout(base))}), its {shape.max_num_seqs} slots and "
                      f"max_model_len {spec.max_model_len} from config/engines.yaml)")
    choice = choose(runs, card, engine, fmt, layout=_layout(base))
    cal = calibration(choice, info["compute_dtype"])
    used = choice.steps()
    measured: dict[tuple[Any, ...], list[tuple[run_steps.RunData, run_steps.StepData]]] = {}
    for r in own:
        for s in r.steps:
            measured.setdefault(_step_shape(r, s.record), []).append((r, s))
    steps = []
    for i, st in enumerate(proto.steps):
        fits, note = _fit(st, proto, eng)
        row: dict[str, Any] = {
            "index": i, "streams": st.streams, "requests": st.requests,
            "input_len": st.input_len, "output_len": st.output_len,
            "repeats": proto.repeats, "fits": fits, "note": note}
        row.update(_plan_step(shape, cal, st.streams, st.requests, st.input_len,
                              st.output_len) if fits else
                   {k: None for k in ("predicted_e2e_tok_s", "predicted_decode_tok_s",
                                      "predicted_median_tpot_ms", "predicted_median_ttft_s",
                                      "predicted_load_s")})
        got = measured.get((st.streams, st.requests, st.input_len, st.output_len, proto.kind),
                           [])
        row["measured_in"] = [f"{r.name} step {s.record['step']} repeat {s.record['repeat']}"
                              for r, s in got]
        row["calibration_step"] = any((r.name, s.record["dir"]) in used for r, s in got)
        m_e2e = (statistics.median(d.e2e_aggregate_tok_s(s.timeline) for _, s in got)
                 if got else None)
        decs = [d.decode_aggregate_tok_s(s.timeline) for _, s in got
                if not d.timeline_is_held_prefill(s.timeline)]
        m_dec = statistics.median(decs) if decs else None
        p_e2e, p_dec = row.get("predicted_e2e_tok_s"), row.get("predicted_decode_tok_s")
        row.update({"measured_e2e_tok_s": m_e2e, "measured_decode_tok_s": m_dec,
                    "e2e_error": p_e2e / m_e2e - 1 if p_e2e and m_e2e else None,
                    "decode_error": p_dec / m_dec - 1 if p_dec and m_dec else None})
        steps.append(row)
    load = sum((r["predicted_load_s"] or 0) * r["repeats"] for r in steps)
    return {"card": card, "engine": engine, "protocol": proto.name, "kind": proto.kind,
            "weights": eng.get("weights"), "engine_run": engine_run, "engine_shape": info,
            "calibration": cal.as_dict(), "choice": choice.as_dict(),
            "assumptions": PROTOCOL_ASSUMPTIONS, "steps": steps,
            "predicted_load_s": load, "_shape": shape, "_cal": cal, "_choice": choice,
            "_engine_config": eng}


def verify_plan(pred: dict[str, Any], n: int, suite: list[Any]) -> dict[str, Any]:
    """Verify mode for a predicted protocol: measure the calibration steps that fit the
    engine (one that does not, borrowed from an engine with a longer context, is left out
    with its reason: its value stays the one measured there) and ``n`` of the
    protocol's steps (evenly spread over its step list, the last included; one repeat
    each), predict the rest; predicted load seconds for that plan against the whole
    protocol and the whole ``suite`` (every protocol given, every step that fits the engine,
    every repeat), and for the suite in verify mode (the calibration steps once, ``n``
    sampled steps of each protocol once)."""
    if n < 0:
        raise InputError("--verify", f"the number of sampled steps must be >= 0, got {n}")
    shape, cal, choice = pred["_shape"], pred["_cal"], pred["_choice"]
    calib: list[dict[str, Any]] = []
    left_out: list[dict[str, Any]] = []
    seen = set()
    for role, p in (("bandwidth", choice.bandwidth), ("overhead", choice.overhead),
                    ("compute", choice.compute)):
        if p is None:
            continue
        sh = _step_shape(p.run, p.step.record)
        if sh in seen:
            continue
        streams, requests, il, ol, _ = sh
        step = SimpleNamespace(streams=streams, requests=requests, input_len=il,
                               output_len=ol)
        fits, note = _fit(step, SimpleNamespace(queue_ok=True), pred["_engine_config"])
        if not fits:  # its value is the one measured in p.label; not planned here
            left_out.append({"role": role, "streams": streams, "requests": requests,
                             "input_len": il, "output_len": ol, "measured_in": p.label,
                             "reason": note.removesuffix(": not predicted")})
            continue
        seen.add(sh)
        load = _plan_step(shape, cal, streams, requests, il, ol)["predicted_load_s"]
        calib.append({"role": role, "streams": streams, "requests": requests, "input_len": il,
                      "output_len": ol, "measured_in": p.label, "predicted_load_s": load})
    def shape_of(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["streams"], r["requests"], r["input_len"], r["output_len"], pred["kind"])
    cand = [r for r in pred["steps"] if r["fits"] and shape_of(r) not in seen]
    pick = _spread(len(cand), n)
    sampled = [cand[i]["index"] for i in pick]
    calib_s = sum(c["predicted_load_s"] for c in calib)
    verify_s = calib_s + sum(cand[i]["predicted_load_s"] for i in pick)
    suite_s, suite_verify_s = 0.0, calib_s
    eng = pred["_engine_config"]
    for proto in suite:
        loads = [(st, _plan_step(shape, cal, st.streams, st.requests, st.input_len,
                                 st.output_len)["predicted_load_s"])
                 for st in proto.steps if _fit(st, proto, eng)[0]]
        suite_s += proto.repeats * sum(x for _, x in loads)
        left = [x for st, x in loads if (st.streams, st.requests, st.input_len,
                                         st.output_len, proto.kind) not in seen]
        suite_verify_s += sum(left[i] for i in _spread(len(left), n))
    return {"sampled": n, "calibration_steps": calib, "calibration_left_out": left_out,
            "sampled_steps": sampled,
            "calibration_protocol_steps": [r["index"] for r in pred["steps"]
                                           if shape_of(r) in seen],
            "predicted_steps": [r["index"] for r in pred["steps"] if r["fits"]
                                and r["index"] not in sampled and shape_of(r) not in seen],
            "verify_load_s": verify_s, "protocol_load_s": pred["predicted_load_s"],
            "suite_load_s": suite_s, "suite_verify_load_s": suite_verify_s,
            "suite_protocols": len(suite)}


def _spread(k: int, n: int) -> list[int]:
    """``n`` of ``k`` indices evenly spread, the last included (all when n >= k)."""
    if n >= k:
        return list(range(k))
    if n == 1:
        return [k - 1]
    return sorted({round(i * (k - 1) / (n - 1)) for i in range(n)})
