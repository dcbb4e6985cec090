"""A verdict's kinds, its tolerance and the records it reads and returns (pure).

A verdict for every registry claim is one kind, its numbers and its reason: the kind is
decided by the rules of :mod:`claimcheck.verdicts.verdict_rules`
(:func:`claimcheck.verdicts.verdict_rules.decide`, a typed record of what decided it), the
reason written from that record by
:mod:`claimcheck.verdicts.verdict_words` (:func:`claimcheck.verdicts.verdict_words.verdict`
does both). A run as a whole: with ``run_drafter`` (a sibling figure of the same run needs
a drafter) no figure says the drafter is not needed
(:func:`claimcheck.verdicts.verdict_words.drafter_words`,
:func:`claimcheck.verdicts.verdict_assembly.needs_drafter_runs`). The tolerance passed in is
at least the spread the claim's source shows between its own runs of one workload
(:func:`claimcheck.verdicts.sourcemodel.shown_spread`), printed as it is
(:func:`claimcheck.verdicts.verdict_words.tol_text`).

Tolerance (:data:`TOLERANCE`, 5%): the step model, given two numbers measured on a card,
meets the H200 runs' steps within 5% (issue 11, ``data/derived/model.csv``), the roofline
the seed's author draws lands 1% to 9% from HyperQwen's cohorts, and the registry's figures
carry two to four significant digits ("~1,035"); a ratio is judged on its printed
percentage with one decimal (:func:`claimcheck.verdicts.sourcemodel.within`).

Assumed registry fields (the project's, not the seed's) make the evidence weaker; the reason
says which. Speeds in tok/s (aggregate = summed over the streams sharing it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WITHIN = "within the physics"
CALIBRATES = "sets its source's model"
BAND = "in the bend region of its source's model"
ABOVE_SOURCE = "above its source's model"
SHORT = "short of its source's model"
DEFINITION_INFLATES = "definition inflates"
NEEDS_SPECULATION = "needs a drafter"
NOT_COMPARABLE = "not comparable"
SEED_REPRODUCED = "reproduced by a seed's run"
SEED_NOT_REPRODUCED = "not reproduced by a seed's run"
REPRODUCED = "reproduced here"
NOT_REPRODUCED = "not reproduced here"
AT_SOURCE = "at its source's one-stream model"
"""Inside the band at one stream: one stream has no bend, so the band there is only the
gap between memory and arithmetic overlapped or not, and the figure meets its model."""
MATCHES_CARRIED = "matches this card's carried model"
ABOVE_CARRIED = "above this card's carried model"
SHORT_CARRIED = "short of this card's carried model"
"""Read against the carried model first (:mod:`claimcheck.verdicts.verdict_carried`)."""
KINDS = (SEED_REPRODUCED, SEED_NOT_REPRODUCED, NEEDS_SPECULATION, DEFINITION_INFLATES,
         ABOVE_CARRIED, MATCHES_CARRIED, SHORT_CARRIED, ABOVE_SOURCE, BAND, AT_SOURCE,
         CALIBRATES, SHORT, WITHIN, NOT_COMPARABLE, REPRODUCED, NOT_REPRODUCED)

TOLERANCE = 0.05
"""Default tolerance (see the module docstring for why 5%)."""

NOT_A_DECODE_RATE = {"prefill", "sse_chunks_per_s"}
"""Registry metrics the decode roofline does not bound."""

NO_DRAFTER = {"", "none", None}


@dataclass(frozen=True)
class Ceiling:
    """The plain roofline (eta = 1, tau = 1) at a claim's own configuration."""

    roofline_tok_s: float | None
    """Aggregate tok/s at the streams sharing the claim; None when there is none."""
    bound: str = ""
    """The plain roofline's binding term at those streams ("memory" or "compute")."""
    note: str = ""
    """Why there is no roofline (when ``roofline_tok_s`` is None)."""


@dataclass(frozen=True)
class Reproduction:
    """Our replay of the claim's protocol on the claim's own card. ``low``/``high`` bracket
    the measured value under the claim's definition (equal) or, for a figure whose
    definition is not stated, under every definition measured."""

    low_tok_s: float
    high_tok_s: float
    source: str


@dataclass(frozen=True)
class SeedReproduction:
    """A seed's own reproduction of the claim's workload and metric definition (registry
    rows of kind "reproduction", :func:`claimcheck.verdicts.sourcemodel.reproductions_of`):
    ``low``/``high`` bracket its figures (aggregate tok/s) over ``runs``; ``differs`` says
    what is not the same (power limit, engine, checkpoint, ...)."""

    seed: str
    low_tok_s: float
    high_tok_s: float
    runs: tuple[str, ...]
    ids: tuple[str, ...]
    differs: tuple[str, ...] = ()

    @property
    def spread(self) -> float:
        """The spread between the seed's own runs of the workload: high / low - 1."""
        return self.high_tok_s / self.low_tok_s - 1.0 if len(self.runs) > 1 else 0.0


@dataclass(frozen=True)
class Verdict:
    kind: str
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)
