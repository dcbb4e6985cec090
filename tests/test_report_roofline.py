"""One way to a roofline: the claims table, the run table, the presets (figures) and the CLI
all build it through claimcheck.physics.inputs.roofline_for, so the same claim gets the same
roofline everywhere. Expected values come from the CSV rows read here by hand."""

import csv
import json
import subprocess
import sys

import pytest
import yaml

from claimcheck.claims.claim_roofline import claim_roofline
from claimcheck.claims.registryfiles import load_claims, load_weight_rows
from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG, RAW, ROOT, RUNS
from claimcheck.physics import roofline as rl
from claimcheck.physics.cardfiles import load_cards, load_ceilings
from claimcheck.physics.engine_inputs import model_dtype
from claimcheck.physics.inputs import Weights, roofline_for, state_bytes
from claimcheck.physics.modelfiles import geometry_from_file, load_config
from claimcheck.pipeline.presets import check_unique_names, preset_roofline
from claimcheck.runs.run import load_run
from claimcheck.runs.tables import run_rows

GEOM = geometry_from_file(RAW / "models/qwen3.8-27b/config.json")
CONV = model_dtype(load_config(RAW / "models/qwen3.8-27b/config.json"))  # bf16: S's conv state
CARDS = load_cards()
CEILINGS = load_ceilings()
WEIGHTS = load_weight_rows()
PRESETS = {p["name"]: p for p in yaml.safe_load((CONFIG / "config.yaml").read_text())[
    "rooflines"]}


def csv_row(path, key, value):
    with open(path, newline="") as f:
        return next(r for r in csv.DictReader(f) if r[key] == value)


def claim(cid):
    return next(c for c in load_claims() if c["id"] == cid)


def test_weights_id_and_ceiling_id_by_hand():
    w = csv_row(RAW / "weights.csv", "id", "hyperqwen-w4a16-autoround")
    c = csv_row(RAW / "ceilings.csv", "id", "hyperqwen-3090-250w")
    card = csv_row(RAW / "cards.csv", "card", "rtx3090")
    assert w["weight_unit"] == "GB"
    m, src = roofline_for(GEOM, CARDS["rtx3090"], weights=Weights(id=w["id"]),
                          ceilings=CEILINGS, weight_rows=WEIGHTS, ceiling=c["id"])
    assert m.weight_bytes == float(w["weight_size"]) * 1e9
    assert m.peak_flops_s == float(c["tflops"]) * 1e12
    # the pocket-calculator line: bandwidth / weight bytes
    assert rl.ceiling_b1_tok_s(m) == pytest.approx(
        float(card["memory_bw_gb_s"]) / float(w["weight_size"]))
    assert src["state_dtype"] == w["state_dtype"] and src["kv_dtype"] == w["kv_dtype"]
    assert c["id"] in src["tflops_source"]


def test_tensorfold_uses_the_5090_figure_ceiling():
    # TensorFold's 764 (NVFP4 on the RTX 5090) against the ceiling the 5090 figure names
    ref = csv_row(RAW / "ceilings.csv", "id", PRESETS["rtx5090-cinference"]["ceiling"])
    row = claim_roofline(claim("tensorfold-764-decode"), GEOM, CARDS, CEILINGS,
                         weight_rows=WEIGHTS, conv_state_dtype="bf16")
    _, src = preset_roofline(PRESETS["rtx5090-cinference"], GEOM, CARDS["rtx5090"],
                             CEILINGS, WEIGHTS, RUNS,
                             conv_state_dtype=CONV)
    assert row["roofline_tflops"] == src["tflops"] == float(ref["tflops"])
    assert float(ref["tflops"]) != CARDS["rtx5090"].tflops("fp4")


# Only presets drawn from a weights.csv row: a claim reaches the claims table's roofline
# through the weights row it matches, and a preset drawn from a recorded run (h200-bf16,
# ``weights_run``) has no row a claim could match; its agreement with the run table is
# test_h200_preset_and_run_table_agree below.
# Only presets drawn from a weights.csv row: a claim reaches the claims table's roofline
# through the weights row it matches, and a preset drawn from a recorded run (h200-bf16,
# ``weights_run``) has no row a claim could match; its agreement with the run table is
# test_h200_preset_and_run_table_agree below.
@pytest.mark.parametrize("name", sorted(n for n, p in PRESETS.items() if p.get("weights")))
def test_presets_and_claims_table_agree(name):
    """Every claim on a preset's card with the preset's weights row gets, in the claims
    table, the roofline the preset's figure draws (at the same context), S included: both
    take the conv state at the model dtype (:func:`claimcheck.physics.inputs.state_bytes`).
    A claim at another power limit than the preset's ceiling gets the ceiling of its own
    limit; given the preset's ceiling by hand it must then draw the same line."""
    p = PRESETS[name]
    fig, _ = preset_roofline(p, GEOM, CARDS[p["card"]], CEILINGS, WEIGHTS, RUNS,
                             conv_state_dtype=CONV)
    row_w = WEIGHTS[p["weights"]]
    same = [c for c in load_claims() if c["card"] == p["card"]
            and (c[row_w.match_field] or "").startswith(row_w.match_prefix)
            and (c["context_tokens"] or 0) == p["context"]
            and c["metric"] != "prefill"]
    assert same, f"no claim on {p['card']} matches weights row {p['weights']}"
    tflops = fig.peak_flops_s / 1e12
    preset_limit = CEILINGS[p["ceiling"]].power_limit_w
    for c in same:
        row = claim_roofline(c, GEOM, CARDS, CEILINGS, weight_rows=WEIGHTS,
                             conv_state_dtype="bf16")
        if row["roofline_tflops"] != tflops:
            assert preset_limit is not None and c["power_limit_w"] != preset_limit, c["id"]
            row = claim_roofline(c, GEOM, CARDS, CEILINGS, weight_rows=WEIGHTS,
                                 tflops=tflops, conv_state_dtype="bf16")
            assert row["roofline_tflops"] == tflops, c["id"]
        assert fig.state_bytes == state_bytes(GEOM, row["roofline_state_dtype"], CONV)
        assert row["roofline_tok_s"] == pytest.approx(
            rl.point(fig, c["streams"]).aggregate_tok_s, rel=1e-12), c["id"]


def test_h200_preset_and_run_table_agree():
    p = PRESETS["h200-bf16"]
    fig, src = preset_roofline(p, GEOM, CARDS["h200"], CEILINGS, WEIGHTS, RUNS,
                             conv_state_dtype=CONV)
    run = load_run(RUNS / p["weights_run"])
    assert src["weights"].startswith(f"engine log: weights {run.weights_gib * 2**30 / 1e9:.2f} "
                                     "GB (the log's figure, converted) less input embedding")
    rows = run_rows([run], GEOM, CARDS, ceilings=CEILINGS)
    for s in run.reported:
        r = next(r for r in rows if r["step"] == s["step"] and r["repeat"] == s["repeat"])
        assert r["roofline_tok_s"] == pytest.approx(
            rl.point(fig, s["streams"]).aggregate_tok_s, rel=1e-12)


def test_cli_gives_the_preset_roofline():
    p = PRESETS["rtx3090-hyperqwen"]
    fig, _ = preset_roofline(p, GEOM, CARDS["rtx3090"], CEILINGS, WEIGHTS, RUNS,
                             conv_state_dtype=CONV)
    r = subprocess.run([sys.executable, "-m", "claimcheck.cli", "roofline", "--config",
                        str(RAW / "models/qwen3.8-27b/config.json"), "--card", "rtx3090",
                        "--weights", p["weights"], "--ceiling", p["ceiling"],
                        "--state-dtype", p["state_dtype"], "--kv-dtype", p["kv_dtype"],
                        "--context", str(p["context"]), "--streams", "1,64", "--json"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for pt in out["points"]:
        assert pt["aggregate_tok_s"] == pytest.approx(
            rl.point(fig, pt["streams"]).aggregate_tok_s, rel=1e-12)


def test_weight_unit_outside_the_closed_set_is_refused(tmp_path):
    bad = tmp_path / "weights.csv"
    lines = (RAW / "weights.csv").read_text().splitlines()
    lines[2] = lines[2].replace(",GB,", ",MB,", 1)
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        load_weight_rows(bad)
    assert str(e.value).startswith(f"{bad}:3: weight_unit: unit 'MB' is not one of")


def test_measured_size_needs_a_known_unit():
    with pytest.raises(ValueError, match="weight unit 'MB'"):
        Weights(size=16, unit="MB")
    with pytest.raises(ValueError, match="exactly one weight source"):
        Weights(id="x", format="bf16")


def test_duplicate_preset_names_refused():
    presets = list(PRESETS.values())
    with pytest.raises(InputError, match=r"rooflines\[3\]\.name: duplicate preset name"):
        check_unique_names(presets + [dict(presets[0])], "config.yaml")


def test_ceiling_for_another_card_refused():
    with pytest.raises(InputError, match="is for rtx3090, not h200"):
        roofline_for(GEOM, CARDS["h200"], weights=Weights(format="bf16"), ceilings=CEILINGS,
                     weight_rows=WEIGHTS, ceiling="hyperqwen-3090-250w")


def test_a_claim_and_a_step_of_one_engine_shape_have_one_s():
    """S for a claim and for a measured step of the same engine shape (BF16 weights, FP32
    DeltaNet state, BF16 model dtype, H200): the same bytes, worked out by hand from the
    geometry: layers x v-heads x dk x dv x 4 bytes + conv values x 2 bytes."""
    from dataclasses import replace

    from claimcheck.physics.engine_inputs import engine_inputs
    from claimcheck.physics.modelfiles import load_config
    from claimcheck.runs.tables import engine_roofline
    config = load_config(RAW / "models/qwen3.8-27b/config.json")
    by_hand = GEOM.state_values_per_stream * 4 + GEOM.conv_state_values_per_stream * 2
    assert GEOM.conv_state_values_per_stream > 0
    ei = engine_inputs(GEOM, config, {"mamba_ssm_cache_dtype": "float32"}, 53.8)
    step, _ = engine_roofline(ei, GEOM, CARDS["h200"], CEILINGS, context_tokens=1024)
    base = load_claims()[0]  # any registry row, set to the step's shape below
    c = replace(base, row={**base.row, "metric": "decode_aggregate", "quantization": "bf16",
                           "card": "h200", "checkpoint": "", "system": "", "kv_dtype": "bf16",
                           "context_tokens": 1024, "streams": 64, "power_limit_w": None})
    row = claim_roofline(c, GEOM, CARDS, CEILINGS, weight_rows={}, conv_state_dtype="bf16")
    assert ei.state_bytes_per_stream == step.state_bytes == by_hand
    assert row["roofline_state_dtype"] == "fp32"
    claim_m, _ = roofline_for(GEOM, CARDS["h200"], weights=Weights(format="bf16"),
                              ceilings=CEILINGS, weight_rows={}, context_tokens=1024,
                              conv_state_dtype="bf16")
    assert claim_m.state_bytes == by_hand
    # the claim's roofline is the one of that S: memory time over its 64 streams
    assert row["roofline_tok_s"] == pytest.approx(rl.point(claim_m, 64).aggregate_tok_s,
                                                  rel=1e-12)


def test_model_dtype_reads_dtype_and_torch_dtype_at_top_or_in_text_config():
    """The committed config.json says ``text_config.dtype``; older ones ``torch_dtype``."""
    assert model_dtype({"text_config": {"dtype": "float16"}}) == "fp16"
    assert model_dtype({"torch_dtype": "float16", "text_config": {}}) == "fp16"
    assert model_dtype({}) == "bf16"
    assert model_dtype(json.loads((RAW / "models/qwen3.8-27b/config.json").read_text())) == "bf16"
    with pytest.raises(ValueError, match="unknown engine model dtype 'int3'"):
        model_dtype({"dtype": "int3"})
