"""Derived tables: claims with derived speeds, roofline predictions, measured runs.

Pure functions over loaded data; the CSV writers at the bottom are the only I/O.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from claimcheck.core import roofline as rl
from claimcheck.core.cards import Card, Ceiling
from claimcheck.core.claims import Claim
from claimcheck.core.formats import WEIGHT_FORMATS
from claimcheck.core.geometry import Geometry
from claimcheck.core.metrics import METRICS
from claimcheck.core.units import GIB
from claimcheck.report.record import Run, engine_facts, reported_steps

# quantization label in the registry -> weight format for the arithmetic (4-bit-weight
# formats with 16-bit group scales are all counted as w4a16).
QUANT_FORMAT = {"w4a16": "w4a16", "int4": "w4a16", "w4a8": "w4a16", "nvfp4": "nvfp4",
                "bf16": "bf16", "fp8": "fp8", "int8": "int8"}
COMPUTE_DTYPE = {"bf16": "bf16", "fp8": "fp8", "int8": "int8", "w4a16": "fp16",
                 "nvfp4": "fp4"}


def compute_tflops(card: Card, power_limit_w: float | None, dtype: str,
                   ceilings: dict[str, Ceiling]) -> tuple[float, str]:
    """Compute ceiling in TFLOP/s and where it came from: a measured ceiling for this card
    and power limit when there is one, else the datasheet's dense rate."""
    for c in ceilings.values():
        if c.card == card.card and c.power_limit_w is not None and power_limit_w == \
                c.power_limit_w:
            return c.tflops, f"measured ceiling {c.id}"
    for dt_ in (dtype, "fp16", "bf16"):
        if dt_ in card.tensor_tflops:
            return card.tflops(dt_), f"datasheet dense {dt_}"
    raise ValueError(f"no compute rate for {card.card}")


def load_weight_sizes(path: str | Path | None = None) -> list[dict[str, str]]:
    """Measured or published weight sizes (``data/raw/weights.csv``), matched by prefix."""
    from claimcheck.core.paths import RAW

    with Path(path or RAW / "weights.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def weight_size_for(c: Claim, sizes: list[dict[str, str]]) -> dict[str, str] | None:
    """The first weights.csv row whose prefix matches the claim's checkpoint or system."""
    for row in sizes:
        if (c[row["match_field"]] or "").startswith(row["match_prefix"]):
            return row
    return None


def claim_roofline(c: Claim, geom: Geometry, cards: dict[str, Card],
                   ceilings: dict[str, Ceiling], eta: float = 1.0,
                   state_dtype: str = "fp32", kv_dtype: str = "bf16",
                   sizes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The roofline at a claim's own configuration (card, weights, streams, context).

    Weights, state and KV dtypes come from ``sizes`` (weights.csv) when a row matches,
    else from the quantization's format applied to the weights read per token. Returns
    ``roofline_tok_s`` (aggregate, eta as given, tau = 1), ``claim_over_roofline`` and
    ``tau_needed`` (tokens kept per stream per step the claim implies). Claims whose metric
    is prefill, whose card is unknown or whose weights have no byte count get a
    ``roofline_note`` instead.
    """
    m = METRICS[c["metric"]]
    out: dict[str, Any] = {"id": c["id"], "roofline_tok_s": None,
                           "claim_over_roofline": None, "tau_needed": None,
                           "roofline_note": ""}
    fmt = QUANT_FORMAT.get((c["quantization"] or "").lower())
    if m.phase == "prefill":
        out["roofline_note"] = "prefill: the decode roofline does not apply"
        return out
    if c["card"] not in cards:
        out["roofline_note"] = f"card {c['card']} not in the registry"
        return out
    size = weight_size_for(c, sizes or [])
    if size:
        w = float(size["weight_size"]) * (GIB if size["weight_unit"] == "GiB" else 1e9)
        w_src = f"{size['weight_size']} {size['weight_unit']} (weights.csv)"
        state_dtype, kv_dtype = size["state_dtype"], size["kv_dtype"]
    elif fmt is not None:
        w = geom.weights_per_token * WEIGHT_FORMATS[fmt].bytes_per_weight
        w_src = f"{fmt} format x weights per token"
    else:
        out["roofline_note"] = f"no byte count for weights '{c['quantization'] or '?'}'"
        return out
    card = cards[c["card"]]
    tflops, src = compute_tflops(card, c["power_limit_w"], COMPUTE_DTYPE.get(fmt or "", "bf16"),
                                 ceilings)
    model = rl.for_model(geom, weight_bytes=w, bandwidth_bytes_s=card.bandwidth_bytes_s,
                         tflops=tflops, eta=eta, state_dtype=state_dtype, kv_dtype=kv_dtype,
                         context_tokens=c["context_tokens"] or 0)
    b = c["streams"]
    p = rl.point(model, b)
    out.update(roofline_tok_s=p.aggregate_tok_s, roofline_bound=p.bound,
               claim_over_roofline=c.aggregate_tok_s / p.aggregate_tok_s,
               tau_needed=rl.tau_needed(model, b, c.aggregate_tok_s),
               roofline_weights=w_src, roofline_state_dtype=state_dtype,
               roofline_kv_dtype=kv_dtype, roofline_compute=src)
    return out


def step_roofline(run: Run, step: dict[str, Any], geom: Geometry, card: Card,
                  eta: float = 1.0) -> dict[str, Any]:
    """The roofline for one measured step: weights as the engine reported them (GiB),
    state and KV dtypes as the engine was configured, context = prompt + output."""
    eng = run.provenance["engine_config"]
    facts = engine_facts(run)
    w_gib = facts["weights_gib"]
    state = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}.get(
        eng.get("mamba_ssm_cache_dtype") or "auto", "fp32")
    kv = "fp8" if str(eng.get("kv_cache_dtype", "auto")).startswith("fp8") else "bf16"
    fmt = eng.get("weight_format", "bf16")
    tflops = card.tflops(COMPUTE_DTYPE.get(fmt, "bf16"))
    if w_gib is None:
        return {"roofline_tok_s": None}
    model = rl.for_model(geom, weight_bytes=w_gib * GIB,
                         bandwidth_bytes_s=card.bandwidth_bytes_s, tflops=tflops, eta=eta,
                         state_dtype=state, kv_dtype=kv,
                         context_tokens=step["context_tokens_per_stream"])
    p = rl.point(model, step["streams"])
    return {"roofline_tok_s": p.aggregate_tok_s, "roofline_per_stream_tok_s":
            p.per_stream_tok_s, "roofline_bound": p.bound, "roofline_state_dtype": state,
            "roofline_kv_dtype": kv, "roofline_weights_gib": w_gib,
            "roofline_tflops": tflops, "roofline_eta": eta}


def run_rows(runs: Iterable[Run], geom: Geometry, cards: dict[str, Card],
             all_steps: bool = True) -> list[dict[str, Any]]:
    """One row per measured step, joined with the run's provenance and its roofline."""
    rows = []
    for run in runs:
        p = run.provenance
        gpu = (p.get("gpu", {}).get("gpus") or [{}])[0]
        sw = p.get("software", {})
        kept = {id(s) for s in reported_steps(run)}
        for s in run.steps:
            if not all_steps and id(s) not in kept:
                continue
            row = {"run": run.path.name, "card": p["card"], "engine": p["engine"],
                   "protocol": p["protocol"], "weights": p["weights"],
                   "weights_label": p["weights_label"], "run_status": p["status"],
                   "reported": id(s) in kept, "gpu_name": gpu.get("name"),
                   "power_limit_w": gpu.get("power_limit_enforced_w"),
                   "driver": p.get("gpu", {}).get("driver_version"),
                   "vllm": sw.get("vllm"), "vllm_commit": sw.get("vllm_commit"),
                   "torch": sw.get("torch"), "stream_relation": "independent_requests",
                   **s}
            if p["card"] in cards:
                row.update(step_roofline(run, s, geom, cards[p["card"]]))
            rows.append(row)
    return rows


def write_csv(rows: list[dict[str, Any]], path: str | Path) -> None:
    """Write dict rows with the union of their keys as columns (stable order)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r.get(k)) for k in cols})


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "" if v is None else v
