"""A claim's own source-calibrated model (pure): which published figure sets eta for a
source, and how a claim compares with the model of its source.

A *source* is one publisher's one system on one card at one power limit with one weight
format (:func:`source_key`): a claim's publisher is its system's (a figure a seed relays from
a repository is that repository's, whichever seed relays it); a reproduction's or a
control's is the seed that ran it, one checkpoint on one stack. The source's model is the
article's roofline (:mod:`claimcheck.physics.roofline`, reached through
:func:`claimcheck.physics.inputs.roofline_for`) with

- eta (the fraction of the card's datasheet bandwidth the engine achieves) from the same
  source's one-stream, no-drafter figure (:func:`pick_calibration`: a decode figure first,
  then the shortest context, then one whose "no drafter" is stated, then registry order):
  ``eta = figure / plain roofline at that figure's own context`` (:func:`eta_from`), a
  memory-bound point, so the ratio is the bandwidth fraction;
- compute from a measured ceiling at the claim's power limit (``ceilings.csv``) else the
  card's datasheet dense rate, as :func:`claimcheck.physics.inputs.compute_ceiling` picks.

A source with no such figure has no model: its claims are set against the plain roofline
(eta = 1). Speeds are tok/s, aggregate = summed over the streams sharing it.

The model is a band, not a point (:func:`band`): its *ceiling* B tau / max(t_mem, t_comp)
is the step when memory traffic and arithmetic overlap perfectly, its *floor*
B tau / (t_mem + t_comp) the step when they do not overlap at all. A real engine bends
between the two (the article's own 3090 ladder bends earlier and more smoothly than the
max() corner), so a figure between them is in the bend region, only a figure under the
floor is short of the model and only one over the ceiling is above it
(:func:`band_side`). Where no compute ceiling was measured at the claim's power limit, the
band spans a compute range (:func:`compute_range`): from a ceiling measured on that card at
another limit to the datasheet rate, the floor at the lower end and the ceiling at the upper.

A seed's own reproduction of a claim (:func:`reproductions_of`) is matched on the same
system, card, streams, workload (the prompt set and the prompt and output tokens the seeds
state) and metric definition, and
never across a stated weight format or drafter; :func:`differences` says what differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NO_DRAFTER = ("none", "")
"""``spec_method`` values that mean no drafter: stated "none", or not stated at all."""

PHASE_PREFERENCE = {"decode": 0, "unspecified": 1, "end_to_end": 2}
"""Which metric phases may calibrate, in order of preference (prefill never does)."""


def source_key(row: Mapping[str, Any], weight_format: str | None) -> tuple[str, ...]:
    """The source a registry row belongs to: (publisher, system, mode, checkpoint, card,
    power limit in W, weight format). A source is a system, a mode and a checkpoint: a
    figure is never calibrated on another mode's or another checkpoint's (an unstated one
    is its own value). A claim's publisher is its system's, and the system is the
    registry's ``system``; a reproduction's or control's publisher is the seed that ran
    it, and its system is the checkpoint it served when the seed names one (one stack on
    one card: the seed's own runs of one checkpoint under different benchmark scripts),
    else ``system``. ``weight_format`` is the registry's quantization as written (W4A8 and
    W4A16 are two checkpoints, whatever their byte counts share)."""
    own_run = row.get("kind") != "claim"
    publisher = f"seed {row.get('seed')} {row.get('kind')}" if own_run else ""
    system = (own_run and row.get("checkpoint")) or row.get("system") or ""
    power = row.get("power_limit_w")
    return (publisher, str(system), str(row.get("mode") or ""), str(row.get("checkpoint") or ""),
            str(row.get("card") or ""), "" if power in (None, "") else f"{float(power):g}",
            weight_format or "")


@dataclass(frozen=True)
class Figure:
    """One registry figure as calibration sees it. ``plain_tok_s`` is the plain roofline
    (eta 1, tau 1) at the figure's own card, weights, streams and context, aggregate tok/s;
    ``plain_bound`` its binding term there; ``drafter`` the registry's ``spec_method``."""

    id: str
    run: str
    order: int
    streams_sharing: float
    phase: str
    context_tokens: float
    drafter: str
    aggregate_tok_s: float
    plain_tok_s: float | None
    plain_bound: str
    bound: str = ""
    workload: tuple[Any, ...] = ()
    """What makes two runs one workload: (metric, streams, prompt, output, context)."""


def calibration_set(figures: Sequence[Figure], context_tokens: float | None = None
                    ) -> list[Figure]:
    """Every candidate that ties with :func:`pick_calibration`'s figure on context and
    phase: the source's one-stream figures eta is the median of (issue 28 item 8), in
    registry order; empty when none qualifies."""
    best = pick_calibration(figures, context_tokens)
    if best is None:
        return []
    tie = _calibration_order(best, context_tokens)[:2]
    return [f for f in figures if is_calibration_candidate(f)
            and _calibration_order(f, context_tokens)[:2] == tie]


def shown_spread(figures: Sequence[Figure]) -> tuple[float, str]:
    """The widest spread a source shows between its own runs of one workload (the same
    :attr:`Figure.workload`, two runs or more, exact decode-rate figures with no drafter: a
    drafter's acceptance moves with the prompts' content, which the registry does not hold,
    and a prefill range with the prompts' length): (high /
    low - 1, words naming it); (0, "") when no workload was run twice."""
    groups: dict[tuple[Any, ...], list[Figure]] = {}
    for f in figures:
        if f.workload and not f.bound and (f.drafter or "").lower() in NO_DRAFTER \
                and f.phase in PHASE_PREFERENCE:  # decode rates only: a prefill range is
            #                                       the prompts', not the runs' spread
            groups.setdefault(f.workload, []).append(f)
    best: tuple[float, str] = (0.0, "")
    for wl, fs in groups.items():
        if len({f.run for f in fs}) < 2:
            continue
        lo, hi = min(fs, key=lambda f: f.aggregate_tok_s), max(fs, key=lambda f: f.aggregate_tok_s)
        spread = hi.aggregate_tok_s / lo.aggregate_tok_s - 1.0
        if spread > best[0]:
            best = (spread, f"{spread:.1%}, the spread its source shows between {len(fs)} runs "
                    f"of one workload ({wl[0]} at {wl[1]:g} stream{'' if wl[1] == 1 else 's'}: "
                    f"{lo.aggregate_tok_s:,.1f} "
                    f"({lo.id}) to {hi.aggregate_tok_s:,.1f} tok/s ({hi.id}))")
    return best


def is_calibration_candidate(f: Figure) -> bool:
    """One stream, no drafter (stated or not), an exact figure (no bound), a decode or
    end-to-end or unspecified rate, a memory-bound plain roofline, and at or below it (a
    figure above the no-drafter line cannot be a no-drafter figure)."""
    return (f.streams_sharing == 1 and (f.drafter or "").lower() in NO_DRAFTER
            and not f.bound and f.phase in PHASE_PREFERENCE and bool(f.plain_tok_s)
            and f.plain_bound == "memory" and f.aggregate_tok_s <= f.plain_tok_s)  # type: ignore[operator]


def pick_calibration(figures: Sequence[Figure], context_tokens: float | None = None
                     ) -> Figure | None:
    """The calibration figure for a claim at ``context_tokens`` (tokens per stream; None
    or 0 when not stated) among ``figures`` (all of one source): context first (the
    nearest to the claim's, so the shortest for a claim that states none), then a decode
    figure, then a stated "no drafter", then registry order; None when no figure
    qualifies (:func:`is_calibration_candidate`)."""
    ok = [f for f in figures if is_calibration_candidate(f)]
    if not ok:
        return None
    return min(ok, key=lambda f: _calibration_order(f, context_tokens))


def _calibration_order(f: Figure, context_tokens: float | None) -> tuple[Any, ...]:
    return (abs((f.context_tokens or 0.0) - (context_tokens or 0.0)),
            PHASE_PREFERENCE[f.phase], f.drafter.lower() != "none", f.order)


def eta_from(figure_tok_s: float, plain_tok_s: float) -> float:
    """Effective bandwidth fraction from a one-stream, memory-bound figure: figure / plain
    roofline at that figure's context (both tok/s). Refused outside (0, 1]."""
    if not (plain_tok_s > 0 and 0 < figure_tok_s <= plain_tok_s):
        raise ValueError(f"eta needs 0 < figure ({figure_tok_s!r} tok/s) <= plain roofline "
                         f"({plain_tok_s!r} tok/s)")
    return figure_tok_s / plain_tok_s


@dataclass(frozen=True)
class SourceModel:
    """The model of a claim's own source at the claim's streams and context."""

    tok_s: float | None
    """Aggregate tok/s the source-calibrated model predicts; None when the source has none."""
    eta: float = 1.0
    binding_term: str = ""
    """"memory" or "compute": the larger term of the model's step at the claim's streams."""
    bend_streams: float | None = None
    """Streams where the model's memory and compute terms meet (inf: never)."""
    calibrated_on: tuple[str, ...] = ()
    calibration: str = ""
    """Plain words: which published figure set eta, and where compute came from."""
    is_calibration: bool = False
    """True when the claim is the figure that sets eta (so the model cannot test it)."""
    floor_tok_s: float | None = None
    """The no-overlap floor B tau / (t_mem + t_comp), aggregate tok/s, at the lower end of
    the compute range; None when not worked out (then the ceiling is the whole band)."""
    ceiling_low_tok_s: float | None = None
    """The overlap ceiling at the lower end of the compute range (equal to ``tok_s`` when
    compute was measured at the claim's power limit)."""
    binding_term_low: str = ""
    """The ceiling's binding term at the lower end of the compute range."""
    compute_range: str = ""
    """Plain words for the compute used: one measured rate, or the range and its ends."""
    memory_wall_streams: float | None = None
    """The most streams whose state and KV fit beside the weights on the card (None: not
    worked out); a bend past it is never reached (:func:`binding_text`)."""
    calibration_phase: str = ""
    """The metric phase of the figure(s) that set eta ("decode", "end_to_end",
    "unspecified"): a model calibrated on a decode figure is a decode-only model."""


def calibrated_model(hi: Mapping[str, Any], lo: Mapping[str, Any], eta: float,
                     streams: float, cset: Sequence[Figure], calibration: str,
                     is_calibration: bool, compute_range: str) -> SourceModel:
    """The source model at ``eta`` set on ``cset``: its ceiling from ``hi`` and its floor
    (:func:`band`) from ``lo``, the claim's roofline dicts at the top and bottom of its
    compute range (:func:`claimcheck.claims.claim_roofline.claim_roofline`)."""
    _, floor = band(streams, lo["roofline_memory_ms"] / 1e3, lo["roofline_compute_ms"] / 1e3)
    return SourceModel(
        tok_s=hi["roofline_tok_s"], eta=eta, binding_term=hi["roofline_bound"],
        bend_streams=hi["roofline_bend_streams"],
        memory_wall_streams=hi.get("roofline_memory_wall_streams"),
        calibrated_on=tuple(f.id for f in cset), calibration=calibration,
        is_calibration=is_calibration, floor_tok_s=floor, ceiling_low_tok_s=lo["roofline_tok_s"],
        binding_term_low=lo["roofline_bound"], compute_range=compute_range,
        calibration_phase=cset[0].phase)


def e2e_over_decode(e2e_tok_s: float, decode_tok_s: float) -> float:
    """End to end / decode for one run (both aggregate tok/s): the factor that carries a
    decode-only model over to an end-to-end figure. Refused outside (0, 1.05]: end to end
    counts the decode window and more, so it cannot read well above decode."""
    if not (e2e_tok_s > 0 and decode_tok_s > 0 and e2e_tok_s / decode_tok_s <= 1.05):
        raise ValueError(f"end to end / decode needs 0 < e2e ({e2e_tok_s!r} tok/s) <= "
                         f"decode ({decode_tok_s!r} tok/s) within 5%")
    return e2e_tok_s / decode_tok_s


def within(ratio: float, tolerance: float) -> bool:
    """True when ``ratio`` is within ``tolerance`` of 1, judged on the percentage as printed
    (one decimal), so a figure on the edge never reads "+5.0% ... beyond 5%"."""
    return float(f"{abs(ratio - 1.0) * 100:.1f}") <= float(f"{tolerance * 100:.1f}")


def pct(ratio: float) -> str:
    """``ratio`` - 1 as a signed percentage with one decimal ("+4.7%")."""
    return f"{ratio - 1.0:+.1%}"


def compare(value: float, line: float, tolerance: float, bound: str = "") -> str:
    """"consistent", "above" or "below": ``value`` (tok/s) against a model ``line``.

    An exact figure is consistent within ``tolerance``. A bound is compared as a bound:
    "at_least" X (the true figure is X or more) is above only when X itself is beyond
    tolerance above the line, else the line satisfies it; "at_most" X is below only when X
    is beyond tolerance under the line."""
    r = value / line
    if within(r, tolerance):
        return "consistent"
    if bound == "at_least":
        return "above" if r > 1 else "consistent"
    if bound == "at_most":
        return "below" if r < 1 else "consistent"
    return "above" if r > 1 else "below"


def binding_text(term: str, bend: float | None, wall: float | None = None) -> str:
    """Plain words for the binding term: memory below the bend, compute past it. A bend
    past the card's memory wall (``wall``: the most streams that fit) is printed as one
    never reached, not as a stream count the card could run."""
    if term == "compute":
        return (f"compute-bound: past the bend at {bend:.1f} streams" if bend is not None
                else "compute-bound")
    if bend is None or bend == float("inf"):
        return "memory-bound (no bend)"
    if wall is not None and bend > wall:
        return (f"memory-bound: the bend at {bend:.1f} streams lies past the card's memory "
                f"wall at {wall:g} streams (state and KV at this context beside the "
                "weights), so it is never reached")
    return f"memory-bound: below the bend at {bend:.1f} streams"


def band(streams: float, memory_s: float, compute_s: float, tau: float = 1.0
         ) -> tuple[float, float]:
    """(ceiling, floor) in aggregate tok/s at ``streams`` from the step's two terms (s):
    the overlap ceiling B tau / max(t_mem, t_comp) and the no-overlap floor
    B tau / (t_mem + t_comp)."""
    if not (memory_s > 0 and compute_s >= 0 and streams > 0):
        raise ValueError(f"band needs t_mem > 0, t_comp >= 0 and streams > 0, got "
                         f"{memory_s!r}, {compute_s!r}, {streams!r}")
    return streams * tau / max(memory_s, compute_s), streams * tau / (memory_s + compute_s)


def band_side(value: float, ceiling: float, floor: float, tolerance: float,
              bound: str = "") -> str:
    """"above", "inside" or "below": ``value`` (tok/s) against a band. Above only when
    beyond ``tolerance`` over the ceiling, below only when beyond it under the floor (each
    as :func:`compare` judges it, bounds as bounds); anything else is inside."""
    if compare(value, ceiling, tolerance, bound) == "above":
        return "above"
    if compare(value, floor, tolerance, bound) == "below":
        return "below"
    return "inside"


def compute_range(card: str, dtype: str, power_limit_w: float | None,
                  ceilings: Sequence[Any], datasheet_tflops: float, datasheet_source: str
                  ) -> list[tuple[float, str]]:
    """The compute rates (TFLOP/s, where each comes from) a claim's band spans, lowest
    first. One rate when a ceiling was measured on ``card`` for ``dtype`` at the claim's
    power limit (or at any limit: a ceiling row without one); else every ceiling measured
    on that card for that dtype at another limit, and the datasheet rate, lowest to
    highest (just the datasheet when none was measured). ``ceilings`` hold ``card``,
    ``dtype``, ``power_limit_w``, ``tflops``, ``id`` and ``source``."""
    mine = [c for c in ceilings if c.card == card and c.dtype == dtype]
    exact = [c for c in mine if c.power_limit_w is None or c.power_limit_w == power_limit_w]
    if exact:
        c = sorted(exact, key=lambda c: (c.power_limit_w is None, c.id))[0]
        return [(c.tflops, f"ceiling {c.id} ({c.dtype}, {c.source})")]
    other = [(c.tflops, f"ceiling {c.id} measured at {c.power_limit_w:g} W ({c.dtype}, "
              f"{c.source})") for c in mine]
    rates = sorted(other + [(datasheet_tflops, datasheet_source)], key=lambda x: x[0])
    return [rates[0], rates[-1]] if len(rates) > 1 else rates


def mlp_flop_fraction(config: Mapping[str, Any]) -> float:
    """The MLP GEMMs' share of the FLOPs per generated token (2 per weight touched) from a
    config.json dict: layers x the MLP's active linear weights over every linear weight
    read per token (:func:`claimcheck.physics.geometry.geometry`, the output head included)."""
    from claimcheck.physics.geometry import _mlp_params, geometry
    geom = geometry(dict(config))
    text = config.get("text_config") or config
    mlp = (geom.num_full_attention_layers + geom.num_linear_attention_layers) * _mlp_params(
        text, geom.hidden_size, "text_config." if config.get("text_config") else "")[1]
    return mlp / geom.weights_per_token


def split_compute_tflops(int8_fraction: float, fp16_tflops: float, int8_tops: float
                         ) -> float:
    """The one rate (TFLOP/s) that gives the step's arithmetic time when a fraction
    ``int8_fraction`` of its FLOPs runs at ``int8_tops`` (TOP/s) and the rest at
    ``fp16_tflops``: F / (f F / P_int8 + (1 - f) F / P_fp16)."""
    if not (0 <= int8_fraction <= 1 and fp16_tflops > 0 and int8_tops > 0):
        raise ValueError(f"split compute needs 0 <= f <= 1 and rates > 0, got "
                         f"{int8_fraction!r}, {fp16_tflops!r}, {int8_tops!r}")
    return 1.0 / (int8_fraction / int8_tops + (1.0 - int8_fraction) / fp16_tflops)


def int8_rates(rates: Sequence[tuple[float, str]], int8_layers: str, int8_fraction: float,
               int8_tops: float, datasheet_tflops: float
               ) -> list[tuple[float, str]]:
    """A compute range (TFLOP/s, where from; lowest first, fp16 rates) carried over to
    int8 activations: ``all`` runs every FLOP at the int8 rate, ``mlp`` the MLP GEMMs'
    ``int8_fraction`` of them (:func:`split_compute_tflops`). The card's int8 datasheet
    rate is scaled at each end as that end's fp16 rate is to the fp16 datasheet rate (a
    ceiling measured at a lower power limit slows both alike); no int8 ceiling was
    measured. Empty ``int8_layers``: the rates unchanged."""
    if not int8_layers:
        return list(rates)
    out = []
    for tf, src in rates:
        p8 = int8_tops * tf / datasheet_tflops
        p8_txt = (f"int8 {p8:g} TOP/s (the datasheet's {int8_tops:g} x {tf:g} / "
                  f"{datasheet_tflops:g})" if tf != datasheet_tflops
                  else f"int8 {int8_tops:g} TOP/s (datasheet dense)")
        if int8_layers == "all":
            out.append((p8, f"every layer at {p8_txt}"))
        else:
            eff = split_compute_tflops(int8_fraction, tf, p8)
            out.append((eff, f"effective: the MLP GEMMs ({int8_fraction:.1%} of the FLOPs, "
                        f"config.json) at {p8_txt}, the rest at {tf:g} TFLOP/s ({src})"))
    return out


REPRODUCTION_WORKLOAD = ("system", "mode", "card")
"""Registry columns a seed's reproduction must share with the claim (the same system in the
same mode, on the same card; unstated on both sides counts as the same)."""

REPRODUCTION_STATED = ("prompt_set", "prompt_tokens", "output_tokens")
"""Workload columns compared on what the seeds state only: the same prompt set and the same
prompt and output tokens per request, unstated on both sides counting as the same. A token
count the registry supplies (a ``max_tokens`` cap, a mean answer length) neither makes nor
breaks a match: a cap of 512 is not a run of 512-token answers."""

NO_CONFLICT = ("quantization", "spec_method")
"""Columns that must not conflict where the seed states both: a reproduction of another
weight format or another drafter setting is another configuration."""

DIFFERS = (("power_limit_w", "power limit", "{:g} W"), ("engine_version", "engine", "{}"),
           ("checkpoint", "checkpoint", "{}"), ("quantization", "weights", "{}"),
           ("spec_method", "drafter", "{}"), ("context_tokens", "context", "{:,.0f} tokens"))
"""What :func:`differences` compares between a claim and its reproduction (column, words,
format)."""


def _same(a: Any, b: Any) -> bool:
    empty = (None, "")
    if a in empty or b in empty:
        return a in empty and b in empty
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def reproductions_of(claim: Mapping[str, Any], claim_stated: Mapping[str, Any],
                     rows: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
                     ) -> list[Mapping[str, Any]]:
    """The registry rows that are a seed's reproduction of ``claim``'s workload and metric
    definition: kind "reproduction", the same :data:`REPRODUCTION_WORKLOAD` columns, the
    same stated :data:`REPRODUCTION_STATED` columns and streams sharing the figure, the
    same metric (or either side's unstated, "unspecified"), and no stated
    :data:`NO_CONFLICT` column in conflict. ``rows`` are (row, stated) pairs; a claim that
    is itself a reproduction or control has none."""
    if claim.get("kind") != "claim":
        return []
    out = []
    for row, stated in rows:
        if row.get("kind") != "reproduction":
            continue
        if not all(_same(claim.get(k), row.get(k)) for k in REPRODUCTION_WORKLOAD):
            continue
        if not all(_same(claim_stated.get(k), stated.get(k)) for k in REPRODUCTION_STATED):
            continue
        if not _same(claim.get("streams_running") or claim.get("streams"),
                     row.get("streams_running") or row.get("streams")):
            continue
        metrics = {claim.get("metric"), row.get("metric")}
        if len(metrics) > 1 and "unspecified" not in metrics:
            continue
        if any(claim_stated.get(k) not in (None, "") and stated.get(k) not in (None, "")
               and not _same(claim_stated.get(k), stated.get(k)) for k in NO_CONFLICT):
            continue
        out.append(row)
    return out


def differences(claim: Mapping[str, Any], claim_stated: Mapping[str, Any],
                repro: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[str]:
    """Plain words for what differs between a claim and its reproduction rows ((row,
    stated) pairs): each :data:`DIFFERS` column whose values differ ("power limit 250 W
    against 390 W"; a value the registry assumed is marked so, one not stated says so),
    and the metric when one side's is not stated."""
    def show(stated: Mapping[str, Any], row: Mapping[str, Any], col: str, fmt: str) -> str:
        v = row.get(col)
        if v in (None, ""):
            return "not stated"
        text = fmt.format(v)
        return text if stated.get(col) not in (None, "") else f"{text} (assumed)"

    out = []
    for col, words, fmt in DIFFERS:
        if all(_same(claim.get(col), r.get(col)) for r, _ in repro):
            continue
        theirs = sorted({show(st, r, col, fmt) for r, st in repro})
        out.append(f"{words} {show(claim_stated, claim, col, fmt)} against {', '.join(theirs)}")
    metrics = sorted({str(r.get("metric")) for r, _ in repro})
    if metrics != [str(claim.get("metric"))]:
        out.append(f"metric {claim.get('metric')} against {', '.join(metrics)}")
    return out
