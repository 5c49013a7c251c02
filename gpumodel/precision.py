"""Number formats from FP32 to FP4: their ranges, rounding to them, and what the rounding costs.

Values are plain numbers (float64 arrays in and out); sizes are element counts; storage is in
bytes; speedups are time ratios. Rounding to bfloat16, FP8 and FP4 is done by ``ml_dtypes``
(imported when a function needs it, so ``import gpumodel`` does not load it); TF32 has no
numpy type, so it is emulated on FP32 bit patterns (:func:`tf32_round`).
Explained in :doc:`/book/low_precision`.
"""
from __future__ import annotations

import functools

import numpy as np

from . import _checks, workloads

#: Every format the chapter compares, widest first.
FORMATS = ("fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8", "int4", "fp4_e2m1", "nf4")

#: Formats with few enough values to list them all (:func:`representable_values`).
SMALL_FORMATS = ("fp8_e4m3", "fp8_e5m2", "int8", "int4", "fp4_e2m1", "nf4")

FP8_FORMATS = ("fp8_e4m3", "fp8_e5m2")

#: The 16 values of the 4-bit NormalFloat code book (QLoRA), as published in bitsandbytes'
#: ``get_4bit_type("nf4")`` (bitsandbytes/functional.py). Quantiles of N(0, 1) scaled to [-1, 1],
#: with an exact zero; used after scaling a block by its absolute maximum.
NF4_CODE_BOOK = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)

# ml_dtypes type names of the formats it implements.
_ML_DTYPES = {"bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2",
              "fp4_e2m1": "float4_e2m1fn", "int4": "int4"}
# What a cast does with a value beyond the largest finite one.
_OVERFLOW = {"fp32": "inf", "tf32": "inf", "fp16": "inf", "bf16": "inf", "fp8_e4m3": "nan",
             "fp8_e5m2": "inf", "int8": "saturate", "int4": "saturate", "fp4_e2m1": "saturate",
             "nf4": "saturate"}


def _format(name) -> str:
    return _checks.choice("format name", name, FORMATS)


def _md_type(name: str):
    import ml_dtypes

    return getattr(ml_dtypes, _ML_DTYPES[name])


def _ieee_layout(exponent_bits: int, mantissa_bits: int) -> dict:
    """Range and spacing of an IEEE-754-style binary format (bias 2**(e-1) - 1, top exponent for inf/nan)."""
    bias = 2 ** (exponent_bits - 1) - 1
    max_exponent = 2**exponent_bits - 2 - bias
    return {"max": (2.0 - 2.0**-mantissa_bits) * 2.0**max_exponent,
            "smallest_normal": 2.0 ** (1 - bias),
            "smallest_subnormal": 2.0 ** (1 - bias - mantissa_bits),
            "eps": 2.0**-mantissa_bits}


def format_info(name: str) -> dict:
    """Facts about one number format, computed from the format, never typed in.

    Keys: ``name``, ``kind`` ("float", "int" or "code book"), ``bits`` (bits that carry the value),
    ``storage_bits`` (bits one element takes in memory: TF32 sits in a 32-bit word),
    ``exponent_bits``, ``mantissa_bits`` (stored fraction bits, sign excluded; an integer is read as
    a fixed-point number with ``bits - 1`` value bits and no exponent), ``max`` and ``min`` (largest
    and most negative finite values), ``smallest_normal``, ``smallest_subnormal`` (smallest positive
    value), ``eps`` (gap between 1 and the next value: 2**-mantissa_bits; 1 for integers),
    ``has_inf``, ``has_nan`` and ``overflow`` ("inf", "nan" or "saturate": what :func:`quantize`
    returns for a value past ``max``). Sources: ``numpy.finfo`` (fp32, fp16), ``ml_dtypes.finfo``
    / ``ml_dtypes.iinfo`` (bf16, fp8, fp4, int4), ``numpy.iinfo`` (int8), the 1-8-10 bit layout
    (tf32) and the code book (nf4: fields that have no meaning for a code book are ``None``).
    Explained in :doc:`/book/low_precision` (section "A table of formats").
    """
    name = _format(name)
    info = {"name": name, "kind": "float", "overflow": _OVERFLOW[name]}
    if name in ("fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1"):
        if name in ("fp32", "fp16"):
            f = np.finfo(np.float32 if name == "fp32" else np.float16)
        else:
            import ml_dtypes

            f = ml_dtypes.finfo(_md_type(name))
        info.update(bits=int(f.bits), exponent_bits=int(f.nexp), mantissa_bits=int(f.nmant),
                    max=float(f.max), min=float(f.min), smallest_normal=float(f.smallest_normal),
                    smallest_subnormal=float(f.smallest_subnormal), eps=float(f.eps))
    elif name == "tf32":
        layout = _ieee_layout(8, 10)
        info.update(bits=19, exponent_bits=8, mantissa_bits=10, min=-layout["max"], **layout)
    elif name in ("int8", "int4"):
        if name == "int8":
            i = np.iinfo(np.int8)
        else:
            import ml_dtypes

            i = ml_dtypes.iinfo(_md_type(name))
        info.update(kind="int", bits=int(i.bits), exponent_bits=0, mantissa_bits=int(i.bits) - 1,
                    max=float(i.max), min=float(i.min), smallest_normal=1.0,
                    smallest_subnormal=1.0, eps=1.0)
    else:  # nf4
        book = np.array(NF4_CODE_BOOK)
        smallest = float(book[book > 0].min())
        info.update(kind="code book", bits=4, exponent_bits=None, mantissa_bits=None,
                    max=float(book.max()), min=float(book.min()), smallest_normal=smallest,
                    smallest_subnormal=smallest, eps=None)
    info["storage_bits"] = 32 if name == "tf32" else info["bits"]
    info["has_inf"] = info["overflow"] == "inf"
    info["has_nan"] = info["kind"] == "float" and name != "fp4_e2m1"
    order = ("name", "kind", "bits", "storage_bits", "exponent_bits", "mantissa_bits", "max", "min",
             "smallest_normal", "smallest_subnormal", "eps", "has_inf", "has_nan", "overflow")
    return {k: info[k] for k in order}


def format_table(names=FORMATS) -> list[dict]:
    """:func:`format_info` for each of ``names`` (default: every format), in that order.

    Explained in :doc:`/book/low_precision` (section "A table of formats").
    """
    if isinstance(names, str):
        names = (names,)
    try:
        return [format_info(n) for n in names]
    except (TypeError, ValueError) as err:
        raise ValueError(f"names must be format names (one, or a sequence of them): {err}") from None


def _values(name: str, x) -> np.ndarray:
    """Real numbers as float64; inf and nan allowed (they pass through the casts), other types refused."""
    return _checks.as_array(name, x, allow_nonfinite=True)


def _round_fp32_mantissa(x, kept_bits: int) -> np.ndarray:
    """Round float32 values to ``kept_bits`` fraction bits, nearest-even, on the bit pattern."""
    x32 = np.asarray(x, dtype=np.float32)
    bits = x32.view(np.uint32)
    drop = 23 - kept_bits
    lsb = (bits >> np.uint32(drop)) & np.uint32(1)
    # Adding half an ulp (minus one, plus the kept lsb) then truncating is round-half-to-even;
    # a carry out of the fraction moves the exponent up (and from the largest finite value to inf).
    rounded = (bits + np.uint32((1 << (drop - 1)) - 1) + lsb) & np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)
    out = rounded.view(np.float32)
    return np.where(np.isnan(x32), x32, out)


def tf32_round(x) -> np.ndarray:
    """``x`` rounded to TF32 (1 sign, 8 exponent, 10 fraction bits), as float64.

    The input is first rounded to float32 (tensors live in FP32; TF32 is how tensor cores read
    them), then the low 13 fraction bits are rounded away, to nearest with ties to even.
    FP32 subnormals round to TF32's subnormal grid (spacing 2**-136), ±0, ±inf and nan pass
    through, and values within half a TF32 ulp of the FP32 maximum (3.4028235e38 itself included)
    round up to inf, as in any IEEE format. Hardware varies: NVIDIA's PTX conversion
    ``cvt.rna.tf32.f32`` (sm_80 on) rounds ties away from zero, ``cvt.rn.tf32.f32`` (sm_90 on)
    ties to even; this model uses the IEEE default, as for every other format.
    Explained in :doc:`/book/low_precision` (section "TF32").
    """
    x = _values("x", x)
    with np.errstate(over="ignore", invalid="ignore"):
        return _round_fp32_mantissa(x.astype(np.float32), 10).astype(np.float64)


def quantize(x, name: str) -> np.ndarray:
    """``x`` rounded to format ``name``, returned as float64 (same shape as ``x``).

    Floating-point formats round the float32 value of ``x`` to nearest, ties to even (numpy for
    fp16, :func:`tf32_round` for tf32, ``ml_dtypes`` for bf16, fp8 and fp4; ``ml_dtypes`` itself
    goes through float32, so the extra step only makes that explicit). Past the largest value:
    fp32, tf32, fp16, bf16 and fp8_e5m2 give ±inf; fp8_e4m3 (the "fn" variant: no inf) gives nan;
    fp4_e2m1 saturates at ±6 (and nan stays nan here; the raw ``ml_dtypes`` cast turns it into -0).
    Integers round half to even and saturate at their range (numpy's own cast would wrap around);
    nf4 takes the nearest code-book value (ties to the smaller one), saturating at ±1. No scaling
    is applied: see :func:`blockwise_quantize` for that.
    Explained in :doc:`/book/low_precision` (section "Rounding to a format").
    """
    name = _format(name)
    x = _values("x", x)
    with np.errstate(over="ignore", invalid="ignore"):
        if name in ("int8", "int4"):
            info = format_info(name)
            return np.clip(np.rint(x), info["min"], info["max"])
        if name == "nf4":
            book = np.array(NF4_CODE_BOOK)
            index = np.searchsorted((book[1:] + book[:-1]) / 2, np.nan_to_num(x))
            return np.where(np.isnan(x), np.nan, book[index])
        if name == "tf32":
            return tf32_round(x)
        x32 = x.astype(np.float32)
        if name == "fp32":
            return x32.astype(np.float64)
        if name == "fp16":
            return x32.astype(np.float16).astype(np.float64)
        out = x32.astype(_md_type(name)).astype(np.float64)
        return np.where(np.isnan(x), np.nan, out) if name == "fp4_e2m1" else out


def representable_values(name: str) -> np.ndarray:
    """Every finite value of an 8-bit-or-smaller format, sorted ascending (float64; -0 and +0 are one 0).

    fp8 and fp4 are enumerated from all their bit patterns through ``ml_dtypes``; nan and inf
    patterns are dropped. fp8_e4m3 has 253 finite values, fp8_e5m2 247, fp4_e2m1 15, int8 256,
    int4 16, nf4 16. Explained in :doc:`/book/low_precision` (section "Every value of an 8- or 4-bit float").
    """
    name = _checks.choice("format name", name, SMALL_FORMATS)
    if name in ("int8", "int4"):
        info = format_info(name)
        return np.arange(info["min"], info["max"] + 1.0)
    if name == "nf4":
        return np.array(NF4_CODE_BOOK)
    patterns = np.arange(16 if name == "fp4_e2m1" else 256, dtype=np.uint8)
    values = patterns.view(_md_type(name)).astype(np.float64)
    return np.unique(values[np.isfinite(values)] + 0.0)


# --- loss scaling ---------------------------------------------------------------------------

def _count(name: str, value, maximum=None) -> int:
    return _checks.count(name, value, maximum)


def _spread(name: str, value) -> float:
    """A standard deviation: one number >= 0 (-0.0 read as 0, which numpy's sampler refuses)."""
    return float(_checks.non_negative(name, _checks.scalar(name, value))) + 0.0


#: Most steps a loss-scaling run takes (10**7 steps run in a few seconds).
MAX_STEPS = 10**7
#: Most values a sampling function generates in one call (beyond it, seconds and gigabytes).
MAX_SAMPLES = 10**7


@_checks.finite_result
def gradient_sample(n, log10_mean, log10_std, seed=0) -> np.ndarray:
    """``n`` synthetic gradient values: magnitudes 10**N(log10_mean, log10_std), random signs.

    A stand-in for the gradient histograms of mixed-precision training (most values are tiny;
    their log-magnitudes spread over many decades). Deterministic for a ``seed``; float64 array.
    Explained in :doc:`/book/low_precision` (section "Loss scaling").
    """
    n = _count("n", n, MAX_SAMPLES)
    mean = _checks.scalar("log10_mean", log10_mean)
    std = _spread("log10_std", log10_std)
    rng = np.random.default_rng(_checks.seed(seed))
    magnitudes = 10.0 ** rng.normal(mean, std, n)
    return np.where(rng.random(n) < 0.5, -magnitudes, magnitudes)


def _overflowed(scaled: np.ndarray, quantized: np.ndarray, name: str) -> np.ndarray:
    """Lost to overflow: inf/nan after the cast, or (saturating formats) clipped at the maximum."""
    info = format_info(name)
    if info["overflow"] == "saturate":
        return np.abs(scaled) > info["max"]
    return ~np.isfinite(quantized)


@_checks.finite_result
def overflow_underflow_fractions(grads, name: str, loss_scale=1.0):
    """Fractions of ``grads`` lost when scaled by ``loss_scale`` and cast to format ``name``.

    Returns ``(overflow, underflow)``: the fraction that became inf/nan (or, in a saturating
    format, was clipped at its maximum) and the fraction of nonzero values that became exactly 0.
    ``loss_scale`` (> 0) may be an array; both results then have its shape.
    Explained in :doc:`/book/low_precision` (section "Loss scaling").
    """
    name = _format(name)
    grads = _checks.as_array("grads", grads).ravel()
    if grads.size == 0:
        raise ValueError("grads must hold at least one value (got an empty array)")
    scales = _checks.positive("loss_scale", loss_scale)
    flat = scales.ravel()
    over, under = np.zeros(flat.size), np.zeros(flat.size)
    # quantize is monotone in |x| on each side of 0, so whether grads * s flushes to zero or
    # overflows is decided by two thresholds per sign (found once, exactly); counting the sorted
    # magnitudes below them gives the same fractions as casting every value for every scale.
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        for sign, values in ((1.0, grads[grads > 0]), (-1.0, -grads[grads < 0])):
            if values.size == 0:
                continue
            magnitudes, counts = np.unique(values, return_counts=True)
            cumulative = np.concatenate([[0], np.cumsum(counts)])
            zero_limit, keep_limit = _loss_thresholds(name, sign)
            under += cumulative[_count_at_most(magnitudes, flat, zero_limit)]
            over += cumulative[-1] - cumulative[_count_at_most(magnitudes, flat, keep_limit)]
    over, under = (over / grads.size).reshape(scales.shape), (under / grads.size).reshape(scales.shape)
    if scales.ndim == 0:
        return float(over), float(under)
    return over, under


_INF_BITS = int(np.array(np.inf).view(np.int64))


def _bits_to_float(bits: int) -> float:
    return float(np.array(bits, dtype=np.int64).view(np.float64))


@functools.lru_cache(maxsize=None)
def _loss_thresholds(name: str, sign: float) -> tuple[float, float]:
    """For values ``sign * t`` (t >= 0): the largest t that :func:`quantize` flushes to 0, and the
    largest t that does not overflow (:func:`_overflowed`). Exact: bisection over float64 bit
    patterns (ordered like the values they encode), evaluating the cast itself."""
    def lost(bits: int) -> tuple[bool, bool]:
        y = np.array([sign * _bits_to_float(bits)])
        q = quantize(y, name)
        return bool(q[0] == 0), bool(_overflowed(y, q, name)[0])

    limits = []
    for which in (0, 1):  # 0: flushed to zero (true up to a threshold), 1: kept (not overflowed)
        lo, hi = 0, _INF_BITS
        if (lost(hi)[0] if which == 0 else not lost(hi)[1]):
            limits.append(np.inf)
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            ok = lost(mid)[0] if which == 0 else not lost(mid)[1]
            lo, hi = (mid, hi) if ok else (lo, mid)
        limits.append(_bits_to_float(lo))
    return limits[0], limits[1]


def _count_at_most(magnitudes: np.ndarray, scales: np.ndarray, limit: float) -> np.ndarray:
    """For each scale s, how many of the sorted ``magnitudes`` m have fl(m * s) <= ``limit``.

    fl(m * s) grows with m, so the answer is a prefix length: searchsorted on limit / s, then
    corrected for the rounding of the product (a few steps at most; a slow exact path otherwise)."""
    n = magnitudes.size
    k = np.searchsorted(magnitudes, limit / scales, side="right")
    for _ in range(8):
        down = (k > 0) & (magnitudes[np.maximum(k - 1, 0)] * scales > limit)
        up = (k < n) & (magnitudes[np.minimum(k, n - 1)] * scales <= limit)
        if not (down.any() or up.any()):
            return k
        k = k - down + up
    for i in np.flatnonzero((k > 0) & (magnitudes[np.maximum(k - 1, 0)] * scales > limit)
                            | (k < n) & (magnitudes[np.minimum(k, n - 1)] * scales <= limit)):
        k[i] = np.searchsorted(magnitudes * scales[i], limit, side="right")
    return k


def _scale_rule(init_scale, growth_interval, backoff, growth):
    return (float(_checks.positive("init_scale", _checks.scalar("init_scale", init_scale))),
            _count("growth_interval", growth_interval),
            float(_checks.in_range("backoff", _checks.positive("backoff", _checks.scalar("backoff", backoff)),
                                   0.0, 1.0)),
            float(_checks.in_range("growth", _checks.scalar("growth", growth), 1.0, np.inf)))


@_checks.finite_result
def dynamic_loss_scale_trace(overflow, init_scale=2.0**16, growth_interval=2000, backoff=0.5, growth=2.0):
    """The loss scale used at each step, given which steps overflowed (1-D booleans).

    The standard dynamic rule (PyTorch's ``GradScaler``, whose defaults these are): a step whose
    gradients overflow is skipped and the scale is multiplied by ``backoff``; after
    ``growth_interval`` consecutive clean steps it is multiplied by ``growth``. Returns a float64
    array as long as ``overflow`` (at most :data:`MAX_STEPS` steps).
    Explained in :doc:`/book/low_precision` (section "Dynamic loss scaling").
    """
    try:
        flags = np.asarray(overflow)
    except (TypeError, ValueError):  # ragged nested lists
        flags = None
    if flags is None or flags.ndim != 1 or flags.dtype.kind not in "biu" or not np.isin(flags, (0, 1)).all():
        raise ValueError("overflow must be a 1-D array of booleans (one per step)")
    if flags.size > MAX_STEPS:
        raise ValueError(f"overflow must hold at most {MAX_STEPS:g} steps (got {flags.size})")
    scale, interval, backoff, growth = _scale_rule(init_scale, growth_interval, backoff, growth)
    scales = []
    clean = 0
    for flag in flags.astype(bool).tolist():
        scales.append(scale)
        scale, clean = _next_scale(scale, clean, flag, interval, backoff, growth)
    return np.array(scales, dtype=float)


def _next_scale(scale, clean, overflowed, interval, backoff, growth):
    """One step of the dynamic rule: back off on overflow, grow after ``interval`` clean steps."""
    if overflowed:
        return scale * backoff, 0
    clean += 1
    if clean == interval:
        return scale * growth, 0
    return scale, clean


@_checks.finite_result
def dynamic_loss_scale_run(grad_max, name="fp16", init_scale=2.0**16, growth_interval=2000,
                           backoff=0.5, growth=2.0):
    """Closed-loop dynamic loss scaling: the scale per step and whether that step overflowed.

    ``grad_max`` (> 0, one per step) is the largest gradient magnitude of each step; a step
    overflows when ``grad_max * scale`` cast to ``name`` overflows (see
    :func:`overflow_underflow_fractions`). The scale then follows :func:`dynamic_loss_scale_trace`'s
    rule, so it settles just under ``max / grad_max``. Returns ``(scales, overflowed)``. At most
    :data:`MAX_STEPS` steps; a step is decided by one comparison with the format's exact
    overflow threshold, so 10**6 steps take well under a second.
    Explained in :doc:`/book/low_precision` (section "Dynamic loss scaling").
    """
    name = _format(name)
    peaks = _checks.positive("grad_max", grad_max)
    if peaks.ndim != 1:
        raise ValueError("grad_max must be a 1-D array (one value per step)")
    if peaks.size > MAX_STEPS:
        raise ValueError(f"grad_max must hold at most {MAX_STEPS:g} steps (got {peaks.size})")
    scale, interval, backoff, growth = _scale_rule(init_scale, growth_interval, backoff, growth)
    keep_limit = _loss_thresholds(name, 1.0)[1]
    scales, flags = [], []
    clean = 0
    for peak in peaks.tolist():
        scales.append(scale)
        flags.append(peak * scale > keep_limit)
        scale, clean = _next_scale(scale, clean, flags[-1], interval, backoff, growth)
    return np.array(scales, dtype=float), np.array(flags, dtype=bool)


# --- quantization error ---------------------------------------------------------------------

def _matrix(name: str, value) -> np.ndarray:
    arr = _checks.as_array(name, value)
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (got shape {arr.shape})")
    return arr


def _pair(X, W):
    X, W = _matrix("X", X), _matrix("W", W)
    if X.shape[1] != W.shape[0]:
        raise ValueError(f"W must have as many rows as X has columns ({X.shape[1]}; got {W.shape[0]})")
    return X, W


def _absmax_scale(x: np.ndarray, target: float, axis) -> np.ndarray:
    absmax = np.max(np.abs(x), axis=axis, keepdims=True) if x.size else np.zeros(1)
    return np.where(absmax > 0, target / np.where(absmax > 0, absmax, 1.0), 1.0)


def _tiny_shift(x: np.ndarray, axis) -> np.ndarray:
    """Power-of-two exponents that bring slices whose absolute maximum is below 2**-900 (or
    above 2**900) to [0.5, 1).

    ``target / absmax`` would overflow for them (448 / 1e-306 is inf). Scaling by a power of two
    is exact, and it is 0 (no change at all) for every other slice.
    """
    absmax = np.max(np.abs(x), axis=axis, keepdims=True) if x.size else np.zeros(1)
    return _lift_exponents(absmax)


def _lift_exponents(absmax: np.ndarray) -> np.ndarray:
    """For each maximum below 2**-900 or above 2**900, the power of two that brings it to
    [0.5, 1); 0 elsewhere (a scale such as 1 / 1e308 would be subnormal and inexact)."""
    extreme = (absmax > 0) & ((absmax < 2.0**-900) | (absmax > 2.0**900))
    return np.where(extreme, -np.frexp(absmax)[1], 0)


@_checks.finite_result
def absmax_quantize_int8(X, axis=-1) -> np.ndarray:
    """``X`` quantized to int8 with absmax scaling and dequantized back (float64, same shape).

    Each slice along ``axis`` (``axis=-1``: each row; ``0``: each column; ``None``: the whole
    tensor) is scaled so its largest magnitude maps to 127, rounded half to even, and scaled back.
    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    X = _checks.as_array("X", X)
    if axis is not None and X.ndim == 0:
        raise ValueError(f"X must be an array for axis={axis!r} (got the single number "
                         f"{float(X):g}); pass axis=None to scale it by itself")
    if isinstance(axis, np.ndarray) and axis.ndim == 0 and axis.dtype.kind in "iu":
        axis = axis.item()  # a 0-d array of a whole number, as numpy takes it
    if axis is not None:
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise ValueError(f"axis must be None or a whole number (got {axis!r})")
        axis = int(axis)
        if not -X.ndim <= axis < X.ndim:
            raise ValueError(f"axis must be None or in [{-X.ndim}, {X.ndim - 1}] (got {axis})")
    shift = _tiny_shift(X, axis)
    X = np.ldexp(X, shift)
    scale = _absmax_scale(X, 127.0, axis)
    return np.ldexp(np.rint(X * scale) / scale, -shift)


def _int8_product(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    ex, ew = _tiny_shift(X, 1), _tiny_shift(W, 0)
    X, W = np.ldexp(X, ex), np.ldexp(W, ew)
    sx, sw = _absmax_scale(X, 127.0, 1), _absmax_scale(W, 127.0, 0)
    product = (np.rint(X * sx) @ np.rint(W * sw)) / (sx * sw)  # integer products are exact in float64
    return np.ldexp(product, -(ex + ew))


@_checks.finite_result
def absmax_int8_matmul(X, W) -> np.ndarray:
    """``X @ W`` with vector-wise int8 quantization: absmax per row of ``X`` and per column of ``W``.

    Integer products and sums are exact; the result is dequantized by the outer product of the
    scales (float64). The baseline that outlier features break.
    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    X, W = _pair(X, W)
    return _int8_product(X, W)


@_checks.finite_result
def mixed_int8_matmul(X, W, threshold=6.0) -> np.ndarray:
    """``X @ W`` the LLM.int8() way: outlier feature columns in 16-bit, the rest vector-wise int8.

    Columns of ``X`` with any ``|value| >= threshold`` (and the matching rows of ``W``) are cast
    to fp16 and multiplied exactly; the other columns go through :func:`absmax_int8_matmul`'s
    scheme. The two parts are added (float64, shape ``(X rows, W columns)``).
    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    X, W = _pair(X, W)
    threshold = float(_checks.positive("threshold", _checks.scalar("threshold", threshold)))
    outliers = np.any(np.abs(X) >= threshold, axis=0)
    out = np.zeros((X.shape[0], W.shape[1]))
    if outliers.any():
        x16, w16 = quantize(X[:, outliers], "fp16"), quantize(W[outliers], "fp16")
        if not (np.isfinite(x16).all() and np.isfinite(w16).all()):
            raise ValueError("X and W must stay within fp16's range (|value| <= 65504) in the outlier columns "
                             "that LLM.int8() keeps in 16-bit (got |X| up to "
                             f"{np.abs(X[:, outliers]).max():g}, |W| up to {np.abs(W[outliers]).max():g})")
        out += x16 @ w16
    if (~outliers).any():
        out += _int8_product(X[:, ~outliers], W[~outliers])
    return out


@_checks.finite_result
def fp8_matmul(X, W, name="fp8_e4m3") -> np.ndarray:
    """``X @ W`` with both operands cast to FP8 after per-tensor scaling, multiplied in float64.

    Each tensor is scaled so its largest magnitude lands on the format's maximum (448 for e4m3,
    57344 for e5m2: torchao's "tensorwise" recipe), rounded, and scaled back.
    Explained in :doc:`/book/low_precision` (section "FP8 with per-tensor scaling").
    """
    name = _checks.choice("format name", name, FP8_FORMATS)
    X, W = _pair(X, W)
    top = format_info(name)["max"]
    ex, ew = _tiny_shift(X, None), _tiny_shift(W, None)
    X, W = np.ldexp(X, ex), np.ldexp(W, ew)
    sx, sw = _absmax_scale(X, top, None), _absmax_scale(W, top, None)
    return np.ldexp(quantize(X * sx, name) / sx, -ex) @ np.ldexp(quantize(W * sw, name) / sw, -ew)


@_checks.finite_result
def matmul_relative_error(approx, exact) -> float:
    """Relative Frobenius error ``||approx - exact|| / ||exact||`` (dimensionless).

    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    approx, exact = _checks.as_array("approx", approx), _checks.as_array("exact", exact)
    if approx.shape != exact.shape:
        raise ValueError(f"approx must have the shape of exact {exact.shape} (got {approx.shape})")
    norm, e_norm = _scaled_norm(exact)
    if norm == 0:
        raise ValueError("exact must not be all zeros")
    half = 1 if max(np.abs(approx).max(), np.abs(exact).max()) > 2.0**1000 else 0  # the difference may overflow
    error, e_error = _scaled_norm(np.ldexp(approx, -half) - np.ldexp(exact, -half))
    return float(np.ldexp(error / norm, e_error + half - e_norm))


def _scaled_norm(v: np.ndarray) -> tuple[float, int]:
    """sqrt(sum(v**2)) as (value, e), the norm being value * 2**e: squares neither overflow nor underflow.

    e is 0 unless the largest |v| is outside [2**-450, 2**450]; then v is scaled by a power of two
    (exact). Not np.linalg.norm: its BLAS call stalls under load.
    """
    top = np.abs(v).max() if v.size else 0.0
    e = int(np.frexp(top)[1]) if top > 0 and not 2.0**-450 <= top <= 2.0**450 else 0
    return np.sqrt(np.sum(np.square(np.ldexp(v, -e)))), e


@_checks.finite_result
def outlier_activations(rows, cols, n_outlier_cols, outlier_scale=20.0, seed=0) -> np.ndarray:
    """A ``rows`` x ``cols`` activation matrix with a few large-magnitude feature columns.

    Entries are standard normal, except ``n_outlier_cols`` randomly chosen columns, which are
    normal with standard deviation ``outlier_scale``: the systematic outlier features that
    LLM.int8() found in every large transformer. Deterministic for a ``seed`` (float64).
    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    rows, cols = _count("rows", rows), _count("cols", cols)
    if rows * cols > MAX_SAMPLES:
        raise ValueError(f"rows x cols must be at most {MAX_SAMPLES:g} values (got rows={rows}, cols={cols})")
    n_out = float(_checks.in_range("n_outlier_cols", _checks.scalar("n_outlier_cols", n_outlier_cols), 0, cols))
    if n_out != int(n_out):
        raise ValueError(f"n_outlier_cols must be a whole number in [0, {cols}] (got {n_outlier_cols!r})")
    scale = float(_checks.positive("outlier_scale", _checks.scalar("outlier_scale", outlier_scale)))
    rng = np.random.default_rng(_checks.seed(seed))
    X = rng.standard_normal((rows, cols))
    chosen = rng.choice(cols, size=int(n_out), replace=False)
    X[:, chosen] *= scale
    return X


@_checks.finite_result
def blockwise_quantize(x, name: str, block_size=64) -> np.ndarray:
    """``x`` quantized to ``name`` in blocks with absmax scaling, then scaled back (float64, x's shape).

    ``x`` is flattened and cut into blocks of ``block_size`` values (the last may be shorter);
    each block is multiplied so its largest magnitude maps to the format's maximum (int4: 7,
    symmetric; fp4_e2m1: 6; nf4: 1), rounded with :func:`quantize`, and divided back.
    Explained in :doc:`/book/low_precision` (section "FP4 versus INT4, bit for bit").
    """
    name = _format(name)
    x = _checks.as_array("x", x)
    size = _count("block_size", block_size)
    if x.size == 0:
        return x.copy()
    return scaled_quantize(x.reshape(1, -1), name, 1, size, "fp32").reshape(x.shape)


@_checks.finite_result
def quantization_mse(x, name: str, block_size=64) -> float:
    """Mean squared error of :func:`blockwise_quantize` on ``x`` (in x's units squared).

    Explained in :doc:`/book/low_precision` (section "FP4 versus INT4, bit for bit").
    """
    x = _checks.as_array("x", x)
    if x.size == 0:
        raise ValueError("x must hold at least one value (got an empty array)")
    return float(np.mean((blockwise_quantize(x, name, block_size) - x) ** 2))


# --- speed ----------------------------------------------------------------------------------

@_checks.finite_result
def bytes_per_element(name: str, block_size=None, scale_bytes=4.0) -> float:
    """Memory per element of format ``name``, in bytes (fp32 4, tf32 4, fp16/bf16 2, fp8/int8 1, 4-bit 0.5).

    With ``block_size``, adds one ``scale_bytes`` scale per block (blockwise quantization's
    overhead: nf4 with a 4-byte absmax per 64 values costs 0.5 + 4/64 bytes).
    Explained in :doc:`/book/low_precision` (section "Bytes per element").
    """
    name = _format(name)
    size = format_info(name)["storage_bits"] / 8
    scale_bytes = _checks.non_negative("scale_bytes", scale_bytes)
    if block_size is not None:
        size = size + scale_bytes / _checks.positive_int("block_size", block_size)
    return size if np.ndim(size) else float(size)


@_checks.finite_result
def fp8_training_speedup(gemm_speedup, gemm_fraction, transpose_overhead_fraction=0.0):
    """End-to-end speedup of a training step when only its matrix multiplications get faster.

    Amdahl's law with a tax: in units of the 16-bit step time, the FP8 step takes
    ``(1 - gemm_fraction) + gemm_fraction / gemm_speedup + transpose_overhead_fraction``, where
    ``gemm_fraction`` (in [0, 1]) is the share of the 16-bit step spent in GEMMs and the overhead
    is the added time for casts, scale computation and the transposed FP8 copies that tensor cores
    without a transposed FP8 matmul need in the backward pass. Returns 1 / that time.
    Explained in :doc:`/book/low_precision` (section "From a faster GEMM to a faster training step").
    """
    s = _checks.positive("gemm_speedup", gemm_speedup)
    f = _checks.in_range("gemm_fraction", gemm_fraction, 0.0, 1.0)
    t = _checks.non_negative("transpose_overhead_fraction", transpose_overhead_fraction)
    return workloads.amdahl_speedup(s, f, t)


@_checks.finite_result
def gemm_fraction_needed(end_to_end_speedup, gemm_speedup, transpose_overhead_fraction=0.0):
    """The GEMM share of step time that :func:`fp8_training_speedup` needs to reach ``end_to_end_speedup``.

    Solves ``1 / E = 1 - f (1 - 1/s) + t`` for ``f``. A result above 1 means no GEMM share can
    reach that speedup. Explained in :doc:`/book/low_precision` (section "From a faster GEMM to a faster training step").
    """
    e = _checks.positive("end_to_end_speedup", end_to_end_speedup)
    s = _checks.positive("gemm_speedup", gemm_speedup)
    if np.any(s <= 1):
        raise ValueError("gemm_speedup must be > 1 to solve for a GEMM fraction")
    t = _checks.non_negative("transpose_overhead_fraction", transpose_overhead_fraction)
    return workloads._share_for(e, s, t)


@_checks.finite_result
def fp8_overhead_needed(end_to_end_speedup, gemm_speedup, gemm_fraction):
    """The overhead (share of the 16-bit step time) for which :func:`fp8_training_speedup` equals ``end_to_end_speedup``.

    Solves ``1 / E = (1 - f) + f / s + t`` for ``t``; a negative result means the measured speedup
    is higher than the GEMMs alone explain. Explained in :doc:`/book/low_precision` (section "From a faster GEMM to a faster training step").
    """
    e = _checks.positive("end_to_end_speedup", end_to_end_speedup)
    s = _checks.positive("gemm_speedup", gemm_speedup)
    f = _checks.in_range("gemm_fraction", gemm_fraction, 0.0, 1.0)
    return 1.0 / e - ((1.0 - f) + f / s)


# --- scales: format and granularity -----------------------------------------------------------

#: How a block's scale is stored: exactly (``"fp32"``), as a power of two (``"e8m0"``, the OCP MX
#: formats' shared exponent), or rounded to FP8 E4M3 under one FP32 tensor scale (``"e4m3"``,
#: NVFP4's two-level scheme).
SCALE_FORMATS = ("fp32", "e8m0", "e4m3")

#: Named scaling schemes: (block rows, block columns, scale format); ``None`` spans the whole
#: dimension. Per tensor and per row (or column) are torchao's "tensorwise" and "rowwise"
#: recipes; 1 x 128 (and 128 x 1 for the operand of the weight-gradient GEMM) and 128 x 128 are
#: DeepSeek-V3's activation and weight blocks; MX scales 32 values along a row by a power of two
#: (OCP MX v1.0); NVFP4 scales 16 values by an E4M3 number.
SCALING_SCHEMES = {
    "per tensor": (None, None, "fp32"),
    "per row": (1, None, "fp32"),
    "per column": (None, 1, "fp32"),
    "1x128 blocks": (1, 128, "fp32"),
    "128x1 blocks": (128, 1, "fp32"),
    "128x128 blocks": (128, 128, "fp32"),
    "MX (32, E8M0)": (1, 32, "e8m0"),
    "NVFP4 (16, E4M3)": (1, 16, "e4m3"),
}


def _block_dim(name: str, value, full: int) -> int:
    if value is None:
        return full
    return min(_count(name, value), full)


def _blocks(x, block_rows, block_cols):
    """``x`` as a checked 2-D array (a 1-D ``x`` is one row), its own shape and the block sizes."""
    x = _checks.as_array("x", x)
    shape = x.shape
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.size == 0:
        raise ValueError(f"x must be a non-empty 1-D or 2-D array (got shape {shape})")
    br = _block_dim("block_rows", block_rows, x.shape[0])
    bc = _block_dim("block_cols", block_cols, x.shape[1])
    return x, shape, br, bc


def _block_amax(x: np.ndarray, br: int, bc: int) -> np.ndarray:
    """Absolute maximum of each br x bc block of ``x``: one value per block."""
    rows, cols = x.shape
    magnitude = np.abs(x)
    if rows % br or cols % bc:
        padded = np.zeros((-(-rows // br) * br, -(-cols // bc) * bc))
        padded[:rows, :cols] = magnitude
        magnitude = padded
    blocks = magnitude.reshape(magnitude.shape[0] // br, br, magnitude.shape[1] // bc, bc)
    return blocks.max(axis=(1, 3))


def _expand(per_block: np.ndarray, br: int, bc: int, shape: tuple) -> np.ndarray:
    """One value per block repeated over the block's elements, cut to ``shape``."""
    rows, cols = per_block.shape
    full = np.broadcast_to(per_block[:, None, :, None], (rows, br, cols, bc))
    return full.reshape(rows * br, cols * bc)[:shape[0], :shape[1]]


def _block_scale(amax: np.ndarray, top: float, fmt: str) -> np.ndarray:
    """The scale of each block from its absolute maximum (see :func:`block_scales`)."""
    safe = np.where(amax > 0, amax, 1.0)
    if fmt == "fp32":
        scale = safe / top
    elif fmt == "e8m0":
        exponent = np.clip(np.floor(np.log2(safe)) - np.floor(np.log2(top)), -127, 127)
        scale = 2.0**exponent
    else:
        shift = _lift_exponents(amax.max())
        lifted = np.ldexp(safe, np.where(amax > 0, shift, 0))
        peak = float(np.ldexp(amax.max(), shift))
        tensor = peak / (top * 448.0) if peak > 0 else 1.0
        scale = np.ldexp(tensor * quantize(lifted / (top * tensor), "fp8_e4m3"), -shift)
    return np.where(amax > 0, scale, 1.0)


@_checks.finite_result
def block_scales(x, name: str, block_rows=None, block_cols=None, scale_format: str = "fp32"):
    """The scale each element of ``x`` is divided by before rounding to ``name`` (same shape as x).

    Blocks are ``block_rows`` x ``block_cols`` elements of the 2-D ``x`` (a 1-D ``x`` is one
    row; ``None`` = the whole dimension). With M the format's largest value and a a block's
    absolute maximum:

    - ``"fp32"``: a / M, so a maps exactly onto M;
    - ``"e8m0"``: 2**(floor(log2 a) - e_max), e_max = floor(log2 M) (the OCP MX rule: a lands in
      [2**e_max, 2**(e_max + 1)), and values above M are clamped);
    - ``"e4m3"``: a tensor scale s = A / (M x 448) for the tensor maximum A, times the block's
      a / (M s) rounded to E4M3 (NVFP4). A tensor whose maximum is below 2**-900 (above
      2**900) is moved by an exact power of two first, so s does not underflow (overflow).

    Blocks of zeros get scale 1.
    Explained in :doc:`/book/low_precision` (section "Scales: their format and their granularity").
    """
    name = _format(name)
    fmt = _checks.choice("scale_format", scale_format, SCALE_FORMATS)
    x2, shape, br, bc = _blocks(x, block_rows, block_cols)
    scale = _block_scale(_block_amax(x2, br, bc), format_info(name)["max"], fmt)
    return _expand(scale, br, bc, x2.shape).reshape(shape)


@_checks.finite_result
def block_maxima(x, block_rows=None, block_cols=None):
    """The absolute maximum of the block each element of ``x`` belongs to (same shape as x).

    Blocks are ``block_rows`` x ``block_cols`` elements of the 2-D ``x`` (a 1-D ``x`` is one row;
    ``None`` = the whole dimension; a block larger than x is all of it, never padded past the data).
    Explained in :doc:`/book/low_precision` (section "Scales: their format and their granularity").
    """
    x2, shape, br, bc = _blocks(x, block_rows, block_cols)
    return _expand(_block_amax(x2, br, bc), br, bc, x2.shape).reshape(shape)


@_checks.finite_result
def scaled_quantize(x, name: str, block_rows=None, block_cols=None, scale_format: str = "fp32"):
    """``x`` divided by its :func:`block_scales`, clamped to the format's range, rounded, and scaled back.

    The clamp is the saturating conversion the MX and NVFP4 specifications prescribe. An
    element whose scale underflowed to 0 (an E4M3 block scale far below the tensor maximum)
    becomes 0. Returns float64 in x's shape. Vectorized, one scale per block broadcast: a
    4096 x 4096 ``x`` takes about half a second on one core.
    Explained in :doc:`/book/low_precision` (section "Scales: their format and their granularity").
    """
    name = _format(name)
    fmt = _checks.choice("scale_format", scale_format, SCALE_FORMATS)
    x2, shape, br, bc = _blocks(x, block_rows, block_cols)
    top = format_info(name)["max"]
    amax = _block_amax(x2, br, bc)
    if fmt == "fp32":
        # An exact scale maps the block maximum a onto top: multiply by top / a (moving blocks
        # whose top / a would overflow or be subnormal by an exact power of two first).
        lift = _lift_exponents(amax)
        lifted = np.ldexp(amax, lift)
        inverse = np.where(lifted > 0, top / np.where(lifted > 0, lifted, 1.0), 1.0)
        shift = _expand(lift, br, bc, x2.shape)
        inverse = _expand(inverse, br, bc, x2.shape)
        out = quantize(np.clip(np.ldexp(x2, shift) * inverse, -top, top), name) / inverse
        return np.ldexp(out, -shift).reshape(shape)
    shift = _lift_exponents(amax.max()) if fmt == "e4m3" else 0
    if shift:
        x2, amax = np.ldexp(x2, shift), np.ldexp(amax, shift)
    scale = _block_scale(amax, top, fmt)
    rows, cols = x2.shape
    if rows % br or cols % bc:  # ragged edge blocks: every element's scale spelled out
        scale, blocks = _expand(scale, br, bc, x2.shape), x2
    else:  # one scale per block, broadcast (no full-size copy of the scales)
        scale, blocks = scale[:, None, :, None], x2.reshape(rows // br, br, cols // bc, bc)
    ratio = blocks / np.where(scale > 0, scale, 1.0)
    if not np.all(scale > 0):  # a scale that underflowed to 0: its elements become 0
        ratio = np.where(scale > 0, ratio, 0.0)
    out = quantize(np.clip(ratio, -top, top, out=ratio), name)
    out *= scale
    out = out.reshape(x2.shape)
    return (np.ldexp(out, -shift) if shift else out).reshape(shape)


@_checks.finite_result
def scheme_quantize(x, name: str, scheme: str):
    """:func:`scaled_quantize` with one of the named :data:`SCALING_SCHEMES`.

    Explained in :doc:`/book/low_precision` (section "Scales: their format and their granularity").
    """
    block_rows, block_cols, fmt = SCALING_SCHEMES[_checks.choice("scheme", scheme, SCALING_SCHEMES)]
    return scaled_quantize(x, name, block_rows, block_cols, fmt)


@_checks.finite_result
def gradient_matrix(rows, cols, log10_mean, log10_row_std, log10_within_std, seed=0) -> np.ndarray:
    """A ``rows`` x ``cols`` matrix of synthetic gradients whose magnitude varies from row to row.

    Row i has a typical magnitude 10**N(log10_mean, log10_row_std); within a row the magnitudes
    spread as 10**N(0, log10_within_std) around it; signs are random. Pooled, the values span
    sqrt(row_std**2 + within_std**2) decades per standard deviation, but one row spans only
    ``log10_within_std``: the structure per-row scales exploit. Deterministic for a ``seed``.
    Explained in :doc:`/book/low_precision` (section "Scales: their format and their granularity").
    """
    rows, cols = _count("rows", rows), _count("cols", cols)
    if rows * cols > MAX_SAMPLES:
        raise ValueError(f"rows x cols must be at most {MAX_SAMPLES:g} values (got rows={rows}, cols={cols})")
    mean = _checks.scalar("log10_mean", log10_mean)
    row_std = _spread("log10_row_std", log10_row_std)
    within = _spread("log10_within_std", log10_within_std)
    rng = np.random.default_rng(_checks.seed(seed))
    row_level = rng.normal(mean, row_std, (rows, 1))
    magnitude = 10.0 ** (row_level + rng.normal(0.0, within, (rows, cols)))
    return np.where(rng.random((rows, cols)) < 0.5, -magnitude, magnitude)


@_checks.finite_result
def cast_losses(x, name: str, scheme: str) -> dict:
    """What scaling ``x`` by ``scheme`` and rounding to ``name`` loses: a dict of fractions (0-1).

    ``lost_values``: nonzero elements that became 0; ``lost_norm``: the norm of those elements
    relative to the norm of ``x``; ``relative_error``: ||q - x|| / ||x|| over all elements.
    Explained in :doc:`/book/low_precision` (section "Scales: their format and their granularity").
    """
    q = scheme_quantize(x, name, scheme)
    x = np.asarray(x, dtype=float)
    peak = np.max(np.abs(x))
    if peak == 0:
        raise ValueError("x must not be all zeros")
    xs, qs = x / peak, q / peak
    norm = np.sqrt(np.sum(xs**2))
    lost = (xs != 0) & (qs == 0)
    return {"lost_values": float(np.mean(lost[xs != 0])),
            "lost_norm": float(np.sqrt(np.sum(xs[lost] ** 2)) / norm),
            "relative_error": float(np.sqrt(np.sum((qs - xs) ** 2)) / norm)}


@_checks.finite_result
def scheme_matmul(X, W, name: str, scheme: str) -> np.ndarray:
    """``X @ W`` with both operands rounded to ``name`` under the same :data:`SCALING_SCHEMES` entry.

    The scheme's blocks run along the inner dimension for both operands: rows of ``X`` and
    columns of ``W`` (so "per row" is vector-wise scaling, one scale per row of X and per column
    of W). The products are accumulated exactly in float64.
    Explained in :doc:`/book/low_precision` (section "Scales: their format and their granularity").
    """
    X = _checks.as_array("X", X)
    W = _checks.as_array("W", W)
    if X.ndim != 2 or W.ndim != 2 or X.size == 0 or W.size == 0:
        raise ValueError(f"X and W must be non-empty 2-D arrays (got shapes {X.shape} and {W.shape})")
    if X.shape[1] != W.shape[0]:
        raise ValueError(f"W must have as many rows as X has columns ({X.shape[1]}; got {W.shape[0]})")
    return scheme_quantize(X, name, scheme) @ scheme_quantize(W.T, name, scheme).T


@_checks.finite_result
def powers_of_two_spanned(name: str) -> float:
    """log2(largest finite value / smallest positive value) of format ``name``: the binades it covers.

    FP16 spans 40, E5M2 about 32, E4M3 about 18, BF16 about 260. A distribution of magnitudes
    wider than this cannot fit under any single scale.
    Explained in :doc:`/book/low_precision` (section "Loss scaling").
    """
    info = format_info(name)
    return float(np.log2(info["max"] / info["smallest_subnormal"]))


# --- today's FP4 and FP8 machinery ----------------------------------------------------------

#: Most values one call of :func:`stochastic_round` draws a random number for.
MAX_ROUNDED = 10**7
#: Largest Hadamard matrix :func:`random_hadamard` builds (2**12 x 2**12 float64 is 128 MiB).
MAX_HADAMARD = 2**12


@_checks.finite_result
def stochastic_round(x, name: str, seed=0) -> np.ndarray:
    """``x`` rounded to a neighbouring value of format ``name`` at random, unbiased (float64, x's shape).

    With lo <= x <= hi the two representable values of ``name`` around x (from
    :func:`representable_values`), x becomes hi with probability (x - lo) / (hi - lo) and lo
    otherwise, so the expected result is x itself; round-to-nearest (:func:`quantize`) instead
    sends every x closer to lo than to hi to lo. Values on the grid stay put; values beyond the
    format's range saturate to its largest (smallest) value, as a saturating cast does. ``name``
    is one of :data:`SMALL_FORMATS` (no scale is applied: divide by a block scale first).
    Deterministic for a whole-number ``seed``.
    Explained in :doc:`/book/low_precision` (section "Today's FP4 and FP8 machinery").
    """
    name = _checks.choice("format name", name, SMALL_FORMATS)
    x = _checks.as_array("x", x)
    if x.size > MAX_ROUNDED:
        raise ValueError(f"x must hold at most {MAX_ROUNDED:g} values (got {x.size})")
    rng = np.random.default_rng(_checks.seed(seed))
    grid = representable_values(name)
    clipped = np.clip(x, grid[0], grid[-1])
    index = np.clip(np.searchsorted(grid, clipped, side="right") - 1, 0, grid.size - 2)
    lo, hi = grid[index], grid[index + 1]
    up = rng.random(x.shape) < (clipped - lo) / (hi - lo)
    return np.where(up, hi, lo) + 0.0


@_checks.finite_result
def random_hadamard(size=16, seed=0) -> np.ndarray:
    """An orthonormal ``size`` x ``size`` random Hadamard matrix: D H / sqrt(size) (float64).

    H is Sylvester's Hadamard matrix (entries ±1, built by doubling [[H, H], [H, -H]]), D a
    diagonal of random signs drawn from ``seed``, applied first (x @ D H flips the signs of x's
    entries before mixing them; signs applied after H would cancel through a sign-symmetric
    quantizer). ``size`` is a power of two (16 and 32 are
    the NVFP4 and MX block sizes). Its rows are orthonormal, so x @ R @ R.T == x: rotating the
    inner dimension of both operands of a matrix product leaves the product unchanged, while
    every output entry mixes all ``size`` inputs (an outlier is spread over the block).
    Explained in :doc:`/book/low_precision` (section "Today's FP4 and FP8 machinery").
    """
    n = _count("size", size, MAX_HADAMARD)
    if n & (n - 1):
        raise ValueError(f"size must be a power of two (got {n})")
    rng = np.random.default_rng(_checks.seed(seed))
    H = np.ones((1, 1))
    while H.shape[0] < n:
        H = np.block([[H, H], [H, -H]])
    signs = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return signs[:, None] * H / np.sqrt(n)


@_checks.finite_result
def rotated_quantize(x, name: str, scheme: str, size=16, seed=0) -> np.ndarray:
    """``x`` rotated by a :func:`random_hadamard` block, put through :func:`scheme_quantize`, rotated back.

    Each run of ``size`` consecutive values along the last axis of the 2-D ``x`` (a 1-D ``x`` is
    one row; the row length must be a multiple of ``size``) is multiplied by the same
    orthonormal R, quantized with the named :data:`SCALING_SCHEMES` entry, and multiplied by
    R.T. Without quantization this returns ``x`` (to rounding). Float64, x's shape.
    Explained in :doc:`/book/low_precision` (section "Today's FP4 and FP8 machinery").
    """
    name = _format(name)
    scheme = _checks.choice("scheme", scheme, SCALING_SCHEMES)
    R = random_hadamard(size, seed)
    x2, shape, _, _ = _blocks(x, None, None)
    n = R.shape[0]
    if x2.shape[1] % n:
        raise ValueError(f"the rows of x must be a multiple of size={n} long (got {x2.shape[1]})")
    blocks = x2.reshape(x2.shape[0], -1, n)
    rotated = (blocks @ R).reshape(x2.shape)
    q = scheme_quantize(rotated, name, scheme).reshape(blocks.shape)
    return (q @ R.T).reshape(shape)


@_checks.finite_result
def smooth_scales(x_absmax, w_absmax, alpha=0.5) -> np.ndarray:
    """SmoothQuant's per-channel smoothing factors s_j = max|X_j|**alpha / max|W_j|**(1 - alpha).

    ``x_absmax`` is the largest |activation| of each input channel j (a column of X, in the
    activations' units), ``w_absmax`` the largest |weight| of the matching row of W; both
    positive, broadcast together. Dividing column j of X by s_j and multiplying row j of W by
    it leaves X @ W unchanged and moves the outlier's range from X to W: after it, channel j
    of X peaks at (max|X_j| max|W_j|)**(1 - alpha) and row j of W at (max|X_j| max|W_j|)**alpha
    (``alpha`` in [0, 1]; 0.5, SmoothQuant's default, makes the two maxima equal). Returns float64, the broadcast shape.
    Explained in :doc:`/book/low_precision` (section "Today's FP4 and FP8 machinery").
    """
    x_absmax = _checks.positive("x_absmax", x_absmax)
    w_absmax = _checks.positive("w_absmax", w_absmax)
    a = float(_checks.in_range("alpha", _checks.scalar("alpha", alpha), 0.0, 1.0))
    _checks.broadcast(x_absmax=x_absmax, w_absmax=w_absmax)
    s = np.exp(a * np.log(x_absmax) - (1.0 - a) * np.log(w_absmax))
    return s if np.ndim(s) else float(s)
