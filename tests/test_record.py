"""The run record read back: schemas, typed provenance, and every way a run directory can be
wrong (issue 9: failures that render as successes; impossible values; truncated, deleted or
empty files). Each case edits a copy of a committed run and checks the exit code and the
words of the one-line message of `python -m claimcheck.pipeline.derive run-record` (its
``main``, run in the test's process by :func:`tests._cli.call_main`)."""

import json

import pytest

from claimcheck.claims.registryfiles import load_claims
from claimcheck.files.errors import InputError
from claimcheck.files.paths import RAW, ROOT, RUNS
from claimcheck.physics.cardfiles import load_cards
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.runs.records import validate_provenance, validate_steps
from claimcheck.runs.run import load_run
from claimcheck.runs.runrecord import migrate_provenance
from claimcheck.runs.tables import with_rooflines
from claimcheck.update.update import render_update
from tests._cli import call_main
from tests.fabricate import BATCH, LADDER, copy_run, edit_json, edit_step, seal


def run_record(run, tmp_path):
    from claimcheck.pipeline.derive import main
    return call_main(main, ["python", "-m", "claimcheck.pipeline.derive"],
                     ["run-record", str(run), str(tmp_path / "out.json")], cwd=ROOT)


def refused(r, *words):
    """Exit 2, one line on stderr, no traceback, every word in it."""
    assert r.returncode == 2, (r.returncode, r.stderr[-1000:])
    err = r.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)
    return err


def test_committed_runs_match_the_schemas():
    for d in sorted(RUNS.glob("*/provenance.json")):
        prov = validate_provenance(json.loads(d.read_text()), str(d))
        if (d.parent / "steps.json").is_file():
            steps = validate_steps(json.loads((d.parent / "steps.json").read_text()), "steps")
            if prov.status == "interrupted" and len(prov.steps) == len(steps) + 1:
                # recorded before the runner wrote the cut step's record to steps.json too
                # (h200-20261204-w4a16-dummy-machete-16k-long-prompts): the rest agree
                assert prov.steps[:-1] == steps and prov.steps[-1].status == "interrupted", d
            else:
                assert prov.steps == steps, d
        else:  # the runner stopped before writing it: only a run that did not complete
            assert prov.status in ("interrupted", "failed") and prov.steps, d
        raw = json.loads(d.read_text())
        # typed attributes carry what the file says
        assert prov.gpu.power_limit_enforced_w == raw["gpu"]["gpus"][0][
            "power_limit_enforced_w"]
        assert prov.engine_config.kv_cache_dtype == raw["engine_config"]["kv_cache_dtype"]


def test_schema_error_names_file_and_key():
    raw = json.loads((RUNS / LADDER / "provenance.json").read_text())
    raw["steps"][2]["streams"] = 0
    with pytest.raises(InputError) as e:
        validate_provenance(raw, "provenance.json")
    assert str(e.value).startswith("provenance.json: steps.2.streams: 0 is less than")


def test_old_record_migrated_in_memory_only(tmp_path):
    run = copy_run(tmp_path, LADDER)
    edit_json(run / "provenance.json", lambda p: [s.pop("status") for s in p["steps"]])
    before = (run / "provenance.json").read_bytes()
    steps = load_run(run).rows
    assert [s["status"] for s in steps] == ["complete"] * 5  # client exited 0
    assert (run / "provenance.json").read_bytes() == before  # never rewritten


def test_failed_step_renders_as_failed_and_is_never_compared(tmp_path):
    run = copy_run(tmp_path, BATCH)
    reason = "3 of 256 requests failed"
    edit_step(run, "00-c64-r2", lambda s: s.update(status="failed", reason=reason))
    r = run_record(run, tmp_path)
    assert r.returncode == 0, r.stderr
    loaded = load_run(run)
    assert loaded.reported == []  # the kept pass failed: nothing is reported
    loaded = with_rooflines(loaded, geometry_from_file(RAW / "models/qwen3.8-27b/config.json"),
                            load_cards())
    md = render_update([loaded], [c.tidy() for c in load_claims()], "h200", {})
    assert f"**failed**: {reason}" in md
    # the failed pass's own numbers appear nowhere (its bench.json is still on disk)
    bench = json.loads((run / "steps/00-c64-r2/bench.json").read_text())
    assert f"{64 * 1000 / bench['median_tpot_ms']:,.1f}" not in md
    assert "against, by the same definition" not in md  # no claim compared with it


def test_negative_tpot_refused(tmp_path):
    run = copy_run(tmp_path, LADDER)
    edit_json(run / "steps/01-c8-r1/bench.json", lambda b: b.update(median_tpot_ms=-16.1))
    refused(run_record(run, tmp_path), "01-c8-r1/bench.json", "median_tpot_ms",
            "-16.1 ms is impossible")


def test_zero_tpot_refused(tmp_path):
    run = copy_run(tmp_path, LADDER)
    edit_json(run / "steps/00-c1-r1/bench.json", lambda b: b.update(mean_tpot_ms=0))
    refused(run_record(run, tmp_path), "00-c1-r1/bench.json", "mean_tpot_ms", "must be > 0")


def test_more_tokens_than_requested_refused(tmp_path):
    run = copy_run(tmp_path, LADDER)
    proto_out = json.loads((run / "provenance.json").read_text())["protocol_config"][
        "output_len"]

    def more(b):
        b["output_lens"][3] = proto_out + 88
    edit_json(run / "steps/02-c16-r1/bench.json", more)
    refused(run_record(run, tmp_path), "02-c16-r1/bench.json", "output_lens",
            f"returned {proto_out + 88} tokens but {proto_out} were requested")


def test_more_completed_than_sent_refused(tmp_path):
    run = copy_run(tmp_path, LADDER)
    edit_json(run / "steps/00-c1-r1/bench.json", lambda b: b.update(completed=17))
    refused(run_record(run, tmp_path), "bench.json", "completed",
            "17 requests completed but only 16 were sent")


def test_deleted_provenance_is_an_error(tmp_path):
    run = copy_run(tmp_path, LADDER)
    (run / "provenance.json").unlink()
    refused(run_record(run, tmp_path), "provenance.json", "missing")


@pytest.mark.parametrize("name", ["provenance.json", "steps/03-c32-r1/bench.json"])
def test_truncated_json_names_the_file(tmp_path, name):
    run = copy_run(tmp_path, LADDER)
    text = (run / name).read_text()
    (run / name).write_text(text[: len(text) // 2])
    seal(run)  # the manifest lists the cut file: what is refused is the JSON
    refused(run_record(run, tmp_path), name, "not valid JSON")


def test_empty_steps_folder(tmp_path):
    run = copy_run(tmp_path, LADDER)
    for d in (run / "steps").iterdir():
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
    refused(run_record(run, tmp_path), "00-c1-r1/bench.json", "no such file")


def test_bad_step_status_names_the_key(tmp_path):
    run = copy_run(tmp_path, LADDER)
    edit_json(run / "steps.json", lambda s: s[1].update(status="fine"))
    refused(run_record(run, tmp_path), "steps.json", "1.status", "'fine' is not one of")


def test_migration_keeps_failed_status():
    obj = {"steps": [{"client_returncode": 1}], "protocol_config": {}}
    out = migrate_provenance(obj)
    assert out["steps"][0]["status"] == "failed" and "status" not in obj["steps"][0]


def test_context_per_stream_from_the_recorded_protocol():
    raw = json.loads((RUNS / LADDER / "provenance.json").read_text())["protocol_config"]
    run = load_run(RUNS / LADDER)
    for s in run.rows:  # old records: each step's lengths are the protocol's
        assert s["input_len"] == raw["input_len"] and s["output_len"] == raw["output_len"]
        assert s["context_tokens_per_stream"] == raw["input_len"] + raw["output_len"]


def test_step_schema_takes_per_step_lengths_and_refuses_bad_ones():
    rec = json.loads((RUNS / LADDER / "steps/00-c1-r1/step.json").read_text())
    rec.update(input_len=128, output_len=512, reference=False, kind="bench",
               energy={"joules": 1234.5})
    validate_steps([rec], "steps.json")
    rec["output_len"] = 0
    with pytest.raises(InputError, match=r"steps.json: 0.output_len: 0 is less than"):
        validate_steps([rec], "steps.json")
