"""The ``bench.cols`` container: a step's bench result (``vllm bench serve
--save-detailed`` JSON) as columns, encoded and decoded in memory (bytes in, bytes out; no
file opened). Where a run keeps it and its manifest: :mod:`claimcheck.runs.runfiles`.

``bench.cols`` is one xz stream (preset 9e) holding: the line ``MAGIC``; one JSON line
``{"indent": null|int, "columns": [...], "rest": {...}}`` where ``rest`` is the result with
each float column replaced by null (so key order is kept) and each column entry is
``{"key", "n" (values), "lens" (per-row lengths of a list of lists, or null),
"exp" (null: float64; E: int64 k with value k * 2**-E, exact), "word"}``; then each
column's values, 8 bytes each little-endian, byte-shuffled (all first bytes, then all
second ...). A float column is a top-level list (or list of lists, like ``itls``) whose
values are all JSON floats. A word column (``"word": " w"``) is a list of texts made only
of the synthetic tokenizer's words ``" w17 w4032"`` (dummy-weight runs' ``generated_texts``):
its values are the int64 word numbers, ``lens`` the words per text. The result is rebuilt
with ``json.dumps(rest, indent=indent)``.

Measured on the 112 committed bench results (89.11 MB of JSON, 2026-12-01): xz -9e of the
JSON 28.17 MB, ``bench.cols`` 19.07 MB (-32%; an itl value ~4 bytes instead of ~9, a
synthetic word ~2.3 instead of ~2.8); decoding all of them takes 3.0 s of CPU instead of
1.8 s (mostly ``json.dumps`` writing the floats back).
"""

from __future__ import annotations

import json
import lzma
import re
from typing import Any

import numpy as np

XZ_PRESET = 9 | lzma.PRESET_EXTREME
"""The xz preset of a ``bench.cols`` stream and of a ``bench.json.xz``."""
MAGIC = b"claimcheck bench.cols 1\n"
"""First line of a decompressed ``bench.cols``."""
WORD = " w"
"""What precedes each word number in a text of the synthetic tokenizer's words."""
_WORDS = re.compile(r"(?: w(?:0|[1-9][0-9]{0,17}))*")
_LAYOUTS: tuple[int | None, ...] = (None, 1)
"""``json.dumps`` indents tried: vLLM's client (none) and claimcheck's load client (1)."""


def _shuffle(a: np.ndarray) -> bytes:
    """8-byte little-endian values, byte-shuffled: byte 0 of each, then byte 1, ..."""
    return a.view(np.uint8).reshape(-1, 8).T.tobytes()


def _unshuffle(b: bytes, n: int, dtype: str) -> np.ndarray:
    return np.frombuffer(b, np.uint8).reshape(8, n).T.copy().view(dtype).reshape(n)


def _float_column(v: Any) -> tuple[list[float], list[int] | None] | None:
    """The values of a list (or list of lists) of JSON floats and the row lengths; None
    when ``v`` is anything else (ints, strings, nulls stay in the JSON part)."""
    if not isinstance(v, list) or not v:
        return None
    if all(type(x) is float for x in v):
        return v, None
    if all(type(r) is list and all(type(x) is float for x in r) for r in v):
        return [x for r in v for x in r], [len(r) for r in v]
    return None


def _word_column(v: Any) -> tuple[list[int], list[int]] | None:
    """The word numbers of a list of texts each made only of ``" w<number>"`` words (the
    synthetic tokenizer's output, :mod:`claimcheck.measure.tokenizer`) and the words per
    text; None when ``v`` is anything else or holds no word."""
    if not isinstance(v, list) or not all(type(t) is str and _WORDS.fullmatch(t) for t in v):
        return None
    rows = [t.split(WORD)[1:] for t in v]
    nums = [int(x) for r in rows for x in r]
    return (nums, [len(r) for r in rows]) if nums else None


def _fixed_exp(a: np.ndarray) -> int | None:
    """The least E in 0..60 with every value an integer multiple of 2**-E below 2**53 in
    magnitude (so int64 k = value * 2**E is exact both ways); None when there is none
    (or a value is not finite, or is -0.0)."""
    if not np.all(np.isfinite(a)) or np.any(np.signbit(a) & (a == 0)):
        return None
    for e in range(61):
        k = np.ldexp(a, e)
        if np.abs(k).max(initial=0.0) >= 2.0**53:
            return None
        if np.array_equal(k, np.round(k)):
            return e
    return None


def encode_cols(raw: bytes) -> bytes | None:
    """``raw`` (a bench.json's bytes) as a ``bench.cols`` container, or None when it does
    not decode back to exactly ``raw`` (not a JSON object, another layout, no float column)."""
    try:
        d = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    layout = next((i for i in _LAYOUTS if json.dumps(d, indent=i).encode() == raw), "none")
    if layout == "none":
        return None
    rest, cols, body = dict(d), [], []
    for key, v in d.items():
        col, words = _float_column(v), _word_column(v)
        if col is not None:
            a = np.asarray(col[0], dtype="<f8")
            e = _fixed_exp(a)
            body.append(_shuffle(a if e is None else np.ldexp(a, e).astype("<i8")))
            cols.append({"key": key, "n": len(a), "lens": col[1], "exp": e, "word": None})
        elif words is not None:
            body.append(_shuffle(np.asarray(words[0], dtype="<i8")))
            cols.append({"key": key, "n": len(words[0]), "lens": words[1], "exp": None,
                         "word": WORD})
        else:
            continue
        rest[key] = None
    if not cols:
        return None
    head = json.dumps({"indent": layout, "columns": cols, "rest": rest}).encode()
    packed = lzma.compress(MAGIC + head + b"\n" + b"".join(body), preset=XZ_PRESET)
    return packed if decode_cols(packed) == raw else None


def decode_cols(packed: bytes) -> bytes:
    """The exact bench.json bytes a ``bench.cols`` container holds; ValueError (or
    lzma.LZMAError) saying what is wrong when it is not one."""
    d, indent = cols_data(packed)
    return json.dumps(d, indent=indent).encode()


def decode_cols_data(packed: bytes) -> dict[str, Any]:
    """What ``json.loads`` of :func:`decode_cols`'s bytes gives, built directly from the
    columns (no float written out and parsed back); errors as :func:`decode_cols`, and a
    ValueError for a NaN or infinite value, which :func:`claimcheck.files.io.read_json_text`
    refuses too."""
    d, _ = cols_data(packed, finite=True)
    return d


def _no_constant(name: str) -> float:
    raise ValueError(f"the header holds {name}, not a JSON number")


def cols_data(packed: bytes, finite: bool = False) -> tuple[dict[str, Any], int | None]:
    """(the bench dict, its JSON indent) of a ``bench.cols`` container; ``finite``: a NaN
    or infinite column value is a ValueError. The same errors as :func:`decode_cols`."""
    data = lzma.decompress(packed)
    if not data.startswith(MAGIC):
        raise ValueError("not a bench.cols container (no magic line)")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise ValueError("bench.cols header line is cut off")
    try:
        head = json.loads(data[len(MAGIC):end],
                          parse_constant=_no_constant if finite else None)
        d, off, body = head["rest"], 0, data[end + 1:]
        for c in head["columns"]:
            n, size = int(c["n"]), 8 * int(c["n"])
            if off + size > len(body):
                raise ValueError(f"column {c['key']!r} is cut off "
                                 f"({len(body) - off} of {size} bytes)")
            word, e = c.get("word"), c["exp"]
            a = _unshuffle(body[off:off + size], n, "<i8" if word or e is not None else "<f8")
            off += size
            a = a if e is None else np.ldexp(a.astype("<f8"), -e)
            if finite and not word and not np.isfinite(a).all():
                raise ValueError(f"column {c['key']!r} holds NaN or infinity (not a JSON "
                                 "number)")
            vals = a.tolist()
            if c["lens"] is not None:
                at = np.cumsum([0, *c["lens"]]).tolist()
                if at[-1] != n:
                    raise ValueError(f"column {c['key']!r}: row lengths sum to {at[-1]}, not {n}")
                vals = [vals[i:j] for i, j in zip(at[:-1], at[1:], strict=True)]
            if word:
                vals = [word + word.join(map(str, r)) if r else "" for r in vals]
            d[c["key"]] = vals
        if off != len(body):
            raise ValueError(f"{len(body) - off} bytes after the last column")
        indent = head["indent"]
        return d, (None if indent == "none" else indent)
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"bench.cols header is malformed ({e!r})") from None
