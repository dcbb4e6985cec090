"""Class: run data nobody could have measured (issue 22 item 3, issue 18 item 6).

Each case edits one field of a copy of the committed ladder run (H200, 5 complete steps,
50.22 GiB of weights in its start log) and reads it back; the one-line error names the file
and the field. The pure checks of ``runs.runchecks`` are also tried at their bounds on
hand-made values."""

import csv
import shutil

import pytest

from claimcheck.files.errors import InputError
from claimcheck.files.paths import RUNS
from claimcheck.physics.cardfiles import load_cards
from claimcheck.runs import runchecks
from claimcheck.runs.run import load_run
from claimcheck.runs.runrecord import StepRecord
from tests._cli import cli, one_line_error
from tests.fabricate import LADDER, copy_run, edit_json, edit_step, plain_copy

CARDS = load_cards()


def refused(run, words: str) -> str:
    with pytest.raises(InputError) as e:
        load_run(run)
    assert words in str(e.value), str(e.value)
    assert "\n" not in str(e.value)
    return str(e.value)


def bench_edit(run, step_dir, fn):
    edit_json(run / "steps" / step_dir / "bench.json", fn)


def set_power(run, line, watts):
    """Set power_w on data line ``line`` of telemetry.csv (the header is line 1)."""
    path = run / "telemetry.csv"
    rows = list(csv.reader(path.read_text().splitlines()))
    col = rows[0].index("power_w")
    rows[line - 1][col] = str(watts)
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")


@pytest.mark.data
def test_the_committed_runs_pass_every_check():
    for d in sorted(p for p in RUNS.iterdir() if (p / "provenance.json").is_file()):
        load_run(d)


@pytest.mark.parametrize(("edit", "where", "words"), [
    (lambda r: edit_json(r / "provenance.json", lambda p: p.update(duration_s=0)),
     "provenance.json", "duration_s: 0 s is impossible: a run's duration must be > 0 s"),
    (lambda r: edit_step(r, "01-c8-r1", lambda s: s.update(end_unix_s=s["start_unix_s"] - 1)),
     "provenance.json", "steps[1].end_unix_s: the step ends -1 s after it starts"),
    (lambda r: edit_step(r, "00-c1-r1", lambda s: s.update(end_unix_s=s["start_unix_s"])),
     "provenance.json", "steps[0].end_unix_s: the step ends 0 s after it starts"),
    (lambda r: edit_step(r, "02-c16-r1", lambda s: s.update(failed_requests=3)),
     "provenance.json", "steps[2].failed_requests: 3 requests failed on a step marked "
     "complete"),
    (lambda r: bench_edit(r, "00-c1-r1", lambda b: b.update(duration=-1.0)),
     "steps/00-c1-r1/bench.json",
     "duration: -1.0 s is impossible: a benchmark's duration must be > 0 s"),
    (lambda r: bench_edit(r, "00-c1-r1", lambda b: b.update(completed=0)),
     "steps/00-c1-r1/bench.json", "total_output_tokens: 8192 output tokens beside "
     "completed: 0 (no request completed, so none produced tokens)"),
    (lambda r: bench_edit(r, "00-c1-r1", lambda b: b.update(failed=2)),
     "steps/00-c1-r1/bench.json", "failed: 2 of 16 requests failed on a step marked complete"),
    (lambda r: bench_edit(r, "00-c1-r1", lambda b: b["ttfts"].__setitem__(4, -0.5)),
     "steps/00-c1-r1/bench.json",
     "ttfts: request 4 has a time to first token of -0.5 s; it must be >= 0 s"),
    (lambda r: bench_edit(r, "00-c1-r1", lambda b: b["itls"][2].__setitem__(7, -0.01)),
     "steps/00-c1-r1/bench.json",
     "itls: request 2, gap 7 is -0.01 s; an inter-token gap must be >= 0 s"),
    (lambda r: set_power(r, 2, -50),
     "telemetry.csv:2", "power_w: -50 W is impossible: board power must be >= 0 W"),
    (lambda r: set_power(r, 5, 1200),
     "telemetry.csv:5", "power_w: 1200 W is above 1.5 x card h200's 700 W limit (1050 W)"),
    (lambda r: edit_json(r / "provenance.json", lambda p: p.update(card="h900")),
     "provenance.json", "card: unknown card 'h900'; known in cards.csv: b200, h100, h200, "
     "rtx3090, rtx4090, rtx5090"),
    # issue 18: a serving-gate H200 run relabelled rtx5090
    (lambda r: edit_json(r / "provenance.json", lambda p: p.update(card="rtx5090")),
     "provenance.json", "gpu.gpus[0].name: the run says card 'rtx5090' ('NVIDIA GeForce "
     "RTX 5090', 32 GiB) but its recorded GPU is 'NVIDIA H200' (card 'h200')"),
    (lambda r: edit_json(r / "provenance.json", lambda p: (
        p.update(card="rtx5090"), p["gpu"]["gpus"][0].update(name="NVIDIA GeForce RTX 5090"))),
     "server-start.log", "Model loading took: 50.22 GiB of weights exceed card rtx5090's "
     "32 GiB of memory"),
])
def test_impossible_run_data_is_refused(tmp_path, edit, where, words):
    run = copy_run(tmp_path, LADDER)
    edit(run)
    refused(run, f"{run / where}: {words}")


def test_a_copied_run_directory_is_refused(tmp_path):
    dst = plain_copy(RUNS / LADDER, tmp_path / "runs" / "my-copy")  # no manifest needed
    refused(dst, f"{dst / 'provenance.json'}: run_dir: names directory '{LADDER}' but this is "
            "'my-copy': a copied run directory is not a new run")


def test_the_cli_says_it_in_one_line(tmp_path):
    run = copy_run(tmp_path, LADDER)
    set_power(run, 3, -1)
    line = one_line_error(cli("metrics", run))
    assert line == (f"claimcheck: error: {run / 'telemetry.csv'}:3: power_w: -1 W is "
                    "impossible: board power must be >= 0 W")


# ---- the pure checks at their bounds (hand-made values)

def step(**kw) -> StepRecord:
    base = {"step": 0, "repeat": 1, "streams": 2, "requests": 4, "dir": "00-c2-r1",
            "status": "complete", "start_unix_s": 100.0, "end_unix_s": 110.0}
    return StepRecord(**{**base, **kw})


def test_step_windows():
    runchecks.check_step_record(step(), source="p", key="steps[0]")
    # a step that never started (server unhealthy before it) has start == end: allowed
    runchecks.check_step_record(step(status="failed", end_unix_s=100.0), source="p",
                                key="steps[0]")
    with pytest.raises(InputError, match=r"^p: steps\[0\]\.end_unix_s: the step ends -0\.5 s"):
        runchecks.check_step_record(step(status="failed", end_unix_s=99.5), source="p",
                                    key="steps[0]")
    with pytest.raises(InputError, match="5 requests completed but only 4 were sent"):
        runchecks.check_step_record(step(completed=5), source="p", key="steps[0]")


def test_bench_bounds():
    ok = {"duration": 2.0, "completed": 4, "failed": 0, "total_output_tokens": 16,
          "output_lens": [4, 4, 4, 4], "ttfts": [0.0, 0.1, 0.1, 0.2],
          "itls": [[0.0, 0.01, 0.01]] * 4}
    runchecks.check_bench(ok, requests=4, output_len=4, step_ok=True, source="b")  # 0 s ok
    with pytest.raises(InputError, match=r"^b: total_output_tokens: 17 output tokens but "
                       r"at most 4 x 4 were requested$"):
        runchecks.check_bench({**ok, "total_output_tokens": 17}, requests=4, output_len=4,
                              step_ok=True, source="b")
    with pytest.raises(InputError, match="a request returned 5 tokens but 4 were requested"):
        runchecks.check_bench({**ok, "output_lens": [4, 5, 4, 4]}, requests=4,
                              output_len=4, step_ok=True, source="b")
    # failed requests and a zero duration are what a failed step records: not refused there
    runchecks.check_bench({**ok, "failed": 4, "completed": 0, "total_output_tokens": 0,
                           "duration": 0.0}, requests=4, output_len=4, step_ok=False,
                          source="b")


def test_a_held_prefill_tpot_of_zero_up_to_rounding_passes():
    """Requests of 2 tokens can get both in one streamed chunk: vLLM's (latency - TTFT) /
    (tokens - 1) is then 0 up to float rounding, as the committed 64-stream wave step's
    median of -0.000158 ms; past 0.001 ms below 0, or for requests of more tokens, a
    negative or zero time per output token is refused."""
    held = {"duration": 1.0, "completed": 2, "failed": 0, "total_output_tokens": 4,
            "output_lens": [2, 2], "ttfts": [0.1, 0.1], "itls": [[], [0.02]]}
    for v in (-0.000158, 0.0, 0.02):
        runchecks.check_bench({**held, "median_tpot_ms": v}, requests=2, output_len=2,
                              step_ok=True, source="b")
    with pytest.raises(InputError, match=r"^b: median_tpot_ms: -0.0011 ms is impossible: a "
                       r"time per output token must be > 0 \(or within 0.001 ms of 0 for "
                       r"requests of 2 tokens or fewer\)$"):
        runchecks.check_bench({**held, "median_tpot_ms": -0.0011}, requests=2, output_len=2,
                              step_ok=True, source="b")
    four = {**held, "output_lens": [4, 4], "total_output_tokens": 8,
            "itls": [[0.01, 0.01, 0.01]] * 2}
    with pytest.raises(InputError, match=r"^b: mean_tpot_ms: 0.0 ms is impossible: a time "
                       r"per output token must be > 0$"):
        runchecks.check_bench({**four, "mean_tpot_ms": 0.0}, requests=2, output_len=4,
                              step_ok=True, source="b")


def test_power_bounds():
    h200 = CARDS["h200"]  # 700 W default limit: 1.5 x 700 = 1050 W is the largest allowed
    runchecks.check_power([{"power_w": 0.0}, {"power_w": 1050.0}], card=h200, source="t")
    with pytest.raises(InputError, match=r"^t:3: power_w: 1050.5 W is above 1.5 x card "
                       r"h200's 700 W limit \(1050 W\)$"):
        runchecks.check_power([{"power_w": 0.0}, {"power_w": 1050.5}], card=h200, source="t")
    # no card (a CPU run): only the lower bound
    runchecks.check_power([{"power_w": 5000.0}], card=None, source="t")
    with pytest.raises(InputError, match=r"^t:2: power_w: -0.1 W is impossible"):
        runchecks.check_power([{"power_w": -0.1}], card=None, source="t")


def test_weights_bounds():
    c = CARDS["rtx3090"]  # 24 GiB
    runchecks.check_weights(24.0, card=c, source="s")
    with pytest.raises(InputError, match=r"^s: Model loading took: 24.01 GiB of weights "
                       r"exceed card rtx3090's 24 GiB of memory$"):
        runchecks.check_weights(24.01, card=c, source="s")


def test_a_request_with_more_gaps_than_its_tokens_allow_is_refused():
    """Issue 39: 4 output tokens give at most 3 inter-token gaps; a fifth gap (a gap added
    to the file) is refused naming the request, fewer (chunks of several tokens, as the
    committed 128-stream steps have) pass."""
    ok = {"duration": 2.0, "completed": 2, "failed": 0, "total_output_tokens": 8,
          "output_lens": [4, 4], "ttfts": [0.1, 0.1], "itls": [[0.01, 0.01, 0.01], [0.02]]}
    runchecks.check_bench(ok, requests=2, output_len=4, step_ok=True, source="b")
    bad = {**ok, "itls": [[0.01, 0.01, 0.01], [0.01, 0.01, 0.01, 0.01]]}
    with pytest.raises(InputError, match=r"^b: itls: request 1 has 4 inter-token gaps but 4 "
                       r"output tokens \(output_lens\), which give at most 3$"):
        runchecks.check_bench(bad, requests=2, output_len=4, step_ok=True, source="b")


def test_a_compact_step_without_the_runs_folders_manifest_is_refused(tmp_path):
    """Issue 39: with bench-sha256.txt gone, a compact bench file (the runner writes one
    only beside its manifest line) is refused naming the manifest, not read unchecked."""

    from claimcheck.files.paths import RAW
    from claimcheck.runs.run import load_run
    name = "h200-20261129-bf16-dummy-ladder"
    shutil.copytree(RAW / "runs" / name, tmp_path / "runs" / name)
    with pytest.raises(InputError, match=r"bench\.cols: kept compact, but .*runs/bench-sha256"
                       r"\.txt is missing: nothing records the bytes it should give back$"):
        load_run(tmp_path / "runs" / name)
    shutil.copy(RAW / "runs" / "bench-sha256.txt", tmp_path / "runs")
    assert load_run(tmp_path / "runs" / name).path.name == name


def test_a_plain_bench_file_the_manifest_does_not_list_is_refused(tmp_path):
    """Issue 39: beside a manifest, a plain bench.json it does not list (here a run under a
    name the manifest never saw) is refused, not read unchecked; listed, it is read."""
    import shutil
    run = copy_run(tmp_path, LADDER, "h200-20261129-unlisted")
    shutil.copy(RUNS / "bench-sha256.txt", tmp_path / "runs")
    refused(run, f"{run / 'steps' / '00-c1-r1' / 'bench.json'}: not listed in "
            f"{tmp_path / 'runs' / 'bench-sha256.txt'}: nothing records the bytes it should "
            "give back")
    same = copy_run(tmp_path, LADDER)  # its own name: every plain file listed and checked
    assert cli("metrics", same).returncode == 0
