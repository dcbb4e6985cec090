"""Where a run directory keeps each file, and a step's bench result read and stored.

A step's ``vllm bench serve --save-detailed`` result (``bench.json``) is kept at rest as
``bench.cols`` (:mod:`claimcheck.files.benchcols`) when that form gives back the client's
exact bytes, else as ``bench.json.xz`` (the exact bytes, lzma preset 9e); a run recorded
before compaction keeps its plain ``bench.json``. Every form is read back to the exact bytes
the client wrote, and checked against the runs folder's manifest (:data:`BENCH_MANIFEST`).
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

from claimcheck.files.benchcols import (
    XZ_PRESET,
    cols_data,
    decode_cols,
    decode_cols_data,
    encode_cols,
)
from claimcheck.files.errors import InputError
from claimcheck.files.io import read_json_bytes
from claimcheck.files.readers import read_bytes

BENCH = "bench.json"
"""The name the client writes (and runs recorded before compaction keep)."""
BENCH_COLS = "bench.cols"
"""The columnar form a bench result is kept under at rest (:mod:`claimcheck.files.benchcols`)."""
BENCH_COMPACT = "bench.json.xz"
"""The xz form, kept when ``bench.cols`` would not give back the exact bytes."""
AT_REST = (BENCH_COLS, BENCH_COMPACT)
"""The compact names, in the order they are looked for."""
BENCH_MANIFEST = "bench-sha256.txt"
"""In the runs folder: ``sha256  size  run/steps/dir/bench.json  [container-sha256]`` of
each original (:func:`read_manifest`); every reader of a run checks its steps against it
(:func:`bench_data`)."""


def bench_path(step_dir: str | Path) -> Path | None:
    """The step's bench result, compact first (``bench.cols``, ``bench.json.xz``), else
    plain; None when it has none."""
    d = Path(step_dir)
    for name in (*AT_REST, BENCH):
        if (d / name).is_file():
            return d / name
    return None


def load_bench(path: str | Path) -> dict[str, Any]:
    """A step's bench result from its step directory or its ``bench.json`` path; a step
    kept compact (``bench.cols``, ``bench.json.xz``) is read from there."""
    p = Path(path)
    if p.is_dir():
        return bench_data(p)
    if not p.exists() and p.name == BENCH:
        return bench_data(p.parent)
    raw = read_bytes(p)
    try:
        return json.loads(raw)
    except ValueError as e:
        raise InputError(str(p), f"not a JSON bench result ({len(raw)} bytes: {e}); the "
                         "client may have stopped while writing it (a full disk?)") from None


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
    "# src/claimcheck/files/benchcols.py). Every reader of a run checks its steps against it.\n")


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
    replace_atomically(p, text.encode("utf-8"))


def replace_atomically(path: Path, data: bytes | str) -> None:
    """Write ``data`` as ``path`` whole or not at all: a write that fails (a full disk)
    leaves ``path`` as it was, no partial ``.tmp`` beside it, and an OSError naming
    ``path`` (write(2) names no file)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        if isinstance(data, str):
            tmp.write_text(data)
        else:
            tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise (e if e.filename else OSError(e.errno, e.strerror, str(path))) from None


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
        d, indent = cols_data(packed, finite=True)
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
    replace_atomically(out, packed)
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
    name kept. Run: ``python3 -c "from claimcheck.runs.runfiles import recompact_runs;
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
    ``python3 -c "from claimcheck.runs.runfiles import complete_manifest;
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
