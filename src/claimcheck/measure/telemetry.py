"""GPU facts and 1 Hz telemetry through NVML (nvidia-ml-py).

No GPU or no NVML is not an exception here: :func:`nvml_status` says why, the sampler
records nothing, and provenance records ``available: false`` with the reason.
"""

from __future__ import annotations

import csv
import statistics
import threading
import time
from pathlib import Path
from typing import Any

FIELDS = ("t_unix_s", "gpu", "power_w", "power_limit_w", "sm_clock_mhz", "mem_clock_mhz",
          "temp_c", "mem_used_mib", "throttle_reasons")


def nvml_status() -> tuple[bool, str]:
    """(available, reason). Initialises NVML when it can."""
    try:
        import pynvml
    except ImportError:
        return False, "nvidia-ml-py (pynvml) is not installed"
    try:
        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
    except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return False, f"NVML unavailable: {e}"
    if n == 0:
        return False, "NVML found no GPU"
    return True, f"{n} GPU(s)"


def _safe(fn, *args, default=None):
    try:
        return fn(*args)
    except Exception:
        return default


def _str(x: Any) -> Any:
    return x.decode() if isinstance(x, bytes) else x


def gpu_facts(indices: list[int] | None = None) -> dict[str, Any]:
    """Static facts of each GPU: name, UUID, driver, VBIOS, power limits, PCIe, ECC, MIG."""
    ok, why = nvml_status()
    if not ok:
        return {"available": False, "reason": why}
    import pynvml as n

    count = n.nvmlDeviceGetCount()
    idx = indices if indices is not None else list(range(count))
    cuda = _safe(n.nvmlSystemGetCudaDriverVersion)
    out: dict[str, Any] = {
        "available": True, "count": count,
        "driver_version": _str(_safe(n.nvmlSystemGetDriverVersion)),
        "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
        "nvml_version": _str(_safe(n.nvmlSystemGetNVMLVersion)), "gpus": []}
    for i in idx:
        h = n.nvmlDeviceGetHandleByIndex(i)
        cons = _safe(n.nvmlDeviceGetPowerManagementLimitConstraints, h, default=(None, None))
        ecc = _safe(n.nvmlDeviceGetEccMode, h, default=(None, None))
        mig = _safe(n.nvmlDeviceGetMigMode, h, default=(None, None))
        mem = _safe(n.nvmlDeviceGetMemoryInfo, h)

        def mw(v):
            return v / 1000 if v is not None else None

        out["gpus"].append({
            "index": i, "name": _str(_safe(n.nvmlDeviceGetName, h)),
            "uuid": _str(_safe(n.nvmlDeviceGetUUID, h)),
            "vbios": _str(_safe(n.nvmlDeviceGetVbiosVersion, h)),
            "memory_total_mib": mem.total / 2**20 if mem else None,
            "power_limit_enforced_w": mw(_safe(n.nvmlDeviceGetEnforcedPowerLimit, h)),
            "power_limit_default_w": mw(_safe(n.nvmlDeviceGetPowerManagementDefaultLimit, h)),
            "power_limit_min_w": mw(cons[0]), "power_limit_max_w": mw(cons[1]),
            "pcie_gen_current": _safe(n.nvmlDeviceGetCurrPcieLinkGeneration, h),
            "pcie_gen_max": _safe(n.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "pcie_width_current": _safe(n.nvmlDeviceGetCurrPcieLinkWidth, h),
            "pcie_width_max": _safe(n.nvmlDeviceGetMaxPcieLinkWidth, h),
            "ecc_mode_current": ecc[0], "mig_mode_current": mig[0],
            "max_sm_clock_mhz": _safe(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_SM),
            "max_mem_clock_mhz": _safe(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_MEM),
        })
    return out


def sample_once(indices: list[int]) -> list[dict[str, Any]]:
    """One row per GPU: power (W), enforced limit (W), clocks (MHz), temp (C), memory (MiB)."""
    import pynvml as n

    reasons_fn = (getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None)
                  or n.nvmlDeviceGetCurrentClocksThrottleReasons)
    t = time.time()
    rows = []
    for i in indices:
        h = n.nvmlDeviceGetHandleByIndex(i)
        p = _safe(n.nvmlDeviceGetPowerUsage, h)
        lim = _safe(n.nvmlDeviceGetEnforcedPowerLimit, h)
        mem = _safe(n.nvmlDeviceGetMemoryInfo, h)
        reasons = _safe(reasons_fn, h)
        rows.append({
            "t_unix_s": round(t, 3), "gpu": i,
            "power_w": p / 1000 if p is not None else None,
            "power_limit_w": lim / 1000 if lim is not None else None,
            "sm_clock_mhz": _safe(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
            "mem_clock_mhz": _safe(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
            "temp_c": _safe(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
            "mem_used_mib": round(mem.used / 2**20, 1) if mem else None,
            "throttle_reasons": f"0x{reasons:x}" if reasons is not None else None,
        })
    return rows


class Sampler:
    """Samples every ``interval_s`` into a CSV, flushing each row (kept if a run dies)."""

    def __init__(self, path: Path, indices: list[int] | None = None,
                 interval_s: float = 1.0) -> None:
        self.path = path
        self.interval_s = interval_s
        self.available, self.reason = nvml_status()
        self.indices = indices
        if self.available and self.indices is None:
            import pynvml

            self.indices = list(range(pynvml.nvmlDeviceGetCount()))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        if self.available:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        with self.path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            if f.tell() == 0:
                w.writeheader()
            next_t = time.monotonic()
            while not self._stop.is_set():
                for row in sample_once(self.indices or []):
                    w.writerow(row)
                f.flush()
                next_t += self.interval_s
                self._stop.wait(max(0.0, next_t - time.monotonic()))


def read_telemetry(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.exists():
        return []
    rows = []
    with p.open(newline="") as f:
        for r in csv.DictReader(f):
            rows.append({k: (float(v) if v not in ("", None) and k not in (
                "throttle_reasons",) else v) for k, v in r.items()})
    return rows


def summarize(rows: list[dict[str, Any]], t0: float | None = None,
              t1: float | None = None) -> dict[str, Any]:
    """Mean and max power (W), mean SM clock (MHz), max temperature (C) within [t0, t1]."""
    sel = [r for r in rows if (t0 is None or r["t_unix_s"] >= t0)
           and (t1 is None or r["t_unix_s"] <= t1)]
    if not sel:
        return {"samples": 0}

    def col(k):
        return [r[k] for r in sel if isinstance(r.get(k), float)]

    power = col("power_w")
    return {
        "samples": len(sel),
        "mean_power_w": statistics.fmean(power) if power else None,
        "max_power_w": max(power) if power else None,
        "power_limit_w": max(col("power_limit_w")) if col("power_limit_w") else None,
        "mean_sm_clock_mhz": statistics.fmean(col("sm_clock_mhz")) if col("sm_clock_mhz")
        else None,
        "max_temp_c": max(col("temp_c")) if col("temp_c") else None,
        "max_mem_used_mib": max(col("mem_used_mib")) if col("mem_used_mib") else None,
    }
