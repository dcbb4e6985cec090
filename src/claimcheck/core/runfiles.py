"""Where a run directory keeps each file, and the compact forms of a step's bench result.

A step's ``vllm bench serve --save-detailed`` result (``bench.json``) is kept at rest as
``bench.cols`` when that form gives back the client's exact bytes, else as ``bench.json.xz``
(the exact bytes, lzma preset 9e); a run recorded before compaction keeps its plain
``bench.json``. Every form is read back to the exact bytes the client wrote.

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

import fcntl
import hashlib
import json
import lzma
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from claimcheck.core.errors import InputError
from claimcheck.core.io import read_bytes, read_json_bytes

BENCH = "bench.json"
"""The name the client writes (and runs recorded before compaction keep)."""
BENCH_COLS = "bench.cols"
"""The columnar form a bench result is kept under at rest (see the module docstring)."""
BENCH_COMPACT = "bench.json.xz"
"""The xz form, kept when ``bench.cols`` would not give back the exact bytes."""
AT_REST = (BENCH_COLS, BENCH_COMPACT)
"""The compact names, in the order they are looked for."""
BENCH_MANIFEST = "bench-sha256.txt"
"""In the runs folder: ``sha256  size  run/steps/dir/bench.json  [container-sha256]`` of
each original (:func:`read_manifest`); every reader of a run checks its steps against it
(:func:`bench_data`)."""
XZ_PRESET = 9 | lzma.PRESET_EXTREME
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
    d, indent = _cols_data(packed)
    return json.dumps(d, indent=indent).encode()


def decode_cols_data(packed: bytes) -> dict[str, Any]:
    """What ``json.loads`` of :func:`decode_cols`'s bytes gives, built directly from the
    columns (no float written out and parsed back); errors as :func:`decode_cols`, and a
    ValueError for a NaN or infinite value, which :func:`claimcheck.core.io.read_json`
    refuses too."""
    d, _ = _cols_data(packed, finite=True)
    return d


def _no_constant(name: str) -> float:
    raise ValueError(f"the header holds {name}, not a JSON number")


def _cols_data(packed: bytes, finite: bool = False) -> tuple[dict[str, Any], int | None]:
    """(the bench dict, its JSON indent) of a ``bench.cols`` container; ``finite``: a NaN
    or infinite column value is a ValueError."""
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


def bench_path(step_dir: str | Path) -> Path | None:
    """The step's bench result, compact first (``bench.cols``, ``bench.json.xz``), else
    plain; None when it has none."""
    d = Path(step_dir)
    for name in (*AT_REST, BENCH):
        if (d / name).is_file():
            return d / name
    return None


def bench_bytes(step_dir: str | Path) -> bytes:
    """The exact bytes the client wrote for a step (decoded when compact); InputError
    naming the file when it is missing or not a valid container."""
    p = bench_path(step_dir)
    if p is None:
        return read_bytes(Path(step_dir) / BENCH)  # InputError: no such file
    return read_bytes(p)


@dataclass(frozen=True)
class ManifestEntry:
    """One line of :data:`BENCH_MANIFEST`: the SHA-256 (hex) and size (bytes) of the
    bench.json the client wrote, and the SHA-256 of the compact file that was checked to
    give those bytes back when it was written (None: not recorded)."""

    sha256: str
    size: int
    container_sha256: str | None = None

    def line(self, rel: str) -> str:
        return "  ".join([self.sha256, str(self.size), rel,
                          *([self.container_sha256] if self.container_sha256 else [])])


_HEX64 = re.compile(r"[0-9a-f]{64}")
MANIFEST_HEAD = (
    "# SHA-256, size in bytes and path of each step's bench.json as the client wrote it, and\n"
    "# (4th field, where recorded) the SHA-256 of the compact file checked to give those\n"
    "# bytes back when it was written (bench.json.xz, since 2026-12-01 bench.cols: see\n"
    "# src/claimcheck/core/runfiles.py). Every reader of a run checks its steps against it.\n")


def read_manifest(path: str | Path) -> dict[str, ManifestEntry]:
    """The entries of a manifest by path (``run/steps/dir/bench.json``); InputError naming
    the file and line of a malformed one."""
    p = Path(path)
    out: dict[str, ManifestEntry] = {}
    for n, line in enumerate(read_bytes(p).decode(errors="replace").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        f = line.split("  ")
        if len(f) not in (3, 4) or not _HEX64.fullmatch(f[0]) or not f[1].isdigit() or (
                len(f) == 4 and not _HEX64.fullmatch(f[3])):
            raise InputError(str(p), "not 'SHA256  SIZE  RUN/steps/DIR/bench.json  "
                             "[CONTAINER-SHA256]'", line=n)
        if f[2] in out:
            raise InputError(str(p), f"{f[2]} is listed twice", line=n)
        out[f[2]] = ManifestEntry(f[0], int(f[1]), f[3] if len(f) == 4 else None)
    return out


def manifest_rel(step_dir: str | Path) -> str:
    """A step's manifest path: ``run/steps/dir/bench.json``."""
    d = Path(step_dir)
    return f"{d.parent.parent.name}/steps/{d.name}/{BENCH}"


def write_manifest(path: str | Path, entries: dict[str, ManifestEntry]) -> None:
    """The whole manifest, its lines in the order of ``entries``, written atomically."""
    p = Path(path)
    text = MANIFEST_HEAD + "".join(e.line(r) + "\n" for r, e in entries.items())
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, p)


def record_manifest(path: str | Path, rel: str, entry: ManifestEntry) -> None:
    """Add (or complete) ``rel``'s line in the manifest at ``path`` (made when missing). A
    line already there for other bytes is never overwritten: InputError naming both."""
    p = Path(path)
    fd = os.open(p.parent, os.O_RDONLY)  # the folder locked: several runners on one host
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        entries = read_manifest(p) if p.is_file() else {}
        old = entries.get(rel)
        if old == entry:
            return
        if old is not None and (old.sha256, old.size) != (entry.sha256, entry.size):
            raise InputError(str(p), f"already records {rel} as {old.size} bytes, SHA-256 "
                             f"{old.sha256}; the step's new result ({entry.size} bytes, "
                             f"{entry.sha256}) is not written over it")
        entries[rel] = entry
        write_manifest(p, entries)
    finally:
        os.close(fd)  # releases the lock


def _check_entry(raw: bytes, entry: ManifestEntry, where: Path, manifest: str) -> None:
    sha = sha256_hex(raw)
    if len(raw) != entry.size or sha != entry.sha256:
        raise InputError(str(where), f"gives back {len(raw)} bytes, SHA-256 {sha[:16]}..., "
                         f"but {manifest} records {entry.size} bytes, SHA-256 "
                         f"{entry.sha256[:16]}...: changed since it was recorded")


def bench_data(step_dir: str | Path, entry: ManifestEntry | None = None,
               manifest: str = BENCH_MANIFEST) -> dict[str, Any]:
    """A step's bench result as ``json.loads`` of :func:`bench_bytes` gives it (a
    ``bench.cols`` decoded straight to the dict); InputError naming the file when it is
    missing or not valid.

    With ``entry`` (its line of the manifest, named ``manifest`` in errors) the bytes the
    file gives back must have the recorded size and SHA-256, else InputError naming the
    file. A ``bench.cols`` whose own SHA-256 is the one recorded with the entry was checked
    to give those bytes back when it was written, so it is not rebuilt as JSON to hash
    (that would cost ~2.6 s of CPU for the 112 committed steps, more than decoding them)."""
    p = bench_path(step_dir)
    if p is None or p.name != BENCH_COLS:
        raw = bench_bytes(step_dir)
        where = p or Path(step_dir) / BENCH
        if entry is not None:
            _check_entry(raw, entry, where, manifest)
        return read_json_bytes(raw, str(where))
    try:
        packed = p.read_bytes()
        if entry is None or entry.container_sha256 == sha256_hex(packed):
            return decode_cols_data(packed)
        d, indent = _cols_data(packed, finite=True)
    except (lzma.LZMAError, OSError, EOFError, ValueError) as e:
        raise InputError(str(p), f"not a valid .cols archive ({e})") from None
    _check_entry(json.dumps(d, indent=indent).encode(), entry, p, manifest)
    return d


def _decode(name: str, packed: bytes) -> bytes:
    """The bytes a compact file called ``name`` holds."""
    return decode_cols(packed) if name == BENCH_COLS else lzma.decompress(packed)


def _write(d: Path, name: str, packed: bytes, raw: bytes) -> Path:
    """Write ``packed`` as ``d/name`` after checking it decodes to ``raw``; the path."""
    out = d / name
    if _decode(name, packed) != raw:  # pragma: no cover - both encoders check already
        raise OSError(f"{out}: does not decode to the original bytes")
    tmp = out.with_name(name + ".tmp")
    tmp.write_bytes(packed)
    os.replace(tmp, out)
    return out


def compact_bench(step_dir: str | Path, manifest: str | Path | None = None) -> Path:
    """Store a step's plain bench.json compact (bench.cols when it gives back the exact
    bytes, else bench.json.xz) and remove the plain file; the compact path. Already
    compact: kept as it is. With ``manifest`` (the runs folder's :data:`BENCH_MANIFEST`),
    the original's SHA-256 and size and the compact file's SHA-256 are recorded there
    (:func:`record_manifest`) before the plain file goes."""
    d = Path(step_dir)
    plain = d / BENCH
    if not plain.is_file():
        return bench_path(d) or d / BENCH_COLS
    raw = plain.read_bytes()
    packed = encode_cols(raw)
    name = BENCH_COLS if packed is not None else BENCH_COMPACT
    if packed is None:
        packed = lzma.compress(raw, preset=XZ_PRESET)
    if manifest is not None:  # first: a line it may not write leaves the step as it was
        record_manifest(manifest, manifest_rel(d),
                        ManifestEntry(sha256_hex(raw), len(raw), sha256_hex(packed)))
    out = _write(d, name, packed, raw)
    plain.unlink()
    return out


def recompact_bench(step_dir: str | Path, sha256: str) -> Path:
    """Re-store a step kept compact (bench.json.xz or bench.cols) as a fresh bench.cols when
    that is exact and the bytes have SHA-256 ``sha256`` (hex), removing the old file; the
    path it is kept under (a plain bench.json: left as it is). InputError naming the file
    when the hash differs, or the step when it has no bench result."""
    d = Path(step_dir)
    old = bench_path(d)
    if old is None:
        raise InputError(str(d), "no bench result (bench.cols, bench.json.xz or bench.json)")
    if old.name == BENCH:
        return old
    raw = read_bytes(old)
    if sha256_hex(raw) != sha256:
        raise InputError(str(old), f"SHA-256 {sha256_hex(raw)} is not the manifest's {sha256}")
    packed = encode_cols(raw)
    if packed is None:
        return old  # not exact as columns: kept as it is
    out = _write(d, BENCH_COLS, packed, raw)
    if old != out:
        old.unlink()
    return out


def recompact_runs(runs: str | Path) -> dict[str, int]:
    """Migration: every step listed in ``runs``' manifest kept compact is re-stored as
    bench.cols where exact (each checked against its manifest SHA-256 and size first), and
    its line completed with the SHA-256 of the file it is kept in; the count of steps per
    name kept. Run: ``python3 -c "from claimcheck.core.runfiles import recompact_runs;
    print(recompact_runs('data/raw/runs'))"``."""
    root, kept = Path(runs), {}
    manifest = root / BENCH_MANIFEST
    entries = read_manifest(manifest)
    for rel, e in entries.items():
        out = recompact_bench((root / rel).parent, e.sha256)
        if len(read_bytes(out)) != e.size:
            raise InputError(str(out), f"gives back another size than the manifest's {e.size}")
        if out.name != BENCH:
            entries[rel] = ManifestEntry(e.sha256, e.size, sha256_hex(out.read_bytes()))
        kept[out.name] = kept.get(out.name, 0) + 1
    write_manifest(manifest, entries)
    return kept


def complete_manifest(runs: str | Path) -> int:
    """Migration: each line of ``runs``' manifest whose step is kept compact gets the
    SHA-256 of that file, after checking the bytes it gives back against the line (size
    and SHA-256); InputError naming the file when they differ. The lines completed. Run:
    ``python3 -c "from claimcheck.core.runfiles import complete_manifest;
    print(complete_manifest('data/raw/runs'))"``."""
    root = Path(runs)
    manifest = root / BENCH_MANIFEST
    entries, done = read_manifest(manifest), 0
    for rel, e in entries.items():
        p = bench_path((root / rel).parent)
        if p is None:
            raise InputError(str(root / rel), f"listed in {manifest} but not on disk")
        _check_entry(read_bytes(p), e, p, str(manifest))
        if p.name != BENCH:
            entries[rel] = ManifestEntry(e.sha256, e.size, sha256_hex(p.read_bytes()))
            done += 1
    write_manifest(manifest, entries)
    return done


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, hex."""
    return hashlib.sha256(data).hexdigest()
