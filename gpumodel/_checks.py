"""Input validation shared by every model: clear ValueErrors instead of NaNs.

The house rule: bad input raises ``ValueError`` naming the parameter the caller passed and the
allowed range; no model returns NaN or inf for finite valid input (:func:`finite_result` turns an
overflowing result into a ValueError naming the caller's arguments).
"""
from __future__ import annotations

import contextvars
import difflib
import functools
import inspect
import numbers
import re

import numpy as np


def _reject(name: str, value, what: str = "a number or an array of numbers"):
    raise ValueError(f"{name} must be {what} (got {_brief(value)})") from None


def as_array(name: str, value, *, allow_nonfinite: bool = False) -> np.ndarray:
    """Convert ``value`` to a float array, rejecting non-numeric and non-finite input.

    Rejected: None, bools (and bool arrays), strings and bytes (also numeric ones), complex
    numbers, ragged or object arrays of anything but real numbers, and (unless
    ``allow_nonfinite``) NaN, inf and integers too large for a float.
    """
    if value is None or isinstance(value, (str, bytes, bool, np.bool_, dict, set)):
        _reject(name, value)
    if isinstance(value, (list, tuple)) and _holds_bool(value):
        _reject(name, value)
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        _reject(name, value)
    kind = raw.dtype.kind
    if kind == "O":
        items = raw.ravel().tolist()
        if not all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in items):
            _reject(name, value)
    elif kind not in "iuf":
        _reject(name, value)
    try:
        arr = np.asarray(raw, dtype=float)
    except OverflowError:
        if allow_nonfinite:
            _reject(name, value, "representable as a float (at most about 1.8e308 in magnitude)")
        raise ValueError(f"{name} must be finite (got {_brief(value)}, too large for a float)") from None
    except (TypeError, ValueError):
        _reject(name, value)
    if not allow_nonfinite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (got {_brief(value)})")
    return arr


def _holds_bool(items, depth: int = 0) -> bool:
    """Whether a (nested) list holds a bool, which numpy would silently turn into 0 or 1."""
    for item in items:
        if isinstance(item, (bool, np.bool_)):
            return True
        if isinstance(item, (list, tuple)) and depth < 32 and _holds_bool(item, depth + 1):
            return True
    return False


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


def scalar(name: str, value) -> float:
    """``value`` as one finite float; arrays (even of one element), bools, strings and None are refused."""
    arr = as_array(name, value)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a single number, not an array (got shape {arr.shape})")
    return float(arr)


def count(name: str, value, maximum: float | None = None) -> int:
    """``value`` as one whole number >= 1 (and <= ``maximum`` if given), as an int."""
    number = scalar(name, value)
    if number < 1 or number != np.floor(number):
        raise ValueError(f"{name} must be a single whole number >= 1 (got {number:g})")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be a whole number in [1, {maximum:g}] (got {number:g})")
    return int(number)


#: The largest seed the random generators take (numpy's legacy 32-bit range, kept for all).
MAX_SEED = 2**32 - 1


def seed(value, name: str = "seed") -> int:
    """``value`` as one whole number in [0, :data:`MAX_SEED`], as an int (1.5 is refused)."""
    number = scalar(name, value)
    if not 0 <= number <= MAX_SEED or number != np.floor(number):
        raise ValueError(f"{name} must be a single whole number in [0, {MAX_SEED}] "
                         f"(got {number:g})")
    return int(number)


_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def plain_number(text: str) -> float:
    """``text`` as a float if it is a plain ASCII decimal number (``2900``, ``-1.5``, ``3e12``),
    else NaN: what Python's ``float`` also reads (Arabic-Indic or full-width digits such as
    ``'٣'`` or ``'３'``, underscores as in ``2_900``, ``inf``, ``nan``) is not a number in a CSV."""
    if not _PLAIN_NUMBER.fullmatch(text):
        return float("nan")
    return float(text)


def flag(name: str, value) -> bool:
    """``value`` if it is True or False (numpy bools too); anything else, 0/1 and "no" included, is refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False (got {_brief(value)})")
    return bool(value)


def text(name: str, value) -> str:
    """``value`` if it is a string."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string (got {_brief(value)})")
    return value


def choice(name: str, value: str, options) -> str:
    """``value`` if it is one of ``options`` (case-insensitive), else a ValueError with suggestions.

    ``value`` must be a string: lists, numbers and None are refused, naming ``name``.
    """
    options = list(options)
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, one of {', '.join(map(str, options))} (got {_brief(value)})")
    lookup = {_normal(o): o for o in options}
    key = _normal(value)
    if key in lookup:
        return lookup[key]
    close = difflib.get_close_matches(key, list(lookup), n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(repr(lookup[c]) for c in close)}?" if close else ""
    raise ValueError(f"unknown {name} {_brief(value)}{hint} (known: {', '.join(map(str, options))})")


def items(name: str, values, check) -> tuple:
    """``values`` (a non-empty list, tuple or 1-D array) as a tuple of ``check(name, item)`` for
    each item; a string, a dict, None, an empty or a nested sequence is refused naming ``name``."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        values = values.tolist()
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{name} must be a non-empty list or tuple (got {_brief(values)})")
    return tuple(check(name, value) for value in values)


def table(name: str, value, columns):
    """``value`` if it is a pandas DataFrame holding every one of ``columns``."""
    import pandas as pd

    if not isinstance(value, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame with columns {', '.join(columns)} "
                         f"(got {_brief(value)})")
    missing = [c for c in columns if c not in value.columns]
    if missing:
        raise ValueError(f"{name} lacks the columns {', '.join(missing)}")
    return value


def broadcast(**arrays) -> tuple:
    """The shape the named arrays broadcast to; if they do not, a ValueError naming them and their shapes."""
    shapes = {name: np.shape(value) for name, value in arrays.items()}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        shown = ", ".join(f"{name} {shape}" for name, shape in shapes.items() if shape != ())
        raise ValueError(f"shapes do not broadcast together: {shown}") from None


_SILENCED = contextvars.ContextVar("gpumodel_fp_warnings_silenced", default=False)


class _NotFinite(ValueError):
    """A model's result overflowed; an outer model re-raises it naming its own arguments."""


def finite_result(func):
    """Decorator for a model: numpy floating-point warnings are silenced inside it, and

    * a result holding NaN or inf raises ValueError naming the caller's numeric arguments
      (finite inputs whose result overflows float64, e.g. 2 m k n for m = k = n = 1e103);
    * OverflowError and ZeroDivisionError become that ValueError too;
    * numpy's broadcasting error becomes a ValueError naming the arrays and their shapes.
    """
    @functools.wraps(func)
    def checked(*args, **kwargs):
        try:
            if _SILENCED.get():  # an outer model already silenced the warnings
                result = func(*args, **kwargs)
            else:
                token = _SILENCED.set(True)
                try:
                    with np.errstate(all="ignore"):
                        result = func(*args, **kwargs)
                finally:
                    _SILENCED.reset(token)
        except (OverflowError, ZeroDivisionError, FloatingPointError, _NotFinite):
            raise _NotFinite(_overflow_message(func, args, kwargs)) from None
        except ValueError as err:
            if "broadcast" in str(err) and not _blames_only_own(func, args, kwargs, str(err)):
                arrays = {k: v for k, v in _numeric_arguments(func, args, kwargs).items()
                          if _shape(v)}
                broadcast(**arrays)  # raises naming them if they are the culprits
                if _names_a_parameter(func, str(err)):
                    raise
                raise ValueError(f"{func.__name__}: {err} (array arguments: "
                                 f"{', '.join(f'{k} {np.shape(v)}' for k, v in arrays.items()) or 'none'})") from None
            raise
        if not _all_finite(result):
            raise _NotFinite(_overflow_message(func, args, kwargs))
        return result

    return checked


def _all_finite(value, depth: int = 0) -> bool:
    if depth > 4 or value is None or isinstance(value, (str, bytes, bool, np.bool_, int)):
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isfinite(value))
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.all(np.isfinite(value)))
    if isinstance(value, dict):
        return all(_all_finite(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_all_finite(v, depth + 1) for v in value)
    return True


def _numeric_arguments(func, args, kwargs) -> dict:
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except TypeError:
        return {}
    return {name: value for name, value in bound.arguments.items()
            if name != "self" and value is not None and not callable(value)
            and not isinstance(value, (str, bytes, bool, np.bool_))}


_BLAMED_SHAPE = r"([^\s,:]+) (\((?:\d+,? ?)*\))"


def _blames_only_own(func, args, kwargs, message: str) -> bool:
    """Whether a broadcasting message names only ``func``'s own arguments, with their shapes.

    An inner model's message names its own parameters (``nbytes`` inside ``tpu_post_seconds``,
    or ``peak_flops`` holding another argument's shape); the outer model then checks its
    caller's arrays and names them instead.
    """
    import re

    blamed = re.findall(_BLAMED_SHAPE, message)
    given = _numeric_arguments(func, args, kwargs)
    return bool(blamed) and all(
        name in given and str(_shape(given[name])) == shape for name, shape in blamed)


def _shape(value) -> tuple | None:
    """``value``'s array shape, or None for what numpy cannot shape (ragged lists)."""
    try:
        return np.shape(value)
    except ValueError:
        return None


def _names_a_parameter(func, message: str) -> bool:
    import re

    names = [n for n in inspect.signature(func).parameters if n != "self"]
    return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", message) for n in names)


def _overflow_message(func, args, kwargs) -> str:
    numeric = _numeric_arguments(func, args, kwargs)
    if not numeric:
        names = [n for n in inspect.signature(func).parameters if n != "self"]
        return f"{func.__name__}: the result is not finite (overflows float64) for these {', '.join(names)}"
    extreme = {k: v for k, v in numeric.items() if _extreme(v)}
    culprits = extreme or numeric  # the astronomically large or small ones, if any stand out
    shown = ", ".join(f"{k}={_brief(v)}" for k, v in culprits.items())
    verb = "is" if len(culprits) == 1 else "are"
    return (f"{func.__name__}: the result overflows float64 (inf or nan): {', '.join(culprits)} {verb} too large "
            f"or too small in magnitude (got {shown})")


def _extreme(value) -> bool:
    """Whether any element of ``value`` has a magnitude beyond 1e100 or below 1e-100 (but not 0)."""
    try:
        magnitude = np.abs(np.asarray(value, dtype=float))
    except (TypeError, ValueError, OverflowError):
        return True
    return bool(np.any((magnitude >= 1e100) | ((magnitude > 0) & (magnitude <= 1e-100))))


def _brief(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        return f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, np.ndarray) and value.size > 4:
        return f"an array of shape {value.shape}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _normal(text) -> str:
    if isinstance(text, str):
        return _normal_str(text)
    return _normal_str(str(text))


@functools.lru_cache(maxsize=4096)
def _normal_str(text: str) -> str:
    """``text`` lower-cased, only letters, digits, dots and slashes (cached: names recur)."""
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch in "./")


def _show(arr: np.ndarray) -> str:
    if arr.ndim == 0:
        return f"{float(arr):g}"
    if arr.size == 0:
        return "an empty array"
    bad = arr.ravel()
    return f"array with values from {bad.min():g} to {bad.max():g}"


#: Seconds :func:`read_bytes` waits for a writer that holds a named pipe open without writing.
READ_TIMEOUT = 5.0


def read_bytes(path: str, limit: int, timeout: float = READ_TIMEOUT) -> bytes:
    """Up to ``limit + 1`` bytes of the file at ``path`` (one more than allowed, so a caller can
    tell it is too large), or a ValueError saying why it cannot be read. The file is opened
    without blocking: a named pipe nobody writes to reads as empty instead of hanging, and one
    whose writer holds it open without finishing is given up after ``timeout`` seconds."""
    import os
    import select
    import stat
    import time

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as err:
        raise ValueError(getattr(err, "strerror", None) or str(err)) from None
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # a plain file: one read, no second copy
            os.set_blocking(fd, True)
            with open(os.dup(fd), "rb") as handle:
                return handle.read(limit + 1)
        while size <= limit:
            try:
                chunk = os.read(fd, min(limit + 1 - size, 2**20))
            except BlockingIOError:  # a writer holds the pipe open but has written nothing yet
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ValueError(f"nothing more was written to it within {timeout:g} s") from None
                select.select([fd], [], [], min(left, 0.1))
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if time.monotonic() > deadline:
                raise ValueError(f"reading it took longer than {timeout:g} s")
    except OSError as err:
        raise ValueError(getattr(err, "strerror", None) or str(err)) from None
    finally:
        os.close(fd)
    return b"".join(chunks)
