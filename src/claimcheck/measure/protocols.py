"""Protocol definitions: moved to :mod:`claimcheck.core.protocols` (data both the
measuring and the reporting side read); re-exported here for the measuring side."""

from claimcheck.core.protocols import (  # noqa: F401
    FIT_MARGIN_TOKENS,
    KINDS,
    Protocol,
    Step,
    check_fit,
    check_protocol,
    check_source_claims,
    get_protocol,
    load_profiles,
    load_protocols,
)
