"""Issue 30 item 1: one physics check on every road. The same preset (BF16 weights of
Qwen3.8-27B on a 24 GiB RTX 4090) is refused with the same words by the CLI, by the
roofline notebook under papermill, and by the pipeline's config check before any DAG is
built; the notebook draws nothing first. Real subprocesses; the numbers by hand:
25.62 B weights x 2 bytes = 51.24 GB = 47.72 GiB; one stream = 144 MiB of FP32 state + 640
tokens x 64 KiB of BF16 KV = 184 MiB = 0.18 GiB; 47.72 + 0.18 > 24."""

import json
import os
import shutil
import subprocess

import pytest
import yaml

from claimcheck.claims.registryfiles import load_weight_rows
from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG, RAW, ROOT
from claimcheck.physics.cardfiles import load_cards, load_ceilings
from claimcheck.physics.modelfiles import geometry_from_file
from claimcheck.pipeline.presets import preset_roofline

from ._cli import QWEN, cli, one_line_error

REASON = ("47.72 GiB of weights plus one stream's state and KV (0.18 GiB) do not fit in the "
          "card's 24 GiB (rtx4090: cards.csv memory_gib)")
PRESET = {"name": "rtx4090-bf16", "card": "rtx4090", "weights_format": "bf16",
          "compute_dtype": "bf16", "etas": [1.0], "state_dtype": "fp32", "kv_dtype": "bf16",
          "context": 640, "max_streams": 64}
CONFIG_PRESETS = yaml.safe_load((CONFIG / "config.yaml").read_text())["rooflines"]
KEY = f"rooflines[{len(CONFIG_PRESETS)}].weights_format"  # appended after the committed
LINE = f"config/config.yaml: {KEY}: {REASON}"


def test_cli_refuses_it():
    line = one_line_error(cli("roofline", "--config", QWEN, "--card", "rtx4090",
                              "--weights-format", "bf16", "--context", "640"))
    assert line == f"claimcheck: error: --weights-format: {REASON}"


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_notebook_refuses_it_before_drawing_any(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({
        "presets": CONFIG_PRESETS + [PRESET], "presets_source": "config/config.yaml",
        "presets_key": "rooflines", "run_records": [],
        "claims_json": str(tmp_path / "absent.json"),
        "out_base": str(tmp_path / "roofline-{name}")}))
    r = subprocess.run(["papermill", "-k", "python3", str(ROOT / "notebooks/roofline.ipynb"),
                        str(tmp_path / "out.ipynb"), "-f", str(params)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode != 0
    assert f"InputError: {LINE}" in r.stderr, r.stderr[-3000:]
    assert not list(tmp_path.glob("roofline-*"))  # refused before the first figure
    # papermill read every parameter: no warning that one was unknown or unparsed
    assert "Passed unknown parameter" not in r.stderr
    assert "Unable to parse" not in r.stderr


@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_pipeline_config_check_refuses_it(tmp_path):
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("workflow", "src", "notebooks", "pyproject.toml", "envs", "data"):
        (root / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "config", root / "config")
    cfg = root / "config" / "config.yaml"
    text = cfg.read_text()
    block = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in PRESET.items() if k != "name")
    head = "\nrooflines:\n"
    assert head in text
    # the new preset first, so its key is rooflines[0]
    cfg.write_text(text.replace(head, f"{head}  - name: {PRESET['name']}\n{block}", 1))
    r = subprocess.run(["snakemake", "-n", "--cores", "1", "all"], cwd=root,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"config/config.yaml: rooflines[0].weights_format: {REASON}" in out, out[-3000:]
    assert "Job stats" not in out and "dry-run" not in out  # no DAG was built


GEOM, CARDS = geometry_from_file(QWEN), load_cards()
CEILINGS, WEIGHTS = load_ceilings(), load_weight_rows()


def test_preset_past_the_wall_is_refused_unless_allowed():
    # the RTX 4090 W4A16 preset at 640 tokens: W4A16 weights are 4.25 bits ...
    # read the wall back from the one function and check it by hand
    p = {**PRESET, "weights_format": "w4a16", "compute_dtype": "fp16", "max_streams": 128}
    with pytest.raises(InputError) as e:
        preset_roofline(p, GEOM, CARDS["rtx4090"], CEILINGS, WEIGHTS, RAW / "runs",
                        conv_state_dtype="bf16", source="my.yaml", key="rooflines[5]")
    m, src = preset_roofline({**p, "allow_past_wall": True}, GEOM, CARDS["rtx4090"],
                             CEILINGS, WEIGHTS, RAW / "runs", conv_state_dtype="bf16")
    w = src["memory_wall"]
    # the wall by hand: 24 GiB x 0.9 less W, over 186.8125 MiB per stream: 184 MiB of fp16
    # recurrent state and fp8 KV at 640 tokens, plus the conv state at the model's bf16
    # (2,949,120 B = 2.8125 MiB): 9.98e9 B / 195,887,104 B = 50.96 -> 50 streams
    assert w.streams == int((24 * 2**30 * 0.9 - m.weight_bytes) // (186.8125 * 2**20)) == 50
    assert str(e.value) == (
        f"my.yaml: rooflines[5].max_streams: 128 streams is past the memory wall: "
        f"{w.streams} streams of 186.8 MiB each (state and KV at 640 tokens of context) fit "
        f"in {w.free_bytes / 2**30:.2f} GiB (rtx4090's 24 GiB x 0.9 (the engine's "
        "gpu_memory_utilization; the rest is its reserve) less the weights); set "
        "allow_past_wall: true to draw them anyway")
    # a free_gib the card cannot hold beside the weights: the CLI's words
    with pytest.raises(InputError) as e:
        preset_roofline({**p, "free_gib": 20}, GEOM, CARDS["rtx4090"], CEILINGS, WEIGHTS,
                        RAW / "runs", conv_state_dtype="bf16", source="my.yaml",
                        key="rooflines[5]")
    assert str(e.value).startswith("my.yaml: rooflines[5].free_gib: 20 GiB free plus ")
    assert str(e.value).endswith("exceeds the card's 24 GiB (rtx4090: cards.csv memory_gib)")


def test_claims_table_takes_the_same_check():
    import dataclasses

    from claimcheck.claims.claim_roofline import claim_roofline
    from claimcheck.claims.registryfiles import load_claims

    c = next(c for c in load_claims() if c["id"] == "tensorfold-764-decode")
    row = claim_roofline(c, GEOM, CARDS, CEILINGS, weight_rows=WEIGHTS,
                         conv_state_dtype="bf16")
    assert row["roofline_tok_s"] and row["memory_check"] == ""
    assert row["memory_wall_streams"] >= c["streams"]
    # the same claim on a card of 8 GiB: its weights do not fit, so no roofline, and the
    # note is in the CLI's words
    small = {**CARDS, c["card"]: dataclasses.replace(CARDS[c["card"]], memory_gib=8.0)}
    row = claim_roofline(c, GEOM, small, CEILINGS, weight_rows=WEIGHTS,
                         conv_state_dtype="bf16")
    assert row["roofline_tok_s"] is None
    assert row["roofline_note"].endswith(f"do not fit in the card's 8 GiB ({c['card']}: "
                                         "cards.csv memory_gib)")
