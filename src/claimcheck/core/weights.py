"""Weight bytes read per decode step, from a measured size (GB or GiB) or a format."""

from __future__ import annotations

from claimcheck.core.formats import weight_format
from claimcheck.core.geometry import Geometry
from claimcheck.core.units import GB, GIB


def weight_bytes(geom: Geometry, *, gb: float | None = None, gib: float | None = None,
                 fmt: str | None = None) -> tuple[float, str]:
    """Bytes W and a label saying where they came from.

    Exactly one of ``gb`` (decimal, 1e9), ``gib`` (binary, 2**30) or ``fmt`` (a format
    applied to the weights touched per token) must be given.
    """
    given = [x is not None for x in (gb, gib, fmt)]
    if sum(given) != 1:
        raise ValueError("give exactly one of weights in GB, weights in GiB, or a weight format")
    if gb is not None:
        return gb * GB, f"{gb:g} GB measured"
    if gib is not None:
        return gib * GIB, f"{gib:g} GiB measured ({gib * GIB / GB:.2f} GB)"
    wf = weight_format(fmt)  # type: ignore[arg-type]
    n = geom.weights_per_token * wf.bytes_per_weight
    return n, (f"{fmt}: {geom.weights_per_token / 1e9:.2f} B weights x "
               f"{wf.bytes_per_weight:g} B = {n / GB:.2f} GB")
