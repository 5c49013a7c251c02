"""Seed-audit rows of the chapter on low precision (GPU guide, "Low-precision Computation")."""
from __future__ import annotations

from .. import hardware, precision
from ..units import TFLOPS
from . import SeedRow

GUIDE_SRC = 'Dettmers 2023, "Which GPU(s) to Get for Deep Learning", "Low-precision Computation"'
FP8_SRC = 'Dettmers 2023, "Which GPU(s) to Get for Deep Learning", "8-bit Float Support in H100 and RTX 40 series GPUs"'



def _best_fp16_loss_scale() -> float:
    """The loss scale that loses the fewest of the chapter's stand-in gradients in FP16."""
    from ..explorations import low_precision as lp  # pandas: imported only when the row runs

    return 2.0 ** lp.best_scale("fp16")[0]


ROWS = [
    SeedRow("low_precision.fp16_max", "65,504", lambda: precision.format_info("fp16")["max"], "largest finite value",
            GUIDE_SRC,
            note="The largest finite FP16 value, (2 - 2**-10) * 2**15, from numpy.finfo(float16)."),
    SeedRow("low_precision.bf16_max", "3e38", lambda: precision.format_info("bf16")["max"], "largest finite value",
            GUIDE_SRC,
            note=f"The post writes 3*10^38; the exact BF16 maximum is (2 - 2**-7) * 2**127 = "
                 f"{precision.format_info('bf16')['max']:.17g} (FP32's is "
                 f"{precision.format_info('fp32')['max']:.8g}), which rounds to 3e38.",
            note_if_differs="The exact BF16 maximum is (2 - 2**-7) * 2**127 = 3.3895e38."),
    SeedRow("low_precision.rtx4090_fp8_pflops", "0.66",
            lambda: hardware.get("RTX 4090").peak_flops("fp8", accumulate="fp16") / (1000 * TFLOPS), "PFLOPS",
            FP8_SRC,
            note="The RTX 4090's dense FP8 peak with FP16 accumulation. With FP32 accumulation, as training uses, "
                 "GeForce cards run at half that: "
                 f"{hardware.get('RTX 4090').peak_flops('fp8') / (1000 * TFLOPS):.2f} PFLOPS.",
            note_if_differs="Compare with the RTX 4090's dense FP8 peak with FP16 accumulation."),
    SeedRow("low_precision.loss_scale", "1", _best_fp16_loss_scale,
            "loss-scale factor", GUIDE_SRC, shown="at most 1 (implied)",
            note_if_differs="The post prints no number: it says loss scaling multiplies the loss 'by a small "
                            "number before backpropagating to prevent this gradient explosion', so its factor is "
                            "at most 1, the seed value here. That is backwards (Micikevicius et al. 2018): the "
                            "scale is large, because the problem it solves is underflow, small gradients that "
                            "FP16 flushes to zero; overflow is what too large a scale causes, and dynamic "
                            "scaling halves the scale when it happens. The model value is the scale that loses "
                            "the fewest of the chapter's stand-in gradients in FP16 (PyTorch's GradScaler starts "
                            "at 2**16)."),
]
