"""A file's bytes as a commit holds them, read with ``git`` (the I/O edge for checking a
kept prediction against the commit its index names)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def committed_bytes(path: str | Path, commit: str) -> bytes | None:
    """``path``'s bytes at ``commit`` in the repository that holds it; None where that cannot
    be read (no git, not a repository, a shallow clone without the commit, or a file the
    commit does not have)."""
    p = Path(path).resolve()
    try:
        top = subprocess.run(["git", "-C", str(p.parent), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=30)
        if top.returncode != 0:
            return None
        rel = p.relative_to(Path(top.stdout.strip()).resolve()).as_posix()
        r = subprocess.run(["git", "-C", str(p.parent), "show", f"{commit}:{rel}"],
                           capture_output=True, timeout=30)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None
