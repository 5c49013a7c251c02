"""Physical properties every model must keep, for any valid input (hypothesis).

More bandwidth or more FLOP/s never makes anything slower; more bytes, more FLOP, more latency or
more work never makes it faster; a quantity in one unit equals the same quantity in another.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumodel import cost, memory, parallelism, sparsity, throughput, workloads

#: Positive rates and sizes over many decades (a rate of 1e-3 and one of 1e18 alike).
positive = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)
size = st.integers(min_value=1, max_value=2**20)
factor = st.floats(min_value=1.0, max_value=1e6, allow_nan=False)
share = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
ranks = st.integers(min_value=2, max_value=4096)
TIGHT = 1e-12  # relative slack for rounding


def _never_more(a, b):
    """a <= b up to rounding."""
    assert np.all(np.asarray(a) <= np.asarray(b) * (1 + TIGHT)), (a, b)


@settings(max_examples=200, deadline=None)
@given(flops=positive, nbytes=positive, peak=positive, bw=positive, overhead=positive, f=factor)
def test_kernel_seconds_more_rate_never_slower_more_work_never_faster(flops, nbytes, peak, bw,
                                                                      overhead, f):
    base = memory.kernel_seconds(flops, nbytes, peak, bw, overhead * 1e-12)
    _never_more(memory.kernel_seconds(flops, nbytes, peak * f, bw, overhead * 1e-12), base)
    _never_more(memory.kernel_seconds(flops, nbytes, peak, bw * f, overhead * 1e-12), base)
    _never_more(base, memory.kernel_seconds(flops * f, nbytes, peak, bw, overhead * 1e-12))
    _never_more(base, memory.kernel_seconds(flops, nbytes * f, peak, bw, overhead * 1e-12))
    _never_more(base, memory.kernel_seconds(flops, nbytes, peak, bw, overhead * 1e-12 * f))


@settings(max_examples=200, deadline=None)
@given(m=size, k=size, n=size, peak=positive, bw=positive, f=factor,
       split=st.sampled_from([1, 2, 4]), grow=st.integers(min_value=1, max_value=4096),
       which=st.sampled_from("mkn"), l2=st.booleans())
def test_gemm_seconds_monotone(m, k, n, peak, bw, f, split, grow, which, l2):
    """A faster chip never takes longer; a larger matrix (in any one dimension) never less."""
    l2_bw = 5 * bw if l2 else None
    base = memory.gemm_seconds(m, k, n, peak, bw, 108, split_k=split, l2_bandwidth=l2_bw)
    _never_more(memory.gemm_seconds(m, k, n, peak * f, bw, 108, split_k=split,
                                    l2_bandwidth=l2_bw), base)
    _never_more(memory.gemm_seconds(m, k, n, peak, bw * f, 108, split_k=split,
                                    l2_bandwidth=None if l2_bw is None else l2_bw * f), base)
    bigger = dict(m=m, k=k, n=n)
    bigger[which] += grow
    _never_more(base, memory.gemm_seconds(**bigger, peak_flops=peak, bandwidth=bw, sms=108,
                                          split_k=split, l2_bandwidth=l2_bw))


@settings(max_examples=200, deadline=None)
@given(weights=positive, bw=positive, batch=st.integers(1, 4096), kv=positive, f=factor)
def test_decode_tokens_more_bandwidth_never_fewer_more_bytes_never_more(weights, bw, batch, kv, f):
    base = memory.decode_tokens_per_second(weights, bw, batch, kv)
    _never_more(base, memory.decode_tokens_per_second(weights, bw * f, batch, kv))
    _never_more(memory.decode_tokens_per_second(weights * f, bw, batch, kv), base)
    _never_more(memory.decode_tokens_per_second(weights, bw, batch, kv * f), base)
    _never_more(base, memory.decode_tokens_per_second(weights, bw, batch + 1, kv))  # total tokens


@settings(max_examples=200, deadline=None)
@given(nbytes=positive, n=ranks, bw=positive, latency=positive, f=factor,
       op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter"]))
def test_collective_more_bandwidth_never_slower_more_bytes_never_faster(nbytes, n, bw, latency, f,
                                                                        op):
    lat = latency * 1e-15
    base = parallelism.collective_seconds(nbytes, n, bw, lat, op)
    _never_more(parallelism.collective_seconds(nbytes, n, bw * f, lat, op), base)
    _never_more(base, parallelism.collective_seconds(nbytes * f, n, bw, lat, op))
    _never_more(base, parallelism.collective_seconds(nbytes, n, bw, lat * f, op))
    _never_more(base, parallelism.collective_seconds(nbytes, n + 1, bw, lat, op))


@settings(max_examples=100, deadline=None)
@given(nbytes=positive, gpus=st.integers(1, 16), nodes=st.integers(1, 64), node_bw=positive,
       net_bw=positive, f=factor)
def test_hierarchical_all_reduce_faster_links_never_slower(nbytes, gpus, nodes, node_bw, net_bw, f):
    base = parallelism.hierarchical_all_reduce_seconds(nbytes, gpus, nodes, node_bw, net_bw)
    _never_more(parallelism.hierarchical_all_reduce_seconds(nbytes, gpus, nodes, node_bw * f,
                                                            net_bw), base)
    _never_more(parallelism.hierarchical_all_reduce_seconds(nbytes, gpus, nodes, node_bw,
                                                            net_bw * f), base)
    _never_more(base, parallelism.hierarchical_all_reduce_seconds(nbytes * f, gpus, nodes,
                                                                  node_bw, net_bw))


RATES = {"gemm": 1e14, "conv": 5e13, "stream": 1e12, "weights": 5e11, "floor": 2e-6,
         "host": 1e-5, "peak": 1e14, "dequant": 1e13}
KERNELS = {"flops": [1e9, 0.0, 3e11], "bytes": [1e6, 1e8, 4e9], "launches": [2.0, 1.0, 3.0]}


@settings(max_examples=200, deadline=None)
@given(key=st.sampled_from(["gemm", "conv", "stream", "weights", "peak", "dequant"]), f=factor,
       scale=st.floats(min_value=1e-6, max_value=1e6), grow=st.sampled_from(["flops", "bytes"]))
def test_device_seconds_faster_rate_never_slower_more_work_never_faster(key, f, scale, grow):
    rates = {k: [v * scale] if k not in ("floor", "host") else [v] for k, v in RATES.items()}
    base = throughput.device_seconds(KERNELS, rates)
    _never_more(throughput.device_seconds(KERNELS, {**rates, key: [rates[key][0] * f]}), base)
    more = {**KERNELS, grow: [v * f for v in KERNELS[grow]]}
    _never_more(base, throughput.device_seconds(more, rates))


@settings(max_examples=100, deadline=None)
@given(m=size, k=size, n=size, peak=positive, bw=positive, f=factor, sparse=st.booleans())
def test_sparse_gemm_terms_faster_chip_never_slower(m, k, n, peak, bw, f, sparse):
    def total(p, b):
        terms = sparsity.sparse_gemm_terms(m, k, n, p, b, "fp16", sparse)
        return max(np.max(v) for v in terms.values()) if isinstance(terms, dict) else terms
    base = total(peak, bw)
    _never_more(total(peak * f, bw), base)
    _never_more(total(peak, bw * f), base)


@settings(max_examples=200, deadline=None)
@given(nbytes=positive, bw=st.floats(min_value=1e-3, max_value=1e9))
def test_transfer_seconds_units_agree(nbytes, bw):
    """GB/s is 1e9 B/s and GiB/s 2**30 B/s: the same rate in either unit gives the same time."""
    gb = memory.transfer_seconds(nbytes, bw, "GB/s")
    gib = memory.transfer_seconds(nbytes, bw * 1e9 / 2**30, "GiB/s")
    assert np.isclose(gb, gib, rtol=1e-12) and np.isclose(gb, nbytes / (bw * 1e9), rtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(power=st.floats(1.0, 5e3), u=share, years=st.floats(0.01, 30.0),
       price=st.floats(0.001, 5.0), f=st.floats(1.0, 10.0))
def test_electricity_more_use_never_cheaper_and_linear_in_years(power, u, years, price, f):
    base = cost.electricity_usd(power, u, years, price)
    _never_more(base, cost.electricity_usd(power * f, u, years, price))
    _never_more(base, cost.electricity_usd(power, min(1.0, u * f), years, price))
    assert np.isclose(cost.electricity_usd(power, u, 2 * years, price), 2 * base, rtol=1e-12)


@settings(max_examples=100, deadline=None)
@given(part=st.floats(1.0, 1e6), frac=share, f=st.floats(1.0, 100.0))
def test_amdahl_faster_part_never_slower_step(part, frac, f):
    base = workloads.amdahl_speedup(part, frac)
    _never_more(workloads.amdahl_speedup(part, frac) * 0, base)
    _never_more(base, workloads.amdahl_speedup(part * f, frac))
    _never_more(base, 1.0 / (1.0 - frac) if frac < 1 else part)  # never past the serial bound


@settings(max_examples=40, deadline=None)
@given(low=st.floats(100.0, 700.0), f=st.floats(1.0, 3.0),
       workload=st.sampled_from(["llm-decode", "cnn-train", "transformer-train"]))
def test_a_lower_power_limit_is_never_faster(low, f, workload):
    """A lower power limit lowers the sustained clock: the step never gets shorter."""
    h100 = throughput.power_limited("H100 SXM5", min(low * f, 700.0))
    capped = throughput.power_limited("H100 SXM5", low)
    table = throughput.kernels_for(workload, 2)
    _never_more(throughput.step_seconds(table, [h100]), throughput.step_seconds(table, [capped]))


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 256), workload=st.sampled_from(["llm-decode", "cnn-train"]))
def test_a_larger_batch_is_never_less_work(batch, workload):
    """Twice the batch: the step never shorter, and the throughput per step never lower."""
    one, two = (throughput.kernels_for(workload, b) for b in (batch, 2 * batch))
    cards = ["H100 SXM5", "RTX 4090", "A100 SXM4 40GB"]
    _never_more(throughput.step_seconds(one, cards), throughput.step_seconds(two, cards))
    _never_more(throughput.throughput(workload, cards, batch),
                throughput.throughput(workload, cards, 2 * batch))
