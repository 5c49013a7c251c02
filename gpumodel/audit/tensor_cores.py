"""Seed-audit rows of the chapter on Tensor Cores (GPU guide's 32x32 matmul cycle example)."""
from __future__ import annotations

from .. import tensor_cores as tc
from . import SeedRow

GUIDE = 'Dettmers 2023, "Which GPU(s) to Get for Deep Learning"'
SRC = f'{GUIDE}, section "Matrix multiplication with Tensor Cores"'
FFMA_SRC = f'{GUIDE}, section "Matrix multiplication without Tensor Cores"'
ASYNC_SRC = (f'{GUIDE}, section "Matrix multiplication with Tensor Cores and Asynchronous copies '
             '(RTX 30/RTX 40) and TMA (H100)"')


def _cycles(method: str) -> float:
    return float(tc.matmul_cycles(**tc.POST_EXAMPLE, method=method))


def _every_fma_cycles() -> float:
    return float(tc.matmul_cycles(**tc.POST_EXAMPLE, method="ffma", fma_per_thread=1))


def _tma_gain() -> float:
    return float(tc.speedup_percent(_cycles("tensor_core"), _cycles("async_copy")))


ROWS = [
    SeedRow("tensor_cores.cycles_ffma", "504", lambda: _cycles("ffma"), "cycles",
            FFMA_SRC,
            note="200 (one global-to-shared load) + 8 x 34 (shared) + 8 x 4 (FFMA). The post's 8 rounds are "
                 "2 FMAs per thread per round for 32^3 FMAs on 2048 threads; with one FMA per FFMA "
                 f"instruction the same model gives {_every_fma_cycles():.0f} cycles. The 200 cycles are "
                 "the post's L2 latency, not its 380-cycle global memory."),
    SeedRow("tensor_cores.cycles_tensor_core", "235", lambda: _cycles("tensor_core"), "cycles", SRC,
            note="200 + 34 + 1: 64 Tensor Core ops (one per 4x4 block of C) on 8 SMs x 8 Tensor Cores = 1 round. "
                 "The 1 cycle is a throughput; with the ~16-cycle mma latency measured on A100 the model gives "
                 f"{float(tc.matmul_cycles(**{**tc.POST_EXAMPLE, 'mma_latency': 16.0}, method='tensor_core')):.0f}."),
    SeedRow("tensor_cores.cycles_async_tma", "200", lambda: _cycles("async_copy"), "cycles", ASYNC_SRC,
            note="(200 - 34 - 1) + 34 + 1 = max(200, 34 + 1): the steady-state cost per tile when the next "
                 "tile's load overlaps this tile's work; the first tile still costs 235."),
    SeedRow("tensor_cores.tma_gain", "15", _tma_gain, "%", ASYNC_SRC,
            note="100 x (1 - 200 / 235) = 14.9%: 'another 15%' is cycles saved, not a speedup "
                 f"(as a speedup 235 / 200 = {_cycles('tensor_core') / _cycles('async_copy'):.3f}x)."),
]
