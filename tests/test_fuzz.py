"""Fuzz every public function, exploration and CLI subcommand against the house contract.

The contract: bad input raises ``ValueError`` whose message names a real parameter of the
function called (as a whole word); input that is accepted gives a finite result (no NaN or inf
anywhere in it). Never another exception type, never a leaked numpy floating-point warning,
never a call slower than ``SLOW`` seconds. The CLI answers bad input with exit code 2, nothing on
stdout and exactly one line on stderr; ``--json`` output is strict JSON (no NaN/Infinity).

Every public function needs a valid baseline call in :data:`REGISTRY` (parameters left out take
their defaults; every parameter, defaulted or not, is mutated). One argument at a time is then
replaced by each value of :func:`mutations`. A public function without an entry makes
``test_every_public_function_is_registered`` fail: add its baseline call there.

The explorations package (``gpumodel.explorations.*``: compute, chart and table functions) is
fuzzed by class with the same mutations: each public function's baseline is its defaults, its
Exploration's defaults (a chart function gets a chart of its table), or an entry of
:data:`EXPLORATION_REGISTRY`; ``test_every_explorations_function_has_a_baseline`` fails for one
without.

``python tests/test_fuzz.py`` prints the counts (functions covered, inputs tried, failures).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import io
import json
import math
import re
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field

import altair as alt
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import importlib
import pkgutil

import gpumodel
from gpumodel import (audit, brain, cli, cost, explore, hardware, measured, memory, parallelism, precision,
                      sparsity, throughput, units, validate, workloads)
from gpumodel import calibration, explorations, tensor_cores
from gpumodel.explorations import all_explorations, choosing_a_gpu, low_precision
from gpumodel.explorations import parallelism as parallelism_explorations

#: A call slower than this (seconds) breaks the contract (e.g. padding 10 values to 2**26).
SLOW = 2.0
#: The modules whose public functions are fuzzed (functions defined in the module itself).
MODULES = {"memory": memory, "units": units, "hardware": hardware, "measured": measured,
           "tensor_cores": tensor_cores, "precision": precision, "audit": audit, "workloads": workloads,
           "sparsity": sparsity, "parallelism": parallelism,
           "brain": brain, "cost": cost, "throughput": throughput, "validate": validate,
           "calibration": calibration}
#: Top-level modules that hold no models (display, command line, build helpers); any other new
#: module must be added to MODULES. (The explorations package is fuzzed by class, further down.)
NOT_MODELS = {"explore", "charts", "bench", "sphinxext", "cli", "explorations", "student", "grading"}
#: Classes whose public methods are fuzzed, bound to one instance.
METHOD_TARGETS = {"hardware.Accelerator": (hardware.Accelerator, lambda: hardware.get("H100 SXM5"))}
#: Constructors that are fuzzed.
CONSTRUCTORS = {"explore.Slider": explore.Slider, "explore.Choice": explore.Choice,
                "explore.Exploration": explore.Exploration}

X2 = [[1.0, 2.0], [3.0, 4.0]]
W2 = [[0.5, -1.0], [1.5, 2.0]]
A8 = [[0.5, -2.0, 0.25, 1.0, 3.0, -0.1, 0.0, 2.5], [1.0, 1.0, -1.0, 0.5, 0.2, 0.3, -4.0, 0.1]]
A8_PRUNED = [[0.0, -2.0, 0.0, 1.0, 3.0, 0.0, 0.0, 2.5], [1.0, 1.0, 0.0, 0.0, 0.0, 0.3, -4.0, 0.0]]
A8_VALUES = [[-2.0, 1.0, 3.0, 2.5], [1.0, 1.0, 0.3, -4.0]]
A8_POSITIONS = [[[1, 3], [0, 3]], [[0, 1], [1, 2]]]
B8 = [[1.0, 0.5], [-1.0, 2.0], [0.5, 0.5], [2.0, -1.0], [1.0, 1.0], [0.0, 3.0], [1.5, -0.5], [-2.0, 1.0]]
G4 = [[1e-3, -2e-5, 3e-4, 0.0], [4.0, -0.5, 2e-2, 1e-6], [1e-8, 2e-8, -3e-8, 5e-9]]


@dataclass
class Entry:
    """A registry entry: a valid baseline call (keyword arguments) and the contract's exceptions."""
    kwargs: dict
    #: The function's result may hold inf/nan by design (say why in ``why``).
    nonfinite_ok: bool = False
    why: str = ""


def _slider(**kw):
    return explore.Slider(**{"name": "s", "label": "s", "min": 0, "max": 10, "step": 1, "default": 5, **kw})


REGISTRY: dict[str, dict | Entry] = {
    # --- memory -------------------------------------------------------------------------------
    "memory.tile_count": dict(rows=256, cols=1024, tile=128),
    "memory.tile_loads": dict(m=256, k=1024, n=1024, tile=128, scheme="all_pairs"),
    "memory.matmul_tile_traffic": dict(m=256, k=1024, n=1024, tile=128, dtype="fp16", scheme="all_pairs"),
    "memory.transfer_seconds": dict(nbytes=2.0**25, bandwidth=900.0, unit="GB/s"),
    "memory.matmul_load_seconds": dict(m=256, k=1024, n=1024, tile=128, bandwidth=900.0),
    "memory.slower_by": dict(time_fast=1.0, time_slow=2.0),
    "memory.speedup": dict(time_before=2.0, time_after=1.0),
    "memory.elementwise_traffic": dict(rows=1024, cols=1024, dtype="fp16", passes=2),
    "memory.bandwidth_ratio": dict(bandwidth_new=1555.0, bandwidth_old=900.0),
    "memory.batch_corrected_speedup": dict(throughput_new=2000.0, throughput_old=1000.0, batch_new=64,
                                           batch_old=32, gain_per_doubling=1.136, network_factor=1.05),
    "memory.matmul_flops": dict(m=256, k=1024, n=1024),
    "memory.matmul_min_traffic": dict(m=256, k=1024, n=1024, dtype="fp16"),
    "memory.arithmetic_intensity": dict(m=256, k=1024, n=1024, dtype="fp16"),
    "memory.roofline": dict(intensity=100.0, peak_flops=312e12, bandwidth=1.555e12),
    "memory.ridge_point": dict(peak_flops=312e12, bandwidth=1.555e12),
    "memory.bytes_in_flight": dict(bandwidth=3.35e12, latency_seconds=3.5e-7),
    "memory.sustained_bandwidth": dict(in_flight_bytes=1e6, latency_seconds=3.5e-7,
                                       bandwidth=3.35e12),
    "memory.matmul_roofline_seconds": dict(m=256, k=1024, n=1024, peak_flops=312e12, bandwidth=1.555e12),
    "memory.tile_quantization_efficiency": dict(m=1000, n=1000, tile_m=128, tile_n=128),
    "memory.wave_count": dict(m=1000, n=1000, tile_m=128, tile_n=128, sms=108),
    "memory.tile_count_rect": dict(m=1000, n=1000, tile_m=128, tile_n=128),
    "memory.wave_efficiency": dict(m=1000, n=1000, tile_m=128, tile_n=128, sms=108),
    "memory.quantization_efficiency": dict(m=1000, n=1000, tile_m=128, tile_n=128, sms=108),
    "memory.fits_in_cache": dict(nbytes=2.0**20, cache_bytes=40 * 2.0**20),
    "memory.bert_large_matmuls": dict(tokens=4096),
    "memory.matmul_operand_bytes": dict(m=256, k=1024, n=1024, dtype="fp16"),
    "memory.tpu_post_seconds": dict(tile=128, bandwidth=600.0, dtype="fp16", unit="GiB/s"),
    "memory.tile_footprint": dict(tile=128, dtype="fp16", buffers=2),
    "memory.matmul_intensity": dict(m=256, k=1024, n=1024, tile=128, dtype="fp16", count="output_stationary"),
    "memory.output_tile_intensity": dict(tile_m=128, tile_n=256, dtype="fp16"),
    "memory.wave_shape": dict(m=4096, n=4096, tile_m=128, tile_n=128, sms=108),
    "memory.wave_groups": dict(m=4096, n=4096, tile_m=128, tile_n=128, sms=132),
    "memory.wave_working_set": dict(m=4096, k=4096, n=4096, tile_m=128, tile_n=128, sms=108),
    "memory.l2_reuse": dict(m=4096, k=4096, n=4096, tile_m=128, tile_n=128, sms=108, l2_bytes=40 * 2.0**20),
    "memory.dram_traffic": dict(m=4096, k=4096, n=4096, tile_m=128, tile_n=128, sms=108, l2_bytes=40 * 2.0**20),
    "memory.kernel_seconds": dict(flops=1e12, nbytes=1e9, peak_flops=312e12, bandwidth=1.555e12,
                                  overhead_seconds=5e-6),
    "memory.regime": dict(flops=1e12, nbytes=1e9, peak_flops=312e12, bandwidth=1.555e12, overhead_seconds=5e-6),
    "memory.gemm_seconds": dict(m=4096, k=4096, n=4096, peak_flops=312e12, bandwidth=1.555e12, sms=108,
                                split_k=2, l2_bandwidth=5e12),
    "memory.decode_tokens_per_second": dict(weight_bytes=14e9, bandwidth=3.35e12, batch=4,
                                            kv_bytes_per_sequence=1e8),
    "memory.compute_bound_rows": dict(k=4096, n=4096, ridge=295.0, dtype="fp16"),
    # --- units --------------------------------------------------------------------------------
    "units.byte_unit": dict(unit="MiB"),
    "units.bandwidth_unit": dict(unit="GB/s"),
    "units.dtype_bytes": dict(dtype="fp16"),
    # --- hardware -----------------------------------------------------------------------------
    "hardware.names": dict(),
    "hardware.accelerators": dict(),
    "hardware.get": dict(name="H100 SXM5"),
    "hardware.cpus": dict(),
    "hardware.get_cpu": dict(name="EPYC 9654"),
    "hardware.records": dict(),
    "hardware.aliases": dict(),
    "hardware.joins": dict(name="GH200"),
    "hardware.Accelerator.peak_flops": dict(dtype="fp16", sparse=True, accumulate="fp32"),
    "hardware.Accelerator.ridge_point": dict(dtype="fp8"),
    # --- measured -----------------------------------------------------------------------------
    "measured.architectures": dict(),
    "measured.latencies": dict(architecture="Ampere"),
    "measured.latency": dict(architecture="Ampere", quantity="l2"),
    "measured.latency_seconds": dict(architecture="Ampere", quantity="l1"),
    "measured.measurements": dict(prefix="stream."),
    "measured.measurement": dict(id="dle.maskrcnn.a100.1gpu"),
    "measured.a100_v100_speedups": dict(network="maskrcnn"),
    # --- tensor_cores -------------------------------------------------------------------------
    "tensor_cores.matmul_rounds": dict(),
    "tensor_cores.matmul_cycle_breakdown": dict(method="async_copy"),
    "tensor_cores.matmul_cycles": dict(method="tensor_core"),
    "tensor_cores.speedup_percent": dict(cycles_before=504.0, cycles_after=235.0),
    "tensor_cores.tiled_loop_cycles": dict(k_tiles=8, load_cycles=200.0, compute_cycles=100.0, double_buffered=True),
    "tensor_cores.tensor_core_utilization": dict(k_tiles=8, load_cycles=200.0, compute_cycles=100.0,
                                                 double_buffered=True),
    "tensor_cores.cycles_to_seconds": dict(cycles=504.0, clock_hz=1.41e9),
    "tensor_cores.peak_tensor_flops": dict(sms=108, tensor_cores_per_sm=4, flop_per_tensor_core_per_cycle=512.0,
                                           clock_hz=1.41e9),
    "tensor_cores.tensor_core_family": dict(architecture="Ampere (GA102)"),
    "tensor_cores.flop_per_tensor_core_cycle": dict(architecture="Hopper (GH100)", geforce_half_rate=False),
    "tensor_cores.derived_vs_published": dict(accelerators=None),
    "tensor_cores.latency_preset": dict(architecture="Ampere", memory_level="l2", tensor_core_latency="measured"),
    "tensor_cores.per_sm_cycle": dict(rate=3.35e12, sms=132, clock_hz=1.83e9),
    "tensor_cores.k_step_cycles": dict(tile_m=128, tile_n=128, tile_k=64, bytes_per_cycle=13.9, flop_per_cycle=4096.0,
                                       element_bytes=2.0),
    "tensor_cores.max_load_cycles": dict(k_tiles=8, compute_cycles=100.0, utilization=0.8),
    # --- precision ----------------------------------------------------------------------------
    "precision.format_info": dict(name="fp8_e4m3"),
    "precision.format_table": dict(names=("fp16", "bf16")),
    "precision.tf32_round": Entry(dict(x=[1.0, 3.3]), nonfinite_ok=True,
                                  why="inf and nan pass through, and values past the TF32 maximum round to inf "
                                      "(what the format does; documented)"),
    "precision.quantize": Entry(dict(x=[0.1, 3.0], name="fp8_e4m3"), nonfinite_ok=True,
                                why="values past a format's maximum become inf or nan (what the cast does; "
                                    "documented), and inf/nan pass through"),
    "precision.representable_values": dict(name="fp4_e2m1"),
    "precision.gradient_sample": dict(n=1000, log10_mean=-6.0, log10_std=1.5, seed=0),
    "precision.overflow_underflow_fractions": dict(grads=[1e-9, -1e-3, 1.0, 0.0, 7e4], name="fp16",
                                                   loss_scale=1024.0),
    "precision.dynamic_loss_scale_trace": dict(overflow=[False, True, False], init_scale=65536.0,
                                               growth_interval=2, backoff=0.5, growth=2.0),
    "precision.dynamic_loss_scale_run": dict(grad_max=[0.01, 1.0, 0.1], name="fp16", init_scale=65536.0,
                                             growth_interval=2, backoff=0.5, growth=2.0),
    "precision.absmax_quantize_int8": dict(X=X2, axis=-1),
    "precision.absmax_int8_matmul": dict(X=X2, W=W2),
    "precision.mixed_int8_matmul": dict(X=[[1.0, 8.0], [0.5, -7.0]], W=W2, threshold=6.0),
    "precision.fp8_matmul": dict(X=X2, W=W2, name="fp8_e5m2"),
    "precision.matmul_relative_error": dict(approx=[1.0, 2.1], exact=[1.0, 2.0]),
    "precision.outlier_activations": dict(rows=16, cols=8, n_outlier_cols=2, outlier_scale=20.0, seed=0),
    "precision.blockwise_quantize": dict(x=[-3.0, -1.0, 0.0, 0.5, 2.0, 2.5, 3.0, 0.1, 0.2, 0.3], name="nf4",
                                         block_size=4),
    "precision.quantization_mse": dict(x=[-3.0, -1.0, 0.0, 0.5, 2.0, 2.5, 3.0, 0.1, 0.2, 0.3], name="int4",
                                       block_size=4),
    "precision.bytes_per_element": dict(name="nf4", block_size=64, scale_bytes=4.0),
    "precision.fp8_training_speedup": dict(gemm_speedup=1.8, gemm_fraction=0.6, transpose_overhead_fraction=0.05),
    "precision.gemm_fraction_needed": dict(end_to_end_speedup=1.25, gemm_speedup=1.77,
                                           transpose_overhead_fraction=0.05),
    "precision.fp8_overhead_needed": dict(end_to_end_speedup=1.25, gemm_speedup=1.77, gemm_fraction=0.6),
    "precision.block_scales": dict(x=G4, name="fp4_e2m1", block_rows=1, block_cols=2, scale_format="e4m3"),
    "precision.scaled_quantize": dict(x=G4, name="fp4_e2m1", block_rows=2, block_cols=None, scale_format="e8m0"),
    "precision.scheme_quantize": dict(x=G4, name="fp8_e4m3", scheme="per row"),
    "precision.gradient_matrix": dict(rows=8, cols=16, log10_mean=-6.0, log10_row_std=1.0, log10_within_std=0.5,
                                      seed=0),
    "precision.cast_losses": dict(x=G4, name="fp8_e4m3", scheme="1x128 blocks"),
    "precision.scheme_matmul": dict(X=X2, W=W2, name="fp4_e2m1", scheme="NVFP4 (16, E4M3)"),
    "precision.powers_of_two_spanned": dict(name="fp8_e5m2"),
    "precision.block_maxima": dict(x=G4, block_rows=1, block_cols=2),
    "precision.stochastic_round": dict(x=[0.1, 0.3, -2.5, 7.0], name="fp4_e2m1", seed=0),
    "precision.random_hadamard": dict(size=16, seed=0),
    "precision.rotated_quantize": dict(x=[[3.0, -1.0, 0.5, 0.25], [0.1, 0.2, -40.0, 1.0]],
                                       name="fp4_e2m1", scheme="NVFP4 (16, E4M3)", size=4, seed=0),
    "precision.smooth_scales": dict(x_absmax=[1.0, 20.0], w_absmax=[0.5, 0.25], alpha=0.5),
    "memory.accumulator_bytes": dict(tile_m=128, tile_n=256, accumulate="fp32"),
    "memory.kernel_terms": dict(flops=5.4e8, nbytes=3.1e6, peak_flops=989.4e12, bandwidth=3.35e12,
                                overhead_seconds=5e-6),
    "memory.attention_flops": dict(seq=4096, head_dim=128),
    "memory.attention_bytes": dict(seq=4096, head_dim=128, fused=True, block_rows=128, dtype="fp16"),
    "memory.attention_intensity": dict(seq=4096, head_dim=128, fused=False, block_rows=128,
                                       dtype="fp16"),
    "memory.attention_compute_bound_seq": dict(ridge=295.0, dtype="fp16"),
    "tensor_cores.operand_bytes_per_cycle": dict(tile_m=128, tile_n=128, flop_per_cycle=4096.0,
                                                 element_bytes=2.0),
    "tensor_cores.bytes_in_flight": dict(bytes_per_cycle=13.9, latency_cycles=689.0),
    "tensor_cores.smem_bytes_per_cycle": dict(mma_tile_m=64, mma_tile_n=64, cta_tile_m=128, cta_tile_n=128,
                                              flop_per_cycle=4096.0, element_bytes=2.0, smem_bandwidth=128.0),
    # --- workloads ----------------------------------------------------------------------------
    "workloads.transformer_params": dict(layers=32, d_model=4096, d_ff=14336, heads=32, kv_heads=8, vocab=128256,
                                         input_embedding=False),
    "workloads.training_flops_per_token": dict(params=8.03e9, layers=32, d_model=4096, seq_len=8192, causal=True),
    "workloads.model_flops_utilization": dict(tokens_per_second=1e4, flops_per_token=6.1e10, peak_flops=989e12),
    "workloads.layer_matmul_params": dict(d_model=4096, d_ff=14336, heads=32, kv_heads=8),
    "workloads.linear_flop_share": dict(layers=32, d_model=4096, d_ff=14336, heads=32, kv_heads=8,
                                        vocab=128256, seq_len=8192, output_head=False),
    "workloads.mixed_peak_flops": dict(fast_share=0.72, fast_peak=1978.9e12, slow_peak=989.4e12),
    "workloads.amdahl_speedup": dict(part_speedup=1.3, part_fraction=0.4, added_fraction=0.01),
    "workloads.part_fraction_needed": dict(step_speedup=1.06, part_speedup=1.25, added_fraction=0.0),
    # --- sparsity -----------------------------------------------------------------------------
    "sparsity.pattern": dict(pattern="2:4"),
    "sparsity.pattern_for": dict(dtype="fp16"),
    "sparsity.keep_mask": dict(a=A8, pattern="2:4"),
    "sparsity.prune": dict(a=A8, pattern="4:8"),
    "sparsity.follows_pattern": dict(a=A8, pattern="1:2"),
    "sparsity.violation_share": dict(a=A8, pattern="2:4"),
    "sparsity.compress": dict(a=A8_PRUNED, pattern="2:4"),
    "sparsity.decompress": dict(values=A8_VALUES, positions=A8_POSITIONS, pattern="2:4"),
    "sparsity.compressed_matmul": dict(values=A8_VALUES, positions=A8_POSITIONS, b=B8, pattern="2:4"),
    "sparsity.compressed_fraction": dict(dtype="fp8"),
    "sparsity.compressed_bytes": dict(rows=4096, cols=4096, dtype="fp16"),
    "sparsity.storage_fraction": dict(density=0.5, value_bits=16, fmt="csr", index_bits=16),
    "sparsity.break_even_density": dict(value_bits=16, fmt="bitmap", index_bits=16),
    "sparsity.gemm_bytes": dict(m=4096, k=4096, n=64, dtype="fp16", sparse=True),
    "sparsity.operand_bytes": dict(m=16, k=32, n=8, dtype="fp16", sparse=True),
    "sparsity.sparse_gemm_terms": dict(m=3072, k=10240, n=3072, peak_flops=312e12, bandwidth=2.039e12,
                                       dtype="fp16", sparse=True, kernel_efficiency=0.7, overhead_seconds=5e-6),
    "sparsity.sparse_gemm_speedup": dict(m=3072, k=10240, n=3072, peak_flops=312e12, bandwidth=2.039e12,
                                         dtype="fp16", kernel_efficiency=0.7, overhead_seconds=5e-6),
    "sparsity.sparse_ridge_point": dict(peak_flops=312e12, bandwidth=2.039e12),
    "sparsity.step_speedup": dict(gemm_speedup=1.4, sparse_fraction=0.3),
    "sparsity.training_gemm_speedup": dict(forward_speedup=1.4, sparse_passes=2),
    "sparsity.weight_read_rate": dict(weight_bytes=4.22e9, tokens_per_second=180.8),
    "sparsity.accuracy_recovery": dict(dense_score=63.19, sparse_score=62.16),
    "sparsity.magnitude_mask": dict(a=A8, density=0.5),
    "sparsity.pruning_loss": dict(a=A8, b=B8, method="2:4"),
    "sparsity.random_matrix": dict(rows=8, cols=8, tail_df=3.0, seed=1),
    "sparsity.teacher_dataset": dict(samples=300, seed=1),
    "sparsity.train": dict(method="sparse momentum", density=0.5, epochs=1, prune_rate=0.5, finetune_2_4=1,
                           learning_rate=0.05, batch=512, seed=0, samples=600),
    # --- parallelism --------------------------------------------------------------------------
    "parallelism.bus_factor": dict(ranks=8, op="all_gather"),
    "parallelism.collective_seconds": dict(nbytes=1e9, ranks=8, bandwidth=450e9, latency=5e-6, op="all_reduce",
                                           algorithm="nvls"),
    "parallelism.bus_bandwidth": dict(nbytes=1e9, seconds=4e-3, ranks=8, op="all_reduce"),
    "parallelism.modelled_bus_bandwidth": dict(nbytes=1e6, ranks=8, bandwidth=450e9, latency=5e-6,
                                               op="reduce_scatter", algorithm="ring"),
    "parallelism.half_bandwidth_size": dict(ranks=8, bandwidth=450e9, latency=5e-6, op="all_gather"),
    "parallelism.hierarchical_all_reduce_seconds": dict(nbytes=2e9, gpus_per_node=8, nodes=4, node_bandwidth=450e9,
                                                        network_bandwidth=50e9, node_latency=5e-6,
                                                        network_latency=10e-6, buckets=64, call_fill=0.5),
    "parallelism.tree_all_reduce_seconds": dict(nbytes=1e9, ranks=64, bandwidth=50e9, latency=5e-6),
    "parallelism.links": dict(),
    "parallelism.link": dict(link="NVLink 4 (H100)"),
    "parallelism.naive_gradient_seconds": dict(nbytes=4e6, gpus_per_node=3, nodes=2, network_bandwidth=5.4e9),
    "parallelism.data_parallel_step": dict(compute_seconds=0.1, comm_seconds=0.08, overlap=0.8, backward_share=0.6),
    "parallelism.min_tokens_per_gpu": dict(peak_flops=989e12, bandwidth=450e9, ranks=8, grad_bytes=2.0),
    "parallelism.scaling_efficiency": dict(compute_seconds=0.1, comm_seconds=0.08, overlap=0.8, backward_share=0.6),
    "parallelism.post_model_parallel_elements": dict(batch=128, d_in=1000, d_out=500, split="rows"),
    "parallelism.post_model_parallel_break_even_batch": dict(d_in=1000, d_out=500, split="columns"),
    "parallelism.tensor_parallel_bytes": dict(tokens=4096, d_model=4096, ranks=8, act_bytes=2.0),
    "parallelism.data_parallel_bytes": dict(params=7e9, ranks=8, grad_bytes=2.0, sharded=True),
    "parallelism.max_tensor_parallel": dict(block_params=1.76e8, d_model=4096, peak_flops=989e12, bandwidth=450e9,
                                            all_reduces=1, act_bytes=2.0, passes="step"),
    "parallelism.training_memory": dict(params=7e9, gpus=8, stage=3, param_bytes=2.0, grad_bytes=2.0,
                                        optimizer_bytes=12.0),
    "parallelism.pipeline_bubble": dict(stages=4, microbatches=8, interleave=2, layers=32),
    "parallelism.moe_all_to_all_bytes": dict(tokens=4096, d_model=4096, ranks=8, top_k=2, act_bytes=2.0),
    "parallelism.expert_parallel_intensity": dict(d_ff=14336, ranks=8, act_bytes=2.0, matrices=3),
    "parallelism.moe_min_tokens_per_gpu": dict(peak_flops=989e12, bandwidth=450e9, ranks=8, total_params=47e9,
                                               active_params=13e9, grad_bytes=4.0),
    "parallelism.ring_attention_step_seconds": dict(tokens_per_gpu=8192, d_model=16384, kv_dim=1024,
                                                    peak_flops=989e12, bandwidth=450e9, act_bytes=2.0,
                                                    latency=5e-6),
    "parallelism.ring_attention_min_tokens": dict(d_model=16384, kv_dim=1024, peak_flops=989e12, bandwidth=450e9,
                                                  act_bytes=2.0),
    "parallelism.activation_constant": dict(d_ff_ratio=3.25, kv_ratio=0.0625, gated=True, dropout=False),
    "parallelism.activation_memory": dict(seq_len=8192, micro_batch=1, hidden=16384, heads=128, tensor_parallel=8,
                                          recompute="selective", sequence_parallel=True),
    "measured.collectives": dict(prefix="nccl."),
    # --- brain --------------------------------------------------------------------------------
    "brain.estimate_terms": dict(reading="self-consistent", firing_rate=100.0, time_steps=4.0,
                                 purkinje_rate=50.0, granule_rate=1.0, steps_per_second=30.0),
    "brain.estimate": dict(reading="reconstruction", purkinje_inputs=8e4),
    "brain.sensitivity": dict(reading="self-consistent"),
    "brain.synapse_count_flops": dict(synapses=1e13, firing_rate=200.0, flop_per_event=2.0),
    "brain.doublings": dict(start=0.58e15, target=1.075e21, whole=False),
    "brain.year_reached": dict(start=0.58e15, target=1.075e21, doubling_years=1.8, base_year=2015.0, whole=True),
    "brain.projected_flops": dict(year=2030.0, start=1e15, doubling_years=2.0, base_year=2015.0),
    "brain.fitted_doubling_years": dict(years=[2014.0, 2018.0, 2025.0], flops=[0.58e15, 2.9e15, 17.4e15]),
    "brain.fitted_flops": dict(years=[2014.0, 2018.0, 2025.0], flops=[0.58e15, 2.9e15, 17.4e15], year=2025.9),
    "brain.landauer_bit_erasures": dict(power_watts=20.0, temperature_kelvin=310.0),
    "brain.records": dict(metric="hpl"),
    "brain.measured_inputs": dict(parameter="purkinje_cells"),
    "brain.roofline_gpus": dict(synapses=1e14, rate_hz=10.0, bytes_per_synapse=2.0, flop_per_event=2.0,
                                accelerator="H100 SXM5", dtype="bf16"),
    # --- choosing a GPU ------------------------------------------------------------------------
    "cost.energy_kwh": dict(power_w=450.0, utilization=0.15, hours=8760.0),
    "cost.electricity_usd": dict(power_w=450.0, utilization=0.15, years=5.0, usd_per_kwh=0.175),
    "cost.ownership_usd": dict(purchase_usd=1599.0, power_w=450.0, utilization=0.15, years=5.0,
                               usd_per_kwh=0.175),
    "cost.cloud_usd": dict(usd_per_hour=2.14, utilization=0.15, days=300.0),
    "cost.desktop_usd": dict(desktop_usd=2200.0, power_w=450.0, utilization=0.15, days=300.0,
                             usd_per_kwh=0.12),
    "cost.breakeven_days": dict(desktop_usd=2200.0, power_w=450.0, usd_per_kwh=0.12, cloud_usd_per_hour=2.14,
                                utilization=0.15),
    "cost.system_power_w": dict(gpus=4, gpu_w=350.0, cpu_w=150.0, other_w=50.0),
    "cost.psu_headroom_w": dict(psu_w=1600.0, gpus=4, gpu_w=350.0),
    "cost.energy_per_work_change": dict(power_before_w=250.0, power_after_w=200.0, slowdown=0.07),
    "cost.per_dollar": dict(throughput=0.6, usd=1599.0),
    "throughput.transformer_train_kernels": dict(batch=4, seq=128, layers=2, d_model=256, d_ff=1024, heads=4,
                                                 vocab=1000, positions=128),
    "throughput.resnet50_forward_flops": dict(image=224),
    "throughput.cnn_train_kernels": dict(batch=8, image=64),
    "throughput.decode_kernels": dict(batch=2, context=512, weight_bits=4.5, layers=2, d_model=256, d_ff=512,
                                      heads=4, kv_heads=2, vocab=1000, kv_bits=16.0),
    "throughput.kv_cache_bytes": dict(context=8192, layers=32, d_model=4096, heads=32, kv_heads=8, kv_bits=16.0),
    "throughput.flop_utilization": dict(
        kernels={"flops": [1e9, 0.0], "bytes": [1e6, 1e8], "launches": [2.0, 1.0]},
        accelerators=["H100 SXM5", "RTX 4090"], math="16-bit", engine="eager"),
    "throughput.time_by_regime": dict(
        kernels={"flops": [1e9, 0.0], "bytes": [1e6, 1e8], "launches": [2.0, 1.0]},
        accelerators=["H100 SXM5", "RTX 4090"], math="16-bit", engine="llama.cpp"),
    "throughput.kernel_times": dict(kernels={"flops": [1e9, 0.0], "bytes": [1e6, 1e8], "launches": [2.0, 1.0],
                                             "kind": ["weights", "elementwise"], "dequantized": [4e6, 0.0]},
                                    accelerators=["A100 SXM4 40GB", "H100 SXM5"], math="16-bit",
                                    engine="compiled"),
    "throughput.step_parts": dict(kernels={"flops": [1e9, 0.0], "bytes": [1e6, 1e8], "launches": [2.0, 1.0]},
                                  accelerators=["RTX 4090"], math="fp8", engine="llama.cpp"),
    "throughput.step_seconds": dict(kernels={"flops": [1e9, 0.0], "bytes": [1e6, 1e8], "launches": [2.0, 1.0]},
                                    accelerators=["RTX 4090", "TPU v4"], engine="eager", math="16-bit"),
    "throughput.achieved_rates": dict(accelerators=["H100 SXM5", "TPU v4"], math="16-bit", engine="llama.cpp"),
    "throughput.device_seconds": Entry(dict(
        kernels={"flops": [1e9, 0.0], "bytes": [1e6, 1e8], "launches": [2.0, 1.0]},
        rates={"gemm": [1e14], "conv": [5e13], "stream": [1e12], "weights": [5e11], "floor": [2e-6],
               "host": [1e-5], "peak": [1e14], "dequant": [1e13]})),
    "throughput.decode_row_kernels": dict(row={"id": "decode.llama3_8b_q4.x", "detail":
                                               "params=8030000000; file_bytes=4917737554; context=256"}),
    "throughput.band": dict(workload="cnn-train"),
    "throughput.band_errors": dict(workload="llm-decode", prefix="decode.llama3_8b_q4."),
    "throughput.band_bounds": dict(relative=1.5, workload="cnn-train"),
    "throughput.flops_by_kind": dict(kernels=throughput.llm_train_kernels(1, seq=64, layers=1,
                                                                         d_model=64, d_ff=128,
                                                                         heads=4, kv_heads=2,
                                                                         vocab=100)),
    "throughput.llm_train_kernels": dict(batch=2, seq=256, layers=2, d_model=256, d_ff=512,
                                         heads=4, kv_heads=2, vocab=1000, gpus=8, fused=True,
                                         selective_recompute=True),
    "throughput.sustained_clock_share": dict(power_limit_w=500.0, tdp_w=700.0),
    "throughput.power_limited": dict(accelerator="H100 SXM5", power_limit_w=500.0),
    "throughput.kernels_for": dict(workload="llm-decode", batch=2),
    "throughput.card_rates": dict(accelerators=["H100 SXM5", "TPU v4"], math="fp8"),
    "throughput.throughput": dict(workload="llm-decode", accelerators=["RTX 4090", "H100 SXM5"], batch=[1, 4],
                                  math="16-bit", engine="compiled"),
    "throughput.relative_throughput": dict(workload="transformer-train", accelerators=["RTX 4090"],
                                           reference="A100 SXM4 40GB", batch=8),
    "throughput.validation": dict(workload="cnn-train", predictor="bandwidth", reference="RTX 4090"),
    "throughput.median_error": dict(workload="llm-decode", predictor="model", reference="RTX 3090"),
    "throughput.decode_throughput": dict(accelerators=["RTX 4090", "H100 SXM5"], batches=[1, 8],
                                         engine="llama.cpp"),
    "throughput.weight_bytes": dict(weight_bits=4.5, layers=2, d_model=256, d_ff=512, heads=4, kv_heads=2,
                                    vocab=1000, input_embedding=False),
    "throughput.cnn_train_memory_bytes": dict(batch=64, image=160),
    "throughput.memory_need_bytes": dict(workload="llm-decode", batch=4, weight_bits=4.5,
                                         context=4096),
    "throughput.fit_margin": dict(),
    "throughput.largest_batch": dict(workload="transformer-train", accelerators=["RTX 4090", "T4"],
                                     cap=16, seq=128),
    "throughput.rank": dict(workload="llm-decode", reference="RTX 4090", accelerators=["RTX 3090", "H100 SXM5"],
                            prices={"RTX 3090": 800.0}, batch=2, math="16-bit"),
    "throughput.recommend": dict(workload="transformer-train", budget_usd=2500.0, memory_gib=20.0,
                                 eight_bit=True, prices={"RTX 3090": 800.0}, accelerators=None, top=3,
                                 years=3.0, utilization=0.3, usd_per_kwh=0.2),
    "workloads.encoder_params": dict(layers=24, d_model=1024, d_ff=4096, vocab=30522, positions=512),
    "workloads.activation_bytes": dict(layers=24, d_model=1024, heads=16, seq=384, batch=8),
    "workloads.training_memory_bytes": dict(params=3.3e8, layers=24, d_model=1024, heads=16, seq=384, batch=8,
                                            state_bytes=16.0),
    "workloads.max_training_batch": dict(memory_bytes=24 * 2**30, params=3.3e8, layers=24, d_model=1024, heads=16,
                                         seq=384, state_bytes=16.0),
    "workloads.inference_memory_bytes": dict(weight_bytes=16e9, kv_bytes_per_sequence=1e9, batch=4),
    "workloads.lora_params": dict(d_in=4096, d_out=1024, rank=16),
    "workloads.decoder_lora_params": dict(rank=16, layers=2, d_model=256, d_ff=512, heads=4, kv_heads=2),
    "workloads.lora_memory_bytes": dict(frozen_params=6.98e9, adapter_params=4.19e7, weight_bits=4.127,
                                        frozen_16bit_params=1.05e9, adapter_state_bytes=16.0),
    "throughput.prefill_flops": dict(prompt=2048, layers=2, d_model=256, d_ff=512, heads=4, kv_heads=2,
                                     vocab=1000),
    "throughput.time_to_first_token": dict(prompt=2048, flop_rate=8e14, bandwidth=3.35e12, weight_bits=16.0,
                                           layers=2, d_model=256, d_ff=512, heads=4, kv_heads=2, vocab=1000),
    "validate.dataset": dict(measurements=None),
    "validate.read_rows": dict(text="id,what,hardware,value,unit,batch,gpus,source,detail\n"
                                    "mine.stream.copy,copy,H100 SXM5,2900,GB/s,,1,mine,x\n", name="mine.csv"),
    "validate.rows": dict(model="naive", chapter="sparsity", measurements=None),
    "validate.unscored": dict(measurements=None),
    "validate.summary": dict(scored=[{"id": "a", "chapter": "sparsity", "rel_error": 0.1}]),
    "validate.kendall_tau": dict(x=[1.0, 2.0, 3.0], y=[1.0, 3.0, 2.0]),
    "validate.cross_validate": dict(chapter="low_precision"),
    "validate.cv_summary": dict(chapter="sparsity"),
    "validate.discordant_pairs": dict(workload="lambda.bert_large"),
    "validate.error_band": dict(chapter="choosing_a_gpu", workload_prefix="decode."),
    "calibration.die": dict(hardware_name="A100 SXM4 80GB"),
    "calibration.row_dies": dict(row={"id": "dle.x.a100.1gpu", "hardware": "A100 SXM4 40GB"}),
    "calibration.gemm_shares": dict(rows=[{"id": "mamf.x.bf16", "hardware": "H100 SXM5", "value": 800.0}]),
    "calibration.stream_shares": dict(rows=[{"id": "stream.x.read", "hardware": "L40", "value": 800.0}]),
    "calibration.dram_latencies": dict(),
    "calibration.ring_step_latencies": dict(leave_out=["GA100"]),
    "calibration.fit": dict(leave_out=["GA100"], rows=None),
    "calibration.default": dict(leave_out="GH100"),
    "calibration.with_constants": dict(base=None, share_scale=0.7),
    "calibration.constants_table": dict(base=None),
    # --- audit --------------------------------------------------------------------------------
    "audit.rounds_to": dict(value=5.208e-5, printed="5.2e-05"),
    "audit.rows": dict(),
    "audit.reproduce": dict(),
    "audit.frame": dict(prefixes=("tpu_vs_gpu",)),
    # --- explore ------------------------------------------------------------------------------
    "explore.Slider": dict(name="s", label="a slider", min=0, max=10, step=1, default=5, unit="x", grid_step=2,
                           integer=True),
    "explore.Choice": dict(name="c", label="a choice", options=("fp16", "fp32"), default="fp16"),
    "explore.Exploration": dict(name="toy", compute=lambda s: {"y": np.arange(3) * s}, params=(_slider(),),
                                chart=lambda base: base.mark_line(), description="a toy", notes={}),
}

#: Exploration columns that hold NaN by design (the chart filters them out).
EXPLORATION_NONFINITE_OK = {"number_line": {"relative_gap": "the largest value has no next value"}}

#: A valid command line per CLI subcommand (without --json; each is also run with it).
CLI_REGISTRY = {
    "list": ["--kind", "gpu"],
    "show": ["H100 SXM5"],
    "matmul": ["-a", "H100 SXM5", "-m", "256", "-k", "1024", "-n", "1024", "--dtype", "fp16", "--tile", "128",
               "--scheme", "all_pairs", "--bandwidth-unit", "GiB/s"],
    "compare": ["A100 SXM4 40GB", "V100 SXM2 16GB", "--dtype", "fp16"],
    "reproduce": [],
    "rank": ["--workload", "llm-decode", "--reference", "RTX 4090", "--batch", "4"],
    "validate": ["--chapter", "sparsity", "--model", "naive"],
}

CLI_VALUES = ["0", "-1", "0.5", "nan", "inf", "-inf", "1e300", "1" + "0" * 400, "1" + "0" * 103, "",
              "abc", "True", "None", " ", "fp12", "9" * 20]


# --- discovery --------------------------------------------------------------------------------

def public_functions() -> dict[str, object]:
    """Every public callable to fuzz, by registry key."""
    found = {}
    for prefix, module in MODULES.items():
        for name, obj in vars(module).items():
            if not name.startswith("_") and inspect.isfunction(obj) and obj.__module__ == module.__name__:
                found[f"{prefix}.{name}"] = obj
    for prefix, (cls, _) in METHOD_TARGETS.items():
        for name, obj in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(obj):
                found[f"{prefix}.{name}"] = obj
    found.update(CONSTRUCTORS)
    return found


def target(key: str):
    """The callable to call for ``key`` (methods bound to their instance)."""
    for prefix, (_, make) in METHOD_TARGETS.items():
        if key.startswith(prefix + "."):
            return getattr(make(), key[len(prefix) + 1:])
    return public_functions()[key]


def parameters(key: str) -> list[inspect.Parameter]:
    params = list(inspect.signature(target(key)).parameters.values())
    return [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def entry(key: str) -> Entry:
    value = REGISTRY[key]
    return value if isinstance(value, Entry) else Entry(value)


def baseline(key: str) -> dict:
    """The registered call with every defaulted parameter filled in (so each one is mutated too)."""
    kwargs = dict(entry(key).kwargs)
    for p in parameters(key):
        if p.name not in kwargs:
            if p.default is inspect.Parameter.empty:
                raise KeyError(f"REGISTRY[{key!r}] lacks required parameter {p.name!r}")
            kwargs[p.name] = p.default
    return kwargs


# --- inputs -----------------------------------------------------------------------------------

GENERIC = [
    ("zero", 0), ("negative", -1), ("negative_float", -2.5), ("half", 0.5), ("tiny", 1e-320),
    ("small", 1e-300), ("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf), ("huge", 1e300),
    ("huge_int", 10**400), ("big_int", 10**103), ("big_count", 2**26), ("true", True), ("false", False),
    ("numpy_bool", np.bool_(True)), ("string", "abc"), ("numeric_string", "1"), ("empty_string", ""),
    ("bytes", b"fp16"), ("none", None), ("empty_list", []), ("empty_array", np.array([])),
    ("complex", 1 + 1j), ("complex_array", np.array([1 + 0j, 2 + 0j])), ("bool_array", np.array([True, False])),
    ("object_array", np.array([1.0, None], dtype=object)), ("ragged", [[1.0, 2.0], [3.0]]), ("dict", {}),
    ("nan_array", np.array([1.0, math.nan])), ("inf_array", np.array([1.0, math.inf])),
    ("huge_array", np.array([1e300, 1e-300])),
]


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _is_array(value) -> bool:
    if isinstance(value, (str, bytes)) or value is None or isinstance(value, tuple):
        return False
    try:
        arr = np.asarray(value)
    except Exception:
        return False
    return arr.dtype.kind in "biuf" and arr.ndim >= 1 and arr.size > 0


def mutations(kwargs: dict, name: str):
    """(label, kwargs) pairs: ``kwargs`` with ``name`` replaced, one way at a time."""
    b = kwargs[name]
    for label, value in GENERIC:
        yield label, {**kwargs, name: value}
    yield "one_element_list", {**kwargs, name: [b]}
    yield "two_d", {**kwargs, name: [[b, b], [b, b]]}
    if isinstance(b, str):
        yield "list_of_name", {**kwargs, name: [b]}
        yield "padded_name", {**kwargs, name: f" {b}x "}
    others = [o for o in kwargs if o != name and (_is_number(kwargs[o]) or _is_array(kwargs[o]))]
    if _is_number(b) and others:
        other = others[0]
        ob = kwargs[other]
        ob3 = np.full(2, ob) if _is_number(ob) else np.asarray(ob)[..., :1]
        yield "mismatched_shape", {**kwargs, name: np.full(3, b), other: ob3}
    elif _is_array(b):
        arr = np.asarray(b, dtype=float)
        yield "mismatched_shape", {**kwargs, name: np.concatenate([arr, arr[:1]])}
        yield "negative_array", {**kwargs, name: -np.abs(arr) - 1}


# --- the contract -----------------------------------------------------------------------------

def nonfinite(obj, path: str = "result", depth: int = 0) -> str | None:
    """The path of the first NaN/inf inside ``obj`` (numbers, arrays, containers, frames, dataclasses)."""
    if depth > 6 or obj is None or callable(obj) or isinstance(obj, (str, bytes, bool, np.bool_)):
        return None
    if isinstance(obj, (int, np.integer)):
        return None
    if isinstance(obj, (float, np.floating, complex, np.complexfloating)):
        return None if np.isfinite(obj) else path
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc":
            return None if np.all(np.isfinite(obj)) else path
        if obj.dtype.kind == "O":
            for i, v in enumerate(obj.ravel()[:1000]):
                bad = nonfinite(v, f"{path}[{i}]", depth + 1)
                if bad:
                    return bad
        return None
    if hasattr(obj, "to_dict") and hasattr(obj, "columns"):  # a DataFrame
        for column in obj.columns:
            bad = nonfinite(obj[column].to_numpy(), f"{path}[{column!r}]", depth + 1)
            if bad:
                return bad
        return None
    if isinstance(obj, dict):
        for k, v in obj.items():
            bad = nonfinite(v, f"{path}[{k!r}]", depth + 1)
            if bad:
                return bad
        return None
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj[:1000]):
            bad = nonfinite(v, f"{path}[{i}]", depth + 1)
            if bad:
                return bad
        return None
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            bad = nonfinite(getattr(obj, f.name), f"{path}.{f.name}", depth + 1)
            if bad:
                return bad
    return None


def names_one_of(message: str, names) -> bool:
    return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", message) for n in names)


def check(call, names, nonfinite_ok=False, drop_columns=()) -> str | None:
    """Run ``call()``; None if it keeps the contract, else what broke it."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except ValueError as err:
            if not names_one_of(str(err), names):
                return f"ValueError names none of {sorted(names)}: {str(err)[:160]!r}"
            result = None
        except Exception as err:  # noqa: BLE001 - any other type breaks the contract
            return f"{type(err).__name__}: {str(err)[:160]}"
    elapsed = time.perf_counter() - start
    if elapsed > SLOW:
        return f"slow: {elapsed:.1f} s"
    leaked = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    if leaked:
        return f"leaked RuntimeWarning: {leaked[0].message}"
    if drop_columns and isinstance(result, dict):
        result = {k: v for k, v in result.items() if k not in drop_columns}
    elif drop_columns and hasattr(result, "columns"):
        result = result.drop(columns=[c for c in drop_columns if c in result.columns])
    bad = None if nonfinite_ok else nonfinite(result)
    return f"non-finite value at {bad}" if bad else None


def _show(value) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


@dataclass
class Tally:
    covered: set = field(default_factory=set)
    tried: int = 0
    failures: list = field(default_factory=list)

    def run(self, where, label, call, names, **kw):
        self.tried += 1
        problem = check(call, names, **kw)
        if problem:
            self.failures.append(f"{where} [{label}]: {problem}")


def fuzz_function(key: str, tally: Tally) -> None:
    tally.covered.add(key)
    fn = target(key)
    e = entry(key)
    kwargs = baseline(key)
    names = {p.name for p in parameters(key)} | set(kwargs)
    tally.run(key, "baseline", lambda: fn(**kwargs), names, nonfinite_ok=e.nonfinite_ok)
    if tally.failures and tally.failures[-1].startswith(f"{key} [baseline]"):
        return
    for name in kwargs:
        for label, mutated in mutations(kwargs, name):
            tally.run(f"{key}({name}=...)", label, lambda m=mutated: fn(**m), names,
                      nonfinite_ok=e.nonfinite_ok)


def fuzz_exploration(exploration, tally: Tally) -> None:
    key = f"exploration {exploration.name}"
    tally.covered.add(key)
    names = {p.name for p in exploration.params}
    drop = tuple(EXPLORATION_NONFINITE_OK.get(exploration.name, ()))
    defaults = exploration.defaults()
    tally.run(key, "baseline", lambda: exploration.table(**defaults), names, drop_columns=drop)
    for name in defaults:
        for label, mutated in mutations(defaults, name):
            tally.run(f"{key}({name}=...)", label, lambda m=mutated: exploration.table(**m), names,
                      drop_columns=drop)


# --- the explorations package, fuzzed by class ------------------------------------------------

#: Baselines for explorations functions whose required parameters neither a default nor an
#: Exploration (the compute function's defaults, the chart function's table) gives.
EXPLORATION_REGISTRY: dict[str, dict] = {
    "explorations.brain.crossing_year": dict(start=0.58e15, target=1e18, doubling_years=1.8),
    "explorations.brain.estimates_chart": dict(landauer=1e22),
    "explorations.choosing_a_gpu.decode_cap": dict(accelerator="RTX 4090"),
    "explorations.choosing_a_gpu.graph_node_share": dict(row_id="decode.llama3_8b_q4.rtx4090"),
    "explorations.choosing_a_gpu.job_memory_gib": dict(
        kind="train", settings={"layers": 12, "d_model": 768, "d_ff": 3072, "heads": 12, "seq": 128,
                                "batch": 32}),
    "explorations.choosing_a_gpu.kernel_frame": dict(workload="transformer-train", accelerator="H100 SXM5",
                                                     batch=32),
    "explorations.choosing_a_gpu.memory_kind": dict(name="RTX 4090"),
    "explorations.choosing_a_gpu.overrating": dict(workload="cnn-train"),
    "explorations.choosing_a_gpu.prefill_ridge_tokens": dict(accelerator="H100 SXM5", k=4096, n=1024),
    "explorations.choosing_a_gpu.rank_frame": dict(workload="transformer-train", top=10),
    "explorations.choosing_a_gpu.regime_shares": dict(workload="llm-decode", accelerator="H100 SXM5", batch=1),
    "explorations.choosing_a_gpu.show_value": dict(frame=lambda: choosing_a_gpu.value_frame()),
    "explorations.choosing_a_gpu.validation_frame": dict(workload="cnn-train"),
    "explorations.low_precision.bert_compute_us": dict(dtype="fp8"),
    "explorations.low_precision.best_scale": dict(fmt="fp8_e5m2"),
    "explorations.low_precision.dynamic_scaling_chart": dict(frame=lambda: low_precision.dynamic_scaling_frame()),
    "explorations.low_precision.matmul_errors": dict(outlier_scale=20.0),
    "explorations.low_precision.outlier_columns": dict(outlier_scale=20.0),
    "explorations.low_precision.scale_sweep": dict(fmt="fp16"),
    "explorations.low_precision.skip_causes": dict(frame=lambda: low_precision.dynamic_scaling_frame()),
    "explorations.memory_hierarchy.explained_share": dict(bound=10.0, measured_value=4.0, predicted=6.0),
    "explorations.memory_hierarchy.ridge_all_table": dict(intensity=100.0),
    "explorations.parallelism.bucket_times": dict(params_b=7.0, gpus=64, latency_us=5.0, grad_bytes=2),
    "explorations.parallelism.buckets": dict(nbytes=14e9),
    "explorations.parallelism.dp_scaling": dict(params_b=7.0, tokens_per_gpu=1024, mfu_pct=40, latency_us=5),
    "explorations.parallelism.collective_chart": dict(frame=lambda: parallelism_explorations.collective_frame()),
    "explorations.parallelism.llama3_case": dict(row=lambda: parallelism_explorations.LLAMA3_TABLE4[1]),
    "explorations.parallelism.small_batch_intensity": dict(batch=8),
    "explorations.sparsity.a100_gemm_model": dict(m=3072, k=10240, n=3072),
    "explorations.sparsity.bert_ffn_intensity": dict(batch=4, sparse=True),
    "explorations.sparsity.bert_linear_share": dict(batch=16),
    "explorations.sparsity.gemm_intensities": dict(accelerator="H100 SXM5", hidden=1024, tokens=8192),
    "explorations.sparsity.hopper_fp8_gemm": dict(tokens=256),
    "explorations.sparsity.hopper_fp8_share_needed": dict(step_speedup=1.1, gemm_speedup=2.0),
    "explorations.sparsity.mean_accuracy": dict(label="static 50%"),
    "explorations.sparsity.overhead_bound_tokens": dict(accelerator="H100 SXM5"),
    "explorations.sparsity.sparse_overhead_exit_tokens": dict(accelerator="H100 SXM5"),
    "explorations.tensor_cores.l2_bandwidth_scaled": dict(measurement="l2.h100_pcie.read",
                                                          measured_on="H100 PCIe", target="H100 SXM5"),
    "explorations.validation.chart": dict(chapter="sparsity"),
    "explorations.validation.error_of": dict(chapter="parallelism", id="nccl.a100x8.all_reduce.65536"),
    "explorations.validation.error_range": dict(chapter="tensor_cores", prefix="gemm.t4."),
    "explorations.validation.left_out_error": dict(chapter="parallelism", id="nccl.a100x8.all_reduce.65536"),
    "explorations.validation.median": dict(chapter="memory_hierarchy", prefix="dle."),
    "explorations.validation.memory_range": dict(chapter="choosing_a_gpu", prefix="decode.", kind="HBM"),
    "explorations.validation.points": dict(chapter="sparsity"),
    "explorations.validation.worst_frame": dict(chapter="tensor_cores"),
}
#: Columns of the explorations' display tables that are blank (NaN) by design, left out of the
#: finiteness check, with why.
EXPLORATION_BLANK_COLUMNS = {
    "explorations.brain.estimates_frame": (("low", "central", "high"),
                                           "an estimate published without a low or central value"),
    "explorations.memory_hierarchy.dram_latency_table": (("clock (MHz)", "ns"),
                                                         "an architecture without a sourced clock"),
    "explorations.memory_hierarchy.hierarchy_table": (("usable (GiB)",), "no published device query"),
    "explorations.memory_hierarchy.latency_table": (("shared", "l1"), "a latency not measured on that architecture"),
    "explorations.memory_hierarchy.ridge_all_table": (("ridge, FP16 accumulate",), "TPUs have no FP16 mode"),
    "explorations.tensor_cores.latency_table": (("l1", "shared", "ffma", "mma_fp16"),
                                                "a latency not measured on that architecture"),
    "explorations.tensor_cores.sm_balance_table": (("DRAM bytes/cycle/SM", "Tensor FLOP/cycle/SM", "load cycles",
                                                    "compute cycles"), "a GPU without a sourced boost clock"),
}
#: Explorations functions slower than ``QUICK`` seconds at their baseline get the short
#: mutation list (:data:`SHORT_MUTATIONS`, values every parameter refuses), keeping the whole
#: package's fuzz near a minute.
QUICK = 0.05
SHORT_MUTATIONS = {"negative", "nan", "inf", "true", "string", "none", "complex", "two_d",
                   "empty_list", "dict"}
#: Explorations functions whose baseline call is too slow for the fuzz (the notebooks run them),
#: with why: only the short mutations, which must be refused before any work, are tried.
EXPLORATION_SLOW = {
    "explorations.sparsity.training_runs": "trains the chapter's networks (about 20 s a seed)",
    "explorations.sparsity.mean_accuracy": "trains the chapter's networks for every seed",
    "explorations.sparsity.accuracy_spread": "trains the chapter's networks for every seed",
    "explorations.sparsity.accuracy_chart": "trains the chapter's networks for every seed",
    "explorations.sparsity.training_frame": "trains the chapter's networks for every seed",
    "explorations.sparsity.density_chart": "trains the chapter's networks",
    "explorations.sparsity.hopper_fp8_gemm_lowest": "sweeps 16,384 token counts (the mutations' valid limits more)",
    "explorations.sparsity.overhead_bound_tokens": "sweeps 65,536 token counts",
    "explorations.sparsity.sparse_overhead_exit_tokens": "sweeps 65,536 token counts",
}


def exploration_modules() -> dict:
    """The explorations package and each of its chapter modules, by key prefix."""
    found = {"explorations": explorations}
    for info in pkgutil.iter_modules(explorations.__path__):
        found[f"explorations.{info.name}"] = importlib.import_module(f"gpumodel.explorations.{info.name}")
    return found


def exploration_functions() -> dict[str, object]:
    """Every public function of the explorations package (cached ones too), by key."""
    found = {}
    for prefix, module in exploration_modules().items():
        for name, obj in vars(module).items():
            if (not name.startswith("_") and callable(obj) and not isinstance(obj, type)
                    and getattr(obj, "__module__", None) == module.__name__):
                found[f"{prefix}.{name}"] = obj
    return found


def _layers(fn):
    while fn is not None:
        yield fn
        fn = getattr(fn, "__wrapped__", None)


def _owner(fn):
    """("compute" or "chart", the Exploration) if ``fn`` is one's compute or chart function, else None."""
    for module in exploration_modules().values():
        for value in vars(module).values():
            if isinstance(value, explore.Exploration):
                for role in ("compute", "chart"):
                    if any(layer is getattr(value, role) for layer in _layers(fn)):
                        return role, value
    return None


_CHART_BASES: dict = {}


def exploration_baseline(key: str) -> dict:
    """The function's defaults, its Exploration's defaults (or a chart of its table), then
    :data:`EXPLORATION_REGISTRY`; a KeyError if a required parameter is still missing."""
    fn = exploration_functions()[key]
    kwargs = {}
    owner = _owner(fn)
    if owner and owner[0] == "compute":
        kwargs.update(owner[1].defaults())
    elif owner:
        name = owner[1].name
        if name not in _CHART_BASES:
            _CHART_BASES[name] = alt.Chart(owner[1].table())
        kwargs["base"] = _CHART_BASES[name]
    kwargs.update({name: value() if inspect.isfunction(value) else value
                   for name, value in EXPLORATION_REGISTRY.get(key, {}).items()})
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in kwargs:
            continue
        if p.default is inspect.Parameter.empty:
            raise KeyError(f"{key}: no baseline for required parameter {p.name!r}; add it to "
                           "EXPLORATION_REGISTRY in tests/test_fuzz.py")
        kwargs[p.name] = p.default
    return {name: kwargs[name] for name in inspect.signature(fn).parameters if name in kwargs}


def fuzz_exploration_function(key: str, tally: Tally) -> None:
    tally.covered.add(key)
    fn = exploration_functions()[key]
    names = set(inspect.signature(fn).parameters)
    owner = _owner(fn)
    drop = tuple(EXPLORATION_NONFINITE_OK.get(owner[1].name, ())) if owner and owner[0] == "compute" else ()
    drop += EXPLORATION_BLANK_COLUMNS.get(key, ((), ""))[0]
    kwargs = exploration_baseline(key)
    start = time.perf_counter()
    if key not in EXPLORATION_SLOW:
        tally.run(key, "baseline", lambda: fn(**kwargs), names, drop_columns=drop)
        if tally.failures and tally.failures[-1].startswith(f"{key} [baseline]"):
            return
        try:
            fn(**kwargs)
        except ValueError as err:
            tally.failures.append(f"{key} [baseline]: refused: {err}")
            return
    short = key in EXPLORATION_SLOW or time.perf_counter() - start > QUICK
    for name in kwargs:
        for label, mutated in mutations(kwargs, name):
            if short and label not in SHORT_MUTATIONS:
                continue
            tally.run(f"{key}({name}=...)", label, lambda m=mutated: fn(**m), names, drop_columns=drop)


# --- the CLI ----------------------------------------------------------------------------------

def cli_subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def run_cli(argv) -> tuple[int | str, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = cli.main(list(argv))
        except BaseException as exc:  # noqa: BLE001 - anything escaping main breaks the contract
            return f"{type(exc).__name__}: {str(exc)[:160]}", out.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def _strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"non-JSON constant {constant}")
    return json.loads(text, parse_constant=refuse)


def cli_problem(argv) -> str | None:
    code, out, err = run_cli(argv)
    if isinstance(code, str):
        return code
    if code == 2:
        lines = err.strip("\n").split("\n")
        if out or len(lines) != 1 or not lines[0].strip() or "Traceback" in err:
            return f"exit 2 must print one line on stderr and nothing on stdout (got {len(lines)} lines: {err[:120]!r})"
        return None
    if code != 0:
        return f"exit code {code}"
    if err:
        return f"exit 0 with stderr {err[:120]!r}"
    if "--json" in argv:
        try:
            _strict_json(out)
        except ValueError as exc:
            return f"--json output is not strict JSON: {exc}"
    elif re.search(r"(?<![\w.])-?(nan|inf|infinity)(?!\w)", out, flags=re.IGNORECASE):
        return "table prints nan or inf"
    return None


def cli_mutations(command: str, sub: argparse.ArgumentParser):
    """(label, argv) pairs: the registered command line with one argument changed or dropped."""
    base = CLI_REGISTRY[command]
    actions = [a for a in sub._actions if a.dest not in ("help", "json", "run")]
    for action in actions:
        if action.nargs == 0:
            continue
        if action.option_strings:
            flags = set(action.option_strings)
            positions = [i for i, tok in enumerate(base) if tok in flags]
            for value in CLI_VALUES:
                argv = list(base)
                if positions:
                    argv[positions[0] + 1] = value
                else:
                    argv += [action.option_strings[0], value]
                yield f"{action.option_strings[0]}={value[:12]!r}", argv
            if positions:
                i = positions[0]
                yield f"without {action.option_strings[0]}", base[:i] + base[i + 2:]
        else:
            index = [a for a in actions if not a.option_strings].index(action)
            for value in CLI_VALUES:
                argv = list(base)
                argv[index] = value
                yield f"{action.dest}={value[:12]!r}", argv
            yield f"without {action.dest}", base[:index] + base[index + 1:]


def fuzz_cli(command: str, tally: Tally) -> None:
    key = f"cli {command}"
    tally.covered.add(key)
    sub = cli_subcommands()[command]
    cases = [("baseline", CLI_REGISTRY[command])] + list(cli_mutations(command, sub))
    for label, argv in cases:
        for extra in ([], ["--json"]):
            full = [command, *argv, *extra]
            tally.tried += 1
            problem = cli_problem(full)
            if label == "baseline" and not problem and run_cli(full)[0] != 0:
                problem = "baseline command line fails"
            if problem:
                tally.failures.append(f"{key} {label}{' --json' if extra else ''}: {problem}")


# --- the tests --------------------------------------------------------------------------------

def test_every_public_function_is_registered():
    missing = sorted(set(public_functions()) - set(REGISTRY))
    assert not missing, (
        f"public functions without a fuzz baseline: {missing}. Register each in tests/test_fuzz.py "
        "REGISTRY with a valid call, e.g. REGISTRY['memory.new_model'] = dict(m=256, k=1024, n=1024), so that "
        "it is fuzzed against the house contract (ValueError naming a parameter, or a finite result).")
    stale = sorted(set(REGISTRY) - set(public_functions()))
    assert not stale, f"REGISTRY entries for functions that no longer exist: {stale}"
    for key in REGISTRY:
        baseline(key)  # every required parameter has a baseline value


def test_every_model_module_is_fuzzed():
    tops = {info.name for info in pkgutil.iter_modules(gpumodel.__path__) if not info.name.startswith("_")}
    unknown = sorted(tops - set(MODULES) - NOT_MODELS)
    assert not unknown, (f"gpumodel modules neither fuzzed nor listed as holding no models: {unknown}; "
                         "add each to MODULES in tests/test_fuzz.py (and register its functions) or to NOT_MODELS")
    for name in MODULES:
        importlib.import_module(f"gpumodel.{name}")


def test_every_cli_subcommand_is_registered():
    missing = sorted(set(cli_subcommands()) - set(CLI_REGISTRY))
    assert not missing, f"CLI subcommands without a fuzz baseline: {missing}; add them to CLI_REGISTRY"


def _report(tally: Tally) -> str:
    shown = "\n".join(tally.failures[:40])
    more = f"\n... and {len(tally.failures) - 40} more" if len(tally.failures) > 40 else ""
    return f"{len(tally.failures)} of {tally.tried} inputs break the contract:\n{shown}{more}"


@pytest.mark.parametrize("key", sorted(set(REGISTRY) & set(public_functions())))
def test_function_keeps_the_contract(key):
    tally = Tally()
    fuzz_function(key, tally)
    assert not tally.failures, _report(tally)


@pytest.mark.parametrize("exploration", all_explorations(), ids=lambda e: e.name)
def test_exploration_keeps_the_contract(exploration):
    tally = Tally()
    fuzz_exploration(exploration, tally)
    assert not tally.failures, _report(tally)


def test_every_explorations_function_has_a_baseline():
    """A new public function in gpumodel.explorations is fuzzed like the models: it needs a
    baseline (its defaults, its Exploration's, or an EXPLORATION_REGISTRY entry)."""
    functions = exploration_functions()
    missing = []
    for key in sorted(functions):
        try:
            exploration_baseline(key)
        except KeyError as err:
            missing.append(str(err))
    assert not missing, "\n".join(missing)
    stale = sorted((set(EXPLORATION_REGISTRY) | set(EXPLORATION_SLOW) | set(EXPLORATION_BLANK_COLUMNS))
                   - set(functions))
    assert not stale, f"EXPLORATION_REGISTRY entries for functions that no longer exist: {stale}"


@pytest.mark.parametrize("key", sorted(exploration_functions()))
def test_explorations_function_keeps_the_contract(key):
    tally = Tally()
    fuzz_exploration_function(key, tally)
    assert not tally.failures, _report(tally)


@pytest.mark.parametrize("command", sorted(set(CLI_REGISTRY) & set(cli_subcommands())))
def test_cli_subcommand_keeps_the_contract(command):
    tally = Tally()
    fuzz_cli(command, tally)
    assert not tally.failures, _report(tally)


@pytest.mark.parametrize("args", [
    ["matmul", "-a", "H100 SXM5", "-m", "1" + "0" * 400, "-k", "1", "-n", "1"],
    ["matmul", "-a", "H100 SXM5", "-m", "1" + "0" * 103, "-k", "1" + "0" * 103, "-n", "1" + "0" * 103, "--json"],
])
def test_cli_subprocess_exits_2_with_one_line(args):
    result = subprocess.run([sys.executable, "-m", "gpumodel", *args], capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def _numeric_slots():
    slots = []
    for key in sorted(set(REGISTRY) & set(public_functions())):
        if entry(key).nonfinite_ok:
            continue
        for name, value in baseline(key).items():
            if _is_number(value):
                slots.append((key, name))
    return slots


finite_numbers = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-300, max_value=1e-300),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=-(10**400), max_value=10**400),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slot=st.sampled_from(_numeric_slots()), value=finite_numbers)
def test_any_number_anywhere_keeps_the_contract(slot, value):
    """Random numbers (any magnitude, subnormal to 10**400) in one numeric parameter at a time."""
    key, name = slot
    kwargs = {**baseline(key), name: value}
    fn = target(key)
    problem = check(lambda: fn(**kwargs), {p.name for p in parameters(key)} | set(kwargs))
    assert problem is None, f"{key}({name}={value!r}): {problem}"


#: The magnitudes that random draws reach only now and then: the edge of float64, a huge
#: number whose product with a constant overflows, and the smallest subnormal.
EDGE_NUMBERS = (1.7e308, -1.7e308, 3.04e302, 5e-324)


@pytest.mark.parametrize("value", EDGE_NUMBERS)
def test_edge_numbers_in_every_slot_keep_the_contract(value):
    """Every numeric parameter of every public function at each edge magnitude, in turn."""
    problems = []
    for key, name in _numeric_slots():
        kwargs = {**baseline(key), name: value}
        fn = target(key)
        problem = check(lambda: fn(**kwargs), {p.name for p in parameters(key)} | set(kwargs))
        if problem is not None:
            problems.append(f"{key}({name}={value!r}): {problem}")
    assert not problems, "\n".join(problems)


# --- entries of dict-valued arguments and fractional counts -----------------------------------

#: Dict-valued parameters whose numeric entries must each be a finite number >= 0 of the right
#: shape: a bad entry (or an unknown key) is refused naming the parameter, never used or ignored.
CHECKED_DICTS = {"kernels", "prices", "rates"}
#: Parameters with a whole-number baseline that take fractions too, and why.
FRACTIONAL_OK = {
    ("parallelism.tensor_parallel_bytes", "tokens"): "an average number of tokens per GPU",
    ("parallelism.moe_all_to_all_bytes", "tokens"): "an average number of tokens per GPU",
    ("parallelism.ring_attention_step_seconds", "tokens_per_gpu"): "a block length, continuous in the model",
    ("tensor_cores.k_step_cycles", "share_a"): "an average reuse of a strip through L2",
    ("tensor_cores.k_step_cycles", "share_b"): "an average reuse of a strip through L2",
    ("workloads.max_training_batch", "memory_bytes"): "a capacity in bytes, not a count",
}
BAD_ENTRIES = [("negative", -1.0), ("true", True), ("numpy_bool", np.bool_(True)),
               ("complex", 1 + 1j), ("nan", math.nan), ("inf", math.inf), ("string", "1"),
               ("none", None)]


def entry_mutations(kwargs: dict, name: str):
    """(label, kwargs) pairs: one entry of the dict ``kwargs[name]`` made bad, one way at a time."""
    given = kwargs[name]
    for key, value in given.items():
        if _is_number(value):
            cases = BAD_ENTRIES + [("two_d", [[value]])]
        elif _is_array(value) and np.ndim(value) == 1:
            items = list(value)
            cases = [(f"[0] {label}", [bad] + items[1:]) for label, bad in BAD_ENTRIES]
            cases += [("two_d", [items, items]), ("short", items[:-1])]
        else:
            continue
        for label, bad in cases:
            yield f"{key} {label}", {**kwargs, name: {**given, key: bad}}


def key_mutations(kwargs: dict, name: str):
    """(label, kwargs) pairs: a key of ``kwargs[name]`` in another case, or an unknown key added."""
    given = kwargs[name]
    for key in given:
        if isinstance(key, str) and key.swapcase() != key:
            renamed = {(k.swapcase() if k == key else k): v for k, v in given.items()}
            yield f"key {key!r} in another case", {**kwargs, name: renamed}
    extra = {**given, "no such key": next(iter(given.values()))}
    yield "unknown key", {**kwargs, name: extra}


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except (TypeError, ValueError):
        return a == b


def _dict_slots():
    return [(key, name) for key in sorted(set(REGISTRY) & set(public_functions()))
            for name, value in baseline(key).items() if isinstance(value, dict) and value]


def _refusal(call, name: str) -> str | None:
    """None if ``call()`` raises a ValueError naming ``name``, else what it did."""
    try:
        result = call()
    except ValueError as err:
        return None if names_one_of(str(err), [name]) else f"ValueError not naming {name}: {err}"
    except Exception as err:  # noqa: BLE001
        return f"{type(err).__name__}: {err}"
    return f"accepted, giving {_show(result)}"


@pytest.mark.parametrize("slot", _dict_slots(), ids="{0[0]}-{0[1]}".format)
def test_bad_dict_entries_are_refused_or_harmless(slot):
    """A bad entry inside a dict argument: refused naming the dict (always, for
    :data:`CHECKED_DICTS`), or else the house contract; a key in another case is matched
    (same result) or refused; an unknown key in a checked dict is refused."""
    key, name = slot
    fn, kwargs = target(key), baseline(key)
    names = {p.name for p in parameters(key)} | set(kwargs)
    expected = fn(**kwargs)
    failures = []
    for label, mutated in entry_mutations(kwargs, name):
        call = lambda m=mutated: fn(**m)
        problem = _refusal(call, name) if name in CHECKED_DICTS else check(call, names)
        if problem:
            failures.append(f"{label}: {problem}")
    for label, mutated in key_mutations(kwargs, name):
        if label == "unknown key" and name not in CHECKED_DICTS:
            continue
        problem = _refusal(lambda m=mutated: fn(**m), name)
        if problem and not (label != "unknown key" and _same(fn(**mutated), expected)):
            failures.append(f"{label}: {problem}")
    assert not failures, f"{key}({name}=...): " + "; ".join(failures[:8])


def _whole_slots():
    return [(key, name) for key in sorted(set(REGISTRY) & set(public_functions()))
            for name, value in baseline(key).items()
            if isinstance(value, int) and not isinstance(value, bool)
            and (key, name) not in FRACTIONAL_OK]


@pytest.mark.parametrize("slot", _whole_slots(), ids="{0[0]}-{0[1]}".format)
def test_fractional_counts_are_refused_naming_them(slot):
    """A seed or count given as x.5 is refused naming it, never truncated."""
    key, name = slot
    kwargs = baseline(key)
    value = kwargs[name] + 0.5
    problem = _refusal(lambda: target(key)(**{**kwargs, name: value}), name)
    assert problem is None, f"{key}({name}={value}): {problem}"


def fuzz_everything() -> Tally:
    tally = Tally()
    for key in sorted(public_functions()):
        if key in REGISTRY:
            fuzz_function(key, tally)
        else:
            tally.failures.append(f"{key}: not registered")
    for exploration in all_explorations():
        fuzz_exploration(exploration, tally)
    for key in sorted(exploration_functions()):
        fuzz_exploration_function(key, tally)
    for command in sorted(cli_subcommands()):
        if command in CLI_REGISTRY:
            fuzz_cli(command, tally)
        else:
            tally.failures.append(f"cli {command}: not registered")
    return tally


if __name__ == "__main__":
    start = time.perf_counter()
    result = fuzz_everything()
    kinds = {}
    for key in result.covered:
        kind = key.split(" ")[0] if " " in key else "function"
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"covered: {len(result.covered)} ({', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))}); "
          f"inputs tried: {result.tried}; failures: {len(result.failures)}; {time.perf_counter() - start:.0f} s")
    if "-v" in sys.argv:
        print("\n".join(result.failures))


# --- issue regressions in modules without a test file of their own ----------------------------

def test_peak_flops_refuses_a_non_bool_sparse():
    h100 = hardware.get("H100 SXM5")
    with pytest.raises(ValueError, match="sparse"):
        h100.peak_flops("fp16", sparse="no")
    assert h100.peak_flops("fp16", sparse=True) == 2 * h100.peak_flops("fp16")


def test_measured_refuses_missing_names():
    with pytest.raises(ValueError, match="architecture"):
        measured.latency(None, "l2")
    with pytest.raises(ValueError, match="network"):
        measured.a100_v100_speedups("")
    with pytest.raises(ValueError, match="prefix"):
        measured.measurements(None)
    assert len(measured.a100_v100_speedups()) > len(measured.a100_v100_speedups("maskrcnn")) > 0


# --- numbers inside a measured row's detail text ----------------------------------------------

DETAIL_TEXTS = ["abc", "", "nan", "inf", "-inf", "0", "-1", "-0", "1e-300", "1e308", "0x10"]


@pytest.mark.parametrize("key", ["params", "file_bytes", "context"])
@pytest.mark.parametrize("text", DETAIL_TEXTS + ["8.5"])
def test_decode_row_kernels_refuses_bad_detail_numbers_naming_row(key, text):
    """Every number of the detail is checked (never truncated: context=8.5 is refused), and the
    refusal names ``row``, the parameter the caller passed, never ZeroDivisionError or
    OverflowError or an option the caller did not pass."""
    good = {"params": "8030000000", "file_bytes": "4917737554", "context": "256"}
    if text == "8.5" and key != "context":
        return
    detail = "; ".join(f"{k}={text if k == key else v}" for k, v in good.items())
    row = {"id": "decode.llama3_8b_q4.x", "detail": detail}
    problem = _refusal(lambda: throughput.decode_row_kernels(row), "row")
    assert problem is None, f"{detail}: {problem}"


# --- every numeric parameter at once --------------------------------------------------------

def _scaled(value, scale):
    if isinstance(value, float) or isinstance(value, np.floating):
        return value * scale
    scaled = float(value) * scale
    return max(1, int(scaled)) if math.isfinite(scaled) else 10**300


@pytest.mark.parametrize("scale", [1e300, 1e150, 1e30, 1e-30, 1e-150, 1e-300])
def test_every_number_of_a_call_scaled_together_keeps_the_contract(scale):
    """One slot at a time misses overflow that needs two huge (or tiny) arguments together
    (a slider's max and step both near 1e300): scale every numeric baseline argument at once."""
    problems = []
    for key in sorted(set(REGISTRY) & set(public_functions())):
        if entry(key).nonfinite_ok:
            continue
        kwargs = baseline(key)
        scaled = {n: _scaled(v, scale) for n, v in kwargs.items() if _is_number(v)}
        if not scaled:
            continue
        fn = target(key)
        problem = check(lambda: fn(**{**kwargs, **scaled}), {p.name for p in parameters(key)} | set(kwargs))
        if problem is not None:
            problems.append(f"{key}({scaled}): {problem}")
    assert not problems, "\n".join(problems)


def _string_slots():
    return [(key, name) for key in sorted(set(REGISTRY) & set(public_functions()))
            for name, value in baseline(key).items() if isinstance(value, str) and value]


@pytest.mark.parametrize("slot", _string_slots(), ids="{0[0]}-{0[1]}".format)
def test_a_huge_name_is_refused_in_one_short_message(slot):
    """A name of 200,000 characters: refused quickly, the message echoing a short part of it
    (a command line prints the message as its one line)."""
    key, name = slot
    kwargs = baseline(key)
    value = kwargs[name] * (200_000 // len(kwargs[name]) + 1)
    start = time.perf_counter()
    try:
        target(key)(**{**kwargs, name: value})
    except ValueError as err:
        assert len(str(err)) < 10_000, f"{key}({name}=...): message of {len(str(err))} characters"
    assert time.perf_counter() - start < SLOW


# --- the same number in another type ----------------------------------------------------------

def _same_number_as(value):
    """(label, value) pairs: ``value`` as a 0-d array, numpy scalars and a Fraction, all valid."""
    import fractions

    cases = [("0-d array", np.array(value)), ("numpy float", np.float64(value)),
             ("fraction", fractions.Fraction(value).limit_denominator(10**12)
              if isinstance(value, float) else fractions.Fraction(value))]
    if isinstance(value, int) and abs(value) < 2**62:
        cases += [("numpy int", np.int64(value)), ("0-d int array", np.array(value, dtype=np.int64))]
    return cases


#: Parameters refusing a float that holds a whole number, as numpy does (an axis).
WHOLE_TYPE_ONLY = {("precision.absmax_quantize_int8", "axis")}


@pytest.mark.parametrize("key", sorted(k for k in set(REGISTRY) & set(public_functions())
                                       if any(_is_number(v) for v in baseline(k).values())))
def test_the_same_number_in_another_type_gives_the_same_result(key):
    """A number given as a 0-d array, a numpy scalar or a Fraction is valid input: never
    refused, and the result equals the baseline's (a slider's min as np.array(0) included)."""
    fn, kwargs = target(key), baseline(key)
    expected = fn(**kwargs)
    problems = []
    for name, value in kwargs.items():
        if not _is_number(value):
            continue
        for label, other in _same_number_as(value):
            if (key, name) in WHOLE_TYPE_ONLY and label in ("numpy float", "fraction"):
                continue
            try:
                result = fn(**{**kwargs, name: other})
            except Exception as err:  # noqa: BLE001
                problems.append(f"{name} as {label}: {type(err).__name__}: {str(err)[:120]}")
                continue
            if not callable(expected) and not _same_value(result, expected):
                problems.append(f"{name} as {label}: a different result")
    assert not problems, f"{key}: " + "; ".join(problems[:8])


def _same_value(a, b) -> bool:
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return dataclasses.is_dataclass(b) and _same_value(dataclasses.asdict(a),
                                                           dataclasses.asdict(b))
    if hasattr(a, "equals") and hasattr(a, "columns"):
        return a.equals(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            _same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    try:
        return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                rtol=1e-12, atol=0, equal_nan=True))
    except (TypeError, ValueError):
        return a == b


# --- explorations with every slider at an end at once ------------------------------------------

def _corners(exploration, most: int = 16):
    """Parameter sets with every slider at its min or max together (at most ``most`` of the
    2**sliders corners, spread evenly) and each choice's options in turn."""
    import itertools

    sliders = [p for p in exploration.params if isinstance(p, explore.Slider)]
    choices = [p for p in exploration.params if not isinstance(p, explore.Slider)]
    corners = list(itertools.product(*[(p.min, p.max) for p in sliders]))
    corners = corners[::max(1, len(corners) // most)]
    options = list(itertools.product(*[c.options for c in choices]))
    options = options[::max(1, len(options) // 4)]
    for corner in corners:
        for picked in options:
            yield {**exploration.defaults(), **dict(zip((p.name for p in sliders), corner)),
                   **dict(zip((c.name for c in choices), picked))}


@pytest.mark.parametrize("exploration", all_explorations(), ids=lambda e: e.name)
def test_exploration_at_every_corner_and_past_each_end_keeps_the_contract(exploration):
    """Every slider at an end together (finite results, or a ValueError naming a slider), and
    each slider just past an end, far past it and at the library's ±1e15 bound (refused
    naming it, or an ulp past clamped to the end)."""
    names = {p.name for p in exploration.params}
    drop = tuple(EXPLORATION_NONFINITE_OK.get(exploration.name, ()))
    problems = []
    for values in _corners(exploration):
        problem = check(lambda: exploration.table(**values), names, drop_columns=drop)
        if problem:
            problems.append(f"{values}: {problem}")
    for p in exploration.params:
        if not isinstance(p, explore.Slider):
            continue
        span = float(p.max) - float(p.min)
        for value in (np.nextafter(float(p.min), -np.inf), np.nextafter(float(p.max), np.inf),
                      float(p.min) - span / 1000 - 1, float(p.max) + span / 1000 + 1,
                      -1e15, 1e15, 1e16):
            values = {**exploration.defaults(), p.name: value}
            problem = check(lambda: exploration.table(**values), names, drop_columns=drop)
            if problem:
                problems.append(f"{p.name}={value!r}: {problem}")
    assert not problems, "\n".join(problems[:10])


def test_a_kernel_table_times_columns_past_the_bound_is_refused_not_allocated():
    """4,096 kernels x 8,192 rate columns would be 33 million cells per term (gigabytes):
    refused naming kernels, before any array of that size is made."""
    n = 4096
    kernels = {"flops": np.full(n, 1e9), "bytes": np.full(n, 1e6), "launches": np.ones(n)}
    rates = {k: np.full(2 * n, v) for k, v in REGISTRY["throughput.device_seconds"].kwargs[
        "rates"].items() for v in v}
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"kernels has 4,096 kernels"):
        throughput.device_seconds(kernels, rates)
    assert time.perf_counter() - start < SLOW
    assert throughput.device_seconds(kernels, {k: v[:8] for k, v in rates.items()}).shape == (8,)


# --- chart helpers (charts is display code, outside MODULES, but takes a reader's numbers) -----

@pytest.mark.parametrize("func, kwargs", [
    ("identity_line", dict(lo=1.0, hi=10.0)),
    ("error_band_area", dict(lo=1.0, hi=10.0, low=-0.2, high=0.3)),
])
def test_chart_helpers_keep_the_contract(func, kwargs):
    """Every GENERIC value in each bound: a ValueError naming it (never TypeError or
    OverflowError for None, a list or 10**400; never a bool or "1" drawn as a number)."""
    from gpumodel import charts

    fn = getattr(charts, func)
    problems = []
    for name in kwargs:
        for label, value in GENERIC:
            if label in ("zero", "negative", "negative_float", "half", "tiny", "small", "huge",
                         "big_int", "big_count"):
                continue  # numbers: drawn or refused by range, either keeps the contract
            problem = _refusal(lambda: fn(**{**kwargs, name: value}), name)
            if problem:
                problems.append(f"{name} [{label}]: {problem}")
    assert not problems, f"{func}: " + "; ".join(problems[:8])
    assert fn(**{k: np.array(v) for k, v in kwargs.items()}).to_dict()  # 0-d arrays are numbers
    if func == "error_band_area":  # a band edge past float64 (hi x (1 + high)) is refused
        assert _refusal(lambda: fn(1.0, 1e308, 0.0, 1e10), "high") is None


@pytest.mark.parametrize("func", ["embed_html", "data_html"])
@pytest.mark.parametrize("spec", [None, [], "spec", 3.0])
def test_chart_html_refuses_what_is_not_a_spec(func, spec):
    from gpumodel import charts

    assert _refusal(lambda: getattr(charts, func)(spec), "spec") is None


def test_a_nan_in_a_spec_is_drawn_as_missing_not_written_as_invalid_json():
    """The page parses the spec with JSON.parse, which refuses NaN and Infinity: the chart
    would silently not draw. They are written as null (missing, as Vega reads it)."""
    from gpumodel import charts

    spec = {"description": "d", "mark": "point",
            "data": {"values": [{"x": 1.0, "y": math.nan}, {"x": math.inf, "y": 2.0}]}}
    page = charts.embed_html(spec)
    stored = re.search(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S).group(1)
    assert _strict_json(stored.replace("\\u003c", "<"))["data"]["values"] == [
        {"x": 1.0, "y": None}, {"x": None, "y": 2.0}]
    finite = {**spec, "data": {"values": [{"x": 1.0, "y": 2.0}]}}
    assert charts.embed_html(finite) == charts.embed_html(finite)  # ids unchanged for the rest


@pytest.mark.parametrize("steps", [np.array([3000, 3000, 3000]), 2**26, 0, 2.5, None, "3000"])
def test_a_synthetic_run_refuses_steps_it_cannot_take_naming_them(steps):
    """An array of steps was read by numpy as a shape (201 GiB asked for) and 2**26 steps took
    13 s: steps is a whole number from 1 to MAX_RUN_STEPS, refused naming it."""
    from gpumodel.explorations import low_precision as lpe

    for fn in (lpe.step_peaks, lpe.dynamic_scaling_frame):
        start = time.perf_counter()
        assert _refusal(lambda: fn(steps=steps), "steps") is None
        assert time.perf_counter() - start < SLOW
    assert lpe.step_peaks(np.array(3000)).shape == (3000,)


#: Minimal arguments of every public model function that takes ``**options`` (the workload options
#: of :func:`gpumodel.throughput.kernels_for`); the workload is the first argument where it takes one.
OPTION_CALLS = {
    "throughput.kernels_for": (throughput.kernels_for, ("cnn-train",)),
    "throughput.throughput": (throughput.throughput, ("cnn-train", ["T4"])),
    "throughput.decode_throughput": (throughput.decode_throughput, (["T4"], [1])),
    "throughput.memory_need_bytes": (throughput.memory_need_bytes, ("cnn-train",)),
    "throughput.largest_batch": (throughput.largest_batch, ("cnn-train", ["T4"])),
    "throughput.relative_throughput": (throughput.relative_throughput, ("cnn-train", ["T4"])),
    "throughput.rank": (throughput.rank, ("cnn-train",)),
}


def test_every_function_taking_options_is_listed():
    takes = {f"{m}.{name}" for m, module in MODULES.items()
             for name, func in vars(module).items()
             if inspect.isfunction(func) and not name.startswith("_") and func.__module__ == module.__name__
             and any(p.kind is p.VAR_KEYWORD for p in inspect.signature(func).parameters.values())}
    assert takes <= set(OPTION_CALLS), takes - set(OPTION_CALLS)


@pytest.mark.parametrize("key", sorted(OPTION_CALLS))
@pytest.mark.parametrize("option", ["bogus", "seq", "image"])
def test_an_unknown_option_is_refused_naming_it_and_the_allowed_ones(key, option):
    func, args = OPTION_CALLS[key]
    if key == "throughput.decode_throughput" and option != "image":
        option = "bogus"
    if args[:1] != ("cnn-train",) and option == "seq":
        return  # seq is transformer-train's
    if args[:1] == ("cnn-train",) and option == "image":
        option = "vocab"
    with pytest.raises(ValueError, match=rf"'{option}'.*allowed: "):
        func(*args, **{option: 1})


def test_a_direct_call_with_an_unknown_keyword_or_too_many_arguments_names_the_parameters():
    explorations_ = all_explorations()
    checked = [getattr(sys.modules[e.compute.__module__], e.compute.__name__) for e in explorations_]
    checked = [f for f, e in zip(checked, explorations_) if f is not e.compute]
    assert checked
    func = checked[0]
    with pytest.raises(ValueError, match="parameters: "):
        func(bogus=1)
    with pytest.raises(ValueError, match="parameters: "):
        func(*range(50))
