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


@_checks.finite_result
def tile_count(rows, cols, tile):
    """Number of ``tile`` x ``tile`` tiles needed to cover a ``rows`` x ``cols`` matrix (partial tiles count whole).

    Explained in :doc:`/book/memory_hierarchy` (section "Tiles: why bigger tiles reuse more").
    """
    rows = _checks.positive_int("rows", rows)
    cols = _checks.positive_int("cols", cols)
    tile = _checks.positive_int("tile", tile)
    return np.ceil(rows / tile) * np.ceil(cols / tile)


@_checks.finite_result
def tile_loads(m, k, n, tile, scheme: str = "all_pairs"):
    """Tile loads from global memory for C[m,n] = A[m,k] @ B[k,n] with square tiles.

    ``"all_pairs"`` is the TPU post's count: every tile of A is paired with every tile of B,
    so loads = tiles(A) x tiles(B). ``"output_stationary"`` is what a tiled kernel does: each
    output tile reads its row of A tiles and its column of B tiles, 2 x (m/t)(n/t)(k/t) loads.
    Explained in :doc:`/book/memory_hierarchy` (sections "Worked case: TPUs versus GPUs for BERT" and
    "Where this model is wrong").
    """
    scheme = _checks.choice("scheme", scheme, LOAD_SCHEMES)
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    tile = _checks.positive_int("tile", tile)
    tiles_a = np.ceil(m / tile) * np.ceil(k / tile)  # tile_count(m, k, tile), with errors naming m, k, n
    tiles_b = np.ceil(k / tile) * np.ceil(n / tile)
    if scheme == "all_pairs":
        return tiles_a * tiles_b
    return 2.0 * np.ceil(m / tile) * np.ceil(n / tile) * np.ceil(k / tile)


@_checks.finite_result
def matmul_tile_traffic(m, k, n, tile, dtype: str = "fp16", scheme: str = "all_pairs"):
    """Bytes moved from global memory by :func:`tile_loads` tiles of ``dtype`` elements.

    Never less than A and B themselves, (m k + k n) x the element size: the post's
    ``"all_pairs"`` count (tiles(A) x tiles(B) loads) stops being a traffic when A or B fits in
    one tile (then tiles(A) x tiles(B) < tiles(A) + tiles(B)), and is clamped to that minimum.
    Explained in :doc:`/book/memory_hierarchy` (section "Worked case: TPUs versus GPUs for BERT").
    """
    loads = tile_loads(m, k, n, tile, scheme)
    size = dtype_bytes(dtype)
    tiles = loads * np.asarray(tile, dtype=float) ** 2 * size
    m, k, n = (np.asarray(v, dtype=float) for v in (m, k, n))
    return np.maximum(tiles, (m * k + k * n) * size)


@_checks.finite_result
def transfer_seconds(nbytes, bandwidth, unit: str = "GB/s"):
    """Seconds to move ``nbytes`` at ``bandwidth`` expressed in ``unit`` ("GB/s" = 1e9 B/s, "GiB/s" = 2**30 B/s).

    Latency is ignored: consecutive loads are assumed to overlap perfectly.
    Explained in :doc:`/book/memory_hierarchy` (section "Units: GB or GiB?").
    """
    nbytes = _checks.non_negative("nbytes", nbytes)
    bandwidth = _checks.positive("bandwidth", bandwidth)
    return nbytes / (bandwidth * bandwidth_unit(unit))


@_checks.finite_result
def matmul_load_seconds(m, k, n, tile, bandwidth, dtype: str = "fp16",
                        unit: str = "GB/s", scheme: str = "all_pairs"):
    """Seconds to load the tiles of a matmul: :func:`matmul_tile_traffic` / bandwidth.

    Explained in :doc:`/book/memory_hierarchy` (section "Worked case: TPUs versus GPUs for BERT").
    """
    return transfer_seconds(matmul_tile_traffic(m, k, n, tile, dtype, scheme), bandwidth, unit)


@_checks.finite_result
def slower_by(time_fast, time_slow):
    """Fractional slowdown as the TPU post states it: 1 - time_fast / time_slow (0.32 = "32% slower").

    Explained in :doc:`/book/memory_hierarchy` (section "Worked case: TPUs versus GPUs for BERT").
    """
    time_fast = _checks.positive("time_fast", time_fast)
    time_slow = _checks.positive("time_slow", time_slow)
    return 1.0 - time_fast / time_slow


@_checks.finite_result
def speedup(time_before, time_after):
    """How many times faster: time_before / time_after.

    Explained in :doc:`/book/memory_hierarchy` (section "16, 32 and 8 bits").
    """
    return _checks.positive("time_before", time_before) / _checks.positive("time_after", time_after)


@_checks.finite_result
def elementwise_traffic(rows, cols, dtype: str = "fp16", passes: int = 2):
    """Bytes an un-fused element-wise op moves over a ``rows`` x ``cols`` matrix (``passes`` = 2: read and write).

    Explained in :doc:`/book/memory_hierarchy` (section "Fused element-wise operations").
    """
    rows = _checks.positive_int("rows", rows)
    cols = _checks.positive_int("cols", cols)
    passes = _checks.positive_int("passes", passes)
    return rows * cols * dtype_bytes(dtype) * passes


@_checks.finite_result
def bandwidth_ratio(bandwidth_new, bandwidth_old):
    """The post's speed estimate between two GPUs with Tensor Cores: ratio of memory bandwidths.

    Explained in :doc:`/book/memory_hierarchy` (section "Bandwidth predicts speed").
    """
    return _checks.positive("bandwidth_new", bandwidth_new) / _checks.positive("bandwidth_old", bandwidth_old)


@_checks.finite_result
def batch_corrected_speedup(throughput_new, throughput_old, batch_new, batch_old,
                            gain_per_doubling: float = 1.136, network_factor: float = 1.0):
    """Measured speedup with the post's corrections for unequal batch sizes and multi-GPU networking.

    speedup = (throughput_new / throughput_old) / gain_per_doubling**log2(batch_new / batch_old) / network_factor.
    The post's constants: 13.6% more throughput per batch doubling; 8-GPU networking favours
    the newer system by 5% (CNNs) or 7% (transformers).
    Explained in :doc:`/book/memory_hierarchy` (section "Bandwidth predicts speed").
    """
    ratio = _checks.positive("throughput_new", throughput_new) / _checks.positive("throughput_old", throughput_old)
    doublings = np.log2(_checks.positive_int("batch_new", batch_new) / _checks.positive_int("batch_old", batch_old))
    gain = _checks.positive("gain_per_doubling", gain_per_doubling)
    return ratio / gain**doublings / _checks.positive("network_factor", network_factor)


@_checks.finite_result
def matmul_flops(m, k, n):
    """FLOP of C[m,n] = A[m,k] @ B[k,n]: one multiply and one add per term, 2mkn.

    Explained in :doc:`/book/memory_hierarchy` (section "Today's model: a roofline for each level").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    return 2.0 * m * k * n


@_checks.finite_result
def matmul_min_traffic(m, k, n, dtype: str = "fp16"):
    """Least possible global-memory traffic in bytes: read A and B once, write C once.

    Explained in :doc:`/book/memory_hierarchy` (section "Today's model: a roofline for each level").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    return (m * k + k * n + m * n) * dtype_bytes(dtype)


@_checks.finite_result
def arithmetic_intensity(m, k, n, dtype: str = "fp16"):
    """FLOP per byte of the matmul at minimum traffic: :func:`matmul_flops` / :func:`matmul_min_traffic`.

    Explained in :doc:`/book/memory_hierarchy` (section "Today's model: a roofline for each level").
    """
    return matmul_flops(m, k, n) / matmul_min_traffic(m, k, n, dtype)


@_checks.finite_result
def roofline(intensity, peak_flops, bandwidth):
    """Attainable FLOP/s at arithmetic ``intensity`` (FLOP/byte): min(peak_flops, bandwidth x intensity).

    ``peak_flops`` in FLOP/s, ``bandwidth`` in bytes/s.
    Explained in :doc:`/book/memory_hierarchy` (section "Today's model: a roofline for each level").
    """
    intensity = _checks.positive("intensity", intensity)
    peak = _checks.positive("peak_flops", peak_flops)
    bw = _checks.positive("bandwidth", bandwidth)
    return np.minimum(peak, bw * intensity)


@_checks.finite_result
def ridge_point(peak_flops, bandwidth):
    """Arithmetic intensity (FLOP/byte) above which a kernel is compute-bound: peak_flops / bandwidth.

    Explained in :doc:`/book/memory_hierarchy` (section "Today's model: a roofline for each level").
    """
    return _checks.positive("peak_flops", peak_flops) / _checks.positive("bandwidth", bandwidth)


@_checks.finite_result
def bytes_in_flight(bandwidth, latency_seconds):
    """Bytes that must be requested and not yet returned to keep memory busy: bandwidth x latency.

    Little's law: with ``bandwidth`` in bytes/s and a load ``latency_seconds`` long, a
    processor that has fewer bytes outstanding leaves the memory idle part of the time.
    Explained in :doc:`/book/how_a_gpu_runs` (section "CPU versus GPU").
    """
    return (_checks.positive("bandwidth", bandwidth)
            * _checks.positive("latency_seconds", latency_seconds))


@_checks.finite_result
def sustained_bandwidth(in_flight_bytes, latency_seconds, bandwidth):
    """Bandwidth that ``in_flight_bytes`` outstanding at a time sustain, in bytes/s.

    Little's law read the other way: min(``bandwidth``, in flight / latency). Below
    :func:`bytes_in_flight` the memory is idle part of the time.
    Explained in :doc:`/book/how_a_gpu_runs` (section "CPU versus GPU").
    """
    q = _checks.non_negative("in_flight_bytes", in_flight_bytes)
    lat = _checks.positive("latency_seconds", latency_seconds)
    return np.minimum(_checks.positive("bandwidth", bandwidth), q / lat)


@_checks.finite_result
def matmul_roofline_seconds(m, k, n, peak_flops, bandwidth, dtype: str = "fp16"):
    """Roofline time of a matmul: max(FLOP / peak, minimum bytes / bandwidth), in seconds.

    Explained in :doc:`/book/memory_hierarchy` (section "Today's model: a roofline for each level").
    """
    peak = _checks.positive("peak_flops", peak_flops)
    bw = _checks.positive("bandwidth", bandwidth)
    return np.maximum(matmul_flops(m, k, n) / peak, matmul_min_traffic(m, k, n, dtype) / bw)


@_checks.finite_result
def tile_quantization_efficiency(m, n, tile_m, tile_n):
    """Useful fraction of the work when an m x n output is covered by whole tile_m x tile_n tiles.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    m = _checks.positive_int("m", m)
    n = _checks.positive_int("n", n)
    tile_m = _checks.positive_int("tile_m", tile_m)
    tile_n = _checks.positive_int("tile_n", tile_n)
    return (m * n) / (np.ceil(m / tile_m) * tile_m * np.ceil(n / tile_n) * tile_n)


@_checks.finite_result
def wave_count(m, n, tile_m, tile_n, sms):
    """Waves of thread blocks: ceil(output tiles / SMs), one tile per SM at a time.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    tiles = tile_count_rect(m, n, tile_m, tile_n)
    return np.ceil(tiles / _checks.positive_int("sms", sms))


@_checks.finite_result
def tile_count_rect(m, n, tile_m, tile_n):
    """Output tiles of size tile_m x tile_n covering an m x n matrix.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    m = _checks.positive_int("m", m)
    n = _checks.positive_int("n", n)
    return np.ceil(m / _checks.positive_int("tile_m", tile_m)) * np.ceil(n / _checks.positive_int("tile_n", tile_n))


@_checks.finite_result
def wave_efficiency(m, n, tile_m, tile_n, sms):
    """Fraction of SM-slots doing useful tiles: tiles / (waves x SMs); the last wave may be partly idle.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    tiles = tile_count_rect(m, n, tile_m, tile_n)
    sms = _checks.positive_int("sms", sms)
    return tiles / (np.ceil(tiles / sms) * sms)


@_checks.finite_result
def quantization_efficiency(m, n, tile_m, tile_n, sms):
    """Tile efficiency x wave efficiency: the useful fraction of the work the GPU is scheduled to do.

    Explained in :doc:`/book/memory_hierarchy` (section "Tile and wave quantization").
    """
    return tile_quantization_efficiency(m, n, tile_m, tile_n) * wave_efficiency(m, n, tile_m, tile_n, sms)


@_checks.finite_result
def fits_in_cache(nbytes, cache_bytes):
    """Whether a working set of ``nbytes`` fits in a cache of ``cache_bytes`` (boolean array).

    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    return _checks.non_negative("nbytes", nbytes) <= _checks.positive("cache_bytes", cache_bytes)


#: BERT-large (Devlin et al. 2019): hidden size, feed-forward size, attention heads.
BERT_LARGE = {"hidden": 1024, "ffn": 4096, "heads": 16}


@_checks.finite_result
def bert_large_matmuls(tokens):
    """The weight matmuls of one BERT-large layer as {name: (m, k, n)} for ``tokens`` = batch x sequence.

    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    tokens = _checks.positive_int("tokens", tokens)
    h, f = BERT_LARGE["hidden"], BERT_LARGE["ffn"]
    return {"QKV projection": (tokens, h, 3 * h), "attention output": (tokens, h, h),
            "FFN up": (tokens, h, f), "FFN down": (tokens, f, h)}


@_checks.finite_result
def matmul_operand_bytes(m, k, n, dtype: str = "fp16"):
    """Bytes of the two inputs of a matmul, A[m,k] and B[k,n] (what must stay in L2 for one pass).

    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    return (m * k + k * n) * dtype_bytes(dtype)


#: The TPU post's stated inputs (Dettmers 2018): the BERT matmul, tile sizes and bandwidths in
#: GB/s as the post writes them. The post's arithmetic treats GB as GiB, so ``unit`` is "GiB/s".
TPU_POST = {"m": 256, "k": 1024, "n": 1024, "tpu_tile": 128, "gpu_tile": 96,
            "gpu_tile_fp32": 64, "gpu_tile_int8": 128, "tpu_bandwidth": 600.0,
            "v100_bandwidth": 900.0, "rtx2080ti_bandwidth": 616.0, "unit": "GiB/s"}


@_checks.finite_result
def tpu_post_seconds(tile, bandwidth, dtype: str = "fp16", unit: str = TPU_POST["unit"]):
    """Load time of the post's BERT matmul (256x1024 @ 1024x1024) with ``tile`` tiles at ``bandwidth``.

    Explained in :doc:`/book/memory_hierarchy` (section "Worked case: TPUs versus GPUs for BERT").
    """
    p = TPU_POST
    return matmul_load_seconds(p["m"], p["k"], p["n"], tile, bandwidth, dtype, unit)


@_checks.finite_result
def tile_footprint(tile, dtype: str = "fp16", buffers: int = 2):
    """Shared-memory bytes held by ``buffers`` square tiles of ``dtype`` (2 = one tile of A and one of B).

    Explained in :doc:`/book/memory_hierarchy` (section "Tiles: why bigger tiles reuse more").
    """
    tile = _checks.positive_int("tile", tile)
    buffers = _checks.positive_int("buffers", buffers)
    return buffers * tile**2 * dtype_bytes(dtype)


# --- intensity of a tiled kernel, L2 reuse, overhead ------------------------------------------

#: How global-memory traffic is counted for :func:`matmul_intensity`.
TRAFFIC_COUNTS = ("all_pairs", "output_stationary", "minimum")


@_checks.finite_result
def matmul_intensity(m, k, n, tile, dtype: str = "fp16", count: str = "minimum"):
    """FLOP per byte of global-memory traffic of C[m,n] = A[m,k] @ B[k,n] under one traffic count.

    ``"all_pairs"`` and ``"output_stationary"`` divide :func:`matmul_flops` by
    :func:`matmul_tile_traffic` with square ``tile`` tiles (the output write is not counted);
    ``"minimum"`` is :func:`arithmetic_intensity` (A and B read once, C written once; ``tile``
    is ignored but still validated). For the BERT matmul in 16 bits with 128 x 128 tiles:
    16, 64 and 171 FLOP/byte.
    Explained in :doc:`/book/memory_hierarchy` (section "Tiles: why bigger tiles reuse more").
    """
    count = _checks.choice("count", count, TRAFFIC_COUNTS)
    tile = _checks.positive_int("tile", tile)
    if count == "minimum":
        return arithmetic_intensity(m, k, n, dtype) + 0.0 * tile
    return matmul_flops(m, k, n) / matmul_tile_traffic(m, k, n, tile, dtype, count)


@_checks.finite_result
def output_tile_intensity(tile_m, tile_n, dtype: str = "fp16"):
    """FLOP per byte loaded by one tile_m x tile_n output tile: 2 t_m t_n / (b (t_m + t_n)).

    Each step along K loads a t_m-row strip of A and a t_n-column strip of B and does
    2 t_m t_n FLOP per element of K; the result does not depend on K. A square t x t tile
    gives t / b (64 FLOP/byte for 128 x 128 in 16 bits); a 128 x 256 tile 85.
    Explained in :doc:`/book/memory_hierarchy` (section "Tiles: why bigger tiles reuse more").
    """
    tile_m = _checks.positive_int("tile_m", tile_m)
    tile_n = _checks.positive_int("tile_n", tile_n)
    return 2.0 * tile_m * tile_n / (dtype_bytes(dtype) * (tile_m + tile_n))


@_checks.finite_result
def wave_shape(m, n, tile_m, tile_n, sms):
    """Rows and columns of output tiles that run at once: (r, c), a near-square block of at most ``sms`` tiles.

    r = min(ceil(m / tile_m), ceil(sqrt(w))), c = min(ceil(n / tile_n), ceil(w / r)), and r grown to
    ceil(w / c) if c hit the edge, with w = min(all tiles, sms) tiles in a wave: the grouped
    ("swizzled") launch order that tiled libraries use so that a wave shares its strips of A
    and B through L2.
    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    rows = np.ceil(_checks.positive_int("m", m) / _checks.positive_int("tile_m", tile_m))
    cols = np.ceil(_checks.positive_int("n", n) / _checks.positive_int("tile_n", tile_n))
    concurrent = np.minimum(rows * cols, _checks.positive_int("sms", sms))
    r = np.minimum(rows, np.ceil(np.sqrt(concurrent)))
    c = np.minimum(cols, np.ceil(concurrent / r))
    r = np.minimum(rows, np.ceil(concurrent / c))
    return r, c


#: Most output tiles :func:`wave_groups` lays out (a 256 x 256 grid of tiles).
MAX_WAVE_GROUP_TILES = 65536


def wave_groups(m, n, tile_m, tile_n, sms):
    """The wave group of every output tile: an int array of shape (ceil(m / t_m), ceil(n / t_n)).

    The model's wave is the near-square block of r x c tiles of :func:`wave_shape` (r c is at
    least the tiles in flight, at most ``sms``, and exceeds it by less than a row or column of
    the block). Tile (i, j) belongs to block (i // r, j // c); blocks are numbered row by row,
    so group 0 is the first wave, in the top-left corner of C. The row strip of A behind tile
    row i is read from DRAM once per group in that row, ceil(tiles_n / c) times, and the column
    strip of B behind tile column j once per group in that column, ceil(tiles_m / r) times: the
    per-wave counts of :func:`dram_traffic`. For one matrix at a time (scalars only); at most
    :data:`MAX_WAVE_GROUP_TILES` tiles.
    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    m, n = _checks.count("m", m), _checks.count("n", n)
    tile_m, tile_n = _checks.count("tile_m", tile_m), _checks.count("tile_n", tile_n)
    sms = _checks.count("sms", sms)
    rows, cols = -(-m // tile_m), -(-n // tile_n)
    if rows * cols > MAX_WAVE_GROUP_TILES:
        raise ValueError(f"m and n must give at most {MAX_WAVE_GROUP_TILES} output tiles of tile_m x tile_n "
                         f"(got {rows} x {cols} = {rows * cols})")
    r, c = (int(v) for v in wave_shape(m, n, tile_m, tile_n, sms))
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    return (i // r) * (-(-cols // c)) + j // c


@_checks.finite_result
def wave_working_set(m, k, n, tile_m, tile_n, sms, dtype: str = "fp16", k_in_flight=256):
    """Bytes of A and B that one wave of output tiles needs in L2 at once to share its strips.

    With (r, c) from :func:`wave_shape`, R = min(r t_m, m) and C = min(c t_n, n):
    (R + C) min(k, k_in_flight) b. The tiles of a wave move along K together, so L2 has to
    hold only the slices of their rows of A and columns of B that are in flight, ``k_in_flight``
    elements deep (pipeline stages x K-step: 4 x 64 by default). When it fits, each strip is read
    from global memory once per wave instead of once per tile. ``k_in_flight=k`` asks for the
    whole strips, which makes the reuse independent of how closely the tiles keep pace.
    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    r, c = wave_shape(m, n, tile_m, tile_n, sms)
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    depth = np.minimum(k, _checks.positive_int("k_in_flight", k_in_flight))
    rows = np.minimum(r * np.asarray(tile_m, dtype=float), m)
    cols = np.minimum(c * np.asarray(tile_n, dtype=float), n)
    return (rows + cols) * depth * dtype_bytes(dtype)


#: What :func:`l2_reuse` returns, by index: how often each operand comes from global memory.
L2_REUSE = ("per tile", "per wave", "single pass")


@_checks.finite_result
def l2_reuse(m, k, n, tile_m, tile_n, sms, l2_bytes, dtype: str = "fp16", k_in_flight=256):
    """Which reuse L2 allows (index into :data:`L2_REUSE`): 2 if A, B and C fit, 1 if a wave's working set fits, else 0.

    "single pass": A + B + C (:func:`matmul_min_traffic`) fit in ``l2_bytes`` (the output passes
    through L2 too), so each operand is read from global memory once. "per wave":
    :func:`wave_working_set` fits. "per tile": neither; every tile reads its strips from global
    memory. The tests compare with the nominal capacity, which is optimistic: a partitioned L2,
    its replacement policy and other traffic leave less room.
    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    l2 = _checks.positive("l2_bytes", l2_bytes)
    wave = wave_working_set(m, k, n, tile_m, tile_n, sms, dtype, k_in_flight)
    whole = matmul_min_traffic(m, k, n, dtype)
    return np.where(whole <= l2, 2, np.where(wave <= l2, 1, 0))


@_checks.finite_result
def dram_traffic(m, k, n, tile_m, tile_n, sms, l2_bytes, dtype: str = "fp16", k_in_flight=256):
    """Global-memory bytes of a tiled matmul when L2 provides the reuse of :func:`l2_reuse`.

    b (m k g_n + k n g_m + m n): A is read once per group of output-tile columns that runs
    apart (g_n), B once per group of rows (g_m), C written once. Per tile g = the tile counts
    ceil(n / t_n) and ceil(m / t_m) (the output-stationary count, without padding); per wave
    g = ceil(tiles / c) and ceil(tiles / r) with (r, c) from :func:`wave_shape`; single pass g = 1.
    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    level = l2_reuse(m, k, n, tile_m, tile_n, sms, l2_bytes, dtype, k_in_flight)
    r, c = wave_shape(m, n, tile_m, tile_n, sms)
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    tiles_m, tiles_n = np.ceil(m / np.asarray(tile_m, float)), np.ceil(n / np.asarray(tile_n, float))
    groups_n = np.select([level == 2, level == 1], [1.0, np.ceil(tiles_n / c)], tiles_n)
    groups_m = np.select([level == 2, level == 1], [1.0, np.ceil(tiles_m / r)], tiles_m)
    return (m * k * groups_n + k * n * groups_m + m * n) * dtype_bytes(dtype)


#: The three regimes of :func:`kernel_seconds`, by index (:func:`regime`).
REGIMES = ("compute", "memory", "overhead")


@_checks.finite_result
def kernel_terms(flops, nbytes, peak_flops, bandwidth, overhead_seconds=0.0):
    """The three times that bound one kernel, in seconds: {"compute", "memory", "overhead"}.

    compute = flops / peak_flops, memory = nbytes / bandwidth, overhead = ``overhead_seconds``,
    the host's cost of launching one kernel (framework dispatch and the driver); broadcast to
    one shape. :func:`kernel_seconds` takes their maximum, :func:`regime` names the largest.
    Explained in :doc:`/book/memory_hierarchy` (section "The third regime: launch overhead").
    """
    flops = _checks.non_negative("flops", flops)
    nbytes = _checks.non_negative("nbytes", nbytes)
    peak = _checks.positive("peak_flops", peak_flops)
    bw = _checks.positive("bandwidth", bandwidth)
    overhead = _checks.non_negative("overhead_seconds", overhead_seconds)
    terms = np.broadcast_arrays(flops / peak, nbytes / bw, overhead)
    return {name: term * 1.0 for name, term in zip(REGIMES, terms)}


@_checks.finite_result
def kernel_seconds(flops, nbytes, peak_flops, bandwidth, overhead_seconds=0.0):
    """Time per kernel in a stream of them: max(overhead, flops / peak_flops, nbytes / bandwidth), in seconds.

    Launches are asynchronous: the host prepares the next kernel while the GPU runs this one,
    so in steady state each kernel costs the larger of the host's time and the GPU's, and the
    largest of the three :func:`kernel_terms` sets the regime (:func:`regime`).
    Explained in :doc:`/book/memory_hierarchy` (section "The third regime: launch overhead").
    """
    terms = kernel_terms(flops, nbytes, peak_flops, bandwidth, overhead_seconds)
    return np.maximum.reduce(list(terms.values()))


@_checks.finite_result
def regime(flops, nbytes, peak_flops, bandwidth, overhead_seconds=0.0):
    """Which of :func:`kernel_terms` is largest, as an index into :data:`REGIMES` (0 compute, 1 memory, 2 overhead).

    Explained in :doc:`/book/memory_hierarchy` (section "The third regime: launch overhead").
    """
    terms = kernel_terms(flops, nbytes, peak_flops, bandwidth, overhead_seconds)
    return np.argmax(np.stack(list(terms.values())), axis=0)


#: Matrix units of a TPU v2 chip, the "SMs" its tiles run on: two TensorCores with one
#: 128 x 128 MXU each (Jouppi et al. 2020).
TPU_V2_MATRIX_UNITS = 2


@_checks.finite_result
def gemm_seconds(m, k, n, peak_flops, bandwidth, sms, tile_m=128, tile_n=128, split_k=1,
                 dtype: str = "fp16", l2_bandwidth=None, partial_bytes=4.0):
    """Time of a tiled GEMM with wave quantization and split-K: max(compute, DRAM, L2), in seconds.

    - compute: waves x the FLOP of one tile / the per-SM peak (``peak_flops`` / ``sms``), with
      ceil(m / t_m) ceil(n / t_n) ``split_k`` tiles, each doing 2 t_m t_n k / split_k FLOP
      (padded tiles cost a whole tile);
    - DRAM: :func:`matmul_min_traffic` plus, for ``split_k`` > 1, each split writing its partial
      sums of C in ``partial_bytes`` per element and a reduction reading them back, over ``bandwidth``;
    - L2 (only if ``l2_bandwidth`` is given): every tile reads its strips of A and B from L2,
      b (m k ceil(n / t_n) + k n ceil(m / t_m)), plus the partial sums, over ``l2_bandwidth``.
    Rates in FLOP/s and bytes/s.
    Explained in :doc:`/book/memory_hierarchy` (section "Measured reality").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    tile_m = _checks.positive_int("tile_m", tile_m)
    tile_n = _checks.positive_int("tile_n", tile_n)
    split = _checks.positive_int("split_k", split_k)
    sms = _checks.positive_int("sms", sms)
    peak = _checks.positive("peak_flops", peak_flops)
    bw = _checks.positive("bandwidth", bandwidth)
    partial = _checks.positive("partial_bytes", partial_bytes)
    tiles_m, tiles_n = np.ceil(m / tile_m), np.ceil(n / tile_n)
    waves = np.ceil(tiles_m * tiles_n * split / sms)
    compute = waves * 2.0 * tile_m * tile_n * np.ceil(k / split) / (peak / sms)
    partials = np.where(split > 1, 2.0 * split * m * n * partial, 0.0)
    dram = (matmul_min_traffic(m, k, n, dtype) + partials) / bw
    times = np.maximum(compute, dram)
    if l2_bandwidth is not None:
        l2 = _checks.positive("l2_bandwidth", l2_bandwidth)
        strips = (m * k * tiles_n + k * n * tiles_m) * dtype_bytes(dtype)
        times = np.maximum(times, (strips + partials) / l2)
    return times


@_checks.finite_result
def decode_tokens_per_second(weight_bytes, bandwidth, batch=1, kv_bytes_per_sequence=0.0):
    """Upper bound on decoding speed when every step reads all weights and each sequence's KV cache.

    tokens/s <= batch x bandwidth / (weight_bytes + batch x kv_bytes_per_sequence), with bytes
    and bytes/s: each generated token of each sequence needs one pass over the weights (shared by
    the batch) and over its own cache. Compute is assumed to keep up (true at small batch).
    Explained in :doc:`/book/low_precision` (section "Weight-only quantization for decoding").
    """
    weights = _checks.positive("weight_bytes", weight_bytes)
    bw = _checks.positive("bandwidth", bandwidth)
    batch = _checks.positive_int("batch", batch)
    kv = _checks.non_negative("kv_bytes_per_sequence", kv_bytes_per_sequence)
    return batch * bw / (weights + batch * kv)


@_checks.finite_result
def compute_bound_rows(k, n, ridge, dtype: str = "fp16"):
    """Rows m from which an (m x k) @ (k x n) matmul at minimum traffic reaches intensity ``ridge`` (FLOP/byte).

    Solves 2 m k n = ridge b (m k + k n + m n): m = ridge b k n / (2 k n - ridge b (k + n)).
    The intensity approaches 2 k n / (b (k + n)) as m grows; when that limit is at or below
    ``ridge`` the layer is memory-bound at every m and a ValueError says so.
    Explained in :doc:`/book/memory_hierarchy` (section "Exercises").
    """
    k = _checks.positive_int("k", k)
    n = _checks.positive_int("n", n)
    ridge = _checks.positive("ridge", ridge)
    b = dtype_bytes(dtype)
    denominator = 2.0 * k * n - ridge * b * (k + n)
    if np.any(denominator <= 0):
        raise ValueError(f"ridge must be below the layer's limit 2kn / (b (k + n)) = "
                         f"{float(np.min(2.0 * k * n / (b * (k + n)))):g} FLOP/byte: "
                         "the matmul is memory-bound at every m")
    return ridge * b * k * n / denominator


@_checks.finite_result
def accumulator_bytes(tile_m, tile_n, accumulate: str = "fp32"):
    """Bytes of the running sums of one tile_m x tile_n output tile (FP32 accumulators: 4 bytes each).

    They stay in registers (or, on data-center Blackwell, tensor memory) for the whole K loop,
    so they bound the output tile as much as shared memory does: 256 x 256 in FP32 is 256 KiB.
    Explained in :doc:`/book/memory_hierarchy` (section "Tiles: why bigger tiles reuse more").
    """
    tile_m = _checks.positive_int("tile_m", tile_m)
    tile_n = _checks.positive_int("tile_n", tile_n)
    accumulate = _checks.choice("accumulate", accumulate, ("fp32", "fp16"))
    return tile_m * tile_n * dtype_bytes(accumulate)



# --- attention, unfused and fused (FlashAttention) --------------------------------------------


@_checks.finite_result
def attention_flops(seq, head_dim):
    """FLOP of one head's attention forward pass, O = softmax(Q K^T) V: 4 N^2 d.

    Two matrix multiplications of 2 N^2 d FLOP each (S = Q K^T and O = P V) with
    N = ``seq`` and d = ``head_dim``. The softmax's few operations per score (about 5 N^2)
    are left out, as the FlashAttention papers leave them out when they report FLOP/s; so is
    any causal mask (a causal kernel skips about half of the work).
    Explained in :doc:`/book/memory_hierarchy` (section "FlashAttention: attention tiled in shared memory").
    """
    seq = _checks.positive_int("seq", seq)
    head_dim = _checks.positive_int("head_dim", head_dim)
    return 4.0 * seq**2 * head_dim


@_checks.finite_result
def attention_bytes(seq, head_dim, fused: bool, block_rows=128, dtype: str = "fp16"):
    """Bytes one head's attention forward pass moves to and from global memory.

    Unfused (standard attention, Dao et al. 2022, Algorithm 0), three kernels: read Q and K,
    write S = Q K^T; read S, write P = softmax(S); read P and V, write O:
    b (4 N d + 4 N^2), Theta(N d + N^2). ``block_rows`` is validated and ignored.
    Fused (FlashAttention-2's loop order): the queries are split into blocks of B_r =
    ``block_rows`` rows; each block is read once, streams all of K and V through shared
    memory and writes its rows of O once; S and P never leave the SM:
    b N d (2 + 2 ceil(N / B_r)). That is the traffic the SMs pull from global memory (mostly
    from L2 once K and V are cached); with B_r >= N, or when L2 keeps a head's K and V while
    all its query blocks pass, K and V are read once and the count falls to 4 N d b.
    N = ``seq``, d = ``head_dim``, b the bytes of ``dtype``. The row statistics a training
    forward pass also writes (4 bytes per row) are left out.
    Explained in :doc:`/book/memory_hierarchy` (section "FlashAttention: attention tiled in shared memory").
    """
    fused = _checks.flag("fused", fused)
    seq = _checks.positive_int("seq", seq)
    head_dim = _checks.positive_int("head_dim", head_dim)
    block_rows = _checks.positive_int("block_rows", block_rows)
    b = dtype_bytes(dtype)
    if fused:
        return b * seq * head_dim * (2.0 + 2.0 * np.ceil(seq / block_rows))
    return b * (4.0 * seq * head_dim + 4.0 * seq**2) + 0.0 * block_rows


@_checks.finite_result
def attention_intensity(seq, head_dim, fused: bool, block_rows=128, dtype: str = "fp16"):
    """FLOP per byte of one head's attention forward pass: :func:`attention_flops` / :func:`attention_bytes`.

    Unfused: N d / (b (N + d)), which never exceeds d / b (64 FLOP/byte for d = 128 in
    16 bits). Fused: 2 N / (b (1 + ceil(N / B_r))), independent of d and at most 2 B_r / b
    (128 FLOP/byte for B_r = 128); with K and V read once (B_r >= N), N / b.
    Explained in :doc:`/book/memory_hierarchy` (section "FlashAttention: attention tiled in shared memory").
    """
    nbytes = attention_bytes(seq, head_dim, fused, block_rows, dtype)
    return attention_flops(seq, head_dim) / nbytes


@_checks.finite_result
def attention_compute_bound_seq(ridge, dtype: str = "fp16"):
    """Shortest sequence (tokens) from which fused attention that reads K and V once reaches ``ridge`` FLOP/byte.

    With K and V read once the intensity is N / b (:func:`attention_intensity` with
    B_r >= N), so N = ceil(b x ``ridge``): 591 for the H100 SXM5's 16-bit ridge point.
    Explained in :doc:`/book/memory_hierarchy` (section "FlashAttention: attention tiled in shared memory").
    """
    ridge = _checks.positive("ridge", ridge)
    return np.maximum(np.ceil(ridge * dtype_bytes(dtype)), 1.0)
