"""How fast each accelerator runs three workloads: a step on the host and on the GPU.

A training step or a decoding step is a list of kernels, each with its FLOP, the bytes it
moves, how often it runs and its kind (GEMM, convolution, elementwise, weight-streaming).
On the GPU each kernel takes the longest of its compute time (FLOP over the rate of its
kind), its memory time (bytes over the streaming rate, or for a matrix-vector kernel the
rate its bytes in flight sustain by Little's law) and a floor of 2 us; the GPU runs them one
after another. Eager PyTorch's host launches them asynchronously, paying its time per kernel,
so the step takes the longer of the host's sum and the GPU's sum; llama.cpp replays a token's
kernels as a CUDA graph, and each of its kernels adds a fixed time to the token. The rates come from the
card's datasheet times shares fitted to measured rows (:mod:`gpumodel.calibration`), or the
card's own measured share where its die was measured. Work is in FLOP, traffic in bytes,
rates in FLOP/s and bytes/s, times in seconds, throughput in samples (or tokens) per second.
Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import _checks, cost, hardware, measured, memory, units, workloads

WORKLOADS = ("transformer-train", "cnn-train", "llm-decode")
#: Units of each workload's throughput.
UNITS = {"transformer-train": "sequences/s", "cnn-train": "images/s", "llm-decode": "tokens/s"}
#: The card that relative throughputs are divided by unless another is named.
REFERENCE = "A100 SXM4 40GB"

#: Starting values of the fitted constants (:mod:`gpumodel.calibration` replaces each with a
#: fit to measured rows; these are used only where no row of a constant's family is left).
DEFAULT_CONSTANTS = {"gemm_share": 0.8, "stream_share": 0.9, "conv_share": 0.5,
                     "llamacpp_bytes_in_flight": 4096.0, "llamacpp_node_seconds": 4e-6,
                     "compiled_bytes_in_flight": 8192.0, "compiled_dequant_per_sm_cycle": 8.0,
                     "ring_step_seconds": 5e-6}
#: GPU time of the smallest kernel, seconds: torchao's roofline model of an H100 charges 2 us
#: per kernel for a one-element kernel measured on the GPU (not the CPU's launch cost).
GPU_FLOOR_SECONDS = 2e-6
#: The opening chapter's t_o: the same GPU floor, under the name its cells use.
LAUNCH_SECONDS = GPU_FLOOR_SECONDS
#: Host (CPU) seconds per kernel launched by eager PyTorch: framework dispatch plus the CUDA
#: launch, within the 5-20 us that Meta's Holistic Trace Analysis documents per launch.
EAGER_HOST_SECONDS = 10e-6
#: How each engine issues kernels: "eager" (PyTorch, one launch per operation), "llama.cpp"
#: (its own matrix-vector kernels; the builds measured, 2824 onwards, replay each token's
#: graph as a CUDA graph on Ampere and newer GPUs, so the host launches no kernel one by one,
#: and each kernel adds a fitted fixed time on top of its work: a gap on the GPU and the
#: host's per-node work on the graph, which the GPU waits for), "compiled"
#: (torch.compile with CUDA graphs: the host replays a whole step at once).
ENGINES = ("eager", "llama.cpp", "compiled")
#: Kernel kinds and the rates they run at (see :func:`achieved_rates`).
KINDS = ("gemm", "conv", "elementwise", "weights", "attention")
#: Share of the dense 16-bit peak that FlashAttention-2, the flash kernel PyTorch's
#: scaled_dot_product_attention ran in the measured training runs, reaches, by die: 35% on the
#: H100 (Shah et al. 2024) and the low end of 50-73% on the A100 (Dao 2023). Elsewhere
#: attention runs at the card's GEMM share.
ATTENTION_SHARE = {"GH100": 0.35, "GA100": 0.50}

#: BERT-large as fine-tuned on SQuAD in the measured runs: 24 layers, width 1024, feed-forward
#: 4096, 16 heads, 384-token sequences, WordPiece vocabulary of 30,522 and 512 positions.
BERT_LARGE_SQUAD = {"layers": 24, "d_model": 1024, "d_ff": 4096, "heads": 16, "seq": 384,
                    "vocab": 30522, "positions": 512}

#: Elementwise passes per layer and token in the transformer step, in elements read plus
#: written for each unfused operation: softmax reads and writes the a x s scores, dropout on
#: the probabilities also writes a one-byte mask (2.5 a s); two (dropout, residual add,
#: layer norm) blocks move 7 d each; GELU reads and writes d_ff. Backward moves twice as much.
TRANSFORMER_ELEMENTWISE = {"softmax": ("scores", 2.0), "attention dropout": ("scores", 2.5),
                           "dropout, residual, layer norm": ("width", 14.0),
                           "GELU": ("ffn", 2.0)}
BACKWARD_ELEMENTWISE = 2.0
#: The attention's other separate operations in the measured runs, as NVIDIA's
#: DeepLearningExamples BERT writes them: (size, forward, backward element-passes). Dividing
#: the scores by the square root of the head width reads and writes them each way; adding
#: the mask reads and writes them forward, and backward the gradient passes through it
#: unchanged; ``.contiguous()`` copies the context out of its per-head layout each way.
ATTENTION_OPS = {"attention scaling": ("scores", 2.0, 2.0),
                 "attention mask": ("scores", 2.0, 0.0),
                 "context copy": ("width", 2.0, 2.0)}
#: Bytes per parameter of a mixed-precision Adam update: FP32 master weight, momentum and
#: variance each read and written (24), the 16-bit gradient read (2), the 16-bit copy written (2).
ADAM_BYTES_PER_PARAM = 28.0

#: ResNet-50 v1.5 (He et al. 2016, Table 1; stride in the 3x3 convolution as in torchvision and
#: NVIDIA's DeepLearningExamples): (blocks, bottleneck width, output width, stride).
RESNET50_STAGES = ((3, 64, 256, 1), (4, 128, 512, 2), (6, 256, 1024, 2), (3, 512, 2048, 2))
#: Batch norm + ReLU passes over each convolution's output, as eager PyTorch runs the two
#: separate modules (nn.BatchNorm2d, then an in-place nn.ReLU, in NVIDIA's DeepLearningExamples
#: ResNet-50 that the measured runs used): forward, batch norm reads for its statistics, then
#: reads and writes (3), ReLU reads and writes (2); backward, ReLU reads the gradient and its
#: output and writes (3), batch norm makes two reductions and a read-read-write (5).
BN_RELU_PASSES = 13.0
#: Kernels per convolution output for batch norm and ReLU: cuDNN's batch norm takes two and
#: ReLU one, each way.
BN_RELU_LAUNCHES = 6.0
#: A residual add moves 3 elements each way.
RESIDUAL_PASSES = 6.0
#: Passes over a convolution's input and output when the tensors are in PyTorch's default NCHW
#: layout: cuDNN's Tensor Core kernels work in NHWC and the library may transform NCHW tensors
#: to NHWC to use them (NVIDIA cuDNN documentation, "Data and Filter Formats"). The model
#: assumes the upper bound, that each of the three calls (forward, input gradient, weight
#: gradient) transposes its activation operands in and its result back out: a read and a write
#: of the input and of the output each. Channels-last tensors need none.
NCHW_TRANSPOSE_PASSES = 6.0
#: Bytes per parameter of an SGD-with-momentum update on FP32 master weights (the measured
#: ResNet-50 runs' optimizer): weight, gradient and momentum read, weight and momentum written.
SGD_BYTES_PER_PARAM = 20.0


def _kernel(name, flops, nbytes, launches=1.0, kind="elementwise"):
    return (name, float(flops), float(nbytes), float(launches), kind)


def _gemm(name, m, k, n, repeats=1.0, act_bytes=2.0):
    return _kernel(name, 2.0 * m * k * n, act_bytes * (m * k + k * n + m * n), repeats, "gemm")


def _table(kernels, dequantized=None) -> dict:
    names, flops, nbytes, launches, kinds = zip(*kernels)
    table = {"kernel": list(names), "flops": np.array(flops), "bytes": np.array(nbytes),
             "launches": np.array(launches), "kind": list(kinds)}
    if dequantized is not None:
        table["dequantized"] = np.array(dequantized, float)
    return table


@_checks.finite_result
def transformer_train_kernels(batch, seq=384, layers=24, d_model=1024, d_ff=4096, heads=16,
                              vocab=30522, positions=512) -> dict:
    """One mixed-precision training step of a BERT-style encoder as kernels: {"kernel", "flops", "bytes", "launches"}.

    Per layer, forward: four weight GEMMs (QKV, attention output, FFN up, FFN down), two batched
    attention GEMMs (scores, context) and the elementwise passes of
    :data:`TRANSFORMER_ELEMENTWISE` and :data:`ATTENTION_OPS`; backward: two GEMMs per
    forward GEMM (input and weight gradients), :data:`BACKWARD_ELEMENTWISE` x the elementwise
    traffic and the backward passes of :data:`ATTENTION_OPS`. GEMM bytes are the
    minimum traffic of 16-bit operands (for attention: Q, K and the scores; the probabilities,
    V and the context). Then one Adam update over all parameters. ``launches``
    counts how many times each kernel runs per step. Defaults: BERT-large on 384-token sequences.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    b = _checks.count("batch", batch)
    s, L = _checks.count("seq", seq), _checks.count("layers", layers)
    d, f = _checks.count("d_model", d_model), _checks.count("d_ff", d_ff)
    a = _checks.count("heads", heads)
    if d % a:
        raise ValueError(f"d_model must be a multiple of heads (got {d} and {a})")
    v, p = _checks.count("vocab", vocab), _checks.count("positions", positions)
    t, dh = b * s, d // a
    weights = (("QKV projection", t, d, 3 * d), ("attention output", t, d, d),
               ("FFN up", t, d, f), ("FFN down", t, f, d))
    kernels = []
    for name, m, k, n in weights:
        kernels.append(_gemm(f"{name} (forward)", m, k, n, L))
        kernels.append(_gemm(f"{name} (backward, 2 GEMMs)", m, k, n, 2 * L))
    attn = 2.0 * b * a * (s * s * dh) * 2.0
    attn_bytes = 2.0 * b * a * (4 * s * dh + 2 * s * s)
    kernels.append(_kernel("attention scores and context (forward)", attn, attn_bytes, L, "gemm"))
    kernels.append(_kernel("attention scores and context (backward)", 2 * attn, 2 * attn_bytes, L,
                           "gemm"))
    sizes = {"scores": a * s, "width": d, "ffn": f}
    for name, (size, passes) in TRANSFORMER_ELEMENTWISE.items():
        nbytes = 2.0 * t * sizes[size] * passes
        kernels.append(_kernel(f"{name} (forward)", 0.0, nbytes, L))
        kernels.append(_kernel(f"{name} (backward)", 0.0, BACKWARD_ELEMENTWISE * nbytes, L))
    for name, (size, *passes) in ATTENTION_OPS.items():
        for way, count in zip(("forward", "backward"), passes):
            if count:
                kernels.append(_kernel(f"{name} ({way})", 0.0, 2.0 * t * sizes[size] * count,
                                       L))
    params = L * (4 * d * d + 2 * d * f) + (v + p) * d
    kernels.append(_kernel("Adam update", 0.0, ADAM_BYTES_PER_PARAM * params))
    return _table(kernels)


def _resnet50_convs(image: int):
    """(name, input pixels, output pixels, C_in, k = C_in x kh x kw, n = C_out, is_block_output)."""
    side = (image + 1) // 2
    convs = [("conv1 7x7", image * image, side * side, 3, 3 * 49, 64, False)]
    side = (side + 1) // 2
    width_in = 64
    for stage, (blocks, mid, out, stride) in enumerate(RESNET50_STAGES, start=2):
        for block in range(blocks):
            s = stride if block == 0 else 1
            out_side = (side + s - 1) // s
            tag = f"conv{stage}_{block + 1}"
            px_in, px_out = side * side, out_side * out_side
            convs.append((f"{tag} 1x1 reduce", px_in, px_in, width_in, width_in, mid, False))
            convs.append((f"{tag} 3x3", px_in, px_out, mid, mid * 9, mid, False))
            convs.append((f"{tag} 1x1 expand", px_out, px_out, mid, mid, out, True))
            if block == 0:
                convs.append((f"{tag} 1x1 downsample", px_in, px_out, width_in, width_in, out,
                              False))
            width_in, side = out, out_side
    return convs


#: Bytes of state per parameter when ResNet-50 trains with SGD and momentum in mixed
#: precision: FP32 weight, gradient and momentum (12) and the 16-bit copy the kernels read (2).
CNN_STATE_BYTES = 14.0
#: 16-bit tensors each convolution leaves for the backward pass: its output, which batch
#: norm's backward reads, and the output of batch norm and the in-place ReLU, which ReLU's
#: backward and the next convolution's weight gradient read.
CNN_SAVED_TENSORS = 2.0


@_checks.finite_result
def cnn_train_memory_bytes(batch, image=224):
    """Memory to train ResNet-50 v1.5 in mixed precision with SGD, bytes: 14 N + 2 x 2 B x batch x E.

    N: the convolutions' and classifier's parameters (:data:`CNN_STATE_BYTES` each); E: the
    convolutions' output elements per image, each kept as :data:`CNN_SAVED_TENSORS` 16-bit
    tensors. About 44 MB per 224-pixel image; cuDNN's workspace, the pooling indices and the
    allocator's fragmentation are not counted.
    Explained in :doc:`/book/choosing_a_gpu` (section "A ranking").
    """
    b = _checks.count("batch", batch)
    image = _checks.count("image", image)
    if image < 32:
        raise ValueError(f"image must be >= 32 pixels (got {image})")
    convs = _resnet50_convs(image)
    params = sum(k * n for _, _, _, _, k, n, _ in convs) + 2048 * 1000
    elements = sum(px * n for _, _, px, _, _, n, _ in convs)
    return CNN_STATE_BYTES * params + 2.0 * CNN_SAVED_TENSORS * b * elements


@_checks.finite_result
def resnet50_forward_flops(image=224):
    """FLOP of one ResNet-50 v1.5 forward pass on one ``image`` x ``image`` picture (convolutions and the classifier).

    2 x output pixels x C_in kh kw x C_out per convolution plus 2 x 2048 x 1000 for the classifier;
    about 8.2e9 at 224 (He et al. 2016 count 3.8e9 multiply-adds for v1, stride in the 1x1).
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    image = _checks.count("image", image)
    if image < 32:
        raise ValueError(f"image must be >= 32 pixels (got {image})")
    convs = _resnet50_convs(image)
    return float(sum(2.0 * px * k * n for _, _, px, _, k, n, _ in convs) + 2.0 * 2048 * 1000)


@_checks.finite_result
def cnn_train_kernels(batch, image=224, channels_last=False) -> dict:
    """One mixed-precision ResNet-50 v1.5 training step as kernels: {"kernel", "flops", "bytes", "launches"}.

    Each convolution is an implicit GEMM (m = batch x output pixels, k = C_in kh kw, n = C_out)
    run three times (forward, input gradient, weight gradient), each reading or writing the input
    activations, the weights and the output once in 16 bits (an implicit GEMM gathers its
    k-long rows from the input tensor on chip, so the input is not read kh kw times), followed
    by :data:`BN_RELU_PASSES` passes over its output for batch norm and ReLU; block outputs add
    :data:`RESIDUAL_PASSES` for the residual; then the classifier and an SGD-with-momentum
    update. Unless ``channels_last``, the tensors are in PyTorch's default NCHW layout and each
    convolution adds :data:`NCHW_TRANSPOSE_PASSES` transposes of its input and output.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    b = _checks.count("batch", batch)
    image = _checks.count("image", image)
    nhwc = _checks.flag("channels_last", channels_last)
    if image < 32:
        raise ValueError(f"image must be >= 32 pixels (got {image})")
    kernels, params = [], 2048 * 1000
    for name, px_in, px, c_in, k, n, block_out in _resnet50_convs(image):
        nbytes = 2.0 * (b * px_in * c_in + k * n + b * px * n)
        kernels.append(_kernel(f"{name} (forward, backward x2)", 2.0 * b * px * k * n, nbytes, 3,
                               "conv"))
        if not nhwc:
            moved = 2.0 * NCHW_TRANSPOSE_PASSES * (b * px_in * c_in + b * px * n)
            kernels.append(_kernel(f"{name} NCHW-NHWC transposes", 0.0, moved / 6, 6))
        passes = BN_RELU_PASSES + (RESIDUAL_PASSES if block_out else 0.0)
        kernels.append(_kernel(f"{name} batch norm, ReLU", 0.0,
                               2.0 * b * px * n * passes / BN_RELU_LAUNCHES, BN_RELU_LAUNCHES))
        params += k * n
    kernels.append(_gemm("classifier (forward, backward x2)", b, 2048, 1000, 3))
    kernels.append(_kernel("SGD update", 0.0, SGD_BYTES_PER_PARAM * params))
    return _table(kernels)


#: Small kernels per layer of a decoding step besides the matrix products, as llama.cpp's graph
#: runs them: two RMS norms and their weight multiplies, two rotary embeddings, two cache
#: writes, the softmax, a copy that makes the attention output contiguous, two residual
#: adds, SiLU and the gate multiply.
DECODE_SMALL_KERNELS = 14


#: Tokens of context a decoding step attends to unless another is given (the step model's
#: default for Llama 3 8B decoding).
DECODE_CONTEXT = 2048


@_checks.finite_result
def decode_kernels(batch=1, context=DECODE_CONTEXT, weight_bits=16.0, layers=32, d_model=4096,
                   d_ff=14336, heads=32, kv_heads=8, vocab=128256, kv_bits=16.0) -> dict:
    """One decoding step (one new token for each of ``batch`` sequences) as kernels.

    Per layer: seven weight-streaming products of ``batch`` rows (Q, K, V, output, gate, up,
    down; kind "weights") whose weights take ``weight_bits`` per parameter; attention reading
    each sequence's key/value cache of ``context`` tokens at ``kv_bits`` (two kernels); and
    :data:`DECODE_SMALL_KERNELS` small kernels. Then a final norm and the output projection
    over ``vocab``. The launches count the kernels llama.cpp's graph runs (23 per layer).
    Below 16 bits, ``"dequantized"`` counts the weights each kernel must unpack.
    Defaults: Llama 3 8B in 16 bits.
    Explained in :doc:`/book/choosing_a_gpu` (section "Decoding: bandwidth over bytes per token").
    """
    b, ctx = _checks.count("batch", batch), _checks.count("context", context)
    wb = _checks.scalar("weight_bits", weight_bits) / 8.0
    kb = _checks.scalar("kv_bits", kv_bits) / 8.0
    if not (1 <= 8 * wb <= 32 and 1 <= 8 * kb <= 32):
        raise ValueError("weight_bits and kv_bits must be in [1, 32]")
    L, d = _checks.count("layers", layers), _checks.count("d_model", d_model)
    f, a = _checks.count("d_ff", d_ff), _checks.count("heads", heads)
    g, v = _checks.count("kv_heads", kv_heads), _checks.count("vocab", vocab)
    if d % a or a % g:
        raise ValueError("d_model must be a multiple of heads, and heads of kv_heads")
    dh = d // a

    quantized = 8 * wb < 16
    unpacked = []

    def proj(name, k, n, repeats=L):
        unpacked.append(k * n if quantized else 0.0)
        return _kernel(name, 2.0 * b * k * n, k * n * wb + 2.0 * b * (k + n), repeats, "weights")

    def other(*args):
        unpacked.append(0.0)
        return _kernel(*args)

    kv_bytes = g * dh * ctx * kb
    kernels = [proj("Q projection", d, d), proj("K and V projections", d, g * dh, 2 * L),
               proj("attention output", d, d), proj("MLP gate and up", d, f, 2 * L),
               proj("MLP down", f, d),
               other("attention over the KV cache (K, then V)", 2.0 * b * a * dh * ctx,
                     b * kv_bytes, 2 * L, "weights"),
               other("norms, rotary, cache writes, softmax, residuals", 0.0, 2.0 * b * d * 2.0,
                     DECODE_SMALL_KERNELS * L),
               other("final norm", 0.0, 2.0 * b * d * 2.0, 2),
               proj("output projection", d, v, 1)]
    return _table(kernels, unpacked)


@_checks.finite_result
def kv_cache_bytes(context, layers=32, d_model=4096, heads=32, kv_heads=8, kv_bits=16.0):
    """Bytes of one sequence's key/value cache: 2 x layers x kv_heads x head width x context x kv_bits / 8.

    Explained in :doc:`/book/choosing_a_gpu` (section "Memory: what fits").
    """
    ctx = _checks.positive_int("context", context)
    L, d = _checks.count("layers", layers), _checks.count("d_model", d_model)
    a, g = _checks.count("heads", heads), _checks.count("kv_heads", kv_heads)
    if d % a or a % g:
        raise ValueError("d_model must be a multiple of heads, and heads of kv_heads")
    bits = _checks.in_range("kv_bits", kv_bits, 1.0, 32.0)
    return 2.0 * L * g * (d // a) * ctx * bits / 8.0


def _check_heads(d_model, heads, kv_heads) -> None:
    """The rule :func:`decode_kernels` applies: d_model a multiple of heads, heads of kv_heads."""
    d, a = _checks.positive_int("d_model", d_model), _checks.positive_int("heads", heads)
    g = _checks.positive_int("kv_heads", kv_heads)
    _checks.broadcast(d_model=d, heads=a, kv_heads=g)
    if np.any(np.mod(d, a) != 0) or np.any(np.mod(a, g) != 0):
        raise ValueError("d_model must be a multiple of heads, and heads of kv_heads")


@_checks.finite_result
def weight_bytes(weight_bits=16.0, layers=32, d_model=4096, d_ff=14336, heads=32, kv_heads=8,
                 vocab=128256, input_embedding: bool = True):
    """Bytes of a decoder-only transformer's weights at ``weight_bits`` per parameter.

    :func:`gpumodel.workloads.transformer_params` x ``weight_bits`` / 8; with
    ``input_embedding=False``, the bytes a decoding step reads (the embedding table is only
    indexed). Llama 3 8B in 16 bits: 16.06e9 bytes, 15.01e9 without the input embedding.
    Explained in :doc:`/book/choosing_a_gpu` (section "Memory: what fits").
    """
    bits = _checks.in_range("weight_bits", weight_bits, 1.0, 32.0)
    _check_heads(d_model, heads, kv_heads)
    params = workloads.transformer_params(layers, d_model, d_ff, heads, kv_heads, vocab,
                                          input_embedding)
    return params * bits / 8.0


@_checks.finite_result
def prefill_flops(prompt, layers=32, d_model=4096, d_ff=14336, heads=32, kv_heads=8, vocab=128256):
    """FLOP of the prefill pass over a prompt of ``prompt`` tokens: 2 N P + 2 L P^2 d.

    2 N P for the weight matmuls (N from :func:`gpumodel.workloads.transformer_params` without
    the input embedding, a table lookup; the output projection is counted for every prompt
    token, an upper end: a server needs its logits only for the last one) and 2 L P^2 d for
    causal attention (QK^T and the product with V, 2 P^2 d each per layer, half of them kept
    by the mask). Defaults: Llama 3 8B; P = 2048: 3.18e13 FLOP.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's buyer").
    """
    p = _checks.positive_int("prompt", prompt)
    _check_heads(d_model, heads, kv_heads)
    n = workloads.transformer_params(layers, d_model, d_ff, heads, kv_heads, vocab,
                                     input_embedding=False)
    L, d = _checks.positive_int("layers", layers), _checks.positive_int("d_model", d_model)
    return 2.0 * n * p + 2.0 * L * p * p * d


@_checks.finite_result
def time_to_first_token(prompt, flop_rate, bandwidth, weight_bits=16.0, layers=32, d_model=4096,
                        d_ff=14336, heads=32, kv_heads=8, vocab=128256):
    """Time to first token (TTFT) in seconds: the longer of prefill's compute and one read of the weights.

    max(:func:`prefill_flops` / ``flop_rate``, :func:`weight_bytes` (no input embedding) /
    ``bandwidth``), with ``flop_rate`` in FLOP/s (a share of the peak) and ``bandwidth`` in
    bytes/s. The weights are read once for the whole prompt, so prefill's intensity is about
    P FLOP per weight byte at 16 bits and the compute term wins once P passes the ridge point.
    Queueing, tokenization and the key/value cache writes are not counted.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's buyer").
    """
    rate = _checks.positive("flop_rate", flop_rate)
    bw = _checks.positive("bandwidth", bandwidth)
    compute = prefill_flops(prompt, layers, d_model, d_ff, heads, kv_heads, vocab) / rate
    memory = weight_bytes(weight_bits, layers, d_model, d_ff, heads, kv_heads, vocab,
                          input_embedding=False) / bw
    return np.maximum(compute, memory)


def _engine(engine) -> str:
    return _checks.choice("engine", engine, ENGINES)


def _calibration(calibration):
    from . import calibration as calib
    if calibration is None:
        return calib.default()
    if not isinstance(calibration, calib.Calibration):
        raise ValueError(f"calibration must be a gpumodel.calibration.Calibration or None "
                         f"(got {calibration!r:.60})")
    _check_calibration(calibration)
    return calibration


#: The largest share of a peak a calibration may claim (measured shares reach about 0.96).
MAX_SHARE = 1.5


def _check_calibration(cal) -> None:
    """Refuse a Calibration whose constants the model cannot trust, naming ``calibration``:
    every constant of :data:`DEFAULT_CONSTANTS` present, finite and > 0; every share (global or
    per die) in (0, MAX_SHARE]; at least one measured latency, each finite and > 0 seconds."""
    def number(label, value, share=False):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"calibration: {label} must be a number (got {_checks._brief(value)})")
        high = MAX_SHARE if share else np.inf
        if not (np.isfinite(value) and 0 < value <= high):
            what = f"in (0, {MAX_SHARE:g}]" if share else "finite and > 0"
            raise ValueError(f"calibration: {label} must be {what} (got {_checks._brief(value)})")

    for field_name in ("constants", "gemm_shares", "stream_shares", "latencies"):
        if not isinstance(getattr(cal, field_name), dict):
            raise ValueError(f"calibration: {field_name} must be a dict "
                             f"(got {_checks._brief(getattr(cal, field_name))})")
    missing = [k for k in DEFAULT_CONSTANTS if k not in cal.constants]
    if missing:
        raise ValueError(f"calibration: constants lacks {', '.join(missing)}")
    for key in DEFAULT_CONSTANTS:
        number(f"constants[{key!r}]", cal.constants[key], key.endswith("_share"))
    for field_name in ("gemm_shares", "stream_shares"):
        for key, value in getattr(cal, field_name).items():
            number(f"{field_name}[{key!r}]", value, True)
    if not cal.latencies:
        raise ValueError("calibration: latencies must hold at least one die's DRAM latency")
    for key, value in cal.latencies.items():
        number(f"latencies[{key!r}]", value)


def achieved_rates(accelerators, math: str = "16-bit", engine: str = "eager",
                   calibration=None) -> dict:
    """The rates each kind of kernel reaches on each card, as arrays with one value per card.

    - "gemm": FLOP/s of a large GEMM, s_F x the dense peak (s_F the card's measured matmul
      share where its die was measured, else the fitted median);
    - "conv": FLOP/s of a cuDNN convolution, the fitted ``conv_share`` x the peak;
    - "stream": bytes/s of a streaming kernel, s_B x the DRAM bandwidth (likewise measured
      or fitted);
    - "weights": bytes/s of a matrix-vector kernel of ``engine``: the stream rate, capped by
      Little's law at SMs x (bytes the engine keeps in flight per SM) / DRAM latency;
    - "dequant": weights/s a compiled weight-only kernel unpacks: SMs x boost clock x the
      fitted weights per SM and cycle (1e300, no limit, for the other engines);
    - "attention": FLOP/s of fused (flash) attention, :data:`ATTENTION_SHARE` x the peak where
      sourced, never more than "gemm";
    - "floor": the GPU time of the smallest kernel (s); "host": host seconds per kernel;
    - "gap": seconds added to every kernel: llama.cpp's fitted cost per kernel of its CUDA
      graph (a gap on the GPU between dependent kernels, and the host's per-node work on the
      graph each token, which the GPU waits for), 0 for the other engines.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    engine = _engine(engine)
    cal = _calibration(calibration)
    cards = _cards(accelerators)
    peak, bw = card_rates(cards, math)
    stream = np.array([cal.stream_share(a) for a in cards]) * bw
    in_flight = {"llama.cpp": cal.constants["llamacpp_bytes_in_flight"],
                 "compiled": cal.constants["compiled_bytes_in_flight"]}.get(engine)
    weights = stream.copy()
    if in_flight is not None:
        for i, a in enumerate(cards):
            if a.sm_count:
                weights[i] = min(stream[i], a.sm_count * in_flight / cal.latency(a))
    host = EAGER_HOST_SECONDS if engine == "eager" else 0.0
    gap = cal.constants["llamacpp_node_seconds"] if engine == "llama.cpp" else 0.0
    n = len(cards)
    per_cycle = cal.constants["compiled_dequant_per_sm_cycle"] if engine == "compiled" else np.inf
    dequant = np.array([(a.sm_count or 0) * (a.peak_clock_mhz or 0) * 1e6 * per_cycle
                        if a.sm_count and a.peak_clock_mhz else np.inf for a in cards])
    gemm = np.array([cal.gemm_share(a) for a in cards]) * peak
    from .calibration import die
    attention = np.array([ATTENTION_SHARE.get(die(a.name), np.inf) for a in cards]) * peak
    return {"dequant": np.where(np.isfinite(dequant), dequant, 1e300), "gemm": gemm,
            "attention": np.minimum(gemm, attention),
            "conv": cal.constants["conv_share"] * peak, "stream": stream, "weights": weights,
            "floor": np.full(n, GPU_FLOOR_SECONDS), "host": np.full(n, host), "peak": peak,
            "gap": np.full(n, gap)}


KERNEL_COLUMNS = ("flops", "bytes", "launches")


def _kernel_column(kernels: dict, key: str, length: int | None = None) -> np.ndarray:
    column = _checks.non_negative(f"kernels[{key!r}]", kernels[key])
    if column.ndim != 1:
        raise ValueError(f"kernels[{key!r}] must be a 1-D list of numbers, one per kernel "
                         f"(got shape {column.shape})")
    if length is not None and column.size != length:
        raise ValueError(f"kernels[{key!r}] must have as many entries as kernels['flops'] "
                         f"({length}; got {column.size})")
    return column


#: The keys a kernel table may hold (the *_kernels functions' columns).
KERNEL_KEYS = ("kernel", *KERNEL_COLUMNS, "kind", "dequantized")


def _unknown_keys(name: str, given: dict, known) -> None:
    unknown = [k for k in given if k not in known]
    if unknown:
        raise ValueError(f"{name} has unknown keys {', '.join(map(repr, unknown))} "
                         f"(known: {', '.join(known)})")


def _kernel_arrays(kernels: dict):
    if not isinstance(kernels, dict) or not set(KERNEL_COLUMNS) <= set(kernels):
        raise ValueError("kernels must be a dict from one of the *_kernels functions")
    _unknown_keys("kernels", kernels, KERNEL_KEYS)
    flops = _kernel_column(kernels, "flops")
    if flops.size == 0:
        raise ValueError("kernels must hold at least one kernel (its columns are empty)")
    nbytes, launches = (_kernel_column(kernels, key, flops.size) for key in KERNEL_COLUMNS[1:])
    kinds = kernels.get("kind", ["gemm"] * flops.size)
    if isinstance(kinds, (str, bytes)) or np.ndim(kinds) != 1 or len(kinds) != flops.size \
            or any(not isinstance(k, str) or k not in KINDS for k in kinds):
        raise ValueError(f"kernels['kind'] must give one of {KINDS} per kernel")
    return flops, nbytes, launches, np.array(kinds)


#: Most (kernel, column) pairs one call times: each term is an array of that many floats, so
#: 2**24 pairs take about a gigabyte in all (the book's largest sweep has about 20,000).
MAX_KERNEL_CELLS = 2**24


def _kernel_terms(kernels: dict, rates: dict):
    flops, nbytes, launches, kinds = _kernel_arrays(kernels)
    columns = rates["gemm"].size
    if flops.size * columns > MAX_KERNEL_CELLS:
        raise ValueError(f"kernels has {flops.size:,} kernels and the rates {columns:,} columns: "
                         f"more than {MAX_KERNEL_CELLS:,} (kernel, column) pairs to time in one "
                         "call; split the kernels or the columns")
    compute_rate = np.where((kinds == "conv")[:, None], rates["conv"][None, :],
                            rates["gemm"][None, :])
    compute_rate = np.where((kinds == "attention")[:, None],
                            rates.get("attention", rates["gemm"])[None, :], compute_rate)
    memory_rate = np.where((kinds == "weights")[:, None], rates["weights"][None, :],
                           rates["stream"][None, :])
    compute = flops[:, None] / compute_rate
    if "dequantized" in kernels:
        unpacked = _kernel_column(kernels, "dequantized", flops.size)
        compute = np.maximum(compute, unpacked[:, None] / rates["dequant"][None, :])
    memory_s = nbytes[:, None] / memory_rate
    floor = np.broadcast_to(rates["floor"][None, :], compute.shape)
    return compute, memory_s, floor, launches[:, None]


def _gap(rates: dict) -> np.ndarray:
    return rates.get("gap", np.zeros_like(rates["gemm"]))


def _kernel_seconds(kernels: dict, rates: dict):
    """Per-kernel GPU seconds (kernels, columns), the index of each kernel's largest term, launches."""
    compute, memory_s, floor, launches = _kernel_terms(kernels, rates)
    which = np.argmax(np.stack([compute, memory_s, floor]), axis=0)
    body = np.maximum(np.maximum(compute, memory_s), floor)
    return launches * (body + _gap(rates)[None, :]), which, launches


def device_seconds(kernels: dict, rates: dict) -> np.ndarray:
    """GPU seconds of a whole step for each column of ``rates`` (a dict like :func:`achieved_rates`).

    The columns need not be cards: the calibration sweeps one constant by giving each column
    another value of it.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    if not isinstance(rates, dict) or not set(RATE_KEYS) <= set(rates):
        raise ValueError(f"rates must be a dict with the keys {', '.join(RATE_KEYS)} "
                         "(and optionally attention, else the gemm rate, and gap, else 0)")
    _unknown_keys("rates", rates, RATE_KEYS + OPTIONAL_RATE_KEYS)
    keys = RATE_KEYS + tuple(k for k in OPTIONAL_RATE_KEYS if k in rates)
    rates = {k: np.atleast_1d(_checks.positive(f"rates[{k!r}]", rates[k])).astype(float)
             if k not in ("floor", "host", "gap") else
             np.atleast_1d(_checks.non_negative(f"rates[{k!r}]", rates[k])).astype(float)
             for k in keys}
    if len({v.shape for v in rates.values()}) != 1 or rates["gemm"].ndim != 1:
        raise ValueError("rates must hold 1-D arrays of one length")
    return _kernel_seconds(kernels, rates)[0].sum(axis=0)


device_seconds = _checks.finite_result(device_seconds)
#: The keys of :func:`achieved_rates`.
RATE_KEYS = ("gemm", "conv", "stream", "weights", "floor", "host", "peak", "dequant")
#: Keys a rates dict may leave out: "attention" (then the gemm rate) and "gap" (then 0).
OPTIONAL_RATE_KEYS = ("attention", "gap")


def kernel_times(kernels: dict, accelerators, math: str = "16-bit", engine: str = "eager",
                 calibration=None) -> np.ndarray:
    """GPU seconds each kernel of ``kernels`` spends per step on each card: array (kernels, cards).

    launches x max(flops / compute rate, bytes / memory rate, floor), each rate that of the
    kernel's kind on the card (:func:`achieved_rates`).
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    return _kernel_seconds(kernels, achieved_rates(accelerators, math, engine, calibration))[0]


kernel_times = _checks.finite_result(kernel_times)


def step_parts(kernels: dict, accelerators, math: str = "16-bit", engine: str = "eager",
               calibration=None) -> dict:
    """One step's GPU and host seconds per card: {"device", "host", "step"}, arrays (cards,).

    device = the sum of :func:`kernel_times`; host = the kernels launched x the engine's host
    seconds per kernel; the GPU runs asynchronously from the host, so step = max(host, device).
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    rates = achieved_rates(accelerators, math, engine, calibration)
    times, _, launches = _kernel_seconds(kernels, rates)
    device = times.sum(axis=0)
    host = float(launches.sum()) * rates["host"]
    return {"device": device, "host": host, "step": np.maximum(device, host)}


step_parts = _checks.finite_result(step_parts)


def step_seconds(kernels: dict, accelerators, engine: str = "eager", math: str = "16-bit",
                 calibration=None) -> np.ndarray:
    """Seconds of one step per card: max(host seconds, GPU seconds) of :func:`step_parts`.

    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    return step_parts(kernels, accelerators, math, engine, calibration)["step"]


step_seconds = _checks.finite_result(step_seconds)


def time_by_regime(kernels: dict, accelerators, math: str = "16-bit", engine: str = "eager",
                   calibration=None) -> dict:
    """Seconds of one step per regime, per card: {regime: array (cards,)}, summing to the step.

    Each kernel's GPU time (:func:`kernel_times`) counts under the largest of its terms:
    "compute", "memory" or "overhead" (the GPU floor of a tiny kernel); where the host is
    slower than the GPU, the difference (the GPU idle, waiting for launches) is overhead too,
    and so is llama.cpp's fixed time per graph node.
    Explained in :doc:`/book/how_a_gpu_runs` (section "Where a training step's time goes").
    """
    rates = achieved_rates(accelerators, math, engine, calibration)
    times, which, launches = _kernel_seconds(kernels, rates)
    gaps = launches * _gap(rates)[None, :]
    out = {name: np.where(which == i, times - gaps, 0.0).sum(axis=0)
           for i, name in enumerate(memory.REGIMES)}
    host = float(launches.sum()) * rates["host"]
    out["overhead"] = (out["overhead"] + gaps.sum(axis=0)
                       + np.maximum(host - times.sum(axis=0), 0.0))
    return out


time_by_regime = _checks.finite_result(time_by_regime)


def flop_utilization(kernels: dict, accelerators, math: str = "16-bit", engine: str = "eager",
                     calibration=None):
    """Share of the dense peak a whole step uses, per card: step FLOP / (step seconds x peak).

    Explained in :doc:`/book/how_a_gpu_runs` (section "Where a training step's time goes").
    """
    flops, _, launches, _ = _kernel_arrays(kernels)
    peak = card_rates(_cards(accelerators), math)[0]
    step = step_seconds(kernels, accelerators, engine, math, calibration)
    return float(np.sum(flops * launches)) / (step * peak)


flop_utilization = _checks.finite_result(flop_utilization)


#: Elementwise traffic per layer and token of a Llama-style decoder, in 16-bit elements read
#: plus written, forward, as eager PyTorch runs it (torchtitan's layers): each RMS norm casts to
#: FP32, squares, averages, scales and casts back (10 per element, two norms); rotary embedding
#: casts Q and K to complex FP32, multiplies and casts back (14); SwiGLU's SiLU and product
#: (5 per hidden element); two residual adds (3 each). Compiled, each chain is one kernel that
#: reads its inputs and writes its output once.
LLAMA_ELEMENTWISE = {"RMS norms": ("width", 20.0, 4.0), "rotary embedding": ("qk", 14.0, 2.0),
                     "SwiGLU": ("ffn", 5.0, 3.0), "residual adds": ("width", 6.0, 6.0)}
#: Bytes per logit of the FP32 cross-entropy loss, forward and backward: eager (cast, log-softmax,
#: gather, then its gradient) and compiled (one fused pass each way).
CROSS_ENTROPY_BYTES = {False: 48.0, True: 16.0}
#: Tokens per sequence in the measured Llama 3 8B pre-training runs (torchtitan's default).
LLAMA_TRAIN_SEQ = 8192
#: torchtitan's per-op selective activation checkpointing saves every other matrix product of
#: a layer (Q, K, V, output, gate, up, down in order): K, output and up are recomputed.
SAC_RECOMPUTED = ("K projection", "attention output", "FFN up")


@_checks.finite_result
def llm_train_kernels(batch, seq=LLAMA_TRAIN_SEQ, layers=32, d_model=4096, d_ff=14336, heads=32,
                      kv_heads=8, vocab=128256, gpus=8, fused: bool = False,
                      selective_recompute: bool = True) -> dict:
    """One GPU's share of a mixed-precision pre-training step of a Llama-style decoder, sharded
    over ``gpus`` (FSDP), as kernels: {"kernel", "flops", "bytes", "launches", "kind"}.

    ``batch`` sequences of ``seq`` tokens per GPU. Per layer, forward: the seven weight GEMMs
    (Q, K, V with ``kv_heads`` key/value heads, output, gate, up, down), causal flash attention
    (one fused kernel of kind "attention": half the score matrix, reading Q, K, V and writing
    the output once)
    and the elementwise passes of :data:`LLAMA_ELEMENTWISE` (``fused``: as compiled);
    backward: two GEMMs per forward GEMM, attention at 2.5 x its forward FLOP, twice the
    elementwise traffic. ``selective_recompute`` adds the forward GEMMs of
    :data:`SAC_RECOMPUTED` and the forward elementwise passes again. Then the output
    projection, the FP32 cross entropy (:data:`CROSS_ENTROPY_BYTES`) and AdamW over this GPU's
    shard of the parameters. FSDP's all-gathers and reduce-scatter are assumed hidden behind
    the computation. Defaults: Llama 3 8B, the torchtitan runs' 8,192-token sequences.
    Explained in :doc:`/book/choosing_a_gpu` (section "A modern case: pre-training Llama 3 8B").
    """
    b, s = _checks.count("batch", batch), _checks.count("seq", seq)
    L, d = _checks.count("layers", layers), _checks.count("d_model", d_model)
    f, a = _checks.count("d_ff", d_ff), _checks.count("heads", heads)
    g, v = _checks.count("kv_heads", kv_heads), _checks.count("vocab", vocab)
    n_gpus = _checks.count("gpus", gpus)
    fused = _checks.flag("fused", fused)
    recompute = _checks.flag("selective_recompute", selective_recompute)
    if d % a or a % g:
        raise ValueError("d_model must be a multiple of heads, and heads of kv_heads")
    t, kv = b * s, g * (d // a)
    weights = (("Q projection", d, d), ("K projection", d, kv), ("V projection", d, kv),
               ("attention output", d, d), ("FFN gate", d, f), ("FFN up", d, f),
               ("FFN down", f, d))
    kernels = []
    for name, k, n in weights:
        forward = 2 * L if recompute and name in SAC_RECOMPUTED else L
        kernels.append(_gemm(f"{name} (forward)", t, k, n, forward))
        kernels.append(_gemm(f"{name} (backward, 2 GEMMs)", t, k, n, 2 * L))
    attn = 2.0 * t * s * d
    attn_bytes = 2.0 * t * (2 * d + 2 * kv)
    kernels.append(_kernel("flash attention (forward)", attn, attn_bytes, L, "attention"))
    kernels.append(_kernel("flash attention (backward)", 2.5 * attn, 2 * attn_bytes, L,
                           "attention"))
    sizes = {"width": d, "qk": d + kv, "ffn": f}
    forward_passes = 2 * L if recompute else L
    for name, (size, eager, compiled) in LLAMA_ELEMENTWISE.items():
        nbytes = 2.0 * t * sizes[size] * (compiled if fused else eager)
        kernels.append(_kernel(f"{name} (forward)", 0.0, nbytes, forward_passes))
        kernels.append(_kernel(f"{name} (backward)", 0.0, BACKWARD_ELEMENTWISE * nbytes, L))
    kernels.append(_gemm("output projection (forward)", t, d, v))
    kernels.append(_gemm("output projection (backward, 2 GEMMs)", t, d, v, 2))
    kernels.append(_kernel("cross entropy", 0.0, CROSS_ENTROPY_BYTES[fused] * t * v))
    params = L * (2 * d * d + 2 * d * kv + 3 * d * f) + 2 * v * d
    kernels.append(_kernel("AdamW update (this GPU's shard)", 0.0,
                           ADAM_BYTES_PER_PARAM * params / n_gpus))
    return _table(kernels)


#: Dynamic power of CMOS logic is C V^2 f, and over a GPU's clock range the voltage rises about
#: in proportion to the clock, so power goes as the clock cubed.
POWER_CLOCK_EXPONENT = 3.0


@_checks.finite_result
def sustained_clock_share(power_limit_w, tdp_w):
    """Share of its rated clock a chip sustains under a power limit: (limit / TDP)^(1/3), at most 1.

    From P ~ C V^2 f with V ~ f (:data:`POWER_CLOCK_EXPONENT`). An upper bound: the power that
    does not scale with the clock (memory, leakage, fans) is ignored. Tensor Core rates scale
    with it; DRAM bandwidth does not.
    Explained in :doc:`/book/choosing_a_gpu` (section "A modern case: pre-training Llama 3 8B").
    """
    limit = _checks.positive("power_limit_w", power_limit_w)
    tdp = _checks.positive("tdp_w", tdp_w)
    return np.minimum(1.0, (limit / tdp) ** (1.0 / POWER_CLOCK_EXPONENT))


#: The peak columns a power limit scales (the clock sets them; the DRAM bandwidth it does not).
PEAK_FIELDS = ("fp16_tflops", "bf16_tflops", "tf32_tflops", "fp8_tflops", "int8_tops",
               "fp4_tflops", "fp32_tflops")


def power_limited(accelerator, power_limit_w):
    """The accelerator with every Tensor Core and vector peak times :func:`sustained_clock_share`
    at ``power_limit_w``; its bandwidth and name unchanged (a card without a TDP unchanged).

    Explained in :doc:`/book/choosing_a_gpu` (section "A modern case: pre-training Llama 3 8B").
    """
    acc = _cards([accelerator], "accelerator")[0]
    watts = _checks.scalar("power_limit_w", power_limit_w)
    if not acc.tdp_w:
        return acc
    share = float(sustained_clock_share(watts, acc.tdp_w))
    return dataclasses.replace(acc, **{f: getattr(acc, f) * share for f in PEAK_FIELDS
                                       if getattr(acc, f) is not None})


def flops_by_kind(kernels: dict) -> dict:
    """FLOP of one step per kind of kernel: {kind: FLOP}, summed over launches.

    Explained in :doc:`/book/choosing_a_gpu` (section "A modern case: pre-training Llama 3 8B").
    """
    flops, _, launches, kinds = _kernel_arrays(kernels)
    return {k: float(flops[kinds == k] @ launches[kinds == k]) for k in dict.fromkeys(kinds)}


@_checks.finite_result
def band_bounds(relative, workload: str) -> tuple:
    """The 80% range of a relative throughput on ``workload``: relative / (1 + the 90th and
    the 10th percentile of :func:`band`).

    Explained in :doc:`/book/choosing_a_gpu` (section "A ranking").
    """
    low, high = band(workload)
    rel = _checks.positive("relative", relative)
    return rel / (1.0 + high), rel / (1.0 + low)


def _workload(name) -> str:
    return _checks.choice("workload", name, WORKLOADS)


def kernels_for(workload: str, batch=None, **options) -> dict:
    """The kernel table of ``workload`` at ``batch`` (default: 32 sequences, 256 images, 1 decoded sequence).

    ``options`` go to :func:`transformer_train_kernels`, :func:`cnn_train_kernels` or
    :func:`decode_kernels`.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    workload = _workload(workload)
    _check_options(workload, options)
    build, default = _BUILDERS[workload]
    return build(default if batch is None else batch, **options)


def _builders() -> dict:
    return {"transformer-train": (transformer_train_kernels, 32),
            "cnn-train": (cnn_train_kernels, 256), "llm-decode": (decode_kernels, 1)}


def _workload_options(workload: str) -> tuple:
    """The options (keyword arguments besides ``batch``) that ``workload``'s kernel builder takes."""
    import inspect

    build = _BUILDERS[workload][0]
    return tuple(n for n in inspect.signature(build).parameters if n != "batch")


def _check_options(workload: str, options: dict, own: tuple = ()) -> None:
    """Refuse an option ``workload`` does not take (a misspelling, or another workload's), naming
    it and the allowed ones; ``own`` are the calling function's own keyword parameters."""
    allowed = _workload_options(workload) + tuple(own)
    unknown = [k for k in options if k not in allowed]
    if unknown:
        raise ValueError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))} for workload {workload!r} "
                         f"(allowed: {', '.join(allowed)})")


_BUILDERS = _builders()

MATH = ("16-bit", "fp8")


def _peak(acc, math: str) -> float:
    if math == "fp8" and acc.fp8_tflops is not None:
        return acc.peak_flops("fp8")
    return acc.peak_flops("fp16" if acc.fp16_tflops is not None else "bf16")


def card_rates(accelerators, math: str = "16-bit") -> tuple[np.ndarray, np.ndarray]:
    """Dense Tensor Core peak (FLOP/s) and DRAM bandwidth (bytes/s) of each card.

    ``math="16-bit"``: FP16, else BF16, with FP32 accumulation (the half rate on GeForce cards).
    ``math="fp8"``: the FP8 peak where the card has one, else the 16-bit peak.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    math = _checks.choice("math", math, MATH)
    cards = _cards(accelerators)
    return (np.array([_peak(a, math) for a in cards]), np.array([a.bandwidth for a in cards]))


def _cards(accelerators, name: str = "accelerators") -> list:
    if accelerators is None:
        return hardware.accelerators()
    if isinstance(accelerators, (str, hardware.Accelerator)):
        accelerators = [accelerators]
    if not isinstance(accelerators, (list, tuple)) or not accelerators:
        raise ValueError(f"{name} must be an accelerator name, an Accelerator row or a non-empty "
                         f"list of them (got {accelerators!r:.60})")
    cards = []
    for a in accelerators:
        if isinstance(a, hardware.Accelerator):
            cards.append(a)
        elif isinstance(a, str):
            try:
                cards.append(hardware.get(a))
            except ValueError as err:
                raise ValueError(f"{name}: {err}") from None
        else:
            raise ValueError(f"{name} must hold accelerator names or Accelerator rows (got {a!r:.60})")
    return cards


#: The largest batch the ranking and throughput functions take (as :func:`decode_throughput`).
MAX_BATCH = 2**31


def _batches(batch, n: int) -> list:
    if batch is None:
        return [None] * n
    if isinstance(batch, np.ndarray) and batch.ndim == 0:
        batch = batch.item()
    if isinstance(batch, (list, tuple, np.ndarray)):
        values = list(np.asarray(batch, dtype=object).ravel()) if not isinstance(batch, list) \
            else batch
        if len(values) != n:
            raise ValueError(f"batch must be one value or one per accelerator ({n}), "
                             f"got {len(values)}")
        return [_checks.count("batch", b, MAX_BATCH) for b in values]
    return [_checks.count("batch", batch, MAX_BATCH)] * n


#: The engine each workload is modelled with unless another is named: the training runs the
#: book checks against ran eager PyTorch, the decoding runs llama.cpp.
DEFAULT_ENGINE = {"transformer-train": "eager", "cnn-train": "eager", "llm-decode": "llama.cpp"}
DEFAULT_BATCH = {"transformer-train": 32, "cnn-train": 256, "llm-decode": 1}


def throughput(workload: str, accelerators=None, batch=None, math: str = "16-bit",
               engine: str | None = None, calibration=None, **options) -> np.ndarray:
    """Modelled throughput of each card in :data:`UNITS` of ``workload``: batch / step seconds.

    ``batch`` is one value for all cards or one per card; ``math`` picks the Tensor Core peak
    (:func:`card_rates`); ``engine`` how kernels are issued (default :data:`DEFAULT_ENGINE`);
    ``calibration`` the fitted constants (default: :func:`gpumodel.calibration.default`);
    ``options`` describe the workload (see :func:`kernels_for`).
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    workload = _workload(workload)
    engine = DEFAULT_ENGINE[workload] if engine is None else _engine(engine)
    cards = _cards(accelerators)
    batches = _batches(batch, len(cards))
    cal = _calibration(calibration)
    out = np.empty(len(cards))
    for b in dict.fromkeys(batches):
        where = [i for i, x in enumerate(batches) if x == b]
        table = kernels_for(workload, b, **options)
        steps = step_seconds(table, [cards[i] for i in where], engine, math, cal)
        out[where] = (DEFAULT_BATCH[workload] if b is None else float(b)) / steps
    return out


throughput = _checks.finite_result(throughput)


def decode_throughput(accelerators, batches, engine: str = "llama.cpp", calibration=None,
                      **options) -> np.ndarray:
    """Decoding tokens/s of each card (rows) at each batch size (columns): :func:`throughput` for "llm-decode".

    Explained in :doc:`/book/choosing_a_gpu` (section "Decoding: bandwidth over bytes per token").
    """
    cards = _cards(accelerators)
    b = np.atleast_1d(_checks.positive_int("batches", batches)).astype(float)
    if b.ndim != 1 or np.any(b > 2.0**31):
        raise ValueError("batches must be a number or a 1-D list of them, each at most 2**31")
    engine = _engine(engine)
    cal = _calibration(calibration)
    _check_options("llm-decode", options)
    out = np.empty((len(cards), b.size))
    for j, batch in enumerate(b):
        table = decode_kernels(int(batch), **options)
        out[:, j] = batch / step_seconds(table, cards, engine, "16-bit", cal)
    return out


decode_throughput = _checks.finite_result(decode_throughput)


_TRAIN_OPTIONS = ("seq", "layers", "d_model", "d_ff", "heads", "vocab", "positions")
_DECODE_WEIGHT_OPTIONS = ("layers", "d_model", "d_ff", "heads", "kv_heads", "vocab")


def memory_need_bytes(workload: str, batch=None, **options) -> float:
    """Memory one card needs to run ``workload`` at ``batch`` (default :data:`DEFAULT_BATCH`), bytes.

    Transformer training: :func:`gpumodel.workloads.training_memory_bytes` of the encoder
    that :func:`transformer_train_kernels` describes; CNN training:
    :func:`cnn_train_memory_bytes`; decoding: the weights at ``weight_bits`` plus ``batch``
    key/value caches of ``context`` tokens (:func:`gpumodel.workloads.inference_memory_bytes`).
    ``options`` are those of :func:`kernels_for`.
    Explained in :doc:`/book/choosing_a_gpu` (section "A ranking").
    """
    workload = _workload(workload)
    b = DEFAULT_BATCH[workload] if batch is None else _checks.count("batch", batch, MAX_BATCH)
    kernels_for(workload, b, **options)
    if workload == "transformer-train":
        arch = {**BERT_LARGE_SQUAD, **{k: v for k, v in options.items() if k in _TRAIN_OPTIONS}}
        params = workloads.encoder_params(arch["layers"], arch["d_model"], arch["d_ff"],
                                          arch["vocab"], arch["positions"])
        return float(workloads.training_memory_bytes(params, arch["layers"], arch["d_model"],
                                                     arch["heads"], arch["seq"], b))
    if workload == "cnn-train":
        return float(cnn_train_memory_bytes(b, options.get("image", 224)))
    arch = {k: v for k, v in options.items() if k in _DECODE_WEIGHT_OPTIONS}
    weights = weight_bytes(options.get("weight_bits", 16.0), **arch)
    kv = kv_cache_bytes(options.get("context", 2048), kv_bits=options.get("kv_bits", 16.0),
                        **{k: v for k, v in arch.items() if k not in ("d_ff", "vocab")})
    return float(workloads.inference_memory_bytes(weights, kv, b))


def fit_margin() -> float:
    """The largest share of usable memory that a measured run's modelled need took.

    Lambda's BERT-large runs chose each card's batch by its memory and kept a margin; this
    is the fullest of them by :func:`memory_need_bytes`, so a job "fits" a card where its
    modelled need is at most this share of the card's usable memory.
    Explained in :doc:`/book/choosing_a_gpu` (section "Memory: what fits").
    """
    return _fit_margin()


@functools.lru_cache(maxsize=None)
def _fit_margin() -> float:
    shares = []
    for row in measured.measurements(VALIDATION["transformer-train"][0]):
        usable = hardware.get(row["hardware"]).usable_memory_bytes
        if usable is not None:
            shares.append(memory_need_bytes("transformer-train", int(row["batch"])) / usable)
    return float(max(shares))


def _room(card) -> float:
    return fit_margin() * (card.usable_memory_bytes or card.memory_bytes)


def largest_batch(workload: str, accelerators=None, cap=None, **options) -> np.ndarray:
    """The largest batch, up to ``cap`` (default :data:`DEFAULT_BATCH`), that each card holds.

    A card holds a batch when :func:`memory_need_bytes` is at most :func:`fit_margin` of its
    usable memory (the nominal capacity where none is published). 0 where not even a batch
    of one fits.
    Explained in :doc:`/book/choosing_a_gpu` (section "A ranking").
    """
    workload = _workload(workload)
    cap = DEFAULT_BATCH[workload] if cap is None else _checks.count("cap", cap)
    cards = _cards(accelerators)
    fixed = memory_need_bytes(workload, 1, **options)
    per_item = memory_need_bytes(workload, 2, **options) - fixed
    if not per_item > 0:  # the per-item memory vanishes next to a huge fixed one (rounding)
        shown = ", ".join(f"{k}={_checks._brief(v)}" for k, v in options.items()) or "the defaults"
        raise ValueError(f"largest_batch: the memory per batch item is lost in rounding next to "
                         f"{fixed:.3g} bytes of fixed memory; {shown} too large for a card")
    fixed -= per_item
    room = np.array([_room(a) for a in cards])
    return np.clip(np.floor((room - fixed) / per_item), 0, cap).astype(int)


def relative_throughput(workload: str, accelerators=None, reference: str = REFERENCE,
                        batch=None, **options) -> np.ndarray:
    """Each card's modelled throughput divided by the ``reference`` card's, same settings.

    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    if isinstance(batch, (list, tuple)) or np.ndim(batch) > 0:
        raise ValueError("relative_throughput takes one batch for all cards; use throughput() "
                         "for per-card batches")
    cards = _cards(accelerators) + _cards([reference], "reference")
    speed = throughput(workload, cards, batch, **options)
    return speed[:-1] / speed[-1]


relative_throughput = _checks.finite_result(relative_throughput)


# --- measured reality -------------------------------------------------------------------------

#: The measured runs each workload is checked against (ids ``lambda.<model>.*`` and
#: ``decode.<model>.*`` in ``data/measurements.csv``) and the card they are relative to.
VALIDATION = {"transformer-train": ("lambda.bert_large.", "A100 SXM4 80GB"),
              "cnn-train": ("lambda.resnet50.", "A100 SXM4 80GB"),
              "llm-decode": ("decode.llama3_8b_f16.", "A100 SXM4 80GB")}
#: Rival predictors of relative speed: the model, the bandwidth ratio, the 16-bit peak ratio.
PREDICTORS = ("model", "bandwidth", "peak")


def _detail_value(row, key: str) -> str:
    detail = row.get("detail") or ""
    if f"{key}=" not in detail:
        raise ValueError(f"measured row {row.get('id')!r} states no {key}= in its detail")
    return detail.split(f"{key}=")[1].split(";")[0].strip()


def _detail_number(row, key: str, whole: bool = False) -> float:
    """The number ``key=`` of a row's detail: positive and finite (whole if ``whole``), never truncated."""
    text = _detail_value(row, key)
    number = _checks.plain_number(text)
    if not (math.isfinite(number) and number > 0 and (not whole or number == int(number))):
        kind = "a whole number >= 1" if whole else "a positive finite number"
        raise ValueError(f"measured row {row.get('id')!r}: {key}= in its detail must be {kind} "
                         f"(got {text!r:.40})")
    return number


def _decode_options(row) -> dict:
    """Workload options of a measured decoding row: weight bits from the stated file size."""
    params = _detail_number(row, "params")
    nbytes = _detail_number(row, "file_bytes")
    options = {"weight_bits": 8.0 * nbytes / params,
               "context": int(_detail_number(row, "context", whole=True))}
    if "70b" in row["id"]:
        options.update(workloads.LLAMA3_70B)
    return options


def decode_row_kernels(row) -> dict:
    """The kernel table of a measured llama.cpp decoding row (``decode.*``), batch 1.

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    if not (isinstance(row, dict) and isinstance(row.get("id"), str)
            and isinstance(row.get("detail"), str)):
        raise ValueError("row must be a measured decoding row: a dict with a str id and detail")
    options = _decode_options(row)
    try:
        return decode_kernels(1, **options)
    except ValueError as err:  # the options come from the row's detail: name the row
        raise ValueError(f"measured row {row['id']!r:.60}: its detail gives options the "
                         f"decoding model refuses ({err})") from None


def validation(workload: str, predictor: str = "model", reference: str | None = None,
               calibration=None) -> list[dict]:
    """Predicted against measured throughput relative to a reference card, one dict per card.

    Each card is modelled at the batch it was measured with. Keys: accelerator, batch,
    measured (in :data:`UNITS`), predicted (same units), measured_relative,
    predicted_relative, error (predicted_relative / measured_relative - 1: positive where the
    model overrates the card against the reference). ``predictor`` is one of
    :data:`PREDICTORS`; ``reference`` defaults to the workload's in :data:`VALIDATION`.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    workload = _workload(workload)
    predictor = _checks.choice("predictor", predictor, PREDICTORS)
    prefix, default = VALIDATION[workload]
    rows = measured.measurements(prefix)
    if not rows:
        raise ValueError(f"no measured rows for {workload} (ids starting {prefix!r})")
    names = [r["hardware"] for r in rows]
    reference = default if reference is None else _cards([reference], "reference")[0].name
    if reference not in names:
        raise ValueError(f"reference must be a card measured for {workload}: "
                         f"{', '.join(names)} (got {reference!r})")
    batches = [int(r["batch"]) for r in rows]
    options = _decode_options(rows[0]) if workload == "llm-decode" else {}
    modelled = throughput(workload, names, batches, calibration=calibration, **options)
    if predictor == "model":
        speed = modelled
    else:
        peak, bw = card_rates(names)
        speed = bw if predictor == "bandwidth" else peak
    ref = names.index(reference)
    out = []
    for name, b, row, s, m in zip(names, batches, rows, speed, modelled):
        m_rel = row["value"] / rows[ref]["value"]
        p_rel = float(s / speed[ref])
        out.append({"accelerator": name, "batch": b, "measured": row["value"],
                    "predicted": float(m), "measured_relative": m_rel,
                    "predicted_relative": p_rel, "error": p_rel / m_rel - 1.0})
    return out


def median_error(workload: str, predictor: str = "model", reference: str | None = None) -> float:
    """Median absolute relative error of :func:`validation` over the cards other than the reference.

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    rows = validation(workload, predictor, reference)
    ref = VALIDATION[_workload(workload)][1] if reference is None else \
        _cards([reference], "reference")[0].name
    return float(np.median([abs(r["error"]) for r in rows if r["accelerator"] != ref]))


# --- ranking and recommendation -----------------------------------------------------------------

def _price(acc, prices: dict) -> float | None:
    return prices.get(acc.name, acc.launch_price_usd)


#: The smallest price a card may be given (a cent); a smaller one overflows value per dollar.
MIN_PRICE_USD = 0.01


def _check_prices(prices) -> dict:
    """``prices`` keyed by the table's accelerator names (matched as :func:`hardware.get` does:
    case, spaces and dashes ignored); two keys naming one card are refused."""
    if prices is None:
        return {}
    if not isinstance(prices, dict):
        raise ValueError("prices must be a dict from accelerator name to US dollars")
    out, given = {}, {}
    for key, value in prices.items():
        name = _cards([key], "prices")[0].name
        if name in out:
            raise ValueError(f"prices names {name!r} twice ({given[name]!r} and {key!r})")
        label = f"prices[{key!r}]"
        price = float(_checks.non_negative(label, _checks.scalar(label, value)))
        if 0 < price < MIN_PRICE_USD:
            raise ValueError(f"{label} must be 0 (no price) or at least {MIN_PRICE_USD:g} US dollars "
                             f"(got {price:g})")
        out[name] = price
        given[name] = key
    return out


#: The measured rows whose left-out errors give each workload's error band.
BAND_ROWS = {"transformer-train": "lambda.bert_large.", "cnn-train": "lambda.resnet50.",
             "llm-decode": "decode."}


@functools.lru_cache(maxsize=None)
def _relative_left_out(workload: str) -> tuple[tuple[str, float], ...]:
    """Left-out errors of relative throughput, (1 + e_card) / (1 + e_reference) - 1, within
    each measured workload against its validation reference, each e predicted with its own
    chip left out of the fit, as (row id, error) (cached: the fits are pure functions of the
    shipped data)."""
    from . import validate
    reference = VALIDATION[workload][1]
    groups: dict = {}
    for r in validate.cross_validate("choosing_a_gpu"):
        if r["id"].startswith(BAND_ROWS[workload]):
            groups.setdefault(r["id"].rsplit(".", 1)[0], {})[r["hardware"]] = r
    return tuple((row["id"], (1 + row["rel_error"]) / (1 + rows[reference]["rel_error"]) - 1)
                 for rows in groups.values() if reference in rows
                 for name, row in rows.items() if name != reference)


def band_errors(workload: str | None = None, prefix: str = "") -> list[float]:
    """The left-out errors of relative throughput behind :func:`band` (None: every workload's),
    of the rows whose id starts with ``prefix`` (such as "decode.llama3_8b_f16.").

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    names = WORKLOADS if workload is None else (_workload(workload),)
    prefix = _checks.text("prefix", prefix)
    errors = [e for w in names for row, e in _relative_left_out(w) if row.startswith(prefix)]
    if not errors:
        raise ValueError(f"prefix {prefix!r:.60} matches no measured row of "
                         f"{workload or 'any workload'}")
    return errors


def band(workload: str | None = None) -> tuple[float, float]:
    """The 10th and 90th percentiles of the left-out error of relative throughput on
    ``workload``'s measured rows (None: every workload's).

    Each card's and the reference card's (the A100 SXM4 80GB of :data:`VALIDATION`)
    throughput is predicted with its own chip left out of the fit (:func:`gpumodel.validate.cross_validate`), and the error of their ratio is
    (1 + e_card) / (1 + e_reference) - 1. A relative prediction r reads as "between
    r / (1 + high) and r / (1 + low)".
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    return _band(None if workload is None else _workload(workload))


@functools.lru_cache(maxsize=None)
def _band(workload: str | None) -> tuple[float, float]:
    """:func:`band` of a known workload name (cached: it is a pure function of the data)."""
    errors = band_errors(workload)
    return float(np.percentile(errors, 10)), float(np.percentile(errors, 90))


def rank(workload: str, reference: str = REFERENCE, accelerators=None, prices=None,
         batch=None, math: str = "16-bit", **options) -> list[dict]:
    """Every card's modelled throughput relative to ``reference``, fastest first (ties by name).

    Without ``batch``, each card runs the largest batch it holds up to the workload's default
    (:func:`largest_batch`); a card that holds no batch gets relative throughput 0 and sorts
    last. With ``batch``, every card runs that batch and ``fits`` says whether it holds it.
    Rows: accelerator, workload, batch, fits, relative_throughput, band_low and band_high
    (the relative throughput divided by 1 + the 90th and 10th percentiles of the left-out
    error of relative throughput on the workload's measured rows: :func:`band`; the
    reference's own row has no band), memory_gib, usable_memory_gib, price_usd (``prices``
    overrides the table's launch price) and relative_per_1000_usd (relative throughput per
    1,000 dollars of card; None without a price).
    Explained in :doc:`/book/choosing_a_gpu` (section "A ranking").
    """
    workload = _workload(workload)
    cards = _cards(accelerators)
    ref = _cards([reference], "reference")[0]
    prices = _check_prices(prices)
    _check_options(workload, options, ("calibration", "engine"))
    both = cards + [ref]
    shape = {k: v for k, v in options.items() if k not in ("calibration", "engine")}
    if batch is None:
        batches = [int(b) for b in largest_batch(workload, both, **shape)]
        if batches[-1] == 0:
            raise ValueError(f"reference {ref.name!r} cannot hold {workload} at a batch of 1 "
                             f"({memory_need_bytes(workload, 1, **shape) / units.GiB:,.1f} GiB "
                             f"needed); pick a card with more memory")
        fits = [b > 0 for b in batches]
    else:
        if isinstance(batch, (list, tuple)) or np.ndim(batch) > 0:
            raise ValueError("rank takes one batch for all cards (or None: the largest each "
                             "card holds); use throughput() for per-card batches")
        batches = _batches(batch, len(both))
        fits = [memory_need_bytes(workload, b, **shape) <= _room(a)
                for a, b in zip(both, batches)]
    running = [i for i, b in enumerate(batches) if b > 0]
    speed = np.zeros(len(both))
    speed[running] = throughput(workload, [both[i] for i in running],
                                [batches[i] for i in running], math=math, **options)
    base = speed[-1]
    rows = []
    for acc, s, b, fit in zip(cards, speed[:-1], batches, fits):
        price = _price(acc, prices)
        rel = float(s / base)
        if acc.name == ref.name or rel == 0.0:
            low, high = rel, rel
        else:
            low, high = band_bounds(rel, workload)
        rows.append({"accelerator": acc.name, "workload": workload, "batch": int(b),
                     "fits": bool(fit), "relative_throughput": rel,
                     "band_low": float(low), "band_high": float(high),
                     "memory_gib": acc.memory_gib, "usable_memory_gib": acc.usable_memory_gib,
                     "price_usd": price,
                     "relative_per_1000_usd": None if not price else float(cost.per_dollar(rel, price))})
    return sorted(rows, key=lambda r: (-r["relative_throughput"], r["accelerator"]))


def recommend(workload: str, budget_usd, memory_gib, eight_bit: bool = False, prices=None,
              accelerators=None, top: int = 5, years=5.0, utilization=0.15,
              usd_per_kwh=0.175) -> list[dict]:
    """A short list: cards priced within ``budget_usd`` with at least ``memory_gib`` of memory, best value first.

    Value is relative throughput per 1,000 dollars of the card's price plus its electricity
    (rated power at ``utilization`` for ``years`` at ``usd_per_kwh``; ``years=0`` for the
    price alone). Memory is the usable memory where the table has it, else the nominal one.
    ``eight_bit`` models training on FP8 Tensor Cores (where a card has them) and decoding
    from 8-bit weights. Every row carries its ``reason``; cards without a price are left out
    (pass ``prices``).
    Explained in :doc:`/book/choosing_a_gpu` (section "A recommendation, computed").
    """
    workload = _workload(workload)
    budget = _checks.scalar("budget_usd", budget_usd)
    need = _checks.scalar("memory_gib", memory_gib)
    if budget <= 0 or need < 0:
        raise ValueError("budget_usd must be > 0 and memory_gib >= 0")
    eight = _checks.flag("eight_bit", eight_bit)
    top = _checks.count("top", top)
    years = _checks.scalar("years", years)
    utilization = _checks.scalar("utilization", utilization)
    usd_per_kwh = _checks.scalar("usd_per_kwh", usd_per_kwh)
    cost.electricity_usd(0.0, utilization, years, usd_per_kwh)
    options = {"weight_bits": 8.0} if eight and workload == "llm-decode" else {}
    math = "fp8" if eight and workload != "llm-decode" else "16-bit"
    cards = {a.name: a for a in _cards(accelerators)}
    rows = rank(workload, accelerators=list(cards.values()), prices=prices, math=math, **options)
    picks = []
    for r in rows:
        memory = r["usable_memory_gib"] or r["memory_gib"]
        if not r["batch"] or r["price_usd"] is None or r["price_usd"] > budget or memory < need:
            continue
        watts = cards[r["accelerator"]].tdp_w or 0.0
        owned = float(cost.ownership_usd(r["price_usd"], watts, utilization, years, usd_per_kwh))
        value = float(cost.per_dollar(r["relative_throughput"], owned)) if owned > 0 else 0.0
        r = dict(r, owned_usd=owned, relative_per_1000_owned_usd=value,
                 reason=(f"{memory:.1f} GiB >= {need:g} GiB needed; ${r['price_usd']:,.0f} <= "
                         f"${budget:,.0f}; {r['relative_throughput']:.2f}x the {REFERENCE}; "
                         f"{value:.3f} per $1,000 with {years:g} years of power"))
        picks.append(r)
    picks.sort(key=lambda r: (-r["relative_per_1000_owned_usd"], -r["relative_throughput"],
                              r["accelerator"]))
    return picks[:top]
