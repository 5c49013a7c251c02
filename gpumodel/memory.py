"""Memory-traffic models of a matrix multiplication: tiles, bytes, seconds, rooflines.

All functions take scalars or numpy arrays and broadcast. Sizes are element counts,
traffic is in bytes, bandwidth in bytes/s, time in seconds, work in FLOP.
Explained in :doc:`/book/memory_hierarchy`.
"""
from __future__ import annotations

import numpy as np

from . import _checks
from .units import bandwidth_unit, dtype_bytes

LOAD_SCHEMES = ("all_pairs", "output_stationary")


def tile_count(rows, cols, tile):
    """Number of ``tile`` x ``tile`` tiles needed to cover a ``rows`` x ``cols`` matrix (partial tiles count whole).

    Explained in :doc:`/book/memory_hierarchy` (section "Tiles: why bigger tiles reuse more").
    """
    rows = _checks.positive_int("rows", rows)
    cols = _checks.positive_int("cols", cols)
    tile = _checks.positive_int("tile", tile)
    return np.ceil(rows / tile) * np.ceil(cols / tile)


def tile_loads(m, k, n, tile, scheme: str = "all_pairs"):
    """Tile loads from global memory for C[m,n] = A[m,k] @ B[k,n] with square tiles.

    ``"all_pairs"`` is the TPU post's count: every tile of A is paired with every tile of B,
    so loads = tiles(A) x tiles(B). ``"output_stationary"`` is what a tiled kernel does: each
    output tile reads its row of A tiles and its column of B tiles, 2 x (m/t)(n/t)(k/t) loads.
    Explained in :doc:`/book/memory_hierarchy` (sections "The post's bandwidth model" and
    "Where this model is wrong").
    """
    scheme = _checks.choice("scheme", scheme, LOAD_SCHEMES)
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    tile = _checks.positive_int("tile", tile)
    tiles_a = tile_count(m, k, tile)
    tiles_b = tile_count(k, n, tile)
    if scheme == "all_pairs":
        return tiles_a * tiles_b
    return 2.0 * np.ceil(m / tile) * np.ceil(n / tile) * np.ceil(k / tile)


def matmul_tile_traffic(m, k, n, tile, dtype: str = "fp16", scheme: str = "all_pairs"):
    """Bytes moved from global memory by :func:`tile_loads` tiles of ``dtype`` elements.

    Explained in :doc:`/book/memory_hierarchy` (section "The post's bandwidth model").
    """
    loads = tile_loads(m, k, n, tile, scheme)
    return loads * np.asarray(tile, dtype=float) ** 2 * dtype_bytes(dtype)


def transfer_seconds(nbytes, bandwidth, unit: str = "GB/s"):
    """Seconds to move ``nbytes`` at ``bandwidth`` expressed in ``unit`` ("GB/s" = 1e9 B/s, "GiB/s" = 2**30 B/s).

    Latency is ignored: consecutive loads are assumed to overlap perfectly.
    Explained in :doc:`/book/memory_hierarchy` (section "Units: GB or GiB?").
    """
    nbytes = _checks.non_negative("nbytes", nbytes)
    bandwidth = _checks.positive("bandwidth", bandwidth)
    return nbytes / (bandwidth * bandwidth_unit(unit))


def matmul_load_seconds(m, k, n, tile, bandwidth, dtype: str = "fp16",
                        unit: str = "GB/s", scheme: str = "all_pairs"):
    """Seconds to load the tiles of a matmul: :func:`matmul_tile_traffic` / bandwidth.

    Explained in :doc:`/book/memory_hierarchy` (section "The post's bandwidth model").
    """
    return transfer_seconds(matmul_tile_traffic(m, k, n, tile, dtype, scheme), bandwidth, unit)


def slower_by(time_fast, time_slow):
    """Fractional slowdown as the TPU post states it: 1 - time_fast / time_slow (0.32 = "32% slower").

    Explained in :doc:`/book/memory_hierarchy` (section "The post's bandwidth model").
    """
    time_fast = _checks.positive("time_fast", time_fast)
    time_slow = _checks.positive("time_slow", time_slow)
    return 1.0 - time_fast / time_slow


def speedup(time_before, time_after):
    """How many times faster: time_before / time_after.

    Explained in :doc:`/book/memory_hierarchy` (section "16, 32 and 8 bits").
    """
    return _checks.positive("time_before", time_before) / _checks.positive("time_after", time_after)


def elementwise_traffic(rows, cols, dtype: str = "fp16", passes: int = 2):
    """Bytes an un-fused element-wise op moves over a ``rows`` x ``cols`` matrix (``passes`` = 2: read and write).

    Explained in :doc:`/book/memory_hierarchy` (section "Fused element-wise operations").
    """
    rows = _checks.positive_int("rows", rows)
    cols = _checks.positive_int("cols", cols)
    passes = _checks.positive_int("passes", passes)
    return rows * cols * dtype_bytes(dtype) * passes


def bandwidth_ratio(bandwidth_new, bandwidth_old):
    """The post's speed estimate between two GPUs with Tensor Cores: ratio of memory bandwidths.

    Explained in :doc:`/book/memory_hierarchy` (section "Bandwidth predicts speed").
    """
    return _checks.positive("bandwidth_new", bandwidth_new) / _checks.positive("bandwidth_old", bandwidth_old)


def batch_corrected_speedup(throughput_new, throughput_old, batch_new, batch_old,
                            gain_per_doubling: float = 1.136, network_factor: float = 1.0):
    """Measured speedup with the post's corrections for unequal batch sizes and multi-GPU networking.

    speedup = (throughput_new / throughput_old) / gain_per_doubling**log2(batch_new / batch_old) / network_factor.
    The post's constants: 13.6% more throughput per batch doubling; 8-GPU networking favours
    the newer system by 5% (CNNs) or 7% (transformers).
    Explained in :doc:`/book/memory_hierarchy` (section "Bandwidth predicts speed").
    """
    ratio = _checks.positive("throughput_new", throughput_new) / _checks.positive("throughput_old", throughput_old)
    doublings = np.log2(_checks.positive("batch_new", batch_new) / _checks.positive("batch_old", batch_old))
    gain = _checks.positive("gain_per_doubling", gain_per_doubling)
    return ratio / gain**doublings / _checks.positive("network_factor", network_factor)


def matmul_flops(m, k, n):
    """FLOP of C[m,n] = A[m,k] @ B[k,n]: one multiply and one add per term, 2mkn.

    Explained in :doc:`/book/memory_hierarchy` (section "The roofline").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    return 2.0 * m * k * n


def matmul_min_traffic(m, k, n, dtype: str = "fp16"):
    """Least possible global-memory traffic in bytes: read A and B once, write C once.

    Explained in :doc:`/book/memory_hierarchy` (section "The roofline").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    return (m * k + k * n + m * n) * dtype_bytes(dtype)


def arithmetic_intensity(m, k, n, dtype: str = "fp16"):
    """FLOP per byte of the matmul at minimum traffic: :func:`matmul_flops` / :func:`matmul_min_traffic`.

    Explained in :doc:`/book/memory_hierarchy` (section "The roofline").
    """
    return matmul_flops(m, k, n) / matmul_min_traffic(m, k, n, dtype)


def roofline(intensity, peak_flops, bandwidth):
    """Attainable FLOP/s at arithmetic ``intensity`` (FLOP/byte): min(peak_flops, bandwidth x intensity).

    ``peak_flops`` in FLOP/s, ``bandwidth`` in bytes/s.
    Explained in :doc:`/book/memory_hierarchy` (section "The roofline").
    """
    intensity = _checks.positive("intensity", intensity)
    peak = _checks.positive("peak_flops", peak_flops)
    bw = _checks.positive("bandwidth", bandwidth)
    return np.minimum(peak, bw * intensity)


def ridge_point(peak_flops, bandwidth):
    """Arithmetic intensity (FLOP/byte) above which a kernel is compute-bound: peak_flops / bandwidth.

    Explained in :doc:`/book/memory_hierarchy` (section "The roofline").
    """
    return _checks.positive("peak_flops", peak_flops) / _checks.positive("bandwidth", bandwidth)


def matmul_roofline_seconds(m, k, n, peak_flops, bandwidth, dtype: str = "fp16"):
    """Roofline time of a matmul: max(FLOP / peak, minimum bytes / bandwidth), in seconds.

    Explained in :doc:`/book/memory_hierarchy` (section "The roofline").
    """
    peak = _checks.positive("peak_flops", peak_flops)
    bw = _checks.positive("bandwidth", bandwidth)
    return np.maximum(matmul_flops(m, k, n) / peak, matmul_min_traffic(m, k, n, dtype) / bw)


def tile_quantization_efficiency(m, n, tile_m, tile_n):
    """Useful fraction of the work when an m x n output is covered by whole tile_m x tile_n tiles.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    m = _checks.positive_int("m", m)
    n = _checks.positive_int("n", n)
    tile_m = _checks.positive_int("tile_m", tile_m)
    tile_n = _checks.positive_int("tile_n", tile_n)
    return (m * n) / (np.ceil(m / tile_m) * tile_m * np.ceil(n / tile_n) * tile_n)


def wave_count(m, n, tile_m, tile_n, sms):
    """Waves of thread blocks: ceil(output tiles / SMs), one tile per SM at a time.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    tiles = tile_count_rect(m, n, tile_m, tile_n)
    return np.ceil(tiles / _checks.positive_int("sms", sms))


def tile_count_rect(m, n, tile_m, tile_n):
    """Output tiles of size tile_m x tile_n covering an m x n matrix.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    m = _checks.positive_int("m", m)
    n = _checks.positive_int("n", n)
    return np.ceil(m / _checks.positive_int("tile_m", tile_m)) * np.ceil(n / _checks.positive_int("tile_n", tile_n))


def wave_efficiency(m, n, tile_m, tile_n, sms):
    """Fraction of SM-slots doing useful tiles: tiles / (waves x SMs); the last wave may be partly idle.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    tiles = tile_count_rect(m, n, tile_m, tile_n)
    sms = _checks.positive_int("sms", sms)
    return tiles / (np.ceil(tiles / sms) * sms)


def quantization_efficiency(m, n, tile_m, tile_n, sms):
    """Tile efficiency x wave efficiency: the useful fraction of the work the GPU is scheduled to do.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    return tile_quantization_efficiency(m, n, tile_m, tile_n) * wave_efficiency(m, n, tile_m, tile_n, sms)


def fits_in_cache(nbytes, cache_bytes):
    """Whether a working set of ``nbytes`` fits in a cache of ``cache_bytes`` (boolean array).

    Explained in :doc:`/book/memory_hierarchy` (section "L2 caches: when do the operands fit?").
    """
    return _checks.non_negative("nbytes", nbytes) <= _checks.positive("cache_bytes", cache_bytes)


#: BERT-large (Devlin et al. 2019): hidden size, feed-forward size, attention heads.
BERT_LARGE = {"hidden": 1024, "ffn": 4096, "heads": 16}


def bert_large_matmuls(tokens):
    """The weight matmuls of one BERT-large layer as {name: (m, k, n)} for ``tokens`` = batch x sequence.

    Explained in :doc:`/book/memory_hierarchy` (section "L2 caches: when do the operands fit?").
    """
    tokens = _checks.positive_int("tokens", tokens)
    h, f = BERT_LARGE["hidden"], BERT_LARGE["ffn"]
    return {"QKV projection": (tokens, h, 3 * h), "attention output": (tokens, h, h),
            "FFN up": (tokens, h, f), "FFN down": (tokens, f, h)}


def matmul_operand_bytes(m, k, n, dtype: str = "fp16"):
    """Bytes of the two inputs of a matmul, A[m,k] and B[k,n] (what must stay in L2 for one pass).

    Explained in :doc:`/book/memory_hierarchy` (section "L2 caches: when do the operands fit?").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    return (m * k + k * n) * dtype_bytes(dtype)


#: The TPU post's stated inputs (Dettmers 2018): the BERT matmul, tile sizes and bandwidths in
#: GB/s as the post writes them. The post's arithmetic treats GB as GiB, so ``unit`` is "GiB/s".
TPU_POST = {"m": 256, "k": 1024, "n": 1024, "tpu_tile": 128, "gpu_tile": 96,
            "gpu_tile_fp32": 64, "gpu_tile_int8": 128, "tpu_bandwidth": 600.0,
            "v100_bandwidth": 900.0, "rtx2080ti_bandwidth": 616.0, "unit": "GiB/s"}


def tpu_post_seconds(tile, bandwidth, dtype: str = "fp16", unit: str = TPU_POST["unit"]):
    """Load time of the post's BERT matmul (256x1024 @ 1024x1024) with ``tile`` tiles at ``bandwidth``.

    Explained in :doc:`/book/memory_hierarchy` (section "The post's bandwidth model").
    """
    p = TPU_POST
    return matmul_load_seconds(p["m"], p["k"], p["n"], tile, bandwidth, dtype, unit)


def tile_footprint(tile, dtype: str = "fp16", buffers: int = 2):
    """Shared-memory bytes held by ``buffers`` square tiles of ``dtype`` (2 = one tile of A and one of B).

    Explained in :doc:`/book/memory_hierarchy` (section "Tiles: why bigger tiles reuse more").
    """
    tile = _checks.positive_int("tile", tile)
    buffers = _checks.positive_int("buffers", buffers)
    return buffers * tile**2 * dtype_bytes(dtype)
