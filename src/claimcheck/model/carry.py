"""Terms that carry across cards: what a model measured on the local card becomes on
another card, by that card's datasheet. Pure arithmetic, no I/O.

Each term is a :class:`Term`: value, unit, the local runs it was measured in, the rule
that moved it and its status: ``measured`` (on the card it is used on), ``carried`` (a
measured share moved by the target card's datasheet) or ``assumed`` (no measurement of
this format, kernel or card stands behind it: the rule says what stands in).

The rules:

* **eta** (memory efficiency of a weight format's kernel path): a decode step of one stream
  moves ``bytes`` in ``bytes / (eta x BW) + t0`` seconds, ``t0`` the per-step fixed time
  (kernel launches, scheduler, sampler). :func:`fit_eta_step` fits eta and t0 by least
  squares on one-stream steps of two or more weight formats on the local card; on another
  card ``t_mem = bytes / (eta x BW_datasheet) + t0`` (:func:`carried_step_s`).
* **compute**: a share of the card's dense tensor rate at the kernel's compute precision,
  ``share = F_eff / F_dense``, carried as ``share x F_dense(new card) x clock ratio``.
* **power limit**: the memory clock does not move with the power limit (the H200's own
  telemetry: the same memory clock at every draw, its SM clock falling at the cap);
  a compute-bound kernel's SM clock at a cap goes as the cube root of the power
  (dynamic power ~ f V^2 with V ~ f): ratio = (P / P_default) ** (1/3)
  (:func:`power_clock_ratio`), applied to compute only.
* **int8 MLP prefill**: an engine with int8 activations on its MLP GEMMs multiplies a
  prompt's MLP FLOPs (a share ``f`` of the body's, from the geometry) at int8 and the rest
  at 16 bits. On the local card's int8 run, ``1/F_int8run = f/F_mlp + (1-f)/F_16``, with
  ``F_16`` the 16-bit path's measured rate (assumed the rest's), gives the MLP's rate
  ``F_mlp`` (:func:`int8_mlp_rate`); as a share of the dense int8 rate it is carried like
  compute, and a prompt on the other card runs at
  ``1 / (f/F_mlp' + (1-f)/F_16')`` (:func:`split_rate`), decode as well: vLLM applies a
  layer's quantization method on every forward pass.
* **KV read**: its share of the datasheet bandwidth, carried like eta.
* **per-request overhead, admission interval, t0**: host-side seconds, carried unchanged.
* **the bend**: the streams at which the compute term reaches the memory term
  (:func:`bend_streams`), derived from the carried terms; and how the two join near it, a
  decode step as ``(memory^p + compute^p)^(1/p)`` with p fitted on the local card's measured
  decode-row factors (:func:`fit_bend_exponent`), carried unchanged.
* **output lag** (a step's tokens reaching their clients during the next step): not
  carried; it is measured per engine and vLLM release on the local card, and a carried
  prediction sees each token at its step's end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from claimcheck.model.model import bend_seconds

STATUSES = ("measured", "carried", "assumed")


class CarryError(ValueError):
    """A carry rule refused its inputs; ``field`` names the input."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


@dataclass(frozen=True)
class Term:
    """One term of a carried model."""

    name: str
    value: float
    unit: str
    status: str
    source_runs: tuple[str, ...]
    rule: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise CarryError(f"Term.{self.name}.status", f"must be one of {STATUSES}, got "
                             f"{self.status!r}")
        if not (isinstance(self.value, (int, float)) and math.isfinite(self.value)):
            raise CarryError(f"Term.{self.name}.value", f"must be a finite number, got "
                             f"{self.value!r}")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["source_runs"] = list(self.source_runs)
        return d


def _positive(field: str, v: float) -> None:
    if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
        raise CarryError(field, f"must be a finite number > 0, got {v!r}")


def fit_eta_step(points: Sequence[tuple[float, float]], bandwidth_bytes_s: float
                 ) -> tuple[float, float]:
    """(eta, t0 s) from one-stream decode steps ``(bytes moved per step, step s)`` on a card
    of datasheet ``bandwidth_bytes_s``: the least-squares line ``s = bytes x k + t0``,
    eta = 1 / (k x BW). Needs two or more distinct byte counts; refuses a line whose eta is
    not in (0, 1] or whose t0 is negative (the points then say no such split)."""
    _positive("bandwidth_bytes_s", bandwidth_bytes_s)
    if len({round(b) for b, _ in points}) < 2:
        raise CarryError("points", "eta and the per-step time need one-stream steps of two "
                         f"or more byte counts, got {len(points)} point(s)")
    for b, s in points:
        _positive("points.bytes", b)
        _positive("points.step_s", s)
    n = len(points)
    mx = sum(b for b, _ in points) / n
    my = sum(s for _, s in points) / n
    k = (sum((b - mx) * (s - my) for b, s in points)
         / sum((b - mx) ** 2 for b, _ in points))
    t0 = my - k * mx
    if k <= 0:
        raise CarryError("points", f"step time does not grow with bytes (slope {k:g} s/B)")
    eta = 1.0 / (k * bandwidth_bytes_s)
    if not 0 < eta <= 1 or t0 < 0:
        raise CarryError("points", f"the line gives eta {eta:.3f} and t0 {t0 * 1e3:.2f} ms: "
                         "outside eta in (0, 1], t0 >= 0")
    return eta, t0


def carried_step_s(bytes_moved: float, eta: float, bandwidth_bytes_s: float,
                   t0_s: float) -> float:
    """A one-stream decode step on a card: bytes / (eta x BW) + t0, s."""
    _positive("bytes_moved", bytes_moved)
    _positive("eta", eta)
    _positive("bandwidth_bytes_s", bandwidth_bytes_s)
    return bytes_moved / (eta * bandwidth_bytes_s) + t0_s


def step_as_bytes(t0_s: float, eta: float, bandwidth_bytes_s: float) -> float:
    """The per-step fixed time as the bytes that take as long at eta x BW (so a model with
    no per-step term prices it in the weights' read): t0 x eta x BW."""
    if t0_s < 0:
        raise CarryError("t0_s", f"must be >= 0, got {t0_s!r}")
    return t0_s * eta * bandwidth_bytes_s


def share(effective: float, datasheet: float, field: str) -> float:
    """A measured rate as a share of the datasheet's: effective / datasheet."""
    _positive(f"{field}.effective", effective)
    _positive(f"{field}.datasheet", datasheet)
    return effective / datasheet


def share_at_rated_clock(share_measured: float, clock_mhz: float | None,
                         rated_clock_mhz: float | None) -> tuple[float, str]:
    """A compute share measured while the SM clock read ``clock_mhz`` moved to the clock
    the datasheet's rate is quoted at (``rated_clock_mhz``): share x rated / measured, as
    a tensor core's work per clock does not change with the clock; the share unchanged, said
    so, when either clock is unknown. With its words."""
    _positive("share", share_measured)
    if clock_mhz is None or rated_clock_mhz is None:
        why = ("no telemetry in the step" if clock_mhz is None
               else "the cards file gives no rated tensor clock")
        return share_measured, f"taken as at the rated clock ({why})"
    _positive("clock_mhz", clock_mhz)
    _positive("rated_clock_mhz", rated_clock_mhz)
    at = share_measured * rated_clock_mhz / clock_mhz
    return at, (f"{at:.3f} at the {rated_clock_mhz:,.0f} MHz its datasheet rate is quoted "
                f"at (x {rated_clock_mhz:,.0f} / {clock_mhz:,.0f})")


def int8_mlp_rate(measured_flops_s: float, rest_flops_s: float, mlp_fraction: float
                  ) -> float:
    """The MLP GEMMs' FLOP/s on an engine with int8 activations there, from its measured
    prefill rate over the whole body (``measured_flops_s``), the rate of the body's other
    FLOPs (``rest_flops_s``, the 16-bit path's) and the MLP's share of the body's FLOPs
    (``mlp_fraction``): f / (1/measured - (1-f)/rest). A :class:`CarryError` when the
    measured rate is no faster than the rest's share of it allows (the MLP would take no
    time or less)."""
    _positive("measured_flops_s", measured_flops_s)
    _positive("rest_flops_s", rest_flops_s)
    if not 0.0 < mlp_fraction <= 1.0:
        raise CarryError("mlp_fraction", f"must be in (0, 1], got {mlp_fraction!r}")
    left = 1.0 / measured_flops_s - (1.0 - mlp_fraction) / rest_flops_s
    if left <= 0:
        raise CarryError("measured_flops_s", f"{measured_flops_s:.4g} FLOP/s over the body "
                         f"leaves the MLP no time beside the rest at {rest_flops_s:.4g}")
    return mlp_fraction / left


def split_rate(mlp_fraction: float, mlp_flops_s: float, rest_flops_s: float) -> float:
    """A body's FLOP/s when a share ``mlp_fraction`` of its FLOPs runs at ``mlp_flops_s``
    and the rest at ``rest_flops_s``: 1 / (f/mlp + (1-f)/rest)."""
    _positive("mlp_flops_s", mlp_flops_s)
    _positive("rest_flops_s", rest_flops_s)
    if not 0.0 <= mlp_fraction <= 1.0:
        raise CarryError("mlp_fraction", f"must be in [0, 1], got {mlp_fraction!r}")
    return 1.0 / (mlp_fraction / mlp_flops_s + (1.0 - mlp_fraction) / rest_flops_s)


def power_clock_ratio(power_limit_w: float, default_power_w: float) -> float:
    """The SM clock at ``power_limit_w`` over its clock at the card's default limit for a
    kernel that holds the card at its cap: (P / P_default) ** (1/3)."""
    _positive("power_limit_w", power_limit_w)
    _positive("default_power_w", default_power_w)
    return (power_limit_w / default_power_w) ** (1.0 / 3.0)


def carried_rate(share_of_datasheet: float, datasheet: float, ratio: float = 1.0) -> float:
    """A share of the local card's datasheet rate moved to another card: share x the
    other card's datasheet rate x ``ratio`` (the power limit's clock ratio for compute)."""
    _positive("share", share_of_datasheet)
    _positive("datasheet", datasheet)
    _positive("ratio", ratio)
    return share_of_datasheet * datasheet * ratio


def bend_streams(weight_bytes: float, t0_s: float, state_bytes: float,
                 kv_bytes_per_stream: float, bandwidth_bytes_s: float,
                 flops_per_stream_step: float, flops_s: float) -> float | None:
    """Streams B where one decode step's compute B x f / F reaches its memory time
    W / BW + t0 + B x (2 S + KV) / BW; None when compute never catches up."""
    per = flops_per_stream_step / flops_s - (2 * state_bytes + kv_bytes_per_stream) \
        / bandwidth_bytes_s
    if per <= 0:
        return None
    return (weight_bytes / bandwidth_bytes_s + t0_s) / per


BEND_GRID = tuple(1.0 + 0.05 * i for i in range(181))
"""The exponents :func:`fit_bend_exponent` tries: 1 (memory and math in series) to 10
(within 0.1% of ``max(memory, compute)`` at equal terms) by 0.05."""


def bend_factor(ratio: float, p: float) -> float:
    """A step's time over ``max(memory, compute)`` when the smaller term is ``ratio`` x the
    larger and the two overlap as ``(m^p + c^p)^(1/p)``: ``(1 + ratio^p)^(1/p)``."""
    if not 0.0 <= ratio <= 1.0:
        raise CarryError("ratio", f"must be in [0, 1], got {ratio!r}")
    _positive("p", p)
    return bend_seconds(1.0, ratio, p)


def fit_bend_exponent(points: Sequence[tuple[float, float]]) -> float:
    """The exponent p of the bend ``(memory^p + compute^p)^(1/p)`` from decode steps
    ``(ratio, factor)``: the smaller of a step's modelled memory and compute times over the
    larger, and its measured time over the larger. Least squares on log factor over
    :data:`BEND_GRID` (the first of equal fits). Needs a step whose ratio is 0.3 or more,
    where the exponents differ by more than a step's noise (at 0.3, p = 2 gives x1.044 and
    p = 4 x1.002)."""
    if not points:
        raise CarryError("points", "the bend needs decode steps, got none")
    for r, f in points:
        if not 0.0 <= r <= 1.0:
            raise CarryError("points.ratio", f"must be in [0, 1], got {r!r}")
        _positive("points.factor", f)
    if max(r for r, _ in points) < 0.3:
        raise CarryError("points", "no step has its smaller term 0.3 or more of its larger "
                         f"(largest {max(r for r, _ in points):.2f}): the exponent is not "
                         "measured there")
    return min(BEND_GRID, key=lambda p: sum((math.log(f) - math.log(bend_factor(r, p))) ** 2
                                            for r, f in points))
