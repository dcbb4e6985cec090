"""Issue 30 item 3: a prediction for a card with no run. Held out on the committed runs: the
two runs of engine fp8-hyperqwen-dummy (HyperQwen's batch protocol, measured on the H200)
are removed, and the protocol is predicted on a card of one's own with the H200's datasheet
and no run ("h200-twin"), borrowing eta and the engine terms from the FP8 engine that has
runs (fp8-hyperqwen-dummy-16k on the H200). With the same datasheet the borrowed bandwidth
is that engine's effective bandwidth exactly, so the prediction must fall near what the
held-out runs measured (within 10%), every borrowed value marked assumed."""

import dataclasses

import pytest

from claimcheck.calibration import calibrate
from claimcheck.config.configfiles import load_engines, load_protocols
from claimcheck.files.paths import CONFIG, RUNS
from claimcheck.physics.cardfiles import get_card
from claimcheck.predict import newcard, protocolpredict

HELD = "fp8-hyperqwen-dummy"


@pytest.fixture(scope="module")
def runs(committed_runs):
    return list(committed_runs)


@pytest.fixture
def twin(tmp_path):
    text = (RUNS.parent / "cards.csv").read_text().splitlines()
    h200 = next(line for line in text if line.startswith("h200,"))
    p = tmp_path / "cards.csv"
    p.write_text(text[0] + "\n" + h200.replace("h200,", "h200-twin,", 1)
                 .replace(",NVIDIA H200,", ",NVIDIA H200 (twin),") + "\n")
    return p  # passed by name (predict_new_card's cards_file): no process-wide setting


def test_held_out_engine_predicted_from_another(runs, twin):
    protos, engines = load_protocols(CONFIG / "protocols.yaml"), load_engines()
    proto = next(p for p in protos.values()
                 if any(calibrate.run_key(r)[1] == HELD and r.provenance.protocol == p.name
                        for r in runs))
    measured = protocolpredict.predict_protocol(runs, "h200", HELD, proto, engines).report
    held_out = [r for r in runs if calibrate.run_key(r)[1] != HELD]
    assert not newcard.has_runs(held_out, "h200-twin")
    out = newcard.predict_new_card(held_out, "h200-twin", HELD, proto, protos, engines,
                                   str(twin)).report
    assert (out["borrowed"]["from_card"], out["borrowed"]["from_engine"]) == (
        "h200", "fp8-hyperqwen-dummy-16k")
    values = out["borrowed"]["values"]
    assert all(v["assumed"] for v in values.values())
    src = protocolpredict.predict_protocol(held_out, "h200", "fp8-hyperqwen-dummy-16k", proto,
                                           engines).report["calibration"]
    h200 = get_card("h200")
    # eta by hand: effective over datasheet; on the twin it gives the same bandwidth back
    assert values["eta"]["value"] == pytest.approx(src["bandwidth_gb_s"] / 4800)
    assert out["calibration"]["bandwidth_gb_s"] == pytest.approx(src["bandwidth_gb_s"])
    assert values["compute_efficiency"]["value"] == pytest.approx(
        src["tflops"] / h200.tflops("fp8"))
    for got, want in zip(out["steps"], measured["steps"], strict=True):
        assert got["measured_e2e_tok_s"] is None  # nothing measured on the twin
        assert got["predicted_e2e_tok_s"] == pytest.approx(want["measured_e2e_tok_s"],
                                                           rel=0.10)
    cal = out["calibrate"]
    assert cal["command"].startswith(f"claimcheck measure --cards-file {twin} --card "
                                     f"h200-twin --engine {HELD} --protocol ")
    assert cal["gpu_minutes"] > 0 and cal["protocols"]
    text = "\n".join(newcard.lines(out))
    assert text.count("(assumed;") == len(values)
    assert f"calibrate first: {cal['command']}" in text


def test_the_kv_read_rate_moves_as_a_share_of_the_datasheet_not_in_gb_s():
    """FP8 KV read at 1,667 GB/s on the H200 (4,800 GB/s datasheet) is a share of 0.3473;
    on an RTX 4090 (1,008 GB/s) that share gives 350.1 GB/s, never the H200's 1,667 (more
    than the 4090's whole bandwidth). The weights' eta moves the same way."""
    from claimcheck.model.model import Calibration

    cal = Calibration(bandwidth_bytes_s=2.558e12, flops_s=7.7e14, request_overhead_s=0.08,
                      bandwidth_source="b", compute_source="c",
                      kv_bandwidth_bytes_s=1.667e12, kv_source="k")
    new_cal, assumed = newcard.borrowed_calibration(cal, get_card("h200"), get_card("rtx4090"),
                                                    "fp8")
    assert assumed["kv_read_eta"]["assumed"] is True
    assert assumed["kv_read_eta"]["value"] == pytest.approx(1.667 / 4.8)
    assert new_cal.kv_bandwidth_bytes_s == pytest.approx(1.667e12 / 4800 * 1008)
    assert new_cal.kv_bandwidth_bytes_s / 1e9 == pytest.approx(350.07, abs=0.01)
    assert new_cal.bandwidth_bytes_s == pytest.approx(2.558e12 / 4800 * 1008)
    assert "KV-read share 0.347 assumed from h200" in new_cal.kv_source
    # no KV-read term measured: none borrowed
    plain, assumed = newcard.borrowed_calibration(
        dataclasses.replace(cal, kv_bandwidth_bytes_s=None, kv_source=""), get_card("h200"),
        get_card("rtx4090"), "fp8")
    assert plain.kv_bandwidth_bytes_s is None and "kv_read_eta" not in assumed


def test_gemm_row_buckets_move_only_to_a_card_of_their_architecture():
    """The FP8 GEMM's row buckets are its Hopper dispatch: borrowed by the H100 (Hopper), not
    by an RTX 4090 (Ada), whose CUTLASS build dispatches by other bounds."""
    from claimcheck.model.model import Calibration

    cal = Calibration(bandwidth_bytes_s=2.558e12, flops_s=7.7e14, request_overhead_s=0.08,
                      bandwidth_source="b", compute_source="c",
                      row_factors=((8, 1.0), (24, 1.18)), row_buckets=(16, 64, 128))
    hopper, _ = newcard.borrowed_calibration(cal, get_card("h200"), get_card("h100"), "fp8")
    ada, _ = newcard.borrowed_calibration(cal, get_card("h200"), get_card("rtx4090"), "fp8")
    assert hopper.row_buckets == (16, 64, 128) and ada.row_buckets == ()
    assert ada.row_factors == cal.row_factors  # the factors are borrowed either way
