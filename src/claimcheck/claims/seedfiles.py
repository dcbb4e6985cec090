"""The seed articles found and read (``CLAIMCHECK_SEEDS``, else ``shared/seeds`` beside the
repository), and the registry's quotes checked against them by
:func:`claimcheck.claims.seeds.check_quotes`."""

from __future__ import annotations

import os
from pathlib import Path

from claimcheck.claims.claims import SEEDS, Claim
from claimcheck.claims.seeds import check_quotes
from claimcheck.files.paths import ROOT
from claimcheck.files.readers import read_text


def seeds_dir() -> Path | None:
    """Where the seed articles are: ``CLAIMCHECK_SEEDS``, else ``shared/seeds`` beside the
    repository root; None when that folder is absent."""
    env = os.environ.get("CLAIMCHECK_SEEDS")
    p = Path(env) if env else ROOT.parent / "shared" / "seeds"
    return p if p.is_dir() else None


def read_seeds(folder: Path) -> dict[str, str]:
    """Each seed article's text by its key (:data:`claimcheck.claims.claims.SEEDS`)."""
    return {key: read_text(folder / fname) for key, fname in SEEDS.items()}


def check_against_seeds(claims: list[Claim], src: str, folder: Path,
                        excluded: list[dict[str, str]] | None = None,
                        excluded_src: str = "claims_excluded.csv") -> None:
    """The registry's quotes and stated fields against the seeds in ``folder``
    (:func:`claimcheck.claims.seeds.check_quotes`)."""
    check_quotes(claims, src, read_seeds(folder), excluded, excluded_src)
