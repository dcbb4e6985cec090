"""Run the CLI as a user does (a real subprocess of this checkout) on copies of real data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QWEN = ROOT / "data" / "raw" / "models" / "qwen3.8-27b" / "config.json"


def cli(*args: str, cwd: Path | None = None, **kw: Any) -> subprocess.CompletedProcess:
    """``python -m claimcheck.cli ARGS`` with this checkout's package first on the path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CLAIMCHECK_ROOT": str(ROOT)}
    if "stdout" in kw:
        kw["stderr"] = subprocess.PIPE
    else:
        kw["capture_output"] = True
    return subprocess.run([sys.executable, "-m", "claimcheck.cli", *map(str, args)],
                          text=True, env=env, cwd=cwd, **kw)


def one_line_error(r: subprocess.CompletedProcess, code: int = 2) -> str:
    """The single stderr line of a refused command (no traceback), after checking the code."""
    assert r.returncode == code, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("claimcheck: error: "), r.stderr
    return lines[0]


def qwen_copy(tmp: Path, edit=None) -> Path:
    """A copy of the committed Qwen3.8 config.json, optionally edited (``edit(cfg)``)."""
    p = tmp / "config.json"
    if edit is None:
        shutil.copy(QWEN, p)
    else:
        cfg = json.loads(QWEN.read_text())
        edit(cfg)
        p.write_text(json.dumps(cfg, indent=1))
    return p
