"""A held-out run whose engine has no calibration left on its card: its steps predicted by
the carried path from the other cards' runs alone.

When leaving a run out leaves its engine no calibration on its card
(:func:`claimcheck.calibration.calibrate.choose_for` refuses: its only one-stream decode
step was its own), every term is carried to its card by the datasheets from the card with
the most of the other cards' runs (:func:`claimcheck.predict.carry.carried_terms`, the path
``claimcheck predict --carry`` takes for a card with no run). The pool is every run on
another card: neither the held-out run nor any run measured on its card feeds a term. The
engine is the run's own (config/engines.yaml) at the vLLM release and power limit the run
recorded (its configuration, not a measurement). Each step is predicted as its timeline ran
(:func:`claimcheck.predict.modeltable.step_rows`, the normal path's per-step planning) with
the carried engine shape and calibration, and the carried terms' source runs stand under
the calibration terms they replace (:data:`CARRIED_TERMS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimcheck.calibration.calibrate import run_key
from claimcheck.calibration.layout import run_version
from claimcheck.calibration.termsources import TERMS
from claimcheck.files.errors import InputError
from claimcheck.model.carry import CarryError
from claimcheck.predict.carry import carried_terms
from claimcheck.predict.modeltable import step_rows
from claimcheck.runs.run import Run

CARRIED_TERMS = {"eta": "bandwidth", "compute_share": "compute", "int8_mlp_share": "compute",
                 "request_overhead_s": "overhead", "bend_exponent": "rows",
                 "admission_interval_s": "admission", "kv_read_share": "kv"}
"""Each carried term (:func:`~claimcheck.predict.carry.carried_terms`' ``terms``) under the
calibration term of :data:`~claimcheck.calibration.termsources.TERMS` it stands for. The
power clock ratio (a ratio of power limits; its runs' telemetry is in its words only) and
the bend streams (eta's and compute's runs) give no term of their own; sequence prefill,
cold start and output lag are not carried (the carried calibration has none)."""

CARRY_ERRORS = (InputError, CarryError)
"""What the carried path refuses with: no other card, no run of the format or its
activation path there, no datasheet rate."""


def carried_sources(terms: Mapping[str, Any], runs: list[Run], engine: str
                    ) -> dict[str, dict[str, Any]]:
    """Per calibration term, as :func:`~claimcheck.calibration.termsources.term_sources`
    gives them: the carried terms' (:data:`CARRIED_TERMS`) source runs among ``runs``,
    their engines, and ``borrowed_from`` where ``engine`` is not among them."""
    by_name = {r.name: r for r in runs}
    out = {}
    for t in TERMS:
        names = sorted({n for k, term in terms.items() if CARRIED_TERMS.get(k) == t
                        for n in term.source_runs})
        engines = sorted({str(run_key(by_name[n])[1]) for n in names})
        out[t] = {"runs": names, "engines": engines,
                  "borrowed_from": ", ".join(engines) if engines and engine not in engines
                  else None}
    return out


def carried_pool(target: Run, runs: list[Run]) -> list[Run]:
    """The runs a carried prediction of ``target`` may use: every run on another card
    (``target`` is on its own card, so it is never among them)."""
    card = run_key(target)[0]
    return [r for r in runs if run_key(r)[0] != card and r.name != target.name]


def carried_prediction(target: Run, runs: list[Run], engines: Mapping[str, Any],
                       user_cards: str | None = None) -> dict[str, Any]:
    """``target``'s steps (:func:`step_rows`) from every term carried to its card from the
    other cards' runs (:func:`carried_pool`): ``from_card`` (the card the terms came from),
    ``steps``, ``sources`` (:func:`carried_sources`) and ``terms`` (the carried terms).
    Refused (:data:`CARRY_ERRORS`) where its engine is not in ``engines`` or the carried
    path refuses."""
    card, engine = str(run_key(target)[0]), str(target.provenance.engine)
    if engine not in engines:
        raise InputError("config/engines.yaml", f"engine {engine!r} is not in it: nothing "
                         "to carry its terms by")
    pool = carried_pool(target, runs)
    power = getattr(target.provenance.gpu, "power_limit_enforced_w", None)
    c = carried_terms(pool, card, engines[engine], power, run_version(target), user_cards)
    return {"from_card": c["local_card"], "terms": c["terms"],
            "steps": step_rows(target, c["shape"], c["calibration"], as_sent=True),
            "sources": carried_sources(c["terms"], pool, engine)}
