"""Tests of gpumodel.parallelism: worked numbers, properties, refusals."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumodel import audit, hardware, parallelism as par
from gpumodel.units import GB, GiB


def test_ring_all_reduce_worked_numbers():
    t = par.collective_seconds(1e9, 8, 100e9)
    assert t == pytest.approx(2 * 7 / 8 * 1e9 / 100e9)
    assert par.collective_seconds(1e9, 8, 100e9, latency=5e-6) == pytest.approx(t + 14 * 5e-6)
    assert par.collective_seconds(1e9, 8, 100e9, op="all_gather") == pytest.approx(7 / 8 * 0.01)
    assert par.collective_seconds(1e9, 1, 100e9, latency=1e-3) == 0.0
    assert par.bus_factor(8) == 1.75 and par.bus_factor(8, "broadcast") == 1.0


def test_bus_bandwidth_recovers_the_link():
    t = par.collective_seconds(8e9, 8, 450e9)
    assert par.bus_bandwidth(8e9, t, 8) == pytest.approx(450e9)
    half = par.half_bandwidth_size(8, 450e9, 5e-6)
    assert par.modelled_bus_bandwidth(half, 8, 450e9, 5e-6) == pytest.approx(225e9)
    small = par.modelled_bus_bandwidth(1e3, 8, 450e9, 10e-6)
    assert small < 1e8


def test_post_numbers():
    bw = 40 * GiB / 8
    assert 4e6 / bw * 1e3 == pytest.approx(0.745, abs=1e-3)
    assert par.naive_gradient_seconds(4e6, 3, 2, bw) == pytest.approx(9 * 4e6 / bw)
    assert par.naive_gradient_seconds(4e6, 3, 4, bw) == pytest.approx(27 * 4e6 / bw)
    assert par.naive_gradient_seconds(4e6, 3, 1, bw) == 0
    assert par.post_model_parallel_elements(128, 1000, 500, "rows") == 128000
    assert par.post_model_parallel_elements(128, 1000, 500, "columns") == 160000
    assert par.post_model_parallel_break_even_batch(1000, 500, "rows") == 500
    assert par.post_model_parallel_break_even_batch(1000, 500, "columns") == 400
    rows = {r["id"]: r for r in audit.reproduce()}
    assert rows["data_parallel.two_nodes_serialized_ms"]["status"] == "differs"
    assert rows["data_parallel.four_nodes_ms"]["status"] == "match"


def test_min_tokens_rule():
    assert par.min_tokens_per_gpu(989.4e12, 450e9, 8, 2.0) == pytest.approx(7 / 8 * 989.4e12 / 450e9)
    # the frameworks' FP32 gradients by default: twice the BF16 figure
    assert par.min_tokens_per_gpu(989.4e12, 450e9, 8) == pytest.approx(2 * 7 / 8 * 989.4e12 / 450e9)
    assert par.min_tokens_per_gpu(1e15, 1e11, 1) == 0


def test_zero_memory():
    dense = par.training_memory(7e9, 8, stage=0)
    assert dense["total"] == pytest.approx(16 * 7e9)
    z3 = par.training_memory(7e9, 8, stage=3)
    assert z3["total"] == pytest.approx(16 * 7e9 / 8)
    z1 = par.training_memory(7e9, 8, stage=1)
    assert z1["total"] == pytest.approx(4 * 7e9 + 12 * 7e9 / 8)


def test_pipeline_bubble():
    b = par.pipeline_bubble(4, 8)
    assert b["of_compute"] == pytest.approx(3 / 8) and b["of_total"] == pytest.approx(3 / 11)
    assert par.pipeline_bubble(4, 8, interleave=2)["of_compute"] == pytest.approx(3 / 16)
    assert par.pipeline_bubble(1, 1)["of_total"] == 0


def test_tensor_parallel_bytes_and_crossover():
    assert par.tensor_parallel_bytes(4096, 4096, 8) == pytest.approx(2 * 1.75 * 4096 * 4096 * 2)
    assert par.data_parallel_bytes(1e6, 8) == pytest.approx(1.75 * 2e6)
    assert par.data_parallel_bytes(1e6, 8, sharded=True) == pytest.approx(1.5 * par.data_parallel_bytes(1e6, 8))
    d, f = 4096, 14336
    assert par.max_tensor_parallel(2 * d * f, d, 989.4e12, 450e9) == pytest.approx(f * 450e9 / 989.4e12)
    assert par.max_tensor_parallel(3 * d * f, d, 989.4e12, 450e9) == pytest.approx(1.5 * f * 450e9 / 989.4e12)
    # over a step the backward pass's 4 FLOP per weight face one more all-reduce each: 1.5 times
    assert par.max_tensor_parallel(2 * d * f, d, 989.4e12, 450e9, passes="step") == pytest.approx(
        1.5 * f * 450e9 / 989.4e12)


def test_activation_constant_counts_korthikanti_and_a_llama_layer():
    assert par.activation_constant() == pytest.approx(34.0)
    # Llama 3 405B: gated MLP of 3.25 h, no dropout, 8 of 128 heads for keys and values
    assert par.activation_constant(3.25, 8 / 128, gated=True, dropout=False) == pytest.approx(
        4 + 6 + 4 / 16 + 2 + 6 * 3.25)
    assert par.activation_constant(dropout=False) == pytest.approx(32.0)


def test_hierarchical_all_reduce():
    flat_inside = par.collective_seconds(1e9, 8, 450e9)
    t = par.hierarchical_all_reduce_seconds(1e9, 8, 1, 450e9, 50e9)
    assert t == pytest.approx(flat_inside)
    two = par.hierarchical_all_reduce_seconds(1e9, 8, 2, 450e9, 50e9)
    assert two == pytest.approx(flat_inside + par.collective_seconds(1e9 / 8, 2, 50e9))


def test_data_parallel_step():
    assert par.data_parallel_step(1.0, 0.5) == 1.0
    assert par.data_parallel_step(1.0, 1.0) == pytest.approx(1 + 1 / 3)
    assert par.data_parallel_step(1.0, 0.5, overlap=0.0) == 1.5
    assert par.scaling_efficiency(1.0, 1.0, overlap=0.0) == 0.5


def test_links_have_sources():
    names = [l.name for l in par.links()]
    assert "PCIe 3.0 x16" in names and "NVLink 4 (H100)" in names
    assert par.link("PCIe 3.0 x16").bandwidth == pytest.approx(15.75 * GB)
    for l in par.links():
        assert l.source.startswith("[") and l.bandwidth > 0


# --- properties -----------------------------------------------------------------------------

sizes = st.floats(1.0, 1e11)
ranks = st.integers(1, 4096)
bws = st.floats(1e8, 1e13)


@settings(max_examples=100, deadline=None)
@given(sizes, ranks, bws, st.floats(1.01, 10), st.floats(0, 1e-4))
def test_more_bandwidth_is_never_slower(s, n, bw, more, alpha):
    assert par.collective_seconds(s, n, bw * more, alpha) <= par.collective_seconds(s, n, bw, alpha)


@settings(max_examples=100, deadline=None)
@given(sizes, ranks, bws, st.floats(0, 1e-4))
def test_ring_all_reduce_never_beats_the_bandwidth_bound(s, n, bw, alpha):
    assert par.collective_seconds(s, n, bw, alpha) >= 2 * (n - 1) / n * s / bw * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e6, 1e12), st.integers(1, 2048), st.integers(0, 3))
def test_zero_memory_never_grows_with_gpus(p, n, stage):
    now = par.training_memory(p, n, stage)["total"]
    later = par.training_memory(p, n + 1, stage)["total"]
    assert later <= now
    if stage == 3:
        assert later < now


@settings(max_examples=100, deadline=None)
@given(st.floats(0.5, 8), st.floats(0, 1), st.booleans(), st.booleans())
def test_activation_constant_grows_with_width_and_masks(r, g, gated, dropout):
    c = par.activation_constant(r, g, gated, dropout)
    assert par.activation_constant(r * 1.1, g, gated, dropout) > c
    assert par.activation_constant(r, g, gated, True) >= c
    assert par.activation_constant(r, g, True, dropout) > par.activation_constant(r, g, False, dropout)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e6, 1e10), st.integers(64, 32768), st.floats(1e12, 1e16), bws)
def test_tensor_parallel_step_limit_is_one_and_a_half_forward(p, d, c, w):
    fwd = par.max_tensor_parallel(p, d, c, w)
    assert par.max_tensor_parallel(p, d, c, w, passes="step") == pytest.approx(1.5 * fwd)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 64), st.integers(1, 512), st.integers(1, 4))
def test_bubble_is_a_share(p, m, v):
    b = par.pipeline_bubble(p, m, v)
    assert 0 <= b["of_total"] < 1 and b["of_total"] <= b["of_compute"]


# --- refusals -------------------------------------------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda: par.collective_seconds(1e9, 0, 1e9), "ranks"),
    (lambda: par.collective_seconds(1e9, 8, 0), "bandwidth"),
    (lambda: par.collective_seconds(1e9, 8, -5e9), "bandwidth"),
    (lambda: par.collective_seconds(1e9, 8, 1e9, op="allreduce2"), "op"),
    (lambda: par.link("NVLink 9"), "link"),
    (lambda: par.link("PCIe 3 x16"), "did you mean"),
    (lambda: par.pipeline_bubble(8, 4, layers=4), "layers"),
    (lambda: par.pipeline_bubble(0, 4), "stages"),
    (lambda: par.training_memory(1e9, 8, stage=4), "stage"),
    (lambda: par.training_memory(1e9, 0), "gpus"),
    (lambda: par.modelled_bus_bandwidth(1e6, 1, 1e9, 1e-6), "ranks"),
    (lambda: par.post_model_parallel_elements(128, 1000, 500, "diagonal"), "split"),
    (lambda: par.max_tensor_parallel(1e8, 4096, 1e15, 4e11, passes="backward"), "passes"),
    (lambda: par.activation_constant(0), "d_ff_ratio"),
    (lambda: par.activation_constant(4, -1), "kv_ratio"),
])
def test_bad_input_is_refused(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- issue 24: physical properties ------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(compute=st.floats(min_value=5e-324, max_value=1e300),
       comm=st.floats(min_value=0.0, max_value=1e300),
       overlap=st.floats(0.0, 1.0), share=st.floats(0.0, 1.0))
def test_scaling_efficiency_is_in_zero_one_or_refused(compute, comm, overlap, share):
    try:
        efficiency = par.scaling_efficiency(compute, comm, overlap, share)
    except ValueError as err:
        assert "compute_seconds" in str(err)
        return
    assert 0.0 < efficiency <= 1.0


def test_scaling_efficiency_refuses_an_underflow():
    with pytest.raises(ValueError, match="compute_seconds"):
        par.scaling_efficiency(5e-324, 2.0, 0, 0)


# --- NVLink SHARP and the fitted ring step -------------------------------------------------------

def test_nvls_sends_each_array_once_each_way():
    # 8 GPUs, 9 GB at 100 GB/s: (1 + 1/8) x 9e9 / 1e11 = 0.10125 s, plus one latency
    t = par.collective_seconds(9e9, 8, 100e9, latency=25e-6, algorithm="nvls")
    assert t == pytest.approx(0.10125 + 25e-6)
    assert par.collective_seconds(9e9, 1, 100e9, 1e-3, algorithm="nvls") == 0.0
    big = par.modelled_bus_bandwidth(1e15, 8, 100e9, 25e-6, algorithm="nvls")
    assert big == pytest.approx(100e9 * 14 / 9, rel=1e-6)


def test_nvls_beats_the_ring_bound_for_large_messages():
    ring = par.modelled_bus_bandwidth(16 * 2**30, 8, 360e9, 3e-6)
    nvls = par.modelled_bus_bandwidth(16 * 2**30, 8, par.NVLS_EFFICIENCY * 360e9,
                                      par.NVLS_LATENCY_SECONDS, algorithm="nvls")
    assert nvls / ring == pytest.approx(0.85 * 14 / 9, rel=1e-3)


@pytest.mark.parametrize("call, name", [
    (lambda: par.collective_seconds(1e9, 8, 1e9, op="all_gather", algorithm="nvls"), "op"),
    (lambda: par.collective_seconds(1e9, 8, 1e9, algorithm="tree"), "algorithm"),
    (lambda: par.modelled_bus_bandwidth(1e6, 8, 1e9, 1e-6, algorithm=None), "algorithm"),
])
def test_bad_algorithm_is_refused(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@given(s=st.floats(1e3, 1e12), n=st.integers(3, 1024), bw=st.floats(1e9, 1e12),
       alpha=st.floats(0, 1e-4))
def test_nvls_moves_fewer_bytes_than_a_ring(s, n, bw, alpha):
    # (1 + 1/n) <= 2(n-1)/n from three GPUs on; with two, the ring sends less
    ring = par.collective_seconds(s, n, bw, 0.0) + alpha
    assert par.collective_seconds(s, n, bw, alpha, algorithm="nvls") <= ring * (1 + 1e-12)


def test_ring_step_is_the_smallest_message_over_its_steps():
    from gpumodel import calibration, measured
    steps = calibration.ring_step_latencies()
    assert set(steps) == {"GA100", "GH100"}
    row = measured.collectives("nccl.a100x8.all_reduce.32768")[0]
    seconds = 32768 * 2 * 7 / 8 / (row["busbw_gbs"] * 1e9)
    assert steps["GA100"] == pytest.approx(seconds / 14)
    assert set(calibration.ring_step_latencies("GA100")) == {"GH100"}
    fitted = calibration.default().constants["ring_step_seconds"]
    assert fitted == pytest.approx(float(np.median(list(steps.values()))))
    left = calibration.default("GH100").constants["ring_step_seconds"]
    assert left == pytest.approx(steps["GA100"])


# --- the hierarchical all-reduce, pipelined across buckets -------------------------------------

def test_one_bucket_runs_the_phases_one_after_another():
    one = par.hierarchical_all_reduce_seconds(14e9, 8, 8, 450e9, 50e9)
    inside = 2 * 7 / 8 * 14e9 / 450e9
    across = 2 * 7 / 8 * 14e9 / 8 / 50e9
    assert one == pytest.approx(inside + across)


def test_buckets_overlap_the_node_and_the_network():
    # 7B BF16 gradients on 8 nodes of 8 H100s: NVLink 54.4 ms, network 61.25 ms (a ring)
    k = 1000
    t = par.hierarchical_all_reduce_seconds(14e9, 8, 8, 450e9, 50e9, buckets=k)
    inside = 2 * 7 / 8 * 14e9 / 450e9
    across = 2 * 7 / 8 * 14e9 / 8 / 50e9
    assert t == pytest.approx(across + inside / k)
    # with 5 us per hop a bucket's tree (6 hops, 2 x 1.75 MB) beats its ring (14 hops)
    lat = par.hierarchical_all_reduce_seconds(14e9, 8, 8, 450e9, 50e9, 5e-6, 5e-6, buckets=k)
    tree = 6 * 5e-6 + 2 * 14e9 / k / 8 / 50e9
    ring = 14 * 5e-6 + across / k
    assert tree < ring
    node = inside / k + 14 * 5e-6
    assert node > tree
    assert lat == pytest.approx(k * node + tree)


def test_a_tree_has_log_latency_and_moves_the_array_twice():
    assert par.tree_all_reduce_seconds(1e9, 64, 50e9, 5e-6) == pytest.approx(12 * 5e-6 + 0.04)
    assert par.tree_all_reduce_seconds(1e9, 1, 50e9, 5e-6) == 0.0
    assert par.tree_all_reduce_seconds(1e9, 5, 50e9, 1e-6) == pytest.approx(6e-6 + 0.04)


@given(s=st.floats(0, 1e11), n=st.integers(2, 100_000), bw=st.floats(1e9, 1e12),
       alpha=st.floats(0, 1e-4))
def test_the_faster_of_ring_and_tree_is_never_slower_than_either(s, n, bw, alpha):
    ring = par.collective_seconds(s, n, bw, alpha)
    tree = par.tree_all_reduce_seconds(s, n, bw, alpha)
    hier = par.hierarchical_all_reduce_seconds(s, 1, n, bw, bw, 0.0, alpha)
    assert hier == pytest.approx(min(ring, tree), rel=1e-9, abs=1e-15)


@given(s=st.floats(1e6, 1e11), k=st.integers(1, 4096), alpha=st.floats(0, 1e-4))
def test_pipelining_never_loses_to_the_phases_in_a_row_without_latency(s, k, alpha):
    row = par.hierarchical_all_reduce_seconds(s, 8, 4, 450e9, 50e9)
    piped = par.hierarchical_all_reduce_seconds(s, 8, 4, 450e9, 50e9, buckets=k)
    assert piped <= row * (1 + 1e-9)
    slower = par.hierarchical_all_reduce_seconds(s, 8, 4, 450e9, 50e9, alpha, alpha, buckets=k)
    assert slower >= piped * (1 - 1e-12)


def test_call_fill_charges_each_bucket_part_of_its_lesser_phase():
    k, args = 64, (14e9, 8, 8, 450e9, 50e9, 5e-6, 5e-6)
    piped = par.hierarchical_all_reduce_seconds(*args, buckets=k)
    one = par.hierarchical_all_reduce_seconds(14e9 / k, *args[1:])
    # f = 1: every call runs its phases one after another
    assert par.hierarchical_all_reduce_seconds(*args, buckets=k, call_fill=1.0) == pytest.approx(k * one)
    # f = 0 is the default; f in between adds (k - 1) f x the lesser phase
    assert par.hierarchical_all_reduce_seconds(*args, buckets=k, call_fill=0.0) == piped
    half = par.hierarchical_all_reduce_seconds(*args, buckets=k, call_fill=0.5)
    assert half == pytest.approx(piped + 0.5 * (k * one - piped))
    # one bucket has no other calls to fill
    assert par.hierarchical_all_reduce_seconds(*args, call_fill=1.0) == par.hierarchical_all_reduce_seconds(*args)


@given(f=st.floats(0, 1), g=st.floats(0, 1), k=st.integers(1, 4096))
def test_more_call_fill_never_speeds_the_all_reduce(f, g, k):
    lo, hi = sorted((f, g))
    args = (2e9, 8, 4, 450e9, 50e9, 5e-6, 5e-6)
    assert (par.hierarchical_all_reduce_seconds(*args, buckets=k, call_fill=lo)
            <= par.hierarchical_all_reduce_seconds(*args, buckets=k, call_fill=hi) * (1 + 1e-12))


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), [0.5]])
def test_call_fill_is_a_share(bad):
    with pytest.raises(ValueError, match="call_fill"):
        par.hierarchical_all_reduce_seconds(1e9, 8, 2, 450e9, 50e9, buckets=4, call_fill=bad)


@pytest.mark.parametrize("bad", [0, 1.5, -2, float("nan")])
def test_buckets_must_be_whole(bad):
    with pytest.raises(ValueError, match="buckets"):
        par.hierarchical_all_reduce_seconds(1e9, 8, 2, 450e9, 50e9, buckets=bad)


# --- today's parallelism: experts, sequences, activations ---------------------------------------

def test_moe_all_to_all_worked_numbers():
    # Mixtral on 8 GPUs, 4096 tokens per GPU, top-2, BF16: 4 x 7/8 x 2 x 4096 x 4096 x 2 bytes
    assert par.moe_all_to_all_bytes(4096, 4096, 8, 2) == pytest.approx(4 * 7 / 8 * 2 * 4096 * 4096 * 2)
    assert par.moe_all_to_all_bytes(4096, 4096, 1, 2) == 0
    # gated experts: 4.5 d_ff / 2 bytes x n / (n-1)
    assert par.expert_parallel_intensity(14336, 8) == pytest.approx(36864.0)
    assert par.expert_parallel_intensity(2048, 64) == pytest.approx(4.5 * 1024 * 64 / 63)
    assert par.expert_parallel_intensity(4096, 2, matrices=2) == pytest.approx(3 * 2048 * 2)


def test_moe_tokens_rule_grows_with_total_over_active():
    dense = par.min_tokens_per_gpu(989.4e12, 450e9, 8)
    assert par.moe_min_tokens_per_gpu(989.4e12, 450e9, 8, 47e9, 13e9) == pytest.approx(dense * 47 / 13)
    assert par.moe_min_tokens_per_gpu(989.4e12, 450e9, 8, 7e9, 7e9) == pytest.approx(dense)


def test_ring_attention_matches_liu_et_al():
    # Liu et al. 2023, Table 2: A100 over NVLink, 312 TFLOP/s and 300 GB/s, block of about 1K
    assert par.ring_attention_min_tokens(4096, 4096, 312e12, 300e9) == pytest.approx(1040.0)
    c = par.ring_attention_min_tokens(4096, 4096, 312e12, 300e9)
    step = par.ring_attention_step_seconds(c, 4096, 4096, 312e12, 300e9)
    assert step["compute"] == pytest.approx(step["transfer"])
    # grouped-query attention: 8 KV heads of 128 against 16384 wide queries
    assert par.ring_attention_min_tokens(16384, 1024, 989.4e12, 450e9) == pytest.approx(
        989.4e12 / 450e9 / 16)
    assert par.ring_attention_step_seconds(1, 8, 8, 1, 1, latency=1.0)["transfer"] == pytest.approx(33.0)


def test_activation_memory_is_korthikanti_eq_1_and_table_2():
    s, b, h, a = 2048, 1, 12288, 96  # GPT-3 175B
    assert par.activation_memory(s, b, h, a) == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    t = 8
    assert par.activation_memory(s, b, h, a, t) == pytest.approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)))
    assert par.activation_memory(s, b, h, a, t, sequence_parallel=True) == pytest.approx(
        s * b * h * (34 / t + 5 * a * s / (h * t)))
    assert par.activation_memory(s, b, h, a, t, "selective") == pytest.approx(s * b * h * (10 + 24 / t))
    assert par.activation_memory(s, b, h, a, t, "selective", True) == pytest.approx(s * b * h * 34 / t)
    assert par.activation_memory(s, b, h, a, t, "full") == pytest.approx(2 * s * b * h)


def test_llama3_case():
    from gpumodel.explorations import parallelism as px
    case = px.llama3_case(px.LLAMA3_TABLE4[0])
    assert case["tokens"] == 64 * 32 * 8192
    assert case["activations_gib"] * GiB == pytest.approx(126 * 8192 * 16384 * 34 / 8)
    # BF16 weights, an unsharded FP32 gradient buffer, Adam state sharded 64 ways
    assert case["state_gib"] * GiB == pytest.approx(405e9 / 128 * (2 + 4 + 12 / 64))
    assert case["grad_buffer_gib"] * GiB == pytest.approx(405e9 / 128 * 4)
    # FP32 reduce-scatter plus BF16 all-gather
    assert case["dp_gb"] * 1e9 == pytest.approx(405e9 / 128 * 63 / 64 * (4 + 2))
    assert case["bubble"] == pytest.approx(15 / 32)
    # an idle slot lasts a whole micro-batch, its tensor-parallel all-reduces included
    # the FP32 reduce-scatter hides only behind the last micro-batch's backward, the BF16
    # all-gather only behind the first one's forward
    micro = case["compute_s"] / 32
    assert case["micro_s"] == pytest.approx(micro)
    assert case["rs_s"] + case["ag_s"] == pytest.approx(case["dp_s"])
    assert case["rs_s"] == pytest.approx(2 * case["ag_s"])
    exposed = case["rs_s"] - 2 / 3 * micro + case["ag_s"] - micro / 3
    assert exposed > 0 and case["dp_exposed_s"] == pytest.approx(exposed)
    step = (case["compute_s"] + case["tp_s"]) * (1 + 15 / 32) + exposed
    assert case["mfu_bound"] == pytest.approx(case["compute_s"] / step)
    assert case["weights_gib"] + case["grad_buffer_gib"] + case["adam_gib"] == pytest.approx(
        case["state_gib"])
    assert 0 < case["mfu_bound"] < 1
    assert case["interleave_factor"] == pytest.approx(1 + 15 / 32)
    bf16 = px.llama3_case(px.LLAMA3_TABLE4[0], grad_bytes=2.0)
    assert bf16["dp_gb"] < case["dp_gb"] and bf16["state_gib"] < case["state_gib"]


def test_deepseek_v3_network_factors():
    from gpumodel.explorations import parallelism as px
    frame = px.deepseek_v3_network_frame()
    share = frame["all-to-all / expert math"].to_numpy()
    assert share[0] == pytest.approx(px.moe_frame().loc["DeepSeek-V3", "ridge H100, NDR port"]
                                     / px.moe_frame().loc["DeepSeek-V3", "FLOP per all-to-all byte"],
                                     rel=1e-2)
    # at most 4 node copies of a token instead of 8 x 63/64, 1.5 bytes instead of 2, 9 experts' math
    assert frame["factor"].to_numpy()[1:] == pytest.approx([4 / (8 * 63 / 64), 0.75, 8 / 9], rel=1e-3)
    assert (np.diff(share) < 0).all()


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 1 << 17), st.integers(1, 64), st.integers(1, 128), st.integers(1, 64),
       st.sampled_from(["none", "selective", "full"]), st.booleans())
def test_recomputation_never_keeps_more(s, b, heads, t, recompute, sp):
    h = 128 * heads
    keep = par.activation_memory(s, b, h, heads, t, recompute, sp)
    assert 0 < keep <= par.activation_memory(s, b, h, heads, t, "none", False) * (1 + 1e-12)
    assert par.activation_memory(s, b, h, heads, t, "full") <= keep * (1 + 1e-12) or t > 1


@settings(max_examples=100, deadline=None)
@given(st.floats(1, 1e6), st.integers(1, 1 << 15), st.integers(1, 1 << 15),
       st.floats(1e12, 1e16), st.floats(1e9, 1e13))
def test_ring_attention_hides_above_its_threshold(c, d, kv, f, w):
    step = par.ring_attention_step_seconds(c, d, kv, f, w)
    above = c >= par.ring_attention_min_tokens(d, kv, f, w)
    assert (step["compute"] >= step["transfer"] * (1 - 1e-9)) == above or np.isclose(
        step["compute"], step["transfer"], rtol=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 1 << 17), st.integers(2, 4096), st.integers(1, 16))
def test_expert_intensity_does_not_depend_on_top_k(f, n, k):
    flops = 6 * 3 * k * 4096 * f * 1000
    assert flops / par.moe_all_to_all_bytes(1000, 4096, n, k) == pytest.approx(
        par.expert_parallel_intensity(f, n))


@pytest.mark.parametrize("call, name", [
    (lambda: par.moe_all_to_all_bytes(1e3, 4096, 0), "ranks"),
    (lambda: par.moe_all_to_all_bytes(1e3, 4096, 8, top_k=0), "top_k"),
    (lambda: par.expert_parallel_intensity(14336, 1), "ranks"),
    (lambda: par.expert_parallel_intensity(0, 8), "d_ff"),
    (lambda: par.moe_min_tokens_per_gpu(1e15, 1e11, 8, 1e9, 2e9), "active_params"),
    (lambda: par.ring_attention_min_tokens(4096, 0, 1e15, 1e11), "kv_dim"),
    (lambda: par.ring_attention_step_seconds(-1, 4096, 1024, 1e15, 1e11), "tokens_per_gpu"),
    (lambda: par.activation_memory(2048, 1, 4096, 32, recompute="some"), "recompute"),
    (lambda: par.activation_memory(2048, 1, 4096, 32, sequence_parallel=1), "sequence_parallel"),
    (lambda: par.activation_memory(2048, 0, 4096, 32), "micro_batch"),
])
def test_bad_input_to_todays_models_is_refused(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_bucket_times_rebuild_dp_scaling():
    from gpumodel.explorations import parallelism as px
    run = px.dp_scaling(7, 1024, 40, 5, 2)
    at = list(run["gpus"]).index(64)
    t = px.bucket_times(7, 64, 5, 2)
    k = px.buckets(2 * 7e9)
    pipelined = k * max(t["nvlink_us"], t["network_us"]) + min(t["nvlink_us"], t["network_us"])
    assert run["comm_ms"][at] == pytest.approx(pipelined / 1e3)
    # 2 x 7 ring steps of 5 µs on NVLink
    assert t["nvlink_latency_us"] == pytest.approx(70.0)
    assert px.bucket_times(7, 64, 0, 2)["nvlink_latency_us"] == 0.0
