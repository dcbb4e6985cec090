"""Where a run directory keeps each file, and the compact form of a step's bench result.

A step's ``vllm bench serve --save-detailed`` result is stored xz-compressed at rest
(``bench.json.xz``: the exact bytes the client wrote, lzma preset 9e); a run recorded
before that keeps its plain ``bench.json`` and is read as it is. Measured on the 70
committed bench results (54.8 MiB of JSON): gzip -9 leaves 19.7 MiB, xz -9e 17.4 MiB
(decoding all of them: 0.2 s gzip, 0.9 s xz).
"""

from __future__ import annotations

import hashlib
import lzma
from pathlib import Path

from claimcheck.core.io import read_bytes

BENCH = "bench.json"
"""The name the client writes (and runs recorded before compaction keep)."""
BENCH_COMPACT = "bench.json.xz"
"""The name a bench result is kept under at rest."""
BENCH_MANIFEST = "bench-sha256.txt"
"""In the runs folder: ``sha256  size  run/steps/dir/bench.json`` of each original."""
XZ_PRESET = 9 | lzma.PRESET_EXTREME


def bench_path(step_dir: str | Path) -> Path | None:
    """The step's bench result, compact first, else plain; None when it has neither."""
    d = Path(step_dir)
    for name in (BENCH_COMPACT, BENCH):
        if (d / name).is_file():
            return d / name
    return None


def bench_bytes(step_dir: str | Path) -> bytes:
    """The exact bytes the client wrote for a step (decompressed when compact)."""
    p = bench_path(step_dir)
    if p is None:
        return read_bytes(Path(step_dir) / BENCH)  # InputError: no such file
    return read_bytes(p)


def compact_bench(step_dir: str | Path) -> Path:
    """Store a step's plain bench.json as bench.json.xz (checked to decode to the same
    bytes before the plain file is removed); the compact path. Already compact: kept."""
    d = Path(step_dir)
    plain, compact = d / BENCH, d / BENCH_COMPACT
    if not plain.is_file():
        return compact
    raw = plain.read_bytes()
    packed = lzma.compress(raw, preset=XZ_PRESET)
    if lzma.decompress(packed) != raw:  # pragma: no cover - lzma is lossless
        raise OSError(f"{compact}: does not decode to {plain}'s bytes")
    compact.write_bytes(packed)
    plain.unlink()
    return compact


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, hex."""
    return hashlib.sha256(data).hexdigest()
