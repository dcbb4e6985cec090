"""The two figures of one card's runs that carry the Update's findings: decode against each
weight format's bandwidth line (the main result) and what long prompts cost.

Every measured number comes from :mod:`claimcheck.findings.stepframe` (the step frame) and
the findings (the bandwidth-share and long-prompt findings' rows, the state crossover),
the same numbers the findings paragraph and the body's tables print; every bandwidth line from
:func:`claimcheck.runs.tables.step_roofline`, the function that gave each step its
``roofline_tok_s``. Units: tok/s, streams, tokens of context per stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from claimcheck.physics.cards import Card, Ceiling
from claimcheck.physics.geometry import Geometry
from claimcheck.figures import decode_plots
from claimcheck.findings import engine_version as EV
from claimcheck.findings import findings as F
from claimcheck.findings import findings_decode as FD
from claimcheck.findings import stepframe as SF
from claimcheck.calibration.layout import run_version
from claimcheck.runs.tables import step_roofline
from claimcheck.findings.update_tables import runs_words
from claimcheck.runs.run import Run

MAX_STREAMS = 256
"""The decode figure's stream axis ends here (the bend runs' last level that all ran)."""


@dataclass(frozen=True)
class FormatPanel:
    """One weight format at one context: the measured levels (streams, tok/s summed while
    every stream decodes, share of the line), its bandwidth line (streams, tok/s at η = 1)
    and its η band over all its levels (lowest and highest share)."""

    fmt: str
    points: list[tuple[float, float, float]]
    line: list[tuple[int, float]]
    eta_band: tuple[float, float]


@dataclass(frozen=True)
class DecodePanels:
    """The decode figure's data: per context per stream, one :class:`FormatPanel` per
    format; the streams where each format's state read and written passes its weights; the
    runs the levels come from."""

    panels: dict[int, list[FormatPanel]]
    crossover: dict[str, float]
    runs: list[str] = field(default_factory=list)


MAIN = "main"
"""``card_frame``'s release: the vLLM release with the most steps on the card."""


def card_frame(runs: list[Run], card: str, release: str | None = MAIN
               ) -> tuple[list[Run], pd.DataFrame]:
    """One card's plain runs (a drafting engine's are read apart: :attr:`Run.drafts`)
    and the findings' step frame of their step tables, of one vLLM release: by default the
    one with the most steps there (:func:`engine_version.main_version`; the findings and
    their figures read one release), else ``release``; None keeps every release."""
    runs = [r for r in runs if r.provenance.card == card and not r.drafts]
    frame = SF.step_frame(pd.DataFrame([s for r in runs for s in r.rows]),
                          SF.engine_rows(runs))
    if release is None:
        return runs, frame
    v = EV.main_version(frame) if release == MAIN else release
    return ([r for r in runs if v is None or run_version(r) == v], EV.of_version(frame, v))


def release_words(runs: list[Run], used: list[str]) -> str:
    """The vLLM release(s) of the runs ``used`` in words, for a figure's source line."""
    vs = sorted({str(run_version(r)) for r in runs if r.name in set(used)})
    return "vLLM " + " and ".join(vs) if vs else "vLLM release not recorded"


def figure_contexts(d: pd.DataFrame) -> list[int]:
    """The contexts the decode figure draws, as the body's first table chooses them: each
    format's main context (:func:`claimcheck.findings.stepframe.main_context`) and the long
    context beside it (:func:`claimcheck.findings.stepframe.long_context`)."""
    main = set(SF.main_context(d)["context_tokens_per_stream"])
    long = SF.long_context(d)
    return sorted(int(c) for c in main | ({long} if long is not None else set()))


def line_streams(top: float) -> list[int]:
    """Stream counts for a line from 1 to the power of two at or above ``top``."""
    end = 1
    while end < top:
        end *= 2
    return list(range(1, min(end, MAX_STREAMS) + 1))


def bandwidth_line(run: Run, context: int, streams: list[int], geom: Geometry, card: Card,
                   ceilings: dict[str, Ceiling] | None = None) -> list[tuple[int, float]]:
    """The plain roofline (η = 1) of ``run``'s engine at ``context`` tokens per stream, at
    each of ``streams``: (streams, tok/s summed over them)."""
    return [(n, step_roofline(run, {"streams": n, "context_tokens_per_stream": context},
                              geom, card, ceilings)["roofline_tok_s"]) for n in streams]


def decode_panels(runs: list[Run], card: str, geom: Geometry,
                  cards: dict[str, Card], ceilings: dict[str, Ceiling] | None = None
                  ) -> DecodePanels:
    """The decode figure's data for one card (``card``: its registry name): the levels of
    the bandwidth-share finding at the contexts of :func:`figure_contexts`, each format's
    line drawn from one of its runs, its η band and the state crossover."""
    runs, frame = card_frame(runs, card)
    share = FD.bandwidth_share(frame)
    if not share.rows:
        return DecodePanels({}, {})
    d = pd.DataFrame(share.rows)
    by_name = {r.name: r for r in runs}
    panels: dict[int, list[FormatPanel]] = {}
    for ctx in figure_contexts(d):
        at = d[d["context_tokens_per_stream"] == ctx]
        top = at["streams"].max()
        for fm, g in sorted(at.groupby("weight_format")):
            run = by_name[sorted(g["runs"].iloc[0].split(", "))[0]]
            panels.setdefault(ctx, []).append(FormatPanel(
                fm, [(r.streams, r.decode, r.share) for r in g.sort_values("streams")
                     .itertuples()],
                bandwidth_line(run, ctx, line_streams(top), geom, cards[card], ceilings),
                (float(g["share"].min()), float(g["share"].max()))))  # this context's band
    drawn = d[d["context_tokens_per_stream"].isin(list(panels))]
    used = sorted({n for r in drawn["runs"] for n in str(r).split(", ")})
    return DecodePanels(panels, FD.state_crossover(frame), used)


def decode_figure(runs: list[Run], card: str, geom: Geometry,
                  cards: dict[str, Card], ceilings: dict[str, Ceiling] | None = None,
                  model_name: str = "the model", source: str = "") -> Any:
    """The main result: measured decode of each weight format against its bandwidth line
    and its η band, one panel per context, the state crossover marked."""
    p = decode_panels(runs, card, geom, cards, ceilings)
    c = cards[card]
    fms = sorted({fp.fmt for ps in p.panels.values() for fp in ps})
    bases = list(dict.fromkeys(str(f).partition(SF.KERNEL_SEP)[0] for f in fms))
    formats = SF.and_list([SF.fmt_name(f) for f in bases]) if fms else "no format"
    caption = (f"Bandwidth line (plain roofline, η = 1): the tok/s the {c.name}'s "
               f"{c.memory_bw_gb_s:,.0f} GB/s datasheet bandwidth allows if each step moves "
               "the weights once, each stream's recurrent state twice (read and written) "
               "and its KV cache once, every stream keeping one token per step. η: the "
               "share of that line a step reaches; the shaded band runs from each format's "
               "lowest to its highest η at the panel's own context. Measured: tok/s summed "
               "while every stream decodes, the median of each level over its runs, each "
               "run giving the pass its protocol reports. Dotted: the streams at which the "
               "recurrent state read and written equals the weights (from the geometry).")
    return decode_plots.decode_lines_figure(
        p.panels, p.crossover,
        title=f"{model_name} decode on one {c.name}: {formats} (dummy weights)",
        caption=caption,
        source=(f"{len(p.runs)} runs in data/raw/runs on the {c.name} (dummy weights: "
                f"random values, the real geometry; {release_words(runs, p.runs)}), read "
                "through data/derived/runs/*.json; "
                "lines from the model's config.json, each engine's own weights, state and "
                "KV bytes and data/raw/cards.csv; levels at other contexts are in the "
                "appendix; runs drawn: " + runs_words(p.runs) + source))


def long_rows(runs: list[Run], card: str) -> list[dict[str, Any]]:
    """The long-prompt finding's levels for one card (per format and streams: all streams
    decoding, streams x 1000 / mean TPOT, end to end, tok/s summed; η of all streams
    decoding and short prompts' η at the same streams)."""
    _, frame = card_frame(runs, card)
    return F.long_prompts(frame).rows


def long_figure(runs: list[Run], card: str, card_name: str) -> Any:
    """What long prompts cost: the long-prompt finding's three readings of the same steps
    against streams, and all streams decoding's η against short prompts'."""
    rows = long_rows(runs, card)
    if not rows:
        from claimcheck.figures import figstyle
        return figstyle.notice(f"No multi-wave long-prompt step with every stream decoding "
                               f"on the {card_name}: nothing to draw.")
    r0 = rows[0]
    used = sorted({n for r in rows for n in str(r["runs"]).split(", ")})
    return decode_plots.long_prompts_figure(
        rows,
        title=(f"Long prompts on one {card_name}: {r0['input_len']:,.0f} in, "
               f"{r0['output_len']:,.0f} out (dummy weights)"),
        caption=("All streams decoding: tok/s summed over the window in which every stream "
                 "decodes (the last request's first token to the first request's last). "
                 "Streams × 1000 / mean TPOT: the published reading of the same steps, whose "
                 "mean TPOT takes in the steps a later request's prefill shares. End to end: "
                 "all output tokens / wall time, prefill, ramp and tail in. "
                 f"{r0['waves']:.0f} requests per stream, so a second wave's prefills land "
                 "on the first wave's decode. η: the share of the bandwidth line (plain "
                 "roofline, η = 1) a step reaches; short prompts: the median η of the "
                 "short-prompt levels with every stream decoding at the same streams and "
                 "format. Each point the median of its level over its runs, each run "
                 "giving the pass its protocol reports."),
        source=("runs " + runs_words(used) + f" (dummy weights, {release_words(runs, used)}) "
                "in data/raw/runs, read through data/derived/runs/*.json"))
