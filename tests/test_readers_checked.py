"""One run check, every reader (issue 26): a run that the pipeline refuses is refused by
``claimcheck metrics``, ``claimcheck model``, ``predict`` and ``measure --verify`` in the
same one line naming the file and the field, before any of them computes anything.

Each case edits a plain copy of the committed H200 ladder run (1-64 streams, 128 prompt +
512 output tokens) the way the fault sweep did; the words expected are worked out here."""

import pytest

from claimcheck.cli import main
from claimcheck.files.errors import InputError
from claimcheck.runs.run import load_run
from tests.fabricate import LADDER, copy_run, edit_json, edit_step


def _gap(b):
    b["itls"][0][3] = -0.5


def _ttft(b):
    b["ttfts"][0] = -1.0


def _tokens(b):
    b["output_lens"][2] = 9999


def _duration(b):
    b["duration"] = 0


BENCH_CASES = [
    ("negative inter-token gap", _gap, "itls: request 0, gap 3 is -0.5 s; an inter-token "
     "gap must be >= 0 s"),
    ("negative TTFT", _ttft, "ttfts: request 0 has a time to first token of -1 s; it must "
     "be >= 0 s"),
    ("9,999 tokens where 512 were asked", _tokens, "output_lens: a request returned 9999 "
     "tokens but 512 were requested"),
    ("zero benchmark duration", _duration, "duration: 0 s is impossible: a benchmark's "
     "duration must be > 0 s"),
]


def bad_bench(tmp_path, fn):
    run = copy_run(tmp_path, LADDER)
    edit_json(run / "steps" / "01-c8-r1" / "bench.json", fn)
    return run, f"{run / 'steps' / '01-c8-r1' / 'bench.json'}: "


def bad_run_duration(tmp_path, value):
    run = copy_run(tmp_path, LADDER)
    edit_json(run / "provenance.json", lambda p: p.update(duration_s=value))
    return run, (f"{run / 'provenance.json'}: duration_s: {value} s is impossible: a run's "
                 "duration must be > 0 s")


def readers(run, capsys):
    """The one stderr line of each reader, by name; the pipeline's own message first."""
    out = {}
    with pytest.raises(InputError) as e:
        load_run(run)
    out["pipeline"] = f"claimcheck: error: {e.value}"
    runs = str(run.parent)
    for name, argv in {
        "metrics": ["metrics", str(run)],
        "model": ["model", str(run)],
        "predict": ["predict", "--card", "h200", "--engine", "bf16-dummy", "--protocol",
                    "ladder", "--runs", runs],
        "measure --verify": ["measure", "--card", "cpu", "--engine", "bf16-dummy",
                             "--protocol", "ladder", "--verify", "1", "--calibration-runs",
                             runs, "--runs-dir", runs],
    }.items():
        assert main(argv) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, (name, err)
        out[name] = err[0]
    return out


@pytest.mark.parametrize(("fn", "words"), [c[1:] for c in BENCH_CASES],
                         ids=[c[0] for c in BENCH_CASES])
def test_every_reader_refuses_an_impossible_bench_value(tmp_path, capsys, fn, words):
    run, where = bad_bench(tmp_path, fn)
    want = f"claimcheck: error: {where}{words}"
    assert readers(run, capsys) == dict.fromkeys(
        ["pipeline", "metrics", "model", "predict", "measure --verify"], want)


@pytest.mark.parametrize("value", [0, -3.5])
def test_every_reader_refuses_an_impossible_run_duration(tmp_path, capsys, value):
    run, msg = bad_run_duration(tmp_path, value)
    assert set(readers(run, capsys).values()) == {f"claimcheck: error: {msg}"}


def test_every_reader_refuses_a_step_that_ends_before_it_starts(tmp_path, capsys):
    run = copy_run(tmp_path, LADDER)
    edit_step(run, "02-c16-r1", lambda s: s.update(end_unix_s=s["start_unix_s"] - 2))
    got = set(readers(run, capsys).values())
    assert len(got) == 1
    line = got.pop()
    assert line.startswith(f"claimcheck: error: {run / 'provenance.json'}: "
                           "steps[2].end_unix_s: the step ends -2 s after it starts")
    assert line.endswith("a step's duration must be > 0 s")


def test_a_complete_step_whose_directory_is_gone_is_an_error_not_a_skip(tmp_path, capsys):
    run = copy_run(tmp_path, LADDER)
    step = run / "steps" / "03-c32-r1"
    for f in step.iterdir():
        f.unlink()
    step.rmdir()
    want = (f"claimcheck: error: {step / 'bench.json'}: no such file, but provenance.json "
            "marks the step complete (its directory is gone)")
    assert set(readers(run, capsys).values()) == {want}


def test_a_failed_step_without_its_result_is_still_skipped_and_said(tmp_path, capsys):
    run = copy_run(tmp_path, LADDER)
    (run / "steps" / "04-c64-r1" / "bench.json").unlink()
    edit_step(run, "04-c64-r1", lambda s: s.update(status="failed", reason="fabricated"))
    assert main(["metrics", str(run)]) == 0
    assert "skipped 04-c64-r1: no bench.json (step failed)" in capsys.readouterr().out
