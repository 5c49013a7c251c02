"""Number formats from FP32 to FP4: their ranges, rounding to them, and what the rounding costs.

Values are plain numbers (float64 arrays in and out); sizes are element counts; storage is in
bytes; speedups are time ratios. Rounding to bfloat16, FP8 and FP4 is done by ``ml_dtypes``
(imported when a function needs it, so ``import gpumodel`` does not load it); TF32 has no
numpy type, so it is emulated on FP32 bit patterns (:func:`tf32_round`).
Explained in :doc:`/book/low_precision`.
"""
from __future__ import annotations

import numpy as np

from . import _checks

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
    return _checks.choice("format", name, FORMATS)


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
    return [format_info(n) for n in names]


def _values(name: str, x) -> np.ndarray:
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or an array of numbers (got {x!r})") from None


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
    int4 16, nf4 16. Explained in :doc:`/book/low_precision` (section "Every value of an 8-bit float").
    """
    name = _checks.choice("format", name, SMALL_FORMATS)
    if name in ("int8", "int4"):
        info = format_info(name)
        return np.arange(info["min"], info["max"] + 1.0)
    if name == "nf4":
        return np.array(NF4_CODE_BOOK)
    patterns = np.arange(16 if name == "fp4_e2m1" else 256, dtype=np.uint8)
    values = patterns.view(_md_type(name)).astype(np.float64)
    return np.unique(values[np.isfinite(values)] + 0.0)


# --- loss scaling ---------------------------------------------------------------------------

def _seed(value) -> int:
    arr = _checks.non_negative("seed", value)
    if arr.ndim != 0 or arr != np.floor(arr):
        raise ValueError(f"seed must be a single whole number >= 0 (got {value!r})")
    return int(arr)


def _count(name: str, value) -> int:
    arr = _checks.positive_int(name, value)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a single whole number >= 1 (got an array)")
    return int(arr)


def gradient_sample(n, log10_mean, log10_std, seed=0) -> np.ndarray:
    """``n`` synthetic gradient values: magnitudes 10**N(log10_mean, log10_std), random signs.

    A stand-in for the gradient histograms of mixed-precision training (most values are tiny;
    their log-magnitudes spread over many decades). Deterministic for a ``seed``; float64 array.
    Explained in :doc:`/book/low_precision` (section "Loss scaling").
    """
    n = _count("n", n)
    mean = float(_checks.as_array("log10_mean", log10_mean))
    std = float(_checks.non_negative("log10_std", log10_std))
    rng = np.random.default_rng(_seed(seed))
    magnitudes = 10.0 ** rng.normal(mean, std, n)
    return np.where(rng.random(n) < 0.5, -magnitudes, magnitudes)


def _overflowed(scaled: np.ndarray, quantized: np.ndarray, name: str) -> np.ndarray:
    """Lost to overflow: inf/nan after the cast, or (saturating formats) clipped at the maximum."""
    info = format_info(name)
    if info["overflow"] == "saturate":
        return np.abs(scaled) > info["max"]
    return ~np.isfinite(quantized)


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
    over = np.empty(scales.shape)
    under = np.empty(scales.shape)
    nonzero = grads != 0
    with np.errstate(over="ignore"):
        for i, s in np.ndenumerate(scales):
            scaled = grads * s
            q = quantize(scaled, name)
            over[i] = np.mean(_overflowed(scaled, q, name))
            under[i] = np.mean(nonzero & (q == 0))
    if scales.ndim == 0:
        return float(over), float(under)
    return over, under


def _scale_rule(init_scale, growth_interval, backoff, growth):
    return (float(_checks.positive("init_scale", init_scale)),
            _count("growth_interval", growth_interval),
            float(_checks.in_range("backoff", _checks.positive("backoff", backoff), 0.0, 1.0)),
            float(_checks.in_range("growth", growth, 1.0, np.inf)))


def dynamic_loss_scale_trace(overflow, init_scale=2.0**16, growth_interval=2000, backoff=0.5, growth=2.0):
    """The loss scale used at each step, given which steps overflowed (1-D booleans).

    The standard dynamic rule (PyTorch's ``GradScaler``, whose defaults these are): a step whose
    gradients overflow is skipped and the scale is multiplied by ``backoff``; after
    ``growth_interval`` consecutive clean steps it is multiplied by ``growth``. Returns a float64
    array as long as ``overflow``. Explained in :doc:`/book/low_precision` (section "Dynamic loss scaling").
    """
    flags = np.asarray(overflow)
    if flags.ndim != 1 or flags.dtype.kind not in "biu" or not np.isin(flags, (0, 1)).all():
        raise ValueError("overflow must be a 1-D array of booleans (one per step)")
    scale, interval, backoff, growth = _scale_rule(init_scale, growth_interval, backoff, growth)
    scales = np.empty(flags.size)
    clean = 0
    for step, flag in enumerate(flags.astype(bool)):
        scales[step] = scale
        scale, clean = _next_scale(scale, clean, flag, interval, backoff, growth)
    return scales


def _next_scale(scale, clean, overflowed, interval, backoff, growth):
    """One step of the dynamic rule: back off on overflow, grow after ``interval`` clean steps."""
    if overflowed:
        return scale * backoff, 0
    clean += 1
    if clean == interval:
        return scale * growth, 0
    return scale, clean


def dynamic_loss_scale_run(grad_max, name="fp16", init_scale=2.0**16, growth_interval=2000,
                           backoff=0.5, growth=2.0):
    """Closed-loop dynamic loss scaling: the scale per step and whether that step overflowed.

    ``grad_max`` (> 0, one per step) is the largest gradient magnitude of each step; a step
    overflows when ``grad_max * scale`` cast to ``name`` overflows (see
    :func:`overflow_underflow_fractions`). The scale then follows :func:`dynamic_loss_scale_trace`'s
    rule, so it settles just under ``max / grad_max``. Returns ``(scales, overflowed)``.
    Explained in :doc:`/book/low_precision` (section "Dynamic loss scaling").
    """
    name = _format(name)
    peaks = _checks.positive("grad_max", grad_max)
    if peaks.ndim != 1:
        raise ValueError("grad_max must be a 1-D array (one value per step)")
    scale, interval, backoff, growth = _scale_rule(init_scale, growth_interval, backoff, growth)
    scales = np.empty(peaks.size)
    flags = np.zeros(peaks.size, dtype=bool)
    clean = 0
    with np.errstate(over="ignore"):
        for step, peak in enumerate(peaks):
            scales[step] = scale
            scaled = np.array(peak * scale)
            flags[step] = bool(_overflowed(scaled, quantize(scaled, name), name))
            scale, clean = _next_scale(scale, clean, flags[step], interval, backoff, growth)
    return scales, flags


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


def absmax_quantize_int8(X, axis=-1) -> np.ndarray:
    """``X`` quantized to int8 with absmax scaling and dequantized back (float64, same shape).

    Each slice along ``axis`` (``axis=-1``: each row; ``0``: each column; ``None``: the whole
    tensor) is scaled so its largest magnitude maps to 127, rounded half to even, and scaled back.
    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    X = _checks.as_array("X", X)
    if axis is not None:
        axis = int(axis)
        if not -X.ndim <= axis < X.ndim:
            raise ValueError(f"axis must be None or in [{-X.ndim}, {X.ndim - 1}] (got {axis})")
    scale = _absmax_scale(X, 127.0, axis)
    return np.rint(X * scale) / scale


def _int8_product(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    sx, sw = _absmax_scale(X, 127.0, 1), _absmax_scale(W, 127.0, 0)
    return (np.rint(X * sx) @ np.rint(W * sw)) / (sx * sw)  # integer products are exact in float64


def absmax_int8_matmul(X, W) -> np.ndarray:
    """``X @ W`` with vector-wise int8 quantization: absmax per row of ``X`` and per column of ``W``.

    Integer products and sums are exact; the result is dequantized by the outer product of the
    scales (float64). The baseline that outlier features break.
    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    X, W = _pair(X, W)
    return _int8_product(X, W)


def mixed_int8_matmul(X, W, threshold=6.0) -> np.ndarray:
    """``X @ W`` the LLM.int8() way: outlier feature columns in 16-bit, the rest vector-wise int8.

    Columns of ``X`` with any ``|value| >= threshold`` (and the matching rows of ``W``) are cast
    to fp16 and multiplied exactly; the other columns go through :func:`absmax_int8_matmul`'s
    scheme. The two parts are added (float64, shape ``(X rows, W columns)``).
    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    X, W = _pair(X, W)
    threshold = float(_checks.positive("threshold", threshold))
    outliers = np.any(np.abs(X) >= threshold, axis=0)
    out = np.zeros((X.shape[0], W.shape[1]))
    if outliers.any():
        out += quantize(X[:, outliers], "fp16") @ quantize(W[outliers], "fp16")
    if (~outliers).any():
        out += _int8_product(X[:, ~outliers], W[~outliers])
    return out


def fp8_matmul(X, W, name="fp8_e4m3") -> np.ndarray:
    """``X @ W`` with both operands cast to FP8 after per-tensor scaling, multiplied in float64.

    Each tensor is scaled so its largest magnitude lands on the format's maximum (448 for e4m3,
    57344 for e5m2: torchao's "tensorwise" recipe), rounded, and scaled back.
    Explained in :doc:`/book/low_precision` (section "FP8 with per-tensor scaling").
    """
    name = _checks.choice("format", name, FP8_FORMATS)
    X, W = _pair(X, W)
    top = format_info(name)["max"]
    sx, sw = _absmax_scale(X, top, None), _absmax_scale(W, top, None)
    return (quantize(X * sx, name) / sx) @ (quantize(W * sw, name) / sw)


def matmul_relative_error(approx, exact) -> float:
    """Relative Frobenius error ``||approx - exact|| / ||exact||`` (dimensionless).

    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    approx, exact = _checks.as_array("approx", approx), _checks.as_array("exact", exact)
    if approx.shape != exact.shape:
        raise ValueError(f"approx must have the shape of exact {exact.shape} (got {approx.shape})")
    norm = np.sqrt(np.sum(np.square(exact)))  # not np.linalg.norm: its BLAS call stalls under load
    if norm == 0:
        raise ValueError("exact must not be all zeros")
    return float(np.sqrt(np.sum(np.square(approx - exact))) / norm)


def outlier_activations(rows, cols, n_outlier_cols, outlier_scale=20.0, seed=0) -> np.ndarray:
    """A ``rows`` x ``cols`` activation matrix with a few large-magnitude feature columns.

    Entries are standard normal, except ``n_outlier_cols`` randomly chosen columns, which are
    normal with standard deviation ``outlier_scale``: the systematic outlier features that
    LLM.int8() found in every large transformer. Deterministic for a ``seed`` (float64).
    Explained in :doc:`/book/low_precision` (section "Outlier features and LLM.int8()").
    """
    rows, cols = _count("rows", rows), _count("cols", cols)
    n_out = float(_checks.in_range("n_outlier_cols", n_outlier_cols, 0, cols))
    if n_out != int(n_out):
        raise ValueError(f"n_outlier_cols must be a whole number in [0, {cols}] (got {n_outlier_cols!r})")
    scale = float(_checks.positive("outlier_scale", outlier_scale))
    rng = np.random.default_rng(_seed(seed))
    X = rng.standard_normal((rows, cols))
    chosen = rng.choice(cols, size=int(n_out), replace=False)
    X[:, chosen] *= scale
    return X


def blockwise_quantize(x, name: str, block_size=64) -> np.ndarray:
    """``x`` quantized to ``name`` in blocks with absmax scaling, then scaled back (float64, x's shape).

    ``x`` is flattened and cut into blocks of ``block_size`` values (the last may be shorter);
    each block is multiplied so its largest magnitude maps to the format's maximum (int4: 7,
    symmetric; fp4_e2m1: 6; nf4: 1), rounded with :func:`quantize`, and divided back.
    Explained in :doc:`/book/low_precision` (section "FP4 versus Int4, bit for bit").
    """
    name = _format(name)
    x = _checks.as_array("x", x)
    size = _count("block_size", block_size)
    flat = x.ravel()
    padded = np.concatenate([flat, np.zeros(-flat.size % size)]).reshape(-1, size)
    scale = _absmax_scale(padded, format_info(name)["max"], 1)
    out = quantize(padded * scale, name) / scale
    return out.ravel()[:flat.size].reshape(x.shape)


def quantization_mse(x, name: str, block_size=64) -> float:
    """Mean squared error of :func:`blockwise_quantize` on ``x`` (in x's units squared).

    Explained in :doc:`/book/low_precision` (section "FP4 versus Int4, bit for bit").
    """
    x = _checks.as_array("x", x)
    if x.size == 0:
        raise ValueError("x must hold at least one value (got an empty array)")
    return float(np.mean((blockwise_quantize(x, name, block_size) - x) ** 2))


# --- speed ----------------------------------------------------------------------------------

def bytes_per_element(name: str, block_size=None, scale_bytes=4.0) -> float:
    """Memory per element of format ``name``, in bytes (fp32 4, tf32 4, fp16/bf16 2, fp8/int8 1, 4-bit 0.5).

    With ``block_size``, adds one ``scale_bytes`` scale per block (blockwise quantization's
    overhead: nf4 with a 4-byte absmax per 64 values costs 0.5 + 4/64 bytes).
    Explained in :doc:`/book/low_precision` (section "Bytes per element").
    """
    name = _format(name)
    size = format_info(name)["storage_bits"] / 8
    if block_size is not None:
        size = size + _checks.non_negative("scale_bytes", scale_bytes) / _checks.positive_int("block_size", block_size)
    return size if np.ndim(size) else float(size)


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
    return 1.0 / ((1.0 - f) + f / s + t)


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
    return (1.0 - 1.0 / e + t) / (1.0 - 1.0 / s)



def fp8_overhead_needed(end_to_end_speedup, gemm_speedup, gemm_fraction):
    """The overhead (share of the 16-bit step time) for which :func:`fp8_training_speedup` equals ``end_to_end_speedup``.

    Solves ``1 / E = (1 - f) + f / s + t`` for ``t``; a negative result means the measured speedup
    is higher than the GEMMs alone explain. Explained in :doc:`/book/low_precision` (section "From a faster GEMM to a faster training step").
    """
    e = _checks.positive("end_to_end_speedup", end_to_end_speedup)
    s = _checks.positive("gemm_speedup", gemm_speedup)
    f = _checks.in_range("gemm_fraction", gemm_fraction, 0.0, 1.0)
    return 1.0 / e - ((1.0 - f) + f / s)
