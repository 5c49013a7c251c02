"""Seed-audit rows of the chapter on sparsity (GPU guide, "Sparse Network Training")."""
from __future__ import annotations

from .. import hardware, sparsity
from . import SeedRow

SRC = 'Dettmers 2023, "Which GPU(s) to Get for Deep Learning", "Sparse Network Training"'


def _math_speedup() -> float:
    a100 = hardware.get("A100 SXM4 40GB")
    return a100.peak_flops("fp16", sparse=True) / a100.peak_flops("fp16")


ROWS = [
    SeedRow("sparsity.math_speedup", "2", _math_speedup, "x (sparse over dense peak)", SRC,
            note="The A100's 2:4-sparse FP16 Tensor Core peak over its dense peak: the math a sparse "
                 "instruction skips. Every GPU with 2:4 support in the hardware table has the same ratio; "
                 "it is a bound on the GEMM, not a measured speedup.",
            note_if_differs="The A100's sparse over dense FP16 Tensor Core peak.", tolerance=0.005),
    SeedRow("sparsity.training_speedup", "2", lambda: sparsity.training_gemm_speedup(_math_speedup(), 2),
            "x (a linear layer's training GEMMs)", SRC,
            note="Training a linear layer runs three equal GEMMs.",
            note_if_differs="The post says sparse training algorithms 'now actually provide speedups of up to "
                            "2x during training'. A linear layer's training runs three GEMMs of equal FLOP: the "
                            "forward pass and the input gradient can use a 2:4 weight (the second needs the "
                            "transposed weight to be 2:4 as well), but the weight gradient, whose output has "
                            "the weight's shape, multiplies two dense activation matrices. With two of three "
                            "GEMMs at 2x the layer's bound is 3 / (0.5 + 0.5 + 1) = 1.5x, before Amdahl's law "
                            "for the rest of the step; and sparse momentum's unstructured masks are not 2:4 at "
                            "all.", tolerance=0.005),
    SeedRow("sparsity.compressed_fraction_fp16", "0.5", lambda: sparsity.compressed_fraction("fp16"),
            "of the dense size (FP16)", SRC,
            note="Values only.",
            note_if_differs="The post says the sparse matrix is compressed to 'a dense representation that is "
                            "half the size'. That counts the kept values only. The hardware also stores where "
                            "each came from: two 2-bit indices per group of four (PTX mma.sp), 4 bits per 64 "
                            "bits of FP16 values, so the compressed operand is (2 x 16 + 4) / 64 = 56.25% of "
                            "dense (62.5% for 8-bit elements)."),
]
