"""Claims registry rows (``data/raw/claims.csv``): the row type, its columns, and the
per-stream arithmetic. Pure: the loader and its row checks are
:mod:`claimcheck.claims.registry`, the quote checks against the seeds
:mod:`claimcheck.claims.seeds`, the number and bound words :mod:`claimcheck.claims.claimtext`.

One row is one throughput figure as a seed article prints it. Columns hold only what the
seed states for that figure; anything the project supplies goes in ``assumed`` as
``column=value; reason`` entries separated by `` | ``. ``claim[col]`` is the value the
arithmetic uses (stated, else assumed); :attr:`Claim.stated` holds the seed's values only
and :attr:`Claim.assumed` maps a column to ``(value, reason)``.

Column meanings (one each):

- ``run``: one measurement (or one publication of one); its several metrics are rows with
  the same ``run``, and run-level fields agree across them.
- ``mode``: the system's serving mode as the seed names it ("batch mode", "single-user
  mode"), when it names one; with ``system`` and ``checkpoint`` it makes the source a
  figure is calibrated within (:func:`claimcheck.verdicts.sourcemodel.source_key`).
- ``engine_version``: what produced the number, when the seed states it; ``code_read``:
  the commit the article read (not necessarily the build that produced the number).
- ``streams``: concurrency requested (clients, lanes, slots); ``streams_running``: how many
  ran at once when a server cap or a measured average batch says fewer did. Per-stream
  speed divides by ``streams_running`` when present.
- ``output_tokens``: per request; ``total_output_tokens``: the sum a publication prints.
- ``stream_relation``: ``single_user`` exactly when ``streams`` is 1 (one stream relates to
  nothing, whether it came from one chat, one closed-loop client or one request at a time).
- ``bound``: empty for an exact figure; ``at_least`` when the seed says the true figure is
  at least the value ("over 1,000"), ``at_most`` when at most ("bursts of up to 900"). The
  quote must say so next to the value (:data:`claimcheck.claims.claimtext.BOUND_BEFORE`,
  :data:`claimcheck.claims.claimtext.BOUND_AFTER`).
- ``quote``: the seed's exact words holding the figure (whitespace-normalised); checked
  against the seed's ``section`` by :func:`claimcheck.claims.seeds.check_quotes`.
- ``int8_layers``: which linear layers multiply in int8 (int8 activations), when the seed
  says: ``mlp`` (the MLP GEMMs only) or ``all`` (every layer); empty for 16-bit
  activations or not stated. When stated, the run's text must say "int8" and, for
  ``mlp``, "MLP", for ``all``, "every layer" (:func:`claimcheck.claims.seeds.check_quotes`).
- ``kv_dtype``: the KV cache's dtype (``fp8``, ``int8``, ``bf16`` ...) when the seed states
  it for the run ("fp8 KV"); the roofline reads it before the weights.csv row's. When
  stated, the run's text must write it followed by "KV"
  (:func:`claimcheck.claims.seeds.check_quotes`).
- ``prompt_set``: the prompts a run used, in the seed's words ("short", "long answers"),
  when the seed names them; two runs of one system are one workload only when they name
  the same set (:func:`claimcheck.verdicts.sourcemodel.reproductions_of`): an unnamed set is
  not a named one.
- ``verify_rows``: positions each stream verifies per target pass when the seed gives a
  number other than ``spec_draft_tokens`` + 1 (the seed's "verifies k+1 positions"), or
  gives no k; ``tokens_kept_per_step``: tokens each stream keeps per verify step as the
  drafter's source states it (accepted drafts plus the target's own token). Both are the
  drafter facts the verdicts count (:mod:`claimcheck.verdicts.verdict_drafting`).
- ``quantization``: when stated, every part of it (split at ``-`` and ``+``) is written in
  the seed where it describes the run (:func:`claimcheck.claims.seeds.check_quotes`).

``data/raw/claims_excluded.csv`` (:data:`EXCLUDED_COLUMNS`: seed, section, value, quote,
reason) lists the throughput figures the seeds print that are deliberately not rows (the
article's own divisions and model ceilings, restatements of a figure registered from another
seed, per-dollar ratios); rows plus exclusions cover every tok/s figure in the seeds
(``tests/test_seed_walk.py``).

Per-stream speed is always computed, never typed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from claimcheck.claims.metrics import METRICS

COLUMNS = ("id", "run", "kind", "seed", "section", "url", "system", "mode", "engine_version",
           "code_read", "card", "power_limit_w", "checkpoint", "quantization", "int8_layers",
           "kv_dtype", "streams",
           "streams_running", "stream_relation", "prompt_tokens", "output_tokens",
           "total_output_tokens", "context_tokens", "prompt_set", "spec_method",
           "spec_draft_tokens", "verify_rows", "tokens_kept_per_step",
           "metric", "value", "unit", "bound", "quote", "assumed", "note")
# columns a registry written before they existed may lack (read as empty)
OPTIONAL = ("bound", "int8_layers", "mode", "kv_dtype", "prompt_set", "verify_rows",
            "tokens_kept_per_step")
REQUIRED = ("id", "run", "kind", "seed", "section", "system", "card", "streams",
            "stream_relation", "metric", "value", "unit", "quote")
# columns the project may supply (with a reason) when the seed does not state them; metric
# too, for a figure whose window the seed gives only in part (a log line not said to be free
# of prompt tokens)
ASSUMABLE = ("system", "mode", "engine_version", "code_read", "card", "power_limit_w", "checkpoint",
             "quantization", "int8_layers", "kv_dtype", "streams", "streams_running",
             "stream_relation",
             "prompt_tokens",
             "output_tokens", "total_output_tokens", "context_tokens", "prompt_set",
             "spec_method", "spec_draft_tokens", "verify_rows", "tokens_kept_per_step",
             "metric")
# fields one run shares across its metric rows
RUN_FIELDS = ("kind", "seed", "system", "mode", "engine_version", "code_read", "card",
              "power_limit_w", "checkpoint", "quantization", "int8_layers", "kv_dtype",
              "streams",
              "stream_relation",
              "prompt_tokens", "output_tokens", "total_output_tokens", "context_tokens",
              "prompt_set", "spec_method", "spec_draft_tokens", "verify_rows",
              "tokens_kept_per_step")
KINDS = {"claim", "reproduction", "control", "measured"}
SEEDS = {"000": "000_c17ed6d62e51e6bc.txt", "001": "001_661b21414414fac5.txt",
         "002": "002_894ef22a7c4f7ce5.txt"}
INT8_LAYERS = {"": (), "mlp": ("int8", "mlp"), "all": ("int8", "every layer")}
"""``int8_layers`` values and the words the run's text must hold for each (any case)."""
RELATIONS = {"lanes_of_one_prompt", "independent_requests", "closed_loop_clients",
             "single_user"}
UNITS = {"tok/s"}
FORBIDDEN = {"per_stream", "per_stream_tok_s", "per_stream_speed"}
INT_FIELDS = ("streams", "prompt_tokens", "output_tokens", "total_output_tokens",
              "context_tokens", "spec_draft_tokens", "verify_rows")
FLOAT_FIELDS = ("power_limit_w", "streams_running", "tokens_kept_per_step")
# stated fields whose value must appear in the cited part of the seed
EVIDENCE_NUM = ("power_limit_w", "streams", "streams_running", "prompt_tokens",
                "output_tokens", "total_output_tokens", "context_tokens", "spec_draft_tokens",
                "verify_rows", "tokens_kept_per_step")
EVIDENCE_STR = ("mode", "engine_version", "code_read", "checkpoint", "prompt_set")
EXCLUDED_COLUMNS = ("seed", "section", "value", "quote", "reason")


@dataclass(frozen=True)
class Claim:
    """One throughput figure. ``value`` in tok/s; derived speeds are properties.

    ``row`` holds the values the arithmetic uses (stated, else assumed); ``stated`` only
    what the seed states; ``assumed`` maps column -> (value, reason).
    """

    row: dict[str, Any]
    line: int
    stated: dict[str, Any] = field(default_factory=dict)
    assumed: dict[str, tuple[Any, str]] = field(default_factory=dict)
    value_text: str = ""

    def __getitem__(self, key: str) -> Any:
        return self.row[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``row[key]``, or ``default`` for a column the row does not have."""
        return self.row.get(key, default)

    def is_assumed(self, key: str) -> bool:
        """True when ``key``'s value is the project's, not the seed's."""
        return key in self.assumed

    @property
    def streams_sharing(self) -> float:
        """Streams that shared the aggregate: ``streams_running`` if given, else streams."""
        return self.row["streams_running"] or self.row["streams"]

    @property
    def per_stream_tok_s(self) -> float:
        """Speed one running stream sees, tok/s: value / streams_sharing for sums, value
        for per-stream metrics."""
        m = METRICS[self.row["metric"]]
        v = self.row["value"]
        return v / self.streams_sharing if m.scope == "aggregate" else v

    @property
    def aggregate_tok_s(self) -> float:
        """Sum over the running streams, tok/s: value for sums, value x streams_sharing for
        per-stream metrics."""
        m = METRICS[self.row["metric"]]
        v = self.row["value"]
        return v if m.scope == "aggregate" else v * self.streams_sharing

    def tidy(self) -> dict[str, Any]:
        """The row plus derived columns, for tables. ``assumed_fields`` names the columns
        whose values are the project's; ``assumed`` keeps ``column=value; reason``."""
        m = METRICS[self.row["metric"]]
        return {**self.row, "line": self.line, "metric_scope": m.scope,
                "metric_phase": m.phase, "metric_label": m.label,
                "assumed_fields": ",".join(sorted(self.assumed)),
                "per_stream_tok_s": self.per_stream_tok_s,
                "aggregate_tok_s": self.aggregate_tok_s}
