"""Explorations, tables and figures of the chapter :doc:`/book/parallelism`."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from .. import _checks, charts, hardware, measured, memory, parallelism
from ..explore import Choice, Exploration, Slider, check_direct_calls
from ..units import GB, GiB

#: Message sizes of the bus-bandwidth exploration, bytes (1 KB to 16 GB).
MESSAGE_BYTES = 2.0 ** np.arange(10, 35)
#: Links offered by the explorations.
EXPLORE_LINKS = ("NVLink 4 (H100)", "NVLink 3 (A100)", "NVLink 5 (B200)", "PCIe 4.0 x16",
                 "InfiniBand NDR 4x")


def link_frame() -> pd.DataFrame:
    """The link table: name, kind, year and per-direction bandwidth in GB/s."""
    rows = [{"link": l.name, "kind": l.kind, "year": l.year,
             "GB/s per direction": f"{l.bandwidth / GB:,.2f}"} for l in parallelism.links()]
    return pd.DataFrame(rows).set_index("link")


# --- bus bandwidth against message size -------------------------------------------------------

def bus_bandwidth(link, ranks, latency_us):
    """Modelled all-reduce bus bandwidth (GB/s) against message size."""
    bw = parallelism.link(link).bandwidth
    busbw = parallelism.modelled_bus_bandwidth(MESSAGE_BYTES, ranks, bw, latency_us * 1e-6)
    return {"bytes": MESSAGE_BYTES, "bus_gbs": busbw / GB, "link_gbs": np.full(MESSAGE_BYTES.size, bw / GB)}


def _bytes_axis(title: str) -> alt.X:
    """A log-2 x axis of byte counts labelled in KiB, MiB and GiB."""
    expr = ("datum.value >= 1073741824 ? format(datum.value / 1073741824, 'd') + ' GiB' : "
            "datum.value >= 1048576 ? format(datum.value / 1048576, 'd') + ' MiB' : "
            "format(datum.value / 1024, 'd') + ' KiB'")
    return alt.X("bytes:Q", title=title, scale=alt.Scale(type="log", base=2),
                 axis=alt.Axis(values=[2.0**k for k in range(10, 35, 4)], labelExpr=expr))


def bus_bandwidth_chart(base):
    x = _bytes_axis("all-reduce size (log scale)")
    y = alt.Y("bus_gbs:Q", title="bus bandwidth (GB/s)", scale=alt.Scale(domain=[0, 950]))
    model = base.mark_line(point=True).encode(
        x=x, y=y, tooltip=[alt.Tooltip("bytes:Q", format="~s"), alt.Tooltip("bus_gbs:Q", format=".1f")])
    limit = base.mark_rule(strokeDash=[4, 3], color="#555555").encode(y="mean(link_gbs):Q")
    return (model + limit).properties(width=440, height=260)


BUS_BANDWIDTH = Exploration(
    name="bus_bandwidth",
    compute=bus_bandwidth,
    params=(Choice("link", "link", EXPLORE_LINKS, "NVLink 4 (H100)"),
            Choice("ranks", "GPUs", (2, 8, 64, parallelism.NVL72_GPUS), 8),
            Slider("latency_us", "latency per ring step", 1, 30, 1, 5, unit="µs", grid_step=5,
                   integer=True)),
    chart=bus_bandwidth_chart,
    description="Line chart: the bus bandwidth in GB/s (y) a ring all-reduce reaches against its "
                "size in bytes (x, log scale): latency-bound for small messages, approaching the "
                "link's bandwidth (dashed horizontal line) for large ones.",
)


# --- tensor against data parallelism -----------------------------------------------------------

def tp_vs_dp(log2_tokens, d_model, gpus):
    """Per GPU, for one MLP block (d_ff = 4 d) on H100s over NVLink 4: a step's compute time (forward and
    backward), and each strategy's all-reduce time (data parallelism with BF16 gradients)."""
    h100 = hardware.get("H100 SXM5")
    bw = parallelism.link("NVLink 4 (H100)").bandwidth
    tokens, d = 2.0**log2_tokens, float(d_model)
    weights = 2 * d * 4 * d
    compute = 6.0 * tokens * weights / gpus / h100.peak_flops("bf16")
    tp = parallelism.tensor_parallel_bytes(tokens, d, gpus) / bw
    dp = parallelism.data_parallel_bytes(weights, gpus) / bw
    what = ["compute (either way)", "tensor parallel: all-reduces, on the critical path",
            "data parallel: BF16 gradient all-reduce, can overlap the backward pass"]
    return {"what": what, "ms": 1e3 * np.array([compute, tp, dp])}


def tp_vs_dp_chart(base):
    return base.mark_bar().encode(
        x=alt.X("ms:Q", title="ms per step, one MLP block (log scale)",
                scale=alt.Scale(type="log", domain=[0.001, 100])),
        x2=alt.datum(0.001),
        y=alt.Y("what:N", title=None, sort=None),
        color=alt.Color("what:N", legend=None, sort=None),
        tooltip=["what:N", alt.Tooltip("ms:Q", format=".3f")],
    ).properties(width=360, height=120)


TP_VS_DP = Exploration(
    name="tp_vs_dp",
    compute=tp_vs_dp,
    params=(Slider("log2_tokens", "log2(tokens per step)", 10, 18, 1, 13, integer=True),
            Choice("d_model", "d_model", (1024, 4096, 8192), 4096),
            Choice("gpus", "GPUs", (2, 8), 8)),
    chart=tp_vs_dp_chart,
    description="Bar chart, log axis: milliseconds per step for one MLP block (x) in three bars: the "
                "compute per GPU (the same either way), the tensor-parallel all-reduces on the critical "
                "path, and the data-parallel all-reduce of BF16 gradients that can overlap the backward pass.",
)


# --- memory per GPU (ZeRO / FSDP) -----------------------------------------------------------------

#: Accelerators whose usable memory the memory exploration draws as lines.
MEMORY_LINES = ("RTX 4090", "A100 SXM4 40GB", "H100 SXM5", "B200")
PARTS = ("parameters", "gradients", "optimizer")


def zero_memory(params_b, gpus, stage):
    """GiB per GPU of parameters, gradients, optimizer state and their total for a model of ``params_b`` billion."""
    parts = parallelism.training_memory(params_b * 1e9, gpus, stage)
    return {"part": list(PARTS) + ["total"], "gib": [float(parts[p]) / GiB for p in PARTS + ("total",)]}


def _capacities() -> pd.DataFrame:
    return pd.DataFrame({"gpu": list(MEMORY_LINES),
                         "usable_gib": [hardware.get(n).usable_memory_bytes / GiB for n in MEMORY_LINES]})


def zero_memory_chart(base):
    order = list(PARTS) + ["total"]
    x = alt.X("gib:Q", title="GiB per GPU (log scale)", scale=alt.Scale(type="log", domain=[0.1, 10000]))
    bars = base.mark_bar().encode(
        x=x, x2=alt.datum(0.1), y=alt.Y("part:N", title=None, sort=order),
        color=alt.Color("part:N", legend=None, sort=order,
                        scale=alt.Scale(domain=order, range=[charts.BLUE, charts.ORANGE, charts.VERMILLION,
                                                             "#333333"])),
        tooltip=["part:N", alt.Tooltip("gib:Q", format=",.1f")],
    ).properties(width=440, height=140)
    caps = alt.Chart(_capacities()).mark_rule(strokeDash=[4, 3], color="#555555").encode(
        x=alt.X("usable_gib:Q", scale=alt.Scale(type="log", domain=[0.1, 10000])),
        tooltip=["gpu:N", alt.Tooltip("usable_gib:Q", format=".1f")])
    labels = alt.Chart(_capacities()).mark_text(angle=270, align="left", dx=4, dy=-4, fontSize=10).encode(
        x=alt.X("usable_gib:Q", scale=alt.Scale(type="log", domain=[0.1, 10000])), y=alt.value(0), text="gpu:N")
    return bars + caps + labels


ZERO_MEMORY = Exploration(
    name="zero_memory",
    compute=zero_memory,
    params=(Slider("params_b", "parameters (billions)", 1, 401, 10, 71, grid_step=50, integer=True),
            Choice("gpus", "GPUs", (1, 8, 64, 512), 8),
            Choice("stage", "ZeRO stage", (0, 1, 2, 3), 0)),
    chart=zero_memory_chart,
    description="Bar chart, log axis: GiB per GPU (x) of parameters, gradients, optimizer state and "
                "their total for mixed-precision Adam training (activations not counted), with the "
                "usable memory of four GPUs as labelled vertical dashed lines.",
)


# --- data-parallel scaling --------------------------------------------------------------------

GPU_COUNTS = 2.0 ** np.arange(0, 13)
#: Bounds of the data-parallel models' inputs called directly: parameters (billions), latency (µs).
MAX_PARAMS_B, MAX_LATENCY_US, MAX_TOKENS_PER_GPU = 1e6, 1e6, 1e9
#: The node of the scaling exploration: 8 H100 SXM5 on NVLink 4, one 400 Gb/s NDR port per GPU.
NODE_GPUS = 8


def buckets(nbytes):
    """How many of DDP's 25 MiB buckets a gradient of ``nbytes`` fills (the last one partly)."""
    nbytes = _checks.non_negative("nbytes", nbytes)
    return np.ceil(nbytes / parallelism.DDP_BUCKET_BYTES)


def _data_parallel_inputs(params_b, latency_us, grad_bytes) -> None:
    _checks.positive("params_b", _checks.scalar("params_b", params_b))
    _checks.in_range("latency_us", _checks.scalar("latency_us", latency_us), 0, MAX_LATENCY_US)
    _checks.in_range("grad_bytes", _checks.scalar("grad_bytes", grad_bytes), 1, 8)
    if params_b > MAX_PARAMS_B:
        raise ValueError(f"params_b must be in (0, {MAX_PARAMS_B:g}] billion (got {params_b:g})")


@_checks.finite_result
def dp_scaling(params_b, tokens_per_gpu, mfu_pct, latency_us, grad_bytes=4):
    """Data-parallel efficiency and speedup against GPU count on H100 nodes: a hierarchical
    all-reduce of ``grad_bytes`` per parameter, sent in DDP's 25 MiB buckets, pipelined.

    Also beyond the exploration's sliders: ``latency_us`` = 0 is a latency-free network.
    """
    _data_parallel_inputs(params_b, latency_us, grad_bytes)
    tokens = _checks.scalar("tokens_per_gpu", tokens_per_gpu)
    _checks.in_range("tokens_per_gpu", tokens, 1, MAX_TOKENS_PER_GPU)
    _checks.in_range("mfu_pct", _checks.scalar("mfu_pct", mfu_pct), 0.1, 100)
    return _dp_scaling(params_b, tokens_per_gpu, mfu_pct, latency_us, grad_bytes)


def _dp_scaling(params_b, tokens_per_gpu, mfu_pct, latency_us, grad_bytes=4):
    h100 = hardware.get("H100 SXM5")
    params = params_b * 1e9
    compute = 6.0 * params * tokens_per_gpu / (h100.peak_flops("bf16") * mfu_pct / 100)
    g = np.minimum(GPU_COUNTS, NODE_GPUS)
    nodes = np.maximum(GPU_COUNTS / NODE_GPUS, 1)
    nbytes = grad_bytes * params
    comm = parallelism.hierarchical_all_reduce_seconds(
        nbytes, g, nodes, parallelism.link("NVLink 4 (H100)").bandwidth,
        parallelism.link("InfiniBand NDR 4x").bandwidth, latency_us * 1e-6, latency_us * 1e-6,
        buckets=buckets(nbytes))
    eff = parallelism.scaling_efficiency(compute, comm)
    return {"gpus": GPU_COUNTS, "efficiency": eff, "speedup": eff * GPU_COUNTS,
            "comm_ms": comm * 1e3, "compute_ms": np.full(GPU_COUNTS.size, compute * 1e3)}


@_checks.finite_result
def bucket_times(params_b, gpus, latency_us, grad_bytes=4) -> dict:
    """One DDP bucket's two times in :func:`dp_scaling`'s pipelined hierarchical all-reduce, µs.

    ``nvlink_us``: the reduce-scatter and all-gather inside the node, which share the NVLink
    links; ``network_us``: the faster of a ring and a tree across the nodes on each GPU's 1/g
    share; ``nvlink_latency_us``: the NVLink phases' latencies alone. The model charges the
    buckets as one pipeline paced by the busier of the two (NCCL itself runs the buckets' calls
    one after another and overlaps the two only within a call).
    Explained in :doc:`/book/parallelism` (section "Scaling out: many nodes").
    """
    _data_parallel_inputs(params_b, latency_us, grad_bytes)
    gpus = _checks.count("gpus", gpus, GPU_COUNTS.max())
    nbytes = grad_bytes * params_b * 1e9
    piece = nbytes / buckets(nbytes)
    g = min(gpus, NODE_GPUS)
    nodes = max(gpus // NODE_GPUS, 1)
    alpha = latency_us * 1e-6
    nv = parallelism.link("NVLink 4 (H100)").bandwidth
    net = parallelism.link("InfiniBand NDR 4x").bandwidth
    inside = sum(parallelism.collective_seconds(piece, g, nv, alpha, op)
                 for op in ("reduce_scatter", "all_gather"))
    across = min(parallelism.collective_seconds(piece / g, nodes, net, alpha),
                 parallelism.tree_all_reduce_seconds(piece / g, nodes, net, alpha))
    lat = sum(parallelism.collective_seconds(0.0, g, nv, alpha, op)
              for op in ("reduce_scatter", "all_gather"))
    return {"nvlink_us": 1e6 * float(inside), "network_us": 1e6 * float(across),
            "nvlink_latency_us": 1e6 * float(lat)}


def dp_scaling_chart(base):
    x = alt.X("gpus:Q", title="GPUs (8 per node)", scale=alt.Scale(type="log", base=2))
    eff = base.mark_line(point=True).encode(
        x=x, y=alt.Y("efficiency:Q", title="scaling efficiency", scale=alt.Scale(domain=[0, 1.05])),
        tooltip=["gpus:Q", alt.Tooltip("efficiency:Q", format=".3f"), alt.Tooltip("speedup:Q", format=",.0f"),
                 alt.Tooltip("comm_ms:Q", format=".2f"), alt.Tooltip("compute_ms:Q", format=".2f")])
    return eff.properties(width=440, height=240)


DP_SCALING = Exploration(
    name="dp_scaling",
    compute=_dp_scaling,
    params=(Slider("params_b", "parameters (billions)", 0.1, 10.1, 0.5, 1.1, grid_step=5),
            Slider("tokens_per_gpu", "tokens per GPU per step", 512, 16384, 512, 1024, grid_step=8192,
                   integer=True),
            Slider("mfu_pct", "MFU", 10, 70, 5, 40, unit="%", grid_step=30, integer=True),
            Slider("latency_us", "latency per ring step", 1, 30, 1, 5, unit="µs", grid_step=29,
                   integer=True),
            Slider("grad_bytes", "bytes per gradient value (2 BF16, 4 FP32)", 2, 4, 2, 4, grid_step=2,
                   integer=True)),
    chart=dp_scaling_chart,
    description="Line chart: data-parallel scaling efficiency (y, 0 to 1) against the number of GPUs "
                "(x, log scale, 8 per H100 node), with FP32 or BF16 gradients all-reduced in 25 MiB "
                "buckets over NVLink inside a node and 400 Gb/s InfiniBand between nodes, hidden "
                "behind the backward pass when they can be.",
)


# --- measured reality -------------------------------------------------------------------------

def dle_scaling_frame() -> pd.DataFrame:
    """Measured 8-GPU over 1-GPU throughput of the DeepLearningExamples rows, A100 and V100 16GB."""
    nets = {"maskrcnn": "Mask R-CNN", "transformer": "Transformer", "seresnext101_pyt": "SE-ResNeXt101 (PyTorch)",
            "seresnext101_tf": "SE-ResNeXt101 (TensorFlow)"}
    rows = []
    for key, label in nets.items():
        row = {"network": label}
        for gpu, name in (("a100", "8x A100"), ("v100_16", "8x V100")):
            row[name] = (measured.measurement(f"dle.{key}.{gpu}.8gpu")
                         / measured.measurement(f"dle.{key}.{gpu}.1gpu"))
        row["A100 / V100 scaling"] = row["8x A100"] / row["8x V100"]
        batches = [next(r["batch"] for r in measured.measurements(f"dle.{key}.{gpu}.8gpu"))
                   for gpu in ("a100", "v100_16")]
        row["batch per GPU (A100 / V100)"] = f"{batches[0]:g} / {batches[1]:g}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("network").round(3)


#: NCCL's protocol overhead on NVLink: about 20% of the line rate (an NCCL maintainer,
#: nccl-tests issue 212), so a ring reaches about 80% of the link as bus bandwidth.
PROTOCOL_EFFICIENCY = 0.8


def collective_frame(prefix: str = "nccl.a100x8.all_reduce.", link_name: str = "NVLink 3 (A100)") -> pd.DataFrame:
    """A measured all-reduce sweep against the model at the link's nominal rate and at 80% of it.

    The model's latency per ring step is the smallest message's measured time over its 2(n-1)
    steps (that message is all latency), not a fit to the curve.
    """
    link_name = _checks.choice("link_name", link_name, [link.name for link in parallelism.links()])
    rows = sorted(measured.collectives(_checks.text("prefix", prefix)), key=lambda r: r["size_bytes"])
    if not rows:
        raise ValueError(f"prefix {prefix!r:.60} starts no measured collective's id "
                         "(e.g. nccl.a100x8.all_reduce.)")
    size = np.array([r["size_bytes"] for r in rows])
    busbw = np.array([r["busbw_gbs"] for r in rows]) * GB
    n = int(rows[0]["gpus"])
    smallest = size[0] / (busbw[0] / parallelism.bus_factor(n))
    alpha = float(smallest / (2 * (n - 1)))
    bw = parallelism.link(link_name).bandwidth
    return pd.DataFrame({
        "bytes": size, "measured": busbw / GB,
        "model, nominal link": parallelism.modelled_bus_bandwidth(size, n, bw, alpha) / GB,
        "model, 80% of link": parallelism.modelled_bus_bandwidth(size, n, PROTOCOL_EFFICIENCY * bw, alpha) / GB,
        "latency_us": alpha * 1e6})


def collective_chart(frame: pd.DataFrame):
    """Measured bus bandwidth (points) and the two model curves against message size."""
    _checks.table("frame", frame, ("bytes", "latency_us", "measured", "model, nominal link",
                                   "model, 80% of link"))
    long = frame.melt(["bytes", "latency_us"], var_name="series", value_name="gbs")
    series = ["measured", "model, nominal link", "model, 80% of link"]
    x = _bytes_axis("all-reduce size (log scale)")
    y = alt.Y("gbs:Q", title="bus bandwidth (GB/s)")
    color = alt.Color("series:N", title=None, sort=series, scale=alt.Scale(domain=series,
                      range=[charts.BLACK, charts.BLUE, charts.VERMILLION]))
    dash = alt.StrokeDash("series:N", title=None, sort=series,
                          scale=alt.Scale(domain=series, range=[[1, 0], [1, 0], [6, 3]]))
    tip = ["series:N", alt.Tooltip("bytes:Q", format="~s"), alt.Tooltip("gbs:Q", format=".1f")]
    lines = alt.Chart(long[long.series != "measured"]).mark_line().encode(
        x=x, y=y, color=color, strokeDash=dash, tooltip=tip)
    points = alt.Chart(long[long.series == "measured"]).mark_point(filled=True).encode(
        x=x, y=y, color=color, shape=alt.Shape("series:N", title=None, sort=series), tooltip=tip)
    return (lines + points).properties(
        width=440, height=260,
        description=f"Line chart: all-reduce bus bandwidth in GB/s (y) against message size (x, log scale); "
                    f"black dots are the {int((long.series == 'measured').sum())} measured points, the blue "
                    "solid line the model at the nominal link bandwidth and the vermillion dashed line the "
                    "model at 80% of it.")


@_checks.finite_result
def small_batch_intensity(batch, d=4096, accelerator="H100 SXM5", dtype="bf16") -> dict:
    """A (batch x d) @ (d x d) GEMM's intensity against the accelerator's ridge point."""
    batch, d = _checks.count("batch", batch), _checks.count("d", d)
    acc = hardware.get(accelerator)
    return {"intensity": float(memory.arithmetic_intensity(batch, d, d, dtype)),
            "ridge": float(acc.ridge_point(dtype))}


# --- today's parallelism: experts, sequences, activations -------------------------------------

#: Mixtral 8x7B (Jiang et al. 2024, Table 1 and abstract): 8 experts, top-2, SwiGLU experts;
#: "47B" parameters in all, "13B" active per token.
MIXTRAL_8X7B = {"name": "Mixtral 8x7B", "layers": 32, "d_model": 4096, "d_ff": 14336, "experts": 8,
                "top_k": 2, "total_params": 47e9, "active_params": 13e9}
#: DeepSeek-V3 (DeepSeek-AI 2024, section 4.2): 61 layers, width 7168, 1 shared and 256 routed
#: experts of width 2048, 8 routed experts per token, 671B parameters, 37B active; 64-way expert
#: parallelism (section 3.2).
DEEPSEEK_V3 = {"name": "DeepSeek-V3", "layers": 61, "d_model": 7168, "d_ff": 2048, "experts": 256,
               "top_k": 8, "total_params": 671e9, "active_params": 37e9}
#: Expert-parallel degree of each MoE model in :func:`moe_frame`: all of Mixtral's experts, one per
#: GPU of an H100 node; DeepSeek-V3's 64-way expert parallelism.
MOE_RANKS = {"Mixtral 8x7B": 8, "DeepSeek-V3": 64}


def _ridges() -> dict:
    """FLOP per byte of link: BF16 dense peak over per-direction bandwidth."""
    h100 = hardware.get("H100 SXM5").peak_flops("bf16")
    b200 = hardware.get("B200").peak_flops("bf16")
    return {"H100, NVLink 4": h100 / parallelism.link("NVLink 4 (H100)").bandwidth,
            "H100, NDR port": h100 / parallelism.link("InfiniBand NDR 4x").bandwidth,
            "B200, NVLink 5": b200 / parallelism.link("NVLink 5 (B200)").bandwidth}


def moe_frame() -> pd.DataFrame:
    """Per MoE model: the experts' FLOP per all-to-all byte, the ridge of each link, and total / active parameters."""
    rows = []
    for model in (MIXTRAL_8X7B, DEEPSEEK_V3):
        n = MOE_RANKS[model["name"]]
        row = {"model": model["name"], "experts (top-k)": f"{model['experts']} ({model['top_k']})",
               "EP GPUs": n,
               "FLOP per all-to-all byte": float(parallelism.expert_parallel_intensity(model["d_ff"], n))}
        for name, ridge in _ridges().items():
            row[f"ridge {name}"] = ridge
        row["total / active params"] = model["total_params"] / model["active_params"]
        rows.append(row)
    return pd.DataFrame(rows).set_index("model").round(1)


def deepseek_v3_network_frame(nodes_per_token: int = 4, dispatch_bytes: float = 1.0,
                              combine_bytes: float = 2.0) -> pd.DataFrame:
    """DeepSeek-V3's all-to-all time over its experts' math, one 400 Gb/s port per H100, as
    :func:`moe_frame` counts it and then with each factor the plain model leaves out.

    Node-limited routing (DeepSeek-AI 2024, section 2.1.2): a token reaches at most
    ``nodes_per_token`` nodes and is sent once per node, so the network carries at most that
    many copies of its d activations instead of top_k (n-1)/n. FP8 dispatch (section 3.3.3):
    ``dispatch_bytes`` per value out, ``combine_bytes`` back, counted the same way in the
    backward pass. The shared expert adds one expert's math per token and no network bytes.
    Rows are cumulative. Explained in :doc:`/book/parallelism` (section "Expert parallelism").
    """
    model = DEEPSEEK_V3
    n, k = MOE_RANKS[model["name"]], model["top_k"]
    nodes_per_token = _checks.count("nodes_per_token", nodes_per_token, n // NODE_GPUS)
    for name, value in (("dispatch_bytes", dispatch_bytes), ("combine_bytes", combine_bytes)):
        _checks.in_range(name, _checks.positive(name, _checks.scalar(name, value)), 0, 8)
    base = (_ridges()["H100, NDR port"]
            / float(parallelism.expert_parallel_intensity(model["d_ff"], n)))
    factors = (("as the model counts it (BF16, every expert over the network)", 1.0),
               (f"node-limited routing, at most {nodes_per_token} nodes per token",
                nodes_per_token / (k * (n - 1) / n)),
               ("FP8 dispatch, BF16 combine", (dispatch_bytes + combine_bytes) / 2 / 2.0),
               ("shared expert's math added", k / (k + 1)))
    rows, share = [], base
    for what, factor in factors:
        share *= factor
        rows.append({"what": what, "factor": factor, "all-to-all / expert math": share})
    return pd.DataFrame(rows).set_index("what").round(3)


#: Llama 3 405B (Grattafiori et al. 2024, Table 3) and the two 8K-sequence rows of its Table 4:
#: GPUs, TP, CP, PP, DP, sequence length, batch size per DP group (sequences), TFLOPs/GPU, MFU.
LLAMA3_405B = {"params": 405e9, "layers": 126, "d_model": 16384, "d_ff": 53248, "heads": 128,
               "kv_heads": 8}
LLAMA3_TABLE4 = ({"gpus": 8192, "tp": 8, "cp": 1, "pp": 16, "dp": 64, "seq": 8192, "batch_per_dp": 32,
                  "tflops": 430, "mfu": 0.43},
                 {"gpus": 16384, "tp": 8, "cp": 1, "pp": 16, "dp": 128, "seq": 8192, "batch_per_dp": 16,
                  "tflops": 400, "mfu": 0.41})


@_checks.finite_result
def llama3_case(row: dict, grad_bytes: float = 4.0, interleave: int = 2) -> dict:
    """One Llama 3 405B configuration through the chapter's models, per GPU, on H100s.

    The paper states the gradient precision (section 3.3.2): gradients accumulate in FP32 over
    the micro-batches and are reduce-scattered in FP32, so by default ``grad_bytes`` is 4, the
    weights are all-gathered in BF16, and each GPU holds an FP32 gradient buffer of its whole
    tensor x pipeline shard, unsharded across the micro-batches. Weights stay gathered within a
    step (the paper's FSDP does not reshard them), so the training state is BF16 weights, that
    buffer and Adam state sharded over the DP group.

    Assumptions (the paper states none of them): one sequence per micro-batch, so
    ``batch_per_dp`` micro-batches per step; 1F1B without interleaving for the bubble and the
    activations; sequence parallelism with FlashAttention (the selective-recomputation
    formula); one 400 Gb/s port per GPU; tensor-parallel traffic on NVLink 4 at its nominal rate,
    not overlapped. An idle micro-batch slot of the bubble lasts a whole micro-batch, its
    tensor-parallel all-reduces included. The FP32 reduce-scatter, once per step, hides only
    behind the last micro-batch's backward pass (2/3 of ``micro_s``, one micro-batch's math at
    peak) and the BF16 all-gather only behind the first one's forward pass (1/3); the rest of
    each, summed in ``dp_exposed_s``, adds to the step. ``interleave_factor`` is Korthikanti et al.'s
    1 + (p-1)/(p v) on the first stage's activations for ``interleave`` = v chunks per stage.
    Explained in :doc:`/book/parallelism` (section "One published run: Llama 3 405B").
    """
    if not isinstance(row, dict):
        raise ValueError(f"row must be a dict like a row of LLAMA3_TABLE4 (got {row!r:.60})")
    for key in ("gpus", "tp", "pp", "dp", "seq", "batch_per_dp"):
        _checks.count(f"row[{key!r}]", row.get(key))
    _checks.scalar("row['mfu']", row.get("mfu"))
    grad_bytes = _checks.in_range("grad_bytes", _checks.scalar("grad_bytes", grad_bytes), 1, 8)
    interleave = _checks.count("interleave", interleave)
    model = LLAMA3_405B
    h100 = hardware.get("H100 SXM5")
    peak = h100.peak_flops("bf16")
    shard = model["params"] / (row["tp"] * row["pp"])
    # ZeRO-1 in the calculator's terms: the FP32 gradient buffer is the whole shard's
    state = parallelism.training_memory(shard, row["dp"], stage=1,
                                        grad_bytes=grad_bytes)["total"]
    per_layer = parallelism.activation_memory(row["seq"], 1, model["d_model"], model["heads"], row["tp"],
                                              "selective", sequence_parallel=True)
    # 1F1B: the first stage keeps p micro-batches of its L/p layers in flight, L layers' worth
    activations = model["layers"] * per_layer
    tokens = row["dp"] * row["batch_per_dp"] * row["seq"]
    compute = 6.0 * model["params"] * tokens / row["gpus"] / peak
    bubble = parallelism.pipeline_bubble(row["pp"], row["batch_per_dp"])["of_compute"]
    layers_per_stage = model["layers"] / row["pp"]
    tp_bytes = layers_per_stage * 2 * parallelism.tensor_parallel_bytes(
        row["batch_per_dp"] * row["seq"], model["d_model"], row["tp"])
    tp = tp_bytes / parallelism.link("NVLink 4 (H100)").bandwidth
    # reduce-scatter of the gradients plus all-gather of the BF16 weights: half an all-reduce each
    dp_bytes = 0.5 * (parallelism.data_parallel_bytes(shard, row["dp"], grad_bytes)
                      + parallelism.data_parallel_bytes(shard, row["dp"], 2.0))
    net = parallelism.link("InfiniBand NDR 4x").bandwidth
    dp = dp_bytes / net
    # the buffer is reduce-scattered once per step, after the last micro-batch's backward, and the
    # weights are all-gathered once, before the first micro-batch's forward: each phase can hide
    # only behind that one micro-batch's math on this stage
    rs = 0.5 * parallelism.data_parallel_bytes(shard, row["dp"], grad_bytes) / net
    ag = 0.5 * parallelism.data_parallel_bytes(shard, row["dp"], 2.0) / net
    micro = compute / row["batch_per_dp"]
    exposed_dp = max(0.0, rs - 2.0 / 3.0 * micro) + max(0.0, ag - 1.0 / 3.0 * micro)
    step = (compute + float(tp)) * (1 + bubble) + exposed_dp
    p = row["pp"]
    return {"state_gib": float(state) / GiB, "activations_gib": float(activations) / GiB,
            "usable_gib": h100.usable_memory_bytes / GiB,
            "weights_gib": 2.0 * shard / GiB, "grad_buffer_gib": grad_bytes * shard / GiB,
            "adam_gib": 12.0 * shard / row["dp"] / GiB,
            "interleave_factor": 1 + (p - 1) / (p * interleave),
            "tokens": tokens, "compute_s": compute, "bubble": float(bubble),
            "tp_gb": float(tp_bytes) / GB, "tp_s": float(tp), "dp_gb": float(dp_bytes) / GB, "dp_s": float(dp),
            "rs_s": float(rs), "ag_s": float(ag), "micro_s": float(micro),
            "dp_exposed_s": float(exposed_dp),
            "mfu_bound": float(compute / step), "mfu_reported": row["mfu"]}


def llama3_frame() -> pd.DataFrame:
    """:func:`llama3_case` for the two 8K-sequence rows of the paper's Table 4."""
    rows = []
    for row in LLAMA3_TABLE4:
        case = llama3_case(row)
        rows.append({"GPUs (DP)": f"{row['gpus']:,} ({row['dp']})",
                     "state GiB": case["state_gib"], "activations GiB": case["activations_gib"],
                     "compute at peak, s": case["compute_s"], "bubble / compute": case["bubble"],
                     "TP all-reduces, s": case["tp_s"], "DP traffic, s": case["dp_s"],
                     "DP exposed, s": case["dp_exposed_s"],
                     "MFU, these assumptions": case["mfu_bound"], "MFU reported": case["mfu_reported"]})
    return pd.DataFrame(rows).set_index("GPUs (DP)").round(2)


EXPLORATIONS = [BUS_BANDWIDTH, TP_VS_DP, ZERO_MEMORY, DP_SCALING]


check_direct_calls(globals())
