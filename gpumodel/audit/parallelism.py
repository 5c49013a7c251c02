"""Seed-audit rows of the chapter on parallelism (the 2014 posts on data and model parallelism, the GPU guide)."""
from __future__ import annotations

from .. import measured, parallelism
from ..units import GiB
from . import SeedRow

DP_SRC = 'Dettmers 2014, "How to Parallelize Deep Learning on GPUs Part 1/2: Data Parallelism"'
MP_SRC = 'Dettmers 2014, "How to Parallelize Deep Learning on GPUs Part 2/2: Model Parallelism"'
GUIDE_SRC = 'Dettmers 2023, "Which GPU(s) to Get for Deep Learning", "8x GPU systems"'

#: The post's example: a 1000 x 1000 FP32 gradient over a 40 Gbit/s network card, converted to
#: bytes with binary units (40 x 2**30 bits/s), three GPUs per node.
GRADIENT_BYTES = 1000 * 1000 * 4.0
NETWORK_BYTES_PER_S = 40 * GiB / 8
GPUS_PER_NODE = 3
#: The guide's illustrative 8x A100 speedup; V100's 5% more multi-GPU overhead for CNNs is
#: :data:`gpumodel.measured.POST_NETWORK_FACTOR`, which chapter 1 uses too.
A100_8X_SPEEDUP = 7.00


def transfer_ms() -> float:
    """One transfer of the gradient over the network card, in ms."""
    return 1e3 * GRADIENT_BYTES / NETWORK_BYTES_PER_S


def naive_ms(nodes: int) -> float:
    return 1e3 * float(parallelism.naive_gradient_seconds(GRADIENT_BYTES, GPUS_PER_NODE, nodes,
                                                          NETWORK_BYTES_PER_S))


CARRIED = ("within 1%: the post multiplies its rounded 0.75 ms; unrounded, one transfer takes "
           f"{transfer_ms():.3f} ms")

ROWS = [
    SeedRow("data_parallel.transfer_ms", "0.75", transfer_ms, "ms", DP_SRC,
            note="4,000,000 bytes over 40 Gbit/s with binary units (40 x 2**30 bit/s = 5.37 GB/s): "
                 f"{transfer_ms():.3f} ms. With decimal units (5 GB/s) it would be 0.80 ms.",
            note_if_differs="4,000,000 bytes over 40 x 2**30 bit/s."),
    SeedRow("data_parallel.two_nodes_network_ms", "2.25", lambda: 3 * transfer_ms(), "ms", DP_SRC,
            note="Each GPU sends to the three GPUs of the other node through the network card: "
                 f"3 transfers; {CARRIED}.",
            note_if_differs="Three transfers through the network card.", tolerance=0.01),
    SeedRow("data_parallel.two_nodes_serialized_ms", "7.75", lambda: naive_ms(2), "ms", DP_SRC,
            note="Three GPUs share the card, one at a time.",
            note_if_differs="The post multiplies 2.25 ms by three, for the three GPUs that take turns "
                            "on the node's network card, and writes 7.75 ms; 3 x 2.25 = 6.75 ms "
                            f"(unrounded {naive_ms(2):.2f} ms). Its own four-node figure, 20.25 ms = "
                            "3 x 6.75, confirms 6.75."),
    SeedRow("data_parallel.four_nodes_ms", "20.25", lambda: naive_ms(4), "ms", DP_SRC,
            note="Four nodes: each GPU sends to the 9 GPUs of other nodes, three GPUs per card take "
                 f"turns: 27 transfers; {CARRIED}.",
            note_if_differs="27 transfers through one network card per node.", tolerance=0.01),
    SeedRow("model_parallel.dp_gradient_elements", "500000",
            lambda: parallelism.data_parallel_bytes(1000 * 500, 2, grad_bytes=1.0), "elements", MP_SRC,
            note="The gradient of the 1000 x 500 weight, sent once per step in data parallelism: a ring "
                 "all-reduce over the post's two GPUs sends 2 (n - 1) / n = 1 times it per GPU.",
            note_if_differs="The 1000 x 500 weight's gradient."),
    SeedRow("model_parallel.row_split_elements", "128000",
            lambda: parallelism.post_model_parallel_elements(128, 1000, 500, "rows"), "elements", MP_SRC,
            note="Split along the first dimension: 128 x 500 partial sums forward, 128 x 500 of the "
                 "input gradient backward.",
            note_if_differs="128 x 500 forward plus 128 x 500 backward."),
    SeedRow("model_parallel.column_split_elements", "160000",
            lambda: parallelism.post_model_parallel_elements(128, 1000, 500, "columns"), "elements",
            MP_SRC,
            note="Split along the second dimension: 128 x 250 outputs forward, 128 x 1000 partial input "
                 "gradients backward.",
            note_if_differs="128 x 250 forward plus 128 x 1000 backward."),
    SeedRow("scaling.v100_8x_speedup", "6.67", lambda: A100_8X_SPEEDUP / measured.POST_NETWORK_FACTOR["cnn"], "x",
            GUIDE_SRC,
            note="The guide's illustrative 7.00x for 8x A100, divided by 1.05 for the 8x V100 system's 5% "
                 "more overhead (CNNs).",
            note_if_differs="7.00 / 1.05."),
]
