"""The house's layers: core imports neither measure nor report; report reads runs through
core (bench results, server log, telemetry, protocols, engines) and never imports measure."""

from __future__ import annotations

import ast
from pathlib import Path

from claimcheck.core.paths import ROOT

PKG = ROOT / "src" / "claimcheck"

PENDING: dict[str, set[str]] = {}


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (``from a.b import c`` counts a.b and a.b.c)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _from(mods: set[str], layer: str) -> set[str]:
    return {m for m in mods if m == layer or m.startswith(layer + ".")}


def test_imports_sees_both_forms(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import claimcheck.measure.bench\nfrom claimcheck.measure import serverlog\n")
    assert _from(imports(f), "claimcheck.measure") == {
        "claimcheck.measure.bench", "claimcheck.measure", "claimcheck.measure.serverlog"}


def test_report_never_imports_measure():
    bad = {}
    for f in sorted((PKG / "report").glob("*.py")):
        found = _from(imports(f), "claimcheck.measure")
        if found - PENDING.get(f.name, set()):
            bad[f.name] = sorted(found)
    assert bad == {}


def test_core_imports_neither_measure_nor_report():
    bad = {f.name: sorted(_from(imports(f), "claimcheck.measure")
                          | _from(imports(f), "claimcheck.report"))
           for f in sorted((PKG / "core").glob("*.py"))}
    assert {k: v for k, v in bad.items() if v} == {}
