"""The RTX 3090's published figures against a prediction carried from the local card's runs
(data/derived/carried_3090.csv): every registry figure on the card with no speculation and
known streams, prompt and output lengths, predicted for the W4A16 engine at the figure's own
power limit with no number of that card in any term (:mod:`claimcheck.predict.carry`).

How each metric is read from the prediction:

* ``e2e_aggregate``: the predicted end to end aggregate of the step;
* ``streams_x_1000_over_median_tpot`` (and ``..._mean_tpot``): streams x 1000 / the
  predicted median TPOT (ms; the model has one TPOT per step);
* ``engine_log_steady``, ``engine_log_line``: a log line with no prompt tokens: R running
  requests (streams_running, else streams) over one decode step at mid-output context,
  R / the model's step time as the simulation prices it (the bend included).

``term_source_runs``: the runs behind every speed term (the power term reads the local
card's telemetry only, said in ``claimcheck predict``). The local runs are those of the
figure's vLLM release where the local card has any (else its newest). Requests per figure:
the first protocol step of config/protocols.yaml with the same streams and lengths, else
4 x streams (said in ``note``).
"""

from __future__ import annotations

from typing import Any

from claimcheck.config.protocols import FIT_MARGIN_TOKENS
from claimcheck.model.simulator import decode_step_seconds
from claimcheck.predict.carry import carried_terms
from claimcheck.predict.carry_int8 import int8_words
from claimcheck.predict.newcard import fits
from claimcheck.predict.protocolpredict import plan_step
from claimcheck.runs.run import Run

TPOT_METRICS = ("streams_x_1000_over_median_tpot", "streams_x_1000_over_mean_tpot")
LOG_METRICS = ("engine_log_steady", "engine_log_line")
COLUMNS = ("claim_id", "metric", "power_limit_w", "vllm", "streams", "input_len", "output_len",
           "requests", "published_tok_s", "predicted_tok_s", "predicted_over_published",
           "predicted_median_tpot_ms", "local_card", "term_source_runs", "note")


def metric_of(claim: dict[str, str]) -> str:
    """The claim's metric; a blank metric whose ``assumed`` field says ``metric=X`` (the
    registry's way for a figure it reads a metric into) reads as X."""
    if claim.get("metric"):
        return claim["metric"]
    for part in (claim.get("assumed") or "").split(";"):
        k, _, v = part.strip().partition("=")
        if k == "metric":
            return v.strip()
    return ""


def selected(claims: list[dict[str, str]], card: str) -> list[dict[str, str]]:
    """The figures on ``card`` this table predicts: no speculation, streams, prompt and
    output lengths given, a metric read above."""
    return [c for c in claims if c["card"] == card and c.get("spec_method") == "none"
            and c.get("streams") and c.get("prompt_tokens") and c.get("output_tokens")
            and metric_of(c) in ("e2e_aggregate", *TPOT_METRICS, *LOG_METRICS)]


def _requests(protos: dict[str, Any], streams: int, i: int, o: int) -> tuple[int, str]:
    for p in protos.values():
        for st in p.steps:
            if (st.streams, st.input_len, st.output_len) == (streams, i, o):
                return st.requests, ""
    return 4 * streams, "requests 4 x streams (no protocol step of these lengths)"


def carried_rows(runs: list[Run], claims: list[dict[str, str]], spec: Any,
                 protos: dict[str, Any], card: str = "rtx3090") -> list[dict[str, Any]]:
    """One row per selected figure: published against predicted (see the module doc)."""
    rows, cache = [], {}
    for c in selected(claims, card):
        power = float(c["power_limit_w"]) if c.get("power_limit_w") else None
        version = (c.get("engine_version") or "").removeprefix("vLLM ").strip() or None
        if (power, version) not in cache:
            cache[(power, version)] = carried_terms(runs, card, spec, power, version)
        t = cache[(power, version)]
        shape, cal = t["shape"], t["calibration"]
        b, i, o = int(c["streams"]), int(c["prompt_tokens"]), int(c["output_tokens"])
        req, note = _requests(protos, b, i, o)
        if spec.max_model_len and i + o + FIT_MARGIN_TOKENS > int(spec.max_model_len):
            note = "; ".join(x for x in (note, f"{i} + {o} tokens past the engine's "
                             f"max_model_len {spec.max_model_len}: predicted as if it "
                             "were raised") if x)
        wall = fits(shape, t["card"], i + o)
        pred = plan_step(shape, cal, b, req, i, o)
        metric, tpot = metric_of(c), pred["predicted_median_tpot_ms"]
        if metric == "e2e_aggregate":
            value = pred["predicted_e2e_tok_s"]
        elif metric in TPOT_METRICS:
            value = b * 1000 / tpot
        else:
            r = int(c.get("streams_running") or b)
            step = decode_step_seconds(shape, cal, r, r * (i + o // 2))
            value = r / step
        if c.get("int8_layers") and t.get("int8_prefill"):
            note = "; ".join(x for x in (note, int8_words(t)) if x)
        elif c.get("int8_layers"):
            note = "; ".join(x for x in (note, f"int8 activations on {c['int8_layers']} "
                             "not modelled: no local int8 run, the 16-bit path stands in")
                             if x)
        if wall is not None and b > wall:
            note = "; ".join(x for x in (note, f"past the memory wall ({wall} streams fit)")
                             if x)
        src = sorted({s for k, term in t["terms"].items() for s in term.source_runs
                      if k != "power_clock_ratio"})  # its runs: the local card's telemetry
        pub = float(c["value"])
        rows.append({"claim_id": c["id"], "metric": metric,
                     "power_limit_w": t["power_limit_w"], "vllm": t["vllm"], "streams": b,
                     "input_len": i,
                     "output_len": o, "requests": req, "published_tok_s": pub,
                     "predicted_tok_s": value, "predicted_over_published": value / pub,
                     "predicted_median_tpot_ms": tpot, "local_card": t["local_card"],
                     "term_source_runs": " ".join(src), "note": note})
    return rows
