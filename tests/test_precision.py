"""Number formats: the table against numpy/ml_dtypes, TF32 rounding against exact arithmetic,
loss scaling, outlier-aware int8, FP4 versus INT4, the FP8 speedup model, and bad input."""
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumodel import precision as p

FAST = settings(max_examples=200, deadline=None)
F32_MAX = float(np.finfo(np.float32).max)


# --- the format table ----------------------------------------------------------------------

@pytest.mark.parametrize("name, dtype", [("fp32", np.float32), ("fp16", np.float16)])
def test_table_matches_numpy_and_ml_dtypes(name, dtype):
    info = p.format_info(name)
    for finfo in (np.finfo(dtype), ml_dtypes.finfo(dtype)):
        assert info["bits"] == finfo.bits
        assert info["exponent_bits"] == finfo.nexp and info["mantissa_bits"] == finfo.nmant
        assert info["max"] == float(finfo.max) and info["min"] == float(finfo.min)
        assert info["smallest_normal"] == float(finfo.smallest_normal)
        assert info["smallest_subnormal"] == float(finfo.smallest_subnormal)
        assert info["eps"] == float(finfo.eps)


@pytest.mark.parametrize("name, dtype", [("bf16", ml_dtypes.bfloat16), ("fp8_e4m3", ml_dtypes.float8_e4m3fn),
                                         ("fp8_e5m2", ml_dtypes.float8_e5m2),
                                         ("fp4_e2m1", ml_dtypes.float4_e2m1fn)])
def test_table_matches_ml_dtypes(name, dtype):
    info, finfo = p.format_info(name), ml_dtypes.finfo(dtype)
    assert (info["bits"], info["exponent_bits"], info["mantissa_bits"]) == (finfo.bits, finfo.nexp, finfo.nmant)
    assert info["max"] == float(finfo.max) and info["eps"] == float(finfo.eps)
    assert info["smallest_subnormal"] == float(finfo.smallest_subnormal)


def test_exact_maxima():
    assert p.format_info("bf16")["max"] == 3.3895313892515355e38
    assert p.format_info("fp16")["max"] == 65504
    assert p.format_info("fp8_e4m3")["max"] == 448
    assert p.format_info("fp8_e5m2")["max"] == 57344
    assert p.format_info("fp4_e2m1")["max"] == 6
    assert p.format_info("int8")["max"] == 127 and p.format_info("int8")["min"] == -128
    assert p.format_info("int4")["max"] == 7 and p.format_info("int4")["min"] == -8
    assert p.format_info("nf4")["max"] == 1


def test_ieee_layout_reproduces_real_formats():
    """The formula used for TF32 gives numpy's and ml_dtypes' answers for formats that have them."""
    for dtype, (e, m) in [(np.float16, (5, 10)), (np.float32, (8, 23)), (ml_dtypes.bfloat16, (8, 7)),
                          (ml_dtypes.float8_e5m2, (5, 2))]:
        f = ml_dtypes.finfo(dtype)
        assert p._ieee_layout(e, m) == {"max": float(f.max), "smallest_normal": float(f.smallest_normal),
                                        "smallest_subnormal": float(f.smallest_subnormal), "eps": float(f.eps)}


def test_tf32_row():
    info = p.format_info("tf32")
    assert (info["bits"], info["storage_bits"], info["exponent_bits"], info["mantissa_bits"]) == (19, 32, 8, 10)
    assert info["max"] == (2 - 2**-10) * 2.0**127
    assert info["smallest_normal"] == 2.0**-126 and info["smallest_subnormal"] == 2.0**-136
    assert info["eps"] == p.format_info("fp16")["eps"] == 2.0**-10


def test_format_table_covers_formats():
    table = p.format_table()
    assert [row["name"] for row in table] == list(p.FORMATS)
    assert all(set(row) == set(table[0]) for row in table)
    overflow = {row["name"]: row["overflow"] for row in table}
    assert overflow["fp8_e4m3"] == "nan" and overflow["fp8_e5m2"] == "inf" and overflow["fp4_e2m1"] == "saturate"


def test_nf4_code_book_is_normal_quantiles():
    book = np.array(p.NF4_CODE_BOOK)
    assert book.size == 16 and np.all(np.diff(book) > 0) and book[0] == -1 and book[-1] == 1 and 0.0 in book
    assert (book > 0).sum() == 8 and (book < 0).sum() == 7  # asymmetric: an exact zero, 8 positive values


# --- TF32 rounding --------------------------------------------------------------------------

def tf32_reference(v: float) -> float:
    """Round a float32 value to 10 fraction bits with exact rational arithmetic (nearest, ties to even)."""
    if math.isnan(v) or math.isinf(v) or v == 0:
        return v
    exponent = max(math.frexp(abs(v))[1] - 1, -126)  # subnormals share the 2**-126 scale
    ulp = Fraction(2) ** (exponent - 10)
    q = Fraction(abs(v)) / ulp
    n = math.floor(q)
    rest = q - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    magnitude = n * ulp
    out = math.inf if magnitude >= 2**128 else float(magnitude)
    return math.copysign(out, v)


def bits_to_f32(bits):
    with np.errstate(invalid="ignore"):  # nan payloads
        return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(np.float64)


TIE = 2.0**-11  # half a TF32 ulp at 1


@pytest.mark.parametrize("x, expected", [
    (1 + TIE, 1.0),                               # tie, 1.0 is even: down
    (1 + 3 * TIE, 1 + 4 * TIE),                   # tie, odd below: up to even
    (1 + TIE + 2**-23, 1 + 2 * TIE),              # just above a tie: up
    (1 + TIE - 2**-23, 1.0),                      # just below a tie: down
    (-(1 + TIE), -1.0), (-(1 + 3 * TIE), -(1 + 4 * TIE)), (-(1 + TIE + 2**-23), -(1 + 2 * TIE)),
    (2 - 2**-23, 2.0),                            # carry into the exponent
    (0.0, 0.0), (np.inf, np.inf), (-np.inf, -np.inf),
    (F32_MAX, np.inf), (-F32_MAX, -np.inf),       # FP32's maximum is above TF32's max + half an ulp
    ((2 - 2**-10) * 2.0**127, (2 - 2**-10) * 2.0**127),
    (2.0**-149, 0.0),                             # smallest FP32 subnormal: below half of 2**-136
    (2.0**-137, 0.0),                             # exact tie with 0: to even (0)
    (3 * 2.0**-137, 2 * 2.0**-136),               # tie between 1 and 2 subnormal ulps: to even (2)
    (2.0**-126 - 2.0**-149, 2.0**-126),           # largest FP32 subnormal rounds up to the smallest normal
])
def test_tf32_edge_cases(x, expected):
    out = p.tf32_round(x)
    assert out == expected and out == tf32_reference(float(np.float32(x)))


def test_tf32_signed_zero_and_nan():
    out = p.tf32_round([-0.0, np.nan, -np.nan])
    assert out[0] == 0 and math.copysign(1, out[0]) == -1
    assert np.isnan(out[1:]).all()


@FAST
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_tf32_matches_exact_reference_on_bit_patterns(bits):
    x = float(bits_to_f32(bits))
    out = float(p.tf32_round(x))
    expected = tf32_reference(x)
    assert (math.isnan(out) and math.isnan(expected)) or (out == expected and
                                                          math.copysign(1, out) == math.copysign(1, expected))


def test_tf32_matches_reference_on_many_random_patterns():
    bits = np.random.default_rng(1).integers(0, 2**32, 5000, dtype=np.uint64)
    xs = bits_to_f32(bits)
    got = p.tf32_round(xs)
    want = np.array([tf32_reference(float(v)) for v in xs])
    assert np.array_equal(got, want, equal_nan=True)


def test_bit_rounding_agrees_with_ml_dtypes_bfloat16():
    """The same bit procedure with 7 kept bits is bfloat16; ml_dtypes is an independent implementation."""
    rng = np.random.default_rng(2)
    xs = np.concatenate([rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32),
                         np.arange(0, 2**20, dtype=np.uint32),               # subnormals and ties near 0
                         np.arange(0x7F700000, 0x7F800001, dtype=np.uint32)])  # up to the overflow
    x32 = xs.view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        ours = p._round_fp32_mantissa(x32, 7).astype(np.float64)
        theirs = x32.astype(ml_dtypes.bfloat16).astype(np.float64)
    assert np.array_equal(ours, theirs, equal_nan=True)


# --- quantize -------------------------------------------------------------------------------

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@FAST
@given(st.lists(finite, min_size=1, max_size=20), st.sampled_from(p.FORMATS))
def test_quantize_is_idempotent(xs, name):
    once = p.quantize(xs, name)
    assert np.array_equal(p.quantize(once, name), once, equal_nan=True)


@FAST
@given(finite, st.sampled_from(["fp16", "bf16", "fp8_e5m2", "fp4_e2m1", "tf32", "int8", "int4", "nf4"]))
def test_quantize_is_monotone_and_odd(x, name):
    a, b = p.quantize([x, x + abs(x) * 0.01 + 0.01], name)
    assert a <= b or np.isnan(a) or np.isnan(b)
    if name not in ("int8", "int4", "nf4"):  # asymmetric ranges / code book
        assert p.quantize(-x, name) == -p.quantize(x, name)


def test_quantize_lands_on_representable_values():
    x = np.random.default_rng(3).normal(0, 3, 2000)
    for name in ("fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "int4", "int8", "nf4"):
        q = p.quantize(x, name)
        assert np.isin(q + 0.0, p.representable_values(name)).all()


def test_quantize_overflow_behaviour():
    big = [1e6, -1e6]
    assert np.isinf(p.quantize(big, "fp16")).all() and np.isinf(p.quantize(big, "fp8_e5m2")).all()
    assert np.isnan(p.quantize(big, "fp8_e4m3")).all()
    assert list(p.quantize(big, "fp4_e2m1")) == [6, -6]
    assert list(p.quantize(big, "int8")) == [127, -128] and list(p.quantize(big, "int4")) == [7, -8]
    assert p.quantize(464, "fp8_e4m3") == 448 and np.isnan(p.quantize(465, "fp8_e4m3"))
    assert p.quantize(65519, "fp16") == 65504 and np.isinf(p.quantize(65520, "fp16"))
    assert np.isnan(p.quantize(np.nan, "fp4_e2m1")) and np.isnan(p.quantize(np.nan, "int4"))


def test_quantize_ties_to_even():
    assert list(p.quantize([0.5, 1.5, 2.5, -2.5], "int8")) == [0, 2, 2, -2]
    assert list(p.quantize([5.0, 0.25, 0.75], "fp4_e2m1")) == [4.0, 0.0, 1.0]
    assert p.quantize(1 + 2.0**-11, "fp16") == 1.0 and p.quantize(1 + 3 * 2.0**-11, "fp16") == 1 + 2.0**-9


def test_quantize_matches_ml_dtypes_on_float32_inputs():
    x = np.random.default_rng(4).normal(0, 100, 5000).astype(np.float32)
    for name, dtype in [("bf16", ml_dtypes.bfloat16), ("fp8_e4m3", ml_dtypes.float8_e4m3fn),
                        ("fp8_e5m2", ml_dtypes.float8_e5m2), ("fp4_e2m1", ml_dtypes.float4_e2m1fn)]:
        with np.errstate(over="ignore"):
            want = x.astype(dtype).astype(np.float64)
        assert np.array_equal(p.quantize(x, name), want, equal_nan=True)


def test_representable_value_counts():
    counts = {name: p.representable_values(name).size for name in p.SMALL_FORMATS}
    # e4m3fn: 256 patterns - 2 nan - one duplicate zero; e5m2: 256 - 2 inf - 6 nan - 1
    assert counts == {"fp8_e4m3": 253, "fp8_e5m2": 247, "int8": 256, "int4": 16, "fp4_e2m1": 15, "nf4": 16}
    fp4 = p.representable_values("fp4_e2m1")
    assert list(fp4[fp4 >= 0]) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    e4m3 = p.representable_values("fp8_e4m3")
    assert e4m3.max() == 448 and e4m3[e4m3 > 0].min() == 2.0**-9 and np.all(np.diff(e4m3) > 0)


# --- loss scaling ---------------------------------------------------------------------------

def test_gradient_sample_is_deterministic():
    a = p.gradient_sample(1000, -6, 1.5, seed=7)
    assert np.array_equal(a, p.gradient_sample(1000, -6, 1.5, seed=7))
    assert not np.array_equal(a, p.gradient_sample(1000, -6, 1.5, seed=8))
    assert 0.4 < np.mean(a > 0) < 0.6
    assert abs(np.median(np.log10(np.abs(a))) + 6) < 0.2


def test_loss_scaling_trades_underflow_for_overflow():
    grads = p.gradient_sample(20_000, -6, 1.5, seed=0)
    scales = 2.0 ** np.arange(0, 41)
    over, under = p.overflow_underflow_fractions(grads, "fp16", scales)
    assert under[0] > 0.1                      # without scaling, 15 % of these gradients flush to 0
    first_overflow = np.argmax(over > 0)
    assert first_overflow > 0
    assert np.all(np.diff(under[:first_overflow + 1]) <= 0)  # more scale, less underflow ...
    assert np.all(np.diff(over) >= 0)                      # ... until values start to overflow
    assert under[first_overflow] < 0.01
    bf16_over, bf16_under = p.overflow_underflow_fractions(grads, "bf16", 1.0)
    assert bf16_over == 0 and bf16_under == 0   # BF16's range needs no scaling for these gradients


def test_overflow_fractions_scalar_and_saturating():
    over, under = p.overflow_underflow_fractions([1.0, 10.0, 1e-9, 0.0], "fp4_e2m1", 1.0)
    assert (over, under) == (0.25, 0.25)
    over, under = p.overflow_underflow_fractions([1e5, 1.0], "fp16", 1.0)
    assert (over, under) == (0.5, 0.0)


def test_dynamic_loss_scale_trace():
    flags = [False, False, False, True, False, False, False, False]
    scales = p.dynamic_loss_scale_trace(flags, init_scale=8.0, growth_interval=2)
    assert list(scales) == [8, 8, 16, 16, 8, 8, 16, 16]


def test_dynamic_loss_scale_run_settles_below_the_limit():
    peaks = np.full(400, 1.0)
    scales, flags = p.dynamic_loss_scale_run(peaks, "fp16", init_scale=2.0**20, growth_interval=50)
    assert flags[:5].all() and not flags[5:50].any()          # 2**20 .. 2**16 overflow, 2**15 fits
    assert scales[-1] <= 65504 and (scales[flags] > 65504).all()
    assert np.array_equal(p.dynamic_loss_scale_trace(flags, 2.0**20, 50), scales)


# --- quantization error ---------------------------------------------------------------------

def test_absmax_int8_rows_and_tensor():
    X = np.array([[1.0, -2.0, 0.5], [0.0, 0.0, 0.0]])
    q = p.absmax_quantize_int8(X, axis=-1)
    assert q[0, 1] == -2.0 and np.all(q[1] == 0)
    assert np.max(np.abs(q - X)) <= 2.0 / 127 / 2 + 1e-15
    assert p.absmax_quantize_int8(X, axis=None).shape == X.shape


def test_mixed_int8_beats_plain_int8_on_outliers():
    X = p.outlier_activations(64, 512, n_outlier_cols=6, outlier_scale=20.0, seed=0)
    W = np.random.default_rng(1).normal(0, 0.05, (512, 256))
    exact = X @ W
    plain = p.matmul_relative_error(p.absmax_int8_matmul(X, W), exact)
    mixed = p.matmul_relative_error(p.mixed_int8_matmul(X, W, threshold=6.0), exact)
    assert mixed < plain / 2
    # no outliers: the two are the same computation
    Xn = p.outlier_activations(64, 512, 0, 20.0, seed=0) * 0.5
    assert np.array_equal(p.mixed_int8_matmul(Xn, W, 6.0), p.absmax_int8_matmul(Xn, W))


def test_outlier_activations_shape():
    X = p.outlier_activations(100, 50, 3, 30.0, seed=2)
    big = np.max(np.abs(X), axis=0) > 20
    assert X.shape == (100, 50) and big.sum() == 3


def test_fp8_matmul_error_size():
    rng = np.random.default_rng(5)
    X, W = rng.normal(size=(64, 256)), rng.normal(size=(256, 64))
    exact = X @ W
    e4m3 = p.matmul_relative_error(p.fp8_matmul(X, W, "fp8_e4m3"), exact)
    e5m2 = p.matmul_relative_error(p.fp8_matmul(X, W, "fp8_e5m2"), exact)
    assert 0.005 < e4m3 < e5m2 < 0.1  # one mantissa bit fewer: about twice the error
    assert np.isfinite(p.fp8_matmul(X * 1e4, W, "fp8_e4m3")).all()  # per-tensor scaling avoids overflow


def test_fp4_beats_int4_where_the_post_says():
    """Gaussian data at block 64 and larger, and heavy-tailed data at every block size: FP4 wins.

    At block size 16 on Gaussian data Int4 wins: a block's maximum is only ~2 sigma, and Int4's
    even spacing suits that range better than FP4's coarse top step (4 -> 6).
    """
    rng = np.random.default_rng(0)
    gauss, heavy = rng.standard_normal(64_000), rng.standard_t(4, 64_000)
    for block in (64, 256, 4096):
        assert p.quantization_mse(gauss, "fp4_e2m1", block) < p.quantization_mse(gauss, "int4", block)
        assert p.quantization_mse(gauss, "nf4", block) < p.quantization_mse(gauss, "fp4_e2m1", block)
    for block in (16, 64, 4096):
        assert p.quantization_mse(heavy, "fp4_e2m1", block) < p.quantization_mse(heavy, "int4", block)
    assert p.quantization_mse(gauss, "int4", 16) < p.quantization_mse(gauss, "fp4_e2m1", 16)


def test_blockwise_quantize_keeps_shape_and_block_maxima():
    x = np.random.default_rng(6).normal(size=(10, 13))  # 130 values: last block is partial
    q = p.blockwise_quantize(x, "int4", 64)
    assert q.shape == x.shape
    flat, qflat = x.ravel(), q.ravel()
    for start in range(0, 130, 64):
        block = slice(start, start + 64)
        i = np.argmax(np.abs(flat[block]))
        assert qflat[block][i] == pytest.approx(flat[block][i])  # the absmax is exact
    assert np.all(p.blockwise_quantize(np.zeros(10), "fp4_e2m1", 4) == 0)


# --- speed ----------------------------------------------------------------------------------

def test_bytes_per_element():
    expected = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1,
                "int4": 0.5, "fp4_e2m1": 0.5, "nf4": 0.5}
    assert {n: p.bytes_per_element(n) for n in p.FORMATS} == expected
    assert p.bytes_per_element("nf4", block_size=64) == 0.5 + 4 / 64


def test_fp8_training_speedup():
    assert p.fp8_training_speedup(1.77, 1.0) == pytest.approx(1.77)
    assert p.fp8_training_speedup(1.77, 0.0) == 1.0
    assert p.fp8_training_speedup(2.0, 0.5) == pytest.approx(1 / 0.75)
    assert p.fp8_training_speedup(2.0, 0.5, 0.05) == pytest.approx(1 / 0.8)
    # 1.77x GEMMs give the measured 1.25x end to end if GEMMs are ~57 % of the step and casts/transposes add 5 %
    f = p.gemm_fraction_needed(1.25, 1.77, 0.05)
    assert p.fp8_training_speedup(1.77, f, 0.05) == pytest.approx(1.25)
    assert 0.5 < f < 0.65
    out = p.fp8_training_speedup(np.array([1.5, 2.0]), np.array([[0.5], [1.0]]))
    assert out.shape == (2, 2)


# --- bad input ------------------------------------------------------------------------------

def test_unknown_format_lists_known_names():
    with pytest.raises(ValueError, match="known: fp32, tf32, fp16") as err:
        p.quantize(1.0, "fp8")
    assert "fp8_e4m3" in str(err.value)
    with pytest.raises(ValueError, match="bfloat"):
        p.format_info("bfloat")
    with pytest.raises(ValueError, match="format"):
        p.representable_values("fp16")
    with pytest.raises(ValueError, match="format"):
        p.fp8_matmul(np.eye(2), np.eye(2), "int8")


@pytest.mark.parametrize("call, parameter", [
    (lambda: p.gradient_sample(0, -6, 1), "n"),
    (lambda: p.gradient_sample(10.5, -6, 1), "n"),
    (lambda: p.gradient_sample(10, -6, -1), "log10_std"),
    (lambda: p.gradient_sample(10, -6, 1, seed=-1), "seed"),
    (lambda: p.overflow_underflow_fractions([1.0], "fp16", 0), "loss_scale"),
    (lambda: p.overflow_underflow_fractions([np.inf], "fp16", 1), "grads"),
    (lambda: p.dynamic_loss_scale_trace([0, 1], growth_interval=0), "growth_interval"),
    (lambda: p.dynamic_loss_scale_trace([0, 1], backoff=1.5), "backoff"),
    (lambda: p.dynamic_loss_scale_trace([0.5]), "overflow"),
    (lambda: p.dynamic_loss_scale_run([0.0]), "grad_max"),
    (lambda: p.mixed_int8_matmul(np.ones((2, 3)), np.ones((2, 3))), "W"),
    (lambda: p.mixed_int8_matmul(np.ones(3), np.ones((3, 3))), "X"),
    (lambda: p.mixed_int8_matmul(np.ones((2, 3)), np.ones((3, 3)), threshold=0), "threshold"),
    (lambda: p.absmax_quantize_int8(np.ones((2, 2)), axis=2), "axis"),
    (lambda: p.outlier_activations(10, 5, 6, 20.0), "n_outlier_cols"),
    (lambda: p.outlier_activations(0, 5, 1, 20.0), "rows"),
    (lambda: p.quantization_mse(np.ones(8), "int4", 0), "block_size"),
    (lambda: p.quantization_mse([], "int4", 4), "x"),
    (lambda: p.bytes_per_element("nf4", block_size=0), "block_size"),
    (lambda: p.fp8_training_speedup(0, 0.5), "gemm_speedup"),
    (lambda: p.fp8_training_speedup(1.8, 1.5), "gemm_fraction"),
    (lambda: p.fp8_training_speedup(1.8, 0.5, -0.1), "transpose_overhead_fraction"),
    (lambda: p.gemm_fraction_needed(1.2, 1.0), "gemm_speedup"),
    (lambda: p.matmul_relative_error(np.ones(3), np.ones(4)), "approx"),
    (lambda: p.quantize("abc", "fp16"), "x"),
])
def test_bad_input_names_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=parameter):
        call()


@FAST
@given(s=st.floats(1.1, 4.0), f=st.floats(0.0, 1.0), t=st.floats(0.0, 0.5))
def test_fp8_overhead_needed_inverts_speedup(s, f, t):
    e = p.fp8_training_speedup(s, f, t)
    assert math.isclose(float(p.fp8_overhead_needed(e, s, f)), t, abs_tol=1e-9)


def test_fp8_overhead_needed_bad_input():
    with pytest.raises(ValueError, match="gemm_fraction"):
        p.fp8_overhead_needed(1.2, 1.8, 1.5)
    with pytest.raises(ValueError, match="end_to_end_speedup"):
        p.fp8_overhead_needed(0, 1.8, 0.5)


# --- issue regressions: results are finite, scalars are scalars, cost is bounded ---------------

def _fractions_by_casting(grads, name, loss_scale):
    """The original overflow_underflow_fractions: cast every gradient for every scale."""
    grads = np.asarray(grads, dtype=float).ravel()
    scales = np.asarray(loss_scale, dtype=float)
    over, under = np.empty(scales.shape), np.empty(scales.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        for i, s in np.ndenumerate(scales):
            scaled = grads * s
            q = p.quantize(scaled, name)
            over[i] = np.mean(p._overflowed(scaled, q, name))
            under[i] = np.mean((grads != 0) & (q == 0))
    return over, under


def _boundary_gradients(name, scale):
    """Gradients within a few ulps of where grads * scale starts to flush to zero or to overflow."""
    values = [0.0, 5e-324, 1e-310, 1e308]
    for sign in (1.0, -1.0):
        for limit in p._loss_thresholds(name, sign):
            if np.isfinite(limit) and limit > 0:
                center = limit / scale
                for direction in (np.inf, 0.0):
                    v = center
                    for _ in range(4):
                        values.append(sign * v)
                        v = np.nextafter(v, direction)
    return np.array(values + [-v for v in values])


@pytest.mark.parametrize("name", p.FORMATS)
def test_fast_fractions_equal_casting_every_value(name):
    grads = np.concatenate([p.gradient_sample(5000, -6, 2.5, seed=3), [0.0, 1e-320, -1e300, 65504.0, 448.0]])
    scales = np.concatenate([2.0 ** np.arange(-40, 60, 3), np.random.default_rng(9).uniform(0.01, 1e7, 40),
                             [1e-300, 1e300]])
    fast = p.overflow_underflow_fractions(grads, name, scales)
    slow = _fractions_by_casting(grads, name, scales)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    for scale in (1.0, 3.0, 1024.0, 0.7, 1e-10):
        edges = _boundary_gradients(name, scale)
        fast = p.overflow_underflow_fractions(edges, name, scale)
        slow = _fractions_by_casting(edges, name, scale)
        assert fast == (float(slow[0]), float(slow[1])), (name, scale)


def test_fractions_for_many_scales_are_fast():
    import time

    grads = p.gradient_sample(20_000, -6, 1.5, seed=0)
    start = time.perf_counter()
    over, under = p.overflow_underflow_fractions(grads, "fp16", np.geomspace(1e-3, 1e12, 100_000))
    assert time.perf_counter() - start < 1.0 and over.shape == under.shape == (100_000,)


@pytest.mark.parametrize("call", [
    lambda: p.absmax_quantize_int8([1e-307, 5e-308]),
    lambda: p.absmax_quantize_int8([[1e-310, 1.0], [2e-320, 0.0]], axis=-1),
    lambda: p.absmax_int8_matmul([[1e-306, 2e-306]], [[1.0], [1e-300]]),
    lambda: p.fp8_matmul([[1e-306]], [[1.0]]),
    lambda: p.blockwise_quantize([1e-310, -3e-311, 1.0, 2.0], "fp4_e2m1", 2),
])
def test_tiny_values_give_finite_results(call):
    assert np.isfinite(call()).all()


def test_tiny_values_scale_exactly():
    x = np.array([1e-307, 5e-308])
    np.testing.assert_array_equal(p.absmax_quantize_int8(x), p.absmax_quantize_int8(x * 2.0**600) / 2.0**600)
    assert p.fp8_matmul([[1e-306]], [[1.0]])[0, 0] == pytest.approx(1e-306, rel=0.07)


def test_relative_error_scales_before_squaring():
    assert p.matmul_relative_error([1.01e200], [1e200]) == pytest.approx(0.01)
    assert p.matmul_relative_error([1.01e-200], [1e-200]) == pytest.approx(0.01)
    assert p.matmul_relative_error([1e200], [1.0]) == pytest.approx(1e200)
    assert p.matmul_relative_error([1.5e308], [-1.5e308]) == pytest.approx(2.0)


def test_mixed_int8_outliers_beyond_fp16_are_refused():
    with pytest.raises(ValueError, match="fp16"):
        p.mixed_int8_matmul([[7e4, -7e4]], [[1.0], [1.0]])


@pytest.mark.parametrize("call, parameter", [
    (lambda: p.gradient_sample(10, [-6.0, -5.0], 1), "log10_mean"),
    (lambda: p.gradient_sample(10, -6, [1.0]), "log10_std"),
    (lambda: p.gradient_sample(10**9, -6, 1), "n"),
    (lambda: p.dynamic_loss_scale_trace([0, 1], init_scale=[2.0, 4.0]), "init_scale"),
    (lambda: p.dynamic_loss_scale_trace([0, 1], backoff=np.array([0.5])), "backoff"),
    (lambda: p.dynamic_loss_scale_run([1.0], growth=[2.0, 3.0]), "growth"),
    (lambda: p.mixed_int8_matmul(np.ones((2, 3)), np.ones((3, 3)), threshold=[6.0]), "threshold"),
    (lambda: p.outlier_activations(10, 5, 1, outlier_scale=[20.0, 30.0]), "outlier_scale"),
    (lambda: p.outlier_activations(10**5, 10**5, 1), "rows"),
    (lambda: p.absmax_quantize_int8(np.ones((2, 2)), axis=True), "axis"),
    (lambda: p.bytes_per_element("fp16", scale_bytes=-5), "scale_bytes"),
    (lambda: p.quantize(True, "fp16"), "x"),
    (lambda: p.quantize([1 + 2j], "fp16"), "x"),
    (lambda: p.quantize(1.0, ["fp16"]), "name"),
    (lambda: p.format_table(5), "names"),
])
def test_scalar_and_type_errors_are_value_errors(call, parameter):
    with pytest.raises(ValueError, match=parameter):
        call()


def test_blockwise_quantize_does_not_pad_past_the_data():
    import time

    x = np.random.default_rng(4).normal(size=10)
    start = time.perf_counter()
    huge = p.blockwise_quantize(x, "int4", block_size=2**26)
    assert time.perf_counter() - start < 0.5
    np.testing.assert_array_equal(huge, p.blockwise_quantize(x, "int4", block_size=10))
    np.testing.assert_array_equal(p.blockwise_quantize(x, "int4", block_size=10**300), huge)
    assert p.blockwise_quantize(np.zeros((0, 3)), "nf4").shape == (0, 3)


def test_format_table_takes_one_name():
    assert p.format_table("fp16") == [p.format_info("fp16")]


# --- issue 24: subnormals, names, speed ---------------------------------------------------------

#: Finite values up to 1e300: within a few ulps of the float64 maximum a block's rounding
#: may step past it, which the house contract refuses as an overflow.
finite_values = st.one_of(st.floats(min_value=-1e300, max_value=1e300),
                          st.floats(min_value=-1e-300, max_value=1e-300))


@settings(max_examples=200, deadline=None)
@given(x=st.lists(finite_values, min_size=1, max_size=40),
       name=st.sampled_from(["fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "int8", "nf4"]),
       scheme=st.sampled_from(list(p.SCALING_SCHEMES)))
def test_scheme_quantize_is_finite_for_any_finite_input(x, name, scheme):
    q = p.scheme_quantize(x, name, scheme)
    assert q.shape == (len(x),) and np.all(np.isfinite(q))
    assert np.all((q == 0) | (np.sign(q) == np.sign(x)))


@pytest.mark.parametrize("scheme", list(p.SCALING_SCHEMES))
def test_subnormal_input_quantizes(scheme):
    for name in ("fp8_e4m3", "fp4_e2m1"):
        assert np.isfinite(p.scheme_quantize([5e-324], name, scheme)).all()
        losses = p.cast_losses([5e-324, 1e-320], name, scheme)
        assert all(0.0 <= v <= 1.0 for v in losses.values())


def test_negative_zero_spread_is_zero():
    assert np.allclose(np.abs(p.gradient_sample(10, -5, -0.0)), 1e-5, rtol=1e-12)
    assert p.gradient_matrix(3, 4, -5, -0.0, -0.0).shape == (3, 4)


def test_a_single_number_with_an_axis_is_blamed_on_x():
    with pytest.raises(ValueError, match="X must be an array"):
        p.absmax_quantize_int8(3.0)
    assert p.absmax_quantize_int8(3.0, axis=None) == 3.0


@pytest.mark.parametrize("call", [lambda: p.gradient_sample(10, -3, 1, seed=1.5),
                                  lambda: p.gradient_matrix(2, 2, -3, 1, 1, seed=2**32)])
def test_seeds_are_whole_numbers_in_range(call):
    with pytest.raises(ValueError, match="seed"):
        call()


def _seconds(call) -> float:
    import time
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def test_loss_scale_run_of_a_million_steps_is_fast():
    peaks = 10.0 ** np.random.default_rng(0).normal(-3, 1, 10**6)
    assert _seconds(lambda: p.dynamic_loss_scale_run(peaks)) < 10.0
    assert _seconds(lambda: p.dynamic_loss_scale_trace(peaks > 0.1)) < 10.0
    with pytest.raises(ValueError, match="grad_max"):
        p.dynamic_loss_scale_run(np.ones(p.MAX_STEPS + 1))


def test_nvfp4_on_4096_squared_is_fast():
    x = np.random.default_rng(0).standard_normal((4096, 4096))
    assert _seconds(lambda: p.scheme_quantize(x, "fp4_e2m1", "NVFP4 (16, E4M3)")) < 15.0


# --- today's FP4 and FP8 machinery ---------------------------------------------------------

def test_stochastic_round_picks_a_neighbour_and_saturates():
    out = p.stochastic_round([0.2, 0.5, 6.0, 7.0, -9.0, 2.6, -0.0], "fp4_e2m1", seed=3)
    assert out[0] in (0.0, 0.5) and out[5] in (2.0, 3.0)
    assert out[1] == 0.5 and out[2] == 6.0 and out[3] == 6.0 and out[4] == -6.0 and out[6] == 0.0
    same = p.stochastic_round([0.2, 2.6], "fp4_e2m1", seed=3)
    assert np.array_equal(same, out[[0, 5]])


def test_stochastic_round_is_unbiased_where_nearest_is_not():
    draws = p.stochastic_round(np.full(200_000, 0.2), "fp4_e2m1", seed=0)
    assert p.quantize(0.2, "fp4_e2m1") == 0.0
    assert abs(draws.mean() - 0.2) < 0.005
    assert abs(np.mean(draws == 0.5) - 0.4) < 0.005  # (0.2 - 0) / (0.5 - 0)


@FAST
@given(st.floats(-400.0, 400.0), st.sampled_from(["fp8_e4m3", "fp4_e2m1", "int8", "int4"]))
def test_stochastic_round_mean_is_the_value(x, name):
    grid = p.representable_values(name)
    clipped = min(max(x, grid[0]), grid[-1])
    draws = p.stochastic_round(np.full(4000, x), name, seed=1)
    i = np.searchsorted(grid, clipped)
    gap = grid[min(i, grid.size - 1)] - grid[max(i - 1, 0)]
    assert abs(draws.mean() - clipped) <= 0.1 * gap + 1e-12
    assert np.all(np.isin(draws, grid))


def test_random_hadamard_values():
    R = p.random_hadamard(4, seed=0)
    assert np.allclose(np.abs(R), 0.5)
    assert np.allclose(R @ R.T, np.eye(4))
    assert np.array_equal(R, p.random_hadamard(4, seed=0))
    assert np.array_equal(np.abs(p.random_hadamard(2, seed=5)) * 2**0.5, np.ones((2, 2)))
    assert p.random_hadamard(1).tolist() in ([[1.0]], [[-1.0]])


@FAST
@given(st.sampled_from([1, 2, 4, 8, 16, 32, 64]), st.integers(0, 2**32 - 1))
def test_random_hadamard_is_orthonormal(size, seed):
    R = p.random_hadamard(size, seed)
    assert np.allclose(R @ R.T, np.eye(size), atol=1e-12)


def test_rotated_quantize_spreads_outliers():
    X = p.outlier_activations(64, 256, 4, 20.0, seed=0)
    plain = p.scheme_quantize(X, "fp4_e2m1", "MX (32, E8M0)")
    turned = p.rotated_quantize(X, "fp4_e2m1", "MX (32, E8M0)", size=32, seed=0)
    assert np.mean(turned == 0) < np.mean(plain == 0) / 5
    assert p.matmul_relative_error(turned, X) < p.matmul_relative_error(plain, X) / 1.3
    assert np.allclose(p.rotated_quantize(X, "fp32", "per tensor", size=16), X, atol=1e-5)
    assert p.rotated_quantize(X[0], "fp32", "per tensor", size=16).shape == (256,)


def test_smooth_scales_values():
    assert p.smooth_scales(16.0, 4.0, 0.5) == 2.0
    assert p.smooth_scales(16.0, 4.0, 1.0) == pytest.approx(16.0)
    assert p.smooth_scales(16.0, 4.0, 0.0) == pytest.approx(0.25)
    assert np.allclose(p.smooth_scales([16.0, 1.0], [4.0, 1.0]), [2.0, 1.0])


@FAST
@given(st.lists(st.floats(0.01, 100.0), min_size=2, max_size=6), st.floats(0.0, 1.0))
def test_smoothing_preserves_the_product_and_balances_maxima(xmax, alpha):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, len(xmax))) * np.array(xmax)
    W = rng.standard_normal((len(xmax), 3))
    s = p.smooth_scales(np.abs(X).max(axis=0), np.abs(W).max(axis=1), alpha)
    assert np.allclose((X / s) @ (W * s[:, None]), X @ W)
    if alpha == 0.5:
        assert np.allclose(np.abs(X / s).max(axis=0), np.abs(W * s[:, None]).max(axis=1))


@pytest.mark.parametrize("call, message", [
    (lambda: p.stochastic_round([0.1], "fp4_e2m1", seed=1.5), "seed"),
    (lambda: p.stochastic_round([0.1], "bf16"), "format name"),
    (lambda: p.stochastic_round([np.nan], "fp4_e2m1"), "x"),
    (lambda: p.random_hadamard(12), "power of two"),
    (lambda: p.random_hadamard(16, seed=-1), "seed"),
    (lambda: p.random_hadamard(0), "size"),
    (lambda: p.rotated_quantize(np.ones(24), "fp4_e2m1", "MX (32, E8M0)", 16), "multiple"),
    (lambda: p.rotated_quantize(np.ones(16), "fp4_e2m1", "per diagonal", 16), "scheme"),
    (lambda: p.smooth_scales(0.0, 1.0), "x_absmax"),
    (lambda: p.smooth_scales(1.0, -1.0), "w_absmax"),
    (lambda: p.smooth_scales(1.0, 1.0, 1.5), "alpha"),
    (lambda: p.smooth_scales([1.0, 2.0], [1.0, 2.0, 3.0]), "broadcast"),
])
def test_machinery_refuses_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("scheme", ["MX (32, E8M0)", "NVFP4 (16, E4M3)"])
@pytest.mark.parametrize("shape", [(64, 128), (37, 50), (5, 16)])
def test_scaled_quantize_equals_the_element_by_element_rule(scheme, shape):
    """The broadcast per-block path (and the ragged one) give exactly x / scale clamped,
    rounded and scaled back, with each element's scale from block_scales; signs of zero too."""
    rng = np.random.default_rng(7)
    x = np.ldexp(rng.standard_normal(shape), rng.integers(-20, 20, shape))
    x[0, :3] = [-0.0, 0.0, -1e-30]
    rows, cols, fmt = p.SCALING_SCHEMES[scheme]
    for name in ("fp4_e2m1", "fp8_e4m3", "int8"):
        scale = p.block_scales(x, name, rows, cols, fmt)
        top = p.format_info(name)["max"]
        with np.errstate(divide="ignore", invalid="ignore"):  # a scale that underflowed: 0
            expected = np.where(scale > 0, p.quantize(np.clip(x / scale, -top, top), name) * scale,
                                0.0)
        got = p.scheme_quantize(x, name, scheme)
        assert np.array_equal(got, expected) and np.array_equal(np.signbit(got), np.signbit(expected))


def test_nvfp4_of_a_4096_square_matrix_is_fast_and_lean():
    """One scale per block broadcast, not an expanded copy: under 2 s of CPU (about 0.5 s; it
    was 0.7 s, and 2.6 s of wall time on a busy machine) and at most 4.5 copies of x in memory
    at once (3.75 now; 6.7 before)."""
    import time
    import tracemalloc

    x = np.random.default_rng(0).standard_normal((4096, 4096))
    start = time.process_time()
    p.scheme_quantize(x, "fp4_e2m1", "NVFP4 (16, E4M3)")
    assert time.process_time() - start < 2.0
    tracemalloc.start()
    try:
        p.scheme_quantize(x, "fp4_e2m1", "NVFP4 (16, E4M3)")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4.5 * x.nbytes, f"{peak / x.nbytes:.2f} copies of x"


def test_the_random_signs_come_before_the_hadamard_so_the_seed_matters():
    # D H, not H D: signs applied after H would cancel through a sign-symmetric quantizer
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 64))
    x[:, 5] *= 30
    a = p.rotated_quantize(x, "fp4_e2m1", "NVFP4 (16, E4M3)", 16, 0)
    b = p.rotated_quantize(x, "fp4_e2m1", "NVFP4 (16, E4M3)", 16, 5)
    assert np.abs(a - b).max() > 0
    r = p.random_hadamard(16, 1)
    h = np.abs(r) * np.sqrt(16)
    assert np.allclose(h, 1.0)
    assert len(set(np.sign(r[0]))) == 1  # D scales rows: Sylvester's first row keeps one sign


def test_best_scale_refuses_fractional_scales_it_would_truncate():
    from gpumodel.explorations import low_precision as lp

    with pytest.raises(ValueError, match="log2_scales must be whole numbers"):
        lp.best_scale("fp8_e4m3", [0.5, 1.9])
    assert lp.best_scale("fp8_e4m3", [1.0, 2.0])[0] in (1, 2)


def test_format_frame_refuses_an_empty_list():
    from gpumodel.explorations import low_precision as lp

    with pytest.raises(ValueError, match="names must be a non-empty list"):
        lp.format_frame([])
