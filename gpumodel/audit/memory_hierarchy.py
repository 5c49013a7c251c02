"""Seed-audit rows of the chapter on the memory hierarchy (TPU post; GPU guide's bandwidth estimate)."""
from __future__ import annotations

from .. import hardware, measured, memory
from ..units import MiB
from . import SeedRow

P = memory.TPU_POST
TPU_SRC = 'Dettmers 2018, "TPUs vs GPUs for Transformers (BERT)"'
GUIDE_SRC = 'Dettmers 2023, "Which GPU(s) to Get for Deep Learning"'


def _tpu_seconds(dtype="fp16"):
    return memory.tpu_post_seconds(P["tpu_tile"], P["tpu_bandwidth"], dtype)


def _gpu_seconds(bandwidth, tile=P["gpu_tile"], dtype="fp16"):
    return memory.tpu_post_seconds(tile, bandwidth, dtype)


def _traffic(tile, dtype="fp16"):
    return memory.matmul_tile_traffic(P["m"], P["k"], P["n"], tile, dtype)


def _decimal_tpu_seconds():
    return memory.tpu_post_seconds(P["tpu_tile"], P["tpu_bandwidth"], unit="GB/s")


def _dle(network):
    """The post's recipe on one fixed comparison: 1 GPU, A100 40GB against the 16 GB V100 of DGX-1."""
    return next(r["corrected"] for r in measured.a100_v100_speedups(network)
                if r["gpus"] == 1 and r["v100"] == "V100 SXM2 16GB")


def _dle_range(network):
    values = [r["corrected"] for r in measured.a100_v100_speedups(network)]
    return f"{min(values):.2f}x to {max(values):.2f}x"


def _rounded_2080ti_slower():
    rounded_tpu = round(float(_tpu_seconds()), 6)
    rounded_gpu = round(float(_traffic(P["gpu_tile"]) / MiB)) / P["rtx2080ti_bandwidth"] * 1e-3
    return 100 * float(memory.slower_by(rounded_tpu, rounded_gpu))


ROWS = [
    SeedRow("tpu_vs_gpu.tpu_tile_loads", "1024",
            lambda: memory.tile_loads(P["m"], P["k"], P["n"], P["tpu_tile"]), "tile loads",
            f'{TPU_SRC}, "Transformers for TPUs"',
            note="16 tiles of A times 64 tiles of B (the post pairs every A tile with every B tile)."),
    SeedRow("tpu_vs_gpu.tpu_bytes", "32", lambda: _traffic(P["tpu_tile"]) / MiB, "MiB",
            f'{TPU_SRC}, "Transformers for TPUs"',
            note=f"The post's '32 MB' is 32 MiB; in decimal units it is {_traffic(P['tpu_tile']) / 1e6:.1f} MB."),
    SeedRow("tpu_vs_gpu.tpu_seconds", "5.2e-05", _tpu_seconds, "s", f'{TPU_SRC}, "Transformers for TPUs"',
            note=f"Only binary units give this: 32 MiB / 600 GiB/s. Decimal (600e9 B/s) gives "
                 f"{float(_decimal_tpu_seconds()):.2e} s.",
            note_if_differs="Compare with 32 MiB / 600 GiB/s."),
    SeedRow("tpu_vs_gpu.v100_tile_loads", "3993",
            lambda: memory.tile_loads(P["m"], P["k"], P["n"], P["gpu_tile"]), "tile loads",
            f'{TPU_SRC}, "Transformers on GPUs"',
            note="33 tiles of A (3 x 11, partial tiles padded) times 121 tiles of B (11 x 11)."),
    SeedRow("tpu_vs_gpu.v100_bytes", "70", lambda: _traffic(P["gpu_tile"]) / MiB, "MiB",
            f'{TPU_SRC}, "Transformers on GPUs"', note="The post's '70 MB' is MiB, rounded."),
    SeedRow("tpu_vs_gpu.v100_seconds", "7.6e-05", lambda: _gpu_seconds(P["v100_bandwidth"]), "s",
            f'{TPU_SRC}, "Transformers on GPUs"', note="900 GB/s read as GiB/s, like the TPU row."),
    SeedRow("tpu_vs_gpu.v100_slower", "32",
            lambda: 100 * memory.slower_by(_tpu_seconds(), _gpu_seconds(P["v100_bandwidth"])), "%",
            f'{TPU_SRC}, "Transformers on GPUs"',
            note="'x% slower' means 1 - t_TPU / t_GPU; as a time ratio the V100 takes "
                 f"{float(memory.speedup(_gpu_seconds(P['v100_bandwidth']), _tpu_seconds())):.2f}x as long."),
    SeedRow("tpu_vs_gpu.rtx2080ti_slower", "54",
            lambda: 100 * memory.slower_by(_tpu_seconds(), _gpu_seconds(P["rtx2080ti_bandwidth"])), "%",
            f'{TPU_SRC}, "Transformers on GPUs"',
            note_if_differs="Rounding in the post: with its rounded intermediates, 5.2e-05 s for the TPU and "
                            "70 / 616 = 1.14e-04 s for the GPU (the 70 MiB divided as if it were decimal), "
                            f"the same formula gives {_rounded_2080ti_slower():.1f}%."),
    SeedRow("tpu_vs_gpu.fp32_tpu_speedup", "5.3",
            lambda: memory.speedup(_gpu_seconds(P["v100_bandwidth"], P["gpu_tile_fp32"], "fp32"), _tpu_seconds()),
            "x", f'{TPU_SRC}, "The Importance of 32-bit vs 16-bit vs 8-bit"',
            note="V100 with 32-bit 64x64 tiles against the TPU at 16 bits (bfloat16), as the post compares."),
    SeedRow("tpu_vs_gpu.int8_gpu_speedup", "3.0",
            lambda: memory.speedup(_tpu_seconds(), _gpu_seconds(P["v100_bandwidth"], P["gpu_tile_int8"], "int8")),
            "x", f'{TPU_SRC}, "The Importance of 32-bit vs 16-bit vs 8-bit"',
            note="Reproduced with the V100's 900 GB/s, although Volta has no 8-bit Tensor Cores; with the "
                 "RTX 2080 Ti's 616 GB/s (Turing has them) the same model gives "
                 f"{float(memory.speedup(_tpu_seconds(), _gpu_seconds(P['rtx2080ti_bandwidth'], P['gpu_tile_int8'], 'int8'))):.2f}x."),
    SeedRow("tpu_vs_gpu.elementwise_overhead", "1.6",
            lambda: 100 * memory.elementwise_traffic(P["m"], P["k"]) / _traffic(P["gpu_tile"]), "%",
            f'{TPU_SRC}, "Limitations of the Bandwidth Model"',
            note_if_differs="The model charges one read and one write of the 256x1024 16-bit matrix (1 MiB) "
                            "against the GPU's 70 MiB of tile loads. The post's 1.6% equals one pass "
                            f"(0.5 MiB) over the TPU's 32 MiB: "
                            f"{100 * float(memory.elementwise_traffic(P['m'], P['k'], passes=1) / _traffic(P['tpu_tile'])):.2f}%."),
    SeedRow("bandwidth.a100_vs_v100", "1.73",
            lambda: memory.bandwidth_ratio(hardware.get("A100 SXM4 40GB").memory_bandwidth_gbs,
                                           hardware.get("V100 SXM2 16GB").memory_bandwidth_gbs),
            "x", f'{GUIDE_SRC}, "Memory Bandwidth"', note="1555 GB/s over 900 GB/s, from the hardware table."),
    SeedRow("bandwidth.a100_vs_v100_maskrcnn", "1.47", lambda: _dle("maskrcnn"), "x",
            f'{GUIDE_SRC}, "Practical Ada / Hopper Speed Estimates"',
            note="NVIDIA DeepLearningExamples, 1 GPU: 25 against 15 img/s at batch 8 against 4, "
                 "less 13.6% for the one batch doubling."),
    SeedRow("bandwidth.a100_vs_v100_transformer", "1.70", lambda: _dle("transformer"), "x",
            f'{GUIDE_SRC}, "Practical Ada / Hopper Speed Estimates"',
            note_if_differs="The post's corrections applied to NVIDIA's DeepLearningExamples throughputs "
                            "(1 GPU against the 16 GB V100, with the mixed-precision batches of the README: "
                            "10240 tokens per A100, 5120 per V100) do not give 1.70; over every GPU count and "
                            f"V100 variant in the tables they give {_dle_range('transformer')}. The post may "
                            "have used NVIDIA's performance web page of the time."),
    SeedRow("bandwidth.a100_vs_v100_seresnext", "1.43", lambda: _dle("seresnext101_pyt"), "x",
            f'{GUIDE_SRC}, "Practical Ada / Hopper Speed Estimates"',
            note_if_differs="Not reconstructible from NVIDIA's DeepLearningExamples tables: the PyTorch rows "
                            f"give {_dle_range('seresnext101_pyt')} and the TensorFlow rows "
                            f"{_dle_range('seresnext101_tf')} after the post's corrections."),
]
