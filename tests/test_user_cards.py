"""Issue 30 item 2: a card of one's own. The L40S cards file of docs/own-card.md (read from
that page itself) gives a roofline on the CLI and a figure under papermill; a bad row of a
user cards file is refused in one line naming the file, line and column. Real CLI subprocesses.

By hand for the L40S at W4A16 (25.62 B weights x 0.515625 byte = 13.21 GB = 12.30 GiB),
640 tokens of BF16 KV (64 KiB/token), FP32 recurrent state (144 MiB) and the conv state at
the model's BF16 (2,949,120 B = 2.8125 MiB): one stream holds 186.8125 MiB; the wall is
(44.7 GiB x 0.9 - 12.30 GiB) / 186.8125 MiB = 27.93 GiB / 0.18244 GiB = 153.1 -> 153 streams;
B = 1 step = (13.21 GB + 2 x 146.8125 MiB + 640 x 64 KiB) / 864 GB/s = 15.69 ms."""

import json
import os
import re
import subprocess

import pytest
import yaml

from claimcheck.files.errors import InputError
from claimcheck.files.paths import RAW, ROOT
from claimcheck.physics.cardfiles import load_cards

from ._cli import QWEN, cli, one_line_error

SECTION = (ROOT / "docs" / "own-card.md").read_text()
CSV = re.search(r"<<'CSV'\n(.*?\n)CSV\n", SECTION, re.S).group(1)  # the page's heredoc
HEADER = CSV.splitlines()[0]


@pytest.fixture
def cards(tmp_path):
    p = tmp_path / "my-cards.csv"
    p.write_text(CSV)
    return p


def test_readme_card_gives_a_roofline(cards):
    r = cli("roofline", "--cards-file", cards, "--card", "l40s", "--config", QWEN,
            "--weights-format", "w4a16", "--context", "640", "--streams", "1,153", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["memory_wall_streams"] == 153
    assert out["points"][0]["step_ms"] == pytest.approx(
        (25.62e9 * 0.515625 + 2 * 146.8125 * 2**20 + 640 * 64 * 1024) / 864e9 * 1e3, rel=2e-3)
    assert out["inputs"]["tflops_source"] == "datasheet dense bf16"
    assert out["inputs"]["bandwidth_source"] == "NVIDIA L40S datasheet (864 GB/s)"
    # without the file the card is unknown, and the refusal says where to add one
    line = one_line_error(cli("roofline", "--card", "l40s", "--config", QWEN,
                              "--weights-format", "w4a16"))
    assert "unknown card 'l40s'" in line and "--cards-file" in line


def _refused(tmp_path, body, header=HEADER):
    p = tmp_path / "bad.csv"
    p.write_text(header + "\n" + body + "\n")
    return one_line_error(cli("roofline", "--cards-file", p, "--card", "l40s", "--config",
                              QWEN, "--weights-format", "w4a16")), p


def test_bad_rows_are_refused_in_one_line(tmp_path):
    row = CSV.splitlines()[1]
    line, p = _refused(tmp_path, "l40s,NVIDIA L40S,44.7")
    assert line == (f"claimcheck: error: {p}:2: memory_bw_gb_s: the row has 3 fields, the "
                    "header 10: memory_bw_gb_s and after are missing")
    line, p = _refused(tmp_path, row.replace(",864,", ",fast,"))
    assert line.startswith(f"claimcheck: error: {p}:2: memory_bw_gb_s: ")
    assert "fast" in line
    line, p = _refused(tmp_path, row.replace(",NVIDIA L40S datasheet (864 GB/s),", ",,"))
    assert line == f"claimcheck: error: {p}:2: source_bandwidth: empty"
    line, p = _refused(tmp_path, row.replace(",362,", ",,"))
    assert line.startswith(f"claimcheck: error: {p}:2: bf16_dense_tflops: no dense tensor "
                           "rate")
    line, p = _refused(tmp_path, row.replace("l40s,NVIDIA L40S", "h200,NVIDIA L40S"))
    assert line.startswith(f"claimcheck: error: {p}:2: card: card 'h200' is in ")
    assert "never changes the registry's" in line
    line, p = _refused(tmp_path, row + ",x", header=HEADER + ",memory_gb")
    assert line.startswith(f"claimcheck: error: {p}:1: memory_gb: unknown column(s) "
                           "['memory_gb']")
    # a rated tensor clock (the clock the tensor rates are quoted at) needs its source
    line, p = _refused(tmp_path, row + ",1800,", header=HEADER + ",tensor_clock_mhz,"
                       "source_tensor_clock")
    assert line == f"claimcheck: error: {p}:2: source_tensor_clock: a tensor clock needs its source"
    # impossible clocks: negative, infinite, in kHz (a unit slip), not a number
    head = HEADER + ",tensor_clock_mhz,source_tensor_clock"
    for v, words in [("-5", "must be > 0, got -5"),
                     ("inf", "must be a finite number, got 'inf'"),
                     ("1800000", "1800000 MHz is beyond any card (at most 10,000 MHz): a typo "
                                 "or another unit?"),
                     ("fast", "not a number: 'fast'")]:
        line, p = _refused(tmp_path, row + f",{v},datasheet", header=head)
        assert line == f"claimcheck: error: {p}:2: tensor_clock_mhz: {words}"
    line = one_line_error(cli("roofline", "--cards-file", tmp_path / "none.csv", "--card",
                              "l40s", "--config", QWEN, "--weights-format", "w4a16"))
    assert line.startswith(f"claimcheck: error: {tmp_path / 'none.csv'}: no such file")


def test_merge_keeps_the_registry_and_names_each_file(cards):
    merged = load_cards(RAW / "cards.csv", cards)
    assert set(merged) == set(load_cards(RAW / "cards.csv", "")) | {"l40s"}
    assert merged["l40s"].registry == str(cards)
    assert merged["l40s"].memory_gib == 44.7 and merged["l40s"].tflops("bf16") == 362
    with pytest.raises(InputError):
        load_cards(RAW / "cards.csv", cards.parent / "absent.csv")


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_notebook_draws_the_readme_preset(cards, tmp_path):
    block = re.search(r"cat > l40s-preset.yaml <<'YAML'\n(.*?)YAML\n", SECTION, re.S).group(1)
    params = yaml.safe_load(block)
    assert params["user_cards_csv"] == "my-cards.csv"
    params.update(user_cards_csv=str(cards), run_records=[],
                  claims_json=str(tmp_path / "claims.json"),
                  out_base=str(tmp_path / "roofline-l40s"))
    (tmp_path / "claims.json").write_text("[]")
    pf = tmp_path / "p.yaml"
    pf.write_text(yaml.safe_dump(params))
    r = subprocess.run(["papermill", "-k", "python3", str(ROOT / "notebooks/roofline.ipynb"),
                        str(tmp_path / "out.ipynb"), "-f", str(pf)], capture_output=True,
                       text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "roofline-l40s.png").stat().st_size > 10_000
    out = (tmp_path / "out.ipynb").read_text()
    assert ("memory wall: 153 streams of 186.8 MiB in 27.93 GiB (l40s's 44.7 GiB x 0.9 "
            "(the engine's gpu_memory_utilization") in out


def test_a_new_cards_calibration_is_priced_from_the_projects_protocols(cards, tmp_path):
    """Issue 39: the calibration a new card needs is the project's protocols, so a
    protocols file of one's own (holding the predicted protocol alone) prices it the same,
    not at 0.0 GPU-minutes."""
    protos = yaml.safe_load((ROOT / "config" / "protocols.yaml").read_text())
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"protocols": {
        "hyperqwen-batch": protos["protocols"]["hyperqwen-batch"]}}))
    base = ["predict", "--cards-file", cards, "--card", "l40s", "--engine",
            "fp8-hyperqwen-dummy-16k", "--protocol", "hyperqwen-batch", "--json"]
    with_file, without = cli(*base, "--protocols-file", mine), cli(*base)
    assert with_file.returncode == 0 and without.returncode == 0, with_file.stderr
    a, b = (json.loads(r.stdout)["calibrate"] for r in (with_file, without))
    assert b["gpu_minutes"] > 1 and a["gpu_minutes"] == b["gpu_minutes"]
    assert a["protocols"] == b["protocols"]


def test_the_cards_file_is_passed_by_name_never_through_the_environment(cards, monkeypatch,
                                                                       capsys):
    # issue 40 item 4: --cards-file reaches each card read of its command as an argument;
    # no module writes the process environment, and none reads a cards file from it
    import inspect

    from claimcheck.cli import main
    from claimcheck.physics import cardfiles as loader

    assert "os.environ" not in inspect.getsource(loader)
    before = dict(os.environ)
    assert main(["roofline", "--cards-file", str(cards), "--card", "l40s", "--config",
                 str(QWEN), "--weights-format", "w4a16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert dict(os.environ) == before
    loader.use_user_cards(cards)  # the pipeline's check of its user_cards: nothing set
    assert dict(os.environ) == before and "l40s" not in load_cards()
    monkeypatch.setenv("CLAIMCHECK_CARDS_FILE", str(cards))  # the old variable: not read
    assert "l40s" not in load_cards()
