"""The Update body's named values of each weight format's share of its bandwidth line
(:mod:`claimcheck.update.template`): its median η and span, the format of lowest η against
the next larger weights, and a format also run on another kernel (``w4a16:machete``,
:func:`claimcheck.findings.stepframe.series_format`). Pure: the step frame in, values out."""

from __future__ import annotations

import pandas as pd

from claimcheck.findings.stepframe import (
    INT8_SEP,
    KERNEL_SEP,
    decode_levels,
    fmt_name,
    kernel_parts,
    main_context,
)
from claimcheck.physics.formats import KERNEL_ARCH, KERNEL_PATH
from claimcheck.update.template import Value, flag, num, word

PCT = "{:.0%}"


def step(g: pd.DataFrame, k: float) -> float:
    """The step (ms) at ``k`` streams of a format's levels by streams: k x 1000 / tok/s."""
    return float(k * 1000 / g.loc[k, "decode"])


def steps_of(d: pd.DataFrame, x: str, y: str
             ) -> tuple[pd.DataFrame, pd.DataFrame, float] | None:
    """Formats ``x`` and ``y``'s levels by streams and the most streams both ran; None
    where they do not both have one stream."""
    a, b = (d[d["weight_format"] == k].set_index("streams") for k in (x, y))
    both = a.index.intersection(b.index)
    return (a, b, max(both)) if 1 in both else None


def share_values(f: pd.DataFrame) -> list[Value]:
    """Each format's median η at its main context and the streams it spans (a format on a
    kernel other than the claim cards' is :func:`alt_values`')."""
    src = "runs.csv, steps where every stream decodes"
    d = main_context(decode_levels(f))
    out = []
    for fm, g in d.groupby("weight_format"):
        if KERNEL_SEP in str(fm):  # a format on another kernel: alt_values
            continue
        out += [num(f"share.{fm}.eta", g["share"].median(), "fraction", src, PCT),
                num(f"share.{fm}.top", g["streams"].max(), "streams", src, "{:,.0f}"),
                num(f"share.{fm}.context", g["context_tokens_per_stream"].iloc[0], "tokens",
                    src, "{:,.0f}"),
                word(f"share.{fm}.name", fmt_name(fm), src)]
    return out


LOW = ("share.low.name", "share.low.eta", "share.low.top", "share.low.one_ms",
       "share.low.top_ms", "share.low.vs", "share.low.vs_one_ms", "share.low.vs_top_ms",
       "share.low.kernel", "share.low.kernel_arch")


def low_values(f: pd.DataFrame) -> list[Value]:
    """With three or more weight formats at their main context: the one of lowest median η,
    its step (streams x 1000 / tok/s summed while every stream decodes) at one stream and
    at its most streams, against the format of the next larger weights at the same streams;
    ``share.low.has`` where its weights are smaller and its step at the most streams longer
    (it moves fewer bytes, yet steps slower); ``share.low.foreign`` where the format's
    kernel (:data:`claimcheck.physics.formats.KERNEL_PATH`) was built for other architectures
    than the card's (the carried model then takes none of its runs)."""
    from claimcheck.physics.cardfiles import load_cards
    from claimcheck.predict.kernelwords import foreign_kernel
    src = "runs.csv, steps where every stream decodes"
    d = main_context(decode_levels(f))
    d = d[~d["weight_format"].astype(str).str.contains(KERNEL_SEP, regex=False)]
    med = d.groupby("weight_format")["share"].median()
    none = [flag("share.low.has", False, src), flag("share.low.foreign", False, src)] + [
        Value(n, None, "", "", src) for n in LOW]
    if len(med) < 3:
        return none
    low = str(med.idxmin())
    wb = d.groupby("weight_format")["weight_bytes"].median()
    bigger = wb[wb > wb[low]]
    if bigger.empty:
        return none
    vs = str(bigger.idxmin())
    pair = steps_of(d, low, vs)
    if pair is None:
        return none
    a, b, n = pair
    holds = step(a, n) > step(b, n)
    kernel = KERNEL_PATH.get(low)
    card = load_cards().get(str(f["card"].iloc[0]))  # a card of one's own: arch unknown
    foreign = card is not None and foreign_kernel(low, card.arch, card.name) is not None
    return [flag("share.low.has", holds, src),
            flag("share.low.foreign", holds and foreign, "data/raw/cards.csv arch, "
                 "physics.formats.KERNEL_ARCH"),
            word("share.low.kernel", (kernel or "its kernel").capitalize(), src),
            word("share.low.kernel_arch", " and ".join(
                x.capitalize() for x in KERNEL_ARCH.get(kernel or "", ())) or None,
                 "physics.formats.KERNEL_ARCH"),
            word("share.low.name", fmt_name(low), src),
            num("share.low.eta", med[low], "fraction", src, PCT),
            num("share.low.top", n, "streams", src, "{:,.0f}"),
            num("share.low.one_ms", step(a, 1), "ms", src, "{:.1f}"),
            num("share.low.top_ms", step(a, n), "ms", src, "{:.1f}"),
            word("share.low.vs", fmt_name(vs), src),
            num("share.low.vs_one_ms", step(b, 1), "ms", src, "{:.1f}"),
            num("share.low.vs_top_ms", step(b, n), "ms", src, "{:.1f}")]


ALT = ("name", "kernel", "eta", "top", "one_ms", "top_ms", "base", "base_kernel",
       "base_one_ms", "base_top_ms")
ALT_SLOTS = ("share.alt", "share.alt2")
"""The Update's sentences on a weight format run on other kernels, one slot each."""


def _kernel_words(kernel: str) -> str:
    """"machete": "Machete kernels"; "humming+int8": "Humming kernels with int8
    activations on the MLP"."""
    k, int8 = kernel_parts(kernel)
    return f"{k.capitalize()} kernels" + (" with int8 activations on the MLP" if int8 else "")


def alt_values(f: pd.DataFrame) -> list[Value]:
    """Each weight format also run on a kernel other than the claim cards'
    (:func:`~claimcheck.findings.stepframe.series_format`; those without int8 activations
    first, then by name), one per slot of :data:`ALT_SLOTS`: its median η at its main
    context and its step at one stream and at the most streams both kernels ran, against
    the same format on the claim cards' kernel; ``<slot>.has`` where both have one
    stream."""
    src = "runs.csv, steps where every stream decodes"
    d = main_context(decode_levels(f))
    alts = sorted((str(x) for x in d["weight_format"].unique() if KERNEL_SEP in str(x)),
                  key=lambda x: (INT8_SEP in x, x))
    out: list[Value] = []
    for i, slot in enumerate(ALT_SLOTS):
        out += _alt(d, alts[i] if i < len(alts) else None, slot, src)
    return out


def _alt(d: pd.DataFrame, alt: str | None, slot: str, src: str) -> list[Value]:
    none = [flag(f"{slot}.has", False, src)] + [Value(f"{slot}.{n}", None, "", "", src)
                                                for n in ALT]
    if alt is None:
        return none
    base, _, kernel = alt.partition(KERNEL_SEP)
    pair = steps_of(d, alt, base)
    if pair is None:
        return none
    a, b, n = pair
    return [flag(f"{slot}.has", True, src),
            word(f"{slot}.name", fmt_name(base), src),
            word(f"{slot}.kernel", _kernel_words(kernel), src),
            num(f"{slot}.eta", a["share"].median(), "fraction", src, PCT),
            num(f"{slot}.top", n, "streams", src, "{:,.0f}"),
            num(f"{slot}.one_ms", step(a, 1), "ms", src, "{:.1f}"),
            num(f"{slot}.top_ms", step(a, n), "ms", src, "{:.1f}"),
            word(f"{slot}.base", fmt_name(base), src),
            word(f"{slot}.base_kernel", (KERNEL_PATH.get(base) or "its kernel").capitalize(),
                 src),
            num(f"{slot}.base_one_ms", step(b, 1), "ms", src, "{:.1f}"),
            num(f"{slot}.base_top_ms", step(b, n), "ms", src, "{:.1f}")]
