"""Explorations and figures of the chapter :doc:`/book/how_a_gpu_runs`."""
from __future__ import annotations

import inspect

import altair as alt
import numpy as np
import pandas as pd

from .. import _checks, hardware, memory, throughput
from ..explore import Choice, Exploration, Slider, check_direct_calls
from ..units import TFLOPS

#: Accelerators of the opening chapter: one of each current kind, and the A100 before them.
GPUS = ("A100 SXM4 80GB", "H100 SXM5", "B200", "RTX 4090")
#: Rows of the activation matrix the exploration sweeps: 1 to 65,536 tokens.
TOKENS = 2.0 ** np.arange(0, 17)
#: Regime colours (Okabe-Ito orange, blue, grey) and shapes, so the chart reads in greyscale.
REGIME_COLOURS = ("#E69F00", "#0072B2", "#7F7F7F")
REGIME_SHAPES = ("square", "circle", "triangle-up")


def achieved(accelerator, weight, overhead_us):
    """FLOP/s a (tokens x weight) @ (weight x weight) BF16 matmul reaches, tokens 1 to 65,536.

    The time is the largest of the three terms of :func:`gpumodel.memory.kernel_terms` at the
    card's dense 16-bit peak and datasheet bandwidth (no efficiency factors): the chapter's
    first model, before anything is lost to real kernels.
    """
    acc = hardware.get(accelerator)
    peak, bw = acc.peak_flops("bf16"), acc.bandwidth
    flops = memory.matmul_flops(TOKENS, weight, weight)
    nbytes = memory.matmul_min_traffic(TOKENS, weight, weight, "bf16")
    args = (flops, nbytes, peak, bw, overhead_us * 1e-6)
    seconds = memory.kernel_seconds(*args)
    which = memory.regime(*args)
    return {"tokens": TOKENS,
            "tflops": flops / seconds / TFLOPS,
            "intensity": flops / nbytes,
            "microseconds": seconds * 1e6,
            "bound": [memory.REGIMES[int(i)] + "-bound" for i in which],
            "peak_tflops": peak / TFLOPS,
            "ridge": memory.ridge_point(peak, bw)}


def achieved_chart(base):
    bounds = [r + "-bound" for r in memory.REGIMES]
    x = alt.X("tokens:Q", title="tokens (rows of the activation matrix, log scale)",
              scale=alt.Scale(type="log", base=2))
    line = base.mark_line(color="#555555").encode(
        x=x, y=alt.Y("tflops:Q", title="TFLOP/s attainable at peak rates (log scale)",
                     scale=alt.Scale(type="log", domain=[0.01, 3000])))
    dots = base.mark_point(filled=True, size=70).encode(
        x=x, y="tflops:Q",
        color=alt.Color("bound:N", title="regime", sort=bounds,
                        scale=alt.Scale(domain=bounds, range=list(REGIME_COLOURS))),
        shape=alt.Shape("bound:N", title="regime", sort=bounds,
                        scale=alt.Scale(domain=bounds, range=list(REGIME_SHAPES))),
        tooltip=["tokens:Q", alt.Tooltip("tflops:Q", title="TFLOP/s", format=".3g"),
                 alt.Tooltip("intensity:Q", title="FLOP/byte", format=".3g"),
                 alt.Tooltip("microseconds:Q", title="µs", format=".3g"), "bound:N"])
    peak = base.mark_rule(strokeDash=[5, 4], color="#000000").encode(y="mean(peak_tflops):Q")
    return (line + dots + peak).properties(width=420, height=260)


#: Batch of each workload in the chapter's regime split (sequences, images, sequences).
BATCHES = {"transformer-train": 32, "cnn-train": 256, "llm-decode": 1}
SPLIT_CARDS = ("H100 SXM5", "RTX 4090")
#: Context (tokens) of the decoding list: the default of :func:`throughput.decode_kernels`.
DECODE_CONTEXT = inspect.signature(throughput.decode_kernels).parameters["context"].default


def regime_split(cards=SPLIT_CARDS, batches=None) -> pd.DataFrame:
    """Share of a step (%) in each regime, per workload and card, from :func:`throughput.time_by_regime`."""
    cards = _checks.items("cards", cards, lambda name, card: _checks.choice(name, card, hardware.names()))
    batches = BATCHES if batches is None else batches
    if not isinstance(batches, dict) or not batches:
        raise ValueError(f"batches must be a non-empty dict of workload name -> batch (got {batches!r:.60})")
    rows = []
    for workload, batch in batches.items():
        try:
            kernels = throughput.kernels_for(workload, batch)
        except ValueError as err:
            raise ValueError(f"batches: {err}") from None
        split = throughput.time_by_regime(kernels, list(cards), engine=throughput.DEFAULT_ENGINE[workload])
        total = sum(split.values())
        for j, card in enumerate(cards):
            for regime in memory.REGIMES:
                rows.append({"workload": workload, "card": card, "step": f"{workload}, {card}",
                             "regime": regime + "-bound",
                             "share": round(float(100 * split[regime][j] / total[j]), 2)})
    return pd.DataFrame(rows)


def regime_split_chart():
    """Stacked bars: the share of each workload's step, per card, spent in each regime."""
    bounds = [r + "-bound" for r in memory.REGIMES]
    frame = regime_split()
    frame["order"] = frame["regime"].map({b: i for i, b in enumerate(bounds)})
    return alt.Chart(frame).mark_bar(stroke="#000000", strokeWidth=0.5).encode(
        y=alt.Y("step:N", title=None, sort=list(dict.fromkeys(frame["step"]))),
        x=alt.X("share:Q", title="share of the step's time (%)", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("regime:N", title="regime", sort=bounds,
                        scale=alt.Scale(domain=bounds, range=list(REGIME_COLOURS))),
        order=alt.Order("order:Q"),
        tooltip=["workload:N", "card:N", "regime:N", alt.Tooltip("share:Q", format=".1f")],
    ).properties(width=420, height=200, description=(
        "Horizontal stacked bars, one per workload and card (BERT-large training, ResNet-50 "
        "training and Llama 3 8B decoding on the H100 SXM5 and RTX 4090), split into the share "
        "of the step's time spent in compute-bound, memory-bound and overhead-bound kernels, "
        "in that order from the left."))


ACHIEVED = Exploration(
    name="achieved",
    compute=achieved,
    params=(Choice("accelerator", "accelerator", GPUS, "H100 SXM5"),
            Slider("weight", "weight k = n", 1024, 8192, 1024, 4096, grid_step=1024,
                   integer=True),
            Slider("overhead_us", "t_o, or t_h if the host is the limit", 0, 20, 1,
                   throughput.LAUNCH_SECONDS * 1e6, unit="µs", grid_step=2)),
    chart=achieved_chart,
    description="TFLOP/s a BF16 matmul can attain at the card's peak rates (no efficiency "
                "factors) against the number of tokens, on a log-log plot: points are marked by "
                "regime (overhead, memory or compute-bound) and the dashed line is the card's "
                "dense peak. The sliders change the card, the weight size and the time per "
                "kernel: t_o, the GPU's floor per kernel, or t_h, the host's launch time, "
                "where the host is the limit.",
)

EXPLORATIONS = (ACHIEVED,)


check_direct_calls(globals())
