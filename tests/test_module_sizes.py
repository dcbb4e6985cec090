"""Each module one job (issue 27): no module under src/claimcheck/ (in any of its
packages) is longer than MAX_LINES."""

from __future__ import annotations

from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "claimcheck"
PACKAGES = ("files", "physics", "claims", "config", "readings", "model", "verdicts", "runs",
            "calibration", "predict", "findings", "figures", "update", "measure", "pipeline",
            "envs", "cli")
MAX_LINES = 450


def line_count(path: Path) -> int:
    """Lines in a file as ``wc -l`` counts them (newline characters; a last line without
    one counts too)."""
    text = path.read_text()
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def too_long(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """Every .py under ``root`` (recursively) over ``limit`` lines, path -> lines."""
    return {str(p.relative_to(root)): n for p in sorted(root.rglob("*.py"))
            if (n := line_count(p)) > limit}


def test_line_count_counts_as_wc_does(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "b.py").write_text("x = 1\ny = 2")  # no final newline: still 2 lines
    (tmp_path / "c.py").write_text("")
    assert [line_count(tmp_path / n) for n in ("a.py", "b.py", "c.py")] == [2, 2, 0]


def test_too_long_finds_a_long_module_in_a_subpackage(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "long.py").write_text("pass\n" * 451)
    (tmp_path / "short.py").write_text("pass\n" * 450)
    assert too_long(tmp_path) == {"sub/long.py": 451}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_over_the_limit(package):
    root = SRC / package
    assert any(root.rglob("*.py")), f"no modules under {root}"
    assert too_long(root) == {}, (f"modules over {MAX_LINES} lines in {root} (split each by "
                                  f"its jobs): {too_long(root)}")
