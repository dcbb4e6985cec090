"""Class: tracebacks and wrong causes. Each bad input gives one line naming the file or
option and the real cause (exit 2); a BOM is accepted; a closed pipe ends quietly; a full
disk names what could not be written; anything that is not bad input keeps its traceback.
All on copies of the committed data."""

import argparse
import codecs
import json
import os
import shutil
import subprocess
import sys

import pytest

from claimcheck import cli as cli_mod
from claimcheck.config.yamlfiles import load_validated
from claimcheck.files.errors import InputError
from claimcheck.physics.cardfiles import load_cards, load_ceilings
from claimcheck.runs.runload import read_telemetry

from ._cli import QWEN, ROOT, cli, one_line_error, qwen_copy

RAW = ROOT / "data" / "raw"
RUN = RAW / "runs" / "h200-20261129-bf16-dummy-ladder"
START_HINT = "start one with `claimcheck serve --engine NAME --state DIR`"


# --- files: missing, a directory, BOM, Latin-1 ----------------------------------------

def test_missing_and_directory_config(tmp_path):
    line = one_line_error(cli("geometry", tmp_path / "nope.json"))
    assert line.endswith(f"{tmp_path / 'nope.json'}: no such file")
    line = one_line_error(cli("roofline", "--config", tmp_path, "--card", "h200",
                              "--weights-gb", "16"))
    assert line.endswith(f"{tmp_path}: is a directory, not a file")


def test_zero_heads_names_the_key_not_a_division(tmp_path):
    cfg = qwen_copy(tmp_path, lambda c: c["text_config"].update(num_attention_heads=0,
                                                               head_dim=None))
    line = one_line_error(cli("geometry", cfg))
    assert "text_config.num_attention_heads: must be >= 1, got 0" in line
    assert "ZeroDivision" not in line


def test_config_with_bom_is_read_and_latin1_is_refused(tmp_path):
    bom = tmp_path / "bom.json"
    bom.write_bytes(codecs.BOM_UTF8 + QWEN.read_bytes())
    r = cli("geometry", bom, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["total_params"] == 27_781_427_952  # the committed model
    latin = tmp_path / "latin1.json"
    cfg = json.loads(QWEN.read_text())
    cfg["note"] = "café"
    latin.write_bytes(json.dumps(cfg, ensure_ascii=False).encode("latin-1"))
    line = one_line_error(cli("geometry", latin))
    assert f"{latin}: not UTF-8 text" in line and "0xe9" in line  # é in Latin-1


@pytest.mark.parametrize(("name", "loader"), [("cards.csv", load_cards),
                                              ("ceilings.csv", load_ceilings)])
def test_registry_csv_with_bom_and_latin1(tmp_path, name, loader):
    text = (RAW / name).read_text()
    bom = tmp_path / name
    bom.write_bytes(codecs.BOM_UTF8 + text.encode())
    assert loader(bom) == loader(RAW / name)  # not "missing columns ['card']"
    latin = tmp_path / ("latin1-" + name)
    latin.write_bytes(text.replace("NVIDIA", "NVIDIA é", 1).replace(
        "seeds/000", "seeds/000 é", 1).encode("latin-1"))
    with pytest.raises(InputError, match=rf"latin1-{name}: not UTF-8 text \(byte \d+: 0xe9\)"):
        loader(latin)


def test_registry_csv_bad_numbers_name_line_and_column(tmp_path):
    p = tmp_path / "cards.csv"
    lines = (RAW / "cards.csv").read_text().splitlines(keepends=True)
    h200 = next(i for i, ln in enumerate(lines) if ln.startswith("h200,"))
    lines[h200] = lines[h200].replace(",4800,", ",inf,", 1)
    p.write_text("".join(lines))
    with pytest.raises(InputError, match=rf"cards.csv:{h200 + 1}: memory_bw_gb_s: must be a "
                                         r"finite number, got 'inf'"):
        load_cards(p)
    lines[h200] = ",".join(lines[h200].split(",")[:5]) + "\n"  # a row cut off
    p.write_text("".join(lines))
    n = len(lines[0].split(","))  # the header's columns
    with pytest.raises(InputError, match=rf"cards.csv:{h200 + 1}: 5 fields, the header has {n}"):
        load_cards(p)
    c = tmp_path / "ceilings.csv"
    c.write_text((RAW / "ceilings.csv").read_text().replace(",fp16,63,", ",fp16,-63,", 1))
    with pytest.raises(InputError, match=r"ceilings.csv:2: tflops: must be > 0, got -63"):
        load_ceilings(c)
    c.write_text((RAW / "ceilings.csv").read_text().replace("rtx3090,250", "rtx3099,250", 1))
    with pytest.raises(InputError, match=r"ceilings.csv:2: card: unknown card 'rtx3099'"):
        load_ceilings(c, cards=load_cards())


def test_yaml_with_bom_is_read_and_latin1_is_refused(tmp_path):
    src = ROOT / "config" / "protocols.yaml"
    bom = tmp_path / "protocols.yaml"
    bom.write_bytes(codecs.BOM_UTF8 + src.read_bytes())
    assert load_validated(bom, "protocols") == load_validated(src, "protocols")
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes(src.read_text().replace("Published", "Publiées", 1).encode("latin-1"))
    line = one_line_error(cli("measure", "--card", "h200", "--engine", "bf16-dummy",
                              "--protocol", "ladder", "--protocols-file", latin))
    assert f"{latin}: not UTF-8 text" in line


def test_config_json_truncated_names_file_and_line(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(QWEN.read_text()[:200])
    line = one_line_error(cli("geometry", p))
    assert f"{p}:" in line and "not valid JSON" in line


# --- options and state directories ----------------------------------------------------

def test_gpus_not_numbers_names_the_option():
    line = one_line_error(cli("measure", "--card", "h200", "--engine", "bf16-dummy",
                              "--protocol", "ladder", "--gpus", "a,b"))
    assert line == "claimcheck: error: --gpus: wants NVML indices like 0 or 0,1, got 'a,b'"


@pytest.mark.parametrize("command", ["stop", "wait", "attach"])
def test_missing_state_dir_gives_the_real_hint(tmp_path, command):
    state = tmp_path / "no-such-state"
    if command == "attach":
        r = cli("measure", "--card", "h200", "--engine", "bf16-dummy", "--protocol", "ladder",
                "--attach", state)
    else:
        r = cli(command, "--state", state, "--health-timeout", "1") if command == "wait" \
            else cli(command, "--state", state)
    line = one_line_error(r)
    assert f"{state}: server state directory does not exist; {START_HINT}" in line
    assert "--detach" not in line  # a flag that does not exist
    assert not state.exists()  # nothing was created


def test_state_dir_without_server_json_and_corrupt_one(tmp_path):
    line = one_line_error(cli("stop", "--state", tmp_path))
    assert f"{tmp_path}: no server.json here" in line and START_HINT in line
    (tmp_path / "server.json").write_text('{"base_url": "http://127.0.0.1:8000", ')
    line = one_line_error(cli("wait", "--state", tmp_path, "--health-timeout", "1"))
    assert f"{tmp_path / 'server.json'}:1: not valid JSON" in line


# --- telemetry reader -----------------------------------------------------------------

def test_garbage_telemetry_row_names_file_line_and_column(tmp_path):
    p = tmp_path / "telemetry.csv"
    shutil.copy(RUN / "telemetry.csv", p)
    good = read_telemetry(p)
    assert len(good) == len((RUN / "telemetry.csv").read_text().splitlines()) - 1
    with p.open("a") as f:
        f.write("1795944999.0,0,garbage,700.0,1980,3201,40,129965.9,0x0\n")
    with pytest.raises(InputError, match=rf"telemetry.csv:{len(good) + 2}: power_w: not a "
                                         r"number: 'garbage'"):
        read_telemetry(p)
    p.write_text((RUN / "telemetry.csv").read_text() + "\x00\x01junk,0,1,2,3,4,5,6,0x0\n")
    with pytest.raises(InputError, match=rf"telemetry.csv:{len(good) + 2}: t_unix_s: not a "
                                         "number"):
        read_telemetry(p)
    p.write_text((RUN / "telemetry.csv").read_text() + "1795944999.5,0,12")  # cut off
    with pytest.raises(InputError, match=rf"telemetry.csv:{len(good) + 2}: fewer fields than "
                                         r"the header \(a row cut off\?\)"):
        read_telemetry(p)


# --- output: closed pipe, full disk; other exceptions keep their traceback -------------

def test_closed_pipe_ends_quietly():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CLAIMCHECK_ROOT": str(ROOT)}
    # the real shell pipeline (the output is ~117 kB, more than a pipe holds)
    r = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m claimcheck.cli "
                        "claims --json | head -1"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout == "[\n" and r.stderr == "", r.stderr
    # the reader gone before anything is written
    p = subprocess.Popen([sys.executable, "-m", "claimcheck.cli", "claims", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() == 0 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_full_disk_names_what_was_not_written():
    with open("/dev/full", "w") as full:
        r = cli("claims", "--json", stdout=full)
    line = one_line_error(r, code=1)
    assert line == ("claimcheck: error: cannot write standard output: No space left on "
                    "device")


def test_full_disk_on_a_file_names_the_path(monkeypatch, capsys):
    def save_provenance(a):  # what a command's write into a run directory raises
        raise OSError(28, "No space left on device", "/data/raw/runs/x/provenance.json")

    monkeypatch.setattr(cli_mod, "cmd_claims", save_provenance)
    assert cli_mod.main(["claims"]) == 1
    assert capsys.readouterr().err == ("claimcheck: error: cannot write /data/raw/runs/x/"
                                       "provenance.json: No space left on device\n")


def test_only_input_errors_are_reported_as_bad_input(monkeypatch):
    def bug(a: argparse.Namespace) -> int:
        raise ValueError("a programming error, not bad input")

    monkeypatch.setattr(cli_mod, "cmd_claims", bug)
    with pytest.raises(ValueError, match="programming error"):
        cli_mod.main(["claims"])


def test_option_combinations_name_the_option(tmp_path):
    # a committed config edited to head_dim 100: K8V4's 32-value scale groups do not fit
    cfg = qwen_copy(tmp_path, lambda c: c["text_config"].update(head_dim=100))
    line = one_line_error(cli("geometry", cfg, "--kv-dtype", "k8v4"))
    assert line.endswith("--kv-dtype: k8v4 does not fit this model: head_dim 100 is not a "
                         "multiple of scale group 32")
    line = one_line_error(cli("geometry", QWEN, "--state-dtype", "fp8"))
    assert "--state-dtype: unknown 'fp8'; known: " in line


def test_memory_wall_of_a_stream_that_needs_no_memory(tmp_path):
    # every layer full attention: no recurrent state; at --context 0 no KV either
    def all_attention(c):
        t = c["text_config"]
        t["layer_types"] = ["full_attention"] * t["num_hidden_layers"]

    cfg = qwen_copy(tmp_path, all_attention)
    line = one_line_error(cli("roofline", "--config", cfg, "--card", "h200",
                              "--weights-format", "bf16", "--free-gib", "10"))
    assert line.endswith("--free-gib: a stream of this model needs no memory at --context 0 "
                         "(no recurrent state, no KV): give --context")
