"""The workloads the book's models are run on: dense decoder-only transformers.

Parameter counts, training FLOP per token and model FLOPs utilization (MFU). Sizes are
counts (layers, widths, parameters), work is in FLOP, rates in FLOP/s and tokens/s.
Explained in :doc:`/book/tensor_cores` (section "How busy are Tensor Cores in training?").
"""
from __future__ import annotations

import numpy as np

from . import _checks

#: Llama 3 8B (Grattafiori et al. 2024, Table 3; vocabulary from the released config):
#: 32 layers, model width 4096, feed-forward width 14336, 32 query heads sharing 8 key/value
#: heads, 128,256 tokens, untied input and output embeddings, gated (SwiGLU) feed-forward.
LLAMA3_8B = {"layers": 32, "d_model": 4096, "d_ff": 14336, "heads": 32, "kv_heads": 8,
             "vocab": 128256}

#: Llama 3 70B (Grattafiori et al. 2024, Table 3): 80 layers, width 8192, feed-forward 28672,
#: 64 query heads sharing 8 key/value heads, the same 128,256-token vocabulary.
LLAMA3_70B = {"layers": 80, "d_model": 8192, "d_ff": 28672, "heads": 64, "kv_heads": 8,
              "vocab": 128256}

#: Llama 2 70B (Touvron et al. 2023; widths from the released config): 80 layers, width 8192,
#: feed-forward 28672, 64 query heads sharing 8 key/value heads, 32,000 tokens.
LLAMA2_70B = {"layers": 80, "d_model": 8192, "d_ff": 28672, "heads": 64, "kv_heads": 8,
              "vocab": 32000}

#: Llama 2 7B (Touvron et al. 2023; widths from the released config): all 32 heads carry
#: keys and values, 32,000 tokens.
LLAMA2_7B = {"layers": 32, "d_model": 4096, "d_ff": 11008, "heads": 32, "kv_heads": 32,
             "vocab": 32000}


@_checks.finite_result
def transformer_params(layers, d_model, d_ff, heads, kv_heads, vocab, input_embedding: bool = True):
    """Weights of a decoder-only transformer with grouped-query attention and a gated MLP (count).

    Per layer: query and output projections 2 d^2, key and value projections
    2 d (d kv_heads / heads), gated MLP 3 d d_ff, two norms 2 d; plus the output projection
    vocab d, a final norm d and, if ``input_embedding``, the input embedding vocab d (a table
    lookup, not a matmul: leave it out when counting FLOP, as torchtitan's MFU does).
    Llama 3 8B: 8.03e9 with the input embedding, 7.50e9 without.
    Explained in :doc:`/book/tensor_cores` (section "How busy are Tensor Cores in training?").
    """
    layers = _checks.positive_int("layers", layers)
    d = _checks.positive_int("d_model", d_model)
    vocab = _checks.positive_int("vocab", vocab)
    embedding = _checks.flag("input_embedding", input_embedding)
    per_layer = layer_matmul_params(d, d_ff, heads, kv_heads) + 2 * d
    return layers * per_layer + (2 if embedding else 1) * vocab * d + d


@_checks.finite_result
def layer_matmul_params(d_model, d_ff, heads, kv_heads):
    """Weights in one layer's matmuls: 2 d^2 (query, output) + 2 d (d kv_heads / heads) (key, value) + 3 d d_ff (gated MLP).

    Explained in :doc:`/book/parallelism` (section "Tensor parallelism").
    """
    d = _checks.positive_int("d_model", d_model)
    d_ff = _checks.positive_int("d_ff", d_ff)
    heads = _checks.positive_int("heads", heads)
    kv_heads = _checks.positive_int("kv_heads", kv_heads)
    if np.any(kv_heads > heads):
        raise ValueError("kv_heads must be <= heads")
    return 2 * d * d + 2 * d * (d * kv_heads / heads) + 3 * d * d_ff


@_checks.finite_result
def training_flops_per_token(params, layers, d_model, seq_len, causal: bool = False):
    """Model FLOP per trained token: 6 N + 12 L d T (PaLM's count, Chowdhery et al. 2022, Appendix B).

    6 N for the weight matmuls (2 forward, 4 backward per matmul parameter: pass N without the
    input embedding); 12 L d T for the attention scores QK^T and their product with V over a
    context of T tokens. ``causal=True`` halves the attention term (6 L d T), counting only the
    scores a causal mask keeps. Llama 3 8B at T = 8192: 4.50e10 + 1.29e10 FLOP.
    Explained in :doc:`/book/tensor_cores` (section "How busy are Tensor Cores in training?").
    """
    n = _checks.positive("params", params)
    layers = _checks.positive_int("layers", layers)
    d = _checks.positive_int("d_model", d_model)
    t = _checks.positive_int("seq_len", seq_len)
    attention = 6.0 if _checks.flag("causal", causal) else 12.0
    return 6.0 * n + attention * layers * d * t


@_checks.finite_result
def model_flops_utilization(tokens_per_second, flops_per_token, peak_flops):
    """MFU: the model FLOP/s a run achieves as a fraction of the hardware's peak (0-1 for real runs).

    tokens/s x model FLOP per token / peak FLOP/s. Recomputed activations are not counted
    (that ratio, with them, is hardware FLOPs utilization, HFU).
    Explained in :doc:`/book/tensor_cores` (section "How busy are Tensor Cores in training?").
    """
    tps = _checks.positive("tokens_per_second", tokens_per_second)
    fpt = _checks.positive("flops_per_token", flops_per_token)
    return tps * fpt / _checks.positive("peak_flops", peak_flops)


@_checks.finite_result
def linear_flop_share(layers, d_model, d_ff, heads, kv_heads, vocab, seq_len, output_head: bool = False,
                      causal: bool = False):
    """Share (0-1) of a decoder's training FLOP per token that runs in the linear layers of its blocks.

    6 L x :func:`layer_matmul_params` over :func:`training_flops_per_token` (non-causal, N without
    the input embedding). The rest is the attention scores and their product with V (12 L d T),
    the norms and, unless ``output_head``, the output projection (vocab d): what stays in 16 bits
    when a float8 recipe swaps only the blocks' ``nn.Linear`` layers, as torchtitan's did in
    early 2025 (it skipped the layer named "output"). Llama 3 8B at T = 8192: 0.723. With
    ``causal=True`` the total counts only the scores a causal mask keeps (6 L d T): 0.814.
    Explained in :doc:`/book/tensor_cores` (section "How busy are Tensor Cores in training?").
    """
    head = _checks.flag("output_head", output_head)
    n = transformer_params(layers, d_model, d_ff, heads, kv_heads, vocab, input_embedding=False)
    total = training_flops_per_token(n, layers, d_model, seq_len, causal=causal)
    layers = _checks.positive_int("layers", layers)
    linear = 6.0 * layers * layer_matmul_params(d_model, d_ff, heads, kv_heads)
    if head:
        linear = linear + 6.0 * _checks.positive_int("vocab", vocab) * _checks.positive_int("d_model", d_model)
    return linear / total


@_checks.finite_result
def mixed_peak_flops(fast_share, fast_peak, slow_peak):
    """Peak FLOP/s of a workload whose FLOP run partly at one peak and partly at another.

    A share ``fast_share`` (0-1) of the FLOP at ``fast_peak`` (FP8, say) and the rest at
    ``slow_peak`` (BF16), both in FLOP/s: 1 / (f / fast_peak + (1 - f) / slow_peak), the rate at
    which the whole count would run if each part ran at its own peak (a time-weighted, harmonic
    mean). The fair MFU denominator for a run that converted only some layers; f = 1 gives
    ``fast_peak``. H100 SXM5, f = 0.723: 1.55e15 FLOP/s.
    Explained in :doc:`/book/tensor_cores` (section "How busy are Tensor Cores in training?").
    """
    f = _checks.in_range("fast_share", fast_share, 0.0, 1.0)
    fast = _checks.positive("fast_peak", fast_peak)
    slow = _checks.positive("slow_peak", slow_peak)
    return 1.0 / (f / fast + (1.0 - f) / slow)


@_checks.finite_result
def amdahl_speedup(part_speedup, part_fraction, added_fraction=0.0):
    """Speedup of a whole step when a part of it gets faster (Amdahl's law), with an optional tax.

    In units of the old step time the new step takes ``(1 - part_fraction) + part_fraction /
    part_speedup + added_fraction``; ``part_fraction`` (in [0, 1]) is the old step's share spent
    in the part that speeds up, ``added_fraction`` any new work the change brings (casts,
    transposes, pruning). Returns 1 / that time.
    Explained in :doc:`/book/low_precision` (section "From a faster GEMM to a faster training step").
    """
    s = _checks.positive("part_speedup", part_speedup)
    f = _checks.in_range("part_fraction", part_fraction, 0.0, 1.0)
    t = _checks.non_negative("added_fraction", added_fraction)
    return 1.0 / ((1.0 - f) + f / s + t)


@_checks.finite_result
def part_fraction_needed(step_speedup, part_speedup, added_fraction=0.0):
    """The share of step time :func:`amdahl_speedup` needs in the fast part to reach ``step_speedup``.

    Solves ``1 / E = 1 - f (1 - 1/s) + t`` for ``f``. A result above 1 means no share can reach
    that speedup. Explained in :doc:`/book/low_precision` (section "From a faster GEMM to a faster training step").
    """
    e = _checks.positive("step_speedup", step_speedup)
    s = _checks.positive("part_speedup", part_speedup)
    if np.any(s <= 1):
        raise ValueError("part_speedup must be > 1 to solve for a share of the step")
    t = _checks.non_negative("added_fraction", added_fraction)
    return _share_for(e, s, t)


def _share_for(step, part, added):
    """The share f solving 1 / step = 1 - f (1 - 1 / part) + added (inputs already checked)."""
    return (1.0 - 1.0 / step + added) / (1.0 - 1.0 / part)


@_checks.finite_result
def encoder_params(layers=24, d_model=1024, d_ff=4096, vocab=30522, positions=512):
    """Weights of a BERT-style encoder (count): L (4 d^2 + 2 d d_ff) in the matmuls plus (vocab + positions) d embeddings.

    Biases, norms and the small task head are left out (under 0.2% for BERT-large). BERT-large: 3.34e8.
    Explained in :doc:`/book/choosing_a_gpu` (section "Memory: what fits").
    """
    L = _checks.positive_int("layers", layers)
    d = _checks.positive_int("d_model", d_model)
    f = _checks.positive_int("d_ff", d_ff)
    v = _checks.positive_int("vocab", vocab)
    p = _checks.positive_int("positions", positions)
    return L * (4.0 * d * d + 2.0 * d * f) + (v + p) * d


@_checks.finite_result
def activation_bytes(layers, d_model, heads, seq, batch):
    """Activations a training step keeps for the backward pass, in bytes: L s b h (34 + 5 a s / h).

    Korthikanti et al. 2022, Eq. 1: 16-bit activations and one-byte dropout masks of a layer with
    a 4h GELU MLP, two layer norms and materialized a x s x s attention scores, no recomputation.
    Explained in :doc:`/book/choosing_a_gpu` (section "Memory: what fits").
    """
    L = _checks.positive_int("layers", layers)
    h = _checks.positive_int("d_model", d_model)
    a = _checks.positive_int("heads", heads)
    s = _checks.positive_int("seq", seq)
    b = _checks.positive_int("batch", batch)
    return L * s * b * h * (34.0 + 5.0 * a * s / h)


@_checks.finite_result
def training_memory_bytes(params, layers, d_model, heads, seq, batch, state_bytes=16.0):
    """Memory to train with Adam in mixed precision, in bytes: params x state_bytes + :func:`activation_bytes`.

    ``state_bytes`` = 16: 16-bit weights and gradients (2 + 2), FP32 master weights, momentum
    and variance (12), as in :func:`gpumodel.parallelism.training_memory` without sharding.
    Workspace and allocator fragmentation are not counted.
    Explained in :doc:`/book/choosing_a_gpu` (section "Memory: what fits").
    """
    n = _checks.positive("params", params)
    state = _checks.positive("state_bytes", state_bytes)
    return n * state + activation_bytes(layers, d_model, heads, seq, batch)


@_checks.finite_result
def max_training_batch(memory_bytes, params, layers, d_model, heads, seq, state_bytes=16.0):
    """Largest batch whose :func:`training_memory_bytes` fits in ``memory_bytes`` (0 if not even the weights fit).

    Explained in :doc:`/book/choosing_a_gpu` (section "Memory: what fits").
    """
    room = _checks.positive("memory_bytes", memory_bytes) - \
        _checks.positive("params", params) * _checks.positive("state_bytes", state_bytes)
    per_sequence = activation_bytes(layers, d_model, heads, seq, 1)
    return np.maximum(np.floor(room / per_sequence), 0.0)


@_checks.finite_result
def inference_memory_bytes(weight_bytes, kv_bytes_per_sequence, batch=1):
    """Memory to serve a model, in bytes: weights + batch x one sequence's key/value cache.

    Activations of one decoding step are small and not counted.
    Explained in :doc:`/book/choosing_a_gpu` (section "Memory: what fits").
    """
    w = _checks.positive("weight_bytes", weight_bytes)
    kv = _checks.non_negative("kv_bytes_per_sequence", kv_bytes_per_sequence)
    return w + _checks.positive_int("batch", batch) * kv


#: Bits per parameter that QLoRA's quantization constants add with double quantization
#: (Dettmers et al. 2023, section 3, "Double Quantization"): one 8-bit constant per block of
#: 64 weights plus one 32-bit constant per 256 such constants, 8/64 + 32/(64 x 256) = 0.127
#: (against 32/64 = 0.5 bits with one 32-bit constant per block).
QLORA_CONSTANT_BITS = 8.0 / 64.0 + 32.0 / (64.0 * 256.0)
#: Bits per weight of a QLoRA base model: 4-bit NormalFloat (NF4) plus its constants.
QLORA_WEIGHT_BITS = 4.0 + QLORA_CONSTANT_BITS


@_checks.finite_result
def lora_params(d_in, d_out, rank):
    """Trainable parameters of a LoRA adapter on one d_in x d_out weight matrix (count): rank (d_in + d_out).

    LoRA (Hu et al. 2022, section 4.1) freezes W0 and trains B (d_out x r) and A (r x d_in),
    adding BA to W0. 4096 x 4096 at rank 16: 131,072.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's buyer").
    """
    d_in = _checks.positive_int("d_in", d_in)
    d_out = _checks.positive_int("d_out", d_out)
    return _checks.positive_int("rank", rank) * (d_in + d_out)


@_checks.finite_result
def decoder_lora_params(rank, layers=32, d_model=4096, d_ff=14336, heads=32, kv_heads=8):
    """LoRA parameters (count) with adapters of ``rank`` on all seven matrices of every decoder layer.

    Per layer, :func:`lora_params` of the query and output projections (d x d), the key and
    value projections (d x d kv_heads / heads) and the gated MLP's gate, up (d x d_ff) and down
    (d_ff x d) matrices: rank (9 d + 2 d kv_heads / heads + 3 d_ff). Defaults: Llama 3 8B;
    rank 16: 41,943,040.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's buyer").
    """
    L = _checks.positive_int("layers", layers)
    d = _checks.positive_int("d_model", d_model)
    f = _checks.positive_int("d_ff", d_ff)
    a = _checks.positive_int("heads", heads)
    g = _checks.positive_int("kv_heads", kv_heads)
    r = _checks.positive_int("rank", rank)
    if np.any(d % a) or np.any(a % g):
        raise ValueError("d_model must be a multiple of heads, and heads of kv_heads")
    kv = d * g / a
    # q and o (d + d each), k and v (d + kv each), gate and up (d + d_ff each), down (d_ff + d)
    return L * r * (9.0 * d + 2.0 * kv + 3.0 * f)


@_checks.finite_result
def lora_memory_bytes(frozen_params, adapter_params, weight_bits=16.0, frozen_16bit_params=0.0,
                      adapter_state_bytes=16.0):
    """Memory of LoRA or QLoRA fine-tuning without activations, in bytes.

    frozen_params x weight_bits / 8 (the frozen weights; 16 for LoRA,
    :data:`QLORA_WEIGHT_BITS` for QLoRA's NF4 weights and constants) + frozen_16bit_params x 2
    (frozen weights kept in 16 bits, such as embeddings) + adapter_params x
    ``adapter_state_bytes`` (16: weights and gradients, FP32 master weights and Adam's two
    moments, as in full mixed-precision training; the frozen weights have neither gradients
    nor optimizer state). Activations, workspace and fragmentation are not counted.
    Explained in :doc:`/book/choosing_a_gpu` (section "Today's buyer").
    """
    n = _checks.non_negative("frozen_params", frozen_params)
    bits = _checks.in_range("weight_bits", weight_bits, 1.0, 32.0)
    rest = _checks.non_negative("frozen_16bit_params", frozen_16bit_params)
    a = _checks.non_negative("adapter_params", adapter_params)
    state = _checks.positive("adapter_state_bytes", adapter_state_bytes)
    return n * bits / 8.0 + 2.0 * rest + a * state
