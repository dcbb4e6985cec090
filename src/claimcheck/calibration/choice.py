"""The typed record of one calibration's inputs: which measured steps each term of an
engine's model on a card comes from (:class:`Choice`), as
:mod:`claimcheck.calibration.calibrate` chooses them and
:mod:`claimcheck.calibration.calibration` works them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from claimcheck.calibration.picks import Pick

ROWS_ONE_WAVE, ROWS_LINES = "one-wave decode", "KV lines"
ROWS_CLOSED_LOOP = "closed-loop short-prompt"
"""The kinds of decode-row source steps (:attr:`Choice.rows_kind`), as the source is said."""


@dataclass(frozen=True)
class Choice:
    """The calibration inputs of one card + engine + weight format (see the module doc)."""

    card: str
    engine: str
    weight_format: Any
    bandwidth: Pick
    overhead: Pick
    compute: Pick | None
    compute_missing: str = ""
    """Why no compute step was chosen (then the datasheet fallback is used)."""
    compute_scale: float | None = None
    """None for a compute step on this card; for one carried from another card
    (:mod:`~claimcheck.calibration.computecarry`), the factor on its rate: this card's
    dense rate over that card's."""
    rows: tuple[Pick, ...] = ()
    """The decode-row term's source steps (:func:`row_sources`); empty: none measured."""
    admission: tuple[Pick, ...] = ()
    """The admission term's source steps (:func:`admission_sources`)."""
    kv: tuple[Pick, ...] = ()
    """The KV-read term's source steps (:func:`kv_sources`)."""
    rows_base: Choice | None = None
    """The calibration of the rows' own engine when it is not this one (the factors are
    that engine's measured step over its own model)."""
    kv_base: Choice | None = None
    """The KV steps' engine's calibration when not this one (:func:`borrowed_kv`): its KV
    rate and mixed-prefill factor are taken; or, on another card (``kv_base.card``), this
    engine's own there (:mod:`~claimcheck.calibration.kvcarry`): its KV rate's ratio to its
    weights' bandwidth is taken."""
    sequence: tuple[Pick, ...] = ()
    """The per-sequence prefill term's source steps (:func:`sequence_sources`): the
    engine's own admission steps, else its weight format's engines' on the card, whose
    walls it is fitted to."""
    rows_beyond: tuple[Pick, ...] = ()
    """The engine's own closed loops above the rows ``rows`` measured (:func:`beyond_rows`)."""
    cold: tuple[Pick, ...] = ()
    """The cold-start term's source steps (:func:`~.wavesources.cold_sources`)."""
    cold_base: tuple[Choice | None, ...] = ()
    """Per ``cold`` step, its engine's calibration (None: this engine's own)."""
    lag: tuple[Pick, ...] = ()
    """The output-lag term's source steps (:func:`~.wavesources.lag_sources`)."""
    lag_base: tuple[Choice | None, ...] = ()
    """Per ``lag`` step, its engine's calibration (None: this engine's own)."""
    rows_kind: str = ROWS_ONE_WAVE
    """What the ``rows`` steps are: one-wave decode steps (:func:`row_sources`), the
    engine's own KV lines (:data:`ROWS_LINES`, :func:`line_rows`; their intercepts,
    :func:`claimcheck.calibration.calibration.line_row_factors`) or its own closed-loop
    short-prompt steps (:data:`ROWS_CLOSED_LOOP`, :func:`closed_loop_rows`: no one-wave
    decode step of it or of its weight format)."""

    @property
    def rows_from_lines(self) -> bool:
        return self.rows_kind == ROWS_LINES

    @property
    def rows_closed_loop(self) -> bool:
        return self.rows_kind == ROWS_CLOSED_LOOP

    def steps(self) -> set[tuple[str, str]]:
        """(run name, step dir) of every step whose measured speed the calibration used,
        the decode-row and KV-read terms' sources included (the admission term's take only
        their send times, so their speeds remain a test of the model)."""
        picks = [self.bandwidth, self.overhead] + ([self.compute] if self.compute else [])
        return {(p.run.name, p.step.record["dir"])
                for p in picks + list(self.rows) + list(self.rows_beyond) + list(self.kv)
                + list(self.sequence) + list(self.cold) + list(self.lag)}

    def as_dict(self) -> dict[str, Any]:
        return {"bandwidth": self.bandwidth.as_dict(), "overhead": self.overhead.as_dict(),
                "compute": self.compute.as_dict() if self.compute else None,
                "compute_missing": self.compute_missing,
                "compute_scale": self.compute_scale,
                "rows": [p.as_dict() for p in self.rows + self.rows_beyond],
                "admission": [p.as_dict() for p in self.admission],
                "kv": [p.as_dict() for p in self.kv],
                "sequence": [p.as_dict() for p in self.sequence],
                "cold": [p.as_dict() for p in self.cold],
                "lag": [p.as_dict() for p in self.lag]}
