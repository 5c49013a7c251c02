"""Tests of gpumodel.sparsity: exact worked examples, properties, and refusals."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpumodel import hardware, sparsity as sp, throughput, workloads

PATTERNS = sorted(sp.PATTERNS)


def matrices(span_multiple=8, integers=False):
    """Random matrices whose column count is a multiple of ``span_multiple``."""
    elements = (st.integers(-8, 8).map(float) if integers
                else st.floats(-1e3, 1e3, allow_nan=False, width=32))
    return st.tuples(st.integers(1, 6), st.integers(1, 4)).flatmap(
        lambda s: hnp.arrays(float, (s[0], s[1] * span_multiple), elements=elements))


# --- worked examples ------------------------------------------------------------------------

def test_prune_keeps_the_two_largest_of_every_four():
    a = [[0.5, -2.0, 0.25, 1.0, 3.0, -0.1, 0.0, 2.5]]
    assert sp.prune(a).tolist() == [[0.0, -2.0, 0.0, 1.0, 3.0, 0.0, 0.0, 2.5]]
    values, positions = sp.compress(sp.prune(a))
    assert values.tolist() == [[-2.0, 1.0, 3.0, 2.5]]
    assert positions.tolist() == [[[1, 3], [0, 3]]]


def test_pairwise_4_8_keeps_whole_pairs():
    a = [[1.0, 1.0, 5.0, -0.1, 0.2, 0.2, 0.0, 3.0]]
    assert sp.prune(a, "4:8").tolist() == [[0.0, 0.0, 5.0, -0.1, 0.0, 0.0, 0.0, 3.0]]


def test_violation_share():
    a = sparsity_demo = [[1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]]
    assert sp.violation_share(a) == 0.5
    assert sp.violation_share(sp.prune(sparsity_demo)) == 0.0
    mask = sp.magnitude_mask(sp.random_matrix(512, 512, seed=9), 0.5)
    assert sp.violation_share(mask * 1.0) == pytest.approx(5 / 16, abs=0.01)


def test_ties_go_to_the_first():
    assert sp.keep_mask([[1.0, 1.0, 1.0, 1.0]]).tolist() == [[True, True, False, False]]


def test_compressed_fractions_include_metadata():
    assert sp.compressed_fraction("fp16") == 0.5625
    assert sp.compressed_fraction("bf16") == 0.5625
    assert sp.compressed_fraction("fp8") == 0.625
    assert sp.compressed_fraction("int8") == 0.625
    assert sp.compressed_fraction("fp4") == 0.625
    assert sp.compressed_fraction("tf32") == 0.5625
    assert sp.compressed_bytes(4096, 4096, "fp16") == 4096 * 4096 * 2 * 0.5625


def test_patterns_follow_the_element_type():
    assert sp.pattern_for("fp16").name == "2:4"
    assert sp.pattern_for("int8").name == "2:4"
    assert sp.pattern_for("int4").name == "4:8"
    assert sp.pattern_for("tf32").name == "1:2"
    assert sp.pattern("4:8").span == 8


def test_storage_formats_at_half_density():
    assert sp.storage_fraction(0.5, 16, "bitmap") == 0.5625
    assert sp.storage_fraction(0.5, 16, "csr", 16) == 1.0
    assert sp.storage_fraction(0.3, 16, "structured") == 0.5625
    assert sp.storage_fraction(0.3, 16, "dense") == 1.0
    assert sp.break_even_density(16, "csr", 16) == 0.5
    assert sp.break_even_density(16, "bitmap") == 0.9375
    assert sp.break_even_density(8, "csr", 32) == 0.2


def test_gemm_speedup_limits():
    h100 = hardware.get("H100 SXM5")
    peak, bw = h100.peak_flops("fp16"), h100.bandwidth
    assert sp.sparse_gemm_speedup(8192, 8192, 8192, peak, bw) == pytest.approx(2.0)
    skinny = sp.sparse_gemm_speedup(8192, 8192, 1, peak, bw)
    assert skinny == pytest.approx(sp.gemm_bytes(8192, 8192, 1) / sp.gemm_bytes(8192, 8192, 1, sparse=True))
    assert 1.7 < skinny < 1 / 0.5625
    assert sp.sparse_gemm_speedup(64, 64, 64, peak, bw, overhead_seconds=5e-6) == 1.0
    assert sp.sparse_gemm_speedup(8192, 8192, 8192, peak, bw, kernel_efficiency=0.7) == pytest.approx(1.4)
    assert sp.sparse_ridge_point(peak, bw) == pytest.approx(2 * peak / bw)


def test_operand_bytes_per_cycle_grow():
    dense = sp.operand_bytes(16, 16, 8)
    sparse = sp.operand_bytes(16, 32, 8, sparse=True)
    assert dense == 2 * (16 * 16 + 16 * 8)
    assert sparse / dense == pytest.approx(1088 / 768)


def test_amdahl():
    assert sp.step_speedup(2.0, 0.5) == pytest.approx(4 / 3)
    assert sp.training_gemm_speedup(2.0, 2) == pytest.approx(1.5)
    assert sp.training_gemm_speedup(2.0, 3) == pytest.approx(2.0)
    assert workloads.amdahl_speedup(2.0, 0.5, 0.25) == 1.0
    f = workloads.part_fraction_needed(1.06, 1.25)
    assert workloads.amdahl_speedup(1.25, f) == pytest.approx(1.06)


def test_unstructured_loses_least():
    a = sp.random_matrix(64, 64)
    b = sp.random_matrix(64, 16, seed=1)
    loss = {m: sp.pruning_loss(a, b, m) for m in sp.METHODS}
    assert loss["unstructured"]["energy"] < loss["2:4"]["energy"] < loss["4:8"]["energy"]
    assert sp.magnitude_mask(a, 0.5).sum() == 64 * 32


def test_training_is_deterministic_and_keeps_density():
    one = sp.train("sparse momentum", 0.5, epochs=3, batch=512)
    two = sp.train("sparse momentum", 0.5, epochs=3, batch=512)
    assert np.array_equal(one["accuracy"], two["accuracy"])
    sizes = np.array([m.size for m in one["masks"]])
    overall = (one["density"] * sizes).sum(axis=1) / sizes.sum()
    assert overall == pytest.approx(np.full(3, overall[0]), abs=2e-3)
    dense = sp.train("dense", epochs=2, batch=512)
    assert (dense["density"] == 1).all()
    structured = sp.train("2:4", epochs=1, batch=512)
    assert all(sp.follows_pattern(w, "2:4") for w in structured["weights"])
    tuned = sp.train("sparse momentum", 0.5, epochs=2, finetune_2_4=1, batch=512)
    assert len(tuned["accuracy"]) == 3
    assert all(sp.follows_pattern(w, "2:4") for w in tuned["weights"])



def test_training_on_one_blas_thread_is_bit_for_bit_the_threaded_training():
    """The speed-up of :func:`sparsity.train` (BLAS on one thread) changes no number of the chapter."""
    one_thread = sp.train("sparse momentum", 0.5, epochs=3, finetune_2_4=1, batch=128, samples=3072)
    threaded = sp.train.__wrapped__("sparse momentum", 0.5, epochs=3, finetune_2_4=1, batch=128,
                                    samples=3072)
    for key in ("accuracy", "loss", "density"):
        assert np.array_equal(one_thread[key], threaded[key]), key
    assert all(np.array_equal(a, b) for a, b in zip(one_thread["weights"], threaded["weights"]))

# --- properties -----------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(matrices(), st.sampled_from(PATTERNS))
def test_pruned_groups_hold_at_most_kept_units(a, name):
    pat = sp.pattern(name)
    pruned = sp.prune(a, name)
    units = (pruned.reshape(a.shape[0], -1, pat.group, pat.unit) != 0).any(axis=-1)
    assert (units.sum(axis=-1) <= pat.kept).all()
    assert sp.follows_pattern(pruned, name)
    assert np.all((pruned == 0) | (pruned == a))


@settings(max_examples=60, deadline=None)
@given(matrices(), st.sampled_from(PATTERNS))
def test_compress_then_decompress_is_exact(a, name):
    pruned = sp.prune(a, name)
    values, positions = sp.compress(pruned, name)
    assert values.shape[1] == a.shape[1] * sp.pattern(name).density
    assert np.array_equal(sp.decompress(values, positions, name), pruned)


@settings(max_examples=60, deadline=None)
@given(matrices(integers=True), st.sampled_from(PATTERNS), st.integers(1, 5))
def test_compressed_matmul_is_exact_on_integers(a, name, n):
    b = np.arange(a.shape[1] * n, dtype=float).reshape(a.shape[1], n) % 7 - 3
    pruned = sp.prune(a, name)
    values, positions = sp.compress(pruned, name)
    assert np.array_equal(sp.compressed_matmul(values, positions, b, name), pruned @ b)


@settings(max_examples=40, deadline=None)
@given(matrices(), st.sampled_from(PATTERNS))
def test_compressed_matmul_matches_dense_on_floats(a, name):
    b = sp.random_matrix(a.shape[1], 3, seed=2)
    pruned = sp.prune(a, name)
    values, positions = sp.compress(pruned, name)
    np.testing.assert_allclose(sp.compressed_matmul(values, positions, b, name), pruned @ b,
                               rtol=1e-12, atol=1e-9 * (1 + np.abs(a).max()))


def test_compressed_size_is_monotone_in_element_bits():
    by_bits = sorted((sp.ELEMENT_BITS[d], sp.compressed_bytes(64, 64, d)) for d in sp.PATTERN_OF)
    sizes = [size for _, size in by_bits]
    assert sizes == sorted(sizes)


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 1), st.integers(2, 64), st.integers(1, 64))
def test_formats_are_dearer_with_more_index_bits(density, value_bits, index_bits):
    csr = sp.storage_fraction(density, value_bits, "csr", index_bits)
    assert csr >= density
    assert sp.storage_fraction(density, value_bits, "csr", index_bits + 1) >= csr
    even = sp.break_even_density(value_bits, "csr", index_bits)
    assert sp.storage_fraction(even, value_bits, "csr", index_bits) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 2**14), st.integers(1, 2**14), st.integers(1, 2**14),
       st.floats(0.1, 1.0), st.floats(0, 1e-4))
def test_sparse_speedup_is_between_one_and_two(m, k, n, efficiency, overhead):
    a100 = hardware.get("A100 SXM4 80GB")
    s = sp.sparse_gemm_speedup(m, k, n, a100.peak_flops("fp16"), a100.bandwidth,
                               kernel_efficiency=1.0, overhead_seconds=overhead)
    assert 1.0 - 1e-12 <= s <= 2.0 + 1e-12
    slower = sp.sparse_gemm_speedup(m, k, n, a100.peak_flops("fp16"), a100.bandwidth,
                                    kernel_efficiency=efficiency, overhead_seconds=overhead)
    assert slower <= s + 1e-12


# --- refusals -------------------------------------------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda: sp.prune([[1.0, 2.0, 3.0]]), "multiple of 4"),
    (lambda: sp.prune([[1.0] * 4], "4:8"), "multiple of 8"),
    (lambda: sp.prune([1.0, 2.0, 3.0, 4.0]), "2-D"),
    (lambda: sp.prune([[[1.0] * 4]]), "2-D"),
    (lambda: sp.prune([[1.0] * 4], "3:4"), "pattern"),
    (lambda: sp.compressed_fraction("fp64"), "dtype"),
    (lambda: sp.compress([[1.0, 2.0, 3.0, 0.0]]), "prune it first"),
    (lambda: sp.decompress([[1.0, 2.0]], [[[2, 1]]]), "increasing"),
    (lambda: sp.decompress([[1.0, 2.0]], [[[0, 4]]]), "positions"),
    (lambda: sp.decompress([[1.0, 2.0]], [[0, 1]]), "positions"),
    (lambda: sp.compressed_matmul([[1.0, 2.0]], [[[0, 1]]], [[1.0]] * 3), "rows"),
    (lambda: sp.storage_fraction(1.5), "density"),
    (lambda: sp.storage_fraction(0.5, fmt="coo"), "fmt"),
    (lambda: sp.sparse_gemm_speedup(8, 8, 8, 1e12, 1e9, kernel_efficiency=1.5), "kernel_efficiency"),
    (lambda: sp.training_gemm_speedup(2.0, 1.5), "sparse_passes"),
    (lambda: sp.pruning_loss([[0.0] * 4], [[1.0]] * 4), "non-zero"),
    (lambda: sp.random_matrix(10**5, 10**5), "elements"),
    (lambda: sp.train("pruned"), "method"),
    (lambda: sp.train(density=0), "density"),
    (lambda: sp.weight_read_rate(0.0, 100.0), "weight_bytes"),
    (lambda: sp.weight_read_rate(4e9, -1.0), "tokens_per_second"),
    (lambda: sp.weight_read_rate("4e9", 1.0), "weight_bytes"),
    (lambda: sp.accuracy_recovery(0.0, 50.0), "dense_score"),
    (lambda: sp.accuracy_recovery(60.0, -1.0), "sparse_score"),
    (lambda: sp.accuracy_recovery(float("nan"), 50.0), "dense_score"),
])
def test_bad_input_is_refused(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_sparse_momentum_follows_the_reference_caps():
    run = sp.train("sparse momentum", 0.5, epochs=4, batch=512)
    assert (run["density"][1:] < 1.0).all()  # regrowth stops at 99% of a layer's zeros
    sizes = np.array([m.size for m in run["masks"]])
    assert (run["density"][-1] * sizes).sum() == pytest.approx(0.5 * sizes.sum(), abs=2)


def test_measured_cases_against_the_model():
    from gpumodel.explorations import sparsity as sx
    frame = sx.measured_frame()
    assert frame.loc["FP16 GEMM 3072 x 10240 x 3072", "model"] == 2.0
    assert frame.loc["FP16 GEMM 3072 x 10240 x 3072", "measured"] == pytest.approx(0.870 / 0.630, abs=1e-3)
    assert frame.loc["ViT-L MLP fc1, fwd + bwd", "model"] == 1.5
    assert frame.loc["Llama-3-8B decode, int4 (+2:4)", "model"] == pytest.approx(4.22 / 3.05, abs=1e-3)
    share = 24 * (1.660793 + 1.642992) * 8 * 4096 / 13008 / 717.598748
    assert sx.vit_step_share() == pytest.approx(share)
    assert sx.bert_linear_share(16) == pytest.approx(
        2 * 16 * 384 * 12 * (4 * 768**2 + 2 * 768 * 3072) / 312e12 / 19.35e-3)


# --- issue 24: seeds, bounds, speed -----------------------------------------------------------

@pytest.mark.parametrize("call", [lambda: sp.random_matrix(2, 2, seed=1.5),
                                  lambda: sp.teacher_dataset(30, seed=0.5),
                                  lambda: sp.train(epochs=1, samples=60, seed=2.5),
                                  lambda: sp.random_matrix(2, 2, seed=-1)])
def test_fractional_or_negative_seeds_are_refused(call):
    with pytest.raises(ValueError, match="seed"):
        call()


def test_training_work_is_bounded_and_the_message_says_so():
    with pytest.raises(ValueError, match=r"epochs \+ finetune_2_4.*250,000"):
        sp.train(epochs=200, samples=50000)
    with pytest.raises(ValueError, match=r"steps per epoch.*batch"):
        sp.train(epochs=30, samples=3000, batch=1)


def _seconds(call) -> float:
    import time
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def test_training_at_the_work_bound_finishes():
    epochs = sp.MAX_TRAINING_SAMPLES // 8192
    assert _seconds(lambda: sp.train("dense", epochs=epochs, batch=1024)) < 60.0


def test_unstructured_pruning_at_the_bound_is_fast():
    a = sp.random_matrix(4096, 4096, seed=1)
    b = sp.random_matrix(4096, 256, seed=2)
    assert _seconds(lambda: sp.pruning_loss(a, b, "unstructured")) < 20.0
    with pytest.raises(ValueError, match="b"):
        sp.pruning_loss(a, sp.random_matrix(4096, 257, seed=2))


@settings(max_examples=200, deadline=None)
@given(a=hnp.arrays(float, hnp.array_shapes(min_dims=2, max_dims=2, max_side=12),
                    elements=st.integers(-3, 3).map(float)),
       density=st.floats(0.0, 1.0))
def test_magnitude_mask_keeps_the_largest_with_earlier_ties(a, density):
    keep = int(round(density * a.size))
    order = np.argsort(-np.abs(a).ravel(), kind="stable")[:keep]
    expected = np.zeros(a.size, bool)
    expected[order] = True
    assert np.array_equal(sp.magnitude_mask(a, density), expected.reshape(a.shape))


# --- issue 22: decode bandwidth, accuracy recovery, today's case -------------------------------

def test_weight_read_rate_exact():
    # torchao's table: int4wo-64, 4.22 GB at 180.80 tokens/s -> about 763 GB/s.
    assert sp.weight_read_rate(4.22e9, 180.80) == pytest.approx(762.976e9)
    assert sp.weight_read_rate(3.05e9, 226.02) == pytest.approx(689.361e9)
    assert sp.weight_read_rate([1.0, 2.0], 3.0).tolist() == [3.0, 6.0]


def test_accuracy_recovery_exact():
    # Sparse-Llama-3.1-8B-2of4's model card: 62.16 of 63.19 is "98.37%".
    assert round(sp.accuracy_recovery(63.19, 62.16), 2) == 98.37
    assert round(sp.accuracy_recovery(55.34, 53.85), 1) == 97.3
    assert sp.accuracy_recovery(50.0, 50.0) == 100.0


@given(st.floats(1e-3, 1e12), st.floats(1e-3, 1e6), st.floats(1.01, 100))
def test_weight_read_rate_scales_with_both(size, rate, factor):
    base = sp.weight_read_rate(size, rate)
    assert sp.weight_read_rate(size * factor, rate) == pytest.approx(factor * base)
    assert sp.weight_read_rate(size, rate * factor) == pytest.approx(factor * base)


@given(st.floats(1e-3, 1e3), st.floats(0, 1e3))
def test_accuracy_recovery_is_100_at_parity_and_monotone(dense, sparse):
    assert sp.accuracy_recovery(dense, dense) == pytest.approx(100.0)
    assert sp.accuracy_recovery(dense, sparse + 1.0) > sp.accuracy_recovery(dense, sparse)


def test_decode_speedup_is_bytes_times_bandwidth_ratio():
    from gpumodel.explorations import sparsity as sx
    roof = sx.decode_roof_frame()
    read = roof["weights read (GB/s)"]
    assert read["BF16 (dense)"] == pytest.approx(15.01 * 95.64, abs=0.1)
    assert roof.loc["BF16 (dense)", "share of bandwidth"] > 0.6
    assert (roof["share of bandwidth"].iloc[1:] < 0.4).all()
    measured = sx.measured_frame().loc["Llama-3-8B decode, int4 (+2:4)", "measured"]
    ratio = sx.decode_model() * read.iloc[2] / read.iloc[1]
    assert ratio == pytest.approx(measured, abs=2e-3)


def test_step_column_is_the_model_and_the_borrowed_one_is_labelled():
    from gpumodel.explorations import sparsity as sx
    frame = sx.measured_frame()
    step = frame.loc["SAM ViT-L training step"]
    assert step["model"] == pytest.approx(sp.step_speedup(1.5, sx.vit_step_share()), abs=1e-3)
    assert float(step["with measured layers"]) == pytest.approx(sx.vit_step_model(), abs=1e-3)
    assert step["model"] > float(step["with measured layers"])


def test_todays_case_data():
    from gpumodel.explorations import sparsity as sx
    frame = sx.llm_pruning_frame()
    assert frame.loc["2:4, SparseGPT", "7B"] == 10.17
    assert frame.loc["2:4, Wanda", "70B"] == 5.16
    # one-shot 2:4 always costs more perplexity than unstructured 50% of the same method
    for method in ("SparseGPT", "Wanda"):
        assert (frame.loc[f"2:4, {method}", ["7B", "13B", "70B"]]
                > frame.loc[f"unstructured 50%, {method}", ["7B", "13B", "70B"]]).all()
    assert round(sx.sparse_llama_recovery(), 2) == 98.37
    assert sx.hopper_fp8_speedups()["latency"] == pytest.approx(1 / 0.7)
    assert sx.hopper_fp8_decode_bound() == pytest.approx(1.6)


def test_sparsity_chapter_helpers_give_the_numbers_the_prose_uses():
    from gpumodel.explorations import sparsity as sx
    assert sx.violation_probability() == 5 / 16
    assert sx.group_bits("fp16") == (36, 64)
    assert sx.group_bits("fp8") == (20, 32)
    assert sx.metadata_share("fp16") == 1 / 8
    assert sx.metadata_share("fp8") == 1 / 4
    assert sx.sparse_marlin_fraction() == 0.75
    hop = sx.hopper_fp8_speedups()
    assert hop["latency as ratio"] == pytest.approx(1.3)
    assert hop["throughput"] == pytest.approx(1.2)
    # below the FP8 byte bound under either reading of "30% lower latency"
    assert max(hop["latency"], hop["latency as ratio"]) < sx.hopper_fp8_decode_bound()
    one, many = sx.hopper_fp8_gemm(1), sx.hopper_fp8_gemm(256)
    assert one["speedup"] == pytest.approx(1.6, rel=1e-3)
    assert many["speedup"] == pytest.approx(1.5)
    assert many["intensity"] == pytest.approx(2 * 4096 * 256 / (4096 + 2 * 256))
    assert sx.hopper_fp8_share_needed(1.2, 2.0) == pytest.approx(1 / 3)
    # a 1024 x 1024 FP16 GEMM is overhead-bound up to these token counts (t_h = 10 us per
    # kernel, the book's eager host time)
    assert sx.OVERHEAD_SECONDS == throughput.EAGER_HOST_SECONDS
    assert sx.overhead_bound_tokens("H100 SXM5") == 4717
    assert sx.overhead_bound_tokens("A100 SXM4 80GB") == 1487
    assert sx.overhead_bound_tokens("RTX 4090") == 787
    assert sx.overhead_bound_tokens("H100 SXM5", hidden=16384) == 0
    tokens, lowest = sx.hopper_fp8_gemm_lowest()
    assert 256 < tokens < 512 and 1.4 < lowest < 1.5
    assert lowest == pytest.approx(sx.hopper_fp8_gemm(tokens)["speedup"])


def test_sam_vith_miou_reads_the_measurement_row():
    from gpumodel.explorations import sparsity as sx
    assert sx.sam_vith_miou() == {"dense": 0.5811, "MLP linears 2:4": 0.5672}
