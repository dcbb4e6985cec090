"""Issue 27 item 3: report/predict.py split by its jobs, each module under 450 lines, no
shim left behind, and the engine shape read once per run."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from claimcheck.files.paths import RUNS
from claimcheck.runs import engine_shape, runload
from claimcheck.runs.run import load_run

SRC = Path(__file__).resolve().parents[1] / "src" / "claimcheck"
SPLIT = ("calibration/layout", "calibration/calibrate", "calibration/calibration",
         "predict/modeltable", "predict/protocolpredict")


@pytest.mark.parametrize("name", SPLIT)
def test_each_module_under_450_lines(name: str) -> None:
    lines = (SRC / f"{name}.py").read_text().count("\n")
    assert lines < 450, f"{name}.py has {lines} lines"


def test_predict_is_gone() -> None:
    assert not (SRC / "report" / "predict.py").exists()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("claimcheck.report.predict")


def test_no_private_keys_in_a_protocol_prediction(committed_runs) -> None:
    from claimcheck.config.configfiles import load_protocols
    from claimcheck.predict.protocolpredict import predict_protocol
    pred = predict_protocol(list(committed_runs), "h200", "bf16-dummy", load_protocols()["ladder"])
    assert not [k for k in pred.report if k.startswith("_")]
    assert pred.calibration.as_dict() == pred.report["calibration"]
    assert pred.choice.bandwidth.run.name in pred.report["choice"]["bandwidth"]["run"]


def test_engine_shape_read_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """config.json is read once per run, when the run is loaded, and the engine shape built
    once per run however many steps ask: the model table of two committed runs builds two
    shapes (it asked for them hundreds of times before) and reads no config again."""
    from claimcheck.predict.modeltable import table_rows
    runs = [load_run(RUNS / n) for n in ("h200-20261129-bf16-dummy-ladder",
                                         "h200-20261129-bf16-dummy-16k-single-stream")]
    reads, shapes = [], []
    real_read, real_shape = runload.geometry_from_file, engine_shape.shape_for
    monkeypatch.setattr(runload, "geometry_from_file", lambda p: reads.append(p) or real_read(p))
    monkeypatch.setattr(engine_shape, "shape_for",
                        lambda *a, **k: shapes.append(a) or real_shape(*a, **k))
    rows = table_rows(runs, [])
    assert len(rows) == sum(len(r.traces) for r in runs)
    assert (len(reads), len(shapes)) == (0, 2)
    shape, info = runs[0].engine
    info["max_num_seqs"] = -1  # a caller's copy: the run's own reading is not changed
    assert runs[0].engine[1]["max_num_seqs"] == shape.max_num_seqs
