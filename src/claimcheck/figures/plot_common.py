"""What the decode and context figures share: one colour per weight format, a
power-of-two streams axis and the η axis."""

from __future__ import annotations

import matplotlib.pyplot as plt

from claimcheck.figures import figstyle as fs

FORMAT_ORDER = ("bf16", "fp8")
"""Weight formats in colour order (others after them, alphabetically)."""


def format_colours(fmts: list[str]) -> dict[str, str]:
    """One palette colour per weight format, BF16 and FP8 first, the same in every figure."""
    known = [f for f in FORMAT_ORDER if f in fmts] + sorted(set(fmts) - set(FORMAT_ORDER))
    order = list(FORMAT_ORDER) + [f for f in known if f not in FORMAT_ORDER]
    return {f: fs.PALETTE[order.index(f)] for f in known}


def spaced_labels(ticks: list[float], ratio: float = 1.25) -> list[str]:
    """Labels for ``ticks`` on a log axis, "" for a tick less than ``ratio`` times the last
    labelled one (so no two labels run together), the largest always labelled (the one
    below it left blank instead): 8, 24, 40, 56, 64 -> "8", "24", "40", "", "64"."""
    ts = sorted(ticks)
    keep: list[int] = []
    for i, t in enumerate(ts):
        if not keep or t >= ts[keep[-1]] * ratio:
            keep.append(i)
        elif i == len(ts) - 1:
            keep[-1] = i
    return [f"{t:,}" if i in keep else "" for i, t in enumerate(ts)]


def pow2_axis(ax, lo: float, hi: float) -> None:
    """A log-2 streams axis from ``lo`` to ``hi``: ticks at the powers of two between them."""
    ticks = [2 ** i for i in range(0, 12) if lo <= 2 ** i <= hi]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(lo / 1.25, hi * 1.25)


def eta_axis(ax, title: str) -> None:
    """An η axis (all streams decoding over the bandwidth line) from 0 to 100%."""
    ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.set_ylabel("η: all streams decoding ÷ bandwidth line")
    ax.set_title(title, loc="left")
