"""The house's layers: no import cycle among claimcheck's modules; core (the arithmetic)
imports none of loaders, runio, measure, report and cli and opens no file; loaders (the
config and registry files) and runio (the run files) sit on core, runio on loaders too;
report reads runs through runio and core and never imports measure; one run type; each name
has one import path (no re-export module)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import claimcheck

PKG = Path(claimcheck.__file__).parent
"""The package under test (the one imported: PYTHONPATH picks the checkout)."""

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
    f.write_text("import claimcheck.measure.bench\nfrom claimcheck.measure import server\n")
    assert _from(imports(f), "claimcheck.measure") == {
        "claimcheck.measure.bench", "claimcheck.measure", "claimcheck.measure.server"}


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


def module_name(path: Path, pkg: Path = PKG) -> str:
    """``claimcheck.a.b`` for ``pkg/a/b.py`` (a package's ``__init__.py``: ``claimcheck.a``)."""
    parts = [pkg.name, *path.relative_to(pkg).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph(pkg: Path = PKG) -> dict[str, set[str]]:
    """Module -> the claimcheck modules it imports, at module level or inside a function
    (``from a import b`` counts ``a.b`` when that is a module, else ``a``; relative
    imports resolved)."""
    files = {module_name(f, pkg): f for f in sorted(pkg.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, f in files.items():
        here = name if f.name == "__init__.py" else name.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                for a in node.names:
                    out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base)
        graph[name] = {m for m in out if m in files and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or None (depth-first, modules in sorted
    order so the cycle reported is always the same)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return [*path[path.index(n):], n]
            if n not in state and (c := visit(n)):
                return c
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_find_cycle_finds_a_function_level_circle(tmp_path):
    pkg = tmp_path / "claimcheck"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from claimcheck.core.b import x\n")
    (pkg / "core" / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "core" / "c.py").write_text("import claimcheck.core.a\n")
    (pkg / "core" / "d.py").write_text("from claimcheck.core import a, c\n")
    g = module_graph(pkg)
    assert g["claimcheck.core.b"] == {"claimcheck.core.c"}
    assert g["claimcheck.core.d"] == {"claimcheck.core.a", "claimcheck.core.c"}
    assert find_cycle(g) == ["claimcheck.core.a", "claimcheck.core.b", "claimcheck.core.c",
                             "claimcheck.core.a"]
    (pkg / "core" / "c.py").write_text("import json\n")
    assert find_cycle(module_graph(pkg)) is None


def test_no_import_cycle():
    assert find_cycle(module_graph()) is None


CORE_MAY_NOT_IMPORT = ("claimcheck.loaders", "claimcheck.runio", "claimcheck.measure",
                       "claimcheck.report", "claimcheck.cli")


def test_core_imports_no_outer_layer():
    bad = {}
    for m, deps in module_graph().items():
        if m.startswith("claimcheck.core."):
            out = sorted(d for d in deps for layer in CORE_MAY_NOT_IMPORT
                         if d == layer or d.startswith(layer + "."))
            if out:
                bad[m] = out
    assert bad == {}


def test_runio_imports_only_core_and_loaders():
    """runio (the run files) sits on core and the loaders: it imports neither the measuring
    nor the reporting side nor the CLI."""
    bad = {m: sorted(d for d in deps if not d.startswith(("claimcheck.core.",
                                                          "claimcheck.loaders",
                                                          "claimcheck.runio")))
           for m, deps in module_graph().items() if m.startswith("claimcheck.runio")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_loaders_import_only_core():
    """The loaders (the config and registry files) sit on core alone."""
    bad = {m: sorted(d for d in deps if not d.startswith(("claimcheck.core.",
                                                          "claimcheck.loaders")))
           for m, deps in module_graph().items() if m.startswith("claimcheck.loaders")}
    assert {k: v for k, v in bad.items() if v} == {}


FILE_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes", "unlink", "rename",
                "mkdir", "open", "to_csv", "read_csv"}
"""Methods that touch the file system (``Path``'s, ``os.open``, ``gzip.open``, pandas')."""
IO_READERS = {"read_bytes", "read_text", "read_json", "read_csv", "read_csv_lines",
              "read_schema"}
""":mod:`claimcheck.loaders.files`' readers of a path: a module calling one reads a file."""
READER_MODULES = ("claimcheck.loaders.files", "claimcheck.core.io")
"""Where the readers live (and lived, before issue 27 moved them out of core)."""


def file_io(path: Path) -> list[str]:
    """What ``path`` does to files: calls of ``open``, of the :data:`FILE_METHODS`, of
    ``os.replace``/``os.rename``/``os.remove``, any use of ``shutil``, and calls of
    :data:`IO_READERS` imported from :mod:`claimcheck.core.io`; ``line: what`` each."""
    tree = ast.parse(path.read_text(), str(path))
    readers = {a.asname or a.name for n in ast.walk(tree)
               if isinstance(n, ast.ImportFrom) and n.module in READER_MODULES
               for a in n.names if a.name in IO_READERS}
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and (
                n.func.id == "open" or n.func.id in readers):
            found.append(f"{n.lineno}: {n.func.id}()")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (
                n.func.attr in FILE_METHODS
                or isinstance(n.func.value, ast.Name) and n.func.value.id == "os"
                and n.func.attr in ("replace", "rename", "remove")):
            found.append(f"{n.lineno}: .{n.func.attr}()")
        elif isinstance(n, ast.Import) and any(a.name == "shutil" for a in n.names) or (
                isinstance(n, ast.ImportFrom) and n.module == "shutil"):
            found.append(f"{n.lineno}: shutil")
    return sorted(found, key=lambda x: int(x.split(":")[0]))


def test_file_io_sees_each_form(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os\nimport shutil\nfrom claimcheck.core.io import read_json as rj\n"
                 "def f(p):\n    open(p)\n    p.write_text('x')\n    os.replace(p, p)\n"
                 "    rj(p)\n    d.read_text\n    read_text(p)\n    p.parent.mkdir()\n")
    assert file_io(f) == ["2: shutil", "5: open()", "6: .write_text()", "7: .replace()",
                          "8: rj()", "11: .mkdir()"]


def test_core_does_no_file_io():
    """core opens no file: the readers and every config and registry loader are
    :mod:`claimcheck.loaders`' (issue 27 item 2)."""
    found = {f.name: file_io(f) for f in sorted((PKG / "core").glob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}


RUN_TYPE = "claimcheck.runio.run.Run"
"""The one run type: typed provenance, the step table and the timelines beside it."""


def run_classes(pkg: Path = PKG) -> list[str]:
    """Every class of the package that holds a run: one named ``...Run`` or ``...RunData``,
    or one with a ``provenance`` field; as ``module.Class``."""
    out = []
    for f in sorted(pkg.rglob("*.py")):
        for n in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(n, ast.ClassDef):
                fields = {s.target.id for s in n.body
                          if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
                if re.search(r"Run(Data)?$", n.name) or "provenance" in fields:
                    out.append(f"{module_name(f, pkg)}.{n.name}")
    return out


def test_run_classes_sees_each_kind(tmp_path):
    pkg = tmp_path / "claimcheck"
    (pkg / "report").mkdir(parents=True)
    (pkg / "report" / "a.py").write_text(
        "class LoadedRun:\n    pass\n\nclass StepData:\n    record: dict\n\n"
        "class Record:\n    provenance: dict\n\nclass RunStep:\n    pass\n")
    assert run_classes(pkg) == ["claimcheck.report.a.LoadedRun", "claimcheck.report.a.Record"]


def test_one_run_type():
    """A run is one type (issue 27 item 1): no second run class anywhere in the package
    (report.record.Run, report.steps.RunData and runio.runload.LoadedRun were three)."""
    assert run_classes() == [RUN_TYPE]


def reexports(path: Path) -> bool:
    """True for a module whose body is only a docstring, imports and ``__all__``."""
    body = ast.parse(path.read_text(), str(path)).body
    body = body[1:] if body and isinstance(body[0], ast.Expr) and isinstance(
        body[0].value, ast.Constant) else body
    return bool(body) and all(
        isinstance(n, ast.Import | ast.ImportFrom) or isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets) for n in body)


def test_no_reexport_module():
    shims = [module_name(f) for f in sorted(PKG.rglob("*.py"))
             if f.name != "__init__.py" and reexports(f)]
    assert shims == []


def test_no_reexported_name():
    """A name imported from another claimcheck module and not used is a re-export (ruff's
    F401, silenced with ``noqa``): each name has one import path."""
    bad = []
    for f in sorted(PKG.rglob("*.py")):
        text = f.read_text()
        for n in ast.walk(ast.parse(text, str(f))):
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("claimcheck") and (
                    "noqa: F401" in "\n".join(text.splitlines()[n.lineno - 1:n.end_lineno])):
                bad.append(f"{module_name(f)}:{n.lineno}")
    assert bad == []
