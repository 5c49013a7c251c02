"""Second-edition models of chapters 2 and 3: per-SM rates, transformer FLOPs and MFU, scale formats."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumodel import hardware, measured, memory, precision, workloads
from gpumodel import tensor_cores as tc


def test_per_sm_rates_on_an_h100_give_the_ridge_point():
    h = hardware.get("H100 SXM5")
    clock = h.peak_clock_mhz * 1e6
    bpc = tc.per_sm_cycle(h.bandwidth, h.sm_count, clock)
    fpc = tc.per_sm_cycle(h.peak_flops(), h.sm_count, clock)
    assert bpc == pytest.approx(3.35e12 / (132 * 1.83e9))
    assert fpc == pytest.approx(4096, rel=1e-3)
    assert fpc / bpc == pytest.approx(h.ridge_point())
    steps = tc.k_step_cycles(128, 128, 64, bpc, fpc)
    assert steps["compute"] / steps["load"] == pytest.approx(memory.output_tile_intensity(128, 128) / h.ridge_point())


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 512), st.integers(1, 512), st.integers(1, 256), st.floats(0.5, 100), st.floats(64, 16384))
def test_k_step_ratio_is_tile_intensity_over_ridge(tm, tn, tk, bpc, fpc):
    steps = tc.k_step_cycles(tm, tn, tk, bpc, fpc)
    assert steps["compute"] / steps["load"] == pytest.approx(memory.output_tile_intensity(tm, tn) / (fpc / bpc))


def test_llama3_8b_parameters_and_flops():
    c = workloads.LLAMA3_8B
    n = workloads.transformer_params(**c)
    assert n == 8_030_261_248
    assert workloads.transformer_params(**c, input_embedding=False) == n - 128256 * 4096
    f = workloads.training_flops_per_token(n, c["layers"], c["d_model"], 8192)
    assert f == 6 * n + 12 * 32 * 4096 * 8192
    assert (f - 6 * n) / (6 * n) == pytest.approx(0.267, abs=0.001)
    mfu = workloads.model_flops_utilization(measured.measurement("torchao.llama3_8b.h100.bf16"), f,
                                            hardware.get("H100 SXM5").peak_flops("bf16"))
    assert mfu == pytest.approx(6150 * f / 989.4e12)


def test_llama3_8b_linear_flop_share_exact():
    c = workloads.LLAMA3_8B
    linear = 6 * 32 * workloads.layer_matmul_params(4096, 14336, 32, 8)
    n = workloads.transformer_params(**c, input_embedding=False)
    total = 6 * n + 12 * 32 * 4096 * 8192
    share = workloads.linear_flop_share(**c, seq_len=8192)
    assert share == pytest.approx(linear / total, rel=1e-12)
    assert round(float(share), 3) == 0.723
    with_head = workloads.linear_flop_share(**c, seq_len=8192, output_head=True)
    assert with_head == pytest.approx((linear + 6 * 128256 * 4096) / total, rel=1e-12)
    causal = workloads.linear_flop_share(**c, seq_len=8192, causal=True)
    assert causal == pytest.approx(linear / (6 * n + 6 * 32 * 4096 * 8192), rel=1e-12)
    assert round(float(causal), 3) == 0.814
    with pytest.raises(ValueError, match="causal"):
        workloads.linear_flop_share(**c, seq_len=8192, causal="yes")


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 128), st.integers(1, 1 << 20))
def test_causal_count_raises_the_linear_share(layers, seq_len):
    c = {**workloads.LLAMA3_8B, "layers": layers}
    full = workloads.linear_flop_share(**c, seq_len=seq_len)
    causal = workloads.linear_flop_share(**c, seq_len=seq_len, causal=True)
    assert full < causal <= 1


def test_mixed_peak_is_the_harmonic_mix():
    assert workloads.mixed_peak_flops(0.5, 2.0, 1.0) == pytest.approx(4 / 3)
    assert workloads.mixed_peak_flops(1.0, 2.0, 1.0) == 2.0
    assert workloads.mixed_peak_flops(0.0, 2.0, 1.0) == 1.0
    with pytest.raises(ValueError, match="fast_share"):
        workloads.mixed_peak_flops(1.5, 2.0, 1.0)


@given(st.floats(0, 1), st.floats(1e12, 1e16), st.floats(1e12, 1e16))
@settings(max_examples=50, deadline=None)
def test_mixed_peak_lies_between_the_two(f, a, b):
    p = workloads.mixed_peak_flops(f, a, b)
    assert min(a, b) * (1 - 1e-9) <= p <= max(a, b) * (1 + 1e-9)


def test_transformer_params_refuses_more_kv_heads_than_heads():
    with pytest.raises(ValueError, match="kv_heads"):
        workloads.transformer_params(1, 64, 128, 4, 8, 100)


def test_e8m0_scales_put_the_block_maximum_in_the_top_binade():
    x = np.random.default_rng(1).standard_normal((4, 256))
    for name in ("fp4_e2m1", "fp8_e4m3", "int4"):
        scale = precision.block_scales(x, name, 1, 32, "e8m0")
        top = precision.format_info(name)["max"]
        amax = np.abs(x).reshape(4, 8, 32).max(axis=2).repeat(32, axis=1)
        ratio = amax / scale
        e = np.floor(np.log2(top))
        assert np.all((ratio >= 2**e) & (ratio < 2 ** (e + 1)))
        assert np.all(np.log2(scale) == np.round(np.log2(scale)))


def test_fp32_scales_match_blockwise_quantize():
    x = np.random.default_rng(2).standard_normal(1024)
    for name in ("int4", "fp4_e2m1", "nf4"):
        assert np.array_equal(precision.scaled_quantize(x, name, 1, 64), precision.blockwise_quantize(x, name, 64))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(list(precision.SCALING_SCHEMES)),
       st.sampled_from(["fp8_e4m3", "fp4_e2m1", "int4"]))
def test_scheme_quantize_is_idempotent(seed, scheme, name):
    x = np.random.default_rng(seed).standard_normal((8, 64)) * 10.0 ** np.random.default_rng(seed).uniform(-3, 3)
    once = precision.scheme_quantize(x, name, scheme)
    if precision.SCALING_SCHEMES[scheme][2] == "e4m3":
        return  # the tensor scale moves with the tensor maximum, which rounding may change
    assert np.array_equal(precision.scheme_quantize(once, name, scheme), once)


def test_power_of_two_scales_favour_fp4_at_block_32():
    x = np.random.default_rng(0).standard_normal((1, 2**16))
    mse = {n: np.mean((precision.scaled_quantize(x, n, 1, 32, "e8m0") - x) ** 2) for n in ("int4", "fp4_e2m1")}
    assert mse["fp4_e2m1"] < mse["int4"]


def test_per_row_scales_lose_fewer_gradients():
    g = precision.gradient_matrix(128, 512, -6, 1.2, 0.8, seed=0)
    tensor = precision.cast_losses(g, "fp8_e4m3", "per tensor")
    row = precision.cast_losses(g, "fp8_e4m3", "per row")
    assert row["lost_values"] < tensor["lost_values"] and row["lost_norm"] <= tensor["lost_norm"]
    assert tensor["lost_norm"] < tensor["lost_values"]


@pytest.mark.parametrize("call, name", [
    (lambda: precision.block_scales([1.0], "fp4_e2m1", scale_format="e5m2"), "scale_format"),
    (lambda: precision.block_scales([1.0], "fp4_e2m1", block_cols=0), "block_cols"),
    (lambda: precision.scheme_quantize([1.0], "fp4_e2m1", "per diagonal"), "scheme"),
    (lambda: precision.cast_losses([0.0], "fp8_e4m3", "per row"), "x"),
    (lambda: tc.per_sm_cycle(1, 0, 1), "sms"),
    (lambda: tc.k_step_cycles(1, 1, 1, 0, 1), "bytes_per_cycle"),
    (lambda: workloads.model_flops_utilization(1, 1, 0), "peak_flops"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_causal_count_halves_attention():
    full = workloads.training_flops_per_token(7.5e9, 32, 4096, 8192)
    causal = workloads.training_flops_per_token(7.5e9, 32, 4096, 8192, causal=True)
    assert full - causal == 6 * 32 * 4096 * 8192


def test_operand_bytes_and_littles_law():
    assert tc.operand_bytes_per_cycle(128, 128, 4096) == 64
    assert tc.operand_bytes_per_cycle(128, 256, 4096) == 48
    assert tc.bytes_in_flight(13.9, 689.0) == pytest.approx(9577.1)
    assert memory.accumulator_bytes(256, 256) == 256 * 1024
    assert precision.powers_of_two_spanned("fp16") == pytest.approx(40.0, abs=1e-3)


def test_best_safe_scale_never_overflows():
    from gpumodel.explorations import low_precision as lp
    grads = lp.gradients()
    for fmt in lp.TRAIN_FORMATS:
        log2_scale, flushed = lp.best_scale(fmt)
        over, under = precision.overflow_underflow_fractions(grads, fmt, 2.0**log2_scale)
        assert over == 0 and under == pytest.approx(flushed)
