"""Refuse early what cannot run: before ``claimcheck measure`` (and so each ``snakemake
measure`` job) starts a server, a GPU NVML can see (unless ``--card cpu``) and vLLM
importable in the engine's python. The card named against that GPU is
:func:`claimcheck.cli.runs.measure_card`'s check.

Each refusal is one :class:`InputError` line saying what to do. The decisions
(:func:`gpu_refusal`, :func:`interpreter`, :func:`vllm_needed`, :func:`vllm_refusal`) are
pure; :func:`check` is the I/O edge (reads the ``vllm`` script's first lines, runs one
``importlib.util.find_spec("vllm")`` in the engine's python, well under a second).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from claimcheck.files.errors import InputError

ENGINE_ENV_RULE = ("the engine's python is the #! python of the first `vllm` on PATH, "
                   "else this one")
VLLM_FIX = ("install vLLM there, or put first on PATH the bin folder of an environment "
            f"that has it ({ENGINE_ENV_RULE})")
NO_GPU_FIX = ("run it where NVML sees the GPU (nvidia-smi lists it), or --card cpu for a "
              "CPU engine")
PROBE = ("import importlib.util, importlib.metadata, sys\n"
         "if not importlib.util.find_spec('vllm'): sys.exit(3)\n"
         "print(importlib.metadata.version('vllm'))")
"""Run in the engine's python: exit 0 and print vLLM's version when ``vllm`` can be
imported there (not imported), exit 3 when it cannot."""


def gpu_refusal(card: str, facts: Mapping[str, Any]) -> str | None:
    """Why ``card`` cannot be measured for want of a GPU (``facts`` as
    :func:`claimcheck.measure.telemetry.gpu_facts` gives them), or None. ``cpu`` needs none."""
    if card == "cpu" or facts.get("available"):
        return None
    why = facts.get("reason") or "NVML gave no reason"
    need = "auto needs NVML" if card == "auto" else f"{card!r} needs a GPU NVML can see"
    return f"{need}: {why}; {NO_GPU_FIX}"


def interpreter(vllm: list[str], head: list[str]) -> list[str] | None:
    """The command that runs the engine's python, from the vLLM command ``vllm``
    (:func:`claimcheck.measure.engines.vllm_command`) and the first two lines ``head`` of
    its script: the ``-m`` form's python; a ``#!`` python (``#!/usr/bin/env python3``
    included); pip's ``#!/bin/sh`` + ``'''exec' PYTHON`` form for long paths. None when
    the script is no python script (a wrapper or a stand-in): its python cannot be named."""
    if len(vllm) > 1 and vllm[1] == "-m":
        return [vllm[0]]
    if not head or not head[0].startswith("#!"):
        return None
    words = head[0][2:].split()
    if words and "python" in Path(words[0]).name:
        return words[:1]
    if len(words) == 2 and Path(words[0]).name == "env" and "python" in words[1]:
        return words
    if len(head) > 1 and head[1].startswith("'''exec' "):
        try:
            rest = shlex.split(head[1].removeprefix("'''exec' "))
        except ValueError:
            return None
        if rest and "python" in Path(rest[0]).name:
            return rest[:1]
    return None


def vllm_needed(own_server: bool, kinds: Iterable[str], one_client_process: bool) -> bool:
    """Whether this machine runs vLLM: it starts the server, a ``bench`` protocol runs
    ``vllm bench serve`` here, or ``--one-client-process`` imports vLLM's benchmark."""
    return own_server or one_client_process or any(k == "bench" for k in kinds)


def vllm_refusal(python: list[str], how: str, code: int | None, detail: str = "") -> str | None:
    """Why vLLM cannot run in ``python`` (found ``how``), from the probe's exit ``code``
    (0 importable, 3 not installed, None it could not run: ``detail``), or None."""
    if code == 0:
        return None
    where = " ".join(python)
    what = (f"vLLM is not importable in {where}, the engine's python ({how})" if code == 3
            else f"the engine's python {where} ({how}) cannot be run: "
                 f"{detail or f'exit {code}'}")
    return f"{what}; {VLLM_FIX}"


def version_refusal(python: list[str], how: str, have: str, want: str | None) -> str | None:
    """Why the engine's python ``python`` (found ``how``), whose vLLM is ``have``, cannot run
    an engine that pins vLLM ``want`` (None pins none), or None."""
    if want is None or have == want:
        return None
    return (f"the engine pins vLLM {want} (vllm_version) but {' '.join(python)} ({how}) has "
            f"vLLM {have or 'of no readable version'}; put first on PATH (or PYTHONPATH) the "
            f"environment built from envs/vllm-{want}.lock")


def script_head(path: str) -> list[str]:
    """The first two lines of the script at ``path`` (empty when it cannot be read)."""
    try:
        with open(path, errors="replace") as f:
            return [f.readline().rstrip("\n") for _ in range(2)]
    except OSError:
        return []


def _probe(python: list[str]) -> tuple[int | None, str, str]:
    """The probe's exit code in ``python`` (None when it cannot run, with why) and the vLLM
    version it printed ("" when none)."""
    try:
        r = subprocess.run([*python, "-c", PROBE], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"{type(e).__name__}: {e}", ""
    if r.returncode in (0, 3):
        return r.returncode, "", r.stdout.strip()
    tail = r.stderr.strip().splitlines()
    return None, tail[-1] if tail else f"exit {r.returncode}", ""


def _python_of(vllm: list[str]) -> tuple[list[str] | None, str]:
    """The engine's python for the vLLM command ``vllm`` and how it was found."""
    python = interpreter(vllm, [] if len(vllm) > 1 else script_head(vllm[0]))
    how = ("no `vllm` on PATH, so this python" if len(vllm) > 1 and vllm[1] == "-m"
           else f"the #! python of {vllm[0]}")
    return python, how


def _check_python(vllm: list[str], want: str | None, import_key: str, note: str) -> None:
    """The engine's python for ``vllm``, probed once: refuse (:class:`InputError`, key
    ``import_key``) when vLLM cannot be imported there, and (key ``vllm_version``) when its
    vLLM is not the ``want`` the engine pins; ``note`` on stderr when the script is no
    python script."""
    python, how = _python_of(vllm)
    if python is None:
        print(note, file=sys.stderr)
        return
    code, detail, have = _probe(python)
    refusal = vllm_refusal(python, how, code, detail)
    if refusal:
        raise InputError(import_key, refusal)
    refusal = version_refusal(python, how, have, want)
    if refusal:
        raise InputError("vllm_version", refusal)


def check_version(vllm: list[str], want: str | None) -> None:
    """Refuse (:class:`InputError` on key ``vllm_version``) an engine pinning vLLM ``want``
    when the engine's python has another; nothing when it pins none or the script is no
    python script (said on stderr)."""
    if want is not None:
        _check_python(vllm, want, "vllm_version",
                      f"claimcheck: note: {vllm[0]} is not a python script: its vLLM version "
                      f"is not checked against the engine's {want}")


def check(card: str, facts: Mapping[str, Any], vllm: list[str], *, own_server: bool = True,
          kinds: Iterable[str] = ("bench",), one_client_process: bool = False,
          vllm_version: str | None = None) -> None:
    """Refuse (:class:`InputError`, one line) a ``measure`` that cannot run: no GPU for a
    card other than ``cpu``, vLLM not importable in the engine's python when this machine
    runs vLLM, or another vLLM than the engine pins (``vllm_version``). A ``vllm`` that is
    no python script is taken as it is, said on stderr. Nothing is started; nothing is
    written."""
    refusal = gpu_refusal(card, facts)
    if refusal:
        raise InputError("--card", refusal)
    if not vllm_needed(own_server, kinds, one_client_process):
        return
    _check_python(vllm, vllm_version, "vllm",
                  f"claimcheck: note: {vllm[0]} is not a python script (a wrapper or a "
                  "stand-in): whether it can import vLLM is not checked")
