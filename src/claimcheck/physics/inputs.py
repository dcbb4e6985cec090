"""The one way to a roofline: model geometry, card, weight source, ceiling source, dtypes
and context in; a :class:`~claimcheck.physics.roofline.Roofline` and the source of every
input out.

Weight sources (exactly one): a ``weights.csv`` id, a weight format applied to the weights
read per token, or a measured size with its unit (GB = 1e9 bytes or GiB = 2**30 bytes,
nothing else). Compute ceilings: a ``ceilings.csv`` id, a ceiling given by hand (the CLI's
``--tflops``), or the best matching ceiling row for the card, power limit and compute
dtype, else the card's datasheet dense rate. The CLI, the claims and runs tables, every
notebook and every roofline preset go through :func:`roofline_for`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.physics import roofline as rl
from claimcheck.physics.cards import Card, Ceiling
from claimcheck.physics.formats import state_dtype_bytes
from claimcheck.physics.geometry import Geometry, check_context
from claimcheck.physics.units import GB, GIB, MIB
from claimcheck.physics.weights import check_bytes_per_weight, weight_bytes

# Weight sizes: the closed set of units (bytes per unit). GB and GiB are never mixed.
WEIGHT_UNITS: dict[str, int] = {"GB": GB, "GiB": GIB}

# The dtype the matrix multiplies run in, for each weight format: 4-bit weights with 16-bit
# activations multiply in fp16; NVFP4 checkpoints are set against the dense BF16 rate, as
# the article does for the RTX 5090 (shared/seeds/000 "Speculation spends the same
# arithmetic": "the 209.5 TFLOP/s dense BF16 reference that Cinference's own benchmarks use").
COMPUTE_DTYPE: dict[str, str] = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8",
                                 "int8": "int8", "w4a16": "fp16", "nvfp4": "bf16"}

# An engine's dtype names (vLLM's --kv-cache-dtype, --mamba-ssm-cache-dtype) -> the
# roofline's. "auto" is vLLM's default: BF16 KV for a BF16 model and an FP32 GDN state.
ENGINE_KV_DTYPE: dict[str, str] = {"auto": "bf16", "bfloat16": "bf16", "bf16": "bf16",
                                   "float16": "fp16", "fp16": "fp16", "fp8": "fp8",
                                   "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}
ENGINE_STATE_DTYPE: dict[str, str] = {"auto": "fp32", "float32": "fp32", "fp32": "fp32",
                                      "float16": "fp16", "fp16": "fp16",
                                      "bfloat16": "bf16", "bf16": "bf16"}


def engine_dtype(table: dict[str, str], name: str | None, what: str) -> str:
    """Translate an engine's dtype name (None = "auto") through one of the tables above."""
    key = (name or "auto").lower()
    try:
        return table[key]
    except KeyError:
        raise ValueError(f"unknown engine {what} dtype {name!r}; known: {sorted(table)}"
                         ) from None


@dataclass(frozen=True)
class WeightRow:
    """One ``weights.csv`` row: a published or measured weight size and the dtypes that go
    with it. ``match_field``/``match_prefix`` attach it to claims."""

    id: str
    match_field: str
    match_prefix: str
    size: float
    unit: str
    state_dtype: str
    kv_dtype: str
    source: str

    @property
    def bytes(self) -> float:
        return self.size * WEIGHT_UNITS[self.unit]


WEIGHT_COLUMNS = ("id", "match_field", "match_prefix", "weight_size", "weight_unit",
                  "state_dtype", "kv_dtype", "source")


def parse_weight_rows(rows: list[dict[str, str]], source: str) -> dict[str, WeightRow]:
    """``weights.csv``'s rows (read from ``source``) as typed rows; a bad unit, size or
    duplicate id names the file and line."""
    p = source
    out: dict[str, WeightRow] = {}
    if rows:
        missing = [c for c in WEIGHT_COLUMNS if c not in rows[0]]
        if missing:
            raise InputError(p, f"missing columns {missing}", line=1)
    for i, r in enumerate(rows, start=2):
        unit = r["weight_unit"].strip()
        if unit not in WEIGHT_UNITS:
            raise InputError(p, f"unit {unit!r} is not one of {sorted(WEIGHT_UNITS)}",
                             line=i, key="weight_unit")
        try:
            size = float(r["weight_size"])
        except ValueError:
            raise InputError(p, f"not a number: {r['weight_size']!r}", line=i,
                             key="weight_size") from None
        if not (size > 0 and size != float("inf")):
            raise InputError(p, f"must be a finite size > 0, got {r['weight_size']}",
                             line=i, key="weight_size")
        if r["id"] in out:
            raise InputError(p, f"duplicate id {r['id']!r}", line=i, key="id")
        out[r["id"]] = WeightRow(id=r["id"], match_field=r["match_field"],
                                 match_prefix=r["match_prefix"], size=size, unit=unit,
                                 state_dtype=r["state_dtype"], kv_dtype=r["kv_dtype"],
                                 source=r["source"])
    return out


@dataclass(frozen=True)
class Weights:
    """Where W comes from: exactly one of a weights.csv ``id``, a ``format``, or a measured
    ``size`` with its ``unit`` (and ``source`` saying where it was measured)."""

    id: str | None = None
    format: str | None = None
    size: float | None = None
    unit: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        given = sum(x is not None for x in (self.id, self.format, self.size))
        if given != 1:
            raise ValueError("give exactly one weight source: a weights.csv id, a weight "
                             "format, or a measured size with its unit")
        if self.size is not None and self.unit not in WEIGHT_UNITS:
            raise ValueError(f"weight unit {self.unit!r} is not one of {sorted(WEIGHT_UNITS)}")


def resolve_weights(w: Weights, geom: Geometry, rows: dict[str, WeightRow]
                    ) -> tuple[float, str, WeightRow | None]:
    """Weight bytes read per step, a label saying where they came from, and the weights.csv
    row when there is one."""
    if w.id is not None:
        if w.id not in rows:
            raise InputError("weights.csv", f"unknown weights id {w.id!r}; known: "
                             f"{', '.join(sorted(rows))}", key="id")
        r = rows[w.id]
        check_bytes_per_weight(geom, r.bytes, "weights.csv", key=f"{r.id}.weight_size")
        return r.bytes, f"{r.size:g} {r.unit} (weights.csv {r.id})", r
    if w.size is not None:
        n = w.size * WEIGHT_UNITS[w.unit]  # type: ignore[index]
        check_bytes_per_weight(geom, n, w.source or "weights")
        extra = f" ({n / GB:.2f} GB)" if w.unit == "GiB" else ""
        return n, f"{w.size:g} {w.unit}{extra} measured" + (
            f" ({w.source})" if w.source else ""), None
    n, label = weight_bytes(geom, fmt=w.format)  # the one format path (MoE: every expert)
    return n, label, None


def compute_ceiling(card: Card, dtype: str, ceilings: dict[str, Ceiling], *,
                    ceiling_id: str | None = None, power_limit_w: float | None = None,
                    tflops: float | None = None) -> tuple[float, str]:
    """Compute ceiling in TFLOP/s and where it came from.

    ``tflops`` (given by hand) wins; else the ``ceilings.csv`` row ``ceiling_id`` (which must
    be for this card); else the ceiling row for this card and ``dtype`` whose power limit
    equals ``power_limit_w`` (a row with no power limit holds at any limit; an exact limit
    is preferred); else the datasheet dense rate for ``dtype`` (fp16, then bf16, where the
    card has no such column)."""
    if tflops is not None:
        return tflops, "given by hand (--tflops)"
    if ceiling_id is not None:
        if ceiling_id not in ceilings:
            raise InputError("ceilings.csv", f"unknown ceiling id {ceiling_id!r}; known: "
                             f"{', '.join(sorted(ceilings))}", key="id")
        c = ceilings[ceiling_id]
        if c.card != card.card:
            raise InputError("ceilings.csv", f"ceiling {c.id!r} is for {c.card}, not "
                             f"{card.card}", key="card")
        return c.tflops, f"ceiling {c.id} ({c.dtype}, {c.source})"
    match = [c for c in ceilings.values() if c.card == card.card and c.dtype == dtype
             and (c.power_limit_w is None or c.power_limit_w == power_limit_w)]
    match.sort(key=lambda c: (c.power_limit_w is None, c.id))
    if match:
        c = match[0]
        return c.tflops, f"ceiling {c.id} ({c.dtype}, {c.source})"
    for d in (dtype, "fp16", "bf16"):
        if d in card.tensor_tflops:
            return card.tflops(d), f"datasheet dense {d}"
    raise ValueError(f"no compute rate for {card.card}")


def state_bytes(geom: Geometry, state_dtype: str, conv_dtype: str) -> float:
    """S, bytes per stream: the recurrent (DeltaNet) state at ``state_dtype`` plus the
    short-convolution state at ``conv_dtype`` (the model dtype, config.json ``torch_dtype``);
    both are read and written every step. The one S of every claim and every step."""
    return (geom.state_bytes_per_stream(state_dtype)
            + geom.conv_state_values_per_stream * state_dtype_bytes(conv_dtype))


def state_words(sources: dict[str, Any]) -> str:
    """What S holds, in words, from :func:`roofline_for`'s sources: the recurrent state's
    dtype, and the conv state's where S includes it ("fp32 recurrent + bf16 conv")."""
    conv = sources.get("conv_state_dtype")
    return f"{sources['state_dtype']} recurrent + {conv} conv" if conv else \
        str(sources["state_dtype"])


def roofline_for(geom: Geometry, card: Card, *, weights: Weights,
                 ceilings: dict[str, Ceiling], weight_rows: dict[str, WeightRow],
                 compute_dtype: str | None = None, ceiling: str | None = None,
                 tflops: float | None = None, power_limit_w: float | None = None,
                 state_dtype: str | None = None, kv_dtype: str | None = None,
                 context_tokens: float = 0.0, eta: float = 1.0, rows: float = 1.0,
                 tau: float = 1.0, cards: int = 1, check_memory: bool = False,
                 free_bytes: float | None = None, context_source: str = "context",
                 conv_state_dtype: str | None = None
                 ) -> tuple[rl.Roofline, dict[str, Any]]:
    """The roofline and a dict naming the value and source of each input.

    State and KV dtypes default to the weights.csv row's when the source is an id (else
    fp32 state, bf16 KV). The compute dtype defaults to the weight format's
    (:data:`COMPUTE_DTYPE`), else bf16. Context is tokens per stream. ``cards`` > 1 is
    tensor parallel over that many of ``card``, joined by its ``link`` in cards.csv.

    A weight size below half a byte per weight and a context above the model's
    max_position_embeddings (named ``context_source``) are refused (:class:`InputError`).
    ``check_memory`` gives the roofline the card's memory (cards.csv memory_gib), so that
    its own check refuses weights plus one stream, or weights plus ``free_bytes``, that do
    not fit (:class:`~claimcheck.physics.roofline.RooflineInputError`). With
    ``conv_state_dtype`` (the model dtype) S is :func:`state_bytes`, the conv state
    included, as for a measured step; without it S is the recurrent state alone."""
    check_context(geom, context_tokens, context_source)
    if cards > 1 and card.link_bytes_s is None:
        raise InputError("cards.csv", f"card {card.card} has no link bandwidth for "
                         f"{cards}-card tensor parallel", key="link_bw_gb_s")
    w_bytes, w_label, row = resolve_weights(weights, geom, weight_rows)
    state = state_dtype or (row.state_dtype if row else "fp32")
    kv = kv_dtype or (row.kv_dtype if row else "bf16")
    dtype = compute_dtype or COMPUTE_DTYPE.get((weights.format or "").lower(), "bf16")
    p_tflops, p_src = compute_ceiling(card, dtype, ceilings, ceiling_id=ceiling,
                                      power_limit_w=power_limit_w, tflops=tflops)
    m = rl.for_model(geom, weight_bytes=w_bytes, bandwidth_bytes_s=card.bandwidth_bytes_s,
                     tflops=p_tflops, eta=eta, state_dtype=state, kv_dtype=kv,
                     context_tokens=context_tokens, rows=rows, tau=tau, cards=cards,
                     link_bytes_s=card.link_bytes_s if cards > 1 else None,
                     memory_bytes=card.memory_gib * GIB if check_memory else None,
                     free_bytes=free_bytes)
    if conv_state_dtype is not None:  # S by the one rule (the memory checks run again)
        m = replace(m, state_bytes=state_bytes(geom, state, conv_state_dtype))
    sources = {"card": card.card, "bandwidth_gb_s": card.memory_bw_gb_s,
               "bandwidth_source": card.sources.get("source_bandwidth", "cards.csv"),
               "eta": eta, "weights": w_label, "weight_bytes": w_bytes, "tflops": p_tflops,
               "tflops_source": p_src, "compute_dtype": dtype, "state_dtype": state,
               "state_bytes_per_stream": m.state_bytes, "kv_dtype": kv,
               "kv_bytes_per_token": m.kv_bytes_per_token,
               "context_tokens_per_stream": context_tokens, "rows_verified_per_step": rows,
               "tokens_kept_per_step": tau, "flops_per_row": geom.flops_per_token}
    if conv_state_dtype is not None:
        sources["conv_state_dtype"] = conv_state_dtype
    if cards > 1:
        sources.update({"cards": cards, "link": card.link, "link_gb_s": card.link_bw_gb_s,
                        "link_source": card.sources.get("source_link", "cards.csv"),
                        "allreduce_bytes_per_row": m.allreduce_bytes_per_row})
    return m, sources


# --- the one physics check: every road to a roofline (CLI, notebook, presets, claims) ---

ENGINE_MEMORY_SHARE = 0.9
"""vLLM's default ``--gpu-memory-utilization``: the share of the card's memory the engine
takes; the rest (the engine's reserve) holds neither weights nor streams."""


@dataclass(frozen=True)
class Wall:
    """The memory wall: the most streams that fit beside the weights (on each card), the
    bytes free for them, the bytes one stream holds and where the free bytes came from."""

    streams: int
    free_bytes: float
    per_stream_bytes: float
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"memory_wall_streams": self.streams,
                "memory_wall_free_gib": self.free_bytes / GIB,
                "memory_wall_source": self.source}


def memory_wall(m: rl.Roofline, card: Card, *, free_bytes: float | None = None,
                free_source: str = "free_gib",
                memory_share: float = ENGINE_MEMORY_SHARE) -> Wall | None:
    """The memory wall of roofline ``m`` on ``card``: in ``free_bytes`` when given (named
    ``free_source``), else in the card's memory (cards.csv memory_gib) x ``memory_share``
    (the engine's reserve left out) less the weights (1/cards of them per card). None when
    a stream holds no memory (no wall). Weights that leave no room for one stream there are
    refused (:class:`~claimcheck.physics.roofline.RooflineInputError` on ``weight_bytes``)."""
    per = m.stream_memory_bytes / m.cards
    if per <= 0:
        return None
    if free_bytes is not None:
        free, source = free_bytes, free_source
    else:
        if not 0 < memory_share <= 1:
            raise ValueError(f"memory share must be in (0, 1], got {memory_share!r}")
        mem = card.memory_gib * GIB
        free = mem * memory_share - m.weight_bytes / m.cards
        share = (f" x {memory_share:g} (the engine's gpu_memory_utilization; the rest is "
                 "its reserve)" if memory_share < 1 else "")
        where = f"{card.card}'s {card.memory_gib:g} GiB{share}"
        source = f"{where} less the weights"
        if free < per:
            raise rl.RooflineInputError(
                "weight_bytes", f"{m.weight_bytes / m.cards / GIB:.2f} GiB of weights leave "
                f"{max(free, 0) / GIB:.2f} GiB for streams in {where}, less than one "
                f"stream's {per / MIB:.1f} MiB of state and KV")
    return Wall(streams=rl.memory_wall_streams(free, per, 0.0, 0.0), free_bytes=free,
                per_stream_bytes=per, source=source)


def past_wall_reason(wall: Wall, streams: int, context_tokens: float) -> str | None:
    """The words that refuse ``streams`` past the memory wall (None when they fit): one
    sentence every road prints, each adding how to draw them anyway."""
    if streams <= wall.streams:
        return None
    return (f"{streams:,} streams is past the memory wall: {wall.streams:,} streams of "
            f"{wall.per_stream_bytes / MIB:,.1f} MiB each (state and KV at "
            f"{context_tokens:g} tokens of context) fit in {wall.free_bytes / GIB:.2f} GiB "
            f"({wall.source})")


def fit_reason(e: rl.RooflineInputError, card: Card) -> str:
    """The words of a roofline memory refusal, with the registry column it read."""
    mem = f" ({card.card}: cards.csv memory_gib)" if e.field in ("weight_bytes",
                                                                 "free_bytes") else ""
    return f"{e}{mem}"
