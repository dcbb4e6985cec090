"""Card values that no card has (issue 39): a user cards file's absurd number (1e300 GiB,
1e300 GB/s, a negative, inf, nan) is refused in one line naming the file, line and column
before any work (1e300 GiB gave a traceback, 1e300 GB/s a refusal naming config.json); and a
tensor-parallel engine on a new card has its weights split over its GPUs when the fit is
checked, borrowing only from runs of its own parallel layout."""

import csv
import io
import math

import pytest

from claimcheck.files.errors import InputError
from claimcheck.files.paths import RAW
from claimcheck.model.model import EngineShape
from claimcheck.physics.cardfiles import load_cards
from claimcheck.physics.cards import CARD_MAX, Card
from claimcheck.physics.units import GIB
from claimcheck.predict.newcard import fits
from tests._cli import QWEN, cli, one_line_error


def cards_file(tmp_path, column, value, name="mine"):
    """A user cards file of one card: the registry's H200 row as ``name`` with ``column``
    set to ``value``."""
    rows = list(csv.reader(io.StringIO((RAW / "cards.csv").read_text())))
    row = next(r for r in rows[1:] if r[0] == "h200")
    row = [name, *row[1:]]
    row[rows[0].index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([rows[0], row])
    p = tmp_path / "mine.csv"
    p.write_text(buf.getvalue())
    return p


def roofline(p):
    return cli("roofline", "--cards-file", p, "--card", "mine", "--config", QWEN,
               "--weights-format", "bf16")


@pytest.mark.parametrize(("column", "most", "unit"), [
    ("memory_gib", "10,000", "GiB"), ("memory_bw_gb_s", "100,000", "GB/s"),
    ("bf16_dense_tflops", "1,000,000", "TFLOP/s"), ("default_power_w", "10,000", "W"),
    ("link_bw_gb_s", "100,000", "GB/s")])
def test_a_value_beyond_any_card_is_refused_naming_its_cell(tmp_path, column, most, unit):
    p = cards_file(tmp_path, column, "1e300")
    assert one_line_error(roofline(p)) == (
        f"claimcheck: error: {p}:2: {column}: 1e300 {unit} is beyond any card (at most "
        f"{most} {unit}): a typo or another unit?")


@pytest.mark.parametrize(("value", "why"), [
    ("-24", "must be > 0, got -24"), ("0", "must be > 0, got 0"),
    ("inf", "must be a finite number, got 'inf'"), ("nan", "must be a finite number, got 'nan'"),
    ("lots", "not a number: 'lots'")])
def test_a_value_no_card_can_have_is_refused_naming_its_cell(tmp_path, value, why):
    p = cards_file(tmp_path, "memory_gib", value)
    assert one_line_error(roofline(p)) == f"claimcheck: error: {p}:2: memory_gib: {why}"


def test_predict_refuses_it_too_before_reading_a_run(tmp_path):
    p = cards_file(tmp_path, "memory_bw_gb_s", "1e300")
    r = cli("predict", "--cards-file", p, "--card", "mine", "--engine", "bf16-dummy-16k",
            "--protocol", "decode-rows", "--runs", tmp_path / "no-runs")
    assert one_line_error(r) == (
        f"claimcheck: error: {p}:2: memory_bw_gb_s: 1e300 GB/s is beyond any card (at most "
        "100,000 GB/s): a typo or another unit?")


def test_every_registry_card_is_within_the_bounds():
    for card in load_cards().values():
        assert card.memory_gib <= CARD_MAX["memory_gib"][0]
        assert card.memory_bw_gb_s <= CARD_MAX["memory_bw_gb_s"][0]
        assert all(v <= 1e6 for v in card.tensor_tflops.values())


# --- a tensor-parallel engine's fit on a new card --------------------------------------------

W = 47.85 * GIB  # the BF16 27B's weights, as predict reports them
S = 0.18 * GIB  # one stream's state
SMALL = Card(card="small", name="small", memory_gib=44.7, memory_bw_gb_s=864,
             tensor_tflops={"bf16": 362}, default_power_w=350, sources={})
SHAPE = EngineShape(weight_bytes=W, state_bytes=S, kv_bytes_per_token=0.0,
                    flops_body_per_token=5.4e10, flops_head_per_token=0.0,
                    max_num_batched_tokens=8192, max_num_seqs=64)


def test_the_weights_of_one_gpu_do_not_fit_the_small_card():
    with pytest.raises(InputError) as e:
        fits(SHAPE, SMALL, 0)
    assert str(e.value) == (
        "--card: the engine's weights do not fit small: 47.85 GiB of weights plus one "
        "stream's state and KV (0.18 GiB) do not fit in the card's 44.7 GiB (small: cards.csv "
        "memory_gib)")


def test_split_over_two_gpus_they_fit_and_the_wall_counts_half_of_each():
    # by hand: each GPU keeps 0.9 x 44.7 = 40.23 GiB, less half the weights (23.925 GiB):
    # 16.305 GiB; a stream holds half its 0.18 GiB state on each: 16.305 / 0.09 = 181.2
    want = math.floor((0.9 * 44.7 * GIB - W / 2) / (S / 2))
    assert fits(SHAPE, SMALL, 0, gpus=2) == want == 181


def test_a_tp2_engine_on_a_new_card_borrows_only_from_its_own_layout(tmp_path):
    p = cards_file(tmp_path, "memory_gib", "141", name="h200-twin")
    r = cli("predict", "--cards-file", p, "--card", "h200-twin", "--engine",
            "bf16-dummy-16k-tp2", "--protocol", "decode-rows")
    assert one_line_error(r) == (
        "claimcheck: error: --engine: no committed run of engine 'bf16-dummy-16k-tp2' nor of "
        "weight format 'bf16' on any card: nothing to borrow for h200-twin (only runs of its "
        "parallel layout, tensor_parallel_size 2, are borrowed: a step over several GPUs is "
        "not priced from one GPU's)")


def test_an_architecture_no_card_has_is_refused_naming_its_cell(tmp_path):
    """``arch`` names one of the architectures kernels are matched against; another word is
    refused before any work, and the registry's H200 row read as a user card keeps its."""
    with pytest.raises(InputError) as e:
        load_cards(user_path=str(cards_file(tmp_path, "arch", "volta")))
    assert e.value.line == 2 and e.value.key == "arch"
    assert "architecture 'volta' is not one of ampere, ada, hopper, blackwell" in str(e.value)
    assert load_cards(user_path=str(cards_file(tmp_path, "arch", "hopper")))["mine"].arch \
        == "hopper"
    assert {c: k.arch for c, k in load_cards().items()} == {
        "rtx3090": "ampere", "rtx4090": "ada", "rtx5090": "blackwell", "h100": "hopper",
        "h200": "hopper", "b200": "blackwell"}


RUN = "h200-20261204-w4a16-dummy-machete-16k-single-stream"


def _run_on(tmp_path, card):
    """The committed run copied with its provenance's card renamed to ``card``."""
    import json
    import shutil
    d = tmp_path / "runs" / RUN
    shutil.copytree(RAW / "runs" / RUN, d)
    shutil.copy(RAW / "runs" / "bench-sha256.txt", d.parent)  # the bench bytes it gives back
    prov = json.loads((d / "provenance.json").read_text())
    prov["card"] = card
    (d / "provenance.json").write_text(json.dumps(prov, indent=1))
    return d


def test_metrics_and_model_read_a_run_on_a_card_of_ones_own(tmp_path):
    """``metrics`` and ``model`` take ``--cards-file`` as ``roofline``, ``predict`` and
    ``measure`` do: a run measured on a card only a user cards file names is refused without
    it, naming the card, and read with it."""
    d = _run_on(tmp_path, "mine")
    p = cards_file(tmp_path, "memory_bw_gb_s", "4000")  # the H200's row at 4,000 GB/s
    assert "'mine'" in one_line_error(cli("metrics", str(d)))
    r = cli("metrics", "--cards-file", p, str(d))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{RUN}: mine, engine w4a16-dummy-machete-16k")
    r = cli("model", "--cards-file", p, str(d), "--calibrate-from", str(d))
    assert r.returncode == 0, r.stderr
    # the datasheet share from the cards file's bandwidth: 1,545 GB/s / 4,000 = 39% (the
    # registry's 4,800 GB/s would give 32%)
    assert "1,545 GB/s (39% of the NVIDIA H200's 4,000 GB/s datasheet)" in r.stdout


@pytest.mark.parametrize("command", ["metrics", "model"])
def test_a_missing_or_truncated_cards_file_is_refused_before_the_run_is_read(tmp_path,
                                                                              command):
    run = str(RAW / "runs" / RUN)
    gone = tmp_path / "gone.csv"
    assert one_line_error(cli(command, "--cards-file", gone, run)) == (
        f"claimcheck: error: {gone}: no such file (the user cards file: --cards-file or "
        "user_cards in config/config.yaml)")
    cut = tmp_path / "cut.csv"
    cut.write_text("card,name\nmine,x\n")
    assert one_line_error(cli(command, "--cards-file", cut, run)).startswith(
        f"claimcheck: error: {cut}:1: missing columns ['memory_gib', 'memory_bw_gb_s'")
