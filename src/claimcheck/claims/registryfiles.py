"""The registries of ``data/raw`` read: the claims (``claims.csv``), the figures left out of
them (``claims_excluded.csv``) and the published weight sizes (``weights.csv``), parsed and
checked by :mod:`claimcheck.claims.registry` and :mod:`claimcheck.physics.inputs`; the first bad
row names the file, line and field."""

from __future__ import annotations

from pathlib import Path

from claimcheck.claims.claims import Claim
from claimcheck.claims.registry import check_excluded, parse_claims
from claimcheck.files.paths import RAW
from claimcheck.files.readers import read_csv, read_text
from claimcheck.physics.inputs import WeightRow, parse_weight_rows


def load_claims(path: str | Path | None = None, cards: set[str] | None = None) -> list[Claim]:
    """Read and validate every row of claims.csv; the first bad row raises InputError."""
    p = Path(path) if path else RAW / "claims.csv"
    return parse_claims(read_text(p), str(p), cards)


def load_excluded(path: str | Path | None = None) -> list[dict[str, str]]:
    """Figures deliberately left out of the registry, each with a reason."""
    p = Path(path) if path else RAW / "claims_excluded.csv"
    return check_excluded(read_csv(p), str(p))


def load_weight_rows(path: str | Path | None = None) -> dict[str, WeightRow]:
    """Read ``weights.csv``; a bad unit, size or duplicate id names the file and line."""
    p = Path(path) if path else RAW / "weights.csv"
    return parse_weight_rows(read_csv(p), str(p))
