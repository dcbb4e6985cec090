"""The rows a drafter verifies, counted in a claim's verdict (pure).

Seed 000 ("Speculation spends the same arithmetic"): a speculating stream drafts k tokens
and verifies k + 1 positions in one target pass, so B streams verifying r positions each
put B r rows through every matrix, the same arithmetic as B r plain streams. The step at r
rows is the seed's

    t_step(B, r) = max(M, r C)        (M: the memory term; C: the arithmetic of one row
                                        per stream, B F / P, both at the claim's own card)

and a figure of ``aggregate`` tok/s at B streams needs tau = aggregate / B x t_step(B, r)
tokens kept per stream per step (:func:`tau_at_rows`). With r = 1 this is the plain
roofline's ratio; past the bend the verify rows are not free.

The verify rows per stream come from the registry, never from a name in code
(:func:`verify_rows`): ``verify_rows`` where the registry gives it, else ``spec_draft_tokens``
+ 1, else, for a drafter whose size is not stated, the range over every size the registry
documents for the same drafter (``spec_method``) (:func:`documented_rows`); a drafter with
no documented size is counted at the tokens its source says it keeps per step (a kept
token is a verified one), else at one row, and the words say so. The acceptance set beside
it is the source's where it states one (``tokens_kept_per_step``), and the tokens the same
source's one-stream figures with the same drafter needed at their own rows (a floor on
what that drafter kept alone).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NO_DRAFTER = ("", "none")
"""``spec_method`` values that mean no drafter (lower case)."""


def has_drafter(row: Mapping[str, Any]) -> bool:
    """True when the registry row names a drafter (stated or assumed)."""
    return str(row.get("spec_method") or "").lower() not in NO_DRAFTER


def rows_given(row: Mapping[str, Any]) -> int | None:
    """The verify rows per stream a registry row gives: ``verify_rows``, else
    ``spec_draft_tokens`` + 1 (k drafts and the target's own position); None when neither
    is given."""
    if row.get("verify_rows"):
        return int(row["verify_rows"])
    if row.get("spec_draft_tokens"):
        return int(row["spec_draft_tokens"]) + 1
    return None


def documented_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, ...]]:
    """Drafter (``spec_method``, lower case) -> every verify-row count the registry gives
    for it (:func:`rows_given`), sorted."""
    out: dict[str, set[int]] = {}
    for r in rows:
        n = rows_given(r)
        if has_drafter(r) and n is not None:
            out.setdefault(str(r["spec_method"]).lower(), set()).add(n)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def verify_rows(row: Mapping[str, Any], assumed: Sequence[str],
                documented: Mapping[str, tuple[int, ...]]) -> tuple[float, float, str]:
    """(fewest, most, words): the verify rows per stream of a registry row. ``assumed``
    names the row's columns the registry supplies; ``documented`` is
    :func:`documented_rows` over the registry. No drafter: (1, 1, "")."""
    if not has_drafter(row):
        return 1.0, 1.0, ""
    spec = str(row["spec_method"])
    how = {c: "assumed by the registry" if c in assumed else "stated"
           for c in ("verify_rows", "spec_draft_tokens")}
    if row.get("verify_rows"):
        n = int(row["verify_rows"])
        return n, n, ("verify rows assumed by the registry" if "verify_rows" in assumed
                      else "verify rows stated")
    if row.get("spec_draft_tokens"):
        k = int(row["spec_draft_tokens"])
        return k + 1, k + 1, (f"{spec} drafts {k} ({how['spec_draft_tokens']}), plus the "
                              "target's own position")
    sizes = documented.get(spec.lower(), ())
    if len(sizes) > 1:
        return sizes[0], sizes[-1], (f"not stated: the sizes the registry documents for "
                                     f"{spec}")
    if sizes:
        return sizes[0], sizes[0], f"not stated: the one size the registry documents for {spec}"
    kept = row.get("tokens_kept_per_step")
    if kept:
        n = float(math.ceil(float(kept)))
        return n, n, (f"not stated, and no size of {spec} documented: at least the "
                      f"{float(kept):g} tokens kept per step its source gives")
    return 1.0, 1.0, f"not stated, and no size of {spec} documented: the verify taken as free"


def tau_at_rows(aggregate_tok_s: float, streams: float, memory_ms: float,
                compute_ms_one_row: float, rows: float) -> float:
    """Tokens kept per stream per step a figure needs at ``rows`` verify rows per stream:
    aggregate / B x max(M, r C) (ms to s), M and C the step's memory term and its
    arithmetic at one row per stream."""
    if not (streams > 0 and memory_ms > 0 and compute_ms_one_row >= 0 and rows >= 1):
        raise ValueError(f"tau at rows needs streams > 0, M > 0, C >= 0 and rows >= 1, got "
                         f"{streams!r}, {memory_ms!r}, {compute_ms_one_row!r}, {rows!r}")
    return aggregate_tok_s / streams * max(memory_ms, rows * compute_ms_one_row) / 1e3


@dataclass(frozen=True)
class Solo:
    """A one-stream figure of the same source and drafter: the tokens it needed per step
    at its own verify rows (a floor on what the drafter kept alone)."""

    id: str
    aggregate_tok_s: float
    tau: float


@dataclass(frozen=True)
class Drafting:
    """A claim's verify rows and the tokens it needs kept at them."""

    rows_low: float
    rows_high: float
    rows_words: str
    tau_low: float
    tau_high: float
    kept: float | None = None
    """Tokens kept per step its source states (``tokens_kept_per_step``)."""
    kept_words: str = ""
    solo: tuple[Solo, ...] = ()
    rows_known: bool = True
    """True for a drafter whose size the row or the registry gives; False with no drafter
    (one row) or a drafter of no documented size (the rows are then a floor: one, or the
    tokens its source says it keeps), where the rows cannot bound what it keeps."""

    def numbers(self) -> dict[str, Any]:
        """The verdict table's columns."""
        return {"verify_rows_per_stream": self.rows_low,
                "verify_rows_high": self.rows_high if self.rows_high != self.rows_low
                else None,
                "verify_rows_source": self.rows_words, "tau_needed": self.tau_low,
                "tau_needed_high": self.tau_high if self.rows_high != self.rows_low
                else None,
                "tokens_kept_stated": self.kept, "tokens_kept_source": self.kept_words,
                "solo_tau": ";".join(f"{s.id}={s.tau:.2f}" for s in self.solo)}

    def need_text(self) -> str:
        """"4.30 tokens kept per stream per step at 16 verify rows per stream (why)"."""
        why = f" ({self.rows_words})" if self.rows_words else ""
        if self.rows_high != self.rows_low:
            tau = (f"{self.tau_low:.2f}" if f"{self.tau_low:.2f}" == f"{self.tau_high:.2f}"
                   else f"{self.tau_low:.2f} to {self.tau_high:.2f}")
            return (f"{tau} tokens kept per stream per step at {self.rows_low:g} to "
                    f"{self.rows_high:g} verify rows per stream{why}")
        s = "s" if self.rows_low != 1 else ""
        return (f"{self.tau_low:.2f} tokens kept per stream per step at {self.rows_low:g} "
                f"verify row{s} per stream{why}")

    def reach_text(self) -> str:
        """Whether the rows and the stated acceptance reach it: "; more than the 12 rows it
        verifies", "; its source states 5.02 kept per step (...): enough" and the one-stream
        figures of the same drafter."""
        out = ""
        if self.rows_known and self.tau_low > self.rows_high:
            out += (f"; more than the {self.rows_high:g} rows it verifies, which no acceptance "
                    "reaches")
        if self.kept is not None:
            enough = "enough" if self.kept >= self.tau_low else (
                f"{self.tau_low / self.kept:.2f}x short of it")
            out += (f"; its source states {self.kept:g} tokens kept per step "
                    f"({self.kept_words}): {enough}")
        if self.solo:
            alone = " and ".join(f"{s.tau:.2f} ({s.id}, {s.aggregate_tok_s:,.1f} tok/s)"
                                 for s in self.solo)
            most = max(s.tau for s in self.solo)
            cmp = ("more than any of them needed alone" if self.tau_low > most
                   else "within what they needed alone")
            out += (f"; its source's one-stream figures with the same drafter needed {alone} "
                    f"at their rows: {cmp}")
        return out
