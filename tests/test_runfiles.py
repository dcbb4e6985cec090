"""Runs at rest: every compact bench result decodes to exactly the bytes the client wrote
(SHA-256 and size from the manifest taken before compaction), a bad archive is refused
naming the file, and every derived table of a run is the same from its compact files as
from its plain ones."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from claimcheck.core import runfiles
from claimcheck.core.errors import InputError
from claimcheck.core.io import read_json
from claimcheck.core.paths import RAW, RUNS
from claimcheck.report.derive import metrics_csv, run_record
from claimcheck.report.record import find_runs
from tests.fabricate import plain_copy


def _manifest() -> list[tuple[str, int, str]]:
    rows = []
    for line in (RUNS / runfiles.BENCH_MANIFEST).read_text().splitlines():
        if line and not line.startswith("#"):
            sha, size, rel = line.split("  ")
            rows.append((sha, int(size), rel))
    return rows


def test_manifest_lists_every_committed_step():
    rels = {rel for _, _, rel in _manifest()}
    # the 70 steps recorded before compaction; runs since are stored compact by the runner
    assert len({r for r in rels if not r.startswith("h200-20261201-")}) == 70
    on_disk = {str(p.relative_to(RUNS)) + "/" + runfiles.BENCH
               for p in (q.parent for q in RUNS.glob("*/steps/*/bench.json*"))}
    assert rels == on_disk  # every committed step has its line


@pytest.mark.parametrize("sha,size,rel", [pytest.param(*m, id=m[2].removesuffix("/bench.json"))
                                           for m in _manifest()])
def test_bench_decodes_to_the_original_bytes(sha, size, rel):
    raw = runfiles.bench_bytes((RUNS / rel).parent)
    assert len(raw) == size
    assert runfiles.sha256_hex(raw) == sha


def test_compact_keeps_the_exact_bytes_and_removes_the_plain_file(tmp_path):
    raw = b'{"duration": 0.1000000000000000055511151231257827, "itls": [[]]}\n'
    (tmp_path / "bench.json").write_bytes(raw)
    out = runfiles.compact_bench(tmp_path)
    assert out == tmp_path / "bench.json.xz" and not (tmp_path / "bench.json").exists()
    assert lzma.decompress(out.read_bytes()) == raw
    assert runfiles.bench_path(tmp_path) == out
    assert read_json(out) == json.loads(raw)
    assert runfiles.compact_bench(tmp_path) == out  # already compact: kept as it is


def test_plain_bench_of_an_old_run_is_read_as_it_is(tmp_path):
    (tmp_path / "bench.json").write_text('{"completed": 3}')
    assert runfiles.bench_path(tmp_path) == tmp_path / "bench.json"
    assert json.loads(runfiles.bench_bytes(tmp_path)) == {"completed": 3}
    assert runfiles.bench_path(tmp_path / "nothing") is None


def test_a_broken_archive_is_refused_naming_the_file(tmp_path):
    bad = tmp_path / "bench.json.xz"
    bad.write_bytes(b"not xz at all")
    with pytest.raises(InputError, match=r"bench\.json\.xz: not a valid \.xz archive"):
        read_json(bad)


@pytest.mark.parametrize("run", find_runs(RUNS), ids=lambda p: p.name)
def test_derived_tables_unchanged_by_compaction(run: Path, tmp_path):
    """The run record and the metrics table from the committed (compact) run equal those
    from a copy with every bench result written out as the plain bench.json it was."""
    plain = plain_copy(run, tmp_path / run.name)
    assert not list(plain.glob("steps/*/" + runfiles.BENCH_COMPACT))
    args = (RAW / "cards.csv", RAW / "ceilings.csv", RAW / "models/qwen3.8-27b/config.json")
    run_record(run, *args, tmp_path / "compact.json")
    run_record(plain, *args, tmp_path / "plain.json")
    a, b = read_json(tmp_path / "compact.json"), read_json(tmp_path / "plain.json")
    assert a.pop("path") == str(run) and b.pop("path") == str(plain)
    assert a == b
    metrics_csv(run, tmp_path / "compact.csv")
    metrics_csv(plain, tmp_path / "plain.csv")
    assert (tmp_path / "compact.csv").read_bytes() == (tmp_path / "plain.csv").read_bytes()
