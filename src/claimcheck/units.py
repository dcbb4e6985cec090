"""Byte units. GB/GiB are never mixed: every name here says which one it is."""

KB = 1_000
MB = 1_000_000
GB = 1_000_000_000
KIB = 1024
MIB = 1024**2
GIB = 1024**3


def gb_to_bytes(gb: float) -> float:
    """Decimal gigabytes (1e9 bytes) to bytes."""
    return gb * GB


def gib_to_bytes(gib: float) -> float:
    """Binary gibibytes (2**30 bytes) to bytes."""
    return gib * GIB


def bytes_to_gb(n: float) -> float:
    """Bytes to decimal gigabytes (1e9)."""
    return n / GB


def bytes_to_gib(n: float) -> float:
    """Bytes to binary gibibytes (2**30)."""
    return n / GIB
