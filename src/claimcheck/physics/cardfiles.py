"""The card registry and the measured ceilings read: ``data/raw/cards.csv`` (with a user
cards file merged over it where one is named) and ``data/raw/ceilings.csv``, parsed by
:mod:`claimcheck.physics.cards`; errors name the file, line and column. The user cards file is
always an argument (``--cards-file``, ``user_cards`` in config/config.yaml): nothing here
reads or writes the process environment."""

from __future__ import annotations

from pathlib import Path

from claimcheck.files.errors import InputError
from claimcheck.files.io import csv_lines
from claimcheck.files.paths import RAW
from claimcheck.files.readers import read_csv_lines, read_text
from claimcheck.physics.cards import (
    CARD_REQUIRED,
    CEILING_REQUIRED,
    Card,
    Ceiling,
    check_row_lengths,
    merge_user_cards,
    parse_cards,
    parse_ceilings,
)


def use_user_cards(path: str | Path | None) -> None:
    """Check the pipeline's user cards file (None or empty: none) row by row; it names
    nothing for later reads (each reader is given it, :func:`load_cards`' ``user_path``).
    Kept while workflow/rules/common.smk calls it."""
    if path:
        load_cards(user_path=path)


def _user_path(user_path: str | Path | None) -> Path | None:
    return Path(user_path) if user_path else None


def load_cards(path: str | Path | None = None,
               user_path: str | Path | None = None) -> dict[str, Card]:
    """Read and validate the card registry, and a user cards file merged over it;
    errors name the file, line and column.

    Numbers must be finite and > 0; UTF-8 with or without a byte-order mark. The user
    file (``user_path``; None or empty: none) has the
    registry's columns (:data:`~claimcheck.physics.cards.CARD_REQUIRED` required, at least one
    dense tensor rate, no unknown column); it adds cards and never replaces one of the
    registry's (a card of that name is refused: give yours another name). Each card keeps
    the file it came from (``registry``).
    """
    p = Path(path) if path else RAW / "cards.csv"
    cards = parse_cards(*read_csv_lines(p, CARD_REQUIRED), str(p), user=False)
    up = _user_path(user_path)
    if up is None:
        return cards
    if not up.is_file():
        raise InputError(str(up), "no such file (the user cards file: --cards-file or "
                         "user_cards in config/config.yaml)")
    text = read_text(up)
    check_row_lengths(text, str(up))
    header, rows = csv_lines(text, str(up), CARD_REQUIRED)
    user = parse_cards(header, rows, str(up), user=True, taken=cards)
    return merge_user_cards(cards, user, rows, str(p), str(up))


def get_card(name: str, path: str | Path | None = None,
             user_path: str | Path | None = None) -> Card:
    """One card by registry name (a user cards file merged, :func:`load_cards`); unknown
    names are refused with the known ones."""
    cards = load_cards(path, user_path)
    try:
        return cards[name]
    except KeyError:
        up = _user_path(user_path)
        where = str(path or RAW / "cards.csv") + (f" + {up}" if up else "")
        raise InputError(where, f"unknown card {name!r}; known: {', '.join(sorted(cards))}"
                         + ("" if up else " (a card of your own: --cards-file, docs/own-card.md)"),
                         key="card") from None


def load_ceilings(path: str | Path | None = None,
                  cards: dict[str, Card] | None = None) -> dict[str, Ceiling]:
    """Read ``ceilings.csv`` (measured compute ceilings,
    :func:`claimcheck.physics.cards.parse_ceilings`); errors name the file, line and key."""
    p = Path(path) if path else RAW / "ceilings.csv"
    _, rows = read_csv_lines(p, CEILING_REQUIRED)
    return parse_ceilings(rows, str(p), cards)
