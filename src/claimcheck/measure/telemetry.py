"""GPU facts and 1 Hz telemetry through NVML (nvidia-ml-py).

No GPU or no NVML is not an exception here: :func:`nvml_status` says why, the sampler
records nothing, and provenance records ``available: false`` with the reason. A sampler
whose NVML calls fail keeps going and counts what it lost (:meth:`Sampler.record`), so a
run can say its telemetry failed instead of the thread dying silently.

Test seam: when ``CLAIMCHECK_GPU_FACTS`` names a JSON file, :func:`gpu_facts` returns the
facts in it (the shape :func:`gpu_facts` returns; ``available`` required) instead of
asking NVML, marked with ``source``. Only the static facts come from it (what the card
check and the no-GPU check of :mod:`claimcheck.measure.preflight` read, and what
provenance records); the sampler and the energy counters still ask NVML. The fault tests
use it to run ``measure --card h200`` against a stand-in engine on a machine with no GPU.
"""

from __future__ import annotations

import csv
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from claimcheck.files.errors import InputError
from claimcheck.readings.telemetry import summarize
from claimcheck.runs.runload import read_telemetry

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


def gpu_count() -> int:
    """GPUs NVML sees (call after :func:`nvml_status` said it is available)."""
    import pynvml

    return pynvml.nvmlDeviceGetCount()


def _safe(fn, *args, default=None, errors: list[str] | None = None):
    """``fn(*args)``, or ``default`` when it raises; the error is appended to ``errors``."""
    try:
        return fn(*args)
    except Exception as e:  # NVMLError_NotSupported and friends: one field lost
        if errors is not None:
            errors.append(f"{getattr(fn, '__name__', fn)}: {type(e).__name__}: {e}")
        return default


def _str(x: Any) -> Any:
    return x.decode() if isinstance(x, bytes) else x


FACTS_ENV = "CLAIMCHECK_GPU_FACTS"
"""Names a JSON file of GPU facts read instead of NVML's (the test seam above)."""


def facts_from_file(path: Path, indices: list[int] | None = None) -> dict[str, Any]:
    """The GPU facts in ``path`` (``$CLAIMCHECK_GPU_FACTS``), the GPUs cut to ``indices``
    when given, with ``source`` saying where they came from. A file that cannot be read, is
    not a JSON object or lacks a true/false ``available`` is one :class:`InputError`."""
    where = f"{path} ({FACTS_ENV})"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise InputError(where, f"cannot read GPU facts: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("available"), bool):
        raise InputError(where, "GPU facts must be a JSON object with available: true or "
                         "false", key="available")
    gpus = data.get("gpus") or []
    if indices is not None:
        gpus = [g for g in gpus if g.get("index") in indices]
    return {**data, "gpus": gpus, "source": f"{where}, not NVML"}


def gpu_facts(indices: list[int] | None = None) -> dict[str, Any]:
    """Static facts of each GPU: name, UUID, driver, VBIOS, power limits, PCIe, ECC, MIG.

    A fact NVML cannot give is None, and the call's error is kept under ``errors``. With
    ``$CLAIMCHECK_GPU_FACTS`` set, the facts of that file (:func:`facts_from_file`).
    """
    if os.environ.get(FACTS_ENV):
        return facts_from_file(Path(os.environ[FACTS_ENV]), indices)
    ok, why = nvml_status()
    if not ok:
        return {"available": False, "reason": why}
    import pynvml as n

    errs: list[str] = []

    def get(fn, *args, default=None):
        return _safe(fn, *args, default=default, errors=errs)

    count = n.nvmlDeviceGetCount()
    idx = indices if indices is not None else list(range(count))
    cuda = get(n.nvmlSystemGetCudaDriverVersion)
    out: dict[str, Any] = {
        "available": True, "count": count,
        "driver_version": _str(get(n.nvmlSystemGetDriverVersion)),
        "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
        "nvml_version": _str(get(n.nvmlSystemGetNVMLVersion)), "gpus": []}
    for i in idx:
        h = n.nvmlDeviceGetHandleByIndex(i)
        cons = get(n.nvmlDeviceGetPowerManagementLimitConstraints, h, default=(None, None))
        ecc = get(n.nvmlDeviceGetEccMode, h, default=(None, None))
        mig = get(n.nvmlDeviceGetMigMode, h, default=(None, None))
        mem = get(n.nvmlDeviceGetMemoryInfo, h)

        def mw(v):
            return v / 1000 if v is not None else None

        out["gpus"].append({
            "index": i, "name": _str(get(n.nvmlDeviceGetName, h)),
            "uuid": _str(get(n.nvmlDeviceGetUUID, h)),
            "vbios": _str(get(n.nvmlDeviceGetVbiosVersion, h)),
            "memory_total_mib": mem.total / 2**20 if mem else None,
            "power_limit_enforced_w": mw(get(n.nvmlDeviceGetEnforcedPowerLimit, h)),
            "power_limit_default_w": mw(get(n.nvmlDeviceGetPowerManagementDefaultLimit, h)),
            "power_limit_min_w": mw(cons[0]), "power_limit_max_w": mw(cons[1]),
            "pcie_gen_current": get(n.nvmlDeviceGetCurrPcieLinkGeneration, h),
            "pcie_gen_max": get(n.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "pcie_width_current": get(n.nvmlDeviceGetCurrPcieLinkWidth, h),
            "pcie_width_max": get(n.nvmlDeviceGetMaxPcieLinkWidth, h),
            "ecc_mode_current": ecc[0], "mig_mode_current": mig[0],
            "max_sm_clock_mhz": get(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_SM),
            "max_mem_clock_mhz": get(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_MEM),
        })
    if errs:
        out["errors"] = errs[:20]
    return out


def sample_once(indices: list[int],
                field_errors: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per GPU: power (W), enforced limit (W), clocks (MHz), temp (C), memory (MiB).

    A field NVML cannot read is left empty and its error appended to ``field_errors``; a GPU
    that cannot be opened raises (the whole sample is lost).
    """
    import pynvml as n

    fe = field_errors

    reasons_fn = (getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None)
                  or n.nvmlDeviceGetCurrentClocksThrottleReasons)
    t = time.time()
    rows = []
    for i in indices:
        h = n.nvmlDeviceGetHandleByIndex(i)
        p = _safe(n.nvmlDeviceGetPowerUsage, h, errors=fe)
        lim = _safe(n.nvmlDeviceGetEnforcedPowerLimit, h, errors=fe)
        mem = _safe(n.nvmlDeviceGetMemoryInfo, h, errors=fe)
        reasons = _safe(reasons_fn, h, errors=fe)
        rows.append({
            "t_unix_s": round(t, 3), "gpu": i,
            "power_w": p / 1000 if p is not None else None,
            "power_limit_w": lim / 1000 if lim is not None else None,
            "sm_clock_mhz": _safe(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM, errors=fe),
            "mem_clock_mhz": _safe(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM, errors=fe),
            "temp_c": _safe(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU,
                            errors=fe),
            "mem_used_mib": round(mem.used / 2**20, 1) if mem else None,
            "throttle_reasons": f"0x{reasons:x}" if reasons is not None else None,
        })
    return rows


class Sampler:
    """Samples every ``interval_s`` into a CSV, flushing each row (kept if a run dies).

    Runs when NVML is available, or when GPU ``indices`` were asked for explicitly (then
    every failed NVML call is recorded rather than skipped). A failing sample does not end
    the thread: it counts the GPU rows lost and keeps the first error; :meth:`record` is
    what provenance stores.
    """

    def __init__(self, path: Path, indices: list[int] | None = None,
                 interval_s: float = 1.0) -> None:
        self.path = path
        self.interval_s = interval_s
        self.available, self.reason = nvml_status()
        self.indices = indices
        if self.available and self.indices is None:
            self.indices = list(range(gpu_count()))
        self.samples = 0
        """Sampling ticks attempted."""
        self.rows_written = 0
        self.lost_samples = 0
        """GPU rows not written because a sample failed (one per GPU per failed tick)."""
        self.errors = 0
        self.first_error: str | None = None
        self.field_errors = 0
        self.first_field_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        """Whether a sampling thread runs: NVML is there, or GPUs were named explicitly."""
        return bool(self.indices) and (self.available or self.indices is not None)

    def __enter__(self) -> Sampler:
        if self.active:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5 + self.interval_s)

    def _fail(self, e: BaseException) -> None:
        self.errors += 1
        self.lost_samples += len(self.indices or [])
        if self.first_error is None:
            self.first_error = f"{type(e).__name__}: {e}"[:300]

    def _run(self) -> None:
        try:
            f = self.path.open("a", newline="")
        except OSError as e:
            self._fail(e)
            return
        with f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            if f.tell() == 0:
                w.writeheader()
            next_t = time.monotonic()
            while not self._stop.is_set():
                self.samples += 1
                fe: list[str] = []
                try:
                    rows = sample_once(self.indices or [], fe)
                    for row in rows:
                        w.writerow(row)
                    f.flush()
                    self.rows_written += len(rows)
                except Exception as e:  # NVMLError, OSError (disk full): count, keep going
                    self._fail(e)
                if fe:
                    self.field_errors += len(fe)
                    self.first_field_error = self.first_field_error or fe[0][:300]
                next_t += self.interval_s
                self._stop.wait(max(0.0, next_t - time.monotonic()))

    def record(self) -> dict[str, Any]:
        """What provenance stores: availability, counts of samples, rows, losses, errors.

        ``status`` is ``ok``, ``partial`` (some samples or fields lost), ``failed`` (no row
        written although sampling ran) or ``unavailable`` (no NVML; ``reason`` says why).
        """
        if not self.active:
            status = "unavailable"
        elif self.rows_written == 0 and self.errors:
            status = "failed"
        elif self.errors or self.field_errors:
            status = "partial"
        else:
            status = "ok"
        return {"available": self.available, "reason": self.reason, "status": status,
                "gpus": self.indices, "interval_s": self.interval_s,
                "samples": self.samples, "rows_written": self.rows_written,
                "lost_samples": self.lost_samples, "errors": self.errors,
                "first_error": self.first_error, "field_errors": self.field_errors,
                "first_field_error": self.first_field_error}


def provenance_record(sampler: Sampler) -> dict[str, Any]:
    """The ``telemetry`` entry of provenance.json after a run: :meth:`Sampler.record` plus
    the ``summary`` of the rows written. A file that cannot be read back keeps its error
    under ``read_error`` (the run's record is still written)."""
    rec = sampler.record()
    try:
        rec["summary"] = summarize(read_telemetry(sampler.path))
    except InputError as e:
        rec["summary"] = {"samples": 0}
        rec["read_error"] = str(e)
    return rec
