"""Choose the calibration inputs of a card + engine (+ weight format) by one stated rule.


The calibration of a card + engine (+ weight format) is chosen by one stated rule among ALL
the runs of that engine on that card (:func:`choose`), never by which run happens to be
predicted, so a new run can never silently recalibrate the others. Only runs of the same
parallel layout and the same vLLM release are ever borrowed (each engine version is
calibrated on its own runs; the admission interval, the load client's, is the exception):

- **bandwidth**: the one-stream decode step with the most decode intervals (tokens after
  each request's first, summed: the most samples of the per-step time) among the engine's
  runs on the card; else among the runs of its weight format there (an FP8 rate is no
  BF16 one);
- **per-request overhead**: the same choice among one-stream steps whose prompts are short
  (under :data:`~claimcheck.model.model.LONG_PROMPT_TOKENS`), so that the model's prefill,
  which is subtracted from their TTFT, is a small memory-bound step and does not depend on
  the compute being calibrated (usually the bandwidth step itself);
- **compute**: among one-stream steps with prompts of at least
  :data:`~claimcheck.model.model.LONG_PROMPT_TOKENS` of the same weight format on the card,
  the held-prefill step (prompts back to back, at most 2 tokens out, each prompt within one
  token budget), else a step whose prompt fits one token budget, else the longest prefill
  (split across steps); within a rank the engine's own runs, then the longest prompt, the
  most requests; never a short prompt's TTFT when a better measurement exists. Where the
  engine's runs name a quantized kernel (:func:`~claimcheck.calibration.picks.run_kernel`),
  steps on that kernel come before any rank of another's: a W4A16 prefill runs at its
  kernel's rate (on the H200 Machete's held prefill gives 574 TFLOP/s, Marlin's 333). None:
  the card's datasheet rate at the engine's compute dtype, said as a fallback.

Two measured terms come by the same kind of rule (:func:`row_sources`,
:func:`admission_sources`): the decode-row factors from one-wave decode steps of protocols
that say ``model_term: decode_rows`` (the engine's own runs on the card, else the
intercepts of its own KV lines (:func:`line_rows`: one run's steps at the same streams and
three or more contexts, the step at no KV over the model's), else its weight format's),
and the admission interval from the send times of one-wave steps of protocols that say
``model_term: admission`` (the engine's, else any run on the card: it is the load
client's). A card the registry does not know (a CPU engine's ``cpu``) takes compute from
its longest one-stream prefill, said as a lower bound.

Ties go to the run started first, then the name and step: an equal measurement committed
later does not take over. The arithmetic on the chosen steps is
:mod:`claimcheck.calibration.calibration`'s.
"""

from __future__ import annotations

from typing import Any

from claimcheck.calibration.choice import (
    ROWS_CLOSED_LOOP,
    ROWS_LINES,
    ROWS_ONE_WAVE,
    Choice,
)
from claimcheck.calibration.computecarry import carried_compute
from claimcheck.calibration.kvcarry import card_arch
from claimcheck.calibration.layout import layout_words, run_layout, run_version
from claimcheck.calibration.picks import (
    KV_TERM,
    Pick,
    decode_intervals,
    earliest,
    median_prompt,
    one_stream_steps,
    one_wave,
    run_kernel,
    run_key,
    token_budget,
)
from claimcheck.calibration.rowterm import (
    beyond_rows,
    closed_loop_rows,
    line_rows,
    on_lines,
    row_sources,
)
from claimcheck.calibration.wavesources import (
    admission_sources,
    cold_sources,
    lag_sources,
    sequence_sources,
)
from claimcheck.config.configfiles import load_model_terms
from claimcheck.config.protocols import Terms
from claimcheck.files.errors import InputError
from claimcheck.model import model as m
from claimcheck.physics.cardfiles import get_card
from claimcheck.physics.formats import KERNEL_ARCH
from claimcheck.readings import definitions as d
from claimcheck.runs.run import Run, StepTrace
from claimcheck.runs.runchecks import NO_CARD


def _scope(runs: list[Run], card: str, engine: str, fmt: Any,
           usable: Any) -> tuple[list[tuple[Run, StepTrace]], str]:
    """Usable (run, step) pairs of the engine's runs on the card, else of its weight
    format's; and the words for where they came from."""
    on_card = [r for r in runs if run_key(r)[0] == card]
    own = [(r, s) for r in on_card if run_key(r)[1] == engine for s in r.traces if usable(s)]
    if own:
        n = len({r.name for r, _ in own})
        return own, f"engine {engine} on {card} ({n} run{'s' if n != 1 else ''})"
    same = [(r, s) for r in on_card if run_key(r)[2] == fmt for s in r.traces if usable(s)]
    n = len({r.name for r, _ in same})
    return same, (f"weight format {fmt} on {card} ({n} run{'s' if n != 1 else ''}; engine "
                  f"{engine} has none)")


def _is_decode(s: StepTrace) -> bool:
    return s.timeline.streams == 1 and decode_intervals(s) > 0 \
        and not s.held_prefill


def _best_decode(pairs: list[tuple[Run, StepTrace]], where: str,
                 what: str) -> Pick:
    r, s = min(pairs, key=lambda p: (-decode_intervals(p[1]), earliest(*p)))
    return Pick(r, s, f"{what}: the most decode intervals ({decode_intervals(s):,}, "
                f"{len(s.timeline.requests)} requests of {median_prompt(s):,.0f}-token "
                f"prompts) of {len(pairs)} one-stream decode step(s) of {where}")


COMPUTE_RANKS = ("held prefill within one token budget", "prompt within one token budget",
                 "longest prefill (split across steps)")
"""The compute step's ranks, best first (see the module doc)."""


def _compute_rank(r: Run, s: StepTrace) -> int:
    fits = median_prompt(s) <= token_budget(r)
    if fits and s.held_prefill:
        return 0
    return 1 if fits else 2


def _other_kernel(r: Run, kernel: str | None) -> bool:
    """Whether run ``r`` used another quantized linear kernel than ``kernel`` (the predicted
    engine's, :func:`~claimcheck.calibration.picks.run_kernel`; None: no kernel named, so
    no run is another's)."""
    return kernel is not None and run_kernel(r) != kernel


def _dense_stand_in(pool: list[Run], card: str, engine: str, kernel: str | None
                    ) -> list[Run]:
    """The runs of unquantized engines on ``card`` whose GEMMs run at the tensor rate of
    ``engine``'s compute dtype, when ``engine``'s quantized ``kernel`` was built for the
    card's architecture (:data:`~claimcheck.physics.formats.KERNEL_ARCH`) and no run of
    the pool used that kernel for a prefill: a native kernel's prefill dequantizes into the
    card's own tensor-core path (on the H200 Machete's held prefill reads 574 TFLOP/s, the
    BF16 engine's about 620; Marlin, built for Ampere, 333). [] otherwise."""
    if kernel is None or any(run_kernel(r) == kernel and any(
            median_prompt(s) >= m.LONG_PROMPT_TOKENS for s in one_stream_steps(r))
            for r in pool):
        return []
    try:
        c = get_card(card)
    except (InputError, KeyError, ValueError):
        return []
    if c.arch is None or c.arch not in KERNEL_ARCH.get(kernel, ()):
        return []
    own = next((r for r in pool if run_key(r)[1] == engine), None)
    if own is None:
        return []
    rate = c.tflops(own.engine[1]["compute_dtype"])
    return [r for r in pool if run_kernel(r) is None and run_key(r)[1] != engine
            and c.tflops(r.engine[1]["compute_dtype"]) == rate]


def _is_kv_source(r: Run, s: StepTrace, terms: Terms) -> bool:
    """A one-wave step of a KV-read source with a span in which every stream decodes."""
    return (one_wave(r, s, terms, KV_TERM) and decode_intervals(s) > 0
            and not s.held_prefill
            and bool(d.all_decoding_spans(s.timeline)))


def kv_sources(runs: list[Run], card: str, engine: str, terms: Terms | None = None
               ) -> tuple[Pick, ...]:
    """The KV-read term's source steps: one-wave steps of the engine's own runs on the card
    (the rate is its KV dtype's attention kernel at its context; no other engine's); where
    one run measured the same streams at three or more contexts, only those steps (the
    lines of :func:`claimcheck.calibration.calibration.kv_lines`), so the others are tests.
    ``terms``: model term -> its protocols (None: config/protocols.yaml read now,
    :func:`~claimcheck.config.configfiles.load_model_terms`), as for every source below."""
    terms = load_model_terms() if terms is None else terms
    pairs = [(r, s) for r in runs if run_key(r)[:2] == (card, engine) for s in r.traces
             if _is_kv_source(r, s, terms)]
    lined = on_lines(pairs)
    if lined:  # a run that measured the same streams at 3+ contexts: its lines alone
        pairs = lined
    why = (f"KV read: {len(pairs)} one-wave step(s) of engine {engine} on {card}, read while "
           "every stream decodes" + (", at three or more contexts per stream count of one "
                                     "run" if lined else ""))
    return tuple(Pick(r, s, why) for r, s in sorted(pairs, key=lambda p: earliest(*p)))


def borrowed_kv(runs: list[Run], card: str, engine: str, weight_format: Any,
                terms: Terms) -> tuple[Pick, ...]:
    """The KV-read term of another engine for one with none of its own: the KV lines
    (:func:`on_lines`) of the first engine (earliest run) of the same weight format and KV
    dtype on the card, else of another weight format with that KV dtype (the KV read is the
    attention kernel's, which the KV dtype picks; :func:`same_format_kv`), said as
    borrowed; () when the engine has no run to tell its KV dtype or none has lines."""
    on_card = [r for r in runs if run_key(r)[0] == card]
    own = [r for r in on_card if run_key(r)[1] == engine]
    if not own:
        return ()
    kv_dtype = own[0].engine[1].get("kv_dtype")
    cands = [r for r in on_card if run_key(r)[1] != engine
             and r.engine[1].get("kv_dtype") == kv_dtype and r.traces]
    for who in sorted({run_key(r)[1] for r in cands},
                      key=lambda e: (run_key(next(r for r in cands if run_key(r)[1] == e))[2]
                                     != weight_format,
                                     min(earliest(r, r.traces[0]) for r in cands
                                         if run_key(r)[1] == e))):
        lined = on_lines([(r, s) for r in cands if run_key(r)[1] == who for s in r.traces
                        if _is_kv_source(r, s, terms)])
        if lined:
            fmt = run_key(lined[0][0])[2]
            same = (f"same weight format {weight_format}, " if fmt == weight_format else
                    f"weight format {fmt}, not {weight_format}: the KV read is the attention "
                    "kernel's, which the KV dtype picks; ")
            why = (f"KV read: borrowed from engine {who} ({len(lined)} one-wave steps at "
                   f"three or more contexts per stream count of one run; {same}KV dtype "
                   f"{kv_dtype} and card {card}; engine {engine} has no KV-read steps)")
            return tuple(Pick(r, s, why) for r, s in sorted(lined, key=lambda p: earliest(*p)))
    return ()


def card_pool(runs: list[Run], card: str, layout: tuple[tuple[str, int], ...] | None,
              version: str | None = None) -> list[Run]:
    """The plain runs on ``card`` (a drafting engine's are never a plain term's source), of
    ``layout`` and vLLM ``version`` where given."""
    return [r for r in runs if run_key(r)[0] == card and not r.drafts
            and (layout is None or run_layout(r) == layout)
            and (version is None or run_version(r) == version)]


def carried_kv_card(runs: list[Run], card: str, engine: str,
                    layout: tuple[tuple[str, int], ...] | None, version: str | None,
                    terms: Terms | None = None) -> str | None:
    """The other card of ``card``'s architecture whose plain runs of ``engine`` (of
    ``layout`` and ``version`` where given: :func:`card_pool`) hold the most KV-read steps
    (:func:`kv_sources`), the first by name on a tie; None when the architecture is not on
    record or no such card has any. Its KV read is carried by
    :func:`~claimcheck.calibration.kvcarry.carried_kv`."""
    arch = card_arch(card)
    if arch is None:
        return None
    best: tuple[int, str] | None = None
    for other in sorted({str(run_key(r)[0]) for r in runs} - {card, NO_CARD}):
        if card_arch(other) != arch:
            continue
        n = len(kv_sources(card_pool(runs, other, layout, version), other, engine, terms))
        if n and (best is None or n > best[0]):
            best = (n, other)
    return best[1] if best else None


def same_format_kv(choice: Choice) -> bool:
    """Whether the KV term's lending engine on the card has ``choice``'s weight format
    (then its mixed-prefill factor, a GEMM's, is borrowed with it); never for a KV read
    carried from another card (:mod:`~claimcheck.calibration.kvcarry`), which takes none."""
    return (choice.kv_base is not None and choice.kv_base.card == choice.card
            and choice.kv_base.weight_format == choice.weight_format)


def _has_datasheet(card: str) -> bool:
    """Whether ``card`` has datasheet rates: every card a run names (checked against the
    cards it was read with, :func:`claimcheck.runs.run.load_run`) but a CPU engine's."""
    return card != NO_CARD


def choose(runs: list[Run], card: str, engine: str, weight_format: Any,
           *, explicit: bool = False, with_rows: bool = True,
           layout: tuple[tuple[str, int], ...] | None = None,
           version: str | None = None, terms: Terms | None = None,
           with_cold: bool = True, with_lag: bool = True) -> Choice:
    """The calibration of ``engine`` (``weight_format``) on ``card`` chosen among ``runs``
    by the module's rule. ``explicit``: ``runs`` were named by the user (``--calibrate-
    from``), so any engine and format among them counts. ``layout``
    (:func:`parallel_layout`): only runs of that parallel layout are borrowed; ``version``
    (:func:`run_version`): only runs of that vLLM release (each engine version is
    calibrated on its own runs); ``terms`` as for :func:`kv_sources`; ``with_cold``: the
    cold-start term too (off for the calibrations of its source steps); ``with_lag``: the
    output-lag term too (likewise). Raises InputError
    naming the card, engine and format when no one-stream decode step exists."""
    terms = load_model_terms() if terms is None else terms
    on_card = card_pool(runs, card, layout)
    pool = card_pool(runs, card, layout, version) if not explicit else runs
    if explicit:
        def scope(usable: Any) -> tuple[list[Any], str]:
            pairs = [(r, s) for r in pool for s in r.traces if usable(s)]
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
                         + ("" if version is None else f" with vLLM {version}")
                         + "); measure a one-stream decode step "
                         "or pass --calibrate-from a run with one")
    bw = _best_decode(dec, where, "bandwidth")
    short, swhere = scope(lambda s: _is_decode(s) and median_prompt(s) < m.LONG_PROMPT_TOKENS)
    if short:
        ov = _best_decode(short, swhere, "overhead (short prompts, so the prefill the model "
                          "subtracts is small)")
    else:
        ov = Pick(bw.run, bw.step, "overhead: the bandwidth step (no one-stream step with "
                  f"prompts under {m.LONG_PROMPT_TOKENS} tokens)")
    kernel = None if explicit else next(
        (run_kernel(r) for r in pool if run_key(r)[1] == engine and run_kernel(r)), None)
    dense = _dense_stand_in(pool, card, engine, kernel) if not explicit else []
    long = [(r, s) for r in (pool if explicit else
                             [r for r in pool if run_key(r)[2] == weight_format] + dense)
            for s in one_stream_steps(r) if median_prompt(s) >= m.LONG_PROMPT_TOKENS]
    cp, missing, scale = None, "", None
    if long:
        r, s = min(long, key=lambda p: (not explicit and _other_kernel(p[0], kernel),
                                        p[0] not in dense,
                                        _compute_rank(*p), not explicit and
                                        run_key(p[0])[1] != engine, -median_prompt(p[1]),
                                        -len(p[1].timeline.requests), earliest(*p)))
        rank = _compute_rank(r, s)
        cp = Pick(r, s, f"compute: {COMPUTE_RANKS[rank]} ({len(s.timeline.requests)} x "
                  f"{median_prompt(s):,.0f}-token prompts; rank {rank + 1} of "
                  f"{len(COMPUTE_RANKS)}: {'; '.join(COMPUTE_RANKS)}), of {len(long)} "
                  f"one-stream step(s) with prompts of {m.LONG_PROMPT_TOKENS:,}+ tokens "
                  + ("in the run(s) given" if explicit else
                     f"of weight format {weight_format} on {card}")
                  + ("" if explicit or run_key(r)[1] == engine else f" (engine {run_key(r)[1]})")
                  + ("" if explicit or kernel is None else
                     f"; {kernel} steps first, as the quantized GEMMs' rate is their kernel's"
                     + (f" (none on it: {kernel} is built for this card's architecture, so "
                        "an unquantized engine's GEMMs at the same tensor rate stand in, "
                        "before another kernel's)" if r in dense else
                        " (none on it: another kernel's)" if _other_kernel(r, kernel)
                        else "")))
    else:
        missing = (f"no one-stream step with prompts of {m.LONG_PROMPT_TOKENS:,}+ tokens "
                   + ("in the run(s) given" if explicit
                      else f"of weight format {weight_format} on {card}"))
        carried = None if explicit or not _has_datasheet(card) else carried_compute(
            runs, card, engine, version, _compute_rank)
        if carried is not None:
            cp, scale, missing = carried.pick, carried.scale, ""
        elif not _has_datasheet(card):  # e.g. cpu: the longest prefill there is, said
            short_pf = [(r, s) for r, s in dec if median_prompt(s) > 0]
            if short_pf:
                r, s = min(short_pf, key=lambda p: (-median_prompt(p[1]), earliest(*p)))
                cp = Pick(r, s, f"compute: {missing} and no datasheet rate for card {card}: "
                          f"the longest one-stream prefill there is ({median_prompt(s):,.0f}"
                          "-token prompts; short, so a lower bound of the card's compute)")
                missing = ""
    rows: tuple[Pick, ...] = ()
    rows_base = None
    admission: tuple[Pick, ...] = ()
    kv: tuple[Pick, ...] = ()
    rows_kind = ROWS_ONE_WAVE
    rows_beyond: tuple[Pick, ...] = ()
    kv_base = None
    sequence: tuple[Pick, ...] = ()
    cold: tuple[Pick, ...] = ()
    lag: tuple[Pick, ...] = ()
    if with_rows and not explicit:
        rows, who = row_sources(pool, card, engine, weight_format, terms)
        kv = kv_sources(pool, card, engine, terms)
        if who != engine and line_rows(kv, card, engine):  # its own lines before another's
            rows, who, rows_kind = line_rows(kv, card, engine), engine, ROWS_LINES
        if not rows and version is not None:  # its weight format's of another release
            rows, who = row_sources(on_card, card, engine, weight_format, terms)
        if not rows:  # its own closed loops, the last resort
            rows, who, rows_kind = closed_loop_rows(pool, card, engine), engine, ROWS_CLOSED_LOOP
        if not kv:
            kv = borrowed_kv(on_card, card, engine, weight_format, terms)
            if kv:
                _, who_kv, fmt_kv = run_key(kv[0].run)
                kv_base = choose(on_card, card, str(who_kv), fmt_kv, layout=layout,
                                 version=run_version(kv[0].run), terms=terms,
                                 with_cold=False, with_lag=False)
        there = None if kv else carried_kv_card(runs, card, engine, layout, version, terms)
        if there is not None:  # its own KV read on another card of the architecture
            kv_base = choose(runs, there, engine, weight_format, layout=layout,
                             version=version, terms=terms, with_cold=False, with_lag=False)
            kv = kv_base.kv
        if rows and who == engine and rows_kind != ROWS_CLOSED_LOOP:
            rows_beyond = beyond_rows(rows, closed_loop_rows(pool, card, engine))
        if rows and who != engine:
            rows_base = choose(on_card, card, str(who), weight_format, with_rows=False,
                               layout=layout, version=run_version(rows[0].run), terms=terms)
        admission = admission_sources(on_card, card, engine, terms)  # any version
        sequence = sequence_sources(admission, engine, weight_format)
        cold = cold_sources(on_card, card, engine) if with_cold else ()
        lag = lag_sources(pool, card, engine) if with_lag else ()  # its release only

    bases: dict[tuple[Any, ...], Choice] = {}

    def base(p: Pick) -> Choice | None:  # a source step's own engine's calibration
        _, who, fmt = run_key(p.run)
        if who == engine:
            return None
        key = (who, fmt, run_layout(p.run), run_version(p.run))
        if key not in bases:
            bases[key] = choose(on_card, card, str(who), fmt, layout=key[2],
                                version=key[3], terms=terms, with_cold=False, with_lag=False)
        return bases[key]
    cold_base = tuple(base(p) for p in cold)
    lag_base = tuple(base(p) for p in lag)
    return Choice(card=card, engine=engine, weight_format=weight_format, bandwidth=bw,
                  overhead=ov, compute=cp, compute_missing=missing,
                  compute_scale=scale, rows=rows,
                  rows_beyond=rows_beyond,
                  rows_base=rows_base, admission=admission, kv=kv, kv_base=kv_base,
                  rows_kind=rows_kind, sequence=sequence, cold=cold, cold_base=cold_base,
                  lag=lag, lag_base=lag_base)


def choose_for(target: Run, runs: list[Run], terms: Terms | None = None) -> Choice:
    """:func:`choose` for the target run's card, engine, format, parallel layout, release."""
    if target.drafts:
        raise InputError(str(target.path / "provenance.json"), "its engine drafts: no plain "
                         "term from it (its model: claimcheck.predict.specpredict)")
    card, engine, fmt = run_key(target)
    return choose(runs, card, engine, fmt, layout=run_layout(target),
                  version=run_version(target), terms=terms)
