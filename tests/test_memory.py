"""The memory-hierarchy models: worked examples from the TPU post, properties, and bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumodel import hardware, memory, units

P = memory.TPU_POST
dims = st.integers(min_value=1, max_value=8192)
tiles = st.integers(min_value=1, max_value=512)


def test_post_tile_counts():
    assert memory.tile_count(256, 1024, 128) == 16
    assert memory.tile_count(1024, 1024, 128) == 64
    assert memory.tile_count(256, 1024, 96) == 33
    assert memory.tile_count(1024, 1024, 96) == 121
    assert memory.tile_loads(256, 1024, 1024, 128) == 1024
    assert memory.tile_loads(256, 1024, 1024, 96) == 3993


def test_post_bytes_are_mebibytes():
    assert memory.matmul_tile_traffic(256, 1024, 1024, 128, "fp16") == 32 * units.MiB
    assert memory.matmul_tile_traffic(256, 1024, 1024, 96, "fp16") == 3993 * 96 * 96 * 2


def test_post_seconds_need_binary_units():
    binary = memory.tpu_post_seconds(128, 600)
    decimal = memory.tpu_post_seconds(128, 600, unit="GB/s")
    assert binary == pytest.approx(32 / 600 / 1024)
    assert round(binary, 6) == 5.2e-05
    assert round(decimal, 6) != 5.2e-05
    assert memory.tpu_post_seconds(96, 900) == pytest.approx(3993 * 96 * 96 * 2 / (900 * 2**30))


def test_post_ratios():
    tpu = memory.tpu_post_seconds(128, 600)
    v100 = memory.tpu_post_seconds(96, 900)
    assert round(100 * memory.slower_by(tpu, v100)) == 32
    fp32 = memory.tpu_post_seconds(64, 900, "fp32")
    assert memory.speedup(fp32, tpu) == pytest.approx(256 / 900 / (32 / 600))
    int8 = memory.tpu_post_seconds(128, 900, "int8")
    assert memory.speedup(tpu, int8) == pytest.approx(3.0)


def test_output_stationary_count():
    assert memory.tile_loads(256, 1024, 1024, 128, "output_stationary") == 2 * 2 * 8 * 8
    assert memory.tile_loads(256, 1024, 1024, 96, "output_stationary") == 2 * 3 * 11 * 11


def test_roofline_and_ridge():
    assert memory.matmul_flops(2, 3, 4) == 48
    assert memory.matmul_min_traffic(2, 3, 4, "fp32") == (6 + 12 + 8) * 4
    assert memory.arithmetic_intensity(2, 3, 4, "fp32") == pytest.approx(48 / 104)
    assert memory.ridge_point(312e12, 1555e9) == pytest.approx(200.64, rel=1e-4)
    assert memory.roofline(10.0, 312e12, 1555e9) == pytest.approx(15.55e12)
    assert memory.roofline(1e4, 312e12, 1555e9) == 312e12


def test_quantization_examples():
    assert memory.tile_quantization_efficiency(1024, 4096, 128, 128) == 1.0
    assert memory.tile_quantization_efficiency(1025, 4096, 128, 128) == pytest.approx(1025 / 1152)
    assert memory.wave_count(1024, 4096, 128, 128, 108) == 3  # 256 tiles on 108 SMs
    assert memory.wave_efficiency(1024, 4096, 128, 128, 108) == pytest.approx(256 / 324)


def test_bert_large_and_l2():
    shapes = memory.bert_large_matmuls(4096)
    assert shapes["FFN up"] == (4096, 1024, 4096)
    assert memory.matmul_operand_bytes(4096, 1024, 4096) == (4096 * 1024 + 1024 * 4096) * 2
    assert memory.fits_in_cache(8 * units.MiB, 6 * units.MiB) == np.False_


def test_batch_correction_reproduces_mask_rcnn():
    assert memory.batch_corrected_speedup(25, 15, 8, 4) == pytest.approx(25 / 15 / 1.136)
    assert memory.batch_corrected_speedup(10, 5, 4, 4, network_factor=1.05) == pytest.approx(2 / 1.05)


@settings(max_examples=200, deadline=None)
@given(dims, dims, dims, tiles)
def test_output_stationary_never_exceeds_all_pairs(m, k, n, t):
    assert memory.tile_loads(m, k, n, t, "output_stationary") <= 2 * memory.tile_loads(m, k, n, t)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 16), st.integers(1, 16), st.integers(1, 16), st.integers(1, 128))
def test_doubling_a_dividing_tile_halves_traffic(a, b, c, t):
    m, k, n = 2 * t * a, 2 * t * b, 2 * t * c
    small = memory.matmul_tile_traffic(m, k, n, t, scheme="output_stationary")
    large = memory.matmul_tile_traffic(m, k, n, 2 * t, scheme="output_stationary")
    assert large == small / 2


@settings(max_examples=200, deadline=None)
@given(dims, dims, tiles, tiles, st.integers(1, 200))
def test_efficiencies_are_fractions(m, n, tm, tn, sms):
    eff = memory.quantization_efficiency(m, n, tm, tn, sms)
    assert 0 < eff <= 1
    assert eff <= memory.tile_quantization_efficiency(m, n, tm, tn)


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-3, 1e5), st.floats(1e12, 1e16), st.floats(1e10, 1e13))
def test_roofline_is_bounded_and_monotone(i, peak, bw):
    p = memory.roofline(i, peak, bw)
    assert p <= peak and p <= bw * i * (1 + 1e-12)
    assert memory.roofline(2 * i, peak, bw) >= p


@settings(max_examples=100, deadline=None)
@given(dims, dims, dims)
def test_roofline_time_at_least_each_bound(m, k, n):
    t = memory.matmul_roofline_seconds(m, k, n, 312e12, 1555e9)
    assert t >= memory.matmul_flops(m, k, n) / 312e12
    assert t >= memory.matmul_min_traffic(m, k, n) / 1555e9


def test_broadcasting_matches_scalar_calls():
    rng = np.random.default_rng(1)
    m = rng.integers(1, 4096, 1000)
    t = rng.choice([32, 64, 96, 128], 1000)
    vector = memory.matmul_load_seconds(m, 1024, 1024, t, 900.0)
    scalar = [memory.matmul_load_seconds(int(a), 1024, 1024, int(b), 900.0) for a, b in zip(m[:50], t[:50])]
    assert vector.shape == (1000,)
    np.testing.assert_allclose(vector[:50], scalar)


@pytest.mark.parametrize("call, name", [
    (lambda: memory.tile_loads(0, 1024, 1024, 128), "m"),
    (lambda: memory.tile_loads(256, -1, 1024, 128), "k"),
    (lambda: memory.tile_loads(256, 1024, 1024, 0), "tile"),
    (lambda: memory.tile_loads(256, 1024, 1024, 12.5), "tile"),
    (lambda: memory.tile_loads(256, 1024, 1024, 128, "diagonal"), "scheme"),
    (lambda: memory.matmul_tile_traffic(256, 1024, 1024, 128, "fp12"), "dtype"),
    (lambda: memory.transfer_seconds(1e6, 0), "bandwidth"),
    (lambda: memory.transfer_seconds(1e6, 600, "GB/h"), "bandwidth unit"),
    (lambda: memory.transfer_seconds(float("nan"), 600), "nbytes"),
    (lambda: memory.roofline(1.0, -1, 1e9), "peak_flops"),
    (lambda: memory.wave_efficiency(128, 128, 64, 64, 0), "sms"),
    (lambda: memory.matmul_flops("big", 1, 1), "m"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_unknown_dtype_suggests():
    with pytest.raises(ValueError, match="did you mean 'fp16'"):
        units.dtype_bytes("fp-16x")


# --- the house contract: overflow, types and shapes (issue regressions) -----------------------

def test_load_seconds_blames_the_callers_sizes():
    with pytest.raises(ValueError, match="k") as err:
        memory.matmul_load_seconds(256, 1e300, 1024, 128, 900)
    assert "nbytes" not in str(err.value)  # a parameter this caller never passed


@pytest.mark.parametrize("call, names", [
    (lambda: memory.arithmetic_intensity(1e200, 1e200, 1e200), ("m", "k", "n")),
    (lambda: memory.transfer_seconds(1, 1e-320), ("bandwidth",)),
    (lambda: memory.tile_count(True, True, True), ("rows",)),
    (lambda: memory.tile_count("1", 1, 1), ("rows",)),
    (lambda: memory.tile_count(1 + 0j, 1, 1), ("rows",)),
    (lambda: memory.tile_count(None, 1, 1), ("rows",)),
    (lambda: memory.matmul_flops(10**400, 1, 1), ("m",)),
    (lambda: memory.batch_corrected_speedup(2000, 1000, 96.5, 32), ("batch_new",)),
    (lambda: memory.speedup(np.ones(3), np.ones(2)), ("time_before", "time_after")),
    (lambda: memory.matmul_tile_traffic(256, 1024, 1024, 128, ["fp16"]), ("dtype",)),
])
def test_contract_names_what_the_caller_passed(call, names):
    with pytest.raises(ValueError) as err:
        call()
    message = str(err.value)
    assert any(name in message for name in names), message


def test_overflow_message_names_the_arguments():
    with pytest.raises(ValueError, match=r"m, k, n are too large"):
        memory.matmul_flops(1e103, 1e103, 1e103)


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-300, 1e300), st.floats(1e-300, 1e300), st.floats(1.0, 1e3))
def test_more_bandwidth_never_slower(nbytes, bandwidth, factor):
    try:
        slow = memory.transfer_seconds(nbytes, bandwidth)
        fast = memory.transfer_seconds(nbytes, bandwidth * factor)
    except ValueError:  # the time under- or overflows float64: refused, never inf
        return
    assert np.isfinite(slow) and fast <= slow


# --- issue 24: physical properties ------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(m=st.integers(1, 5000), k=st.integers(1, 5000), n=st.integers(1, 5000),
       tile=st.integers(1, 512), dtype=st.sampled_from(["fp32", "fp16", "int8"]),
       scheme=st.sampled_from(list(memory.LOAD_SCHEMES)))
def test_tile_traffic_is_at_least_the_operands(m, k, n, tile, dtype, scheme):
    traffic = memory.matmul_tile_traffic(m, k, n, tile, dtype, scheme)
    assert traffic >= (m * k + k * n) * units.dtype_bytes(dtype)


def test_all_pairs_count_is_clamped_where_it_stops_being_a_traffic():
    assert memory.tile_loads(8, 8, 8, 8) == 1
    assert memory.matmul_tile_traffic(8, 8, 8, 8, "fp32", "all_pairs") == 2 * 8 * 8 * 4


def test_shape_mismatch_names_the_callers_arguments():
    with pytest.raises(ValueError, match=r"tile \(2,\), bandwidth \(3,\)"):
        memory.tpu_post_seconds([128, 256], [1.0, 2.0, 3.0])


def test_tpu_v2_against_v100_depends_on_the_tile():
    """The memory chapter's BERT 256 x 1024 x 1024 case: 128 tiles favour the TPU, 64 the V100."""
    tpu, v100 = hardware.get("TPU v2"), hardware.get("V100 SXM2 16GB")
    bert = (256, 1024, 1024)

    def t(acc, units_, tile, dtype):
        return memory.gemm_seconds(*bert, acc.peak_flops(dtype), acc.bandwidth, units_, tile,
                                   tile, dtype=dtype)

    assert t(tpu, memory.TPU_V2_MATRIX_UNITS, 128, "bf16") == pytest.approx(11.6711e-6, rel=1e-4)
    assert t(v100, 80, 128, "fp16") == pytest.approx(21.4748e-6, rel=1e-4)
    assert t(v100, 80, 64, "fp16") == pytest.approx(5.3687e-6, rel=1e-4)


# --- attention, unfused and fused (issue 21) ---------------------------------------------------

def test_attention_worked_example_on_the_h100():
    n, d = 4096, 128
    assert memory.attention_flops(n, d) == 4 * n**2 * d
    unfused = memory.attention_bytes(n, d, False)
    assert unfused == 2 * (4 * n * d + 4 * n**2)
    assert memory.attention_bytes(n, d, True) == 2 * n * d * (2 + 2 * 32)
    assert memory.attention_bytes(n, d, True, block_rows=n) == 4 * n * d * 2
    assert memory.attention_intensity(n, d, False) == pytest.approx(n * d / (2 * (n + d)))
    assert round(float(memory.attention_intensity(n, d, False))) == 62
    assert memory.attention_intensity(n, d, True) == pytest.approx(2 * n / (2 * 33))
    assert memory.attention_intensity(n, d, True, block_rows=n) == n / 2
    ridge = hardware.get("H100 SXM5").ridge_point("bf16")
    assert memory.attention_compute_bound_seq(ridge) == 591
    assert memory.attention_intensity(591, d, True, 591) >= ridge
    assert memory.attention_intensity(590, d, True, 590) < ridge


def test_attention_limits():
    big = 2**20
    assert memory.attention_intensity(big, 128, False) < 128 / 2
    assert memory.attention_intensity(big, 64, True, 128) < 2 * 128 / 2
    assert memory.attention_intensity(big, 64, True, 128) == pytest.approx(128, rel=1e-3)
    # the fused count does not depend on d; B_r past N changes nothing
    assert memory.attention_intensity(4096, 64, True) == memory.attention_intensity(4096, 256, True)
    assert memory.attention_bytes(100, 64, True, 128) == memory.attention_bytes(100, 64, True, 4096)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 65536), st.integers(1, 512), st.integers(1, 1024))
def test_fused_attention_never_moves_more_bytes(n, d, block_rows):
    fused = memory.attention_bytes(n, d, True, block_rows)
    assert fused <= memory.attention_bytes(n, d, False) * (1 + 1e-12) or block_rows < d
    assert memory.attention_bytes(n, d, True, n) <= fused
    assert memory.attention_intensity(n, d, True, block_rows) < 2 * block_rows / 2 + 1e-9
    assert memory.attention_intensity(n, d, False) < d / 2


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 32768), st.integers(1, 512), st.integers(1, 1024))
def test_fused_attention_intensity_grows_with_the_sequence(n, d, block_rows):
    now = memory.attention_intensity(n, d, True, block_rows)
    assert memory.attention_intensity(2 * n, d, True, block_rows) >= now
    assert memory.attention_intensity(n + 1, d, False) > memory.attention_intensity(n, d, False)


def test_attention_broadcasts():
    n = np.array([512, 1024, 2048, 4096])[:, None]
    d = np.array([64, 128])
    grid = memory.attention_intensity(n, d, True, 128)
    assert grid.shape == (4, 2)
    assert float(grid[3, 1]) == memory.attention_intensity(4096, 128, True, 128)


@pytest.mark.parametrize("call, name", [
    (lambda: memory.attention_flops(0, 128), "seq"),
    (lambda: memory.attention_flops(4096, 12.5), "head_dim"),
    (lambda: memory.attention_bytes(4096, 128, 1), "fused"),
    (lambda: memory.attention_bytes(4096, 128, True, 0), "block_rows"),
    (lambda: memory.attention_bytes(4096, 128, True, dtype="fp12"), "dtype"),
    (lambda: memory.attention_intensity(-1, 128, False), "seq"),
    (lambda: memory.attention_intensity(4096, float("nan"), True), "head_dim"),
    (lambda: memory.attention_compute_bound_seq(0), "ridge"),
    (lambda: memory.attention_compute_bound_seq(float("inf")), "ridge"),
])
def test_attention_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_wave_groups_h100_4096():
    groups = memory.wave_groups(4096, 4096, 128, 128, 132)
    assert groups.shape == (32, 32)
    assert (groups == 0).sum() == 132  # a 12 x 11 block, one tile per SM
    assert groups[:12, :11].max() == 0 and groups[12, 0] == 3 and groups[0, 11] == 1
    assert groups.max() + 1 == 9  # 3 x 3 blocks, the edge ones partial
    assert memory.wave_groups(256, 1024, 128, 128, 80).tolist() == [[0] * 8, [0] * 8]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4096), st.integers(1, 4096), st.sampled_from([32, 64, 128, 256]),
       st.sampled_from([64, 128, 256]), st.integers(1, 200))
def test_wave_groups_match_the_per_wave_traffic(m, n, tile_m, tile_n, sms):
    groups = memory.wave_groups(m, n, tile_m, tile_n, sms)
    rows, cols = groups.shape
    r, c = memory.wave_shape(m, n, tile_m, tile_n, sms)
    assert (rows, cols) == (-(-m // tile_m), -(-n // tile_n))
    assert all(np.sum(groups == g) <= r * c for g in np.unique(groups))
    assert np.sum(groups == 0) == min(r * c, rows * cols)
    # each strip of A is read once per group in its row of tiles, as dram_traffic counts per wave
    reads_a = {len(set(row)) for row in groups.tolist()}
    reads_b = {len(set(col)) for col in groups.T.tolist()}
    assert reads_a == {int(np.ceil(cols / c))} and reads_b == {int(np.ceil(rows / r))}


@pytest.mark.parametrize("call, name", [
    (lambda: memory.wave_groups(0, 4096, 128, 128, 132), "m"),
    (lambda: memory.wave_groups(4096, 4096.5, 128, 128, 132), "n"),
    (lambda: memory.wave_groups(4096, 4096, [128, 64], 128, 132), "tile_m"),
    (lambda: memory.wave_groups(4096, 4096, 128, -1, 132), "tile_n"),
    (lambda: memory.wave_groups(4096, 4096, 128, 128, float("nan")), "sms"),
    (lambda: memory.wave_groups(10**6, 10**6, 128, 128, 132), "m and n"),
])
def test_wave_groups_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_wave_diagram_h100_4096():
    from gpumodel.explorations import memory_hierarchy as mh

    frame = mh.wave_reuse_frame(4096, 4096, 4096, 128, "H100 SXM5")
    parts = list(mh.WAVE_PARTS)
    wave = frame[frame["part"] == parts[0]].iloc[0]
    assert (wave["x2"], wave["y2"]) == (11 * 128, 12 * 128)  # the 12 x 11 block of 132 tiles
    strips = frame[frame["part"] == parts[2]]["what"]
    assert strips.str.startswith("A").sum() == 12 and strips.str.startswith("B").sum() == 11
    spec = mh.wave_reuse_chart().to_dict()
    assert "12 x 11 block" in spec["description"] and "132 SMs" in spec["description"]
    assert len(str(spec["datasets"])) < 150_000


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8192), st.integers(1, 8192), st.sampled_from([64, 128, 256]),
       st.sampled_from(["V100 SXM2 16GB", "A100 SXM4 40GB", "H100 SXM5", "RTX 4090"]))
def test_wave_diagram_shares_what_the_model_shares(m, n, tile, gpu):
    from gpumodel.explorations import memory_hierarchy as mh

    frame = mh.wave_reuse_frame(m, n, 1024, tile, gpu)
    r, c = memory.wave_shape(m, n, tile, tile, hardware.get(gpu).sm_count)
    read = frame[frame["part"] == list(mh.WAVE_PARTS)[2]]["what"]
    assert read.str.startswith("A").sum() == r and read.str.startswith("B").sum() == c
    wave = frame[frame["part"] == list(mh.WAVE_PARTS)[0]].iloc[0]
    assert wave["x2"] == min(c * tile, n) and wave["y2"] == min(r * tile, m)


@pytest.mark.parametrize("kwargs, name", [
    (dict(tile=0), "tile"), (dict(k=2.5), "k"), (dict(m=-4), "m"), (dict(n=[4096]), "n"),
    (dict(gpu="TPU v2"), "gpu"), (dict(gpu="no such GPU"), "gpu"), (dict(m=10**7, n=10**7), "m and n"),
])
def test_wave_diagram_bad_input_names_the_parameter(kwargs, name):
    from gpumodel.explorations import memory_hierarchy as mh

    with pytest.raises(ValueError, match=name):
        mh.wave_reuse_chart(**kwargs)
