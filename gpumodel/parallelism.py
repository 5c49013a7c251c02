"""Training on many GPUs: collectives, data, tensor, pipeline and sharded parallelism.

The communication model is alpha-beta: a collective over ``ranks`` GPUs costs a latency
``alpha`` per step plus its bytes over the link bandwidth. Sizes are bytes, bandwidths
decimal bytes per second, times seconds; memory per GPU is in bytes (compare it with
:attr:`gpumodel.hardware.Accelerator.usable_memory_bytes`).
Explained in :doc:`/book/parallelism`.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from . import _checks
from .units import GB

#: Collectives, with the bus-bandwidth factor of NCCL's tests (bytes each GPU's link carries per
#: byte of the operation) and the number of ring steps.
COLLECTIVES = {"all_reduce": "2(n-1)/n", "reduce_scatter": "(n-1)/n", "all_gather": "(n-1)/n",
               "broadcast": "1"}


def _factor(op: str, n):
    return {"all_reduce": 2.0 * (n - 1) / n, "reduce_scatter": (n - 1) / n,
            "all_gather": (n - 1) / n, "broadcast": np.ones_like(n)}[op]


#: Algorithms :func:`collective_seconds` models: a ring, and NVLink SHARP (an all-reduce that
#: NVSwitch computes: each GPU sends its array once and receives the sum once).
ALGORITHMS = ("ring", "nvls")
#: NCCL's efficiency factor for NVLink SHARP on Hopper: its tuning model charges an NVLS
#: collective 0.85 of the NVLink bandwidth it charges a ring (``nvlsEfficiency`` in
#: ``src/graph/tuning.cc`` of NCCL 2.28.3; 0.74 on Blackwell; 2.27 applied 5/6).
NVLS_EFFICIENCY = 0.85
#: NCCL's latency for an NVLS collective inside a node, seconds (``hwLatencies``, NVLink,
#: NVLS, Simple protocol, in ``src/graph/tuning.cc``): one step, not 2(n-1).
NVLS_LATENCY_SECONDS = 25e-6
#: The bandwidth NCCL counts for one NVLink of a Hopper GPU, bytes/s (``SM90_NVLINK_BW 20.6`` in
#: ``src/graph/topo.h`` of NCCL 2.28.3), against the link's 25 GB/s line rate per direction.
NCCL_SM90_NVLINK_BW = 20.6e9
NVLINK4_LINK_BW = 25e9


def _steps(op: str, n):
    return {"all_reduce": 2.0 * (n - 1), "reduce_scatter": n - 1.0, "all_gather": n - 1.0,
            "broadcast": n - 1.0}[op]


@_checks.finite_result
def bus_factor(ranks, op: str = "all_reduce"):
    """NCCL's bus-bandwidth factor of ``op`` over ``ranks`` GPUs: 2(n-1)/n for all-reduce, (n-1)/n for all-gather and reduce-scatter, 1 for broadcast.

    Explained in :doc:`/book/parallelism` (section "Today's model: latency plus bytes over bandwidth").
    """
    op = _checks.choice("op", op, COLLECTIVES)
    return _factor(op, _checks.positive_int("ranks", ranks))


@_checks.finite_result
def collective_seconds(nbytes, ranks, bandwidth, latency=0.0, op: str = "all_reduce",
                       algorithm: str = "ring"):
    """Time of a collective over ``ranks`` GPUs on ``nbytes`` (the whole array), in seconds.

    A ring: steps x ``latency`` + :func:`bus_factor` x nbytes / ``bandwidth``; an all-reduce
    is a reduce-scatter and an all-gather, 2(n-1) steps each moving nbytes / n per GPU per
    direction. ``algorithm="nvls"`` (all-reduce only): NVLink SHARP, ``latency`` once plus
    (1 + 1/n) x nbytes / ``bandwidth``, since each GPU sends its array to the switch once
    and receives the summed array once. One GPU communicates nothing.
    Explained in :doc:`/book/parallelism` (section "Today's model: latency plus bytes over bandwidth";
    NVLS in "Measured reality").
    """
    op = _checks.choice("op", op, COLLECTIVES)
    algorithm = _checks.choice("algorithm", algorithm, ALGORITHMS)
    if algorithm == "nvls" and op != "all_reduce":
        raise ValueError(f"algorithm 'nvls' is modelled for op 'all_reduce' only (got op {op!r})")
    s = _checks.non_negative("nbytes", nbytes)
    n = _checks.positive_int("ranks", ranks)
    bw = _checks.positive("bandwidth", bandwidth)
    alpha = _checks.non_negative("latency", latency)
    if algorithm == "nvls":
        return np.where(n > 1, alpha + (1.0 + 1.0 / n) * s / bw, 0.0)
    return _ring(op, s, n, bw, alpha)


def _ring(op, s, n, bw, alpha):
    """The ring of :func:`collective_seconds` on checked arrays."""
    return np.where(n > 1, _steps(op, n) * alpha + _factor(op, n) * s / bw, 0.0)


@_checks.finite_result
def bus_bandwidth(nbytes, seconds, ranks, op: str = "all_reduce"):
    """NCCL's bus bandwidth of a measured collective: nbytes / seconds x :func:`bus_factor`, in bytes/s.

    Comparable with the link's bandwidth whatever the number of GPUs.
    Explained in :doc:`/book/parallelism` (section "Today's model: latency plus bytes over bandwidth").
    """
    s = _checks.positive("nbytes", nbytes)
    t = _checks.positive("seconds", seconds)
    return s / t * bus_factor(ranks, op)


@_checks.finite_result
def modelled_bus_bandwidth(nbytes, ranks, bandwidth, latency, op: str = "all_reduce",
                           algorithm: str = "ring"):
    """The bus bandwidth :func:`collective_seconds` predicts for a message of ``nbytes``, in bytes/s.

    A ring's tends to ``bandwidth`` for large messages, NVLS's to 2(n-1)/(n+1) times it;
    small messages are latency-bound.
    Explained in :doc:`/book/parallelism` (section "Today's model: latency plus bytes over bandwidth").
    """
    n = _checks.positive_int("ranks", ranks)
    if np.any(n < 2):
        raise ValueError("ranks must be >= 2 for a bus bandwidth (one GPU communicates nothing)")
    seconds = collective_seconds(nbytes, n, bandwidth, latency, op, algorithm)
    return bus_bandwidth(nbytes, seconds, n, op)


@_checks.finite_result
def half_bandwidth_size(ranks, bandwidth, latency, op: str = "all_reduce"):
    """The message size, in bytes, at which a ring collective reaches half of the link's bandwidth.

    Where its latency term equals its bandwidth term: steps x latency x bandwidth / :func:`bus_factor`
    (Hockney's half-performance length). Explained in :doc:`/book/parallelism` (section "Today's model: latency plus bytes over bandwidth").
    """
    op = _checks.choice("op", op, COLLECTIVES)
    n = _checks.positive_int("ranks", ranks)
    if np.any(n < 2):
        raise ValueError("ranks must be >= 2 (one GPU communicates nothing)")
    bw = _checks.positive("bandwidth", bandwidth)
    alpha = _checks.non_negative("latency", latency)
    return _steps(op, n) * alpha * bw / _factor(op, n)


@_checks.finite_result
def hierarchical_all_reduce_seconds(nbytes, gpus_per_node, nodes, node_bandwidth, network_bandwidth,
                                    node_latency=0.0, network_latency=0.0, buckets=1, call_fill=0.0):
    """All-reduce over nodes x gpus_per_node GPUs in three phases, in seconds.

    Reduce-scatter inside each node (``node_bandwidth``, e.g. NVLink), an all-reduce of each
    GPU's 1/g share across the nodes over its own network link (``network_bandwidth`` per GPU),
    and an all-gather inside the node. Across nodes the faster of a ring and a tree runs, as
    NCCL's tuner picks (:func:`tree_all_reduce_seconds`). With ``buckets`` = k > 1 the array
    goes as k equal buckets, each paying its own latencies, and the node's and the network's
    work overlap as in a pipeline: k x max(a, b) + min(a, b), with a and b one bucket's node
    and network times (k = 1: a + b). That is an estimate, not a bound either way: NCCL runs
    successive calls one after another and overlaps the two kinds of work only within a call,
    chunk by chunk, so each call pays its own pipeline fill, which the formula charges once.
    ``call_fill`` = f in [0, 1] charges each of the other k - 1 calls f x min(a, b) of fill too:
    k x max(a, b) + (1 + (k - 1) f) x min(a, b); f = 1 is k (a + b), no overlap at all.
    Explained in :doc:`/book/parallelism` (section "Scaling out: many nodes").
    """
    g = _checks.positive_int("gpus_per_node", gpus_per_node)
    nodes = _checks.positive_int("nodes", nodes)
    s = _checks.non_negative("nbytes", nbytes)
    node_bw = _checks.positive("node_bandwidth", node_bandwidth)
    net_bw = _checks.positive("network_bandwidth", network_bandwidth)
    node_alpha = _checks.non_negative("node_latency", node_latency)
    net_alpha = _checks.non_negative("network_latency", network_latency)
    k = _checks.positive_int("buckets", buckets)
    fill = _checks.in_range("call_fill", _checks.scalar("call_fill", call_fill), 0, 1)
    piece = s / k
    inside = (_ring("reduce_scatter", piece, g, node_bw, node_alpha)
              + _ring("all_gather", piece, g, node_bw, node_alpha))
    across = np.minimum(_ring("all_reduce", piece / g, nodes, net_bw, net_alpha),
                        _tree(piece / g, nodes, net_bw, net_alpha))
    return k * np.maximum(inside, across) + (1 + (k - 1) * fill) * np.minimum(inside, across)


def _tree(s, n, bw, alpha):
    """The tree of :func:`tree_all_reduce_seconds` on checked arrays."""
    return np.where(n > 1, 2.0 * np.ceil(np.log2(np.maximum(n, 1.0))) * alpha + 2.0 * s / bw, 0.0)


@_checks.finite_result
def tree_all_reduce_seconds(nbytes, ranks, bandwidth, latency=0.0):
    """A tree all-reduce of ``nbytes`` over ``ranks``, in seconds: 2 ceil(log2 n) x latency + 2 x nbytes / bandwidth.

    A reduction up a tree and a broadcast down it, each ceil(log2 n) hops deep, with every
    GPU sending and receiving the whole array once each way (NCCL's double binary tree; its
    tuning model charges 2 log2(nodes) network latencies and half the bus bandwidth as the
    algorithm's rate). Fewer latencies than a ring's 2(n-1), more bytes than its 2(n-1)/n.
    Explained in :doc:`/book/parallelism` (section "Scaling out: many nodes").
    """
    s = _checks.non_negative("nbytes", nbytes)
    n = _checks.positive_int("ranks", ranks)
    bw = _checks.positive("bandwidth", bandwidth)
    alpha = _checks.non_negative("latency", latency)
    return _tree(s, n, bw, alpha)


# --- links ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    """An interconnect: its per-direction data rate in bytes/s and its source."""
    name: str
    kind: str
    bandwidth: float
    year: int
    source: str


@lru_cache(maxsize=1)
def _links() -> dict:
    text = resources.files("gpumodel.data").joinpath("links.csv").read_text()
    out = {}
    for line, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            out[row["name"]] = Link(row["name"], row["kind"], float(row["bandwidth_gbs"]) * GB,
                                    int(row["year"]), row["source"])
        except (KeyError, ValueError) as error:
            raise ValueError(f"links.csv line {line}: {error}") from None
    return out


def links() -> list:
    """Every :class:`Link` of ``data/links.csv``, in file order.

    Explained in :doc:`/book/parallelism` (section "Today's model: latency plus bytes over bandwidth").
    """
    return list(_links().values())


def link(link: str) -> Link:
    """The :class:`Link` called ``link`` (unknown names list the known ones and suggest the closest).

    Explained in :doc:`/book/parallelism` (section "Today's model: latency plus bytes over bandwidth").
    """
    return _links()[_checks.choice("link", link, _links())]


# --- data parallelism -------------------------------------------------------------------------

#: Bytes per gradient value that frameworks all-reduce in mixed-precision training by default:
#: FP32 (PyTorch DDP under autocast keeps FP32 parameters and so FP32 gradients; Megatron-LM
#: accumulates and all-reduces BF16 models' gradients in FP32 unless --grad-reduce-in-bf16).
FP32_GRAD_BYTES = 4.0
#: PyTorch DDP's default gradient bucket (``bucket_cap_mb=25``), bytes.
DDP_BUCKET_BYTES = 25 * 2**20

@_checks.finite_result
def naive_gradient_seconds(nbytes, gpus_per_node, nodes, network_bandwidth):
    """The 2014 post's scheme: every GPU sends its whole gradient to every GPU in other nodes, one GPU per node at a time.

    gpus_per_node x (nodes - 1) x gpus_per_node transfers of ``nbytes`` over one shared network
    card; the transfers inside a node (PCIe) overlap with them. In seconds.
    Explained in :doc:`/book/parallelism` (section "The 2014 posts as a worked case").
    """
    s = _checks.non_negative("nbytes", nbytes)
    g = _checks.positive_int("gpus_per_node", gpus_per_node)
    nodes = _checks.positive_int("nodes", nodes)
    bw = _checks.positive("network_bandwidth", network_bandwidth)
    return g * (nodes - 1) * g * s / bw


@_checks.finite_result
def data_parallel_step(compute_seconds, comm_seconds, overlap=1.0, backward_share=2.0 / 3.0):
    """Step time when the gradient all-reduce can hide behind the backward pass, in seconds.

    compute + max(0, comm - overlap x backward_share x compute): ``overlap`` in [0, 1] is how
    much of the backward pass the communication can run under (buckets of gradients are sent as
    soon as they are ready; the last bucket never overlaps, so real runs stay below 1).
    Explained in :doc:`/book/parallelism` (section "Data parallelism").
    """
    c = _checks.non_negative("compute_seconds", compute_seconds)
    m = _checks.non_negative("comm_seconds", comm_seconds)
    f = _checks.in_range("overlap", overlap, 0.0, 1.0)
    b = _checks.in_range("backward_share", backward_share, 0.0, 1.0)
    return c + np.maximum(0.0, m - f * b * c)


@_checks.finite_result
def min_tokens_per_gpu(peak_flops, bandwidth, ranks, grad_bytes=FP32_GRAD_BYTES):
    """Tokens per GPU at which a ring all-reduce of the gradients takes as long as the backward pass.

    Backward: 4 FLOP per parameter per token at ``peak_flops``; all-reduce: 2(n-1)/n x
    ``grad_bytes`` per parameter at ``bandwidth`` (FP32 by default, as frameworks reduce them).
    Equal at (n-1)/n x grad_bytes / 2 x peak_flops / bandwidth tokens; with fewer, data
    parallelism is network-bound. 0 for one GPU.
    Explained in :doc:`/book/parallelism` (section "Data parallelism").
    """
    c = _checks.positive("peak_flops", peak_flops)
    w = _checks.positive("bandwidth", bandwidth)
    n = _checks.positive_int("ranks", ranks)
    b = _checks.positive("grad_bytes", grad_bytes)
    return (n - 1) / n * b / 2.0 * c / w


@_checks.finite_result
def scaling_efficiency(compute_seconds, comm_seconds, overlap=1.0, backward_share=2.0 / 3.0):
    """Compute time over :func:`data_parallel_step` time: 1 when communication hides completely.

    In (0, 1] for positive compute; where the ratio would underflow float64 (compute below
    about 1e-308 of the exposed communication) a ValueError says so instead of returning 0.
    Explained in :doc:`/book/parallelism` (section "Data parallelism").
    """
    c = _checks.positive("compute_seconds", compute_seconds)
    efficiency = c / data_parallel_step(c, comm_seconds, overlap, backward_share)
    if np.any(efficiency <= 0):
        raise ValueError("compute_seconds is too small against comm_seconds: the efficiency "
                         "underflows float64 (below 5e-324)")
    return efficiency


# --- tensor (model) parallelism ---------------------------------------------------------------

SPLITS = ("rows", "columns")


@_checks.finite_result
def post_model_parallel_elements(batch, d_in, d_out, split: str = "rows"):
    """Elements each of two GPUs sends per layer, forward and backward, in the 2014 post's scheme.

    Y (batch x d_out) = X (batch x d_in) W (d_in x d_out), W split in two along its ``split``:
    - "rows" (d_in halves): forward partial sums batch x d_out to add, backward the input
      gradient's half batch x d_in / 2 to stack;
    - "columns" (d_out halves): forward the output's half batch x d_out / 2 to stack, backward
      partial input gradients batch x d_in to add.
    Explained in :doc:`/book/parallelism` (section "The 2014 posts as a worked case").
    """
    b = _checks.positive_int("batch", batch)
    d_in = _checks.positive_int("d_in", d_in)
    d_out = _checks.positive_int("d_out", d_out)
    split = _checks.choice("split", split, SPLITS)
    if split == "rows":
        return b * d_out + b * d_in / 2
    return b * d_out / 2 + b * d_in


@_checks.finite_result
def post_model_parallel_break_even_batch(d_in, d_out, split: str = "rows"):
    """The batch size at which :func:`post_model_parallel_elements` equals the d_in x d_out gradient of data parallelism.

    Below it, splitting the weight sends fewer elements than sending its gradient.
    Explained in :doc:`/book/parallelism` (section "The 2014 posts as a worked case").
    """
    d_in = _checks.positive_int("d_in", d_in)
    d_out = _checks.positive_int("d_out", d_out)
    split = _checks.choice("split", split, SPLITS)
    per_row = d_out + d_in / 2 if split == "rows" else d_out / 2 + d_in
    return d_in * d_out / per_row


@_checks.finite_result
def tensor_parallel_bytes(tokens, d_model, ranks, act_bytes=2.0):
    """Bytes each GPU sends per transformer MLP block in Megatron-style tensor parallelism, forward and backward.

    The first matmul's weight is split by columns, the second's by rows, so the block needs one
    all-reduce of its tokens x d_model output in the forward pass and one of the input
    gradient in the backward pass: 2 x 2(n-1)/n x tokens x d_model x act_bytes.
    Explained in :doc:`/book/parallelism` (section "Tensor parallelism").
    """
    t = _checks.positive("tokens", tokens)
    d = _checks.positive_int("d_model", d_model)
    n = _checks.positive_int("ranks", ranks)
    b = _checks.positive("act_bytes", act_bytes)
    return 2.0 * _factor("all_reduce", n) * t * d * b


@_checks.finite_result
def data_parallel_bytes(params, ranks, grad_bytes=2.0, sharded: bool = False):
    """Bytes each GPU sends per step for the gradients of ``params`` weights under data parallelism.

    A ring all-reduce, 2(n-1)/n x params x grad_bytes; with ``sharded`` (ZeRO-3/FSDP) the
    weights are also all-gathered for the forward and again for the backward pass and the
    gradients reduce-scattered: 3(n-1)/n x params x grad_bytes.
    Explained in :doc:`/book/parallelism` (section "Tensor parallelism").
    """
    p = _checks.positive("params", params)
    n = _checks.positive_int("ranks", ranks)
    b = _checks.positive("grad_bytes", grad_bytes)
    sharded = _checks.flag("sharded", sharded)
    return (3.0 if sharded else 2.0) * (n - 1) / n * p * b


@_checks.finite_result
def max_tensor_parallel(block_params, d_model, peak_flops, bandwidth, all_reduces=1, act_bytes=2.0,
                        passes: str = "forward"):
    """The tensor-parallel degree at which a block's all-reduces take as long as its matmuls.

    Forward, per token, the block's matmuls do 2 FLOP per weight, split over n GPUs; each of its
    ``all_reduces`` moves about 2 d x act_bytes per token over ``bandwidth`` (n large). Equal at
    n = block_params x bandwidth / (all_reduces x 2 d x act_bytes x peak_flops / 2), whatever
    the number of tokens. For a plain MLP (2 d d_ff weights, one all-reduce, 2-byte activations)
    that is d_ff x bandwidth / peak_flops. ``passes="step"`` counts forward and backward: the
    backward pass does 4 FLOP per weight against as many all-reduces as the forward pass, so
    over a step the crossover is 1.5 times the forward pass's. Beyond it communication takes
    longer than the math; below it, it still adds to the step unless it is overlapped with the
    matmuls.
    Explained in :doc:`/book/parallelism` (section "Tensor parallelism").
    """
    p = _checks.positive("block_params", block_params)
    d = _checks.positive_int("d_model", d_model)
    c = _checks.positive("peak_flops", peak_flops)
    w = _checks.positive("bandwidth", bandwidth)
    k = _checks.positive_int("all_reduces", all_reduces)
    b = _checks.positive("act_bytes", act_bytes)
    passes = _checks.choice("passes", passes, TP_PASSES)
    per_all_reduce = 1.5 if passes == "step" else 1.0
    return per_all_reduce * p * w / (k * d * b * c)


#: What :func:`max_tensor_parallel` counts: the forward pass, or forward and backward.
TP_PASSES = ("forward", "step")


# --- memory: ZeRO / FSDP --------------------------------------------------------------------------

#: ZeRO stages: which of parameters, gradients and optimizer state are sharded.
ZERO_STAGES = {0: (), 1: ("optimizer",), 2: ("optimizer", "gradients"),
               3: ("optimizer", "gradients", "parameters")}


@_checks.finite_result
def training_memory(params, gpus, stage=0, param_bytes=2.0, grad_bytes=2.0, optimizer_bytes=12.0) -> dict:
    """Bytes per GPU of parameters, gradients and optimizer state under ZeRO ``stage`` (0-3).

    Mixed-precision Adam by default: 2-byte weights and gradients, 12 bytes of optimizer state
    per parameter (an FP32 master copy and two moments). Stage 1 shards the optimizer state
    over ``gpus``, stage 2 also the gradients, stage 3 (FSDP) also the parameters. Activations
    are not counted. Returns {"parameters", "gradients", "optimizer", "total"}.
    Explained in :doc:`/book/parallelism` (section "Sharded data parallelism: ZeRO and FSDP").
    """
    p = _checks.positive("params", params)
    n = _checks.positive_int("gpus", gpus)
    stage = _checks.scalar("stage", stage)
    if stage not in ZERO_STAGES:
        raise ValueError(f"stage must be 0, 1, 2 or 3 (got {stage:g})")
    sizes = {"parameters": p * _checks.non_negative("param_bytes", param_bytes),
             "gradients": p * _checks.non_negative("grad_bytes", grad_bytes),
             "optimizer": p * _checks.non_negative("optimizer_bytes", optimizer_bytes)}
    out = {k: v / n if k in ZERO_STAGES[int(stage)] else v * np.ones_like(n) for k, v in sizes.items()}
    out["total"] = out["parameters"] + out["gradients"] + out["optimizer"]
    return out


# --- pipeline parallelism -------------------------------------------------------------------

@_checks.finite_result
def pipeline_bubble(stages, microbatches, interleave=1, layers=None) -> dict:
    """Idle time of a 1F1B pipeline with ``stages`` stages and ``microbatches`` micro-batches.

    Returns {"of_compute": (p-1) / (v m), the idle time relative to the time spent computing,
    "of_total": (p-1) / (v m + p - 1), its share of the whole step}, with v = ``interleave``
    model chunks per stage. ``layers``, if given, must be at least stages x interleave.
    Explained in :doc:`/book/parallelism` (section "Pipeline parallelism").
    """
    p = _checks.positive_int("stages", stages)
    m = _checks.positive_int("microbatches", microbatches)
    v = _checks.positive_int("interleave", interleave)
    if layers is not None:
        layer_count = _checks.positive_int("layers", layers)
        if np.any(p * v > layer_count):
            raise ValueError("stages x interleave must not exceed layers: a stage needs at least one layer "
                             f"(got {_show_max(p * v)} chunks for {_show_max(layer_count)} layers)")
    return {"of_compute": (p - 1) / (v * m), "of_total": (p - 1) / (v * m + p - 1)}


def _show_max(arr) -> str:
    return f"{float(np.max(arr)):g}"


# --- today's parallelism: experts, sequences, activations ------------------------------------

#: GPUs in one NVLink domain of a GB200 NVL72 rack: NVIDIA gives 1.8 TB/s per GPU (both
#: directions, 900 GB/s each way, the "NVLink 5 (B200)" link) and 130 TB/s for the rack.
NVL72_GPUS = 72


@_checks.finite_result
def moe_all_to_all_bytes(tokens, d_model, ranks, top_k=2, act_bytes=2.0):
    """Bytes each GPU sends per mixture-of-experts layer, forward and backward, under expert parallelism.

    Each of ``tokens`` tokens on a GPU goes to ``top_k`` experts, spread evenly over ``ranks``
    GPUs, so (n-1)/n of its top_k x d_model activations leave the GPU in the dispatch
    all-to-all and come back in the combine all-to-all; the backward pass sends the gradients
    the same two ways: 4 x (n-1)/n x top_k x tokens x d_model x act_bytes. 0 for one GPU.
    Explained in :doc:`/book/parallelism` (section "Today's parallelism: experts, sequences, activations").
    """
    t = _checks.positive("tokens", tokens)
    d = _checks.positive_int("d_model", d_model)
    n = _checks.positive_int("ranks", ranks)
    k = _checks.positive_int("top_k", top_k)
    b = _checks.positive("act_bytes", act_bytes)
    return 4.0 * (n - 1) / n * k * t * d * b


@_checks.finite_result
def expert_parallel_intensity(d_ff, ranks, act_bytes=2.0, matrices=3):
    """FLOP of the experts' matmuls per byte of their all-to-alls, forward and backward.

    Per token and chosen expert the matmuls do 6 x ``matrices`` x d_model x d_ff FLOP
    (2 forward and 4 backward per weight; a gated MLP has 3 matrices) against the
    4 x (n-1)/n x d_model x act_bytes bytes of :func:`moe_all_to_all_bytes`: top_k and d_model
    cancel, leaving 1.5 x matrices x d_ff / act_bytes x n / (n-1) FLOP per byte. Compare it with
    the ratio of the GPU's FLOP/s to the link's bytes/s. ``ranks`` must be at least 2.
    Explained in :doc:`/book/parallelism` (section "Today's parallelism: experts, sequences, activations").
    """
    f = _checks.positive_int("d_ff", d_ff)
    n = _checks.positive_int("ranks", ranks)
    if np.any(n < 2):
        raise ValueError(f"ranks must be >= 2 (one GPU sends nothing; got {_show_min(n)})")
    b = _checks.positive("act_bytes", act_bytes)
    m = _checks.positive_int("matrices", matrices)
    return 1.5 * m * f / b * n / (n - 1)


@_checks.finite_result
def moe_min_tokens_per_gpu(peak_flops, bandwidth, ranks, total_params, active_params,
                           grad_bytes=FP32_GRAD_BYTES):
    """The data-parallel tokens rule of :func:`min_tokens_per_gpu` for a mixture of experts replicated on every GPU.

    The gradient all-reduce carries all ``total_params``, but the backward pass does 4 FLOP per
    token only for the ``active_params`` a token uses, so the tokens per GPU needed to hide it
    grow by total_params / active_params. ``active_params`` must not exceed ``total_params``.
    Explained in :doc:`/book/parallelism` (section "Today's parallelism: experts, sequences, activations").
    """
    total = _checks.positive("total_params", total_params)
    active = _checks.positive("active_params", active_params)
    if np.any(active > total):
        raise ValueError("active_params must be <= total_params (a token cannot use more "
                         f"parameters than the model has; got {_show_max(active / total)} times)")
    return min_tokens_per_gpu(peak_flops, bandwidth, ranks, grad_bytes) * total / active


@_checks.finite_result
def ring_attention_step_seconds(tokens_per_gpu, d_model, kv_dim, peak_flops, bandwidth,
                                act_bytes=2.0, latency=0.0) -> dict:
    """One step of ring attention for one layer's forward pass on one GPU, in seconds.

    With a sequence split into blocks of c = ``tokens_per_gpu`` tokens over a ring of GPUs,
    each GPU computes its query block against one key/value block per step, 4 c^2 d_model FLOP
    (scores and their product with the values) at ``peak_flops``, while it passes that key and
    value block on: 2 c ``kv_dim`` act_bytes bytes at ``bandwidth`` plus ``latency``
    (kv_dim = d_model without grouped-query attention). Returns {"compute", "transfer"}.
    Explained in :doc:`/book/parallelism` (section "Today's parallelism: experts, sequences, activations").
    """
    c = _checks.positive("tokens_per_gpu", tokens_per_gpu)
    d = _checks.positive_int("d_model", d_model)
    kv = _checks.positive_int("kv_dim", kv_dim)
    f = _checks.positive("peak_flops", peak_flops)
    w = _checks.positive("bandwidth", bandwidth)
    b = _checks.positive("act_bytes", act_bytes)
    alpha = _checks.non_negative("latency", latency)
    return {"compute": 4.0 * c * c * d / f, "transfer": alpha + 2.0 * c * kv * b / w}


@_checks.finite_result
def ring_attention_min_tokens(d_model, kv_dim, peak_flops, bandwidth, act_bytes=2.0):
    """Tokens per GPU above which ring attention hides its key/value transfers behind the attention math.

    Where the two times of :func:`ring_attention_step_seconds` (without latency) are equal:
    c = peak_flops / bandwidth x kv_dim x act_bytes / (2 d_model); for 16-bit values and
    kv_dim = d_model this is Liu et al.'s block size F / B.
    Explained in :doc:`/book/parallelism` (section "Today's parallelism: experts, sequences, activations").
    """
    d = _checks.positive_int("d_model", d_model)
    kv = _checks.positive_int("kv_dim", kv_dim)
    f = _checks.positive("peak_flops", peak_flops)
    w = _checks.positive("bandwidth", bandwidth)
    b = _checks.positive("act_bytes", act_bytes)
    return f / w * kv * b / (2.0 * d)


#: Recomputation choices of :func:`activation_memory`.
@_checks.finite_result
def activation_constant(d_ff_ratio=4.0, kv_ratio=1.0, gated: bool = False, dropout: bool = True):
    """The constant c of a layer's sbh(c + 5as/h) activation bytes, counted tensor by tensor.

    Korthikanti et al.'s count with 16-bit values and 1-byte dropout masks: two layer-norm
    inputs (4); attention's input, queries, keys and values, and output-projection input
    (6 + 4 x ``kv_ratio``, the keys' and values' width over h) and a dropout mask (1); the MLP's
    input (2) and, for d_ff = ``d_ff_ratio`` x h, a GeLU's input and output (4 r) or, ``gated``,
    a fused SwiGLU's gate and up projections and their product (6 r), and a dropout mask (1).
    The defaults, a GPT-style layer, give 34; a Llama-style layer (gated, no dropout, grouped-
    query attention) less. The attention scores' 5as/h is not included.
    Explained in :doc:`/book/parallelism` (section "One published run: Llama 3 405B").
    """
    r = _checks.positive("d_ff_ratio", d_ff_ratio)
    g = _checks.non_negative("kv_ratio", kv_ratio)
    gated = _checks.flag("gated", gated)
    masks = 1.0 if _checks.flag("dropout", dropout) else 0.0
    norms = 4.0
    attention = 6.0 + 4.0 * g + masks
    mlp = 2.0 + (6.0 if gated else 4.0) * r + masks
    return norms + attention + mlp


RECOMPUTE = ("none", "selective", "full")


@_checks.finite_result
def activation_memory(seq_len, micro_batch, hidden, heads, tensor_parallel=1, recompute: str = "none",
                      sequence_parallel: bool = False):
    """Bytes of activations one transformer layer keeps per GPU for its backward pass (Korthikanti et al. 2022).

    s = ``seq_len``, b = ``micro_batch`` sequences, h = ``hidden``, a = ``heads``, t =
    ``tensor_parallel``; 16-bit activations, 1-byte dropout masks, a GPT-style layer (4h MLP,
    attention scores stored): sbh(10 + 24/t + 5as/(ht)), or sbh(34/t + 5as/(ht)) with
    ``sequence_parallel`` (t = 1: sbh(34 + 5as/h)). ``recompute="selective"`` recomputes the
    attention scores, dropping the 5as/(ht) term (as FlashAttention does); ``"full"`` keeps only
    the layer's 2sbh input.
    Explained in :doc:`/book/parallelism` (section "Today's parallelism: experts, sequences, activations").
    """
    s = _checks.positive_int("seq_len", seq_len)
    b = _checks.positive_int("micro_batch", micro_batch)
    h = _checks.positive_int("hidden", hidden)
    a = _checks.positive_int("heads", heads)
    t = _checks.positive_int("tensor_parallel", tensor_parallel)
    recompute = _checks.choice("recompute", recompute, RECOMPUTE)
    sp = _checks.flag("sequence_parallel", sequence_parallel)
    sbh = s * b * h
    if recompute == "full":
        return 2.0 * sbh * np.ones_like(t * a)
    linear = 34.0 / t if sp else 10.0 + 24.0 / t
    scores = 0.0 if recompute == "selective" else 5.0 * a * s / (h * t)
    return sbh * (linear + scores)


def _show_min(arr) -> str:
    return f"{float(np.min(arr)):g}"
