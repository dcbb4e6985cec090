"""A file's bytes as a commit holds them, read with ``git`` (the I/O edge for checking a
kept prediction against the commit its index names)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AtCommit:
    """What git says of a file at a commit. ``checked`` False: git cannot say (no git, not
    a repository, or a shallow clone that lacks the commit), ``why`` says which. Otherwise
    ``commit_found`` (a full history without the commit says False) and ``data``, the
    file's bytes there (None: the commit does not hold the file)."""

    checked: bool
    commit_found: bool = False
    data: bytes | None = None
    why: str | None = None


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, timeout=30)


def at_commit(path: str | Path, commit: str) -> AtCommit:
    """``path`` at ``commit`` in the repository that holds it (:class:`AtCommit`)."""
    p = Path(path).resolve()
    try:
        top = _git(p.parent, "rev-parse", "--show-toplevel")
        if top.returncode != 0:
            return AtCommit(False, why="not in a git repository")
        rel = p.relative_to(Path(top.stdout.decode().strip()).resolve()).as_posix()
        if _git(p.parent, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
            shallow = _git(p.parent, "rev-parse", "--is-shallow-repository")
            if shallow.stdout.decode().strip() != "false":
                return AtCommit(False, why=f"a shallow clone without commit {commit}")
            return AtCommit(True, commit_found=False)
        r = _git(p.parent, "show", f"{commit}:{rel}")
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        return AtCommit(False, why=f"git could not be run ({type(e).__name__})")
    return AtCommit(True, commit_found=True, data=r.stdout if r.returncode == 0 else None)


def committed_bytes(path: str | Path, commit: str) -> bytes | None:
    """``path``'s bytes at ``commit`` in the repository that holds it; None where that cannot
    be read (no git, not a repository, a commit not there, or a file the commit does not
    have)."""
    return at_commit(path, commit).data


def commit_time(path: str | Path, commit: str) -> str | None:
    """The committer date of ``commit`` (ISO 8601, UTC offset included) in the repository
    that holds ``path``; None where git cannot say (no git, not a repository, a commit not
    there)."""
    p = Path(path).resolve()
    try:
        r = _git(p.parent, "show", "-s", "--format=%cI", f"{commit}^{{commit}}")
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = r.stdout.decode().strip()
    return out if r.returncode == 0 and out else None
