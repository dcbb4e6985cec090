"""What a render prints (issue 40 item 7): a notebook rule's kernel says nothing that is not
about the notebook (claimcheck.pipeline.nbrun), and the kernel manager sends no interrupt
while it shuts a kernel down, which ended logs/update.log in "ERROR | KeyboardInterrupt
caught in kernel" after a render that succeeded."""

import asyncio
import json
import os
import subprocess
import sys

import nbformat
import pytest

from claimcheck.files.paths import ROOT
from claimcheck.pipeline.nbrun import QuietKernelManager

TCP_WARNING = "Kernel is running over TCP without encryption"


def test_no_interrupt_while_shutting_down_but_otherwise_as_before():
    km = QuietKernelManager()
    km.shutting_down = True
    assert asyncio.run(km._async_interrupt_kernel()) is None  # skipped: no signal, no error
    km.shutting_down = False
    with pytest.raises(RuntimeError, match="No kernel is running"):  # jupyter_client's own
        asyncio.run(km._async_interrupt_kernel())


def _notebook(path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = 1  # int")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell, nbformat.v4.new_code_cell("print('x is', x * 6)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)


@pytest.mark.pipeline  # starts two kernels in subprocesses: make pipeline
def test_nbrun_runs_papermill_without_the_kernels_warning(tmp_path):
    _notebook(tmp_path / "t.ipynb")
    (tmp_path / "p.yaml").write_text("x: 7\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-m", "claimcheck.pipeline.nbrun", "--log-output",
                        "t.ipynb", "out.ipynb", "-f", "p.yaml"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    said = r.stdout + r.stderr
    assert "x is 42" in said  # --log-output: the cells' output, as papermill's
    assert TCP_WARNING not in said and "WARNING" not in said and "ERROR" not in said
    cells = json.loads((tmp_path / "out.ipynb").read_text())["cells"]
    assert cells[-1]["outputs"][0]["text"] == ["x is 42\n"]
    # papermill's own command on the same notebook prints the warning nbrun leaves out
    r = subprocess.run(["papermill", "-k", "python3", "t.ipynb", "plain.ipynb", "-f",
                        "p.yaml"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and TCP_WARNING in r.stdout + r.stderr


def test_the_notebook_rules_run_nbrun():
    text = (ROOT / "workflow/rules/figures.smk").read_text()
    shells = [line.strip() for line in text.splitlines() if "{input.nb} {output.nb}" in line]
    assert len(shells) == 3
    assert all(s.startswith('"python3 -m claimcheck.pipeline.nbrun ') for s in shells), shells
