"""Measured steps as calibration inputs: what a step holds (one stream, its prompts, its
decode intervals), a run's card, engine and format, a chosen step and why (:class:`Pick`),
the order ties go by, and a one-wave step of a protocol that names a model term. The
blocks :mod:`claimcheck.calibration.calibrate` and :mod:`claimcheck.calibration.rowterm` choose
from."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from claimcheck.config.protocols import Terms
from claimcheck.runs.run import Run, StepTrace


def one_stream_steps(run: Run) -> list[StepTrace]:
    return [s for s in run.traces if s.timeline.streams == 1]


def median_prompt(s: StepTrace) -> float:
    return statistics.median(r.prompt_tokens for r in s.timeline.requests)


def decode_intervals(s: StepTrace) -> int:
    """Output tokens after each request's first, summed over the step's requests (the
    number of per-step times its median TPOT is taken over)."""
    return sum(max(r.output_tokens - 1, 0) for r in s.timeline.requests)


def run_key(run: Run) -> tuple[str, str, Any]:
    """(card, engine, weight format) of a run."""
    p = run.provenance
    return (p.card, p.engine, p.engine_config.recorded.get("weight_format"))


def run_kernel(run: Run) -> str | None:
    """The quantized linear kernel a run used: the one its start log names ("Using
    MacheteLinearKernel ..."), else the one its engine's ``--linear-backend`` names; None
    when neither says (an unquantized engine)."""
    if run.linear_kernel:
        return run.linear_kernel
    args = [str(a) for a in run.provenance.engine_config.recorded.get(
        "extra_args") or []]
    if "--linear-backend" in args[:-1]:
        return args[args.index("--linear-backend") + 1].lower()
    return None


def token_budget(run: Run) -> int:
    shape, _ = run.engine
    return shape.max_num_batched_tokens


@dataclass(frozen=True)
class Pick:
    """One measured step chosen for a calibration input, and why."""

    run: Run
    step: StepTrace
    why: str

    @property
    def label(self) -> str:
        r = self.step.record
        return f"{self.run.name} step {r['step']} repeat {r['repeat']}"

    def as_dict(self) -> dict[str, Any]:
        r = self.step.record
        return {"run": self.run.name, "step": r["step"], "repeat": r["repeat"],
                "why": self.why}


def earliest(r: Run, s: StepTrace) -> tuple[str, str, int, int]:
    return (str(r.provenance.started_utc or ""), r.name, int(s.record["step"]),
            int(s.record["repeat"]))


ROW_TERM = "decode_rows"
"""The ``model_term`` value (config/protocols.yaml) of protocols whose one-wave decode steps
are the decode-row term's source."""
ADMISSION_TERM = "admission"
"""The ``model_term`` value of protocols whose one-wave steps give the send interval."""
KV_TERM = "kv_read"
"""The ``model_term`` value of protocols whose one-wave steps, read while every stream
decodes, give the KV-read rate (:func:`claimcheck.model.model.kv_bandwidth_from_decode`)."""


def one_wave(r: Run, s: StepTrace, terms: Terms, term: str) -> bool:
    """A one-wave step (requests = streams, 2 to the engine's slots) of a protocol that is
    ``term``'s source."""
    tl = s.timeline
    name = (r.provenance.protocol_config or {}).get("name")
    return (name in terms.get(term, frozenset()) and 2 <= tl.streams == len(tl.requests)
            and tl.streams <= r.engine[0].max_num_seqs)
