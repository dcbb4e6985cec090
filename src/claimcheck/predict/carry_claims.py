"""Every registry figure predicted at its own configuration on its own card by the carried
model (issue 42 item 4; data/derived/carried_claims.csv): card, power limit, weight format,
streams, context and definition, every term from the local card's runs moved by the
claim's card's datasheet (:func:`claimcheck.predict.carry.carried_terms`), never a number
measured on the claim's own card (the local card is another card by construction).

The engine predicted is the article's W4A16 engine (config/engines.yaml
``w4a16-hyperqwen``) with the claim's weight format (:data:`claimcheck.claims.claim_roofline.
QUANT_FORMAT`), KV and state dtypes (its weights.csv row, else the registry's ``kv_dtype``;
BF16 KV and FP32 state as the roofline assumes), its weights' bytes (the weights.csv row
the roofline uses, else the geometry at the format), slots for every stream.

``carried_model_tok_s`` is summed over the streams sharing the figure (the scale of the
verdict's ``aggregate_tok_s``), read by the figure's definition
(:func:`claimcheck.predict.carry_table` reads the same way): end to end from the simulated
step; a decode reading (a TPOT reading, per-request or single-stream decode, a decode
aggregate) as streams x 1000 / the predicted median TPOT where the prompt and output are
stated, else streams over one decode step at the stated context; an engine-log line as its
running requests over one decode step at mid-output context; a figure whose definition is
not stated is read as decode (its upper reading), said in ``carried_assumptions``.
No plain prediction, with the reason in ``carried_reason``: a figure that is not a decode
or end-to-end rate, a card with no datasheet row, a weight format with no local run nor
activation path, an end-to-end figure without its prompt and output lengths, and a
drafter's figure: the plain model keeps one token per stream per step, so it gives the
tokens kept per stream per step the figure needs on the carried model at its verify rows
(``carried_tau_needed``: claim x the carried step of B x r rows / B).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from claimcheck.claims.claim_roofline import QUANT_FORMAT, weight_size_for
from claimcheck.claims.claims import Claim
from claimcheck.claims.metrics import METRICS
from claimcheck.files.errors import InputError
from claimcheck.model import model as m
from claimcheck.physics.cardfiles import get_card
from claimcheck.predict.carry import ACTIVATION_PATH, carried_terms
from claimcheck.predict.carry_int8 import int8_words
from claimcheck.predict.carry_table import LOG_METRICS, _requests, metric_of
from claimcheck.predict.newcard import fits
from claimcheck.predict.protocolpredict import plan_step
from claimcheck.runs.run import Run
from claimcheck.verdicts import verdict_drafting as vd
from claimcheck.verdicts.verdict_carried import Carried
from claimcheck.verdicts.verdicts import NOT_A_DECODE_RATE

COLUMNS = ("claim_id", "card", "power_limit_w", "weight_format", "streams", "context_tokens",
           "metric", "carried_model_tok_s", "carried_assumptions", "carried_reason",
           "carried_tau_needed", "carried_verify_rows", "carried_source_runs",
           "carried_median_tpot_ms", "local_card")
DEFAULT_CONTEXT = 640
"""Tokens of context per stream where a decode figure states none: the article's ladder
(128 + 512), said as assumed."""
STATE = {"fp16": "float16", "fp32": "float32", "bf16": "bfloat16"}


def _spec(base: Any, c: Claim, fmt: str, row: Any, streams: int) -> Any:
    kv = c.get("kv_dtype") or (row.kv_dtype if row else "bf16")
    state = row.state_dtype if row else "fp32"
    model = (c.get("checkpoint") or "").split("@")[0] or base.model
    return replace(base, weight_format=fmt, kv_cache_dtype="auto" if kv == "bf16" else kv,
                   mamba_ssm_cache_dtype=STATE.get(state, state), model=model,
                   max_num_seqs=max(streams, 1), vllm_version=None, speculative=None,
                   int8_activations="mlp" if c["int8_layers"] == "mlp" else None)


def _name(card: str) -> str:
    """"rtx3090" -> "RTX 3090", "h200" -> "H200"."""
    return card.upper().replace("RTX", "RTX ")


LAYERS = {"mlp": "the MLPs", "all": "every layer"}


def _words(t: dict[str, Any], fmt: str, card: str) -> list[str]:
    """The carried and assumed terms in short words."""
    terms, local = t["terms"], _name(t["local_card"])
    out = [f"carried from the {local}'s runs by the {_name(card)}'s datasheet"]
    if terms["eta"].status == "assumed":
        stand = str(ACTIVATION_PATH.get(fmt)).upper()
        if t.get("eta_not_carried"):
            why, names = t["eta_not_carried"]
            runs_w = "run is" if len(names) == 1 else "runs are"
            out.append(f"{fmt.upper()} eta and compute assumed from {stand}: the "
                       f"{local}'s {len(names)} {fmt.upper()} {runs_w} not carried, as {why}")
        else:
            out.append(f"{fmt.upper()} eta and compute assumed from {stand}, no "
                       f"{fmt.upper()} run on the {local}")
    out.append(f"SM clock at {t['power_limit_w']:g} W assumed "
               f"(x{terms['power_clock_ratio'].value:.3f})")
    out.append(f"host overheads assumed as on the {local}")
    return out


def _no(c: Claim, reason: str) -> dict[str, Any]:
    return {"claim_id": c["id"], "card": c["card"], "power_limit_w": c["power_limit_w"],
            "streams": c["streams"], "metric": c["metric"], "carried_model_tok_s": None,
            "carried_reason": reason}


def claim_row(c: Claim, runs: list[Run], base: Any, documented: dict[str, tuple[int, ...]],
              weight_rows: dict[str, Any], cache: dict[tuple, Any],
              protos: dict[str, Any] | None = None) -> dict[str, Any]:
    """One figure's carried prediction (see the module doc), as a row of :data:`COLUMNS`."""
    metric = metric_of(c.row) or c["metric"]
    phase = METRICS[metric].phase if metric in METRICS else ""
    if metric in NOT_A_DECODE_RATE or phase == "prefill":
        return _no(c, f"not a decode or end-to-end rate ({metric}): the carried model does "
                   "not predict it")
    card = c["card"]
    if not card:
        return _no(c, "no card stated")
    try:
        get_card(card)
    except InputError:
        return _no(c, f"card {card} has no datasheet row in cards.csv")
    q = (c["quantization"] or "").lower()
    fmt = QUANT_FORMAT.get(q)
    if fmt is None:
        return _no(c, f"weight format {'not stated' if not q else repr(q)}: no kernel path "
                   "to carry eta by")
    if fmt not in ACTIVATION_PATH:
        return _no(c, f"no {fmt.upper()} run on the local card, nor of the precision its "
                   "GEMMs multiply at: eta and compute cannot be carried")
    b = int(c.streams_sharing)
    row = weight_size_for(c, weight_rows)
    spec = _spec(base, c, fmt, row, b)
    power = c["power_limit_w"] or None
    version = (c.get("engine_version") or "").removeprefix("vLLM ").strip() or None
    key = (card, fmt, spec.kv_cache_dtype, spec.mamba_ssm_cache_dtype, power, version,
           spec.model, spec.int8_activations)
    if key not in cache:
        try:
            cache[key] = carried_terms(runs, card, spec, power, version)
        except InputError as e:
            cache[key] = str(getattr(e, "reason", "") or e)
    t = cache[key]
    if isinstance(t, str):
        return _no(c, t)
    shape, cal = replace(t["shape"], max_num_seqs=b), t["calibration"]  # slots for all
    if row is not None:  # the weights the roofline uses for the claim
        shape = replace(shape, weight_bytes=row.bytes)
    words = _words(t, fmt, card)
    if t.get("int8_prefill"):
        words.append(int8_words(t))
    elif c["int8_layers"] or q == "w4a8":
        words.append(f"int8 activations on {LAYERS.get(c['int8_layers'], 'the GEMMs')} not "
                     "modelled, the 16-bit path stands in")
    src = " ".join(sorted({s for k, term in t["terms"].items() for s in term.source_runs
                           if k != "power_clock_ratio"}))
    i, o = c["prompt_tokens"], c["output_tokens"]
    ctx = c["context_tokens"] or ((i or 0) + (o or 0) if i and o else None)
    if not ctx:
        ctx = DEFAULT_CONTEXT
        words.append(f"context not stated: {DEFAULT_CONTEXT} tokens assumed")
    out = {"claim_id": c["id"], "card": card, "power_limit_w": t["power_limit_w"],
           "weight_format": fmt, "streams": b, "context_tokens": ctx, "metric": metric,
           "carried_source_runs": src, "local_card": t["local_card"]}
    wall = fits(shape, t["card"], int(ctx))
    if wall is not None and b > wall:
        words.append(f"past the memory wall ({wall} streams fit)")

    def step_s(rows: float) -> float:
        kv = b * ((i or 0) + (o or 0) // 2) if i and o else b * int(ctx)
        return m.step_cost_sum(shape, cal, b, kv, int(round(b * rows)),
                               int(round(b * rows))).time_s
    if vd.has_drafter(c.row):
        lo, _, rows_how = vd.verify_rows(c.row, list(c.assumed), documented)
        tau = c.aggregate_tok_s * step_s(lo) / b
        return {**out, "carried_model_tok_s": None, "carried_assumptions": "; ".join(words),
                "carried_tau_needed": tau, "carried_verify_rows": lo,
                "carried_reason": f"a drafter's figure: it needs {tau:.2f} tokens kept per "
                f"stream per step at {lo:g} verify row{'s' if lo != 1 else ''} per stream "
                f"({rows_how or 'stated'}) on the carried model, which keeps one per step "
                "(no plain prediction)"}
    if phase == "end_to_end" and not (i and o):
        return {**out, "carried_model_tok_s": None, "carried_assumptions": "; ".join(words),
                "carried_reason": "end to end needs the prompt and output lengths, which "
                "the source does not state"}
    if phase == "unspecified":
        words.append("definition not stated: read as decode")
    tpot = None
    if metric in LOG_METRICS:
        value = b / step_s(1)
    elif i and o:
        pred = plan_step(shape, cal, b, _requests(protos or {}, b, int(i), int(o))[0],
                         int(i), int(o))
        tpot = pred["predicted_median_tpot_ms"]
        value = pred["predicted_e2e_tok_s"] if phase == "end_to_end" else b * 1000 / tpot
    else:
        value = b / step_s(1)
    return {**out, "carried_model_tok_s": value, "carried_assumptions": "; ".join(words),
            "carried_reason": "", "carried_median_tpot_ms": tpot}


def carried_claim_rows(runs: list[Run], claims: list[Claim], base: Any,
                       weight_rows: dict[str, Any], protos: dict[str, Any] | None = None
                       ) -> list[dict[str, Any]]:
    """One row per registry figure (:func:`claim_row`); requests per figure as
    :mod:`claimcheck.predict.carry_table` takes them from ``protos``."""
    documented = vd.documented_rows(c.row for c in claims)
    cache: dict[tuple, Any] = {}
    return [claim_row(c, runs, base, documented, weight_rows, cache, protos) for c in claims]


def as_carried(row: dict[str, Any]) -> Carried:
    """A row of data/derived/carried_claims.csv as the verdict's :class:`Carried`."""
    def num(k: str) -> float | None:
        x = row.get(k)
        return None if x in (None, "") else float(x)
    return Carried(num("carried_model_tok_s"), str(row.get("carried_assumptions") or ""),
                   str(row.get("carried_reason") or ""), num("carried_tau_needed"),
                   num("carried_verify_rows"), str(row.get("carried_source_runs") or ""))
