"""What every command prints through: a JSON object or its plain-text table, and one number
cell ("null" for a value that is not there, as the JSON says)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.files.names import name_words


def emit(obj: Any, as_json: bool, table: str) -> None:
    """Print ``obj`` as indented JSON when ``as_json``, else the text ``table``."""
    print(json.dumps(obj, indent=2, sort_keys=False) if as_json else table)


def fmt(v: float | None, spec: str = ",.1f") -> str:
    """``v`` through the format ``spec``; "null" for None."""
    return "null" if v is None else format(v, spec)


NAME_OPTIONS = ("card", "engine", "protocol")
"""The options that take a card, engine or protocol name (``--protocol`` may repeat)."""


def check_name_options(a: argparse.Namespace) -> None:
    """Refuse a ``--card``/``--engine``/``--protocol`` value that is not a name
    (:func:`claimcheck.files.names.name_refusal`) in one line naming the option, before the
    command reads anything (``--card auto`` and ``--card cpu`` are names)."""
    for dest in NAME_OPTIONS:
        given = getattr(a, dest, None)
        for value in given if isinstance(given, list) else [] if given is None else [given]:
            why = name_words(str(value), dest)
            if why:
                raise InputError(f"--{dest}", why)


def pool_lines(info: dict[str, Any]) -> list[str]:
    """The KV pool line of an engine shape's record (its tokens, pages and whence), for
    ``predict``'s printout; none for a record without one."""
    if "kv_pool_source" not in info:
        return []
    tokens, pages, page = (info.get(k) for k in ("kv_pool_tokens", "kv_pool_pages",
                                                 "kv_page_tokens"))
    if not pages:
        return [f"  KV pool: not limited ({info['kv_pool_source']})"]
    held = (f"{pages:,} pages of {page:,} tokens ({tokens:,} tokens as vLLM counts them)"
            if page else f"{tokens:,} tokens")
    return [f"  KV pool: {held} ({info['kv_pool_source']}); a request is admitted only "
            "while it holds the request's prompt and output"]
