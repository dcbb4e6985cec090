"""The one figure style of the project: fonts, sizes, colours, source line, byte-stable saving.

Every figure is drawn with :func:`apply` in force and saved with :func:`save`, which
writes PNG and SVG with no timestamps or software stamps and a fixed SVG hash salt, so
the same inputs give the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

INK = "#222222"
MUTED = "#777777"
GRID = "#e6e6e6"
# Okabe-Ito, colour-blind safe; assigned in this order.
# Then Tol's muted set; 16 colours, so that no two of the 15 metric labels share one.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000", "#999999", "#882255", "#44AA99", "#117733", "#332288", "#AA4499",
           "#999933", "#661100"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


def colours(names: list[str]) -> dict[str, str]:
    """One palette colour per name, in order; more names than colours is an error (two
    categories must never share a colour)."""
    if len(names) > len(PALETTE):
        raise ValueError(f"{len(names)} categories for {len(PALETTE)} palette colours")
    return {n: PALETTE[i] for i, n in enumerate(names)}

STYLE = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "grid.linewidth": 0.6,
    "xtick.color": INK,
    "ytick.color": INK,
    "legend.frameon": False,
    "legend.fontsize": 7.5,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "svg.hashsalt": "claimcheck",
    "svg.fonttype": "path",
    "path.simplify": True,
}


def apply() -> None:
    """Put the project style in force."""
    plt.rcdefaults()
    plt.rcParams.update(STYLE)


def new(width_in: float = 7.0, height_in: float = 4.2, ncols: int = 1):
    """A styled figure with ``ncols`` axes side by side."""
    apply()
    fig, axes = plt.subplots(1, ncols, figsize=(width_in, height_in))
    return fig, axes


def source_line(fig, text: str) -> None:
    """The small grey 'Source: ...' line under every figure."""
    fig.text(0.0, -0.02, f"Source: {text}", fontsize=6.5, color=MUTED, ha="left", va="top",
             wrap=True)


def save(fig, base: str | Path) -> list[Path]:
    """Write ``base``.png and ``base``.svg deterministically; return the paths."""
    base = Path(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    png, svg = base.with_suffix(".png"), base.with_suffix(".svg")
    fig.savefig(png, metadata={"Software": None})
    fig.savefig(svg, metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return [png, svg]


def notice(text: str, width_in: float = 7.0):
    """A figure holding only ``text``: what a run that measured nothing draws instead."""
    fig, ax = new(width_in, 1.4)
    ax.axis("off")
    ax.text(0.0, 0.5, text, fontsize=8, va="center", wrap=True)
    return fig
