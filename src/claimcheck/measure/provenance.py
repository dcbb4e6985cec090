"""Provenance of a run: host, GPU, software versions and commits, model, commands, env."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from claimcheck.files.paths import ROOT

ENV_PREFIXES = ("VLLM_", "CUDA_", "NCCL_", "HF_", "TORCH_", "PYTORCH_", "FLASHINFER_",
                "TRITON_", "OMP_", "CLAIMCHECK_", "SLURM_")
ENV_EXACT = ("PYTHONPATH", "LD_LIBRARY_PATH", "TRANSFORMERS_OFFLINE")

# Distribution names as pip knows them; the first one installed gives the version.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "vllm": ("vllm",),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "transformers": ("transformers",),
    "triton": ("triton",),
    "tokenizers": ("tokenizers",),
    "nvidia_ml_py": ("nvidia-ml-py", "pynvml"),
    "httpx": ("httpx",),
}

# Runs in the engine's interpreter. Versions come from importlib.metadata (the installed
# distribution, not a module attribute); a failure records its cause under NAME_error.
SOFTWARE_PROBE = r"""
import importlib, importlib.metadata as md, json, sys
dists = json.loads(sys.argv[1])
out = {}
for name, candidates in dists.items():
    out[name] = None
    errors = []
    for dist in candidates:
        try:
            out[name] = md.version(dist)
            out[name + "_distribution"] = dist
            break
        except md.PackageNotFoundError:
            errors.append(f"distribution {dist!r} is not installed")
        except Exception as e:
            errors.append(f"{dist}: {type(e).__name__}: {e}")
    if out[name] is None:
        out[name + "_error"] = "; ".join(errors)[:300]
try:
    import torch
    out["torch_cuda_runtime"] = torch.version.cuda
    out["torch_git"] = getattr(torch.version, "git_version", None)
except Exception as e:
    out["torch_cuda_runtime"] = None
    out["torch_import_error"] = f"{type(e).__name__}: {e}"[:300]
out["vllm_commit"] = None
try:
    out["vllm_commit"] = importlib.import_module("vllm._version").__commit_id__
except Exception as e:
    out["vllm_commit_error"] = f"{type(e).__name__}: {e}"[:300]
print(json.dumps(out))
"""


def software(python: str = sys.executable, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Versions as the engine's interpreter sees them (runs a small probe in it).

    Each package's version is its installed distribution's (``importlib.metadata``); a
    package that is missing or fails records ``None`` plus ``NAME_error`` with the cause,
    and a probe that cannot run records ``error`` with its stderr.
    """
    try:
        r = subprocess.run([python, "-c", SOFTWARE_PROBE, json.dumps(DISTRIBUTIONS)],
                           capture_output=True, text=True, timeout=180, env=env)
        data = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {
            "error": f"probe exited with code {r.returncode}: {r.stderr[-500:]}"}
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        data = {"error": f"probe could not run in {python}: {type(e).__name__}: {e}"}
    data["python"] = sys.version.split()[0]
    data["python_executable"] = python
    return data


def _field(path: str, prefix: str, sep: str) -> str | None:
    """The value after ``sep`` on the first line of ``path`` starting with ``prefix``."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(sep, 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def host() -> dict[str, Any]:
    """CPU model, cores, RAM (GiB), OS, kernel, hostname."""
    mem_kib = _field("/proc/meminfo", "MemTotal:", ":")
    return {"cpu": _field("/proc/cpuinfo", "model name", ":"), "cores": os.cpu_count(),
            "ram_gib": round(int(mem_kib.split()[0]) * 1024 / 2**30, 1) if mem_kib else None,
            "os": _field("/etc/os-release", "PRETTY_NAME=", "="),
            "kernel": platform.release(), "hostname": platform.node(),
            "python": platform.python_version()}


def project_git(root: Path = ROOT) -> dict[str, Any]:
    """This project's commit and whether the tree was dirty.

    CLAIMCHECK_GIT_COMMIT (and CLAIMCHECK_GIT_DIRTY), when set, name the commit that was
    copied to the host and win: a copied working tree can carry a ``.git`` of another
    commit (seen on the offline H200). What git itself reports is kept beside it.
    """
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=root,
                                    capture_output=True, text=True).stdout.strip())
        seen: dict[str, Any] = {"commit": commit, "dirty": dirty, "source": "git"}
    except (OSError, subprocess.CalledProcessError) as e:
        seen = {"commit": None, "dirty": "unknown", "source": "unavailable",
                "error": f"{type(e).__name__}: {e}"}
    env_commit = os.environ.get("CLAIMCHECK_GIT_COMMIT")
    if env_commit:
        return {"commit": env_commit, "dirty": os.environ.get("CLAIMCHECK_GIT_DIRTY",
                                                              "unknown"),
                "source": "environment (CLAIMCHECK_GIT_COMMIT)", "git": seen}
    return seen


def relevant_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment variables that can change what vLLM does."""
    env = dict(os.environ if env is None else env)
    return {k: v for k, v in sorted(env.items())
            if k.startswith(ENV_PREFIXES) or k in ENV_EXACT}


def sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
