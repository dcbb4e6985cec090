"""The speculation figure (figures/speculation.{png,svg}): for each drafting claim (more
than one row verified per stream) the tokens it must keep per stream per step (tau needed)
against the rows it verifies per stream, from data/derived/verdicts.csv
(``verify_rows_per_stream`` to ``verify_rows_high`` and ``tau_needed`` to ``tau_needed_high``
where the drafter's size is a range; the tokens kept its source states, where it states one,
as an open marker), with the forced-acceptance runs of data/derived/speculation.csv on it
(their verify rows and tokens kept: one marker per run and rows, its stream counts in the
legend). Deterministic: claims in id order, the project's one style
(:mod:`claimcheck.figures.figstyle`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from claimcheck.figures import figstyle


def _f(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


def speculation_figure(verdicts: pd.DataFrame, spec: pd.DataFrame):
    """The figure from the two tables (file names in the source line)."""
    fig, ax = figstyle.new(7.0, 4.4)
    rows = verdicts["verify_rows_per_stream"].map(_f)
    d = verdicts[(rows > 1) & verdicts["tau_needed"].map(_f).notna()].sort_values("id")
    cards = sorted(d["card"].astype(str).unique()) if "card" in d else []
    col = figstyle.colours(cards)
    seen: set[str] = set()
    for _, r in d.iterrows():
        x0, y0 = _f(r["verify_rows_per_stream"]), _f(r["tau_needed"])
        x1 = _f(r.get("verify_rows_high")) or x0
        y1 = _f(r.get("tau_needed_high")) or y0
        c = col.get(str(r.get("card")), figstyle.INK)
        label = None if str(r.get("card")) in seen else f"claim on {r.get('card')}"
        seen.add(str(r.get("card")))
        if x1 != x0 or y1 != y0:
            ax.plot([x0, x1], [y0, y1], color=c, lw=0.8, alpha=0.6)
        ax.plot([x0], [y0], marker="o", ms=4, color=c, ls="none", label=label)
        kept = _f(r.get("tokens_kept_stated"))
        if kept is not None:
            ax.plot([x0], [kept], marker="o", ms=6, mfc="none", color=c, ls="none",
                    label=None if "stated" in seen else "tokens kept its source states")
            seen.add("stated")
    rows_max = max([_f(x) or 1 for x in d.get("verify_rows_high", [])] +
                   [_f(x) or 1 for x in d["verify_rows_per_stream"]] + [2])
    ax.plot([1, rows_max], [1, rows_max], color=figstyle.MUTED, lw=0.8, ls=":",
            label="every draft kept (tokens kept = rows)")
    for (_run, rows), g in spec.groupby(["run", "verify_rows_per_stream"], sort=True):
        kept = g["tokens_kept_per_verify"].astype(float)
        streams = ", ".join(str(int(b)) for b in sorted(g["streams"]))
        # every stream count at the same rows and (forced) tokens kept: one marker, all said
        said = (f"{kept.min():.2f}" if round(kept.min(), 2) == round(kept.max(), 2) else
                f"{kept.min():.2f}-{kept.max():.2f}")
        ax.plot(g["verify_rows_per_stream"], kept, marker="*", ms=11, ls="none",
                color=figstyle.INK, label=f"H200 run, {streams} streams: {int(rows)} rows, "
                f"{said} kept (forced)")
    ax.set_xlabel("rows verified per stream per step (drafted tokens + 1)")
    ax.set_ylabel("tokens kept per stream per step")
    ax.set_title("Tokens each stream must keep, against the rows it verifies")
    ax.legend(fontsize=6.5, loc="upper left", ncols=2)
    runs = ", ".join(sorted(spec["run"].unique())) if len(spec) else "none"
    forced = [f"{int(r)} rows, {float(k):g} tokens kept" for r, k in sorted(
        {(int(a), round(float(b), 1)) for a, b in
         zip(spec["verify_rows_per_stream"], spec["tokens_kept_per_verify"], strict=True)},
        reverse=True)] if len(spec) else []
    stars = ("Stars: the H200 drafting runs (dummy weights), acceptance forced at "
             + "; ".join(forced) + " per verify. " if len(forced) > 1 else
             f"Star: the H200 drafting run (dummy weights), acceptance forced at "
             f"{forced[0]} per verify. " if forced else "")
    figstyle.caption_and_source(
        fig, "Filled: the tokens kept per verify each drafting claim needs on its own card "
             "at its stated verify rows (a line: the range over the drafter's documented "
             "sizes). Open circle: the tokens kept its source states. " + stars
             + "Above the dotted line no drafter can reach.",
        f"data/derived/verdicts.csv (verify_rows_per_stream, tau_needed); "
        f"data/derived/speculation.csv ({runs})")
    return fig
