"""What the decode and context figures share: one colour per weight format and a
power-of-two streams axis."""

from __future__ import annotations

from claimcheck.report import figstyle as fs

FORMAT_ORDER = ("bf16", "fp8")
"""Weight formats in colour order (others after them, alphabetically)."""


def format_colours(fmts: list[str]) -> dict[str, str]:
    """One palette colour per weight format, BF16 and FP8 first, the same in every figure."""
    known = [f for f in FORMAT_ORDER if f in fmts] + sorted(set(fmts) - set(FORMAT_ORDER))
    order = list(FORMAT_ORDER) + [f for f in known if f not in FORMAT_ORDER]
    return {f: fs.PALETTE[order.index(f)] for f in known}


def pow2_axis(ax, lo: float, hi: float) -> None:
    """A log-2 streams axis from ``lo`` to ``hi``: ticks at the powers of two between them."""
    ticks = [2 ** i for i in range(0, 12) if lo <= 2 ** i <= hi]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(lo / 1.25, hi * 1.25)
