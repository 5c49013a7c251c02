"""The Tensor Core cycle model: the GPU guide's worked example, properties, peaks, and bad input."""
import sys
import types

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpumodel import hardware
from gpumodel import tensor_cores as tc
from gpumodel.audit import tensor_cores as audit_rows

POST = tc.POST_EXAMPLE
latency = st.floats(min_value=0, max_value=2000, allow_nan=False)
extra = st.floats(min_value=0, max_value=1000, allow_nan=False)
sizes = st.integers(min_value=1, max_value=1024)
counts = st.integers(min_value=1, max_value=256)
small_counts = st.integers(min_value=1, max_value=64)
methods = st.sampled_from(tc.METHODS)
LATENCY_NAMES = ("global_latency", "shared_latency", "ffma_latency", "mma_latency")


@st.composite
def configs(draw):
    return {"size": draw(sizes), "sms": draw(counts), "warps_per_sm": draw(small_counts),
            "tensor_cores_per_sm": draw(small_counts), "global_latency": draw(latency),
            "shared_latency": draw(latency), "ffma_latency": draw(latency), "mma_latency": draw(latency)}


SHAPE = ("size", "sms", "warps_per_sm", "tensor_cores_per_sm")


# --- the post's worked example ---------------------------------------------------------------

def test_post_rounds():
    rounds = tc.matmul_rounds()
    assert (rounds["global"], rounds["ffma"], rounds["tensor_core"]) == (1, 8, 1)
    assert tc.matmul_rounds(fma_per_thread=1)["ffma"] == 16


def test_post_cycles():
    assert tc.matmul_cycles(**POST, method="ffma") == 200 + 8 * 34 + 8 * 4 == 504
    assert tc.matmul_cycles(**POST, method="tensor_core") == 200 + 34 + 1 == 235
    assert tc.matmul_cycles(**POST, method="async_copy") == (200 - 34 - 1) + 34 + 1 == 200
    assert tc.matmul_cycles() == 504  # the defaults are the post's example


def test_post_breakdown():
    assert tc.matmul_cycle_breakdown(method="ffma") == {"global": 200, "shared": 272, "compute": 32}
    assert tc.matmul_cycle_breakdown(method="tensor_core") == {"global": 200, "shared": 34, "compute": 1}
    assert tc.matmul_cycle_breakdown(method="async_copy") == {"global": 165, "shared": 34, "compute": 1}


def test_post_tma_gain():
    gain = tc.speedup_percent(tc.matmul_cycles(method="tensor_core"), tc.matmul_cycles(method="async_copy"))
    assert gain == pytest.approx(100 * (1 - 200 / 235))
    assert round(float(gain)) == 15


def test_what_the_post_leaves_out():
    assert tc.matmul_cycles(fma_per_thread=1) == 200 + 16 * 34 + 16 * 4 == 808
    assert tc.matmul_cycles(mma_latency=16, method="tensor_core") == 250  # A100's measured mma latency
    assert tc.matmul_cycles(global_latency=380, method="tensor_core") == 415  # the post's own global memory


def test_counting_k():
    # 8 x 8 blocks of C, 8 operations each along K: 512 ops on 64 Tensor Cores
    assert tc.matmul_rounds(count_k=True)["tensor_core"] == 8
    assert tc.matmul_rounds(count_k=True)["ffma"] == 8  # FFMA rounds do not change
    assert tc.matmul_cycles(method="tensor_core", count_k=True) == 200 + 8 * (34 + 1) == 480
    assert tc.matmul_cycle_breakdown(method="tensor_core", count_k=True) == {
        "global": 200, "shared": 8 * 34, "compute": 8}
    assert tc.matmul_cycles(method="async_copy", count_k=True) == max(200, 8 * 35) == 280
    assert tc.matmul_cycles(method="tensor_core", count_k=False) == 235  # the post's count


def test_more_work_than_units_takes_more_rounds():
    rounds = tc.matmul_rounds(size=64)
    assert (rounds["global"], rounds["ffma"], rounds["tensor_core"]) == (4, 64, 4)
    rounds = tc.matmul_rounds(sms=1)
    assert (rounds["global"], rounds["ffma"], rounds["tensor_core"]) == (8, 64, 8)
    assert tc.matmul_rounds(size=33)["tensor_core"] == 2  # 9 x 9 = 81 ops on 64 Tensor Cores


def test_audit_rows_match():
    rows = [row.evaluate() for row in audit_rows.ROWS]
    assert [r["id"] for r in rows] == ["tensor_cores.cycles_ffma", "tensor_cores.cycles_tensor_core",
                                       "tensor_cores.cycles_async_tma", "tensor_cores.tma_gain"]
    assert all(r["status"] == "match" for r in rows), rows


# --- properties ----------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(configs(), methods, st.sampled_from(LATENCY_NAMES), extra)
def test_more_latency_never_fewer_cycles(config, method, name, more):
    slower = {**config, name: config[name] + more}
    before = tc.matmul_cycles(**config, method=method)
    assert tc.matmul_cycles(**slower, method=method) >= before * (1 - 1e-12)  # async: (g - x) + x rounds


@settings(max_examples=200, deadline=None)
@given(configs(), methods)
def test_breakdown_sums_to_total(config, method):
    parts = tc.matmul_cycle_breakdown(**config, method=method)
    assert all(np.all(v >= 0) for v in parts.values())
    assert parts["global"] + parts["shared"] + parts["compute"] == pytest.approx(
        tc.matmul_cycles(**config, method=method))


@settings(max_examples=200, deadline=None)
@given(configs())
def test_tensor_cores_never_slower_than_ffma(config):
    # Same data, same latencies, on an SM whose Tensor Cores cover at least twice the FMAs per round
    # that its warps do (the factor 2 absorbs the padding of C to whole 4 x 4 blocks: ceil(141 / 4)^2
    # blocks on 1 Tensor Core against 34 warps is a counterexample with factor 1), and a Tensor Core
    # round no slower than an FFMA.
    assume(config["size"] >= 8)
    assume(8 * config["warps_per_sm"] <= config["size"] * config["tensor_cores_per_sm"])
    assume(config["mma_latency"] <= config["ffma_latency"])
    assert tc.matmul_cycles(**config, method="tensor_core") <= tc.matmul_cycles(**config, method="ffma")


@settings(max_examples=200, deadline=None)
@given(configs(), methods)
def test_counting_k_never_fewer_cycles(config, method):
    with_k = tc.matmul_rounds(**{k: config[k] for k in SHAPE}, count_k=True)
    without = tc.matmul_rounds(**{k: config[k] for k in SHAPE})
    assert with_k["tensor_core"] >= without["tensor_core"]
    assert with_k["ffma"] == without["ffma"] and with_k["global"] == without["global"]
    assert tc.matmul_cycles(**config, method=method, count_k=True) >= tc.matmul_cycles(
        **config, method=method) * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(configs())
def test_async_never_slower_than_tensor_core(config):
    assert tc.matmul_cycles(**config, method="async_copy") <= tc.matmul_cycles(**config, method="tensor_core")
    assert tc.matmul_cycles(**config, method="async_copy") >= 0


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=10_000), latency, latency)
def test_double_buffering_bounds(k, load, compute):
    serial = tc.tiled_loop_cycles(k, load, compute, double_buffered=False)
    double = tc.tiled_loop_cycles(k, load, compute, double_buffered=True)
    assert serial == pytest.approx(k * (load + compute))
    assert double <= serial * (1 + 1e-12)
    assert double >= max(k * load, k * compute) * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=10_000), latency, st.floats(min_value=0.01, max_value=2000))
def test_utilization_is_a_fraction_and_double_buffering_helps(k, load, compute):
    serial = tc.tensor_core_utilization(k, load, compute, double_buffered=False)
    double = tc.tensor_core_utilization(k, load, compute, double_buffered=True)
    assert 0 < serial <= double * (1 + 1e-12)
    assert double <= 1 + 1e-12


def test_tiled_loop_examples():
    assert tc.tiled_loop_cycles(8, 200, 35) == 8 * 235
    assert tc.tiled_loop_cycles(8, 200, 35, double_buffered=True) == 235 + 7 * 200
    assert tc.tiled_loop_cycles(1, 200, 35, double_buffered=True) == 235
    assert tc.tensor_core_utilization(4, 10, 30, double_buffered=True) == pytest.approx(120 / 130)


def test_broadcasting_matches_scalar_calls():
    latencies = np.linspace(0, 999, 1000)
    for method in tc.METHODS:
        batch = tc.matmul_cycles(global_latency=latencies, method=method)
        assert batch.shape == (1000,)
        expected = [tc.matmul_cycles(global_latency=g, method=method) for g in latencies]
        np.testing.assert_array_equal(batch, expected)
        parts = tc.matmul_cycle_breakdown(ffma_latency=latencies, method=method)
        assert all(v.shape == (1000,) for v in parts.values())
    grid = tc.matmul_cycles(size=np.array([[16], [32], [64]]), sms=np.array([4, 8]))
    assert grid.shape == (3, 2)
    assert grid[1, 1] == 504
    assert tc.tiled_loop_cycles(np.arange(1, 4), 10.0, 5.0, True).tolist() == [15, 25, 35]


# --- peaks ---------------------------------------------------------------------------------

def test_peaks_from_whitepaper_constants():
    per_tc = tc.FLOP_PER_TENSOR_CORE_PER_CYCLE
    assert tc.peak_tensor_flops(80, 8, per_tc["Volta (GV100)"], 1.53e9) / 1e12 == pytest.approx(125.3376)
    assert tc.peak_tensor_flops(108, 4, per_tc["Ampere (GA100)"], 1.41e9) / 1e12 == pytest.approx(311.86944)
    assert tc.peak_tensor_flops(132, 4, per_tc["Hopper (GH100)"], 1.83e9) / 1e12 == pytest.approx(989.42976)
    assert round(float(tc.peak_tensor_flops(108, 4, 512, 1.41e9)) / 1e12) == 312


def test_flop_per_tensor_core_lookup():
    assert tc.flop_per_tensor_core_cycle("Ampere (GA102)") == 256
    assert tc.flop_per_tensor_core_cycle("Ampere (GA102)", geforce_half_rate=True) == 128
    assert tc.flop_per_tensor_core_cycle("Ada (AD104)", geforce_half_rate=True) == 128
    assert tc.flop_per_tensor_core_cycle("Turing (TU104)") == 128
    assert tc.flop_per_tensor_core_cycle("hopper (gh100)") == 1024
    assert tc.flop_per_tensor_core_cycle("CDNA3 (8 XCDs)") == 512
    assert set(tc.TENSOR_CORE_SOURCES) == set(tc.FLOP_PER_TENSOR_CORE_PER_CYCLE)


def test_derived_peaks_agree_with_the_hardware_table():
    rows = tc.derived_vs_published()
    names = {r["name"] for r in rows}
    eligible = [a for a in hardware.accelerators()
                if None not in (a.sm_count, a.tensor_cores_per_sm, a.peak_clock_mhz, a.fp16_tflops)]
    assert len(rows) >= 5
    assert names <= {a.name for a in eligible}
    for row in rows:
        assert row["ratio"] == pytest.approx(row["derived_tflops"] / row["published_tflops"])
        assert 0.95 <= row["ratio"] <= 1.05, row  # SMs x Tensor Cores x FLOP/cycle x boost clock


def test_derived_vs_published_takes_a_list_and_skips_incomplete_rows():
    a100 = hardware.get("A100 SXM4 40GB")
    tpus = [a for a in hardware.accelerators() if a.kind == "tpu"]
    rows = tc.derived_vs_published([a100, *tpus])
    assert [r["name"] for r in rows] == ["A100 SXM4 40GB"]
    assert rows[0]["derived_tflops"] == pytest.approx(108 * 4 * 512 * a100.peak_clock_mhz * 1e6 / 1e12)


# --- latency presets -------------------------------------------------------------------------

FAKE_TABLE = {("Ampere (Dettmers 2023)", "global"): 380.0, ("Ampere (Dettmers 2023)", "l2"): 200.0,
              ("Ampere (Dettmers 2023)", "shared"): 34.0, ("Ampere (Dettmers 2023)", "ffma"): 4.0,
              ("Ampere (Dettmers 2023)", "mma_fp16"): 1.0,
              ("Ampere", "l2"): 205.7, ("Ampere", "global"): 552.4, ("Ampere", "shared"): 23.0,
              ("Ampere", "ffma"): 4.0, ("Ampere", "mma_fp16"): 16.0,
              ("Hopper", "l1"): 32.1, ("Hopper", "l2"): 280.4, ("Hopper", "global"): 689.2}


@pytest.fixture
def fake_measured(monkeypatch):
    """A stand-in for gpumodel.measured, to test latency_preset's own logic."""
    def latency(architecture, quantity):
        try:
            return FAKE_TABLE[(architecture, quantity)]
        except KeyError:
            raise ValueError(f"no {quantity} latency for {architecture}") from None
    module = types.SimpleNamespace(latency=latency)
    monkeypatch.setitem(sys.modules, "gpumodel.measured", module)
    return module


def test_latency_preset_logic(fake_measured):
    preset = tc.latency_preset("Ampere (Dettmers 2023)")
    assert preset == {"global_latency": 200, "shared_latency": 34, "ffma_latency": 4, "mma_latency": 1}
    assert tc.matmul_cycles(**preset, method="tensor_core") == 235
    assert tc.latency_preset("Ampere (Dettmers 2023)", "global")["global_latency"] == 380
    assert tc.latency_preset("Ampere", tensor_core_latency="measured")["mma_latency"] == 16
    hopper = tc.latency_preset("Hopper")
    assert hopper["shared_latency"] == 32.1  # falls back to L1
    assert hopper["ffma_latency"] == tc.FFMA_LATENCY_FALLBACK
    assert hopper["mma_latency"] == 1
    with pytest.raises(ValueError, match="mma_fp16"):
        tc.latency_preset("Hopper", tensor_core_latency="measured")


def test_latency_preset_with_the_real_table():
    measured = pytest.importorskip("gpumodel.measured")
    assert measured is not None
    preset = tc.latency_preset("Ampere (Dettmers 2023)")
    assert tc.matmul_cycles(**preset, method="ffma") == 504
    assert tc.matmul_cycles(**preset, method="tensor_core") == 235
    assert tc.latency_preset("Ampere (Dettmers 2023)", "global")["global_latency"] == 380
    for architecture in tc.ARCHITECTURES:
        for level in tc.MEMORY_LEVELS:
            try:
                preset = tc.latency_preset(architecture, level)
            except ValueError:
                continue  # e.g. no shared/L1 measurement for that architecture
            assert all(v > 0 for v in preset.values())
            assert tc.matmul_cycles(**preset, method="tensor_core") < tc.matmul_cycles(**preset, method="ffma")


# --- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, name", [
    ({"sms": 0}, "sms"), ({"warps_per_sm": 2.5}, "warps_per_sm"), ({"size": -32}, "size"),
    ({"tensor_cores_per_sm": 0}, "tensor_cores_per_sm"), ({"global_latency": -1}, "global_latency"),
    ({"shared_latency": np.array([34, -1])}, "shared_latency"), ({"ffma_latency": float("nan")}, "ffma_latency"),
    ({"mma_latency": "fast"}, "mma_latency"), ({"method": "tensorcore2"}, "method"),
    ({"tensor_core_tile": 0}, "tensor_core_tile"), ({"fma_per_thread": 0.5}, "fma_per_thread"),
])
def test_bad_matmul_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        tc.matmul_cycles(**kwargs)


def test_unknown_method_suggests():
    with pytest.raises(ValueError, match="did you mean 'tensor_core'"):
        tc.matmul_cycles(method="tensr_core")


def test_bad_loop_and_peak_input():
    with pytest.raises(ValueError, match="k_tiles"):
        tc.tiled_loop_cycles(0, 1, 1)
    with pytest.raises(ValueError, match="load_cycles"):
        tc.tiled_loop_cycles(4, -1, 1)
    with pytest.raises(ValueError, match="count_k"):
        tc.matmul_rounds(count_k="yes")
    with pytest.raises(ValueError, match="count_k"):
        tc.matmul_cycles(method="tensor_core", count_k=2)
    with pytest.raises(ValueError, match="double_buffered"):
        tc.tiled_loop_cycles(4, 1, 1, double_buffered="yes")
    with pytest.raises(ValueError, match="compute_cycles"):
        tc.tensor_core_utilization(4, 1, 0)
    with pytest.raises(ValueError, match="sms"):
        tc.peak_tensor_flops(0, 4, 512, 1.41e9)
    with pytest.raises(ValueError, match="clock_hz"):
        tc.peak_tensor_flops(108, 4, 512, -1)
    with pytest.raises(ValueError, match="architecture"):
        tc.flop_per_tensor_core_cycle("Kepler")
    with pytest.raises(ValueError, match="cycles_before"):
        tc.speedup_percent(0, 1)


def test_bad_preset_names():
    # Names are checked before gpumodel.measured is imported, so these need no latency table.
    with pytest.raises(ValueError, match="architecture"):
        tc.latency_preset("Pascal")
    with pytest.raises(ValueError, match="memory_level"):
        tc.latency_preset("Ampere", memory_level="dram")
    with pytest.raises(ValueError, match="tensor_core_latency"):
        tc.latency_preset("Ampere", tensor_core_latency="latency")


def test_cycles_to_seconds():
    assert tc.cycles_to_seconds(200, 2e9) == pytest.approx(1e-7)
    np.testing.assert_allclose(tc.cycles_to_seconds(np.array([0, 1410]), 1.41e9), [0, 1e-6])
    with pytest.raises(ValueError, match="clock_hz"):
        tc.cycles_to_seconds(1, 0)
    with pytest.raises(ValueError, match="cycles"):
        tc.cycles_to_seconds(-1, 1e9)


# --- issue regressions ------------------------------------------------------------------------

@pytest.mark.parametrize("architecture, fragment", [
    ("GB200", "no per-Tensor-Core rate"), ("B200", "no per-Tensor-Core rate"),
    ("Blackwell (GB100, 2 dies)", "no per-Tensor-Core rate"), ("GB100", "no per-Tensor-Core rate"),
    ("TU116", "no Tensor Cores"), ("Turing (TU117)", "no Tensor Cores"),
    (["Ampere"], "architecture must be a string"), (None, "architecture must be a string"),
])
def test_tensor_core_family_refuses_chips_without_a_rate(architecture, fragment):
    with pytest.raises(ValueError, match="architecture") as err:
        tc.tensor_core_family(architecture)
    assert fragment in str(err.value)


def test_tensor_core_family_keeps_the_consumer_chips():
    assert tc.tensor_core_family("Blackwell (GB202)") == "Blackwell (GB20x)"
    assert tc.tensor_core_family("Turing (TU102)") == "Turing (TU10x)"


def test_async_copy_more_latency_never_fewer_cycles_by_rounding():
    # Found by search: the old sum max(g - s - c, 0) + s + c rounded below g for the larger s.
    g, s, m = 636.9616873214543, 134.89335688193515, 2.0486761968097342
    before = tc.matmul_cycles(global_latency=g, shared_latency=s, mma_latency=m, method="async_copy")
    after = tc.matmul_cycles(global_latency=g, shared_latency=np.nextafter(s, np.inf), mma_latency=m,
                             method="async_copy")
    assert after >= before == g
    assert tc.matmul_cycles(**POST, method="async_copy") == 200


def test_derived_vs_published_refuses_non_records():
    with pytest.raises(ValueError, match="accelerators"):
        tc.derived_vs_published("A100")
    with pytest.raises(ValueError, match="accelerators"):
        tc.derived_vs_published([1, 2])


# --- shared memory against the Tensor Cores (section "How operands reach the Tensor Cores") ----

def test_smem_bandwidth_is_32_banks_of_4_bytes():
    assert tc.SMEM_BYTES_PER_CYCLE == 128.0


@pytest.mark.parametrize("args, read, write, share, cap", [
    ((64, 64, 128, 128, 2048.0), 64.0, 32.0, 0.75, 1.0),      # A100, mma.sync warp tiles
    ((64, 64, 128, 128, 4096.0), 128.0, 64.0, 1.5, 2 / 3),    # H100, the same tiles
    ((64, 256, 128, 256, 4096.0), 80.0, 48.0, 1.0, 1.0),      # H100, two 64 x 256 warpgroups
])
def test_smem_bytes_per_cycle_exact(args, read, write, share, cap):
    out = tc.smem_bytes_per_cycle(*args)
    assert out["read"] == read and out["write"] == write
    assert out["total"] == read + write
    assert out["share"] == pytest.approx(share) and out["cap"] == pytest.approx(cap)
    assert out["read"] == tc.operand_bytes_per_cycle(*args[:2], args[4])


def test_smem_bytes_per_cycle_broadcasts():
    out = tc.smem_bytes_per_cycle(64, 64, 128, 128, np.array([2048.0, 4096.0]))
    np.testing.assert_allclose(out["total"], [96.0, 192.0])
    np.testing.assert_allclose(out["cap"], [1.0, 2 / 3])


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 512), n=st.integers(1, 512), k=st.integers(1, 8),
       fpc=st.floats(1.0, 1e5), bw=st.floats(1.0, 1e4))
def test_smem_bytes_per_cycle_properties(m, n, k, fpc, bw):
    # A larger issuer tile (k times each side) never reads more; traffic scales with the rate.
    small = tc.smem_bytes_per_cycle(m, n, m, n, fpc, smem_bandwidth=bw)
    big = tc.smem_bytes_per_cycle(k * m, k * n, m, n, fpc, smem_bandwidth=bw)
    assert big["read"] <= small["read"] * (1 + 1e-12)
    double = tc.smem_bytes_per_cycle(m, n, m, n, 2 * fpc, smem_bandwidth=bw)
    assert double["total"] == pytest.approx(2 * small["total"])
    assert 0 < small["cap"] <= 1
    assert small["cap"] == pytest.approx(min(1.0, bw / small["total"]))


@pytest.mark.parametrize("kwargs, name", [
    (dict(mma_tile_m=0), "mma_tile_m"), (dict(mma_tile_n=1.5), "mma_tile_n"),
    (dict(cta_tile_m=-1), "cta_tile_m"), (dict(cta_tile_n=0), "cta_tile_n"),
    (dict(flop_per_cycle=0), "flop_per_cycle"), (dict(element_bytes=-2), "element_bytes"),
    (dict(smem_bandwidth=0), "smem_bandwidth"), (dict(flop_per_cycle=float("nan")), "flop_per_cycle"),
])
def test_smem_bytes_per_cycle_rejects_bad_input(kwargs, name):
    base = dict(mma_tile_m=64, mma_tile_n=64, cta_tile_m=128, cta_tile_n=128, flop_per_cycle=4096.0)
    with pytest.raises(ValueError, match=name):
        tc.smem_bytes_per_cycle(**(base | kwargs))
