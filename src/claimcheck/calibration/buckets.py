"""The row buckets of an engine's GEMM on its card (:data:`~claimcheck.physics.formats.
KERNEL_ROW_BUCKETS`), which the decode-row factors are read within
(:func:`~claimcheck.model.simulator.decode_row_factor`)."""

from __future__ import annotations

from claimcheck.calibration.choice import Choice
from claimcheck.physics.cardfiles import get_card
from claimcheck.physics.formats import KERNEL_ROW_BUCKETS, RowBuckets


def kernel_buckets(choice: Choice, user_cards: str | None = None) -> RowBuckets | None:
    """The row buckets of the engine's GEMM on the choice's card (its bandwidth run's start
    log names the kernel, :data:`~claimcheck.physics.formats.KERNEL_ROW_BUCKETS` its
    buckets), where they are on record for the card's architecture; else None."""
    b = KERNEL_ROW_BUCKETS.get(choice.bandwidth.run.gemm_kernel or "")
    if b is None or get_card(choice.card, user_path=user_cards).arch not in b.arches:
        return None
    return b


def bucket_words(b: RowBuckets) -> str:
    """How the decode-row factors are read within the GEMM's row buckets ``b``, and from
    where."""
    return (f"read within the row buckets of the engine's GEMM ({b.words()} rows; {b.source}): "
            "below a bucket's fewest measured count that count's factor, across buckets only "
            "where a bucket has none")
