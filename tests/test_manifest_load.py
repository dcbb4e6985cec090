"""Run files checked against the manifest on load (issue 26): the bytes a step's file gives
back (bench.cols rebuilt, bench.json.xz decompressed, bench.json as it is) must have the size
and SHA-256 that ``data/raw/runs/bench-sha256.txt`` records, else one line naming the file;
a compact file the manifest does not list, and a NaN in a bench.cols, are refused naming it;
the runner's compaction writes the line, and never over another one."""

import json
import shutil

import pytest

from claimcheck.cli import main
from claimcheck.files import benchcols
from claimcheck.files.errors import InputError
from claimcheck.files.paths import RUNS
from claimcheck.runs import runfiles
from claimcheck.runs.run import load_run
from tests.fabricate import LADDER

STEP = "01-c8-r1"


def compact_copy(tmp_path):
    """The committed ladder run as it is at rest (bench.cols), with its manifest lines."""
    run = tmp_path / "runs" / LADDER
    shutil.copytree(RUNS / LADDER, run)
    lines = [ln for ln in (RUNS / runfiles.BENCH_MANIFEST).read_text().splitlines()
             if ln.startswith(tuple("0123456789abcdef")) and f"  {LADDER}/" in ln]
    assert len(lines) == 5
    (run.parent / runfiles.BENCH_MANIFEST).write_text("\n".join(lines) + "\n")
    return run


def restore(run, edit):
    """Re-encode the step's bench.cols after ``edit(dict)``: a valid container whose bytes
    are no longer the client's; those bytes, as json.dumps writes them."""
    cols = run / "steps" / STEP / runfiles.BENCH_COLS
    d, indent = benchcols.cols_data(cols.read_bytes())
    edit(d)
    raw = json.dumps(d, indent=indent).encode()
    packed = benchcols.encode_cols(raw)
    assert packed is not None
    cols.write_bytes(packed)
    return cols, raw


def refusal(run, cols, raw):
    m = runfiles.read_manifest(run.parent / runfiles.BENCH_MANIFEST)[
        f"{LADDER}/steps/{STEP}/bench.json"]
    return (f"{cols}: gives back {len(raw)} bytes, SHA-256 {runfiles.sha256_hex(raw)[:16]}..."
            f", but {run.parent / runfiles.BENCH_MANIFEST} records {m.size} bytes, SHA-256 "
            f"{m.sha256[:16]}...: changed since it was recorded")


def test_the_committed_copy_loads_and_its_lines_carry_the_container_hash(tmp_path):
    run = compact_copy(tmp_path)
    assert [t.record["dir"] for t in load_run(run).traces][1] == STEP
    m = runfiles.read_manifest(run.parent / runfiles.BENCH_MANIFEST)
    cols = run / "steps" / STEP / runfiles.BENCH_COLS
    assert m[f"{LADDER}/steps/{STEP}/bench.json"].container_sha256 == runfiles.sha256_hex(
        cols.read_bytes())


def test_one_gap_raised_by_100_s_inside_a_valid_container_is_refused(tmp_path, capsys):
    run = compact_copy(tmp_path)
    cols, raw = restore(run, lambda d: d["itls"][3].__setitem__(5, d["itls"][3][5] + 100.0))
    with pytest.raises(InputError) as e:
        load_run(run)
    assert str(e.value) == refusal(run, cols, raw)
    assert main(["metrics", str(run)]) == 2
    assert capsys.readouterr().err == f"claimcheck: error: {refusal(run, cols, raw)}\n"


def test_rows_reshaped_with_the_sum_kept_are_refused(tmp_path):
    run = compact_copy(tmp_path)

    def move_one(d):  # one gap moved from request 0 to request 1: same count of gaps
        d["itls"][1].insert(0, d["itls"][0].pop())
    cols, raw = restore(run, move_one)
    assert sum(map(len, json.loads(raw)["itls"])) == sum(
        map(len, runfiles.bench_data(RUNS / LADDER / "steps" / STEP)["itls"]))
    with pytest.raises(InputError) as e:
        load_run(run)
    assert str(e.value) == refusal(run, cols, raw)


def test_an_edited_plain_bench_json_is_refused_too(tmp_path):
    run = compact_copy(tmp_path)
    d = runfiles.bench_data(run / "steps" / STEP)
    d["duration"] += 1.0
    raw = json.dumps(d).encode()
    plain = run / "steps" / STEP / runfiles.BENCH
    (run / "steps" / STEP / runfiles.BENCH_COLS).unlink()
    plain.write_bytes(raw)
    with pytest.raises(InputError) as e:
        load_run(run)
    assert str(e.value) == refusal(run, plain, raw)


def test_a_compact_file_the_manifest_does_not_list_is_refused(tmp_path):
    run = compact_copy(tmp_path)
    mf = run.parent / runfiles.BENCH_MANIFEST
    mf.write_text("".join(ln + "\n" for ln in mf.read_text().splitlines() if STEP not in ln))
    with pytest.raises(InputError) as e:
        load_run(run)
    assert str(e.value) == (f"{run / 'steps' / STEP / 'bench.cols'}: not listed in {mf}: "
                            "nothing records the bytes it should give back")


def test_a_nan_scalar_in_bench_cols_is_refused_naming_the_file(tmp_path):
    run = compact_copy(tmp_path)  # its manifest kept: the archive is decoded before its check
    cols, _ = restore(run, lambda d: d.__setitem__("request_throughput", float("nan")))
    with pytest.raises(InputError) as e:
        load_run(run)
    assert str(e.value) == (f"{cols}: not a valid .cols archive (the header holds NaN, not "
                            "a JSON number)")


def test_compaction_records_its_line_and_never_writes_over_another(tmp_path):
    step = tmp_path / "runs" / "r" / "steps" / "00-c1-r1"
    step.mkdir(parents=True)
    raw = json.dumps({"duration": 1.5, "itls": [[0.25, 0.5]], "ttfts": [0.125]}).encode()
    (step / "bench.json").write_bytes(raw)
    mf = tmp_path / "runs" / runfiles.BENCH_MANIFEST
    out = runfiles.compact_bench(step, mf)
    e = runfiles.read_manifest(mf)["r/steps/00-c1-r1/bench.json"]
    assert (e.sha256, e.size) == (runfiles.sha256_hex(raw), len(raw))
    assert e.container_sha256 == runfiles.sha256_hex(out.read_bytes())
    before = mf.read_bytes()
    other = json.dumps({"duration": 2.5, "itls": [[0.25]], "ttfts": [0.125]}).encode()
    out.unlink()
    (step / "bench.json").write_bytes(other)
    with pytest.raises(InputError, match="already records r/steps/00-c1-r1/bench.json as "
                       f"{len(raw)} bytes, SHA-256 {runfiles.sha256_hex(raw)}; the step's "
                       "new result .* is not written over it"):
        runfiles.compact_bench(step, mf)
    assert mf.read_bytes() == before
    assert (step / "bench.json").read_bytes() == other and not out.exists()  # left as it was


def test_a_plain_bench_json_without_the_runs_folders_manifest_is_refused(tmp_path, capsys):
    """Issue 39: with bench-sha256.txt gone a plain bench.json was read unchecked (a gap
    raised by 100 s read as measured); now every reader refuses it, naming the file and the
    missing manifest."""
    from tests.fabricate import copy_run, edit_json
    run = copy_run(tmp_path, LADDER)
    edit_json(run / "steps" / STEP / runfiles.BENCH,
              lambda d: d["itls"][3].__setitem__(5, d["itls"][3][5] + 100.0))
    mf = run.parent / runfiles.BENCH_MANIFEST
    mf.unlink()
    want = (f"{run / 'steps' / '00-c1-r1' / 'bench.json'}: written plain, but {mf} is "
            "missing: nothing records the bytes it should give back")
    with pytest.raises(InputError) as e:
        load_run(run)
    assert str(e.value) == want
    assert main(["metrics", str(run)]) == 2
    assert capsys.readouterr().err == f"claimcheck: error: {want}\n"
