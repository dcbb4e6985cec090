"""NVML's energy counter, read at the edges of a load window.

``nvmlDeviceGetTotalEnergyConsumption`` counts millijoules since the driver loaded (Volta and
newer). Energy over a window is the difference of two readings; divided by the window it is
the mean measured power, and tokens / energy is tokens per measured joule (never a nominal
TDP). Where NVML or the counter is missing, the reading records why.
"""

from __future__ import annotations

from typing import Any


def read_energy_mj(indices: list[int] | None) -> dict[str, Any]:
    """One reading: ``{"mj": {gpu index: mJ}, "error": None}`` or the cause of no reading."""
    try:
        import pynvml as n

        n.nvmlInit()
        idx = indices if indices is not None else list(range(n.nvmlDeviceGetCount()))
        return {"mj": {str(i): int(n.nvmlDeviceGetTotalEnergyConsumption(
            n.nvmlDeviceGetHandleByIndex(i))) for i in idx}, "error": None}
    except Exception as e:  # noqa: BLE001 - recorded in the step, never fatal to a run
        return {"mj": None, "error": f"{type(e).__name__}: {e}"}


def window_energy_j(start: dict[str, Any], end: dict[str, Any]) -> float | None:
    """Joules used by all sampled GPUs between two readings (None without both)."""
    a, b = start.get("mj"), end.get("mj")
    if not a or not b or set(a) != set(b):
        return None
    return sum(b[k] - a[k] for k in a) / 1000.0
