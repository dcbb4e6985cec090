"""The house's layers (issue 40): claimcheck's packages are named for what they hold, and
each imports only the packages its rule in :data:`RULES` names (all of them below it: no
import circle between packages, nor between modules); no folder holds more than
:data:`MAX_MODULES` modules; in the packages of :data:`IO_RULES` only the modules named
there open a file (the ``*files`` modules, the I/O edge of what the package reads); each
package's ``__init__.py`` is one line saying its one job; one run type; each name has one
import path (no re-export module)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import claimcheck

PKG = Path(claimcheck.__file__).parent
"""The package under test (the one imported: PYTHONPATH picks the checkout)."""

RULES: dict[str, set[str]] = {
    "files": set(),
    "physics": {"files"},
    "claims": {"files", "physics"},
    "config": {"files"},
    "readings": {"files", "config"},
    "model": {"physics", "readings"},
    "verdicts": {"files", "physics", "claims", "config", "readings"},
    "runs": {"files", "physics", "config", "readings", "model"},
    "calibration": {"files", "physics", "config", "readings", "model", "runs"},
    "predict": {"files", "physics", "claims", "config", "readings", "model", "verdicts", "runs",
                "calibration"},
    "findings": {"files", "physics", "readings", "verdicts", "calibration", "predict"},
    "figures": {"files", "physics", "readings", "verdicts", "runs", "calibration", "findings"},
    "update": {"files", "physics", "claims", "config", "readings", "verdicts", "runs", "predict",
               "findings", "figures"},
    "measure": {"files", "physics", "config", "readings", "runs"},
    "pipeline": {"files", "physics", "claims", "config", "readings", "model", "verdicts", "runs",
                 "calibration", "predict", "findings", "figures", "update"},
    "envs": {"files"},
    "cli": {"files", "physics", "claims", "config", "readings", "model", "verdicts", "runs",
            "calibration", "predict", "findings", "figures", "update", "measure", "pipeline"},
}
"""Package -> the claimcheck packages its modules may import (besides itself), bottom up."""

IO_RULES: dict[str, set[str]] = {
    "files": {"readers", "framefiles", "gitfiles"},
    "physics": {"cardfiles", "modelfiles"},
    "claims": {"registryfiles", "seedfiles"},
    "config": {"configfiles", "yamlfiles"},
    "readings": set(),
    "model": set(),
    "verdicts": set(),
    "runs": {"records", "runfiles", "runload"},
    "calibration": set(),
    "findings": set(),
}
"""Package -> its only modules that open a file (a package not named here is not held)."""

KEEP_INIT = {"cli"}
"""Packages whose ``__init__.py`` holds code (cli: the parser and ``main``)."""

MAX_MODULES = 15


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
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from claimcheck.low.b import x\n")
    (pkg / "low" / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "low" / "c.py").write_text("import claimcheck.low.a\n")
    (pkg / "low" / "d.py").write_text("from claimcheck.low import a, c\n")
    g = module_graph(pkg)
    assert g["claimcheck.low.b"] == {"claimcheck.low.c"}
    assert g["claimcheck.low.d"] == {"claimcheck.low.a", "claimcheck.low.c"}
    assert find_cycle(g) == ["claimcheck.low.a", "claimcheck.low.b", "claimcheck.low.c",
                             "claimcheck.low.a"]
    (pkg / "low" / "c.py").write_text("import json\n")
    assert find_cycle(module_graph(pkg)) is None


def test_no_import_cycle():
    assert find_cycle(module_graph()) is None


def package_of(module: str) -> str | None:
    """``a`` for ``claimcheck.a`` and ``claimcheck.a.b``; None for ``claimcheck`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def package_graph(graph: dict[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    """Package -> each other package it imports -> the module imports that do it."""
    out: dict[str, dict[str, list[str]]] = {}
    for m, deps in graph.items():
        p = package_of(m)
        if p is None:
            continue
        out.setdefault(p, {})
        for d in sorted(deps):
            q = package_of(d)
            if q is not None and q != p:
                out[p].setdefault(q, []).append(f"{m} -> {d}")
    return out


def packages(pkg: Path = PKG) -> set[str]:
    return {p.name for p in pkg.iterdir() if (p / "__init__.py").exists()}


def test_every_package_has_a_rule():
    assert packages() == set(RULES)


def test_each_package_imports_only_what_its_rule_allows():
    bad = {p: {q: why for q, why in deps.items() if q not in RULES.get(p, set())}
           for p, deps in package_graph(module_graph()).items()}
    assert {p: v for p, v in bad.items() if v} == {}


def test_package_graph_sees_a_forbidden_import(tmp_path):
    pkg = tmp_path / "claimcheck"
    for p in ("low", "high"):
        (pkg / p).mkdir(parents=True)
        (pkg / p / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("def f():\n    from claimcheck.high import b\n")
    (pkg / "high" / "b.py").write_text("from claimcheck.low.a import f\n")
    assert package_graph(module_graph(pkg)) == {
        "low": {"high": ["claimcheck.low.a -> claimcheck.high.b"]},
        "high": {"low": ["claimcheck.high.b -> claimcheck.low.a"]}}


def test_no_cycle_between_packages():
    """The rules are layers (each package's rule names only packages below it), and the
    imports keep them."""
    assert find_cycle(RULES) is None
    assert find_cycle({p: set(d) for p, d in package_graph(module_graph()).items()}) is None


def test_no_folder_holds_more_than_max_modules():
    big = {}
    for d in sorted({f.parent for f in PKG.rglob("*.py")}):
        n = len([f for f in d.glob("*.py") if f.name != "__init__.py"])
        if n > MAX_MODULES:
            big[str(d.relative_to(PKG.parent))] = n
    assert big == {}


def test_each_package_init_is_one_line_saying_its_job():
    bad = []
    for p in sorted(packages() - KEEP_INIT):
        tree = ast.parse((PKG / p / "__init__.py").read_text())
        doc = ast.get_docstring(tree)
        if not doc or "\n" in doc.strip() or len(tree.body) != 1:
            bad.append(p)
    assert bad == []


FILE_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes", "unlink", "rename",
                "mkdir", "open", "to_csv", "read_csv"}
"""Methods that touch the file system (``Path``'s, ``os.open``, ``gzip.open``, pandas')."""
IO_READERS = {"read_bytes", "read_text", "read_json", "read_csv", "read_csv_lines",
              "read_schema"}
""":mod:`claimcheck.files.readers`' readers of a path: a module calling one reads a file."""
READER_MODULES = ("claimcheck.files.readers",)
"""Where the readers live."""


def file_io(path: Path) -> list[str]:
    """What ``path`` does to files: calls of ``open``, of the :data:`FILE_METHODS`, of
    ``os.replace``/``os.rename``/``os.remove``, any use of ``shutil``, and calls of
    :data:`IO_READERS` imported from :data:`READER_MODULES`; ``line: what`` each."""
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
    f.write_text("import os\nimport shutil\nfrom claimcheck.files.readers import read_json as rj\n"
                 "def f(p):\n    open(p)\n    p.write_text('x')\n    os.replace(p, p)\n"
                 "    rj(p)\n    d.read_text\n    read_text(p)\n    p.parent.mkdir()\n")
    assert file_io(f) == ["2: shutil", "5: open()", "6: .write_text()", "7: .replace()",
                          "8: rj()", "11: .mkdir()"]


def test_only_the_named_modules_open_a_file():
    """The arithmetic opens no file (issue 27 item 2): in each package of :data:`IO_RULES`
    the files are read by the modules named there, and no other."""
    found = {}
    for p, allowed in IO_RULES.items():
        for f in sorted((PKG / p).glob("*.py")):
            if f.stem not in allowed and (io := file_io(f)):
                found[f"{p}/{f.name}"] = io
    assert found == {}


RUN_TYPE = "claimcheck.runs.run.Run"
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
    (pkg / "high").mkdir(parents=True)
    (pkg / "high" / "a.py").write_text(
        "class LoadedRun:\n    pass\n\nclass StepData:\n    record: dict\n\n"
        "class Record:\n    provenance: dict\n\nclass RunStep:\n    pass\n")
    assert run_classes(pkg) == ["claimcheck.high.a.LoadedRun", "claimcheck.high.a.Record"]


def test_one_run_type():
    """A run is one type (issue 27 item 1): no second run class anywhere in the package
    (there were three before: a run record, a steps class and a loaded run)."""
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
