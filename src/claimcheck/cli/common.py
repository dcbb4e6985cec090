"""What every command prints through: a JSON object or its plain-text table, and one number
cell ("null" for a value that is not there, as the JSON says)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from claimcheck.core.names import name_words


def emit(obj: Any, as_json: bool, table: str) -> None:
    """Print ``obj`` as indented JSON when ``as_json``, else the text ``table``."""
    print(json.dumps(obj, indent=2, sort_keys=False) if as_json else table)


def fmt(v: float | None, spec: str = ",.1f") -> str:
    """``v`` through the format ``spec``; "null" for None."""
    return "null" if v is None else format(v, spec)


def name_arg(what: str) -> Callable[[str], str]:
    """An argparse ``type`` for a ``--card``/``--engine``/``--protocol`` value: a name
    (:func:`claimcheck.core.names.name_refusal`) or one line naming the option and what is
    wrong (``argument --card: card name 'H200' holds a capital letter; ...``)."""
    def parse(value: str) -> str:
        why = name_words(value, what)
        if why:
            raise argparse.ArgumentTypeError(why)
        return value
    parse.__name__ = f"{what} name"
    return parse
