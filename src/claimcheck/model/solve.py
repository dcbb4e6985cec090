"""Terms solved from measurements: the factor, per-sequence cost, output lag or interval at
which the step model gives back what a run measured. Pure arithmetic, no I/O."""

from __future__ import annotations


def mixed_factor_from_time(measured_s: float, at_one_s: float, at_two_s: float
                           ) -> float | None:
    """The mixed-prefill factor k at which a step's simulated time to its last request's
    first token (every prompt prefilled) equals the measured one, from that simulated time
    at k = 1 and k = 2 (linear in k while the same steps stay compute-bound):
    1 + (measured - T(1)) / (T(2) - T(1)); None when k does not move it (no shared prefill
    step before that token)."""
    if at_two_s <= at_one_s:
        return None
    return 1 + (measured_s - at_one_s) / (at_two_s - at_one_s)


def sequence_cost_from_wall(measured_s: float, at_zero_s: float, at_probe_s: float,
                            probe_s: float) -> float | None:
    """The per-sequence prefill cost c at which a step's simulated wall (first send to last
    token) equals the measured one, from its simulated wall at c = 0 and at c = ``probe_s``
    (linear in c while the same requests share the same steps):
    ``probe_s`` x (measured - T(0)) / (T(probe) - T(0)); None when c does not move it."""
    if at_probe_s <= at_zero_s:
        return None
    return probe_s * (measured_s - at_zero_s) / (at_probe_s - at_zero_s)


def lag_from_first_token(measured_s: float, at_zero_s: float, at_one_s: float
                         ) -> float | None:
    """The output lag f (a share of the next step) at which a step's simulated first token
    (the earliest, from the first send) comes when the measured one did, from the simulated
    one at f = 0 and at f = 1 (linear in f: the token moves f of the step after the one
    that sampled it): (measured - T(0)) / (T(1) - T(0)); None when f does not move it."""
    if at_one_s <= at_zero_s:
        return None
    return (measured_s - at_zero_s) / (at_one_s - at_zero_s)

