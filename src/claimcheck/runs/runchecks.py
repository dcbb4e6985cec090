"""What a recorded run can physically hold: checks on a run already parsed.

Pure: parsed objects in (the typed provenance, a step's bench result as a dict, telemetry
rows, the start log's weight size, the card registry), nothing out; a value no measurement
could produce raises :class:`~claimcheck.files.errors.InputError` naming the file and field
in one line. Units: seconds, W, GiB (2**30 bytes), tokens.

The bounds, and why each is a bound rather than a judgement:

- a duration (run, step, benchmark) is > 0 s; a TTFT and an inter-token gap are >= 0 s;
- a step with ``completed: 0`` produced no output tokens; a step marked complete has no
  failed request; no more requests complete than were sent, no request returns more
  tokens than it asked for, a time per output token is > 0;
- board power is >= 0 W and at most :data:`POWER_SLACK` x the card's default power limit
  in ``cards.csv`` (boards can be raised above their default limit, by far less than half);
- the run's card is in the registry, its recorded GPU name is that card's NVML name, and
  the engine's reported weights fit in the card's memory;
- the directory is the one the provenance names (``run_dir``): a copy is not a new run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.physics.cards import Card
from claimcheck.readings.definitions import HELD_PREFILL_MAX_OUTPUT, is_held_prefill
from claimcheck.runs.runrecord import STEP_OK, Provenance, StepRecord

POWER_SLACK = 1.5
"""Largest plausible board power as a multiple of the card's default power limit."""

NO_CARD = "cpu"
"""The card name of a run without a GPU (a CPU build of the engine): no card checks."""


def check_provenance(prov: Provenance, *, dir_name: str, source: str,
                     cards: Mapping[str, Card]) -> Card | None:
    """The run-level facts of ``provenance.json``; returns the run's card (None for a run
    without a GPU)."""
    recorded_dir = prov.run_dir
    if recorded_dir is not None and recorded_dir != dir_name:
        raise InputError(source, f"names directory {recorded_dir!r} but this is "
                         f"{dir_name!r}: a copied run directory is not a new run",
                         key="run_dir")
    dur = prov.duration_s
    if dur is not None and not dur > 0:
        raise InputError(source, f"{dur} s is impossible: a run's duration must be > 0 s",
                         key="duration_s")
    for i, rec in enumerate(prov.steps):
        check_step_record(rec, source=source, key=f"steps[{i}]")
    if prov.card == NO_CARD:
        return None
    if prov.card not in cards:
        raise InputError(source, f"unknown card {prov.card!r}; known in cards.csv: "
                         f"{', '.join(sorted(cards))}", key="card")
    card = cards[prov.card]
    name = prov.gpu.name
    if name is not None and card.nvml_name is not None and name != card.nvml_name:
        other = [c.card for c in cards.values() if c.nvml_name == name]
        seen = f"card {other[0]!r}" if other else "a card not in cards.csv"
        raise InputError(source, f"the run says card {prov.card!r} ({card.nvml_name!r}, "
                         f"{card.memory_gib:g} GiB) but its recorded GPU is {name!r} "
                         f"({seen})", key="gpu.gpus[0].name")
    return card


def check_step_record(rec: StepRecord, *, source: str, key: str) -> None:
    """One step as the runner recorded it: its window runs forward (a step that never
    started may have a zero window; a complete one may not) and a complete step has no
    failed request."""
    t0, t1 = rec.start_unix_s, rec.end_unix_s
    if t0 is not None and t1 is not None:
        span = t1 - t0
        if span < 0 or (rec.ok and span == 0):
            raise InputError(source, f"the step ends {span:g} s after it starts (start "
                             f"{t0}, end {t1}); a step's duration must be > 0 s",
                             key=f"{key}.end_unix_s")
    if rec.ok and (rec.failed_requests or 0) > 0:
        raise InputError(source, f"{rec.failed_requests} requests failed on a step marked "
                         f"{STEP_OK}", key=f"{key}.failed_requests")
    if rec.completed is not None and rec.completed > rec.requests:
        raise InputError(source, f"{rec.completed} requests completed but only "
                         f"{rec.requests} were sent", key=f"{key}.completed")


def check_gap_counts(bench: Mapping[str, Any], *, source: str) -> None:
    """Each request's inter-token gaps against its output tokens: n tokens give at most
    n - 1 gaps (fewer where a chunk carries several tokens: a drafter's accepted tokens, or
    a stream that fell behind under load, as the committed 128-stream steps show)."""
    lens = bench.get("output_lens") or []
    for i, gaps in enumerate(bench.get("itls") or []):
        if i >= len(lens) or lens[i] is None or gaps is None:
            continue
        want = max(int(lens[i]) - 1, 0)
        have = len(gaps)
        if have > want:
            raise InputError(source, f"request {i} has {have} inter-token gaps but "
                             f"{lens[i]} output tokens (output_lens), which give at most "
                             f"{want}", key="itls")


ROUNDING_MS = 1e-3
"""How far below 0 ms vLLM's own time per output token may read for a step of held
prefills (requests of ``HELD_PREFILL_MAX_OUTPUT`` tokens or fewer): both tokens of such a
request can come in one streamed chunk, and its (latency - TTFT) / (tokens - 1) is then 0
up to float rounding (-0.000158 ms, the median of a committed 64-stream step of 2-token
requests). Such a step is read for no decode rate:
:func:`~claimcheck.readings.definitions.is_held_prefill`, the rule this check calls too."""


def check_bench(bench: Mapping[str, Any], *, requests: int, output_len: int | None,
                step_ok: bool, source: str) -> None:
    """One step's result (``vllm bench serve --save-result --save-detailed`` shape).

    ``output_len`` is the tokens each request asked for (max_tokens); ``step_ok`` whether
    the step is marked complete."""
    held = is_held_prefill(output_len, max((n for n in bench.get("output_lens") or ()
                                            if n is not None), default=None))
    for key in ("median_tpot_ms", "mean_tpot_ms"):
        v = bench.get(key)
        if v is not None and not (v > 0 or (held and v > -ROUNDING_MS)):
            raise InputError(source, f"{v} ms is impossible: a time per output token must "
                             "be > 0" + (f" (or within {ROUNDING_MS:g} ms of 0 for requests "
                                         f"of {HELD_PREFILL_MAX_OUTPUT} tokens or fewer)"
                                         if held else ""), key=key)
    dur = bench.get("duration")
    if step_ok and dur is not None and not dur > 0:
        raise InputError(source, f"{dur} s is impossible: a benchmark's duration must be "
                         "> 0 s", key="duration")
    done = bench.get("completed")
    if done is not None and done > requests:
        raise InputError(source, f"{done} requests completed but only {requests} were "
                         "sent", key="completed")
    total = bench.get("total_output_tokens")
    if done == 0 and total:
        raise InputError(source, f"{total} output tokens beside completed: 0 (no request "
                         "completed, so none produced tokens)", key="total_output_tokens")
    failed = bench.get("failed")
    if step_ok and failed:
        raise InputError(source, f"{failed} of {requests} requests failed on a step marked "
                         f"{STEP_OK}", key="failed")
    lens = [n for n in bench.get("output_lens") or [] if n is not None]
    if output_len and any(n > output_len for n in lens):
        raise InputError(source, f"a request returned {max(lens)} tokens but "
                         f"{output_len} were requested", key="output_lens")
    if output_len and total is not None and total > requests * output_len:
        raise InputError(source, f"{total} output tokens but at most {requests} x "
                         f"{output_len} were requested", key="total_output_tokens")
    for i, t in enumerate(bench.get("ttfts") or []):
        if t is not None and t < 0:
            raise InputError(source, f"request {i} has a time to first token of {t:g} s; "
                             "it must be >= 0 s", key="ttfts")
    check_gap_counts(bench, source=source)
    for i, gaps in enumerate(bench.get("itls") or []):
        if _all_at_least_zero(gaps or []):
            continue
        for j, g in enumerate(gaps):
            if g is not None and g < 0:
                raise InputError(source, f"request {i}, gap {j} is {g:g} s; an "
                                 "inter-token gap must be >= 0 s", key="itls")
    check_decode_time(bench, source=source)


def check_decode_time(bench: Mapping[str, Any], *, source: str) -> None:
    """Every completed request of more than :data:`~claimcheck.readings.definitions.
    HELD_PREFILL_MAX_OUTPUT` tokens took time after its first token: its tokens after the
    first need decode steps, so one whose inter-token gaps sum to 0 s (all its tokens dated
    at its first) has no time per output token. A request of 2 tokens may get both in one
    streamed chunk (seen on CPU vLLM); it is a prefill measurement, read for no decode rate
    (:func:`~claimcheck.readings.definitions.is_held_prefill`)."""
    lens = bench.get("output_lens") or []
    errors = bench.get("errors") or [""] * len(lens)
    for i, (n, gaps) in enumerate(zip(lens, bench.get("itls") or [], strict=False)):
        if i < len(errors) and errors[i]:
            continue
        if (n is not None and n > HELD_PREFILL_MAX_OUTPUT
                and not _sum_of_gaps(gaps or []) > 0):
            raise InputError(source, f"request {i} reports {n} output tokens all dated at its "
                             "first (its inter-token gaps sum to 0 s): a time per output "
                             "token of 0 s is impossible", key="itls")


def _all_at_least_zero(gaps: list[Any]) -> bool:
    """Whether no gap is below 0 s (None gaps ignored): ``min`` over the list in one pass
    where it holds numbers only, the slow look only for a list with a None."""
    try:
        return not gaps or min(gaps) >= 0
    except TypeError:  # a None among the numbers
        return all(g is None or g >= 0 for g in gaps)


def _sum_of_gaps(gaps: list[Any]) -> float:
    """The gaps' sum, s, None counted as 0."""
    try:
        return sum(gaps)
    except TypeError:  # a None among the numbers
        return sum(g or 0 for g in gaps)


def output_length_problem(bench: Mapping[str, Any], *, requests: int, output_len: int,
                          ignore_eos: bool) -> str:
    """Why a step's result disagrees with what was asked ("" when it agrees): completed
    and failed requests that do not add up to those sent, a completed request with more
    tokens than ``output_len`` or, when the protocol ignores EOS, with fewer."""
    done, failed = bench.get("completed") or 0, bench.get("failed") or 0
    if done + failed != requests:
        return (f"{done} completed + {failed} failed requests but {requests} were sent")
    errors = bench.get("errors") or []
    lens = bench.get("output_lens") or []
    ok = [(i, n) for i, n in enumerate(lens)
          if n is not None and not (i < len(errors) and errors[i])]
    over = [(i, n) for i, n in ok if n > output_len]
    if over:
        return (f"{len(over)} completed requests returned more than the {output_len} "
                f"tokens asked for (first: request {over[0][0]}, {over[0][1]} tokens)")
    short = [(i, n) for i, n in ok if n < output_len] if ignore_eos else []
    if short:
        return (f"{len(short)} completed requests returned fewer than the {output_len} "
                f"tokens asked for under --ignore-eos (first: request {short[0][0]}, "
                f"{short[0][1]} tokens)")
    return ""


def check_power(rows: Iterable[Mapping[str, Any]], *, card: Card | None,
                source: str) -> None:
    """Board power samples (W) of ``telemetry.csv``: >= 0 W and, on a known card, at most
    :data:`POWER_SLACK` x its default power limit. Rows are the file's data lines in
    order (the header is line 1)."""
    top = POWER_SLACK * card.default_power_w if card is not None else None
    for i, r in enumerate(rows):
        w = r.get("power_w")
        if not isinstance(w, float):
            continue
        if w < 0:
            raise InputError(source, f"{w:g} W is impossible: board power must be >= 0 W",
                             line=i + 2, key="power_w")
        if top is not None and card is not None and w > top:
            raise InputError(source, f"{w:g} W is above {POWER_SLACK:g} x card "
                             f"{card.card}'s {card.default_power_w:g} W limit "
                             f"({top:g} W)", line=i + 2, key="power_w")


def check_weights(weights_gib: float | None, *, card: Card | None, source: str) -> None:
    """The engine's reported weights (GiB per GPU) fit in the card's memory (GiB)."""
    if weights_gib is None or card is None:
        return
    if not weights_gib >= 0:
        raise InputError(source, f"{weights_gib:g} GiB of weights is impossible",
                         key="Model loading took")
    if weights_gib > card.memory_gib:
        raise InputError(source, f"{weights_gib:.2f} GiB of weights exceed card "
                         f"{card.card}'s {card.memory_gib:g} GiB of memory",
                         key="Model loading took")


def check_run(prov: Provenance, *, dir_name: str, cards: Mapping[str, Card],
              telemetry_rows: Iterable[Mapping[str, Any]], weights_gib: float | None,
              provenance_source: str, telemetry_source: str, start_log_source: str
              ) -> None:
    """Every run-level check (provenance, telemetry, start log) of one parsed run."""
    card = check_provenance(prov, dir_name=dir_name, source=provenance_source, cards=cards)
    check_power(telemetry_rows, card=card, source=telemetry_source)
    check_weights(weights_gib, card=card, source=start_log_source)
