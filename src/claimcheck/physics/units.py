"""Byte units. GB/GiB are never mixed: every name here says which one it is."""

KB = 1_000
MB = 1_000_000
GB = 1_000_000_000
KIB = 1024
MIB = 1024**2
GIB = 1024**3

