"""Cycle models of a small matrix multiplication with and without Tensor Cores, and Tensor Core peaks.

The GPU guide's worked example (Dettmers 2023, "Matrix multiplication with Tensor Cores")
adds up latencies: one global-to-shared load, then rounds of shared-memory loads and math.
Here that sum is generalised: the number of sequential rounds follows from the matrix size,
the SMs, the warps per SM and the Tensor Cores per SM. Everything is in cycles (latencies,
totals), FLOP and seconds; all functions broadcast over numpy arrays.
Explained in :doc:`/book/tensor_cores`.
"""
from __future__ import annotations

import importlib
import re

import numpy as np

from . import _checks
from .units import TFLOPS

METHODS = ("ffma", "tensor_core", "async_copy")
WARP_SIZE = 32

#: The post's example: a 32x32 matmul on 8 SMs with 8 warps and 8 Tensor Cores each, using the
#: post's own Ampere latency table (its "global memory" 200 cycles is its L2 figure).
POST_EXAMPLE = {"size": 32, "sms": 8, "warps_per_sm": 8, "tensor_cores_per_sm": 8,
                "global_latency": 200.0, "shared_latency": 34.0, "ffma_latency": 4.0, "mma_latency": 1.0}

#: Dense FP16-input, FP32-accumulate FLOP per Tensor Core per clock at full rate (1 FMA = 2 FLOP).
#: GeForce cards of Turing, GA10x, Ada and GB20x run FP32 accumulate at half this rate
#: (the hardware table's ``geforce_half_rate`` flag). AMD's "Matrix Cores" (4 per CU) are listed
#: for comparison. Sources in :data:`TENSOR_CORE_SOURCES`.
FLOP_PER_TENSOR_CORE_PER_CYCLE = {
    "Volta (GV100)": 128.0,
    "Turing (TU10x)": 128.0,
    "Ampere (GA100)": 512.0,
    "Ampere (GA10x)": 256.0,
    "Ada (AD10x)": 256.0,
    "Hopper (GH100)": 1024.0,
    "Blackwell (GB20x)": 256.0,
    "CDNA3 (MI300)": 512.0,
}

#: Bytes per cycle one SM's shared memory can read or write: 32 banks of 32 bits per clock cycle
#: each (NVIDIA CUDA Programming Guide, shared memory; BibTeX key nvidia2025cudasmem).
SMEM_BANKS = 32
SMEM_BANK_BYTES = 4
SMEM_BYTES_PER_CYCLE = float(SMEM_BANKS * SMEM_BANK_BYTES)

#: Processing blocks (SM sub-partitions, each with one warp scheduler) per SM from Volta to Hopper:
#: two Tensor Cores in each on Volta (nvidia2017volta), one from Ampere on (nvidia2020a100).
PROCESSING_BLOCKS_PER_SM = 4

#: Where each entry of :data:`FLOP_PER_TENSOR_CORE_PER_CYCLE` comes from (BibTeX keys in book/bib/).
TENSOR_CORE_SOURCES = {
    "Volta (GV100)": "nvidia2017volta: 64 FP16 FMA per clock per Tensor Core (a 4x4x4 product), 8 per SM; "
                     "125 TFLOPS = 80 x 8 x 128 x 1.53 GHz (worked in nvforum2023tensor)",
    "Turing (TU10x)": "nvidia2018turing: 64 FP16 FMA per clock per Tensor Core, 8 per SM "
                      "(1024 FLOP per SM per clock); GeForce FP32 accumulate at half rate",
    "Ampere (GA100)": "nvidia2020a100: 256 FP16 FMA per clock per Tensor Core, 4 per SM; "
                      "312 TFLOPS = 108 x 4 x 512 x 1.41 GHz (nvforum2023tensor)",
    "Ampere (GA10x)": "nvidia2020ga102: 128 dense FP16 FMA per clock per Tensor Core (half of GA100), "
                      "4 per SM; GeForce FP32 accumulate at half rate",
    "Ada (AD10x)": "nvidia2022ada (not re-read here): same dense rate per Tensor Core as GA10x; checked "
                   "against RTX 6000 Ada 364.2 TFLOPS = 142 x 4 x 256 x 2.505 GHz and RTX 4090 165.2 (half rate)",
    "Hopper (GH100)": "nvidia2022h100: twice the A100 SM rate clock for clock; 989.4 TFLOPS = "
                      "132 x 4 x 1024 x 1.83 GHz, H100 PCIe 756 at 1.62 GHz (nvforum2023tensor)",
    "Blackwell (GB20x)": "derived, not read from a whitepaper: RTX 5090 209.5 TFLOPS (FP32 accumulate, "
                         "half rate) = 170 x 4 x 128 x 2.407 GHz",
    "CDNA3 (MI300)": "tc_amd2023cdna3 (not re-read here): derived from MI300X 1307.4 TFLOPS = "
                     "304 CUs x 4 Matrix Cores x 512 x 2.1 GHz",
}

_CHIP_PATTERNS = (
    (r"\bGV100\b", "Volta (GV100)"),
    (r"\bTU1\d\d\b", "Turing (TU10x)"),
    (r"\bGA100\b", "Ampere (GA100)"),
    (r"\bGA10\d\b", "Ampere (GA10x)"),
    (r"\bAD10\d\b", "Ada (AD10x)"),
    (r"\bGH100\b", "Hopper (GH100)"),
    (r"\bGB20\d\b", "Blackwell (GB20x)"),
    (r"\bCDNA ?3\b", "CDNA3 (MI300)"),
)

#: Architectures with a latency table in ``gpumodel.measured`` (see :func:`latency_preset`).
ARCHITECTURES = ("Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell", "Ampere (Dettmers 2023)")
MEMORY_LEVELS = ("l2", "global")
TENSOR_CORE_LATENCIES = ("throughput", "measured")
#: Dependent FFMA latency used when an architecture has no measurement: 4 cycles on Volta
#: (Jia et al. 2018) and Ampere (Abdelkhalik et al. 2022).
FFMA_LATENCY_FALLBACK = 4.0


def _counts(size, sms, warps_per_sm, tensor_cores_per_sm, tensor_core_tile, fma_per_thread,
            count_k=False):
    """Validated sequential round counts: global loads, FFMA rounds, Tensor Core rounds."""
    size = _checks.positive_int("size", size)
    sms = _checks.positive_int("sms", sms)
    warps_per_sm = _checks.positive_int("warps_per_sm", warps_per_sm)
    tensor_cores_per_sm = _checks.positive_int("tensor_cores_per_sm", tensor_cores_per_sm)
    tile = _checks.positive_int("tensor_core_tile", tensor_core_tile)
    fma_per_thread = _checks.positive_int("fma_per_thread", fma_per_thread)
    threads = sms * warps_per_sm * WARP_SIZE
    global_rounds = np.ceil(2.0 * size**2 / threads)
    ffma_rounds = np.ceil(size**3 / (threads * fma_per_thread))
    blocks = np.ceil(size / tile)
    ops = blocks**3 if _flag("count_k", count_k) else blocks**2
    tensor_core_rounds = np.ceil(ops / (sms * tensor_cores_per_sm))
    return global_rounds, ffma_rounds, tensor_core_rounds


@_checks.finite_result
def matmul_rounds(size=32, sms=8, warps_per_sm=8, tensor_cores_per_sm=8, tensor_core_tile=4,
                  fma_per_thread=2, count_k: bool = False):
    """Sequential rounds of the post's matmul: dict of arrays {"global", "ffma", "tensor_core"} (counts).

    - ``global``: loads of 32 elements per warp to bring the two ``size`` x ``size`` operands into
      shared memory, ceil(2 size^2 / (32 sms warps_per_sm)); 1 in the post.
    - ``ffma``: rounds of (one shared-memory load, one dependent FFMA) per thread,
      ceil(size^3 / (threads x ``fma_per_thread``)); the post's 8 for 32^3 FMAs on 2048 threads means
      2 FMAs per thread per round (``fma_per_thread=1``, one FMA per FFMA instruction, gives 16).
    - ``tensor_core``: rounds of Tensor Core operations, one per ``tensor_core_tile`` x
      ``tensor_core_tile`` block of C as the post counts them (8 x 8 = 64 ops; K is not counted),
      spread over sms x tensor_cores_per_sm Tensor Cores; 1 in the post. With ``count_k=True``
      each block also needs ceil(size / tensor_core_tile) operations along K: 8 x 8 x 8 = 512 ops
      on 64 Tensor Cores, 8 rounds.

    Explained in :doc:`/book/tensor_cores` (section "Counting rounds").
    """
    g, f, t = _counts(size, sms, warps_per_sm, tensor_cores_per_sm, tensor_core_tile, fma_per_thread,
                      count_k)
    g, f, t = np.broadcast_arrays(g, f, t)
    return {"global": g * 1.0, "ffma": f * 1.0, "tensor_core": t * 1.0}


@_checks.finite_result
def matmul_cycle_breakdown(size=32, sms=8, warps_per_sm=8, tensor_cores_per_sm=8,
                           global_latency=200.0, shared_latency=34.0, ffma_latency=4.0, mma_latency=1.0,
                           method: str = "ffma", tensor_core_tile=4, fma_per_thread=2,
                           count_k: bool = False):
    """Cycles spent waiting on global memory, shared memory and math: dict of arrays {"global", "shared", "compute"}.

    ``method`` is ``"ffma"`` (CUDA cores), ``"tensor_core"`` or ``"async_copy"`` (Tensor Cores with
    asynchronous global-to-shared copies / TMA). Latencies are in cycles; round counts come from
    :func:`matmul_rounds` (``count_k`` as there). For ``"async_copy"`` the next tile's global load overlaps this tile's
    shared loads and math, so only ``max(global - shared - compute, 0)`` of it is exposed: the
    post's (200 - 34 - 1) + 34 + 1 = 200 is the steady-state cost per tile, not the first one.
    Explained in :doc:`/book/tensor_cores` (section "Where do the cycles go").
    """
    method = _checks.choice("method", method, METHODS)
    g_rounds, f_rounds, t_rounds = _counts(size, sms, warps_per_sm, tensor_cores_per_sm,
                                           tensor_core_tile, fma_per_thread, count_k)
    global_latency = _checks.non_negative("global_latency", global_latency)
    shared_latency = _checks.non_negative("shared_latency", shared_latency)
    ffma_latency = _checks.non_negative("ffma_latency", ffma_latency)
    mma_latency = _checks.non_negative("mma_latency", mma_latency)
    wait_global = g_rounds * global_latency
    if method == "ffma":
        shared = f_rounds * shared_latency
        compute = f_rounds * ffma_latency
    else:
        shared = t_rounds * shared_latency
        compute = t_rounds * mma_latency
    if method == "async_copy":
        wait_global = np.maximum(wait_global - shared - compute, 0.0)
    # ffma_latency / mma_latency broadcast even when the method does not use them.
    unused = 0.0 * (ffma_latency + mma_latency)
    wait_global, shared, compute = np.broadcast_arrays(wait_global + unused, shared + unused, compute + unused)
    return {"global": wait_global * 1.0, "shared": shared * 1.0, "compute": compute * 1.0}


@_checks.finite_result
def matmul_cycles(size=32, sms=8, warps_per_sm=8, tensor_cores_per_sm=8,
                  global_latency=200.0, shared_latency=34.0, ffma_latency=4.0, mma_latency=1.0,
                  method: str = "ffma", tensor_core_tile=4, fma_per_thread=2,
                  count_k: bool = False):
    """Total cycles of the post's ``size`` x ``size`` matmul: the sum of :func:`matmul_cycle_breakdown`.

    At the defaults: 200 + 8 x 34 + 8 x 4 = 504 (``"ffma"``), 200 + 34 + 1 = 235 (``"tensor_core"``)
    and max(200, 34 + 1) = 200 (``"async_copy"``); with ``count_k=True`` the Tensor Core variant
    takes 200 + 8 x (34 + 1) = 480.
    Explained in :doc:`/book/tensor_cores` (section "Worked case: the guide's cycle model").
    """
    parts = matmul_cycle_breakdown(size, sms, warps_per_sm, tensor_cores_per_sm, global_latency,
                                   shared_latency, ffma_latency, mma_latency, method,
                                   tensor_core_tile, fma_per_thread, count_k)
    if _checks.choice("method", method, METHODS) == "async_copy":
        # max(global, shared + compute) directly: adding the exposed max(global - shared - compute, 0)
        # back to shared + compute can round below global, so more latency could give fewer cycles.
        hidden = matmul_cycle_breakdown(size, sms, warps_per_sm, tensor_cores_per_sm, global_latency,
                                        shared_latency, ffma_latency, mma_latency, "tensor_core",
                                        tensor_core_tile, fma_per_thread, count_k)
        return np.maximum(hidden["global"], parts["shared"] + parts["compute"])
    return parts["global"] + parts["shared"] + parts["compute"]


@_checks.finite_result
def speedup_percent(cycles_before, cycles_after):
    """Cycles saved as a percentage of ``cycles_before``: 100 (1 - after / before) (the post's "another 15%").

    Explained in :doc:`/book/tensor_cores` (section "Asynchronous copies and TMA").
    """
    before = _checks.positive("cycles_before", cycles_before)
    after = _checks.non_negative("cycles_after", cycles_after)
    return 100.0 * (1.0 - after / before)


def _flag(name: str, value) -> bool:
    return _checks.flag(name, value)


@_checks.finite_result
def tiled_loop_cycles(k_tiles, load_cycles, compute_cycles, double_buffered: bool = False):
    """Cycles of a loop over ``k_tiles`` tiles of K, each needing a load and a compute phase (cycles).

    Serial: k (load + compute). Double buffered (load tile i+1 while computing tile i): the first
    load and the last compute are exposed, every other step costs the slower of the two,
    load + compute + (k - 1) max(load, compute).
    Explained in :doc:`/book/tensor_cores` (section "Double buffering").
    """
    k = _checks.positive_int("k_tiles", k_tiles)
    load = _checks.non_negative("load_cycles", load_cycles)
    compute = _checks.non_negative("compute_cycles", compute_cycles)
    if _flag("double_buffered", double_buffered):
        return load + compute + (k - 1.0) * np.maximum(load, compute)
    return k * (load + compute)


@_checks.finite_result
def tensor_core_utilization(k_tiles, load_cycles, compute_cycles, double_buffered: bool = False):
    """Fraction (0-1) of :func:`tiled_loop_cycles` in which the Tensor Cores compute: k compute / total.

    Explained in :doc:`/book/tensor_cores` (section "Double buffering").
    """
    _checks.positive("compute_cycles", compute_cycles)
    total = tiled_loop_cycles(k_tiles, load_cycles, compute_cycles, double_buffered)
    return np.asarray(k_tiles, dtype=float) * np.asarray(compute_cycles, dtype=float) / total


@_checks.finite_result
def cycles_to_seconds(cycles, clock_hz):
    """Wall time in seconds of ``cycles`` SM clock cycles at ``clock_hz`` (1.41e9 Hz: 1 cycle = 0.71 ns).

    Explained in :doc:`/book/tensor_cores` (section "Cycles, warps and SMs").
    """
    return _checks.non_negative("cycles", cycles) / _checks.positive("clock_hz", clock_hz)


@_checks.finite_result
def peak_tensor_flops(sms, tensor_cores_per_sm, flop_per_tensor_core_per_cycle, clock_hz):
    """Peak Tensor Core throughput in FLOP/s: sms x tensor_cores_per_sm x FLOP per Tensor Core per cycle x clock (Hz).

    E.g. A100: 108 x 4 x 512 x 1.41e9 = 3.12e14 FLOP/s.
    Explained in :doc:`/book/tensor_cores` (section "Peak TFLOPS from the SM count").
    """
    sms = _checks.positive_int("sms", sms)
    tensor_cores_per_sm = _checks.positive_int("tensor_cores_per_sm", tensor_cores_per_sm)
    flop = _checks.positive("flop_per_tensor_core_per_cycle", flop_per_tensor_core_per_cycle)
    clock_hz = _checks.positive("clock_hz", clock_hz)
    return sms * tensor_cores_per_sm * flop * clock_hz


def tensor_core_family(architecture: str) -> str:
    """The key of :data:`FLOP_PER_TENSOR_CORE_PER_CYCLE` for a family name or a hardware-table architecture ("Ampere (GA102)").

    Explained in :doc:`/book/tensor_cores` (section "Peak TFLOPS from the SM count").
    """
    text = _checks.text("architecture", architecture)
    if re.search(r"\bTU11[67]\b", text, flags=re.IGNORECASE):
        raise ValueError(f"architecture {text!r}: TU116 and TU117 (GTX 16 series) have no Tensor Cores")
    if re.search(r"\b(GB1\d\d|GB[23]00|B[123]00A?)\b", text, flags=re.IGNORECASE):
        raise ValueError(f"architecture {text!r} is datacenter Blackwell (GB100 die: B200, GB200): the table has "
                         "no per-Tensor-Core rate for it (NVIDIA publishes no SM count or tensor clock); "
                         "Blackwell (GB20x) is the consumer chips' rate")
    for pattern, family in _CHIP_PATTERNS:
        if re.search(pattern, text, flags=re.IGNORECASE):
            return family
    return _checks.choice("architecture", text, FLOP_PER_TENSOR_CORE_PER_CYCLE)


def flop_per_tensor_core_cycle(architecture: str, geforce_half_rate: bool = False) -> float:
    """Dense FP16 (FP32 accumulate) FLOP per Tensor Core per cycle for ``architecture``; halved on GeForce cards.

    Explained in :doc:`/book/tensor_cores` (section "Peak TFLOPS from the SM count").
    """
    value = FLOP_PER_TENSOR_CORE_PER_CYCLE[tensor_core_family(architecture)]
    return value / 2.0 if _flag("geforce_half_rate", geforce_half_rate) else value


@_checks.finite_result
def derived_vs_published(accelerators=None) -> list[dict]:
    """Peak dense FP16 tensor TFLOPS derived from SMs x Tensor Cores x FLOP/cycle x boost clock, against the datasheet.

    ``accelerators`` defaults to the hardware table; rows without an SM count, Tensor Cores per SM,
    boost clock or FP16 tensor throughput, or of an architecture missing from
    :data:`FLOP_PER_TENSOR_CORE_PER_CYCLE`, are skipped. Returns dicts with ``name``,
    ``architecture``, ``derived_tflops``, ``published_tflops`` and ``ratio`` (derived / published).
    Explained in :doc:`/book/tensor_cores` (section "Peak TFLOPS from the SM count").
    """
    if accelerators is None:
        from . import hardware

        accelerators = hardware.accelerators()
    elif isinstance(accelerators, (str, bytes, dict)) or not hasattr(accelerators, "__iter__"):
        raise ValueError(f"accelerators must be None or a sequence of hardware.Accelerator records "
                         f"(got {accelerators!r:.80})")
    needed = ("name", "architecture", "sm_count", "tensor_cores_per_sm", "peak_clock_mhz", "fp16_tflops",
              "geforce_half_rate")
    accelerators = list(accelerators)
    for acc in accelerators:
        if not all(hasattr(acc, f) for f in needed):
            raise ValueError(f"accelerators must hold hardware.Accelerator records (got {acc!r:.80})")
    rows = []
    for acc in accelerators:
        if None in (acc.sm_count, acc.tensor_cores_per_sm, acc.peak_clock_mhz, acc.fp16_tflops):
            continue
        try:
            flop = flop_per_tensor_core_cycle(acc.architecture, bool(acc.geforce_half_rate))
        except ValueError:
            continue
        derived = float(peak_tensor_flops(acc.sm_count, acc.tensor_cores_per_sm, flop,
                                          acc.peak_clock_mhz * 1e6)) / TFLOPS
        rows.append({"name": acc.name, "architecture": acc.architecture, "derived_tflops": derived,
                     "published_tflops": float(acc.fp16_tflops), "ratio": derived / acc.fp16_tflops})
    return rows


def _measured_latency(measured, architecture: str, quantity: str):
    """A latency from ``gpumodel.measured``, or None when that architecture has no such measurement."""
    try:
        value = measured.latency(architecture, quantity)
    except (ValueError, KeyError, LookupError):
        return None
    if value is None or not np.isfinite(float(value)):
        return None
    return float(value)


def latency_preset(architecture: str = "Ampere (Dettmers 2023)", memory_level: str = "l2",
                   tensor_core_latency: str = "throughput") -> dict:
    """Latency keyword arguments (cycles) for :func:`matmul_cycles` from ``gpumodel.measured`` for ``architecture``.

    ``memory_level`` picks the latency charged for the global-to-shared load: ``"l2"`` (what the
    post's 200 cycles is) or ``"global"`` (DRAM). ``tensor_core_latency="throughput"`` charges one
    cycle per Tensor Core round, as the post does (a throughput, not a latency);
    ``"measured"`` uses the measured ``mma_fp16`` latency (16 cycles on A100) and raises ValueError
    where there is none. Missing shared-memory latencies fall back to the L1 hit latency, missing
    FFMA latencies to :data:`FFMA_LATENCY_FALLBACK`.
    Explained in :doc:`/book/tensor_cores` (section "Latencies by architecture").
    """
    architecture = _checks.choice("architecture", architecture, ARCHITECTURES)
    memory_level = _checks.choice("memory_level", memory_level, MEMORY_LEVELS)
    tensor_core_latency = _checks.choice("tensor_core_latency", tensor_core_latency, TENSOR_CORE_LATENCIES)
    measured = importlib.import_module(f"{__package__}.measured")

    global_latency = _measured_latency(measured, architecture, memory_level)
    if global_latency is None:
        raise ValueError(f"architecture {architecture!r} has no measured {memory_level} latency; "
                         f"try memory_level={'global' if memory_level == 'l2' else 'l2'!r}")
    shared = _measured_latency(measured, architecture, "shared")
    if shared is None:
        shared = _measured_latency(measured, architecture, "l1")
    if shared is None:
        raise ValueError(f"architecture {architecture!r} has no measured shared-memory or L1 latency")
    ffma = _measured_latency(measured, architecture, "ffma")
    if tensor_core_latency == "throughput":
        mma = 1.0
    else:
        mma = _measured_latency(measured, architecture, "mma_fp16")
        if mma is None:
            raise ValueError(f"architecture {architecture!r} has no measured mma_fp16 latency; "
                             "use tensor_core_latency='throughput'")
    return {"global_latency": global_latency, "shared_latency": shared,
            "ffma_latency": FFMA_LATENCY_FALLBACK if ffma is None else ffma, "mma_latency": mma}


@_checks.finite_result
def per_sm_cycle(rate, sms, clock_hz):
    """A chip-wide rate divided among SMs and clock cycles: rate / (sms x clock_hz).

    Bandwidth in bytes/s gives the bytes per cycle per SM that global memory can deliver
    (H100 SXM5: 3.35e12 / (132 x 1.83e9) = 13.9); a peak in FLOP/s gives FLOP per cycle per SM
    (H100 SXM5, 16-bit dense: 4 Tensor Cores x 1024 = 4096). Their ratio is the ridge point.
    Explained in :doc:`/book/tensor_cores` (section "Feeding the Tensor Cores, per SM and per cycle").
    """
    rate = _checks.positive("rate", rate)
    sms = _checks.positive_int("sms", sms)
    return rate / (sms * _checks.positive("clock_hz", clock_hz))


@_checks.finite_result
def k_step_cycles(tile_m, tile_n, tile_k, bytes_per_cycle, flop_per_cycle, element_bytes=2.0,
                  share_a=1, share_b=1):
    """Cycles one SM needs for one K-step of a tile_m x tile_n x tile_k tile: {"load", "compute"}.

    load = (tile_m / share_a + tile_n / share_b) tile_k ``element_bytes`` / ``bytes_per_cycle``:
    the strips of A and B for this step, each fetched from global memory once for the
    ``share_a`` (``share_b``) tiles that use it (1: every tile fetches its own; in a wave of
    r x c tiles sharing through L2, an A strip serves c tiles and a B strip r).
    compute = 2 tile_m tile_n tile_k / ``flop_per_cycle``. With no sharing,
    compute / load = tile intensity / ridge point: below 1 the Tensor Cores wait, and
    :func:`tiled_loop_cycles` with these two numbers gives the loop's time.
    Explained in :doc:`/book/tensor_cores` (section "Feeding the Tensor Cores, per SM and per cycle").
    """
    tile_m = _checks.positive_int("tile_m", tile_m)
    tile_n = _checks.positive_int("tile_n", tile_n)
    tile_k = _checks.positive_int("tile_k", tile_k)
    bpc = _checks.positive("bytes_per_cycle", bytes_per_cycle)
    fpc = _checks.positive("flop_per_cycle", flop_per_cycle)
    b = _checks.positive("element_bytes", element_bytes)
    share_a = _checks.positive("share_a", share_a)
    share_b = _checks.positive("share_b", share_b)
    load = (tile_m / share_a + tile_n / share_b) * tile_k * b / bpc
    compute = 2.0 * tile_m * tile_n * tile_k / fpc
    load, compute = np.broadcast_arrays(load, compute)
    return {"load": load * 1.0, "compute": compute * 1.0}


@_checks.finite_result
def max_load_cycles(k_tiles, compute_cycles, utilization):
    """The longest load per tile (cycles) at which a double-buffered loop still reaches ``utilization``.

    Inverts :func:`tensor_core_utilization` (double buffered) for the load time L, with M =
    ``compute_cycles`` and k = ``k_tiles``: L = M (1/u - 1/k) when that is at least M (loads
    slower than compute), else L = k M (1/u - 1). ``utilization`` in (0, 1].
    Explained in :doc:`/book/tensor_cores` (section "Double buffering").
    """
    k = _checks.positive_int("k_tiles", k_tiles)
    m = _checks.positive("compute_cycles", compute_cycles)
    u = _checks.in_range("utilization", utilization, 0.0, 1.0)
    if np.any(u <= 0):
        raise ValueError("utilization must be in (0, 1] (got 0)")
    slow = m * (1.0 / u - 1.0 / k)
    return np.where(slow >= m, slow, k * m * (1.0 / u - 1.0))


@_checks.finite_result
def operand_bytes_per_cycle(tile_m, tile_n, flop_per_cycle, element_bytes=2.0):
    """Bytes of A and B per cycle one SM consumes when its Tensor Cores run a tile_m x tile_n tile at full speed.

    flop_per_cycle / (2 t_m t_n / (b (t_m + t_n))): the Tensor Cores' rate divided by the tile's
    intensity. Whatever level serves the strips (L2, or DRAM for a lone tile) must deliver this
    much. H100 SXM5, 128 x 128 in 16 bits: 4096 / 64 = 64 bytes per cycle per SM.
    Explained in :doc:`/book/tensor_cores` (section "Feeding the Tensor Cores, per SM and per cycle").
    """
    tile_m = _checks.positive_int("tile_m", tile_m)
    tile_n = _checks.positive_int("tile_n", tile_n)
    fpc = _checks.positive("flop_per_cycle", flop_per_cycle)
    b = _checks.positive("element_bytes", element_bytes)
    return fpc * b * (tile_m + tile_n) / (2.0 * tile_m * tile_n)


@_checks.finite_result
def bytes_in_flight(bytes_per_cycle, latency_cycles):
    """Little's law: bytes that must be on their way at once to sustain ``bytes_per_cycle`` against a latency.

    bytes_per_cycle x latency_cycles, both counted at the same clock. An H100 SXM5 SM receiving
    its share of DRAM bandwidth (13.9 bytes per cycle at 1,830 MHz) against a 348 ns DRAM latency
    (689 cycles measured at 1,980 MHz, 637 at 1,830 MHz) needs about 8.8 KB in flight.
    Explained in :doc:`/book/tensor_cores` (section "Feeding the Tensor Cores, per SM and per cycle").
    """
    rate = _checks.positive("bytes_per_cycle", bytes_per_cycle)
    return rate * _checks.non_negative("latency_cycles", latency_cycles)



@_checks.finite_result
def smem_bytes_per_cycle(mma_tile_m, mma_tile_n, cta_tile_m, cta_tile_n, flop_per_cycle,
                         element_bytes=2.0, smem_bandwidth=SMEM_BYTES_PER_CYCLE):
    """Shared-memory traffic per cycle of one SM whose Tensor Cores run at full speed: dict of arrays.

    ``read``: bytes of A and B per cycle the MMA issuers (a warp for ``mma.sync``, a warpgroup
    for ``wgmma``) read from shared memory, each its own ``mma_tile_m`` x ``mma_tile_n`` tile's
    strips once per K-step: flop_per_cycle x b (m + n) / (2 m n), :func:`operand_bytes_per_cycle`
    of the issuer's tile. ``write``: bytes per cycle the copies from L2 or DRAM write into shared
    memory, the strips of the ``cta_tile_m`` x ``cta_tile_n`` block tile. ``total`` = read + write;
    ``share`` = total / ``smem_bandwidth`` (bytes per cycle per SM; 32 banks x 4 bytes = 128);
    ``cap`` = min(1, 1 / share), the largest fraction of the Tensor Core peak shared memory allows.
    A100 (2048 FLOP per cycle per SM), 64 x 64 warp tiles in a 128 x 128 block tile, 16 bits:
    64 + 32 = 96 bytes per cycle, 0.75 of shared memory; the same tiles on an H100 (4096) need 192.
    Explained in :doc:`/book/tensor_cores` (section "How operands reach the Tensor Cores").
    """
    mm = _checks.positive_int("mma_tile_m", mma_tile_m)
    mn = _checks.positive_int("mma_tile_n", mma_tile_n)
    cm = _checks.positive_int("cta_tile_m", cta_tile_m)
    cn = _checks.positive_int("cta_tile_n", cta_tile_n)
    fpc = _checks.positive("flop_per_cycle", flop_per_cycle)
    b = _checks.positive("element_bytes", element_bytes)
    bandwidth = _checks.positive("smem_bandwidth", smem_bandwidth)
    read = fpc * b * (mm + mn) / (2.0 * mm * mn)
    write = fpc * b * (cm + cn) / (2.0 * cm * cn)
    total = read + write
    share = total / bandwidth
    read, write, total, share = np.broadcast_arrays(read, write, total, share)
    return {"read": read * 1.0, "write": write * 1.0, "total": total * 1.0, "share": share * 1.0,
            "cap": np.minimum(1.0, 1.0 / share)}
