"""Input validation shared by every model: clear ValueErrors instead of NaNs."""
from __future__ import annotations

import difflib

import numpy as np


def as_array(name: str, value) -> np.ndarray:
    """Convert ``value`` to a float array, rejecting non-numeric and non-finite input."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or an array of numbers (got {value!r})") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (got {value!r})")
    return arr


def positive(name: str, value) -> np.ndarray:
    """``value`` as a float array; every element must be > 0."""
    arr = as_array(name, value)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0 (got {_show(arr)})")
    return arr


def non_negative(name: str, value) -> np.ndarray:
    """``value`` as a float array; every element must be >= 0."""
    arr = as_array(name, value)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 (got {_show(arr)})")
    return arr


def in_range(name: str, value, low: float, high: float) -> np.ndarray:
    """``value`` as a float array; every element must lie in [low, high]."""
    arr = as_array(name, value)
    if np.any((arr < low) | (arr > high)):
        raise ValueError(f"{name} must be in [{low:g}, {high:g}] (got {_show(arr)})")
    return arr


def positive_int(name: str, value) -> np.ndarray:
    """``value`` as an array of whole numbers >= 1 (kept as float for broadcasting)."""
    arr = positive(name, value)
    if np.any(arr != np.floor(arr)):
        raise ValueError(f"{name} must be a whole number >= 1 (got {_show(arr)})")
    return arr


def choice(name: str, value: str, options) -> str:
    """``value`` if it is one of ``options`` (case-insensitive), else a ValueError with suggestions."""
    options = list(options)
    lookup = {_normal(o): o for o in options}
    key = _normal(value)
    if key in lookup:
        return lookup[key]
    close = difflib.get_close_matches(key, list(lookup), n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(repr(lookup[c]) for c in close)}?" if close else ""
    raise ValueError(f"unknown {name} {value!r}{hint} (known: {', '.join(map(str, options))})")


def _normal(text) -> str:
    return "".join(ch for ch in str(text).lower() if ch.isalnum() or ch in "./")


def _show(arr: np.ndarray) -> str:
    if arr.ndim == 0:
        return f"{float(arr):g}"
    bad = arr.ravel()
    return f"array with values from {bad.min():g} to {bad.max():g}"
