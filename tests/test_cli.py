"""The CLI as a user runs it: real subprocesses, JSON parsed and checked."""

import json
import subprocess
import sys

from claimcheck.files.paths import RAW

from .conftest import QWEN, needs_seeds


def run(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "claimcheck.cli", *args], capture_output=True,
                       text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_geometry_json():
    out = json.loads(run("geometry", str(QWEN), "--kv-dtype", "fp8", "--state-dtype", "fp16",
                         "--json").stdout)
    assert out["total_params"] == 27_781_427_952
    assert out["kv_values_per_token"] == 32_768
    assert out["kv_bytes_per_token"] == 32_768
    assert out["state_values_per_stream"] == 37_748_736
    assert out["state_bytes_per_stream"] == 72 * 2**20
    assert out["flops_per_token"] == 2 * out["weights_per_token"]


def test_roofline_json_article_3090():
    out = json.loads(run(
        "roofline", "--config", str(QWEN), "--card", "rtx3090", "--weights-gb", "16",
        "--eta", "0.79", "--tflops", "63", "--state-dtype", "fp16", "--kv-dtype", "fp8",
        "--context", "640", "--free-gib", "6.2", "--streams", "1,8,64", "--json").stdout)
    pts = {p["streams"]: p for p in out["points"]}
    assert round(pts[8]["aggregate_tok_s"]) == 340
    assert pts[64]["bound"] == "compute" and round(pts[64]["aggregate_tok_s"], -1) == 1230
    assert pts[1]["bound"] == "memory"
    # 6.2 GiB / (72 MiB fp16 recurrent + 2.8125 MiB bf16 conv + 640 x 32 KiB fp8 KV)
    # = 6,348.8 MiB / 94.8125 MiB = 66.96 -> 66 (test_physics_refused works the same wall)
    assert out["memory_wall_streams"] == 66
    assert 35 < out["bend_streams"] < 38
    assert round(out["ceiling_b1_tok_s"] / 0.79) == 58


def test_roofline_weights_format_and_unknown_card():
    out = json.loads(run("roofline", "--config", str(QWEN), "--card", "h200",
                         "--weights-format", "bf16", "--streams", "1", "--json").stdout)
    # 25.62 B weights x 2 B = 51.24 GB over 4,800 GB/s
    assert round(out["ceiling_b1_tok_s"], 1) == round(4800 / 51.244, 1)
    r = run("roofline", "--config", str(QWEN), "--card", "rtx9999", "--weights-gb", "1",
            check=False)
    assert r.returncode == 2 and "unknown card 'rtx9999'" in r.stderr


@needs_seeds
def test_claims_check_against_the_seeds():
    assert "claims OK" in run("claims", "--check").stdout


def test_claims_check_of_a_broken_copy(tmp_path):
    bad = tmp_path / "claims.csv"
    bad.write_text((RAW / "claims.csv").read_text().replace(",tok/s,", ",tokens,", 1))
    r = run("claims", "--check", "--file", str(bad), check=False)
    assert r.returncode == 2
    assert "claims.csv:2: unit: 'tokens' is not one of" in r.stderr


def test_in_process_cli_gives_what_the_process_gives(tmp_path):
    """tests._cli.cli runs main() in the test's process (most CLI tests use it, to spare a
    Python start per call); for a result, an input refusal, an argparse usage error and
    --help it must give the subprocess's own return code, stdout and stderr."""
    from ._cli import cli, cli_process

    cases = [
        ("geometry", str(QWEN), "--kv-dtype", "fp8", "--json"),
        ("roofline", "--config", str(QWEN), "--card", "rtx9999", "--weights-gb", "1"),
        ("roofline", "--no-such-option"),
        ("claims", "--help"),
    ]
    got = [(r.returncode, r.stdout, r.stderr) for r in (cli(*a) for a in cases)]
    want = [(r.returncode, r.stdout, r.stderr) for r in (cli_process(*a) for a in cases)]
    assert [c for c, _, _ in want] == [0, 2, 2, 0]
    assert got == want
