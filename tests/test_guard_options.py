"""`measure` options validated at the edge (issue 26), before any server or run exists."""

import pytest

from claimcheck.cli import main


def measure(tmp_path, *extra):
    return ["measure", "--card", "cpu", "--engine", "bf16-dummy", "--protocol", "ladder",
            "--state", str(tmp_path / "state"), *extra]


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_step_timeout_must_be_finite_and_positive(tmp_path, capsys, value):
    assert main(measure(tmp_path, "--runs-dir", str(tmp_path / "runs"),
                        "--step-timeout", value)) == 2
    shown = {"0": "0", "-5": "-5", "nan": "nan", "inf": "inf"}[value]
    assert capsys.readouterr().err == (
        "claimcheck: error: --step-timeout: seconds per step must be a finite number > 0, "
        f"got {shown}\n")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "state").exists()


def test_runs_dir_naming_a_file_is_refused_in_one_line(tmp_path, capsys):
    f = tmp_path / "runs.txt"
    f.write_text("not a folder")
    assert main(measure(tmp_path, "--runs-dir", str(f))) == 2
    assert capsys.readouterr().err == (
        f"claimcheck: error: --runs-dir: {f} is a file, not a folder for run directories\n")
    assert f.read_text() == "not a folder" and not (tmp_path / "state").exists()
