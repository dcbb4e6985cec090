"""A drafting step's speculation, counted (pure): the rows each stream verifies, and what the
server's counters say it drafted and kept.

Engines that draft (``engine_config.speculative``: :mod:`claimcheck.config.engines`) verify
k + 1 positions per stream per step: the token the step was for and k drafts. The runner
reads vLLM's counters (``GET /metrics``, :mod:`claimcheck.readings.promtext`) before and after
each step; their difference is the step's drafts (verify steps summed over requests),
drafted tokens and accepted tokens, overall and per drafted position. A verify keeps the
accepted drafts plus the one token the target model gives, so tokens kept per verify is
1 + accepted / drafts, and a step's time per output token is its step time over that."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimcheck.config.engines import acceptance_words
from claimcheck.readings.promtext import counter_sum, delta

DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFTED = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"

COLUMNS = ("verify_rows_per_stream", "spec_drafts", "spec_draft_tokens",
           "spec_accepted_tokens", "spec_accepted_per_verify", "tokens_kept_per_verify",
           "spec_acceptance_rate", "spec_acceptance_per_position", "spec_acceptance_set")
"""The step table's speculation columns: rows verified per stream per step (k + 1; 1
without a drafter), the step's counts, accepted drafts and tokens kept per verify, the
acceptance rate (accepted / drafted), the rate per drafted position ("1,0.496,0"), and how
acceptance was set (forced, or left to the weights)."""


def _position(key: str) -> int | None:
    marker = 'position="'
    i = key.find(marker)
    return int(key[i + len(marker):key.index('"', i + len(marker))]) if i >= 0 else None


def speculation_columns(spec: Mapping[str, Any] | None,
                        counters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The speculation columns (:data:`COLUMNS`) of one step: ``spec`` the engine's
    ``speculative`` field (None: no drafter), ``counters`` the step record's
    ``server_counters`` (``{"before": {"counters": ...}, "after": {...}}``; None or a
    failed reading leaves the counts empty). A drafting step whose counters show no verify
    has empty ratios (nothing to divide)."""
    out: dict[str, Any] = dict.fromkeys(COLUMNS)
    k = int(spec["num_speculative_tokens"]) if spec else 0
    out["verify_rows_per_stream"] = k + 1
    out["spec_acceptance_set"] = acceptance_words(spec)
    if not spec or not counters:
        return out
    before = (counters.get("before") or {}).get("counters")
    after = (counters.get("after") or {}).get("counters")
    if before is None or after is None:
        return out
    d = delta(before, after)
    drafts, drafted, accepted = (counter_sum(d, DRAFTS), counter_sum(d, DRAFTED),
                                 counter_sum(d, ACCEPTED))
    out.update(spec_drafts=int(drafts), spec_draft_tokens=int(drafted),
               spec_accepted_tokens=int(accepted))
    if drafts > 0:
        out["spec_accepted_per_verify"] = accepted / drafts
        out["tokens_kept_per_verify"] = 1 + accepted / drafts
        per = {p: v for key, v in d.items() if key.startswith(PER_POSITION)
               and (p := _position(key)) is not None}
        out["spec_acceptance_per_position"] = ",".join(
            f"{per.get(i, 0.0) / drafts:.4g}" for i in range(k))
    if drafted > 0:
        out["spec_acceptance_rate"] = accepted / drafted
    return out
