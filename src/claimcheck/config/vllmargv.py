"""What a ``vllm serve`` command line sets, read the way vLLM 0.26 reads it (pure).

vLLM's parser (``vllm.utils.argparse_utils.FlexibleArgumentParser`` over Python's argparse)
turns ``_`` into ``-`` in ``--`` option names, reads ``-O3``/``-O=3``/``-O 3`` as
``--optimization-level``, merges dotted ``--opt.key value`` forms into one JSON value put
after every other option, accepts ``--opt=value`` and ``--opt value``, keeps the **last**
occurrence of an option, and accepts any unambiguous prefix of an option (``--tensor 2``,
``-t 2`` for ``-tp 2``, ``-c`` for ``-cc``). Only the options that decide NVLink multicast
are read here (:data:`GUARDED`); a form of one of them that cannot be read for certain
(an abbreviation, a dotted form, an options file, a size that is not a plain integer, JSON
that does not parse or repeats a key) raises :class:`UnreadableArgv`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SIZES = {
    "tensor_parallel_size": ("--tensor-parallel-size", "-tp"),
    "pipeline_parallel_size": ("--pipeline-parallel-size", "-pp"),
    "data_parallel_size": ("--data-parallel-size", "-dp"),
    "prefill_context_parallel_size": ("--prefill-context-parallel-size", "-pcp"),
}
"""Parallel sizes (vLLM 0.26 ``engine/arg_utils.py``) whose product is the GPUs one engine
spans: any above 1 makes the engine multi-GPU."""

GUARDED: dict[str, tuple[str, ...]] = {
    **SIZES,
    "compilation_config": ("--compilation-config", "-cc"),
    "config": ("--config",),
}
"""Every option string the guard reads, by vLLM's destination name."""

OPT_LEVELS = {"0", "1", "2", "3"}


class UnreadableArgv(ValueError):
    """A form of a guarded option the guard cannot read for certain."""


@dataclass(frozen=True)
class ServeView:
    """The guarded options of one ``vllm serve`` command: the last value of each and the
    words that gave it."""

    sizes: dict[str, tuple[int, str]] = field(default_factory=dict)
    compilation_config: tuple[dict[str, Any], str] | None = None

    def size(self, dest: str) -> int:
        return self.sizes[dest][0] if dest in self.sizes else 1

    def multi_gpu(self) -> list[str]:
        """The words that make the engine span more than one GPU (empty: one GPU)."""
        return [words for v, words in self.sizes.values() if v > 1]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise UnreadableArgv(f"repeats the key {dup[0]!r} (which one vLLM keeps is not "
                             "certain)")
    return dict(pairs)


def read_json_object(raw: str, words: str) -> dict[str, Any]:
    """``raw`` as one JSON object, no key repeated; :class:`UnreadableArgv` otherwise."""
    try:
        v = json.loads(raw, object_pairs_hook=_no_duplicates)
    except UnreadableArgv as e:
        raise UnreadableArgv(f"{words}: the JSON {e}") from None
    except json.JSONDecodeError as e:
        raise UnreadableArgv(f"{words}: not JSON ({e.msg} at character {e.pos})") from None
    if not isinstance(v, dict):
        raise UnreadableArgv(f"{words}: not a JSON object")
    return v


def _normalise(tok: str) -> str:
    """vLLM's renaming of a ``--`` option: ``_`` to ``-`` before the first ``.`` of the
    name (the part before ``=``)."""
    if not tok.startswith("--"):
        return tok
    head, eq, val = tok.partition("=")
    name, dot, rest = head[2:].partition(".")
    return "--" + name.replace("_", "-") + dot + rest + eq + val


def _guarded_of(head: str) -> tuple[str | None, str | None]:
    """(dest, how) for an option name: how is ``exact``, ``prefix`` (argparse would take
    it as an abbreviation) or ``dotted`` (``--opt.key``, ``--op.key``); (None, None) for an
    option not guarded."""
    base = head.split(".", 1)[0]
    dotted = base != head
    for dest, strings in GUARDED.items():
        for s in strings:
            if base == s:
                return dest, "dotted" if dotted else "exact"
    for dest, strings in GUARDED.items():
        for s in strings:
            min_len = 3 if s.startswith("--") else 2
            if len(base) >= min_len and s.startswith(base) and base[:2] == s[:2]:
                return dest, "dotted" if dotted else "prefix"
    return None, None


def read_serve_args(args: Sequence[str]) -> ServeView:
    """The guarded options of the arguments after ``vllm serve`` (pure).

    Last occurrence wins, as in vLLM; :class:`UnreadableArgv` for any form that vLLM might
    read otherwise than stated here."""
    toks = [_normalise(a) for a in args]
    sizes: dict[str, tuple[int, str]] = {}
    comp: tuple[dict[str, Any], str] | None = None
    i = 0
    while i < len(toks):
        tok = toks[i]
        i += 1
        if not tok.startswith("-") or tok in ("-", "--"):
            if tok == "--":
                raise UnreadableArgv("a bare '--' ends vLLM's options; what follows it is "
                                     "read as positional arguments")
            continue
        if tok.startswith("-O") and not tok.startswith("--"):
            level = tok[3:] if tok[2:3] == "=" else tok[2:]
            if tok == "-O":
                level = toks[i] if i < len(toks) else ""
                if level in OPT_LEVELS:
                    i += 1
                    continue
                raise UnreadableArgv(f"'-O {level}': vLLM 0.26 reads -O only as "
                                     "--optimization-level 0-3; give a compilation config "
                                     "as --compilation-config JSON")
            if level not in OPT_LEVELS:
                raise UnreadableArgv(f"{tok!r}: vLLM 0.26 reads it as --optimization-level "
                                     f"{level!r}, not a level 0-3 (a compilation config is "
                                     "given as --compilation-config JSON)")
            continue
        head, eq, val = tok.partition("=")
        dest, how = _guarded_of(head)
        if dest is None:
            continue
        if how == "prefix":
            raise UnreadableArgv(f"{head!r} abbreviates {GUARDED[dest][0]} (vLLM's argparse "
                                 "accepts prefixes); write the option in full")
        if how == "dotted":
            raise UnreadableArgv(f"{head!r}: dotted forms of {GUARDED[dest][0]} are "
                                 "merged by vLLM after all other options; give the whole "
                                 "value as one JSON")
        if dest == "config":
            raise UnreadableArgv(f"{head!r} reads vLLM options from a file the guard does "
                                 "not read; put them in the engine's fields and extra_args")
        if not eq:
            if i >= len(toks):
                raise UnreadableArgv(f"{head} has no value")
            val = toks[i]
            i += 1
        words = f"{head}={val}" if eq else f"{head} {val}"
        if dest == "compilation_config":
            comp = (read_json_object(val, repr(words)), words)
        else:
            if not (val.isascii() and val.isdigit()):
                raise UnreadableArgv(f"{words!r}: the size is not a plain integer")
            sizes[dest] = (int(val), words)
    return ServeView(sizes=sizes, compilation_config=comp)


def serve_args(argv: Sequence[str]) -> list[str] | None:
    """The arguments after ``serve`` in a ``vllm serve`` argv (the ``vllm`` script or
    ``python -m vllm.entrypoints.cli.main``), or None when ``argv`` is not one."""
    for i, a in enumerate(argv[:-1]):
        name = a.rsplit("/", 1)[-1]
        if name == "vllm" and argv[i + 1] == "serve":
            return list(argv[i + 2:])
        if (a == "-m" and argv[i + 1].startswith("vllm.") and i + 2 < len(argv)
                and argv[i + 2] == "serve"):
            return list(argv[i + 3:])
    return None
