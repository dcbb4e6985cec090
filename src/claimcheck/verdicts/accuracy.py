"""The model's comparisons with a measurement: its error, and whether that is within the
tolerance (pure arithmetic; every table, figure, paragraph and verify run calls these)."""

from __future__ import annotations

from claimcheck.verdicts.verdicts import TOLERANCE


def error(predicted: float | None, measured: float | None) -> float | None:
    """predicted / measured - 1, a fraction (+0.05: the prediction is 5% above the
    measurement); None when either is missing or zero (nothing to compare)."""
    return predicted / measured - 1 if predicted and measured else None


def within(err: float | None, tolerance: float = TOLERANCE) -> bool:
    """Whether an error (a fraction) is within ``tolerance`` either way; None (no such
    aggregate, as a held prefill's decode) is no miss."""
    return err is None or abs(err) <= tolerance


def within_both(e2e_err: float | None, decode_err: float | None,
                tolerance: float = TOLERANCE) -> bool:
    """The model's hit on a step: its end-to-end error known and within ``tolerance``, and
    its decode error within it (or none: a held prefill)."""
    return e2e_err is not None and within(e2e_err, tolerance) and within(decode_err, tolerance)
