"""The opening chapter's models: the CPU table, Little's law, a step's time per regime, the exploration."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpumodel import hardware, measured, memory, throughput
from gpumodel.explorations import how_a_gpu_runs as hg


def test_epyc_9654_peak_and_bandwidth():
    cpu = hardware.get_cpu("epyc 9654")
    assert cpu.peak_flops == pytest.approx(96 * 32 * 3.55e9)
    assert cpu.peak_flops / 1e12 == pytest.approx(10.9056)
    assert cpu.bandwidth == pytest.approx(460.8e9)
    assert [c.name for c in hardware.cpus()] == ["EPYC 9654"]


def test_unknown_cpu_names_the_parameter():
    with pytest.raises(ValueError, match="cpu name"):
        hardware.get_cpu("EPYC 9999")
    with pytest.raises(ValueError, match="cpu name"):
        hardware.get_cpu(None)


def test_cpu_rows_reject_bad_values_naming_the_column():
    row = {"name": "X", "vendor": "V", "architecture": "A", "year": "2022", "cores": "-1",
           "threads": "2", "base_clock_ghz": "2", "all_core_boost_ghz": "3", "fp32_flop_per_cycle_per_core": "32",
           "memory_channels": "2", "memory_mts": "4800", "channel_bytes": "8",
           "l3_cache_mib": "32", "tdp_w": "100", "source": "[k]"}
    with pytest.raises(ValueError, match="column cores"):
        hardware._parse_cpu(row, 2)
    with pytest.raises(ValueError, match="column tdp_w"):
        hardware._parse_cpu({**row, "cores": "4", "tdp_w": ""}, 2)


def test_bytes_in_flight_is_littles_law_on_hopper():
    latency = measured.latency_seconds("Hopper", "global")
    assert latency == pytest.approx(689.2 / 1980e6)
    need = memory.bytes_in_flight(3.35e12, latency)
    assert need == pytest.approx(1.166e6, rel=1e-3)
    assert need / 132 / (16 * 32) == pytest.approx(17.25, rel=1e-3)


def test_full_occupancy_with_4_byte_loads_keeps_hopper_memory_93_percent_busy():
    latency = measured.latency_seconds("Hopper", "global")
    in_flight = 64 * 32 * 4 * 132
    share = memory.sustained_bandwidth(in_flight, latency, 3.35e12) / 3.35e12
    assert share == pytest.approx(0.9272, rel=1e-3)
    assert memory.sustained_bandwidth(2e6, latency, 3.35e12) == 3.35e12


@given(st.floats(0, 1e9), st.floats(1e-9, 1e-5), st.floats(1e9, 1e13))
def test_sustained_bandwidth_never_exceeds_the_peak_or_littles_law(q, lat, bw):
    got = memory.sustained_bandwidth(q, lat, bw)
    assert got <= bw * (1 + 1e-12) and got <= q / lat * (1 + 1e-12)


@pytest.mark.parametrize("kwargs, name", [(dict(bandwidth=0.0, latency_seconds=1e-7), "bandwidth"),
                                          (dict(bandwidth=1e12, latency_seconds=-1.0), "latency_seconds")])
def test_bytes_in_flight_rejects_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        memory.bytes_in_flight(**kwargs)


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 512), workload=st.sampled_from(throughput.WORKLOADS))
def test_time_by_regime_adds_up_to_the_step(batch, workload):
    kernels = throughput.kernels_for(workload, batch)
    cards = ["H100 SXM5", "RTX 4090", "T4"]
    engine = throughput.DEFAULT_ENGINE[workload]
    split = throughput.time_by_regime(kernels, cards, engine=engine)
    total = throughput.step_seconds(kernels, cards, engine)
    assert set(split) == set(memory.REGIMES)
    assert np.allclose(sum(split.values()), total, rtol=1e-12)
    assert all(np.all(v >= 0) for v in split.values())


def test_bert_large_on_h100_is_mostly_memory_bound_and_decoding_has_no_compute():
    bert = throughput.time_by_regime(throughput.kernels_for("transformer-train"), ["H100 SXM5"])
    share = bert["memory"][0] / sum(v[0] for v in bert.values())
    assert share == pytest.approx(0.643, abs=0.001)
    decode = throughput.time_by_regime(throughput.kernels_for("llm-decode"), ["H100 SXM5"],
                                       engine="llama.cpp")
    assert decode["compute"][0] == 0.0


def test_three_regimes_on_the_h100():
    h100 = hardware.get("H100 SXM5")
    peak, bw, t_o = h100.peak_flops("bf16"), h100.bandwidth, throughput.LAUNCH_SECONDS
    cases = {(8192, 4096, 4096): 0, (1, 4096, 4096): 1}
    for (m, k, n), expected in cases.items():
        f, b = memory.matmul_flops(m, k, n), memory.matmul_min_traffic(m, k, n, "bf16")
        assert memory.regime(f, b, peak, bw, t_o) == expected
    assert memory.regime(4096.0, 3 * 4096 * 2.0, peak, bw, t_o) == 2


def test_achieved_reaches_the_peak_exactly_when_compute_bound():
    table = hg.ACHIEVED.table(accelerator="RTX 4090")
    peak = hardware.get("RTX 4090").peak_flops("bf16") / 1e12
    compute = table.bound == "compute-bound"
    assert np.allclose(table.tflops[compute], peak)
    assert (table.tflops[~compute] < peak).all()
    assert table[compute].tokens.min() == 256
    assert memory.compute_bound_rows(4096, 4096, hardware.get("RTX 4090").ridge_point("bf16"),
                                     "bf16") == pytest.approx(178.14, abs=0.01)


def test_achieved_is_overhead_bound_at_small_batches_with_a_long_launch():
    table = hg.ACHIEVED.table(weight=1024, overhead_us=20)
    assert table.bound.iloc[0] == "overhead-bound"
    assert np.allclose(table.microseconds[table.bound == "overhead-bound"], 20.0)
