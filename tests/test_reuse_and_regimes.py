"""Second-edition models of chapter 1: traffic counts, L2 reuse, overhead, wave-quantized GEMMs, decoding."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumodel import hardware, memory

dims = st.integers(min_value=1, max_value=16384)
tiles = st.sampled_from([16, 32, 64, 96, 128, 192, 256])
sms = st.integers(min_value=1, max_value=200)


def test_bert_intensities_side_by_side():
    values = {c: memory.matmul_intensity(256, 1024, 1024, 128, "fp16", c) for c in memory.TRAFFIC_COUNTS}
    assert values["all_pairs"] == pytest.approx(16.0)
    assert values["output_stationary"] == pytest.approx(64.0)
    assert values["minimum"] == pytest.approx(2 * 256 * 1024 * 1024 / (2 * (256 * 1024 + 1024**2 + 256 * 1024)))
    assert memory.matmul_intensity(256, 1024, 1024, 96, "fp16", "all_pairs") == pytest.approx(7.30, abs=0.01)
    assert memory.matmul_intensity(256, 1024, 1024, 96, "fp16", "output_stationary") == pytest.approx(40.1, abs=0.05)


def test_output_tile_intensity():
    assert memory.output_tile_intensity(128, 128) == 64
    assert memory.output_tile_intensity(128, 256) == pytest.approx(256 / 3)
    assert memory.output_tile_intensity(128, 128, "fp8") == 128


@settings(max_examples=200, deadline=None)
@given(dims, dims, dims, tiles)
def test_output_stationary_never_beats_reading_each_operand_once(m, k, n, tile):
    once = memory.matmul_flops(m, k, n) / memory.matmul_operand_bytes(m, k, n)
    assert memory.matmul_intensity(m, k, n, tile, "fp16", "output_stationary") <= once * (1 + 1e-12)


def test_wave_shape_on_an_h100():
    assert memory.wave_shape(4096, 4096, 128, 128, 132) == (12, 11)
    assert memory.wave_shape(256, 1024, 128, 128, 132) == (2, 8)


@settings(max_examples=200, deadline=None)
@given(dims, dims, tiles, tiles, sms)
def test_wave_covers_the_concurrent_tiles_within_the_grid(m, n, tm, tn, s):
    r, c = memory.wave_shape(m, n, tm, tn, s)
    rows, cols = np.ceil(m / tm), np.ceil(n / tn)
    assert 1 <= r <= rows and 1 <= c <= cols
    assert r * c >= min(rows * cols, s)


def test_dram_traffic_levels():
    h = hardware.get("H100 SXM5")
    single = memory.dram_traffic(4096, 1024, 4096, 128, 128, 132, h.l2_bytes)
    assert single == memory.matmul_min_traffic(4096, 1024, 4096)
    per_tile = memory.dram_traffic(4096, 1024, 4096, 128, 128, 132, 1.0)
    assert per_tile == 2 * (4096 * 1024 * 32 * 2 + 4096 * 4096)
    assert memory.l2_reuse(4096, 1024, 4096, 128, 128, 132, h.l2_bytes) == 2
    assert memory.l2_reuse(16384, 1024, 4096, 128, 128, 132, h.l2_bytes) == 1
    assert memory.l2_reuse(16384, 1024, 4096, 128, 128, 132, 1.0) == 0
    v100 = hardware.get("V100 SXM2 16GB")
    assert memory.l2_reuse(4096, 4096, 1024, 128, 128, 80, v100.l2_bytes) == 1
    assert memory.l2_reuse(4096, 4096, 1024, 128, 128, 80, v100.l2_bytes, k_in_flight=4096) == 0
    assert memory.wave_working_set(4096, 1024, 4096, 128, 128, 132) == (12 + 11) * 128 * 256 * 2


def test_forty_mib_no_longer_fits_in_forty():
    a100 = hardware.get("A100 SXM4 40GB")
    assert memory.matmul_operand_bytes(4096, 4096, 1024) == a100.l2_bytes
    assert memory.l2_reuse(4096, 4096, 1024, 128, 128, a100.sm_count, a100.l2_bytes) < 2


@settings(max_examples=200, deadline=None)
@given(dims, dims, dims, tiles, sms, st.floats(1e3, 1e9), st.floats(1.0, 8.0))
def test_more_l2_never_more_traffic(m, k, n, tile, s, l2, factor):
    small = memory.dram_traffic(m, k, n, tile, tile, s, l2)
    large = memory.dram_traffic(m, k, n, tile, tile, s, l2 * factor)
    assert large <= small * (1 + 1e-12)
    assert large >= memory.matmul_min_traffic(m, k, n) * (1 - 1e-12)


def test_flagship_matmul_is_overhead_bound_on_an_h100():
    h = hardware.get("H100 SXM5")
    f, q = memory.matmul_flops(256, 1024, 1024), memory.matmul_min_traffic(256, 1024, 1024)
    t = memory.kernel_seconds(f, q, h.peak_flops(), h.bandwidth)
    assert t == pytest.approx(q / 3.35e12)
    assert t < 1e-6
    assert memory.REGIMES[int(memory.regime(f, q, h.peak_flops(), h.bandwidth))] == "memory"
    assert memory.REGIMES[int(memory.regime(f, q, h.peak_flops(), h.bandwidth, 5e-6))] == "overhead"
    assert memory.kernel_seconds(f, q, h.peak_flops(), h.bandwidth, 5e-6) == 5e-6
    terms = memory.kernel_terms(f, q, h.peak_flops(), h.bandwidth, 5e-6)
    assert list(terms) == list(memory.REGIMES)
    assert terms["compute"] == f / h.peak_flops() and terms["memory"] == q / h.bandwidth


def test_deepbench_configurations_on_a_v100():
    v = hardware.get("V100 SXM2 16GB")
    flop = memory.matmul_flops(4096, 4096, 128)

    def tflops(tm, tn, split, l2=None):
        return flop / memory.gemm_seconds(4096, 4096, 128, v.peak_flops(), v.bandwidth, v.sm_count,
                                          tm, tn, split, l2_bandwidth=l2) / 1e12
    assert tflops(128, 128, 1) == pytest.approx(0.4 * 125)
    assert tflops(128, 128, 2) == pytest.approx(flop / ((35.65e6 + 8 * 2**20 * 8 / 8) / 900e9) / 1e12, rel=0.02)
    assert tflops(64, 64, 1, 2.44e12) < tflops(64, 64, 1)


@settings(max_examples=200, deadline=None)
@given(dims, dims, dims, st.floats(1e10, 1e13), st.floats(1.0, 10.0), st.integers(1, 8))
def test_gemm_more_bandwidth_never_slower(m, k, n, bw, factor, split):
    slow = memory.gemm_seconds(m, k, n, 1e14, bw, 80, 128, 128, split)
    fast = memory.gemm_seconds(m, k, n, 1e14, bw * factor, 80, 128, 128, split)
    assert fast <= slow * (1 + 1e-12)
    assert slow >= memory.matmul_flops(m, k, n) / 1e14 * (1 - 1e-12)


def test_decode_bound():
    assert memory.decode_tokens_per_second(13.5e9, 2039e9) == pytest.approx(2039 / 13.5)
    assert memory.decode_tokens_per_second(16e9, 1e12, batch=4, kv_bytes_per_sequence=1e9) == pytest.approx(4e12 / 20e9)


@settings(max_examples=200, deadline=None)
@given(st.floats(1e6, 1e12), st.floats(1e9, 1e13), st.integers(1, 512), st.floats(0, 1e10))
def test_decode_larger_batch_never_fewer_tokens(w, bw, batch, kv):
    assert (memory.decode_tokens_per_second(w, bw, batch + 1, kv)
            >= memory.decode_tokens_per_second(w, bw, batch, kv) * (1 - 1e-12))


@pytest.mark.parametrize("call, name", [
    (lambda: memory.matmul_intensity(1, 1, 1, 1, count="pairs"), "count"),
    (lambda: memory.output_tile_intensity(0, 1), "tile_m"),
    (lambda: memory.wave_shape(1, 1, 1, 1, 0.5), "sms"),
    (lambda: memory.l2_reuse(1, 1, 1, 1, 1, 1, 0), "l2_bytes"),
    (lambda: memory.kernel_seconds(1, 1, 1, 1, -1), "overhead_seconds"),
    (lambda: memory.gemm_seconds(1, 1, 1, 1, 1, 1, split_k=1.5), "split_k"),
    (lambda: memory.gemm_seconds(1, 1, 1, 1, 1, 1, l2_bandwidth=0), "l2_bandwidth"),
    (lambda: memory.decode_tokens_per_second(1, 1, batch=0), "batch"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
