"""A verdict for every registry claim, assembled (pure): each claim's plain roofline
(:func:`claimcheck.claims.claim_roofline.claim_roofline`), its source's model
(:mod:`claimcheck.verdicts.sourcemodel`), the measured evidence beside it
(:mod:`claimcheck.verdicts.verdict_evidence`) and a seed's own reproduction, judged by the rules
of :mod:`claimcheck.verdicts.verdict_rules`, with each claim's label audit
(:mod:`claimcheck.claims.labels`). Registries and step rows come in loaded; one row per claim comes
out (tok/s, ms).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from claimcheck.claims import labels as lb
from claimcheck.claims.claim_roofline import claim_roofline
from claimcheck.claims.claims import Claim
from claimcheck.claims.claimtext import bound_words
from claimcheck.claims.metrics import METRICS
from claimcheck.config.protocols import Protocol
from claimcheck.physics.cards import Card, Ceiling
from claimcheck.physics.engine_inputs import model_dtype
from claimcheck.physics.geometry import Geometry
from claimcheck.physics.inputs import WeightRow, compute_ceiling
from claimcheck.verdicts import sourcemodel as sm
from claimcheck.verdicts import verdict_carried as vc
from claimcheck.verdicts import verdict_drafting as vd
from claimcheck.verdicts import verdict_evidence as ev
from claimcheck.verdicts import verdict_rules as vr
from claimcheck.verdicts import verdict_words as vw
from claimcheck.verdicts import verdicts as v


@dataclass(frozen=True)
class Sheet:
    """What every claim's verdict reads, loaded once: the cards, the measured ceilings, the
    weights registry, the model's geometry, its conv-state dtype and the share of its FLOPs
    in the MLPs, and the claims by id."""

    cards: Mapping[str, Card]
    ceilings: Mapping[str, Ceiling]
    weight_rows: Mapping[str, WeightRow]
    geom: Geometry
    conv: Any
    mlp_share: float
    by_id: Mapping[str, Claim]


def roof(sh: Sheet, c: Any, eta: float = 1.0, tflops: float | None = None) -> dict[str, Any]:
    """The claim's roofline at the streams sharing it, at ``eta`` and ``tflops``."""
    shared = replace(c, row={**c.row, "streams": c.streams_sharing})
    return claim_roofline(shared, sh.geom, dict(sh.cards), dict(sh.ceilings), eta=eta,
                          weight_rows=dict(sh.weight_rows), tflops=tflops,
                          conv_state_dtype=sh.conv)


def int8_of(sh: Sheet, c: Any, rates: list[tuple[float, str]], dtype: str
            ) -> list[tuple[float, str]]:
    """The claim's compute rates with its int8 layers at the card's int8 rate."""
    card = sh.cards[c["card"]]
    if not c["int8_layers"] or "int8" not in card.tensor_tflops:
        return rates
    return sm.int8_rates(rates, c["int8_layers"], sh.mlp_share, card.tflops("int8"),
                         card.tflops(dtype))


def plain_of(sh: Sheet, c: Any) -> dict[str, Any]:
    """The plain roofline (eta 1) at the claim's card's own compute for its power limit,
    its int8 layers at the int8 rate."""
    p = roof(sh, c)
    if p["roofline_tok_s"] and c["int8_layers"] and c["card"] in sh.cards:
        (tf, src), = int8_of(sh, c, [(p["roofline_tflops"], p["roofline_compute"])],
                             p["roofline_compute_dtype"])
        p = {**roof(sh, c, 1.0, tf), "roofline_compute": src}
    return p


def one_eta(sh: Sheet, f: sm.Figure) -> str:
    """"X's 43.6 tok/s (unspecified, 1 stream, context not stated) / its plain roofline
    58.0 tok/s"."""
    c = sh.by_id[f.id]
    ctx = (f"{f.context_tokens:,.0f} tokens of context" if c["context_tokens"]
           else "context not stated")
    return (f"{f.id}'s {f.aggregate_tok_s:,.1f} tok/s ({METRICS[c['metric']].label}"
            f", 1 stream, {ctx}) / its plain roofline {f.plain_tok_s:,.1f} tok/s")


def rates_of(sh: Sheet, c: Any, p: dict[str, Any]) -> list[tuple[float, str]]:
    """The compute rates the claim's band spans (one when measured at its power): the
    source's own measured rate (ceilings.csv) and the 16-bit datasheet rate; a stated int8
    path is said, never priced at the datasheet's int8 rate (issue 42: HyperQwen's measured
    ~63 TFLOP/s at 250 W was taken with its int8 MLPs)."""
    card = sh.cards[c["card"]]
    ds_tf, ds_src = compute_ceiling(card, p["roofline_compute_dtype"], {})
    rates = sm.compute_range(c["card"], p["roofline_compute_dtype"], c["power_limit_w"],
                             list(sh.ceilings.values()), ds_tf, ds_src)
    if c["int8_layers"]:
        rates = [(tf, f"{src}; int8 activations on {c['int8_layers']} stated, but no "
                  "int8 rate was measured on this card, so the 16-bit rate stands")
                 for tf, src in rates]
    return rates


def source_model(sh: Sheet, c: Claim, p: dict[str, Any], mine: list[sm.Figure],
                 tol_words: str) -> sm.SourceModel | None:
    """The claim's source model: its plain roofline at the eta of its source's one-stream,
    no-drafter figures (the claim's own left out where its source has others), over the
    compute rates of :func:`rates_of`; the plain roofline (eta 1) where the source has no
    such figure; None without a roofline."""
    ctx = c["context_tokens"] or 0.0
    cset = sm.calibration_set(mine, ctx)
    own = any(f.id == c["id"] for f in cset)
    if own:  # the claim helps set eta: calibrate on its source's other runs if any
        alt = sm.calibration_set([f for f in mine if f.run != c["run"]], ctx)
        cset = alt or cset
        own = not alt
    cal = cset[0] if cset else None
    rates = rates_of(sh, c, p) if p["roofline_tok_s"] else []
    compute = ("compute " + " to ".join(f"{tf:.4g} TFLOP/s ({src})" for tf, src in rates)
               if rates else "")
    if cal is not None and p["roofline_tok_s"]:
        etas = [sm.eta_from(f.aggregate_tok_s, f.plain_tok_s)  # type: ignore[arg-type]
                for f in cset]
        eta = statistics.median(etas)
        how = (f"eta {eta:.3f} = {one_eta(sh, cal)}" if len(cset) == 1 else
               f"eta {eta:.3f}, the median over {len(cset)} one-stream figures of its "
               "source (" + "; ".join(f"{e:.3f} = {one_eta(sh, f)}" for e, f in
                                     zip(etas, cset, strict=True)) + ")")
        return sm.calibrated_model(
            roof(sh, c, eta, rates[-1][0]), roof(sh, c, eta, rates[0][0]), eta,
            c.streams_sharing, cset, f"{how}; {compute}{tol_words}", own,
            compute if len(rates) > 1 else "")
    if p["roofline_tok_s"]:
        return sm.SourceModel(
            tok_s=None, bend_streams=p.get("roofline_bend_streams"),
            calibration=("no one-stream, no-drafter figure from this source: plain "
                         f"roofline (eta = 1); {compute}{tol_words}"),
            compute_range=compute if len(rates) > 1 else "")
    return None


def label_columns(c: Claim) -> dict[str, Any]:
    """The claim's label audit (:mod:`claimcheck.claims.labels`): each field's status and
    the fields given, supplied and missing."""
    given_row = {k: c.stated.get(k) for k in c.row}
    metric = {"scope": METRICS[c["metric"]].scope, "phase": METRICS[c["metric"]].phase,
              "definition": METRICS[c["metric"]].definition}
    given = {k for k, s in lb.audit(given_row, metric).items() if s == lb.SUPPLIED}
    status = lb.audit(c.row, metric, given)
    groups = lb.summary(status)
    return {**{f"label_{k}": s for k, s in status.items()},
            "labels_given": ",".join(groups[lb.GIVEN]),
            "labels_supplied": ",".join(groups[lb.SUPPLIED]),
            "labels_missing": ",".join(groups[lb.MISSING])}


def with_seed_aggregate(c: Claim, t: dict[str, Any], claims: list[Claim]) -> dict[str, Any]:
    """The claim's tidy row with the seed's own aggregate for the same run where the seed
    gives one (a per-request figure summed over the streams in flight would differ)."""
    seed_agg = seed_aggregate(c, claims)
    if seed_agg is None:
        return t
    derived = c.aggregate_tok_s
    # the roofline's tau scales with the aggregate: no second roofline is needed
    return {**t, "aggregate_tok_s": seed_agg.aggregate_tok_s,
            "per_stream_tok_s": c["value"],
            "aggregate_note": (
                f"The per-request figure ({c['value']:g} tok/s, window not stated) "
                f"summed over the {c.streams_sharing:g} in flight would read "
                f"{derived:,.1f} tok/s against the seed's own {seed_agg['value']:,.1f} "
                f"for the same run ({seed_agg['id']}); the seed's figure is used.")}


def verdict_rows(claims: list[Claim], cards: dict[str, Card], ceilings: dict[str, Ceiling],
                 weight_rows: dict[str, WeightRow], geom: Geometry, config: Mapping[str, Any],
                 protocols: Mapping[str, Protocol], step_rows: list[dict[str, Any]],
                 tolerance: float | None = None,
                 carried: Mapping[str, vc.Carried] | None = None) -> list[dict[str, Any]]:
    """One verdict (:mod:`claimcheck.verdicts.verdicts`) and one label audit
    (:mod:`claimcheck.claims.labels`) per registry claim, from the loaded registries, the model
    (``geom`` and its ``config``, config.json) and the run records' step rows.

    The plain roofline is the claim's own at the streams sharing it (``streams_running``
    when given). The source model is the same roofline at eta from the claim's own source's
    one-stream, no-drafter figure (:mod:`claimcheck.verdicts.sourcemodel`). Definition ratios
    come from the measured steps of the run records, held-prefill steps left out
    (:func:`claimcheck.verdicts.verdict_evidence.comparable_steps`). Every protocol naming the
    claim in ``source_claims`` is set beside it: on the claim's own card as a reproduction
    (the verdict), on another card as context only (``replay_context``: each run's fraction
    of its own plain roofline). A drafting figure's tokens kept needed are at its verify
    rows per stream (:func:`drafting_of`). The tolerance is at least the spread its source
    shows between its own runs of one workload, the figure itself left out: a figure is
    never passed by its own distance from its twin. With ``carried`` (id -> the carried
    model at the claim's own configuration, :mod:`claimcheck.verdicts.verdict_carried`) each
    verdict then reads against it first, the source-calibrated kind kept beside it as
    ``source_verdict``. The source model's compute is the source's own measured rate where
    ceilings.csv holds one, else the datasheet's 16-bit rates: int8 layers are never put at
    a datasheet int8 rate no one measured (:func:`rates_of`)."""
    tol = v.TOLERANCE if tolerance is None else tolerance
    steps = ev.comparable_steps(step_rows)
    conv = model_dtype(config)  # the conv state's dtype, as for a measured step
    sh = Sheet(cards, ceilings, weight_rows, geom, conv, sm.mlp_flop_fraction(config),
               {c["id"]: c for c in claims})
    protos_of: dict[str, list[str]] = {}
    for name, p in protocols.items():
        for cid in p.source_claims:
            protos_of.setdefault(cid, []).append(name)

    plain = {c["id"]: plain_of(sh, c) for c in claims}
    key = {c["id"]: sm.source_key(c.row, (c["quantization"] or "").lower()) for c in claims}
    figures: dict[tuple[str, ...], list[sm.Figure]] = {}
    for i, c in enumerate(claims):
        p = plain[c["id"]]
        figures.setdefault(key[c["id"]], []).append(sm.Figure(
            id=c["id"], run=c["run"], order=i, streams_sharing=c.streams_sharing,
            phase=METRICS[c["metric"]].phase, context_tokens=c["context_tokens"] or 0.0,
            drafter=str(c["spec_method"] or ""), aggregate_tok_s=c.aggregate_tok_s,
            plain_tok_s=p["roofline_tok_s"], plain_bound=p.get("roofline_bound", ""),
            bound=c.row.get("bound") or "",
            workload=(c["metric"], c.streams_sharing, c["prompt_tokens"], c["output_tokens"],
                      c["context_tokens"])))
    # the spread between a seed's own runs of one setup (reproductions, controls): a
    # publisher's two cells of one shape may differ in settings the registry does not hold
    # (HyperQwen's raw 8K cell "with int8 prefill"); never the figure's own distance from
    # its twin (issue 44: a figure passed by a tolerance equal to its own twin's spread)
    spread = {c["id"]: sm.shown_spread([f for f in figures[key[c["id"]]]
                                        if sh.by_id[f.id]["kind"] != "claim" and f.id != c["id"]])
              for c in claims}
    documented = vd.documented_rows(c.row for c in claims)

    rows = []
    calls: dict[str, vr.Evidence] = {}
    for c in claims:
        before, after = bound_words(c.row.get("bound") or "", c["quote"], c["value"])
        t = {**c.tidy(), "bound_before": before, "bound_after": after}
        p = plain[c["id"]]
        ceil = v.Ceiling(p["roofline_tok_s"], p.get("roofline_bound", ""), p["roofline_note"])
        c_tol = max(tol, spread[c["id"]][0])
        tol_words = f"; tolerance {spread[c['id']][1]}" if c_tol > tol else ""
        source = source_model(sh, c, p, figures[key[c["id"]]], tol_words)
        seed_rep = seed_reproduction(c, claims)
        t = with_seed_aggregate(c, t, claims)
        col = ev.METRIC_COLUMN.get(c["metric"])
        infl, infl_src = ev.inflation(steps, col, c.streams_sharing) if col else (None, "")
        protos = protos_of.get(c["id"], [])
        replays, repro = ev.protocol_replays(c, protos, steps, col)
        e2e_r, e2e_src = ev.e2e_ratio(c, claims, steps)
        calls[c["id"]] = vr.Evidence(
            claim=t, ceiling=ceil, source=source, inflation=infl, inflation_source=infl_src,
            reproduction=repro, tolerance=c_tol, seed_reproduction=seed_rep, e2e_ratio=e2e_r,
            e2e_ratio_source=e2e_src,
            drafting=drafting_of(c, t["aggregate_tok_s"], claims, plain, documented,
                                 lambda a, b: key[a["id"]] == key[b["id"]]))
        res = vw.verdict(calls[c["id"]])
        plain_floor = (sm.band(c.streams_sharing, p["roofline_memory_ms"] / 1e3,
                               p["roofline_compute_ms"] / 1e3)[1]
                       if p["roofline_tok_s"] else None)
        rows.append({"id": c["id"], "card": c["card"], "metric": c["metric"],
                     "value": c["value"], "streams": c["streams"],
                     "streams_running": c["streams_running"],
                     "assumed_fields": t["assumed_fields"],
                     "bound_words": " ".join(filter(None, (before, "X", after)))
                     if before or after else "", "verdict": res.kind,
                     "reason": res.reason, **res.numbers,
                     "roofline_floor_tok_s": plain_floor, "protocol": ";".join(protos),
                     "replay_context": ev.replay_sentence(
                         replays, res.numbers.get("claim_over_roofline"), c["card"]),
                     "replay_runs": ";".join(r["run"] for r in replays),
                     **label_columns(c)})
    rows = run_as_a_whole(rows, calls, {c["id"]: c["run"] for c in claims})
    if carried is None:
        return rows
    out = []
    for r in rows:
        call = calls[r["id"]]
        res = vc.carried_verdict(v.Verdict(r["verdict"], r["reason"], {}), call.claim,
                                 carried.get(r["id"]), call.tolerance)
        out.append({**r, "verdict": res.kind, "reason": res.reason, **res.numbers})
    return out


def drafting_of(c: Claim, aggregate_tok_s: float, claims: list[Claim],
                plain: Mapping[str, Mapping[str, Any]],
                documented: Mapping[str, tuple[int, ...]],
                same_source: Any = lambda a, b: True) -> vd.Drafting | None:
    """The verify rows per stream of claim ``c`` and the tokens kept it needs at them
    (:mod:`claimcheck.verdicts.verdict_drafting`), from its plain roofline's two terms at its
    own card (``plain``: id -> :func:`claimcheck.claims.claim_roofline.claim_roofline`'s
    dict); the acceptance its source states; and, for a figure of several streams, the
    one-stream figures of the same source (``same_source(a, b)``:
    :func:`claimcheck.verdicts.sourcemodel.source_key`) with the same drafter, rows and prompt
    set (a drafter's acceptance moves with the prompts). None
    without a plain roofline."""
    p = plain[c["id"]]
    if not p["roofline_tok_s"]:
        return None
    lo, hi, words = vd.verify_rows(c.row, list(c.assumed), documented)

    def tau(agg: float, streams: float, q: Mapping[str, Any], rows: float) -> float:
        return vd.tau_at_rows(agg, streams, q["roofline_memory_ms"], q["roofline_compute_ms"],
                              rows)

    solo = () if c.streams_sharing == 1 or not vd.has_drafter(c.row) else tuple(
        vd.Solo(o["id"], o.aggregate_tok_s, tau(o.aggregate_tok_s, 1, plain[o["id"]], lo))
        for o in claims if o["id"] != c["id"] and o.streams_sharing == 1
        and plain[o["id"]]["roofline_tok_s"] and METRICS[o["metric"]].phase != "prefill"
        and same_source(o, c) and o["spec_method"] == c["spec_method"]
        and o["prompt_set"] == c["prompt_set"]
        and vd.rows_given(o.row) == vd.rows_given(c.row))
    kept = c["tokens_kept_per_step"]
    kept_words = ("stated" if not c.is_assumed("tokens_kept_per_step")
                  else c.assumed["tokens_kept_per_step"][1])
    return vd.Drafting(lo, hi, words, tau(aggregate_tok_s, c.streams_sharing, p, lo),
                       tau(aggregate_tok_s, c.streams_sharing, p, hi),
                       float(kept) if kept else None, kept_words if kept else "", solo,
                       rows_known=vd.has_drafter(c.row) and (
                           vd.rows_given(c.row) is not None
                           or bool(documented.get(str(c["spec_method"]).lower()))))


def needs_drafter_runs(verdicts: Mapping[str, v.Verdict], run_of: Mapping[str, str]
                       ) -> dict[str, str]:
    """Run -> words naming the first figure (registry order of ``verdicts``) of that run
    whose verdict needs a drafter: kind *needs a drafter*, or a seed-reproduction verdict
    over its card's plain roofline beyond tolerance (tau > 1 there too); the tokens kept it
    needs at its verify rows (``tau_needed``, ``verify_rows_per_stream``)."""
    out: dict[str, str] = {}
    for cid, res in verdicts.items():
        over = res.numbers.get("claim_over_roofline")
        seed_over = (res.kind in (v.SEED_REPRODUCED, v.SEED_NOT_REPRODUCED)
                     and over is not None
                     and sm.compare(over, 1.0, res.numbers.get("tolerance", v.TOLERANCE))
                     == "above")
        if (res.kind == v.NEEDS_SPECULATION or seed_over) and run_of[cid] not in out:
            tau = res.numbers.get("tau_needed") or over
            rows = res.numbers.get("verify_rows_per_stream") or 1
            out[run_of[cid]] = (f"{cid} needs {tau:.2f} tokens kept per stream per step at "
                                f"{rows:g} verify row{'s' if rows != 1 else ''} per stream")
    return out


def run_as_a_whole(rows: list[dict[str, Any]], calls: Mapping[str, vr.Evidence],
                    run_of: dict[str, str]) -> list[dict[str, Any]]:
    """A run is judged as a whole (issue 28 item 7): where any figure of a run needs a
    drafter (:func:`needs_drafter_runs`), every sibling is judged
    again with that figure named, so none says the drafter is not needed."""
    first = {r["id"]: v.Verdict(r["verdict"], r["reason"], r) for r in rows}
    speculative = needs_drafter_runs(first, run_of)
    out = []
    for r in rows:
        sib = speculative.get(run_of[r["id"]], "")
        if sib and not sib.startswith(f"{r['id']} "):
            res = vw.verdict(replace(calls[r["id"]], run_drafter=sib))
            r = {**r, "verdict": res.kind, "reason": res.reason, **res.numbers,
                 "run_needs_drafter": sib}
        out.append(r)
    return out


def seed_aggregate(c: Any, claims: list[Any]) -> Any:
    """For a per-stream figure whose window is not stated, the aggregate figure the seed
    gives for the same run (the first registry row of that run with an aggregate metric),
    else None: the per-request figure summed over the requests in flight must not stand
    against the seed's own aggregate."""
    m = METRICS[c["metric"]]
    if m.scope != "per_stream" or m.phase != "unspecified":
        return None
    for o in claims:
        if o["run"] == c["run"] and o["id"] != c["id"] and \
                METRICS[o["metric"]].scope == "aggregate" and o["streams"] == c["streams"]:
            return o
    return None


def seed_reproduction(c: Any, claims: list[Any]) -> Any:
    """A seed's own reproduction of claim ``c`` among the registry's ``claims``
    (:func:`claimcheck.verdicts.sourcemodel.reproductions_of`), as a
    :class:`claimcheck.verdicts.verdicts.SeedReproduction` of the seed with the most matching
    runs (the lowest seed number on a tie); None when no seed reproduced it."""
    of_row = {id(o.row): o for o in claims}
    found = [of_row[id(r)] for r in
             sm.reproductions_of(c.row, c.stated, [(o.row, o.stated) for o in claims])]
    if not found:
        return None
    by_seed: dict[str, list[Any]] = {}
    for o in found:
        by_seed.setdefault(str(o["seed"]), []).append(o)
    seed, rs = min(by_seed.items(), key=lambda kv: (-len({o["run"] for o in kv[1]}), kv[0]))
    values = [o.aggregate_tok_s for o in rs]
    return v.SeedReproduction(
        seed=f"{int(seed):03d}" if seed.isdigit() else seed, low_tok_s=min(values),
        high_tok_s=max(values), runs=tuple(dict.fromkeys(o["run"] for o in rs)),
        ids=tuple(o["id"] for o in rs),
        differs=tuple(sm.differences(c.row, c.stated, [(o.row, o.stated) for o in rs])))
