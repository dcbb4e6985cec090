"""Bytes per stored value: weight formats, KV-cache formats, recurrent-state dtypes.

Pure data and pure functions. Sizes are in bytes; scale layouts are parameters.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

STATE_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "float32": 4, "fp16": 2, "float16": 2,
                                     "bf16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class KvFormat:
    """How one token's K and V of one KV head are stored.

    ``*_scale_group`` is the number of values that share one scale (``None``: no scale;
    ``0``: one scale per head, i.e. ``head_dim`` values). ``scale_bytes`` is the size
    of one scale in bytes.
    """

    k_bits: int
    v_bits: int
    k_scale_group: int | None = None
    v_scale_group: int | None = None
    scale_bytes: int = 2

    def bytes_per_head(self, head_dim: int) -> float:
        """Bytes for K plus V of one KV head for one token."""
        return (_part_bytes(head_dim, self.k_bits, self.k_scale_group, self.scale_bytes)
                + _part_bytes(head_dim, self.v_bits, self.v_scale_group, self.scale_bytes))


def _part_bytes(head_dim: int, bits: int, group: int | None, scale_bytes: int) -> float:
    data = head_dim * bits / 8
    if group is None:
        return data
    per_scale = head_dim if group == 0 else group
    if head_dim % per_scale:
        raise ValueError(f"head_dim {head_dim} is not a multiple of scale group {per_scale}")
    return data + (head_dim // per_scale) * scale_bytes


KV_FORMATS: dict[str, KvFormat] = {
    "bf16": KvFormat(16, 16),
    "fp16": KvFormat(16, 16),
    "auto": KvFormat(16, 16),
    "fp8": KvFormat(8, 8),
    "int8": KvFormat(8, 8),
    "int4": KvFormat(4, 4),
    # Cinference's K8V4: K int8 with one fp16 scale per head and token,
    # V int4 with one fp16 scale per 32 values.
    "k8v4": KvFormat(8, 4, k_scale_group=0, v_scale_group=32, scale_bytes=2),
}


@dataclass(frozen=True)
class WeightFormat:
    """Storage of one linear-layer weight: ``bits`` per value plus group scales.

    ``group_size`` values share a scale of ``scale_bytes`` (and a zero point of
    ``zero_bytes``); ``group_size=None`` means per-channel or per-tensor scales,
    which are negligible and not counted.
    """

    bits: float
    group_size: int | None = None
    scale_bytes: float = 0.0
    zero_bytes: float = 0.0

    @property
    def bytes_per_weight(self) -> float:
        """Average bytes stored per weight, scales included."""
        extra = 0.0
        if self.group_size:
            extra = (self.scale_bytes + self.zero_bytes) / self.group_size
        return self.bits / 8 + extra


WEIGHT_FORMATS: dict[str, WeightFormat] = {
    "bf16": WeightFormat(16),
    "fp16": WeightFormat(16),
    "fp8": WeightFormat(8),
    "int8": WeightFormat(8),
    # GPTQ/AutoRound-style symmetric 4-bit, fp16 scale per 128 weights.
    "w4a16": WeightFormat(4, group_size=128, scale_bytes=2),
    # NVFP4: e2m1 values with one fp8 (e4m3) scale per 16 (global fp32 scale ignored).
    "nvfp4": WeightFormat(4, group_size=16, scale_bytes=1),
}


def kv_format(name: str) -> KvFormat:
    """Look up a KV format by name; a clear error names the known ones."""
    try:
        return KV_FORMATS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown KV dtype {name!r}; known: {sorted(KV_FORMATS)}") from None


def state_dtype_bytes(name: str) -> int:
    """Bytes per recurrent-state value for a dtype name."""
    try:
        return STATE_DTYPE_BYTES[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown state dtype {name!r}; known: {sorted(STATE_DTYPE_BYTES)}") from None


def weight_format(name: str) -> WeightFormat:
    """Look up a weight format by name."""
    try:
        return WEIGHT_FORMATS[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown weight format {name!r}; known: {sorted(WEIGHT_FORMATS)}") from None


KERNEL_PATH = {"w4a16": "marlin"}
"""The kernel a format's local run should have used to stand for the target card: vLLM's
Marlin for W4A16 (the path on Ampere and Ada; Machete, Hopper's default, runs on Hopper
only). A local run whose start log names it
(:attr:`claimcheck.runs.run.Run.linear_kernel`) is preferred among the format's runs."""
KERNEL_ARCH = {"marlin": ("ampere", "ada"), "machete": ("hopper",)}
"""The architectures a kernel was built for (vLLM's csrc/quantization/machete/Readme.md:
"Machete is a spiritual successor to the Marlin kernel but optimized for Hopper"; Marlin
runs on Hopper without its TMA and WGMMA). A format's memory efficiency measured with a
kernel off these architectures is that kernel's on a foreign chip, not the format's, and is
not carried (measured here: Marlin on the H200 read its weights at 0.375 of the datasheet
where BF16 reads at 0.70; on the article's RTX 3090 the same kernel reaches 74% of its
bandwidth line)."""


def row_bucket(bounds: tuple[int, ...], rows: int) -> int:
    """The index of the row bucket ``rows`` falls in under ``bounds`` (:class:`RowBuckets`):
    0 for 1 to ``bounds[0]`` rows, ``len(bounds)`` above the last bound."""
    return bisect_left(bounds, rows)


@dataclass(frozen=True)
class RowBuckets:
    """A GEMM kernel's dispatch by rows: M in [1, ``bounds[0]``], (``bounds[0]``,
    ``bounds[1]``], ..., and above the last bound each run one tile configuration, on
    cards of ``arches``; ``source`` says where the bounds are read."""

    bounds: tuple[int, ...]
    arches: tuple[str, ...]
    source: str

    def words(self) -> str:
        """The buckets as rows, "1-16, 17-64, 65-128, 129 and up"; past the fifth, a run of
        equal buckets as one step ("..., 49-64, then every 16 rows to 1024, ...")."""
        lows = (1, *(b + 1 for b in self.bounds))
        parts = [f"{lo}-{hi}" for lo, hi in zip(lows, self.bounds, strict=False)]
        steps = {b - a for a, b in zip(self.bounds[4:], self.bounds[5:], strict=False)}
        if len(parts) > 6 and len(steps) == 1:
            parts = [*parts[:5], f"then every {steps.pop()} rows to {self.bounds[-1]}"]
        return ", ".join([*parts, f"{lows[-1]} and up"])


KERNEL_ROW_BUCKETS = {
    "cutlassfp8scaledmm": RowBuckets(
        bounds=(16, 64, 128), arches=("hopper",),
        source="vLLM's csrc/quantization/w8a8/cutlass/c3x/scaled_mm_sm90_fp8_dispatch.cuh: "
               "m <= 16, m <= 64, m <= 128 and above each take their own tile"),
    "marlin": RowBuckets(
        bounds=(8, *range(16, 1025, 16)), arches=("ampere", "ada", "hopper"),
        source="vLLM's csrc/quantization/gptq_marlin/gptq_marlin.cu: min(ceil(m / 16), 4) "
               "blocks of 16 rows a 64-row slice, m <= 8 its own block"),
}
"""The row buckets of a GEMM kernel (by the name its start log gives,
:func:`claimcheck.readings.serverlog.gemm_kernel`): a decode step's rows are the GEMM's M,
and the step's time moves in steps at the bucket bounds, not linearly across them (measured
on the H200: the FP8 engine's decode step is 11.6 ms at 16 rows and 14.3, 14.2, 14.2 and
14.0 ms at 24, 32, 40 and 48; Marlin's is 14.8 ms at 40 rows, 17.8 at 56 and 18.2 at 64)."""
