"""The README and docs/ hold what they say (issue 40 item 6): every ```bash block runs in a
checkout under tmp_path and prints the lines of the ```text block after it (``...`` stands
for what was left out); a block marked ``<!-- not-run: why -->`` is not run, but its make
targets, install and render commands and claimcheck options must be the project's; the
README stays short and links every docs page; the layout page names every module."""

from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import subprocess
from dataclasses import dataclass

import pytest

from claimcheck.claims.seedfiles import seeds_dir
from claimcheck.cli import parser as cli_parser
from claimcheck.files.paths import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = re.compile(r"<!--\s*(not-run|exit):\s*(.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    where: str  # file:line of the ```bash fence
    code: str
    expected: list[str] | None  # the ```text block after it, if any
    not_run: str | None  # why it is not run
    exit_code: int


def blocks_of(text: str, name: str) -> list[Block]:
    """The ```bash blocks of a Markdown text, each with its mark (the closest non-blank line
    before its fence) and the ```text block right after its closing fence."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() != "```bash":
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise ValueError(f"{name}:{start + 1}: ```bash block never closed")
        code = "\n".join(lines[start + 1:j])
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        m = MARK.fullmatch(lines[k].strip()) if k >= 0 else None
        expected = None
        if j + 1 < len(lines) and lines[j + 1].strip() == "```text":
            e = j + 2
            while e < len(lines) and lines[e].strip() != "```":
                e += 1
            expected = lines[j + 2:e]
            j = e
        out.append(Block(f"{name}:{start + 1}", code, expected,
                         m.group(2) if m and m.group(1) == "not-run" else None,
                         int(m.group(2)) if m and m.group(1) == "exit" else 0))
        i = j + 1
    return out


def unmatched(expected: list[str], printed: str) -> str | None:
    """The first expected line not printed after the previous one matched, in order; a
    ``...`` inside a line matches any text, a line that is only ``...`` is skipped."""
    got = [line.rstrip() for line in printed.splitlines()]
    at = 0
    for want in expected:
        if want.strip() == "...":
            continue
        pat = re.compile(".*".join(re.escape(p) for p in want.rstrip().split("...")))
        while at < len(got) and not pat.fullmatch(got[at]):
            at += 1
        if at == len(got):
            return want
        at += 1
    return None


def all_blocks() -> list[Block]:
    return [b for f in DOCS for b in blocks_of(f.read_text(), str(f.relative_to(ROOT)))]


def commands(code: str) -> list[list[str]]:
    """Each command of a block as words: comments dropped, continuations joined, `&&` split;
    heredoc bodies (between `<<'END'` and END) left out."""
    out, joined, end = [], "", None
    for line in code.splitlines():
        if end is not None:
            end = None if line.strip() == end else end
            continue
        line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        joined += line.rstrip().removesuffix("\\") + " "
        if line.rstrip().endswith("\\"):
            continue
        h = re.search(r"<<'?(\w+)'?", joined)
        end = h.group(1) if h else None
        for part in joined.split("&&"):
            if part.strip():
                out.append(shlex.split(part))
        joined = ""
    return out


# -- the parsing above, on hand-made text ------------------------------------------------

def test_blocks_marks_and_expected_output_are_read():
    md = ("intro\n<!-- not-run: needs a GPU -->\n\n```bash\nclaimcheck serve\n```\n"
          "<!-- exit: 2 -->\n```bash\nfalse\n```\n```text\nclaimcheck: error: x\n```\n")
    a, b = blocks_of(md, "x.md")
    assert (a.where, a.code, a.not_run, a.expected, a.exit_code) == (
        "x.md:4", "claimcheck serve", "needs a GPU", None, 0)
    assert (b.where, b.not_run, b.exit_code, b.expected) == (
        "x.md:8", None, 2, ["claimcheck: error: x"])


def test_expected_lines_match_in_order_with_ellipses():
    printed = "a 1\nb 2\nc 3\n"
    assert unmatched(["a 1", "...", "c 3"], printed) is None
    assert unmatched(["a ...", "c 3"], printed) is None
    assert unmatched(["c 3", "a 1"], printed) == "a 1"  # out of order
    assert unmatched(["b"], printed) == "b"  # a whole line, not a part of one


def test_commands_split_continuations_chains_and_heredocs():
    code = ("# a comment\nmake unit\npython3 -m pip install -e \".[dev]\" && snakemake "
            "--cores 1 all   # render\nclaimcheck roofline --card x \\\n  --streams 8\n"
            "cat > f.yaml <<'YAML'\nmake nothing\nYAML\n")
    assert commands(code) == [["make", "unit"], ["python3", "-m", "pip", "install", "-e",
                              ".[dev]"], ["snakemake", "--cores", "1", "all"],
                              ["claimcheck", "roofline", "--card", "x", "--streams", "8"],
                              ["cat", ">", "f.yaml", "<<YAML"]]


# -- the documents ------------------------------------------------------------------------

def test_readme_is_short_and_links_every_docs_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 12 * 1024, len(text.encode())
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", text))
    pages = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")}
    assert linked == pages


@pytest.mark.data  # reads every committed run's provenance: make data
def test_readme_counts_the_runs_as_their_provenance_does():
    """The README's count of the committed runs, by card (GPU name), cards told apart by
    NVML uuid, power limit, weights and status, is what the runs' provenance.json files
    record: a run added without the README following fails here."""
    import json
    from collections import Counter

    provs = [json.loads(p.read_text())
             for p in sorted((ROOT / "data/raw/runs").glob("*/provenance.json"))]
    gpus = [p["gpu"]["gpus"][0] for p in provs]
    names = Counter(g["name"] for g in gpus)
    uuids = {n: len({g["uuid"] for g in gpus if g["name"] == n}) for n in names}
    status = Counter(p["status"] for p in provs)
    assert {g["power_limit_enforced_w"] for g in gpus} == {700.0}
    assert {p["weights"] for p in provs} == {"dummy"}
    assert set(status) == {"complete", "interrupted", "failed"}
    (h200, h200_cards), (h100, h100_cards) = (
        (names[n], uuids[n]) for n in ("NVIDIA H200", "NVIDIA H100 80GB HBM3"))
    assert len(names) == 2
    said = " ".join((ROOT / "README.md").read_text().split())
    assert (f"`data/raw/runs/` holds {len(provs):,} runs, each on one GPU at its 700 W limit "
            f"with **dummy weights**: {h200:,} on an NVIDIA H200 ({h200_cards:,} cards, told "
            f"apart by NVML uuid) and {h100:,} on an NVIDIA H100 80GB HBM3 ({h100_cards:,} "
            f"cards); {status['complete']:,} complete, {status['interrupted']:,} interrupted "
            f"(their complete steps kept) and {status['failed']:,} failed.") in said


def test_every_relative_link_resolves():
    bad = []
    for f in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[\w-]+)?\)", f.read_text()):
            if "://" not in target and not (f.parent / target).exists():
                bad.append(f"{f.relative_to(ROOT)}: {target}")
    assert bad == []


def _make_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))


def _options(sub: str) -> set[str]:
    p = cli_parser()
    subs = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return {o for a in subs.choices[sub]._actions for o in a.option_strings}


def test_not_run_blocks_use_the_projects_commands():
    """What is not run is checked against what runs it: make targets in the Makefile, the
    install command of .ci/run, the render command of the Makefile's workflow target, and
    every claimcheck option against that command's parser."""
    ci = (ROOT / ".ci/run").read_text()
    make = (ROOT / "Makefile").read_text()
    targets, seen, bad = _make_targets(), 0, []
    for b in all_blocks():
        if b.not_run is None:
            continue
        for words in commands(b.code):
            seen += 1
            line = " ".join(words)
            if words[0] == "make":
                if not set(words[1:]) <= targets or len(words) == 1:
                    bad.append(f"{b.where}: {line}: not a Makefile target")
            elif words[:4] == ["python3", "-m", "pip", "install"]:
                extras = words[-1]
                if extras == ".[dev]" and 'pip install -q -e ".[dev]"' not in ci:
                    bad.append(f"{b.where}: {line}: not .ci/run's install")
            elif words[:2] == ["snakemake", "--cores"] and words[-1] == "all":
                if f"\t{line}\n" not in make:
                    bad.append(f"{b.where}: {line}: not the Makefile's render")
            elif words[0] == "claimcheck":
                opts = {w.split("=")[0] for w in words[2:] if w.startswith("--")}
                if not opts <= _options(words[1]):
                    bad.append(f"{b.where}: claimcheck {words[1]}: no option "
                               f"{sorted(opts - _options(words[1]))}")
    assert seen >= 10 and bad == []


def _modules() -> set[str]:
    pkg = ROOT / "src" / "claimcheck"
    return {f"{p.parent.name}/{p.stem}" for p in pkg.glob("*/*.py") if p.stem != "__init__"}


def test_layout_page_names_every_module_and_no_other():
    """docs/layout.md's module rows against the modules under src/claimcheck/: a module
    added, moved or removed without its row fails here, naming it."""
    named = set(re.findall(r"^\| `(\w+/\w+)` \|", (ROOT / "docs/layout.md").read_text(), re.M))
    assert sorted(_modules() - named) == [], "modules with no row in docs/layout.md"
    assert sorted(named - _modules()) == [], "rows of docs/layout.md naming no module"
    packages = {p.name for p in (ROOT / "src/claimcheck").iterdir() if (p / "__init__.py").exists()}
    headed = set(re.findall(r"^### `(\w+)/`", (ROOT / "docs/layout.md").read_text(), re.M))
    assert headed == packages


def test_layout_rows_are_each_modules_docstring():
    """Each row says what its module's docstring says first (so a module's description is
    kept in one place, the module)."""
    text = (ROOT / "docs/layout.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+/\w+)` \| (.*) \|$", text, re.M))
    bad = []
    for name, row in rows.items():
        f = ROOT / "src/claimcheck" / f"{name}.py"
        if not f.exists():
            continue
        doc = " ".join((ast.get_docstring(ast.parse(f.read_text())) or "").split())
        words = re.sub(r"[`:~\\]|mod|func|class|claimcheck\.", "", row).split()[:4]
        if " ".join(words) not in re.sub(r"[`:~\\]|mod|func|class|claimcheck\.", "", doc):
            bad.append(name)
    assert bad == []


# -- the commands, run -------------------------------------------------------------------

@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """The code, config and committed data linked; data/derived and the cwd its own."""
    root = tmp_path_factory.mktemp("docs") / "checkout"
    (root / "data" / "derived").mkdir(parents=True)
    for name in ("src", "config", "notebooks", "workflow", "envs", "tests", "pyproject.toml",
                 "Makefile", "README.md", "docs"):
        (root / name).symlink_to(ROOT / name)
    (root / "data" / "raw").symlink_to(ROOT / "data" / "raw")
    return root


RUN = [b for b in all_blocks() if b.not_run is None]


@pytest.mark.pipeline  # runs the documented commands in subprocesses: make pipeline
@pytest.mark.parametrize("block", RUN, ids=[b.where for b in RUN])
def test_documented_command_runs_and_prints_what_is_shown(block, checkout):
    if "claims --check" in block.code and seeds_dir() is None:
        pytest.skip("the seed articles are absent: the shown output names their folder")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("CLAIMCHECK_ROOT", None)
    if seeds_dir() is not None:
        env["CLAIMCHECK_SEEDS"] = str(seeds_dir())
    r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=checkout,
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    assert r.returncode == block.exit_code, f"{block.where}: exit {r.returncode}\n" \
        + r.stdout[-3000:]
    if block.expected is not None:
        missing = unmatched(block.expected, r.stdout)
        assert missing is None, f"{block.where}: not printed: {missing!r}\n{r.stdout[-3000:]}"
