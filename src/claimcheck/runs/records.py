"""A run's ``provenance.json`` and ``steps.json`` (and one step's ``step.json``) checked
against the JSON schemas shipped in ``claimcheck/schemas`` and typed
(:mod:`claimcheck.runs.runrecord`): the runner checks what it writes, every reader what it
reads. Errors name the file and the key path."""

from __future__ import annotations

from typing import Any

from claimcheck.files.readers import read_schema
from claimcheck.runs.runrecord import (
    Provenance,
    StepRecord,
    check_schema,
    provenance_of,
    step_record,
)


def validate_steps(obj: Any, source: str) -> tuple[StepRecord, ...]:
    """Check a steps.json list against its schema and type it."""
    check_schema(obj, read_schema("steps"), source)
    return tuple(step_record(d) for d in obj)


def validate_step(obj: Any, source: str) -> StepRecord:
    """Check one step.json against the step schema and type it."""
    check_schema([obj], read_schema("steps"), source)
    return step_record(obj)


def validate_provenance(obj: Any, source: str) -> Provenance:
    """Check a provenance.json object against its schema and type it."""
    check_schema(obj, read_schema("provenance"), source)
    return provenance_of(obj)
