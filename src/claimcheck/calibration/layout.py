"""The parallel layout of an engine (tensor, pipeline, data, expert sizes above 1): the
check that a calibration or an engine shape is only borrowed between runs of one layout."""

from __future__ import annotations

from typing import Any

from claimcheck.runs.run import Run


def parallel_layout(cfg: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """The parallel sizes above 1 of an engine config (a run's recorded ``engine_config``
    or an engine's fields): tensor from ``tensor_parallel_size`` (1 when not recorded, as
    vLLM defaults), the others from ``extra_args`` read as vLLM reads them; () is one GPU."""
    from claimcheck.config.vllmargv import SIZES, UnreadableArgv, read_serve_args
    sizes = {"tensor_parallel_size": int(cfg.get("tensor_parallel_size") or 1)}
    try:
        view = read_serve_args(list(cfg.get("extra_args") or ()))
    except UnreadableArgv as e:
        return (("unreadable extra_args", str(e)),)  # type: ignore[return-value]
    for dest in SIZES:
        sizes.setdefault(dest, view.size(dest))
    return tuple((k, v) for k, v in sizes.items() if v > 1)


def run_version(run: Run) -> str | None:
    """The vLLM release a run recorded (``software.vllm`` in its provenance), or None: the
    key that keeps a calibration to the runs of one engine version."""
    v = run.provenance.sw("vllm")
    return None if v == "?" else v


def layout_words(layout: tuple[tuple[str, int], ...]) -> str:
    """``tensor_parallel_size 2``, or ``one GPU``."""
    return ", ".join(f"{k} {v}" for k, v in layout) or "one GPU"


def run_layout(run: Run) -> tuple[tuple[str, int], ...]:
    """A run's :func:`parallel_layout`, from its recorded ``engine_config``."""
    return parallel_layout(dict(run.provenance.engine_config.recorded))

