"""The row buckets of an engine's GEMM on its card (:data:`~claimcheck.physics.formats.
KERNEL_ROW_BUCKETS`), which the decode-row factors are read within
(:func:`~claimcheck.model.simulator.decode_row_factor`)."""

from __future__ import annotations

from dataclasses import replace

from claimcheck.calibration.choice import Choice
from claimcheck.model import model as m
from claimcheck.physics.cardfiles import get_card
from claimcheck.physics.formats import KERNEL_ROW_BUCKETS, RowBuckets


def _kernel_buckets(choice: Choice, user_cards: str | None) -> RowBuckets | None:
    """The row buckets of the engine's GEMM on the choice's card (its bandwidth run's start
    log names the kernel, :data:`~claimcheck.physics.formats.KERNEL_ROW_BUCKETS` its
    buckets), where they are on record for the card's architecture; else None."""
    b = KERNEL_ROW_BUCKETS.get(choice.bandwidth.run.gemm_kernel or "")
    if b is None or get_card(choice.card, user_path=user_cards).arch not in b.arches:
        return None
    return b


def row_buckets(cal: m.Calibration, choice: Choice, user_cards: str | None = None
                ) -> m.Calibration:
    """``cal`` with the GEMM's row buckets (``Calibration.row_buckets``) where the engine's
    kernel has them on the card's architecture (:func:`_kernel_buckets`)."""
    b = _kernel_buckets(choice, user_cards)
    return cal if b is None else replace(cal, row_buckets=b.bounds)


def bucket_words(choice: Choice) -> str:
    """How the decode-row factors are read within the GEMM's row buckets, and from where."""
    b = KERNEL_ROW_BUCKETS[choice.bandwidth.run.gemm_kernel or ""]
    return (f"read within the row buckets of the engine's GEMM ({b.words()} rows; {b.source}): "
            "below a bucket's fewest measured count that count's factor, across buckets only "
            "where a bucket has none")
