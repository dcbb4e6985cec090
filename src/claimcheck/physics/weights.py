"""Weight bytes a decode step can read, from a measured size (GB or GiB) or a format.

For a mixture of experts this is every expert (as the checkpoint holds them); how much of
it one step reads at B streams is the roofline's business (:mod:`claimcheck.physics.roofline`).
"""

from __future__ import annotations

import math

from claimcheck.files.errors import InputError
from claimcheck.physics.formats import weight_format
from claimcheck.physics.geometry import Geometry
from claimcheck.physics.units import GB, GIB

# The fewest bytes a checkpoint stores per weight: 4-bit formats (W4A16, NVFP4) hold 0.5
# byte per weight plus their scales; less cannot be the model's weights.
MIN_BYTES_PER_WEIGHT = 0.5


def check_bytes_per_weight(geom: Geometry, n_bytes: float, source: str,
                           key: str | None = None) -> None:
    """Refuse a weight size below :data:`MIN_BYTES_PER_WEIGHT` byte per weight a step can
    read (every expert of a MoE); ``source`` (and ``key``) name where the size came from."""
    n_w = geom.weights_all_experts
    if n_bytes < MIN_BYTES_PER_WEIGHT * n_w:
        raise InputError(source, f"{n_bytes / GB:.2f} GB of weights is {n_bytes / n_w:.3f} "
                         f"byte per weight for the model's {n_w / 1e9:.2f} B weights; "
                         f"below {MIN_BYTES_PER_WEIGHT:g} byte (4-bit) no checkpoint holds "
                         f"them (at least {MIN_BYTES_PER_WEIGHT * n_w / GB:.2f} GB)", key=key)


def weight_bytes(geom: Geometry, *, gb: float | None = None, gib: float | None = None,
                 fmt: str | None = None) -> tuple[float, str]:
    """Bytes W and a label saying where they came from.

    Exactly one of ``gb`` (decimal, 1e9), ``gib`` (binary, 2**30) or ``fmt`` (a format
    applied to the weights a step can read: those touched per token, and for a MoE every
    routed expert) must be given. Sizes must be finite and > 0 (ValueError otherwise).
    """
    given = [x is not None for x in (gb, gib, fmt)]
    if sum(given) != 1:
        raise ValueError("give exactly one of weights in GB, weights in GiB, or a weight format")
    for unit, x in (("GB", gb), ("GiB", gib)):
        if x is not None and not (math.isfinite(x) and x > 0):
            raise ValueError(f"weights in {unit} must be a finite number > 0, got {x!r}")
    if gb is not None:
        return gb * GB, f"{gb:g} GB measured"
    if gib is not None:
        return gib * GIB, f"{gib:g} GiB measured ({gib * GIB / GB:.2f} GB)"
    wf = weight_format(fmt)  # type: ignore[arg-type]
    n_w = geom.weights_all_experts
    n = n_w * wf.bytes_per_weight
    what = "B weights"
    if geom.num_experts:
        what = (f"B weights (all {geom.num_experts} experts; "
                f"{geom.weights_per_token / 1e9:.2f} B per token)")
    return n, f"{fmt}: {n_w / 1e9:.2f} {what} x {wf.bytes_per_weight:g} B = {n / GB:.2f} GB"
