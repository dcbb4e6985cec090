"""The one figure style of the project: fonts, sizes, colours, source line, byte-stable saving.

Every figure is drawn with :func:`apply` in force and saved with :func:`save`, which
writes PNG and SVG with no timestamps or software stamps and a fixed SVG hash salt, so
the same inputs give the same bytes.
"""

from __future__ import annotations

import textwrap
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


# Average DejaVu Sans character width as a fraction of the font size: sets how many
# characters of small text fit across a figure (wrapping by count, not by drawn extent).
CHAR_WIDTH_EM = 0.6
SOURCE_FONT_PT = 6.5


def wrap(text: str, width_in: float, font_pt: float) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``font_pt`` points (by
    character count; existing line breaks kept). Cheaper than matplotlib's ``wrap=True``,
    which measures every candidate line at every draw."""
    n = max(20, int(width_in * 72 / (font_pt * CHAR_WIDTH_EM)))
    return "\n".join("\n".join(textwrap.wrap(line, n)) or line for line in text.split("\n"))


def source_line(fig, text: str) -> None:
    """The small grey 'Source: ...' line under every figure, wrapped to the figure's width."""
    fig.text(0.0, -0.02, wrap(f"Source: {text}", fig.get_figwidth(), SOURCE_FONT_PT),
             fontsize=SOURCE_FONT_PT, color=MUTED, ha="left", va="top")


def tight_bbox(fig):
    """The figure's tight bounding box (inches, padded as ``savefig`` pads it), laid out once
    at the PNG's dpi so that both formats are saved from it without a second layout pass."""
    dpi = fig.dpi
    fig.set_dpi(plt.rcParams["savefig.dpi"])
    try:
        box = fig.get_tightbbox(fig.canvas.get_renderer())
    finally:
        fig.set_dpi(dpi)
    return box.padded(plt.rcParams["savefig.pad_inches"])


ARTICLE_FORMATS = ("png", "svg")
"""The article's figures (claim map, rooflines, verdicts, model): PNG and vector SVG."""
RUN_FORMATS = ("png",)
"""Per-run figures (definitions, measured): PNG only. Nothing links their SVG, and it cost
about 0.16 s a figure, two figures a run (measured 2026-12-01)."""


def save(fig, base: str | Path, formats: tuple[str, ...] = ARTICLE_FORMATS) -> list[Path]:
    """Write ``base``.png (and ``base``.svg when ``formats`` has it) deterministically;
    return the paths, PNG first."""
    base = Path(base)
    if base.suffix.lstrip(".") in ARTICLE_FORMATS:  # "x.png" names the base "x"
        base = base.with_suffix("")
    base.parent.mkdir(parents=True, exist_ok=True)
    box = tight_bbox(fig)
    out = []
    for fmt in formats:  # appended, not with_suffix: a run name may hold a dot ("2.5")
        path = base.with_name(f"{base.name}.{fmt}")
        meta = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
        fig.savefig(path, metadata=meta, bbox_inches=box)
        out.append(path)
    plt.close(fig)
    return out


def notice(text: str, width_in: float = 7.0):
    """A figure holding only ``text``: what a run that measured nothing draws instead."""
    fig, ax = new(width_in, 1.4)
    ax.axis("off")
    ax.text(0.0, 0.5, wrap(text, width_in, 8), fontsize=8, va="center")
    return fig


CAPTION_FONT_PT = 7.0


def caption_and_source(fig, caption: str, source: str) -> None:
    """A caption (what the figure's words mean, in ink) over the grey source line, both
    wrapped to the figure's width, under the axes."""
    text = wrap(caption, fig.get_figwidth(), CAPTION_FONT_PT)
    fig.text(0.0, -0.02, text, fontsize=CAPTION_FONT_PT, color=INK, ha="left", va="top")
    lines = text.count("\n") + 1
    # below the caption: its lines at 1.25 x the font size, in figure fractions
    y = -0.02 - lines * CAPTION_FONT_PT * 1.25 / 72 / fig.get_figheight() - 0.01
    fig.text(0.0, y, wrap(f"Source: {source}", fig.get_figwidth(), SOURCE_FONT_PT),
             fontsize=SOURCE_FONT_PT, color=MUTED, ha="left", va="top")
