"""Protocols drive the reporting: a made-up protocol, added to a temp copy of
config/protocols.yaml, plus a fabricated run of it (a copy of a committed run directory with
hand-made bench results) gets its section in the Update and its figure, with no code
change. Expected speeds are worked out here from the hand-made TPOTs."""

import dataclasses
import json
import subprocess
import sys

import pytest
import yaml

from claimcheck.config.configfiles import load_protocols
from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG, RAW, ROOT
from claimcheck.pipeline import update_docs
from claimcheck.pipeline.derive import claims_table, run_record
from tests.fabricate import LADDER, copy_run, edit_json, seal

NAME = "made-up-sweep"
MADE_UP = {
    "description": "A made-up sweep for a test: 2 and 8 streams, 48 tokens in, 32 out.",
    "source_claims": ["article-ladder-8-tpot"],
    "metrics": ["streams_x_1000_over_median_tpot", "median_tpot_ms", "e2e_aggregate"],
    "dataset": "random", "input_len": 48, "output_len": 32, "ignore_eos": True,
    "seed": "fresh", "repeats": 1, "report": "all",
    "steps": [{"streams": 2, "requests": 4}, {"streams": 8, "requests": 16}],
}
# hand-made results: median TPOT (ms) and wall time (s) per step
TPOT = {2: 20.0, 8: 25.0}
DURATION = {2: 3.2, 8: 4.0}  # vLLM's own duration: a cross-check column only


def timeline_wall_s(streams, requests, out_len):
    """First send (0 s) to the last token of the hand-made timeline below: the last request
    starts at 0.1 x (n - 1) s, its first token 50 ms later, then out - 1 gaps of TPOT."""
    return 0.1 * (requests - 1) + 0.05 + (out_len - 1) * TPOT[streams] / 1000


def protocols_copy(tmp_path, **changes):
    data = yaml.safe_load((CONFIG / "protocols.yaml").read_text())
    data["protocols"][NAME] = {**MADE_UP, **changes}
    path = tmp_path / "protocols.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def bench(streams, requests, out_len):
    n = requests
    return {"num_prompts": n, "completed": n, "failed": 0, "duration": DURATION[streams],
            "total_output_tokens": n * out_len,
            "output_throughput": n * out_len / DURATION[streams],
            "median_tpot_ms": TPOT[streams], "mean_tpot_ms": TPOT[streams],
            "mean_ttft_ms": 50.0, "median_ttft_ms": 45.0, "median_itl_ms": TPOT[streams],
            "max_concurrency": streams, "max_concurrent_requests": streams,
            "output_lens": [out_len] * n, "input_lens": [48] * n, "errors": [""] * n,
            "ttfts": [0.05] * n, "itls": [[TPOT[streams] / 1000] * (out_len - 1)] * n,
            "start_times": [0.1 * i for i in range(n)]}


def fabricate(tmp_path, protocols_yaml):
    """A run of the made-up protocol: a copy of the committed ladder run (server logs,
    telemetry, provenance) with its protocol and steps replaced."""
    proto = load_protocols(protocols_yaml)[NAME]
    run = copy_run(tmp_path, LADDER, f"h200-20261201-bf16-dummy-{NAME}")
    prov = json.loads((run / "provenance.json").read_text())
    t = prov["steps"][0]["start_unix_s"]
    records = []
    for i, st in enumerate(proto.steps):
        d = f"{i:02d}-c{st.streams}-r1"
        rec = {"step": i, "repeat": 1, "streams": st.streams, "requests": st.requests,
               "seed": 1234 + i, "dir": d, "start_unix_s": t, "end_unix_s": t + 20.0,
               "client_returncode": 0, "completed": st.requests, "failed_requests": 0,
               "server_healthy_after": True, "status": "complete", "reason": None}
        t += 21.0
        (run / "steps" / d).mkdir(parents=True, exist_ok=True)
        (run / "steps" / d / "bench.json").write_text(json.dumps(
            bench(st.streams, st.requests, proto.output_len)))
        (run / "steps" / d / "step.json").write_text(json.dumps(rec))
        records.append(rec)
    for old in prov["steps"]:
        if old["dir"] not in {r["dir"] for r in records}:
            for f in (run / "steps" / old["dir"]).iterdir():
                f.unlink()
            (run / "steps" / old["dir"]).rmdir()

    def rewrite(p):
        p.update(protocol=NAME, run_dir=run.name, steps=records,
                 protocol_config=json.loads(json.dumps(dataclasses.asdict(proto))))
    edit_json(run / "provenance.json", rewrite)
    (run / "steps.json").write_text(json.dumps(records))
    seal(run)  # its made-up results listed in the manifest, as the runner lists them
    return run


@pytest.fixture
def made_up(tmp_path):
    protocols_yaml = protocols_copy(tmp_path)
    run = fabricate(tmp_path, protocols_yaml)
    record, claims = tmp_path / "run.json", tmp_path / "claims.json"
    run_record(run, RAW / "cards.csv", RAW / "ceilings.csv",
               RAW / "models/qwen3.8-27b/config.json", record)
    claims_table(RAW / "claims.csv", RAW / "cards.csv", tmp_path / "claims.csv", claims)
    return protocols_yaml, run, record, claims


def test_made_up_protocol_gets_its_section(made_up):
    protocols_yaml, run, record, claims = made_up
    md = update_docs.update_section([str(record)], str(claims), "h200",
                                    {f"measured-{run.name}": f"measured-{run.name}.png"},
                                    str(protocols_yaml))
    assert f"### Protocol `{NAME}`" in md and MADE_UP["description"] in md
    # the columns are the protocol's metrics, in its order
    assert ("| Run | Streams | Requests | Streams × 1000 / median TPOT, tok/s (decode) "
            "| Median TPOT | End to end, tok/s (prefill, ramp, tail in) |") in md
    for st in MADE_UP["steps"]:
        b, n = st["streams"], st["requests"]
        aggregate = b * 1000 / TPOT[b]
        e2e = n * MADE_UP["output_len"] / timeline_wall_s(b, n, MADE_UP["output_len"])
        # each aggregate with its per-stream reading: the sum / the streams
        assert (f"| {b} | {n} | {aggregate:,.1f} ({aggregate / b:,.1f} per stream) | "
                f"{TPOT[b]:.2f} ms | {e2e:,.1f} ({e2e / b:,.1f} per stream) |") in md
    assert f"{MADE_UP['input_len'] + MADE_UP['output_len']} tokens of context per stream" in md
    # its source claim is compared at its own stream count, by its own definition
    assert "- **article-ladder-8-tpot**:" in md and f"{8 * 1000 / TPOT[8]:,.0f} tok/s" in md
    assert f"![{run.name}](measured-{run.name}.png)" in md
    # every other protocol of the temp copy is listed as not run on this card
    assert "### Not run yet" in md and "`ladder`" in md


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_made_up_protocol_gets_its_figure(made_up, tmp_path):
    _, run, record, claims = made_up
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"run_record": str(record), "claims_json": str(claims),
                                      "out_base": str(tmp_path / "fig"),
                                      "out_md": str(tmp_path / "run.md")}))
    r = subprocess.run(["papermill", "-k", "python3", str(ROOT / "notebooks/measured.ipynb"),
                        str(tmp_path / "out.ipynb"), "-f", str(params)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "fig.png").stat().st_size > 10_000
    assert f"#### Protocol `{NAME}`" in (tmp_path / "run.md").read_text()


def test_unknown_metric_in_a_protocol_is_refused(tmp_path):
    # refused in protocols.yaml (its schema) and in a run's recorded protocol alike
    with pytest.raises(InputError, match=rf"protocols\.{NAME}\.metrics\.1: 'tokens_per_joule'"):
        load_protocols(protocols_copy(tmp_path, metrics=["median_tpot_ms",
                                                         "tokens_per_joule"]))
    run = fabricate(tmp_path, protocols_copy(tmp_path))
    edit_json(run / "provenance.json",
              lambda p: p["protocol_config"]["metrics"].append("tokens_per_joule"))
    r = subprocess.run([sys.executable, "-m", "claimcheck.pipeline.derive", "run-record",
                        str(run), str(tmp_path / "out.json")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert (f"provenance.json: protocols.{NAME}.metrics: unknown metric(s) "
            "['tokens_per_joule']") in r.stderr


def test_made_up_protocol_with_timeline_metrics_and_a_gate(tmp_path):
    # the same made-up sweep, now also asking for timeline metrics and declaring a gate it
    # can meet (2 levels, 1 repeat; the loader refuses a gate the steps cannot meet): its
    # table and verdict appear with no code change
    gate = {"min_levels": 2, "min_repeats": 1, "plateau_pct": 1.0}
    metrics = ["decode_aggregate", "per_request_tok_s", "tok_s_per_measured_w"]
    protocols_yaml = protocols_copy(tmp_path, metrics=metrics, gate=gate)
    run = fabricate(tmp_path, protocols_yaml)
    joules = {2: 100.0, 8: 400.0}

    def add_energy(p):
        for rec in p["steps"]:
            rec["energy"] = {"joules": joules[rec["streams"]]}
    edit_json(run / "provenance.json", add_energy)
    # no telemetry: each step's energy is its NVML counter reading (readings.energy's fallback)
    (run / "telemetry.csv").unlink()
    record, claims = tmp_path / "run.json", tmp_path / "claims.json"
    run_record(run, RAW / "cards.csv", RAW / "ceilings.csv",
               RAW / "models/qwen3.8-27b/config.json", record)
    claims_table(RAW / "claims.csv", RAW / "cards.csv", tmp_path / "claims.csv", claims)
    md = update_docs.update_section([str(record)], str(claims), "h200", {}, str(protocols_yaml))
    out = MADE_UP["output_len"]
    for st in MADE_UP["steps"]:
        b, n = st["streams"], st["requests"]
        tpot = TPOT[b] / 1000
        # request i: sent at 0.1 i, first token 0.05 s later, then out - 1 tokens TPOT apart;
        # the requests overlap, so the decode window runs from the first request's first
        # token to the last request's last token
        window = (n - 1) * 0.1 + (out - 1) * tpot
        decode = n * (out - 1) / window
        per_request = 1 / tpot
        per_w = n * out / joules[b]
        assert (f"| {b} | {n} | {decode:,.1f} ({decode / b:,.1f} per stream) "
                f"| {per_request:,.1f} | {per_w:.2f} |") in md
    assert "Gate **passes** (rules: at least 2 levels, 1 repeats per level" in md
    assert ("tok/s per measured W: each step's output tokens / its NVML energy counter over "
            "the whole client call, start-up included (2 steps, where telemetry does not "
            "cover the load window).") in md
    assert "No plateau" in md
    # the gate's level rows: median end to end (one repeat: the value itself), growth
    e2e = {b: st["requests"] * out / timeline_wall_s(b, st["requests"], out)
           for st in MADE_UP["steps"] for b in [st["streams"]]}
    assert f"| 8 | 1 | {e2e[8]:,.1f} | {e2e[8]:,.1f} – {e2e[8]:,.1f} |" in md
    assert f"| {(e2e[8] / e2e[2] - 1) * 100:+.1f}% |" in md
