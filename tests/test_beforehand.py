"""Predictions written before a run set against what the run measured (issue 31): a
hand-made run whose errors are worked out by hand, refusals naming the file and key, and the
pipeline's table for the two committed context-ladder runs on the H200 (dummy weights)
against counts computed here from the prediction JSON and each run's metrics table."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from claimcheck.cli import main
from claimcheck.files.errors import InputError
from claimcheck.files.framefiles import read_rows
from claimcheck.files.paths import ROOT, RUNS
from claimcheck.pipeline import beforehand_index as bi
from claimcheck.predict import beforehand as bh
from claimcheck.readings.energy import StepEnergy
from claimcheck.readings.timeline import RequestTimeline, Timeline
from claimcheck.runs.run import StepTrace, load_run
from claimcheck.runs.steprow import timeline_columns, timeline_latencies
from claimcheck.runs.steptable import metrics_table
from claimcheck.update import beforehand_words as bw

PREDICTIONS = ROOT / "data" / "raw" / "predictions"
LADDERS = {"bf16-dummy-16k": "h200-20261202-bf16-dummy-16k-context-ladder",
           "fp8-hyperqwen-dummy-16k": "h200-20261202-fp8-hyperqwen-dummy-16k-context-ladder"}


# ---- a hand-made run: 2 streams, 2 requests per step ---------------------------------------

def _request(ttft: float, tokens: int, last: float) -> RequestTimeline:
    """A request sent at 0 s whose ``tokens`` arrive evenly from ``ttft`` to ``last`` s."""
    gap = (last - ttft) / (tokens - 1)
    return RequestTimeline(0.0, ttft, 1000, tuple(ttft + i * gap for i in range(tokens)),
                           tokens)


def _step(index: int, tokens: int, last: float) -> StepTrace:
    rec = {"step": index, "repeat": 1, "streams": 2, "requests": 2, "input_len": 1000,
           "output_len": tokens, "status": "complete", "dir": f"0{index}-c2-r1",
           "start_unix_s": 100.0 * index, "end_unix_s": 100.0 * index + last + 3.0}
    tl = Timeline(2, (_request(0.2, tokens, last), _request(0.2, tokens, last)))
    return StepTrace(record=rec, timeline=tl, log_lines=[], energy_j=None,
                     window_unix_s=(0.0, last), output_len=tokens)


def hand_run() -> SimpleNamespace:
    """Step 0: 2 x 211 tokens in 1.0 s from first send to last token (422.0 tok/s end to
    end); decode 2 x 210 tokens after the first over (0.2, 1.0] s = 525.0 tok/s; TPOT 0.8 s
    / 210 = 3.810 ms; TTFT 0.2 s. Step 1: 2 x 101 tokens in 2.0 s (101.0 tok/s end to end),
    decode 200 / 1.8 s = 111.1 tok/s."""
    prov = {"card": "h200", "engine": "bf16-dummy-16k", "protocol": "hand-ladder",
            "weights": "dummy", "engine_config": {"weight_format": "bf16"},
            "duration_s": 210.0}
    traces = (_step(0, 211, 1.0), _step(1, 101, 2.0))
    rows = {id(t): {**timeline_columns(t.record, t.timeline, [], StepEnergy(None, None),
                                       t.output_len, None), **timeline_latencies(t.timeline)}
            for t in traces}  # each step's row as the run's table holds it
    typed = SimpleNamespace(**{k: v for k, v in prov.items() if k != "engine_config"},
                            engine_config=SimpleNamespace(recorded=prov["engine_config"]))
    return SimpleNamespace(name="hand-run", path=Path("/nowhere/hand-run"),
                           provenance=typed, traces=traces,
                           row_of=lambda t: rows[id(t)])


def hand_prediction() -> dict:
    def step(i, tokens, e2e, dec, tpot, ttft, load):
        return {"index": i, "streams": 2, "requests": 2, "input_len": 1000,
                "output_len": tokens, "repeats": 2, "predicted_e2e_tok_s": e2e,
                "predicted_decode_tok_s": dec, "predicted_median_tpot_ms": tpot,
                "predicted_median_ttft_s": ttft, "predicted_load_s": load}
    return {"card": "h200", "engine": "bf16-dummy-16k", "protocol": "hand-ladder",
            "kind": "bench", "weights": "dummy", "file": "hand.json",
            "steps": [step(0, 211, 442.4, 556.5, 4.0, 0.25, 0.9),
                      step(1, 101, 101.0, 200 / 1.8, 9.0, 0.2, 2.1)]}


def test_errors_worked_out_by_hand():
    rows = bh.against(hand_prediction(), hand_run())
    assert [r["step"] for r in rows] == [0, 1]
    r0, r1 = rows
    assert r0["measured_e2e_tok_s"] == pytest.approx(422.0)
    assert r0["e2e_error"] == pytest.approx(0.048341, abs=1e-6)      # 442.4 / 422.0 - 1
    assert r0["measured_decode_tok_s"] == pytest.approx(525.0)
    assert r0["decode_error"] == pytest.approx(0.06)                  # 556.5 / 525.0 - 1
    assert r0["measured_median_tpot_ms"] == pytest.approx(800 / 210)  # 3.810 ms
    assert r0["tpot_error"] == pytest.approx(4.0 / (800 / 210) - 1)   # +5.0%
    assert r0["measured_median_ttft_s"] == pytest.approx(0.2)
    assert r0["ttft_error"] == pytest.approx(0.25)                    # 0.25 / 0.2 - 1
    assert r0["context_tokens"] == 1211
    assert not r0["within"] and r0["within_e2e"]   # decode +6.0% is beyond 5%
    assert r1["e2e_error"] == pytest.approx(0.0) and r1["within"]
    s = bh.summary(rows)
    assert (s["measured"], s["steps"], s["within"], s["within_e2e"]) == (2, 2, 1, 2)
    assert s["mean_abs_e2e_error"] == pytest.approx(0.048341 / 2, abs=1e-6)
    assert s["mean_abs_decode_error"] == pytest.approx(0.03)
    assert s["largest_miss"] == {"metric": "decode", "error": pytest.approx(0.06),
                                 "step": 0, "repeat": 1, "streams": 2, "input_len": 1000,
                                 "output_len": 211}
    # load per repeat: 0.9 + 2.1 s predicted; 1.0 + 2.0 s first send to last token; the
    # clients' spans 4.0 + 5.0 s (3 s of start-up each, by hand above); the run 210 s
    assert s["predicted_load_s_per_repeat"] == pytest.approx(3.0)
    assert s["measured_send_to_last_s_per_repeat"] == pytest.approx(3.0)
    assert s["measured_client_s_per_repeat"] == pytest.approx(9.0)
    line = bw.summary_line(s)
    assert "1 of 2 measured steps within 5% on both" in line
    assert "+6.0% on decode at 2 streams of 1,000-token prompts (step 0)" in line
    assert "(dummy weights)" in line and "client start-up" in line


def test_body_sentence_from_the_rows():
    rows = [{**r, "written_at_commit": "abc1234", "what_model": "the hand model"}
            for r in bh.against(hand_prediction(), hand_run())]
    text = bw.body_sentence([bh.summary(rows)])
    assert text == ("Written before the hand-ladder protocol ran (commit abc1234), the model's "
                    "predictions land within 5% of the measured end-to-end and decode speed "
                    "on 1 of 2 BF16 steps (bf16-dummy-16k, dummy weights); its largest miss "
                    "is +6.0% on decode at 2 streams of 1,000-token prompts.")
    # a second prediction for the same engine is named with its own count, the last leads
    other = [{**r, "written_at_commit": "def5678", "prediction_file": "hand-2.json"}
             for r in rows]
    other[1] = {**other[1], "within": False}
    two = bw.body_sentence([bh.summary(other), bh.summary(rows)])
    assert two.count("Written before") == 1
    assert "(commit abc1234)" in two and "commit def5678 (the hand model) land within 5% " \
        "on 0 of 2." in two


def test_a_mismatched_step_is_refused_naming_the_file_and_key():
    pred = hand_prediction()
    pred["steps"][1]["input_len"] = 2000
    with pytest.raises(InputError, match=r"^hand\.json: steps\[1\]\.input_len: 2000 predicted, "
                       r"but run hand-run's step 1 \(repeat 1\) has 1000"):
        bh.against(pred, hand_run())
    pred = hand_prediction()
    pred["engine"] = "fp8-hyperqwen-dummy-16k"
    with pytest.raises(InputError, match=r"^hand\.json: engine: predicted for "
                       "'fp8-hyperqwen-dummy-16k', but run hand-run is of 'bf16-dummy-16k'"):
        bh.against(pred, hand_run())
    pred = hand_prediction()
    del pred["steps"][1]
    with pytest.raises(InputError, match=r"hand\.json: steps: run hand-run has a step 1"):
        bh.against(pred, hand_run())


def test_a_file_that_is_not_a_prediction_is_refused_naming_it(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"steps": []}))
    with pytest.raises(InputError, match=rf"^{f}: card: not a `claimcheck predict --json`"):
        bh.load_prediction(f)
    pred = hand_prediction()
    del pred["steps"][0]["predicted_decode_tok_s"]
    f.write_text(json.dumps(pred))
    with pytest.raises(InputError, match=r"steps\[0\]\.predicted_decode_tok_s: no such key"):
        bh.load_prediction(f)
    f.write_text("[1, 2]")
    with pytest.raises(InputError, match="got list"):
        bh.load_prediction(f)


def _index_dir(tmp_path: Path, rows: list[str]) -> Path:
    d = tmp_path / "predictions"
    d.mkdir()
    shutil.copy(PREDICTIONS / "context-ladder-bf16-dummy-16k.json", d)
    (d / "index.csv").write_text(
        "file,protocol,engine,card,written_at_commit,what_model\n" + "\n".join(rows) + "\n")
    return d / "index.csv"


def test_the_index_is_checked(tmp_path):
    row = "context-ladder-bf16-dummy-16k.json,context-ladder,bf16-dummy-16k,h200,{c},m"
    bad = _index_dir(tmp_path, [row.format(c="not-a-commit")])
    with pytest.raises(InputError, match=r"index\.csv:2: written_at_commit: not a commit"):
        bi.indexed_predictions(bad)
    shutil.rmtree(bad.parent)
    unlisted = _index_dir(tmp_path, [])
    with pytest.raises(InputError, match="context-ladder-bf16-dummy-16k.json is beside the "
                       "index but not listed"):
        bi.indexed_predictions(unlisted)
    shutil.rmtree(unlisted.parent)
    wrong = _index_dir(tmp_path, [row.format(c="86c9c56").replace(",bf16-dummy-16k,",
                                                                  ",fp8-hyperqwen-dummy-16k,")])
    with pytest.raises(InputError, match=r"index\.csv:2: engine: 'fp8-hyperqwen-dummy-16k', "
                       "but context-ladder-bf16-dummy-16k.json is predicted for"):
        bi.indexed_predictions(wrong)


def test_a_prediction_with_no_run_is_listed_not_measured(tmp_path):
    index = _index_dir(tmp_path, ["context-ladder-bf16-dummy-16k.json,context-ladder,"
                                  "bf16-dummy-16k,h200,86c9c56,m"])
    rows = bi.table(index, [])  # no run of it
    assert len(rows) == 15 and {r["status"] for r in rows} == {bh.NOT_MEASURED}
    assert all(r.get("e2e_error") is None for r in rows)
    s = bh.summary(rows)
    assert s["status"] == bh.NOT_MEASURED and s["measured"] == 0
    assert "not measured yet" in bw.summary_line(s)
    assert bw.body_sentence([s]) == ""


# ---- the committed ladders: the pipeline's table against counts worked out here ------------

def _independent(pred: dict, metrics: list[dict]) -> dict:
    """Within 5% on both, on e2e alone, and the largest |error|, from the prediction JSON
    and the run's metrics table (arithmetic written out here, not the module's)."""
    by = {p["index"]: p for p in pred["steps"]}
    both = e2e_only = 0
    worst = 0.0
    for m in metrics:
        p = by[m["step"]]
        e = p["predicted_e2e_tok_s"] / m["e2e_aggregate_tok_s"] - 1
        dec = p["predicted_decode_tok_s"] / m["decode_aggregate_tok_s"] - 1
        e2e_only += abs(e) <= 0.05
        both += abs(e) <= 0.05 and abs(dec) <= 0.05
        worst = max(worst, abs(e), abs(dec))
    return {"within": both, "within_e2e": e2e_only, "worst": worst, "n": len(metrics)}


@pytest.fixture(scope="module")
def ladder_table(tmp_path_factory):
    out = tmp_path_factory.mktemp("beforehand") / "beforehand.csv"
    runs = sorted(str(p) for p in RUNS.iterdir() if (p / "provenance.json").is_file())
    bi.write_table(PREDICTIONS / "index.csv", runs, out)
    return read_rows(out)


def test_a_prediction_meets_only_runs_started_after_its_commit(ladder_table):
    # the wave-admission prediction of 2026-12-04 (commit 1dd0fcd): the engine's run of
    # 2026-12-01 was measured before it existed, so only the runs of 2026-12-04 and
    # 2026-12-06 test it (4 steps x 3 repeats each)
    got = {}
    for r in ladder_table:
        got.setdefault(r["prediction_file"], set()).add(r["run"])
    assert got["wave-admission-bf16-dummy-256.json"] == {
        "h200-20261204-bf16-dummy-256-wave-admission",
        "h200-20261206-bf16-dummy-256-wave-admission"}
    assert sum(r["prediction_file"] == "wave-admission-bf16-dummy-256.json"
               for r in ladder_table) == 2 * 4 * 3
    run = load_run(RUNS / "h200-20261201-bf16-dummy-256-wave-admission")
    assert bi.started_before(run, "2026-12-04T06:00:00+00:00")
    assert not bi.started_before(run, "2026-11-30T00:00:00+00:00")
    assert not bi.started_before(run, None)  # git cannot date the commit: not left out


def test_without_git_a_run_of_other_step_shapes_is_not_its_run(tmp_path):
    """A copy with no git (the SLURM test's): the prediction's commit cannot be dated, so
    the runs of its card, engine and protocol are set against it, but a run measured while
    the protocol had other lengths cannot be its run. The 256-slot engine's H200
    single-stream run of 2026-12-01 held a 15,000-token prompt at step 3, where the
    prediction at ef257a7 (the protocol now) has 12,000: it is left out, not an error, and
    the prediction is listed as not measured."""
    name = "single-stream-bf16-dummy-256-on-h200-at-ef257a7-fresh-engine.json"
    row = next(r for r in (PREDICTIONS / "index.csv").read_text().splitlines()
               if r.startswith(name + ","))
    head = (PREDICTIONS / "index.csv").read_text().splitlines()[0]
    (tmp_path / "index.csv").write_text(head + "\n" + row + "\n")
    shutil.copy(PREDICTIONS / name, tmp_path / name)
    run_dir = RUNS / "h200-20261201-bf16-dummy-256-single-stream"
    pred = bi.load_listed(tmp_path / name)
    with pytest.raises(InputError, match=r"steps\[3\]\.input_len: 12000 predicted"):
        bh.check_matches({**pred, "file": name}, load_run(run_dir))
    assert not bi.its_shape({**pred, "file": name}, load_run(run_dir))
    rows = bi.table(tmp_path / "index.csv", [run_dir])
    assert len(rows) == 4  # its four steps, none measured
    assert {(r["run"], r["status"]) for r in rows} == {("", bh.NOT_MEASURED)}


def test_pipeline_table_counts_for_the_committed_ladders(ladder_table):
    rows = [r for r in ladder_table if r["prediction_file"].startswith("context-ladder-")
            and r["engine"] in LADDERS and r["card"] == "h200"]  # the four H200 predictions
    assert len(rows) == 4 * 15  # four predictions, 15 steps each, every one with its run
    sums = {s["prediction_file"]: s for s in bh.summaries(rows)}
    index = {r["file"]: r for r in bi.read_index(PREDICTIONS / "index.csv")
             if r["file"].startswith("context-ladder-") and r["engine"] in LADDERS
             and r["card"] == "h200"}
    assert set(sums) == set(index)
    metrics = {e: metrics_table(load_run(RUNS / r)) for e, r in LADDERS.items()}
    for f, s in sums.items():
        pred = json.loads((PREDICTIONS / f).read_text())
        want = _independent(pred, metrics[pred["engine"]])
        assert s["run"] == LADDERS[pred["engine"]]
        assert s["written_at_commit"] == index[f]["written_at_commit"]
        assert (s["measured"], s["within"], s["within_e2e"]) == (
            want["n"], want["within"], want["within_e2e"]), f
        assert abs(s["largest_miss"]["error"]) == pytest.approx(want["worst"], rel=1e-5)
        assert s["predicted_load_s_per_repeat"] == pytest.approx(
            sum(p["predicted_load_s"] for p in pred["steps"]), rel=1e-5)
        assert s["measured_send_to_last_s_per_repeat"] == pytest.approx(
            sum(m["wall_s"] for m in metrics[pred["engine"]]), rel=1e-5)
    sentence = bw.body_sentence(list(sums.values()))
    assert sentence.count("Written before the context-ladder protocol ran (commit 006cb56)") == 2
    for s in sums.values():
        assert f"on {s['within']} of 15" in sentence


def test_the_h100_ladder_against_both_its_predictions(ladder_table):
    """The H100 context ladder (2026-12-06) against the two predictions committed before
    it, worked from the prediction JSON and the run's metrics: 6 and 10 of 15 within 5% on
    both."""
    run = "h100-20261206-bf16-dummy-16k-context-ladder"
    rows = [r for r in ladder_table if r["run"] == run]
    sums = {s["prediction_file"]: s for s in bh.summaries(rows)}
    metrics = metrics_table(load_run(RUNS / run))
    got = {}
    for f, s in sums.items():
        want = _independent(json.loads((PREDICTIONS / f).read_text()), metrics)
        assert (s["measured"], s["within"], s["within_e2e"]) == (
            want["n"], want["within"], want["within_e2e"]), f
        got[f] = s["within"]
    assert got == {"context-ladder-bf16-dummy-16k-on-h100-at-90df492-fresh-engine.json": 6,
                   "context-ladder-bf16-dummy-16k-on-h100-at-f671c61-fresh-engine.json": 10}


def test_appendix_section_reads_the_table(ladder_table):
    text = bw.appendix_section([r for r in ladder_table
                                if r["prediction_file"].startswith("context-ladder-")
                                and r["engine"] in LADDERS and r["card"] == "h200"])
    assert text.startswith("### Predicted before the run\n")
    assert text.count("\n- `context-ladder-") == 4
    assert "(written at commit 006cb56; model:" in text
    assert "against h200-20261202-bf16-dummy-16k-context-ladder (dummy weights)" in text
    assert "e2e per stream tok/s pred / meas" in text and "summed over the streams" in text
    assert text.count("| 12,000 + 384 |") == 4 * 3  # 8, 24 and 48 streams, each table


def test_cli_model_before(capsys):
    run = str(RUNS / LADDERS["bf16-dummy-16k"])
    pred = str(PREDICTIONS / "context-ladder-bf16-dummy-16k-kv-read.json")
    assert main(["model", run, "--before", pred]) == 0
    out = capsys.readouterr().out
    assert "(written at commit 006cb56;" in out and "per stream = aggregate / streams" in out
    assert "context per stream = input + output tokens" in out and "dummy weights" in out
    assert main(["model", run, "--before", pred, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["summary"]["measured"] == 15 and len(got["rows"]) == 15
    other = str(PREDICTIONS / "context-ladder-fp8-hyperqwen-dummy-16k.json")
    assert main(["model", run, "--before", other]) == 2
    assert f"{other}: engine: predicted for 'fp8-hyperqwen-dummy-16k'" in capsys.readouterr().err


def test_the_hand_prediction_is_not_changed_by_a_comparison():
    pred = hand_prediction()
    before = copy.deepcopy(pred)
    bh.against(pred, hand_run())
    assert pred == before


def test_body_paragraph_counts_and_misses_from_hand_made_rows():
    from claimcheck.update.beforehand_words import body_paragraph

    def row(f, commit, fmt, step, e2e_err, within, ttft=(1.0, 1.2), tpot=(10.0, 11.0)):
        return {"prediction_file": f, "written_at_commit": commit, "what_model": "m",
                "card": "h200", "engine": f"e-{fmt}", "protocol": "my-ladder",
                "kind": "bench", "weights": "dummy", "weight_format": fmt, "run": f"r-{fmt}",
                "run_duration_s": 10.0, "prediction_repeats": 1, "status": "complete",
                "step": step, "repeat": 1, "streams": 8, "requests": 8,
                "input_len": 1000 * (step + 1), "output_len": 10,
                "context_tokens": 1000 * (step + 1) + 10, "predicted_e2e_tok_s": 100.0,
                "measured_e2e_tok_s": 100.0 / (1 + e2e_err), "e2e_error": e2e_err,
                "predicted_decode_tok_s": 100.0, "measured_decode_tok_s": 100.0,
                "decode_error": 0.0, "predicted_median_tpot_ms": tpot[0],
                "measured_median_tpot_ms": tpot[1], "tpot_error": None,
                "predicted_median_ttft_s": ttft[0], "measured_median_ttft_s": ttft[1],
                "ttft_error": None, "predicted_load_s": 1.0, "measured_send_to_last_s": 1.0,
                "measured_client_s": 1.0, "within": within, "within_e2e": within}
    rows = [row("old-bf16", "aaa1111", "bf16", 0, 0.01, True),
            row("old-bf16", "aaa1111", "bf16", 1, 0.02, True),
            row("new-bf16", "bbb2222", "bf16", 0, 0.01, True),
            row("new-bf16", "bbb2222", "bf16", 1, 0.08, False, (2.0, 2.5), (20.0, 22.0))]
    text = body_paragraph(rows)
    assert text.startswith("Set against the predictions written before the my ladder ran "
                           "(commit bbb2222)")
    assert "on 1 of 2 BF16 steps" in text
    assert "(the predictions of commit aaa1111, before its latest term: 2 BF16)" in text
    assert ("+8.0% on end to end at 8 streams of 2,000-token prompts (BF16: median TTFT "
            "2.00 s predicted, 2.50 s measured; median TPOT 20.0 ms against 22.0)") in text
    assert "e-bf16" not in text and "r-bf16" not in text  # no engine or run names
    assert body_paragraph([]) == ""


def test_a_truncated_or_missing_prediction_file_is_one_line_naming_it(tmp_path):
    from claimcheck.files.errors import InputError
    from claimcheck.predict.beforehand import load_prediction
    cut = tmp_path / "cut.json"
    cut.write_text('{"card": "h200", "engine": "bf16-dummy-16k", "steps": [')
    with pytest.raises(InputError) as e:
        load_prediction(cut)
    assert str(cut) in str(e.value) and "not valid JSON" in str(e.value)
    with pytest.raises(InputError) as e:
        load_prediction(tmp_path / "absent.json")
    assert "absent.json" in str(e.value)


def test_miss_words_count_one_stream_as_one():
    miss = {"error": 1.708, "metric": "e2e", "streams": 1, "input_len": 12000}
    assert bw.miss_words(miss) == "+170.8% on end to end at 1 stream of 12,000-token prompts"
    assert bw.miss_words({**miss, "streams": 48}).endswith("at 48 streams of 12,000-token "
                                                           "prompts")


def test_a_one_step_prediction_not_measured_says_one_step(tmp_path):
    # hyperqwen-batch on the Machete engine: one 64-stream step, its runs left out (as before
    # they were measured); its ladder: 5 steps
    out = tmp_path / "beforehand.csv"
    runs = sorted(str(p) for p in RUNS.iterdir() if (p / "provenance.json").is_file()
                  and "machete" not in p.name)
    bi.write_table(PREDICTIONS / "index.csv", runs, out)
    lines = bw.appendix_section(read_rows(out))
    assert ("not measured yet (no run of hyperqwen-batch on w4a16-dummy-machete-16k, h200); "
            "1 step predicted") in lines
    assert "); 5 steps predicted" in lines
