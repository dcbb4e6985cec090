"""`--card auto`: NVML's device name (as the committed runs recorded it in provenance.json)
maps to one cards.csv row; unknown names and mixed cards are refused with the name seen;
SLURM's job variables are recorded in provenance."""

import json

import pytest

from claimcheck.cli import measure_card
from claimcheck.files.errors import InputError
from claimcheck.files.paths import RUNS
from claimcheck.measure.provenance import relevant_env
from claimcheck.physics.cardfiles import load_cards
from claimcheck.physics.cards import card_for_nvml_name, detect_card

CARDS = load_cards()


def recorded_names():
    out = []
    for p in sorted(RUNS.glob("*/provenance.json")):
        d = json.loads(p.read_text())
        out += [(d["card"], g["name"]) for g in d["gpu"]["gpus"]]
    return out


def test_every_committed_run_maps_to_its_recorded_card():
    pairs = recorded_names()
    # NVML's names as the runs recorded them: the H200's, and the H100's of 2026-12-05
    assert len(pairs) >= 10
    assert {n for _, n in pairs} == {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}
    expected = {"NVIDIA H200": "h200", "NVIDIA H100 80GB HBM3": "h100"}
    for card, name in pairs:
        assert card_for_nvml_name(name, CARDS) == card == expected[name]


def test_unknown_name_refused_with_the_name_seen():
    with pytest.raises(InputError, match="'NVIDIA H200 NVL' is not in the registry"):
        card_for_nvml_name("NVIDIA H200 NVL", CARDS)
    with pytest.raises(InputError, match="'Tesla T4'"):
        detect_card(["Tesla T4"], CARDS)


def test_mixed_or_no_gpus_refused():
    with pytest.raises(InputError, match="different cards"):
        detect_card(["NVIDIA H200", "NVIDIA GeForce RTX 3090"], CARDS)
    with pytest.raises(InputError, match="no GPU seen"):
        detect_card([], CARDS)
    assert detect_card(["NVIDIA H200", "NVIDIA H200"], CARDS) == "h200"


def facts(*names):
    return {"available": True, "gpus": [{"index": i, "name": n} for i, n in enumerate(names)]}


def test_measure_card_auto_check_and_tensor_parallel():
    assert measure_card("auto", facts("NVIDIA H200")) == "h200"
    assert measure_card("h200", facts("NVIDIA H200")) == "h200"
    assert measure_card("cpu", {}) == "cpu"
    with pytest.raises(InputError, match="'rtx3090' asked for, but NVML sees NVIDIA H200"):
        measure_card("rtx3090", facts("NVIDIA H200"))
    with pytest.raises(InputError, match="auto needs NVML: no driver"):
        measure_card("auto", {"available": False, "reason": "no driver"})
    with pytest.raises(InputError, match="tensor_parallel_size is 2 but 1 GPU"):
        measure_card("auto", facts("NVIDIA H200"), tp=2)
    assert measure_card("auto", facts("NVIDIA H200", "NVIDIA H200"), tp=2) == "h200"
    with pytest.raises(InputError, match="unknown card 'h999'"):
        measure_card("h999", facts("NVIDIA H200"))


def test_slurm_job_recorded_in_provenance_env():
    env = relevant_env({"SLURM_JOB_ID": "42", "SLURM_JOB_PARTITION": "debug", "HOME": "/x"})
    assert env == {"SLURM_JOB_ID": "42", "SLURM_JOB_PARTITION": "debug"}
