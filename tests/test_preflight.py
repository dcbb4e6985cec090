"""Refuse early what cannot run (issue 30 item 4): `measure` and `snakemake measure` with no
GPU, with no vLLM in the engine's python, or naming a card that is not the GPU, refuse in
one line before any server starts: exit 2, no process, no state, no run directory.

A ``vllm`` first on PATH leaves a mark when anything runs it, so "no server started" is
read from the file system, not from the code. GPU facts are NVML's own (this machine has
no driver; those tests skip where NVML sees a GPU) or a facts file named by
CLAIMCHECK_GPU_FACTS, the telemetry module's test seam, which the card check, the no-GPU
check and provenance all read.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from claimcheck.files.errors import InputError
from claimcheck.files.paths import CONFIG
from claimcheck.measure import preflight as pf
from claimcheck.measure import telemetry
from tests._cli import ROOT, one_line_error
from tests.fabricate import linked_checkout

VLLM_HERE = importlib.util.find_spec("vllm") is not None
NO_GPU = {"available": False, "reason": "NVML found no GPU"}
H200 = {"available": True, "count": 1, "gpus": [{"index": 0, "name": "NVIDIA H200"}]}
NO_GPU_TAIL = ("run it where NVML sees the GPU (nvidia-smi lists it), or --card cpu for a CPU "
               "engine")
RULE = "the engine's python is the #! python of the first `vllm` on PATH, else this one"


# ---- the decisions (pure) -------------------------------------------------------------

def test_gpu_refusal_words_and_cpu_needs_no_gpu():
    assert pf.gpu_refusal("h200", NO_GPU) == (
        f"'h200' needs a GPU NVML can see: NVML found no GPU; {NO_GPU_TAIL}")
    assert pf.gpu_refusal("auto", {"available": False, "reason": "no driver"}) == (
        f"auto needs NVML: no driver; {NO_GPU_TAIL}")
    assert pf.gpu_refusal("cpu", NO_GPU) is None and pf.gpu_refusal("cpu", {}) is None
    assert pf.gpu_refusal("h200", H200) is None


@pytest.mark.parametrize(("vllm", "head", "python"), [
    (["/opt/py/bin/python3", "-m", "vllm.entrypoints.cli.main"], [], ["/opt/py/bin/python3"]),
    (["/v/bin/vllm"], ["#!/v/bin/python3", "# -*- coding: utf-8 -*-"], ["/v/bin/python3"]),
    (["/v/bin/vllm"], ["#!/usr/bin/env python3", ""], ["/usr/bin/env", "python3"]),
    # pip's form when the interpreter's path is too long for a #! line
    (["/v/bin/vllm"], ["#!/bin/sh", "'''exec' \"/a long/bin/python\" \"$0\" \"$@\""],
     ["/a long/bin/python"]),
    (["/t/bin/vllm"], ["#!/bin/sh", 'exec "/usr/bin/python3" "fake_vllm.py" "$@"'], None),
    (["/t/bin/vllm"], ["\x7fELF", ""], None),
    (["/t/bin/vllm"], [], None),
])
def test_the_engines_python_from_the_vllm_command(vllm, head, python):
    assert pf.interpreter(vllm, head) == python


def test_vllm_is_needed_where_this_machine_runs_it():
    assert pf.vllm_needed(True, ["lanes"], False)  # it starts the server
    assert pf.vllm_needed(False, ["lanes", "bench"], False)  # `vllm bench serve` here
    assert pf.vllm_needed(False, ["closed_loop"], True)  # vLLM's benchmark in-process
    assert not pf.vllm_needed(False, ["closed_loop", "lanes"], False)  # claimcheck's client


def test_vllm_refusal_words():
    assert pf.vllm_refusal(["/p"], "x", 0) is None
    assert pf.vllm_refusal(["/p"], "no `vllm` on PATH, so this python", 3) == (
        "vLLM is not importable in /p, the engine's python (no `vllm` on PATH, so this "
        f"python); install vLLM there, or put first on PATH the bin folder of an "
        f"environment that has it ({RULE})")
    assert pf.vllm_refusal(["/gone/python"], "the #! python of /v/bin/vllm", None,
                           "FileNotFoundError: no such file").startswith(
        "the engine's python /gone/python (the #! python of /v/bin/vllm) cannot be run: "
        "FileNotFoundError: no such file; install vLLM there")


# ---- the seam --------------------------------------------------------------------------

def test_gpu_facts_file_is_read_cut_to_the_gpus_and_marked(tmp_path, monkeypatch):
    two = {**H200, "count": 2, "gpus": [*H200["gpus"], {"index": 1, "name": "NVIDIA H200"}]}
    p = tmp_path / "facts.json"
    p.write_text(json.dumps(two))
    monkeypatch.setenv("CLAIMCHECK_GPU_FACTS", str(p))
    f = telemetry.gpu_facts([1])
    assert f["gpus"] == [{"index": 1, "name": "NVIDIA H200"}] and f["count"] == 2
    assert f["source"] == f"{p} (CLAIMCHECK_GPU_FACTS), not NVML"
    p.write_text('{"gpus": []}')
    with pytest.raises(InputError, match=r"facts.json \(CLAIMCHECK_GPU_FACTS\): available: "
                                         "GPU facts must be a JSON object with available"):
        telemetry.gpu_facts()


# ---- through the CLI: nothing starts ---------------------------------------------------

def stand_in(tmp_path: Path, shebang: str = "#!/bin/sh") -> tuple[Path, Path]:
    """A ``vllm`` (bin folder, mark) that leaves the mark when anything runs it."""
    bindir, mark = tmp_path / "bin", tmp_path / "vllm-ran"
    bindir.mkdir()
    body = (f"import pathlib; pathlib.Path({str(mark)!r}).touch()\n" if "python" in shebang
            else f"touch {mark}\nsleep 30\n")
    (bindir / "vllm").write_text(f"{shebang}\n{body}")
    (bindir / "vllm").chmod(0o755)
    return bindir, mark


def measure(tmp_path: Path, path: str, card: str = "h200", facts: dict | None = None,
            *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CLAIMCHECK_ROOT": str(ROOT),
           "PATH": path}
    env.pop("CLAIMCHECK_GPU_FACTS", None)
    if facts is not None:
        (tmp_path / "facts.json").write_text(json.dumps(facts))
        env["CLAIMCHECK_GPU_FACTS"] = str(tmp_path / "facts.json")
    return subprocess.run(
        [sys.executable, "-m", "claimcheck.cli", "measure", "--card", card, "--engine",
         "bf16-dummy", "--protocol", "ladder", "--runs-dir", str(tmp_path / "runs"),
         "--state", str(tmp_path / "state"), "--port", "0", *extra],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)


def nothing_started(tmp_path: Path, mark: Path | None = None) -> None:
    assert mark is None or not mark.exists()  # no vllm process ran
    assert not (tmp_path / "state").exists() and not (tmp_path / "runs").exists()
    assert not list(tmp_path.glob("**/server*.log"))


def nvml_sees_a_gpu() -> bool:
    return telemetry.nvml_status()[0]


@pytest.mark.parametrize("where", [
    pytest.param("nvml", marks=pytest.mark.skipif(nvml_sees_a_gpu(), reason="NVML sees a "
                                                  "GPU here; the facts-file case runs")),
    "facts-file"])
def test_no_gpu_is_refused_before_a_server_starts(tmp_path, where):
    bindir, mark = stand_in(tmp_path)
    r = measure(tmp_path, f"{bindir}:{os.environ['PATH']}", "h200",
                NO_GPU if where == "facts-file" else None)
    line = one_line_error(r)
    assert line.startswith("claimcheck: error: --card: 'h200' needs a GPU NVML can see: ")
    assert line.endswith(f"; {NO_GPU_TAIL}")
    nothing_started(tmp_path, mark)


def test_auto_with_no_gpu_says_what_to_do(tmp_path):
    r = measure(tmp_path, os.environ["PATH"], "auto", NO_GPU)
    assert one_line_error(r) == (
        f"claimcheck: error: --card: auto needs NVML: NVML found no GPU; {NO_GPU_TAIL}")
    nothing_started(tmp_path)


@pytest.mark.skipif(VLLM_HERE, reason="vLLM is importable in this python")
def test_no_vllm_on_path_is_refused_naming_the_engine_env_rule(tmp_path):
    (tmp_path / "empty").mkdir()
    r = measure(tmp_path, str(tmp_path / "empty"), "h200", H200)
    assert one_line_error(r) == (
        f"claimcheck: error: vllm: vLLM is not importable in {sys.executable}, the engine's "
        "python (no `vllm` on PATH, so this python); install vLLM there, or put first on "
        f"PATH the bin folder of an environment that has it ({RULE})")
    nothing_started(tmp_path)


@pytest.mark.skipif(VLLM_HERE, reason="vLLM is importable in this python")
def test_a_vllm_script_whose_python_lacks_vllm_is_refused_and_never_run(tmp_path):
    # --card cpu: no GPU check, so the refusal is the vLLM one (the GPU check was skipped)
    bindir, mark = stand_in(tmp_path, f"#!{sys.executable}")
    r = measure(tmp_path, f"{bindir}:{os.environ['PATH']}", "cpu", NO_GPU)
    assert one_line_error(r) == (
        f"claimcheck: error: vllm: vLLM is not importable in {sys.executable}, the engine's "
        f"python (the #! python of {bindir / 'vllm'}); install vLLM there, or put first on "
        f"PATH the bin folder of an environment that has it ({RULE})")
    nothing_started(tmp_path, mark)


def test_a_named_card_that_is_not_the_gpu_is_refused(tmp_path):
    bindir, mark = stand_in(tmp_path)
    r = measure(tmp_path, f"{bindir}:{os.environ['PATH']}", "rtx3090", H200)
    assert one_line_error(r) == (
        "claimcheck: error: --card: 'rtx3090' asked for, but NVML sees NVIDIA H200 = card "
        "'h200'; --card h200 or --card auto measures the card NVML sees")
    nothing_started(tmp_path, mark)


def test_a_bad_facts_file_is_one_line(tmp_path):
    (tmp_path / "facts.json").write_text("{not json")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"),
           "CLAIMCHECK_GPU_FACTS": str(tmp_path / "facts.json")}
    r = subprocess.run([sys.executable, "-m", "claimcheck.cli", "measure", "--card", "h200",
                        "--engine", "bf16-dummy", "--protocol", "ladder", "--runs-dir",
                        str(tmp_path / "runs")], capture_output=True, text=True, env=env)
    assert one_line_error(r).startswith(
        f"claimcheck: error: {tmp_path / 'facts.json'} (CLAIMCHECK_GPU_FACTS): cannot read GPU "
        "facts: ")


# ---- through `snakemake measure` --------------------------------------------------------

@pytest.mark.pipeline  # runs snakemake/papermill/nbval: make pipeline
def test_snakemake_measure_with_no_gpu_fails_in_one_line_naming_the_cause(tmp_path):
    # runs_dir: links to every committed run (the presets read one) and nothing else, so a
    # run directory made by mistake would land here, not in data/raw/runs
    runs = tmp_path / "runs"
    runs.mkdir()
    for d in (ROOT / "data" / "raw" / "runs").iterdir():
        if d.is_dir():
            (runs / d.name).symlink_to(d)
    before = sorted(p.name for p in runs.iterdir())
    cfg = yaml.safe_load((CONFIG / "config.yaml").read_text())
    cfg["measure"] = {"card": "h200", "engine": "bf16-dummy", "protocols": ["ladder"]}
    cfg["runs_dir"] = str(runs)
    root = linked_checkout(tmp_path, yaml.safe_dump(cfg))
    bindir, mark = stand_in(tmp_path)
    (tmp_path / "facts.json").write_text(json.dumps(NO_GPU))
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT / "src"), "CLAIMCHECK_GPU_FACTS": str(tmp_path / "facts.json")}
    r = subprocess.run(["snakemake", "--cores", "1", "measure"], cwd=root, env=env,
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    want = ("h200-bf16-dummy: claimcheck: error: --card: 'h200' needs a GPU NVML can see: "
            f"NVML found no GPU; {NO_GPU_TAIL}")
    assert want in out.splitlines(), out[-3000:]
    assert not mark.exists() and not (root / ".claimcheck").exists()
    assert sorted(p.name for p in runs.iterdir()) == before
    assert not (root / "logs" / "measure" / "h200-bf16-dummy.done").exists()


def test_engine_python_reads_the_script_as_the_preflight_does(tmp_path):
    """Provenance and --one-client-process use the python the preflight checks: env's
    python3 on PATH, pip's long-path exec form, a plain #! python; this python for a
    script that names none."""
    import shutil
    import sys

    from claimcheck.measure.engines import engine_python
    cases = [("#!/usr/bin/env python3\n", shutil.which("python3")),
             ("#!/opt/x/bin/python3.12\n", "/opt/x/bin/python3.12"),
             ("#!/bin/sh\n'''exec' '/very/long/bin/python' \"$0\" \"$@\"\n' '''\n",
              "/very/long/bin/python"),
             ("#!/bin/bash\necho stand-in\n", sys.executable)]
    for i, (head, want) in enumerate(cases):
        script = tmp_path / f"vllm{i}"
        script.write_text(head)
        assert engine_python([str(script)]) == want, head
    assert engine_python(["/x/python", "-m", "vllm.entrypoints.cli.main"]) == "/x/python"


# ---- an engine pinning a vLLM release (vllm_version) ------------------------------------

def test_version_refusal_words():
    py = ["/v/bin/python3"]
    assert pf.version_refusal(py, "the #! python of /v/bin/vllm", "0.33.0", "0.33.0") is None
    assert pf.version_refusal(py, "how", "0.26.0", None) is None
    assert pf.version_refusal(py, "the #! python of /v/bin/vllm", "0.26.0", "0.33.0") == (
        "the engine pins vLLM 0.33.0 (vllm_version) but /v/bin/python3 (the #! python of "
        "/v/bin/vllm) has vLLM 0.26.0; put first on PATH (or PYTHONPATH) the environment "
        "built from envs/vllm-0.33.0.lock")


def test_check_version_reads_the_installed_release(tmp_path):
    """A real python whose importable ``vllm`` is a package of a stated version: the probe
    reads the version from its metadata, as pip installs it."""
    site = tmp_path / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    meta = site / "vllm-0.26.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.26.0\n")
    wrapper = tmp_path / "py"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    vllm = [str(wrapper), "-m", "vllm.entrypoints.cli.main"]
    pf.check_version(vllm, "0.26.0")
    pf.check_version(vllm, None)
    with pytest.raises(InputError) as e:
        pf.check_version(vllm, "0.33.0")
    assert "pins vLLM 0.33.0 (vllm_version)" in str(e.value)
    assert "has vLLM 0.26.0" in str(e.value)


def test_the_0_33_engines_pin_their_release_and_match_their_0_26_twins():
    """The vLLM 0.33.0 engines are their 0.26.0 twins but for the release they pin."""
    from dataclasses import asdict

    from claimcheck.config.configfiles import load_engines
    engines = load_engines()
    for twin in ("bf16-dummy-16k", "fp8-hyperqwen-dummy-16k"):
        new = asdict(engines[f"{twin}-vllm033"])
        old = asdict(engines[twin])
        assert new.pop("vllm_version") == "0.33.0" and old.pop("vllm_version") is None
        for k in ("name", "description"):
            new.pop(k), old.pop(k)
        assert new == old
