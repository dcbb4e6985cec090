"""Issue 27 item 3: claims/claims.py split by its jobs (the row type and columns; number and
bound words; the registry loader; the seeds and quote checks), each module under 450 lines,
the two arithmetic parts free of file I/O, and no re-export shim: every import of a name
from one of them finds it defined there."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from claimcheck.files.paths import ROOT

CORE = ROOT / "src" / "claimcheck" / "claims"
SPLIT = ("claims", "claimtext", "registry", "seeds")
PURE = ("claims", "claimtext")  # arithmetic and types: no files, no environment
IO_MODULES = {"os", "io", "csv", "pathlib", "claimcheck.files.io", "claimcheck.files.paths"}


def _imported(path: Path) -> list[tuple[str, str, int]]:
    """(module, name, line) for every ``from module import name`` in ``path``; in a
    Snakemake file (not Python as a whole), in its one-line import statements."""
    text = path.read_text()
    if path.suffix != ".py":
        text = "\n".join(ln if ln.startswith(("from ", "import ")) else ""
                         for ln in text.split("\n"))
    tree = ast.parse(text, str(path))
    return [(n.module, a.name, n.lineno) for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module for a in n.names]


def _defined(path: Path) -> set[str]:
    """Names ``path`` binds at module level by definition or assignment (not by import)."""
    out: set[str] = set()
    for n in ast.parse(path.read_text(), str(path)).body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Assign):
            out |= {t.id for t in n.targets if isinstance(t, ast.Name)}
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    return out


@pytest.mark.parametrize("name", SPLIT)
def test_each_module_under_450_lines(name: str) -> None:
    lines = (CORE / f"{name}.py").read_text().count("\n")
    assert lines < 450, f"claims/{name}.py has {lines} lines"


@pytest.mark.parametrize("name", PURE)
def test_type_and_text_modules_read_no_files(name: str) -> None:
    tree = ast.parse((CORE / f"{name}.py").read_text())
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert mods & IO_MODULES == set()


def test_claims_keeps_only_the_type() -> None:
    """The loader, the seed checks and the text helpers live in one place each."""
    claims = importlib.import_module("claimcheck.claims.claims")
    for gone in ("load_claims", "load_excluded", "claims_by_id", "parse_assumed",
                 "check_against_seeds", "seeds_dir", "parse_seed", "find_section",
                 "numbers_in", "number_occurs", "bound_words", "bound_backed", "normalise"):
        assert not hasattr(claims, gone), gone


def test_every_import_of_a_split_name_finds_it_defined_there() -> None:
    defined = {f"claimcheck.claims.{m}": _defined(CORE / f"{m}.py") for m in SPLIT}
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
             *(ROOT / "workflow").rglob("*.py"), *(ROOT / "workflow").rglob("*.smk"),
             ROOT / "workflow" / "Snakefile"]
    bad = [f"{f.relative_to(ROOT)}:{line} {mod}.{name}" for f in files
           for mod, name, line in _imported(f) if mod in defined and name not in defined[mod]]
    assert bad == []


def test_the_check_finds_a_name_imported_from_the_wrong_module(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("from claimcheck.claims.claims import Claim, load_claims\n")
    claims = _defined(CORE / "claims.py")
    assert [n for _, n, _ in _imported(f) if n not in claims] == ["load_claims"]
