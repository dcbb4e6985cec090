"""Runs at rest: every compact bench result (bench.cols or bench.json.xz) decodes to exactly
the bytes the client wrote (SHA-256 and size from the manifest taken before compaction), a
bad archive is refused naming the file, and every derived table of a run is the same from
its compact files as from its plain ones."""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path

import pytest

from claimcheck.files import benchcols
from claimcheck.files.errors import InputError
from claimcheck.files.paths import RAW, RUNS
from claimcheck.files.readers import read_json
from claimcheck.pipeline.derive import metrics_csv, run_record
from claimcheck.runs import runfiles
from claimcheck.runs.run import find_runs
from tests.fabricate import plain_copy


def _manifest() -> list[tuple[str, int, str]]:
    rows = []
    for line in (RUNS / runfiles.BENCH_MANIFEST).read_text().splitlines():
        if line and not line.startswith("#"):
            sha, size, rel = line.split("  ")[:3]
            rows.append((sha, int(size), rel))
    return rows


def test_manifest_lists_every_committed_step():
    rels = {rel for _, _, rel in _manifest()}
    # the 70 steps recorded before compaction (runs of 2026-11-29); runs since are stored
    # compact by the runner
    assert len({r for r in rels if r.split("-")[1] < "20261201"}) == 70
    on_disk = {str(p.relative_to(RUNS)) + "/" + runfiles.BENCH
               for p in RUNS.glob("*/steps/*") if runfiles.bench_path(p) is not None}
    assert rels == on_disk  # every committed step has its line


@pytest.mark.data
@pytest.mark.parametrize("sha,size,rel", [pytest.param(*m, id=m[2].removesuffix("/bench.json"))
                                           for m in _manifest()])
def test_bench_decodes_to_the_original_bytes(sha, size, rel):
    raw = runfiles.bench_bytes((RUNS / rel).parent)
    assert len(raw) == size
    assert runfiles.sha256_hex(raw) == sha


def _bench(itls: list, **kw) -> dict:
    """A hand-made bench result: three requests, key order as vLLM writes it."""
    return {"date": "20261201-120000", "duration": 0.1000000000000000055511151231257827,
            "input_lens": [4, 4, 4], "ttfts": [0.25, 0.5, 0.125], "itls": itls,
            "generated_texts": ["a", "b", ""], "errors": ["", "", ""],
            "start_times": [1526.478365908, 1526.478543794, 1046.583200237], **kw}


def test_compact_keeps_the_exact_bytes_and_removes_the_plain_file(tmp_path):
    # itls of 3, 2 and 0 tokens; 0.015 is no multiple of a power of two (kept as float64),
    # the ttfts are multiples of 2**-3 (kept as integers k * 2**-3); the start times of
    # 2**10..2**11 s have 52 bits after the binary point at most, and 1046.583200237
    # (0x1.05a55327163bdp+10) needs the last of them: integers k * 2**-42
    d = _bench([[0.015, 0.03125, 1e-300], [2.5, 0.1], []])
    raw = json.dumps(d).encode()
    (tmp_path / "bench.json").write_bytes(raw)
    out = runfiles.compact_bench(tmp_path)
    assert out == tmp_path / "bench.cols" and not (tmp_path / "bench.json").exists()
    assert runfiles.bench_path(tmp_path) == out
    assert runfiles.bench_bytes(tmp_path) == raw
    assert read_json(out) == d and list(read_json(out)) == list(d)  # key order kept
    data = lzma.decompress(out.read_bytes())
    head = json.loads(data.split(b"\n")[1])
    assert [(c["key"], c["n"], c["lens"], c["exp"]) for c in head["columns"]] == [
        ("ttfts", 3, None, 3), ("itls", 5, [3, 2, 0], None), ("start_times", 3, None, 42)]
    assert head["rest"]["itls"] is None and head["rest"]["input_lens"] == [4, 4, 4]
    assert len(data) == len(data.split(b"\n")[0]) + len(data.split(b"\n")[1]) + 2 + 8 * 11
    assert runfiles.compact_bench(tmp_path) == out  # already compact: kept as it is


def test_the_load_clients_indented_layout_is_kept_exactly(tmp_path):
    raw = json.dumps(_bench([[0.2, 0.7]]), indent=1).encode()
    (tmp_path / "bench.json").write_bytes(raw)
    assert runfiles.compact_bench(tmp_path).name == "bench.cols"
    assert runfiles.bench_bytes(tmp_path) == raw


def _columns(p: Path) -> dict:
    """bench.cols ``p``'s header: column key -> (values, exponent), and the JSON part."""
    head = json.loads(lzma.decompress(p.read_bytes()).split(b"\n")[1])
    return {c["key"]: (c["n"], c["exp"]) for c in head["columns"]} | {"": head["rest"]}


def test_an_int_in_itls_keeps_itls_in_the_json_part(tmp_path):
    raw = json.dumps(_bench([[0.015, 0]])).encode()  # 0, not 0.0: float64 would write 0.0
    (tmp_path / "bench.json").write_bytes(raw)
    out = runfiles.compact_bench(tmp_path)
    cols = _columns(out)
    assert set(cols) == {"ttfts", "start_times", ""} and cols[""]["itls"] == [[0.015, 0]]
    assert runfiles.bench_bytes(tmp_path) == raw


def test_negative_zero_is_kept_as_float64(tmp_path):
    raw = json.dumps(_bench([[0.5, -0.0]])).encode()  # as integers k * 2**-1 it would be 0.0
    (tmp_path / "bench.json").write_bytes(raw)
    assert _columns(runfiles.compact_bench(tmp_path))["itls"] == (2, None)
    assert runfiles.bench_bytes(tmp_path) == raw and b"[[0.5, -0.0]]" in raw


@pytest.mark.parametrize("raw", [
    json.dumps(_bench([[0.015]])).encode() + b"\n",   # a layout json.dumps does not write
    json.dumps(_bench([[0.015]]), indent=2).encode(),
    b'{"itls": [[1.50]]}',                             # 1.50 is written back as 1.5
    b'{"completed": 3}',                               # no float column
    b"[0.5, 0.25]",                                    # not an object
], ids=["newline", "indent-2", "float-spelling", "no-floats", "array"])
def test_bytes_columns_cannot_give_back_stay_xz(tmp_path, raw):
    (tmp_path / "bench.json").write_bytes(raw)
    out = runfiles.compact_bench(tmp_path)
    assert out == tmp_path / "bench.json.xz" and not (tmp_path / "bench.cols").exists()
    assert lzma.decompress(out.read_bytes()) == raw == runfiles.bench_bytes(tmp_path)


def test_recompact_checks_the_manifest_hash_and_moves_xz_to_cols(tmp_path):
    raw = json.dumps(_bench([[0.015, 0.25]])).encode()
    (tmp_path / "bench.json.xz").write_bytes(lzma.compress(raw))
    with pytest.raises(InputError, match=r"bench\.json\.xz: SHA-256 [0-9a-f]{64} is not "
                                         r"the manifest's 00"):
        runfiles.recompact_bench(tmp_path, "00")
    assert (tmp_path / "bench.json.xz").exists()
    out = runfiles.recompact_bench(tmp_path, runfiles.sha256_hex(raw))
    assert out.name == "bench.cols" and not (tmp_path / "bench.json.xz").exists()
    assert runfiles.bench_bytes(tmp_path) == raw
    assert runfiles.recompact_bench(tmp_path, runfiles.sha256_hex(raw)) == out  # re-stored
    assert runfiles.bench_bytes(tmp_path) == raw
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "bench.json.xz").write_bytes(lzma.compress(b'{"completed": 3}'))
    assert runfiles.recompact_bench(odd, runfiles.sha256_hex(b'{"completed": 3}')).name == (
        "bench.json.xz")  # no column: kept as it is
    with pytest.raises(InputError, match=r"nothing: no bench result \(bench\.cols, "):
        runfiles.recompact_bench(tmp_path / "nothing", "00")


def test_texts_of_synthetic_words_are_kept_as_word_numbers(tmp_path):
    d = _bench([[0.5]], generated_texts=[" w17 w4032", "", " w0"])
    raw = json.dumps(d).encode()
    (tmp_path / "bench.json").write_bytes(raw)
    out = runfiles.compact_bench(tmp_path)
    data = lzma.decompress(out.read_bytes())
    head = json.loads(data.split(b"\n")[1])
    assert [(c["key"], c["n"], c["lens"], c["word"]) for c in head["columns"]][2] == (
        "generated_texts", 3, [2, 0, 1], " w")
    # columns ttfts 3, itls 1, generated_texts 3, start_times 3 values; the texts' numbers
    # 17, 4032, 0 byte-shuffled: low bytes 17, 0xc0, 0; next 0, 0x0f, 0; the rest zero
    at = len(data) - 8 * 10 + 8 * 4
    assert data[at:at + 24] == bytes([17, 0xC0, 0, 0, 0x0F, 0]) + bytes(18)
    assert runfiles.bench_bytes(tmp_path) == raw


@pytest.mark.parametrize("texts", [[" w017"], ["w17"], [" w17  w3"], [" w17 "], [" x17"],
                                   [" w17", 3], ["", ""]])
def test_texts_not_all_synthetic_words_stay_in_the_json_part(tmp_path, texts):
    raw = json.dumps(_bench([[0.5]], generated_texts=texts)).encode()
    (tmp_path / "bench.json").write_bytes(raw)
    cols = _columns(runfiles.compact_bench(tmp_path))
    assert "generated_texts" not in cols and cols[""]["generated_texts"] == texts
    assert runfiles.bench_bytes(tmp_path) == raw


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


def _cols(tmp_path: Path, data: bytes) -> Path:
    """A bench.cols holding ``data`` (decompressed container bytes) in step dir tmp_path."""
    p = tmp_path / "bench.cols"
    p.write_bytes(lzma.compress(data))
    return p


def test_a_broken_cols_container_is_refused_naming_the_file(tmp_path):
    raw = json.dumps(_bench([[0.015, 0.25]])).encode()
    (tmp_path / "bench.json").write_bytes(raw)
    packed = runfiles.compact_bench(tmp_path).read_bytes()
    (tmp_path / "bench.cols").write_bytes(packed[:-40])  # file cut short
    with pytest.raises(InputError, match=r"bench\.cols: not a valid \.cols archive"):
        runfiles.bench_bytes(tmp_path)
    data = lzma.decompress(packed)
    cases = {data[:-8]: r"column 'start_times' is cut off \(16 of 24 bytes\)",
             data + b"x": r"1 bytes after the last column",
             b"claimcheck bench.cols 9\n" + data[24:]: r"no magic line",
             data[:30]: r"header line is cut off",
             benchcols.MAGIC + b'{"rest": {}}\n': r"header is malformed \(KeyError\('columns'\)\)"}
    for bad, words in cases.items():
        p = _cols(tmp_path, bad)
        with pytest.raises(InputError, match=re.escape(f"{p}: not a valid .cols archive (")
                           + ".*" + words):
            read_json(p)


@pytest.mark.data
@pytest.mark.parametrize("run", find_runs(RUNS), ids=lambda p: p.name)
def test_derived_tables_unchanged_by_compaction(run: Path, tmp_path):
    """The run record and the metrics table from the committed (compact) run equal those
    from a copy with every bench result written out as the plain bench.json it was."""
    plain = plain_copy(run, tmp_path / run.name)
    assert not [p for n in runfiles.AT_REST for p in plain.glob("steps/*/" + n)]
    args = (RAW / "cards.csv", RAW / "ceilings.csv", RAW / "models/qwen3.8-27b/config.json")
    run_record(run, *args, tmp_path / "compact.json")
    run_record(plain, *args, tmp_path / "plain.json")
    a, b = read_json(tmp_path / "compact.json"), read_json(tmp_path / "plain.json")
    assert a.pop("path") == str(run) and b.pop("path") == str(plain)
    assert a == b
    metrics_csv(run, tmp_path / "compact.csv")
    metrics_csv(plain, tmp_path / "plain.csv")
    assert (tmp_path / "compact.csv").read_bytes() == (tmp_path / "plain.csv").read_bytes()


def _strict(x, y) -> bool:
    """Equal with the same types and key order all the way down."""
    if type(x) is not type(y):
        return False
    if isinstance(x, dict):
        return list(x) == list(y) and all(_strict(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return len(x) == len(y) and all(_strict(a, b) for a, b in zip(x, y, strict=True))
    return x == y


@pytest.mark.data
def test_bench_data_is_what_parsing_the_exact_bytes_gives_for_every_step():
    steps = sorted({p.parent for p in RUNS.glob("*/steps/*/bench.*")})
    assert len(steps) == len(_manifest())
    for s in steps:
        assert _strict(runfiles.bench_data(s), json.loads(runfiles.bench_bytes(s))), s


def test_bench_data_refuses_nan_as_read_json_does(tmp_path):
    raw = json.dumps({"ttfts": [0.1, float("nan")], "itls": [[0.2]]}).encode()
    (tmp_path / "bench.json").write_bytes(raw)
    with pytest.raises(InputError, match="not valid JSON"):
        runfiles.bench_data(tmp_path)
    assert runfiles.compact_bench(tmp_path).name == "bench.cols"
    with pytest.raises(InputError, match="NaN or infinity"):
        runfiles.bench_data(tmp_path)
    assert b"NaN" in runfiles.bench_bytes(tmp_path)  # the exact bytes are still given back
