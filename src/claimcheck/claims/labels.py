"""Label audit of a throughput claim against seed 000's closing checklist (pure).

"What I want printed next to every tok/s": streams and how they relate; per-stream speed at
that concurrency; context per stream; rows verified per step and acceptance whenever there
is speculation; decode or end to end, and what was left out. For each label the audit says
whether the publication gave it, the registry supplied it (derived or looked up), it is
missing, or it does not apply. The labels are data (:data:`LABELS`); which ones a
publication printed is the caller's input (``given``), since only a reader of the source
can say.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

GIVEN = "given by the publication"
SUPPLIED = "supplied by the registry"
MISSING = "missing"
NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class Label:
    name: str
    text: str


LABELS: tuple[Label, ...] = (
    Label("streams", "streams, and how they relate"),
    Label("per_stream_speed", "per-stream speed at that concurrency"),
    Label("context_per_stream", "context per stream"),
    Label("speculation_rows", "rows verified per step (when speculating)"),
    Label("speculation_acceptance", "acceptance (when speculating)"),
    Label("decode_or_e2e", "decode or end to end"),
    Label("left_out", "what the figure leaves out"),
)

KNOWN_PHASES = {"decode", "end_to_end", "prefill"}
NO_SPECULATION = {"none"}


def _has(row: Mapping[str, Any], key: str) -> bool:
    return row.get(key) not in (None, "")


def _registry_has(row: Mapping[str, Any], label: str, metric: Mapping[str, Any]) -> bool | None:
    """Whether the registry row carries ``label``; None when it does not apply."""
    speculating = _has(row, "spec_method") and row["spec_method"] not in NO_SPECULATION
    if label == "streams":
        return _has(row, "streams") and _has(row, "stream_relation")
    if label == "per_stream_speed":
        # value / streams for sums: derivable whenever the scope of the metric is known
        return metric.get("phase") != "unspecified" or metric.get("scope") == "per_stream"
    if label == "context_per_stream":
        return _has(row, "context_tokens") or (_has(row, "prompt_tokens")
                                               and _has(row, "output_tokens"))
    if label == "speculation_rows":
        if not _has(row, "spec_method"):
            return False  # unknown whether it speculates
        return _has(row, "spec_draft_tokens") if speculating else None
    if label == "speculation_acceptance":
        if not _has(row, "spec_method"):
            return False
        return _has(row, "acceptance") if speculating else None
    if label == "decode_or_e2e":
        return metric.get("phase") in KNOWN_PHASES
    if label == "left_out":
        return metric.get("phase") in KNOWN_PHASES and bool(metric.get("definition"))
    raise KeyError(label)


def audit(row: Mapping[str, Any], metric: Mapping[str, Any],
          given: Set[str] = frozenset()) -> dict[str, str]:
    """Status of every checklist label for one claim row.

    ``row`` holds the registry columns (streams, stream_relation, context_tokens,
    prompt_tokens, output_tokens, spec_method, spec_draft_tokens, optionally acceptance);
    ``metric`` the registry metric's ``scope``, ``phase`` and ``definition``; ``given`` the
    label names the publication itself printed. A given label counts as given even where the
    registry could not record it.
    """
    unknown = set(given) - {lb.name for lb in LABELS}
    if unknown:
        raise ValueError(f"unknown labels {sorted(unknown)}; known: "
                         f"{[lb.name for lb in LABELS]}")
    out = {}
    for lb in LABELS:
        has = _registry_has(row, lb.name, metric)
        if has is None:
            out[lb.name] = NOT_APPLICABLE
        elif lb.name in given:
            out[lb.name] = GIVEN
        else:
            out[lb.name] = SUPPLIED if has else MISSING
    return out


def summary(status: Mapping[str, str]) -> dict[str, list[str]]:
    """Label names grouped by status."""
    out: dict[str, list[str]] = {GIVEN: [], SUPPLIED: [], MISSING: [], NOT_APPLICABLE: []}
    for name, st in status.items():
        out[st].append(name)
    return out
