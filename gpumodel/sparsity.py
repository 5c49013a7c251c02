"""Fine-grained structured sparsity (2:4 and its relatives), storage formats, and sparse training.

What the sparse Tensor Cores of Ampere, Ada, Hopper and Blackwell do, on numpy arrays: prune a
matrix A (rows x K) so that every group of consecutive elements along the reduction dimension K
keeps at most a fixed number, compress it into the kept values plus their positions (the
metadata), and multiply from the compressed form. Only A is sparse; B stays dense.

The pattern depends on the element type (PTX ``mma.sp``; cuSPARSELt): 2:4 for 16- and 8-bit
elements, pair-wise 4:8 (2 of 4 pairs) for 4-bit ones, 1:2 for TF32. Sizes are in bits and bytes,
times in seconds, rates in FLOP/s and bytes/s.
Explained in :doc:`/book/sparsity`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import _checks, memory, workloads


@dataclass(frozen=True)
class Pattern:
    """A fine-grained structured pattern: keep ``kept`` of every ``group`` units along K.

    A unit is ``unit`` consecutive elements (1, or 2 for the pair-wise 4:8 pattern), so a group
    spans ``group * unit`` elements. ``metadata_bits`` is what the hardware stores per group to
    say which units were kept.
    """
    name: str
    kept: int
    group: int
    unit: int
    metadata_bits: int

    @property
    def span(self) -> int:
        """Elements along K covered by one group."""
        return self.group * self.unit

    @property
    def density(self) -> float:
        """Share of the elements that is kept."""
        return self.kept / self.group


#: The patterns, by name (PTX ISA, "Sparse matrix storage"). 2:4 names its two kept elements with
#: two 2-bit indices; 4:8 keeps 2 of the 4 pairs of 8 elements, named by two 2-bit pair indices;
#: 1:2 (TF32) spends a 4-bit index on every 2 elements (a TF32 element counts as two 16-bit halves).
PATTERNS = {
    "2:4": Pattern("2:4", kept=2, group=4, unit=1, metadata_bits=4),
    "4:8": Pattern("4:8", kept=2, group=4, unit=2, metadata_bits=4),
    "1:2": Pattern("1:2", kept=1, group=2, unit=1, metadata_bits=4),
}

#: Element bits and the sparse pattern of each element type the sparse Tensor Cores take.
ELEMENT_BITS = {"tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "fp4": 4, "int4": 4}
PATTERN_OF = {"tf32": "1:2", "fp16": "2:4", "bf16": "2:4", "fp8": "2:4", "int8": "2:4",
              "fp4": "4:8", "int4": "4:8"}

#: The storage formats compared in :func:`storage_fraction`.
FORMATS = ("dense", "structured", "bitmap", "csr")


def pattern(pattern: str) -> Pattern:
    """The :class:`Pattern` called ``pattern`` ("2:4", "4:8" or "1:2").

    Explained in :doc:`/book/sparsity` (section "What the hardware does").
    """
    return PATTERNS[_checks.choice("pattern", pattern, PATTERNS)]


def pattern_for(dtype: str) -> Pattern:
    """The sparse pattern the Tensor Cores use for elements of ``dtype``.

    Explained in :doc:`/book/sparsity` (section "What the hardware does").
    """
    return PATTERNS[PATTERN_OF[_checks.choice("dtype", dtype, PATTERN_OF)]]


def _matrix(name: str, value) -> np.ndarray:
    arr = _checks.as_array(name, value)
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (got shape {arr.shape})")
    return arr


def _grouped(name: str, a: np.ndarray, pat: Pattern) -> np.ndarray:
    """``a`` as (rows, groups, group units, unit elements); K must be a multiple of the span."""
    rows, k = a.shape
    if k % pat.span:
        raise ValueError(f"{name} must have a reduction dimension (columns) that is a multiple of "
                         f"{pat.span} for the {pat.name} pattern (got {k}); pad it with zero "
                         f"columns (and B with zero rows) to the next multiple")
    return a.reshape(rows, k // pat.span, pat.group, pat.unit)


def _kept_units(groups: np.ndarray, pat: Pattern) -> np.ndarray:
    """Indices (ascending) of the ``kept`` units of largest magnitude in each group; ties keep the first."""
    score = np.abs(groups).sum(axis=-1)
    order = np.argsort(-score, axis=-1, kind="stable")[..., :pat.kept]
    return np.sort(order, axis=-1)


@_checks.finite_result
def keep_mask(a, pattern: str = "2:4") -> np.ndarray:
    """Boolean mask of the elements that magnitude pruning to ``pattern`` keeps.

    ``a`` is rows x K with K the reduction dimension (the sparse operand A of C = A B); in every
    group along K the units of largest magnitude (sum of |x| over a pair for 4:8) survive, ties
    going to the first. Explained in :doc:`/book/sparsity` (section "What the hardware does").
    """
    pat = PATTERNS[_checks.choice("pattern", pattern, PATTERNS)]
    a = _matrix("a", a)
    groups = _grouped("a", a, pat)
    mask = np.zeros(groups.shape[:-1], dtype=bool)
    np.put_along_axis(mask, _kept_units(groups, pat), True, axis=-1)
    return np.repeat(mask, pat.unit, axis=-1).reshape(a.shape)


@_checks.finite_result
def prune(a, pattern: str = "2:4") -> np.ndarray:
    """``a`` with every element outside :func:`keep_mask` set to zero.

    Explained in :doc:`/book/sparsity` (section "What the hardware does").
    """
    return np.where(keep_mask(a, pattern), _matrix("a", a), 0.0)


@_checks.finite_result
def follows_pattern(a, pattern: str = "2:4") -> bool:
    """Whether no group of ``a`` along K has more non-zero units than ``pattern`` keeps.

    Explained in :doc:`/book/sparsity` (section "What the hardware does").
    """
    pat = PATTERNS[_checks.choice("pattern", pattern, PATTERNS)]
    groups = _grouped("a", _matrix("a", a), pat)
    return bool(((groups != 0).any(axis=-1).sum(axis=-1) <= pat.kept).all())


@_checks.finite_result
def violation_share(a, pattern: str = "2:4") -> float:
    """Share of the groups of ``a`` along K with more non-zero units than ``pattern`` keeps.

    0 for a matrix the sparse Tensor Cores can take as it is; a random matrix with half its
    elements zero violates 2:4 in 5 of 16 groups (3 or 4 non-zeros).
    Explained in :doc:`/book/sparsity` (section "What 2:4 costs in accuracy").
    """
    pat = PATTERNS[_checks.choice("pattern", pattern, PATTERNS)]
    groups = _grouped("a", _matrix("a", a), pat)
    return float(((groups != 0).any(axis=-1).sum(axis=-1) > pat.kept).mean())


@_checks.finite_result
def compress(a, pattern: str = "2:4") -> tuple[np.ndarray, np.ndarray]:
    """The compressed form of a pruned matrix: (values, positions).

    ``values`` is rows x (K x density): the kept elements in order. ``positions`` is
    rows x (K / span) x kept: the index of each kept unit inside its group (0-3), which is what
    the 2-bit metadata stores. ``a`` must already follow the pattern (:func:`prune` it first):
    compression drops only zeros. Explained in :doc:`/book/sparsity` (section "What the hardware does").
    """
    pat = PATTERNS[_checks.choice("pattern", pattern, PATTERNS)]
    a = _matrix("a", a)
    if not follows_pattern(a, pat.name):
        raise ValueError(f"a does not follow the {pat.name} pattern (a group along K has more than "
                         f"{pat.kept} non-zero units); prune it first")
    groups = _grouped("a", a, pat)
    positions = _kept_units(groups, pat)
    values = np.take_along_axis(groups, positions[..., None], axis=2)
    return values.reshape(a.shape[0], -1), positions.astype(np.uint8)


def _compressed(values, positions, pat: Pattern):
    values = _matrix("values", values)
    positions = _checks.as_array("positions", positions)
    rows, width = values.shape
    per_group = pat.kept * pat.unit
    if width % per_group or positions.shape != (rows, width // per_group, pat.kept):
        raise ValueError(f"positions must have shape (rows, values columns / {per_group}, {pat.kept}) "
                         f"= ({rows}, {width / per_group:g}, {pat.kept}) for the {pat.name} pattern "
                         f"(got {positions.shape})")
    if np.any((positions < 0) | (positions >= pat.group) | (positions != np.floor(positions))):
        raise ValueError(f"positions must be whole numbers in [0, {pat.group - 1}]")
    if np.any(np.diff(positions, axis=-1) <= 0):
        raise ValueError("positions must be strictly increasing within each group")
    return values, positions.astype(np.int64)


def _columns(positions: np.ndarray, pat: Pattern) -> np.ndarray:
    """Column of A (row of B) of every compressed value: rows x (K x density)."""
    rows, groups, _ = positions.shape
    start = np.arange(groups)[None, :, None] * pat.span + positions * pat.unit
    return (start[..., None] + np.arange(pat.unit)).reshape(rows, -1)


@_checks.finite_result
def decompress(values, positions, pattern: str = "2:4") -> np.ndarray:
    """The dense rows x K matrix that :func:`compress` turned into ``values`` and ``positions``.

    Explained in :doc:`/book/sparsity` (section "What the hardware does").
    """
    pat = PATTERNS[_checks.choice("pattern", pattern, PATTERNS)]
    values, positions = _compressed(values, positions, pat)
    rows = values.shape[0]
    dense = np.zeros((rows, positions.shape[1] * pat.span))
    np.put_along_axis(dense, _columns(positions, pat), values, axis=1)
    return dense


@_checks.finite_result
def compressed_matmul(values, positions, b, pattern: str = "2:4") -> np.ndarray:
    """C = A B computed from A's compressed form, the way a sparse Tensor Core does it.

    The metadata selects, for every kept value of A, the row of B it meets; the product is then a
    dense matmul of half the depth. Equals ``decompress(values, positions) @ b`` to rounding
    (exactly on integer-valued data). Explained in :doc:`/book/sparsity` (section "What the hardware does").
    """
    pat = PATTERNS[_checks.choice("pattern", pattern, PATTERNS)]
    values, positions = _compressed(values, positions, pat)
    b = _matrix("b", b)
    k = positions.shape[1] * pat.span
    if b.shape[0] != k:
        raise ValueError(f"b must have {k} rows, the reduction dimension of A (got {b.shape[0]})")
    gathered = b[_columns(positions, pat)]
    return np.einsum("rk,rkn->rn", values, gathered)


# --- storage -----------------------------------------------------------------------------------

@_checks.finite_result
def compressed_fraction(dtype: str = "fp16"):
    """Size of a 2:4-style compressed matrix relative to dense, metadata included.

    (kept values x element bits + metadata bits) / (group elements x element bits), per group:
    fp16 (2 x 16 + 4) / 64 = 0.5625, fp8 and int8 0.625, fp4 and int4 with 4:8 (16 + 4) / 32 =
    0.625, tf32 (32 + 4) / 64 = 0.5625.
    Explained in :doc:`/book/sparsity` (section "What it saves in memory").
    """
    dtype = _checks.choice("dtype", dtype, PATTERN_OF)
    pat, bits = pattern_for(dtype), ELEMENT_BITS[dtype]
    return (pat.kept * pat.unit * bits + pat.metadata_bits) / (pat.span * bits)


@_checks.finite_result
def compressed_bytes(rows, cols, dtype: str = "fp16"):
    """Bytes of a rows x cols matrix in the compressed form of ``dtype``'s pattern, metadata included.

    Explained in :doc:`/book/sparsity` (section "What it saves in memory").
    """
    rows = _checks.positive_int("rows", rows)
    cols = _checks.positive_int("cols", cols)
    dtype = _checks.choice("dtype", dtype, PATTERN_OF)
    return rows * cols * ELEMENT_BITS[dtype] / 8 * compressed_fraction(dtype)


@_checks.finite_result
def storage_fraction(density, value_bits=16, fmt: str = "csr", index_bits=16):
    """Bytes of a sparse matrix in format ``fmt`` over its dense bytes, at a share ``density`` of non-zeros.

    - "dense": 1;
    - "bitmap": one bit per element plus the non-zero values, density + 1 / value_bits;
    - "csr": each non-zero's value and its column index, density (value_bits + index_bits) /
      value_bits (the row pointers, one per row, are left out: they vanish for long rows);
    - "structured": the 2:4 compressed form, (2 value_bits + 4) / (4 value_bits), whatever the
      density (a 2:4 matrix is at most half full).
    Explained in :doc:`/book/sparsity` (section "What it saves in memory").
    """
    d = _checks.in_range("density", density, 0.0, 1.0)
    vb = _checks.positive_int("value_bits", value_bits)
    ib = _checks.positive_int("index_bits", index_bits)
    fmt = _checks.choice("fmt", fmt, FORMATS)
    d, vb, ib = np.broadcast_arrays(d, vb, ib)
    table = {"dense": np.ones_like(d), "bitmap": d + 1.0 / vb, "csr": d * (vb + ib) / vb,
             "structured": (2.0 * vb + 4.0) / (4.0 * vb)}
    out = table[fmt]
    return out if out.ndim else float(out)


@_checks.finite_result
def break_even_density(value_bits=16, fmt: str = "csr", index_bits=16):
    """The density below which format ``fmt`` ("bitmap" or "csr") is smaller than dense.

    bitmap: 1 - 1 / value_bits; csr: value_bits / (value_bits + index_bits).
    Explained in :doc:`/book/sparsity` (section "What it saves in memory").
    """
    vb = _checks.positive_int("value_bits", value_bits)
    ib = _checks.positive_int("index_bits", index_bits)
    fmt = _checks.choice("fmt", fmt, ("bitmap", "csr"))
    out = 1.0 - 1.0 / vb if fmt == "bitmap" else vb / (vb + ib)
    out = out * np.ones(np.broadcast(vb, ib).shape)
    return out if out.ndim else float(out)


# --- speed ---------------------------------------------------------------------------------------

@_checks.finite_result
def gemm_bytes(m, k, n, dtype: str = "fp16", sparse: bool = False):
    """Bytes a C = A B GEMM (A m x k, B k x n, C m x n) reads and writes at least, in bytes.

    With ``sparse`` A is stored compressed (:func:`compressed_fraction`), B and C dense.
    Explained in :doc:`/book/sparsity` (section "Today's model: half the math, not half the time").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    dtype = _checks.choice("dtype", dtype, PATTERN_OF)
    sparse = _checks.flag("sparse", sparse)
    size = ELEMENT_BITS[dtype] / 8
    a_share = compressed_fraction(dtype) if sparse else 1.0
    return size * (m * k * a_share + k * n + m * n)


@_checks.finite_result
def operand_bytes(m, k, n, dtype: str = "fp16", sparse: bool = False):
    """Bytes of the two input operands of an m x k x n matrix product (a tile, or one Tensor Core instruction).

    A (m x k) is compressed with its metadata when ``sparse``, B (k x n) never is. A sparse
    instruction of depth 2k takes the cycles of a dense one of depth k, so the operand bytes it
    needs per cycle grow by ``operand_bytes(m, 2 k, n, sparse=True) / operand_bytes(m, k, n)``.
    Explained in :doc:`/book/sparsity` (section "The post's argument as a worked case").
    """
    m, k, n = (_checks.positive_int(name, v) for name, v in (("m", m), ("k", k), ("n", n)))
    dtype = _checks.choice("dtype", dtype, PATTERN_OF)
    sparse = _checks.flag("sparse", sparse)
    a_share = compressed_fraction(dtype) if sparse else 1.0
    return ELEMENT_BITS[dtype] / 8 * (m * k * a_share + k * n)


@_checks.finite_result
def sparse_gemm_terms(m, k, n, peak_flops, bandwidth, dtype: str = "fp16", sparse: bool = True,
                      kernel_efficiency=1.0, overhead_seconds=0.0):
    """The :func:`~gpumodel.memory.kernel_terms` of a GEMM, dense or with A 2:4-sparse, in seconds.

    ``peak_flops`` is the dense peak. The sparse kernel does the same useful 2 m k n FLOP at twice
    the peak times ``kernel_efficiency`` (1 = the hardware's promise; below 1, a kernel that
    reaches less of it than the dense one does) and moves :func:`gemm_bytes` with A compressed.
    Explained in :doc:`/book/sparsity` (section "Today's model: half the math, not half the time").
    """
    sparse = _checks.flag("sparse", sparse)
    eff = _checks.in_range("kernel_efficiency", kernel_efficiency, 1e-3, 1.0)
    peak = _checks.positive("peak_flops", peak_flops)
    rate = peak * 2.0 * eff if sparse else peak
    flops = memory.matmul_flops(_checks.positive_int("m", m), _checks.positive_int("k", k),
                                _checks.positive_int("n", n))
    return memory.kernel_terms(flops, gemm_bytes(m, k, n, dtype, sparse), rate, bandwidth,
                               overhead_seconds)


@_checks.finite_result
def sparse_gemm_speedup(m, k, n, peak_flops, bandwidth, dtype: str = "fp16",
                        kernel_efficiency=1.0, overhead_seconds=0.0):
    """Dense time over 2:4-sparse time of one GEMM: each the max of its :func:`sparse_gemm_terms`.

    At most 2 (compute-bound), about 1 / :func:`compressed_fraction` when A dominates the bytes of
    a memory-bound GEMM, 1 when launch overhead dominates.
    Explained in :doc:`/book/sparsity` (section "Today's model: half the math, not half the time").
    """
    dense = sparse_gemm_terms(m, k, n, peak_flops, bandwidth, dtype, False, 1.0, overhead_seconds)
    sparse = sparse_gemm_terms(m, k, n, peak_flops, bandwidth, dtype, True, kernel_efficiency,
                               overhead_seconds)
    return np.maximum.reduce(list(dense.values())) / np.maximum.reduce(list(sparse.values()))


@_checks.finite_result
def sparse_ridge_point(peak_flops, bandwidth):
    """The ridge point of the sparse roofline in useful FLOP per byte: 2 x peak_flops / bandwidth.

    Explained in :doc:`/book/sparsity` (section "Today's model: half the math, not half the time").
    """
    return memory.ridge_point(2.0 * _checks.positive("peak_flops", peak_flops), bandwidth)


@_checks.finite_result
def step_speedup(gemm_speedup, sparse_fraction):
    """Speedup of a whole training or inference step when only its sparse GEMMs get faster (Amdahl).

    ``sparse_fraction`` is the share of the dense step's time spent in the GEMMs that become
    sparse. Explained in :doc:`/book/sparsity` (section "Amdahl's law: from a GEMM to a step").
    """
    s = _checks.positive("gemm_speedup", gemm_speedup)
    f = _checks.in_range("sparse_fraction", sparse_fraction, 0.0, 1.0)
    return workloads.amdahl_speedup(s, f)


@_checks.finite_result
def training_gemm_speedup(forward_speedup, sparse_passes=2):
    """Speedup of a linear layer's three training GEMMs when ``sparse_passes`` of them are sparse.

    Forward (Y = X W), input gradient (dX = dY W^T) and weight gradient (dW = X^T dY) cost the
    same FLOP; the weight gradient's output is the weight's shape, so it is never sparse in W's
    pattern: at most two of the three run at ``forward_speedup``, the rest at 1.
    Explained in :doc:`/book/sparsity` (section "Amdahl's law: from a GEMM to a step").
    """
    s = _checks.positive("forward_speedup", forward_speedup)
    p = _checks.in_range("sparse_passes", sparse_passes, 0, 3)
    if np.any(p != np.floor(p)):
        raise ValueError(f"sparse_passes must be a whole number in [0, 3] (got {sparse_passes})")
    return 3.0 / (p / s + (3.0 - p))


@_checks.finite_result
def weight_read_rate(weight_bytes, tokens_per_second):
    """Bytes per second a decoder reads from its weights alone, in bytes/s: weight_bytes x tokens/s.

    At batch 1 every generated token reads every weight once, so a measured decoding speed and the
    model's weight bytes give the bandwidth the weights alone consumed (KV cache, activations and
    any re-reads left out: a lower bound on the DRAM traffic). Compared with the card's bandwidth
    it says how near the run came to its memory roof.
    Explained in :doc:`/book/sparsity` (section "Measured reality").
    """
    size = _checks.positive("weight_bytes", weight_bytes)
    rate = _checks.positive("tokens_per_second", tokens_per_second)
    size, rate = np.broadcast_arrays(size, rate)
    out = size * rate
    return out if out.ndim else float(out)


@_checks.finite_result
def accuracy_recovery(dense_score, sparse_score):
    """A pruned model's benchmark score as a share of its dense model's, in percent (100 = all kept).

    The measure model cards of sparse LLMs quote ("accuracy recovery"): sparse score over dense
    score, both averages of the same benchmarks where higher is better. Not for perplexity, where
    lower is better.
    Explained in :doc:`/book/sparsity` (section "Today's case: sparsity in current LLMs").
    """
    dense = _checks.positive("dense_score", dense_score)
    sparse = _checks.non_negative("sparse_score", sparse_score)
    dense, sparse = np.broadcast_arrays(dense, sparse)
    out = 100.0 * sparse / dense
    return out if out.ndim else float(out)


# --- accuracy ---------------------------------------------------------------------------------

@_checks.finite_result
def magnitude_mask(a, density=0.5) -> np.ndarray:
    """Unstructured magnitude pruning: keep the ``density`` share of largest-|x| elements of ``a``.

    round(density x size) elements survive (ties to the earlier element in row-major order).
    Explained in :doc:`/book/sparsity` (section "What 2:4 costs in accuracy").
    """
    a = _matrix("a", a)
    d = _checks.in_range("density", _checks.scalar("density", density), 0.0, 1.0)
    keep = int(round(float(d) * a.size))
    magnitude = np.abs(a).ravel()
    if keep == 0:
        return np.zeros(a.shape, dtype=bool)
    cut = np.partition(magnitude, magnitude.size - keep)[magnitude.size - keep]
    mask = magnitude > cut
    ties = np.flatnonzero(magnitude == cut)
    mask[ties[:keep - int(mask.sum())]] = True
    return mask.reshape(a.shape)


def _mask_for(a, method):
    if method == "unstructured":
        return magnitude_mask(a, 0.5)
    return keep_mask(a, method)


#: Most multiply-adds of the products :func:`pruning_loss` takes (a 4096 x 4096 ``a`` times
#: 256 columns of ``b``; two such products take about a second on two cores).
MAX_PRUNING_MACS = 2**32
#: The pruning methods compared in :func:`pruning_loss`.
METHODS = ("2:4", "4:8", "unstructured")


@_checks.finite_result
def pruning_loss(a, b, method: str = "2:4") -> dict:
    """What pruning A to 50% by ``method`` loses, as shares of the unpruned quantity.

    - "magnitude": the share of sum |a| removed;
    - "energy": the share of sum a^2 removed (the squared Frobenius norm);
    - "output": ||A B - P(A) B|| / ||A B|| (Frobenius), the relative error of the product.
    ``method`` is "2:4", "4:8" (pairs) or "unstructured" (the largest half of all elements).
    The products are bounded by :data:`MAX_PRUNING_MACS` multiply-adds.
    Explained in :doc:`/book/sparsity` (section "What 2:4 costs in accuracy").
    """
    method = _checks.choice("method", method, METHODS)
    a, b = _matrix("a", a), _matrix("b", b)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"b must have as many rows as a has columns ({a.shape[1]}; got {b.shape[0]})")
    macs = a.shape[0] * a.shape[1] * b.shape[1]
    if macs > MAX_PRUNING_MACS:
        raise ValueError(f"a @ b must take at most {MAX_PRUNING_MACS:,} multiply-adds (rows of a x "
                         f"columns of a x columns of b; got {macs:,}): use fewer columns of b")
    if not np.any(a):
        raise ValueError("a must have a non-zero element")
    mask = _mask_for(a, method)
    removed = np.where(mask, 0.0, a)
    product = a @ b
    norm = np.linalg.norm(product)
    return {"magnitude": float(np.abs(removed).sum() / np.abs(a).sum()),
            "energy": float((removed**2).sum() / (a**2).sum()),
            "output": float(np.linalg.norm(removed @ b) / norm) if norm > 0 else 0.0}


@_checks.finite_result
def random_matrix(rows, cols, tail_df=0.0, seed=0) -> np.ndarray:
    """A seeded rows x cols matrix: standard normal if ``tail_df`` is 0, else Student's t with ``tail_df`` degrees of freedom.

    Small ``tail_df`` (2-5) gives the heavy tails of trained weight matrices.
    Explained in :doc:`/book/sparsity` (section "What 2:4 costs in accuracy").
    """
    rows = _checks.count("rows", rows, 1e5)
    cols = _checks.count("cols", cols, 1e5)
    if rows * cols > 2**24:
        raise ValueError(f"rows x cols must be at most {2**24:,} elements (got {rows * cols:,})")
    df = _checks.scalar("tail_df", tail_df)
    if df != 0 and df < 1:
        raise ValueError(f"tail_df must be 0 (normal) or >= 1 (got {df:g})")
    seed = _checks.seed(seed)
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, cols)) if df == 0 else rng.standard_t(df, (rows, cols))


# --- sparse training (sparse momentum) --------------------------------------------------------

#: Widths of the chapter's multilayer perceptron: inputs, two hidden layers, classes.
MLP_WIDTHS = (64, 64, 64, 10)
#: Where sparse momentum's prune rate decays to (``eta_min`` of the reference code's CosineDecay).
MIN_PRUNE_RATE = 0.005
#: The training runs :func:`train` knows.
TRAINING_METHODS = ("dense", "static", "sparse momentum", "2:4")


@_checks.finite_result
def teacher_dataset(samples=12288, seed=0) -> dict:
    """A seeded classification task: inputs N(0, 1), labels from a random two-layer teacher network.

    ``samples`` inputs of :data:`MLP_WIDTHS`[0] features; the label is the arg-max over classes
    of a tanh network with 32 hidden units plus twice the first ten inputs. Returns {"x", "y"} with the
    first two thirds for training and the rest for testing under "x_test", "y_test".
    Explained in :doc:`/book/sparsity` (section "Sparse training: the post's algorithm").
    """
    samples = _checks.count("samples", samples, 1e5)
    if samples < 3:
        raise ValueError(f"samples must be >= 3 (got {samples})")
    seed = _checks.seed(seed)
    rng = np.random.default_rng(seed)
    inputs, classes = MLP_WIDTHS[0], MLP_WIDTHS[-1]
    x = rng.standard_normal((samples, inputs))
    w1 = rng.standard_normal((inputs, 32)) * 0.5 / np.sqrt(inputs)
    w2 = rng.standard_normal((32, classes))
    y = np.argmax(np.tanh(x @ w1) @ w2 + 2.0 * x[:, :classes], axis=1)
    split = 2 * samples // 3
    return {"x": x[:split], "y": y[:split], "x_test": x[split:], "y_test": y[split:]}


def _forward(weights, biases, masks, x):
    acts = [x]
    for i, (w, b, m) in enumerate(zip(weights, biases, masks)):
        z = acts[-1] @ (w * m).T + b
        acts.append(np.maximum(z, 0.0) if i < len(weights) - 1 else z)
    return acts


def _loss_and_grads(weights, biases, masks, x, y):
    acts = _forward(weights, biases, masks, x)
    logits = acts[-1] - acts[-1].max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(len(y)), y] + 1e-12))
    delta = p
    delta[np.arange(len(y)), y] -= 1.0
    delta /= len(y)
    grads_w, grads_b = [], []
    for i in range(len(weights) - 1, -1, -1):
        grads_w.insert(0, delta.T @ acts[i])
        grads_b.insert(0, delta.sum(axis=0))
        if i:
            delta = (delta @ (weights[i] * masks[i])) * (acts[i] > 0)
    return loss, grads_w, grads_b


def _accuracy(weights, biases, masks, x, y):
    return float(np.mean(np.argmax(_forward(weights, biases, masks, x)[-1], axis=1) == y))


def _random_mask(rng, shape, density):
    """A mask with round(density x size) True entries at random positions."""
    mask = np.zeros(int(np.prod(shape)), dtype=bool)
    mask[rng.permutation(mask.size)[:int(round(density * mask.size))]] = True
    return mask.reshape(shape)


def _sparse_momentum_update(weights, masks, momenta, prune_rate):
    """One mask update of sparse momentum (Dettmers & Zettlemoyer 2019); changes ``masks`` in place.

    As the reference code (sparselearning/core.py and funcs.py): layer importance is the mean
    |momentum| of its active weights, normalised; a layer under 20% sparse whose importance is
    above average prunes at most its sparsity; each layer drops ceil(rate x active) weights of
    least magnitude; the total regrows in proportion to importance, capped at 99% of a layer's
    zeros (the excess goes to the other layers), at the zeros of largest |momentum|. The
    reference's drift correction of the total is left out (the count is kept exact instead).
    """
    count = len(masks)
    importance = np.array([np.abs(v[m]).mean() if m.any() else 0.0 for v, m in zip(momenta, masks)])
    importance = importance / importance.sum() if importance.sum() > 0 else np.full(count, 1 / count)
    removed = np.zeros(count, dtype=int)
    for i, (w, m) in enumerate(zip(weights, masks)):
        sparsity = 1.0 - m.mean()
        rate = min(prune_rate, sparsity) if sparsity < 0.2 and importance[i] > 1 / count else prune_rate
        active = np.flatnonzero(m)
        removed[i] = min(int(np.ceil(rate * active.size)), active.size)
        order = np.argsort(np.abs(w.ravel()[active]), kind="stable")[:removed[i]]
        m.ravel()[active[order]] = False
    room = np.array([np.floor(0.99 * (m.size - m.sum())) for m in masks], dtype=int)
    grow = np.zeros(count, dtype=int)
    left, share = int(removed.sum()), importance.copy()
    while left > 0 and (room - grow).sum() > 0:
        open_ = (room - grow) > 0
        weight = np.where(open_, share, 0.0)
        weight = weight / weight.sum() if weight.sum() > 0 else open_ / open_.sum()
        want = np.floor(left * weight).astype(int)
        want[np.argmax(weight)] += left - want.sum()
        take = np.minimum(want, room - grow)
        grow += take
        left -= int(take.sum())
    for v, m, g in zip(momenta, masks, grow):
        if g:
            idle = np.flatnonzero(~m)
            order = np.argsort(-np.abs(v.ravel()[idle]), kind="stable")[:g]
            m.ravel()[idle[order]] = True


#: Most samples :func:`train` passes through the network, epochs x training samples, and
#: most SGD steps it takes: a few seconds on two cores (the chapter's runs take a fifth).
MAX_TRAINING_SAMPLES = 250_000
MAX_TRAINING_STEPS = 10_000


def _check_training_work(epochs: int, samples: int, batch: int) -> None:
    seen = epochs * (2 * samples // 3)
    steps = epochs * -(-(2 * samples // 3) // batch)
    if seen > MAX_TRAINING_SAMPLES:
        raise ValueError(f"(epochs + finetune_2_4) x training samples (two thirds of samples) "
                         f"must be at most {MAX_TRAINING_SAMPLES:,} (got {epochs} x "
                         f"{2 * samples // 3:,} = {seen:,}): fewer epochs or samples")
    if steps > MAX_TRAINING_STEPS:
        raise ValueError(f"(epochs + finetune_2_4) x steps per epoch (training samples / batch) "
                         f"must be at most {MAX_TRAINING_STEPS:,} (got {steps:,}): a larger "
                         "batch, fewer epochs or fewer samples")


def _on_one_blas_thread(fn):
    """Run ``fn`` with BLAS on one thread (where threadpoolctl is installed). The MLP of the
    section "Sparse training: the post's algorithm" multiplies 128 x 64 matrices, for which
    OpenBLAS's threads cost several times the arithmetic: one run of :func:`train` takes 0.6 s on
    one thread, 4.3 s on two busy cores. Each product is the same sum in the same order, so the
    results are bit for bit the same."""
    @functools.wraps(fn)
    def on_one_thread(*args, **kwargs):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return fn(*args, **kwargs)
        with threadpool_limits(1, user_api="blas"):
            return fn(*args, **kwargs)
    return on_one_thread


@_on_one_blas_thread
@_checks.finite_result
def train(method: str = "sparse momentum", density=0.5, epochs=12, prune_rate=0.5,
          finetune_2_4=0, learning_rate=0.05, batch=128, seed=0, samples=12288) -> dict:
    """Train the chapter's MLP (:data:`MLP_WIDTHS`) on :func:`teacher_dataset` with SGD and momentum 0.9.

    ``method``:
    - "dense";
    - "static": a random mask keeping the share ``density`` of every layer, never changed;
    - "sparse momentum": the same start; after every epoch but the last, each layer loses the
      ``prune_rate`` share of its weights with the smallest magnitude (the rate decaying by a
      cosine to :data:`MIN_PRUNE_RATE` over the run), and as many grow back, shared out in proportion to each layer's mean
      momentum magnitude, at the idle weights with the largest momentum;
    - "2:4": every layer magnitude-pruned to 2:4 along its inputs at the start, never changed.
    ``finetune_2_4`` more epochs then follow with each mask cut to 2:4 (the kept weights of
    largest magnitude) and fixed. Returns per epoch "accuracy" (test), "loss" (training) and
    "density" (epochs x layers), and the final "weights" and "masks". Seeded, deterministic;
    ``samples`` is the size of :func:`teacher_dataset` (two thirds for training). A run is
    bounded by :data:`MAX_TRAINING_SAMPLES` samples seen and :data:`MAX_TRAINING_STEPS` steps.
    Explained in :doc:`/book/sparsity` (section "Sparse training: the post's algorithm").
    """
    method = _checks.choice("method", method, TRAINING_METHODS)
    d = _checks.scalar("density", density)
    if not 0 < d <= 1:
        raise ValueError(f"density must be in (0, 1] (got {d:g})")
    epochs = _checks.count("epochs", epochs, 200)
    rate = float(_checks.in_range("prune_rate", _checks.scalar("prune_rate", prune_rate), 0.0, 1.0))
    extra = int(_checks.in_range("finetune_2_4", _checks.scalar("finetune_2_4", finetune_2_4), 0, 200))
    if extra != _checks.scalar("finetune_2_4", finetune_2_4):
        raise ValueError(f"finetune_2_4 must be a whole number in [0, 200] (got {finetune_2_4})")
    lr = float(_checks.in_range("learning_rate", _checks.scalar("learning_rate", learning_rate), 1e-6, 1.0))
    batch = _checks.count("batch", batch, 4096)
    seed = _checks.seed(seed)
    samples = _checks.count("samples", samples, 5e4)
    _check_training_work(epochs + extra, samples, batch)
    data = teacher_dataset(samples, seed=seed)
    rng = np.random.default_rng(seed + 1)
    shapes = list(zip(MLP_WIDTHS[1:], MLP_WIDTHS[:-1]))
    weights = [rng.standard_normal(s) * np.sqrt(2.0 / s[1]) for s in shapes]
    biases = [np.zeros(s[0]) for s in shapes]
    if method in ("static", "sparse momentum"):
        masks = [_random_mask(rng, s, d) for s in shapes]
    elif method == "2:4":
        masks = [keep_mask(w, "2:4") for w in weights]
    else:
        masks = [np.ones(s, dtype=bool) for s in shapes]
    vel_w = [np.zeros(s) for s in shapes]
    vel_b = [np.zeros(s[0]) for s in shapes]
    x, y = data["x"], data["y"]
    accuracy, losses, densities = [], [], []
    for epoch in range(epochs + extra):
        if epoch == epochs and extra:
            masks = [m & keep_mask(w * m, "2:4") for w, m in zip(weights, masks)]
        for w, m in zip(weights, masks):
            w[~m] = 0.0
        order = rng.permutation(len(y))
        total = 0.0
        for start in range(0, len(y), batch):
            idx = order[start:start + batch]
            loss, gw, gb = _loss_and_grads(weights, biases, masks, x[idx], y[idx])
            total += loss * len(idx)
            for i in range(len(weights)):
                vel_w[i] = 0.9 * vel_w[i] + gw[i]
                vel_b[i] = 0.9 * vel_b[i] + gb[i]
                weights[i] -= lr * vel_w[i] * masks[i]
                biases[i] -= lr * vel_b[i]
        losses.append(total / len(y))
        accuracy.append(_accuracy(weights, biases, masks, data["x_test"], data["y_test"]))
        densities.append([m.mean() for m in masks])
        if method == "sparse momentum" and epoch < epochs - 1:
            cosine = 0.5 * (1.0 + np.cos(np.pi * (epoch + 1) / epochs))
            decayed = MIN_PRUNE_RATE + (rate - MIN_PRUNE_RATE) * cosine
            _sparse_momentum_update(weights, masks, vel_w, decayed)
    return {"accuracy": np.array(accuracy), "loss": np.array(losses), "density": np.array(densities),
            "weights": [w * m for w, m in zip(weights, masks)], "masks": masks}
