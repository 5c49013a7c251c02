"""Units: every model works in base units (bytes, seconds, FLOP, cycles, watts, dollars).

Decimal and binary prefixes are both here on purpose: datasheets quote bandwidth in
decimal GB/s, while some of the seed posts' numbers only come out with binary units.
Explained in :doc:`/book/memory_hierarchy` (section "Units: GB or GiB?").
"""
from __future__ import annotations

from . import _checks

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
TFLOPS = 1e12

BYTE_UNITS = {"B": 1.0, "KB": KB, "MB": MB, "GB": GB, "TB": TB,
              "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB}
BANDWIDTH_UNITS = {f"{u}/s": s for u, s in BYTE_UNITS.items()}

#: Storage size of one element, in bytes, for the data types the book uses.
DTYPE_BYTES = {"fp32": 4.0, "tf32": 4.0, "fp16": 2.0, "bf16": 2.0,
               "fp8": 1.0, "int8": 1.0, "int4": 0.5, "fp4": 0.5}


def byte_unit(unit: str) -> float:
    """Bytes in one ``unit`` (``"MB"`` = 1e6, ``"MiB"`` = 2**20, ...)."""
    return BYTE_UNITS[_checks.choice("byte unit", unit, BYTE_UNITS)]


def bandwidth_unit(unit: str) -> float:
    """Bytes per second in one ``unit`` (``"GB/s"`` = 1e9, ``"GiB/s"`` = 2**30)."""
    return BANDWIDTH_UNITS[_checks.choice("bandwidth unit", unit, BANDWIDTH_UNITS)]


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype`` (``"fp16"`` -> 2.0). Unknown names raise ValueError."""
    return DTYPE_BYTES[_checks.choice("dtype", dtype, DTYPE_BYTES)]
