"""The KV-read term carried from another card: its arithmetic.

Where a card has no KV-read steps of an engine
(:func:`~claimcheck.calibration.calibrate.kv_sources`) and no engine of its KV dtype on the
card lends its lines (:func:`~claimcheck.calibration.calibrate.borrowed_kv`), the engine's
own KV read on another card of the same GPU architecture (:func:`card_arch`; the card chosen
by :func:`~claimcheck.calibration.calibrate.carried_kv_card`) stands in: as a multiple of
the weights' bandwidth calibrated beside it on that card, times the weights' bandwidth
calibrated on this card. The attention kernel that reads the KV cache is the same build on
both cards (the architecture picks it), so its rate relative to the weights' stream is taken
to carry; the memory under both is not, which is why the ratio, not the rate, is carried.
Without it such an engine's KV is read at the weights' bandwidth
(:class:`~claimcheck.model.model.Calibration`): on the H100, before the BF16 engine's
admit-then-decode run there (2026-12-06), its context ladder was its only KV-read run on the
card, and with that run left out the ladder read 1.3-5.6% under on end to end, five steps
past 5% (docs/model.md, "The KV read carried between cards").
"""

from __future__ import annotations

from dataclasses import replace

from claimcheck.files.errors import InputError
from claimcheck.model import model as m
from claimcheck.physics.cardfiles import get_card


def card_arch(card: str) -> str | None:
    """The card's architecture from the cards file; None where none is on record."""
    try:
        return get_card(card).arch
    except (InputError, KeyError):
        return None


def carried_kv(cal: m.Calibration, src: m.Calibration, src_card: str) -> m.Calibration:
    """``cal`` with the KV read of ``src`` (the same engine's calibration on ``src_card``)
    carried: ``src``'s KV-read rate over its weights' bandwidth, times ``cal``'s weights'
    bandwidth, said so; ``cal`` unchanged where ``src`` measured no KV read."""
    if not src.kv_bandwidth_bytes_s:
        return cal
    ratio = src.kv_bandwidth_bytes_s / src.bandwidth_bytes_s
    rate = ratio * cal.bandwidth_bytes_s
    return replace(cal, kv_bandwidth_bytes_s=rate, kv_source=(
        f"carried from card {src_card} (the same engine, the same GPU architecture; none "
        f"measured on this card): {rate / 1e9:,.0f} GB/s, the KV read there "
        f"{src.kv_bandwidth_bytes_s / 1e9:,.0f} GB/s over its weights' "
        f"{src.bandwidth_bytes_s / 1e9:,.0f} GB/s (x{ratio:.3f}) times this card's weights' "
        f"{cal.bandwidth_bytes_s / 1e9:,.0f} GB/s; there: {src.kv_source}"))
