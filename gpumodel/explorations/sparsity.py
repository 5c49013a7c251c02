"""Explorations, tables and figures of the chapter :doc:`/book/sparsity`."""
from __future__ import annotations

from functools import lru_cache
from math import comb

import altair as alt
import numpy as np
import pandas as pd

from .. import _checks, charts, hardware, measured, sparsity, throughput, workloads
from ..explore import Choice, Exploration, Slider, check_direct_calls
from ..units import TFLOPS

#: Launch overhead per kernel in the speed-up exploration, seconds: the opening chapter's t_h,
#: eager PyTorch's host time per kernel (:data:`gpumodel.throughput.EAGER_HOST_SECONDS`).
OVERHEAD_SECONDS = throughput.EAGER_HOST_SECONDS
#: Accelerators of the speed-up exploration.
SPEEDUP_ACCELERATORS = ("A100 SXM4 80GB", "H100 SXM5", "RTX 4090")
TOKENS = 2.0 ** np.arange(0, 17)


# --- what the hardware does ---------------------------------------------------------------------

def pattern_frame() -> pd.DataFrame:
    """Per element type: bits, sparse pattern, metadata per group and the compressed size.

    FP4's row is its pattern in PTX's MX instruction kind (kind::mxf4); FP4 issued through the
    kind it shares with FP8 and FP6 (kind::f8f6f4) uses 2:4, as FP8 does."""
    rows = []
    for dtype, bits in sparsity.ELEMENT_BITS.items():
        pat = sparsity.pattern_for(dtype)
        label = "fp4 (MX kind)" if dtype == "fp4" else dtype
        rows.append({"element": label, "bits": bits, "pattern": pat.name,
                     "group (elements)": pat.span,
                     "kept values": pat.kept * pat.unit,
                     "metadata bits": pat.metadata_bits,
                     "compressed / dense": f"{sparsity.compressed_fraction(dtype):.2%}"})
    return pd.DataFrame(rows).set_index("element")


def peak_frame(dtype: str = "fp16") -> pd.DataFrame:
    """Dense and 2:4-sparse Tensor Core peaks of every accelerator with a ``dtype`` figure (bf16 for TPUs)."""
    dtype = _checks.choice("dtype", dtype, hardware.TENSOR_COLUMNS)
    rows = []
    for acc in hardware.accelerators():
        kind = dtype if getattr(acc, hardware.TENSOR_COLUMNS[dtype]) is not None else "bf16"
        if getattr(acc, hardware.TENSOR_COLUMNS[kind]) is None:
            continue
        dense = acc.peak_flops(kind) / TFLOPS
        sparse = acc.peak_flops(kind, sparse=True) / TFLOPS if acc.sparse_2_4 else None
        rows.append({"accelerator": acc.name, "architecture": acc.architecture.split(" (")[0],
                     "type": kind, "dense TFLOPS": f"{dense:,.1f}",
                     "2:4 sparse TFLOPS": f"{sparse:,.1f}" if sparse else "none"})
    return pd.DataFrame(rows).set_index("accelerator")


# --- storage ---------------------------------------------------------------------------------

FORMAT_LABELS = {"dense": "dense", "structured": "2:4 compressed", "bitmap": "bitmap",
                 "csr": "CSR"}


def storage(value_bits, index_bits):
    """Bytes over dense of each format against density (2:4 only up to its 50%)."""
    density = np.linspace(0.0, 1.0, 41)
    rows = {"density": [], "format": [], "fraction": []}
    for fmt, label in FORMAT_LABELS.items():
        d = density[density <= 0.5] if fmt == "structured" else density
        rows["density"].extend(d)
        rows["format"].extend([label] * d.size)
        rows["fraction"].extend(np.broadcast_to(
            sparsity.storage_fraction(d, value_bits, fmt, index_bits), d.shape))
    return rows


def storage_chart(base):
    labels = list(FORMAT_LABELS.values())
    return base.mark_line().encode(
        x=alt.X("density:Q", title="share of non-zero elements", axis=alt.Axis(format="%")),
        y=alt.Y("fraction:Q", title="bytes / dense bytes", scale=alt.Scale(domain=[0, 2.1])),
        color=alt.Color("format:N", title="format", sort=labels,
                        scale=alt.Scale(domain=labels,
                                        range=["#767676", charts.VERMILLION, charts.BLUE, charts.GREEN])),
        strokeDash=alt.StrokeDash("format:N", title="format", sort=labels,
                                  scale=alt.Scale(domain=labels, range=[[1, 0], [6, 3], [2, 2], [8, 2, 2, 2]])),
        tooltip=[alt.Tooltip("density:Q", format=".0%"), "format:N",
                 alt.Tooltip("fraction:Q", format=".3f")],
    ).properties(width=420, height=260)


STORAGE = Exploration(
    name="sparse_storage",
    compute=storage,
    params=(Choice("value_bits", "value bits", (16, 8, 4), 16),
            Choice("index_bits", "CSR index bits", (8, 16, 32), 16)),
    chart=storage_chart,
    description="Line chart: the size of a sparse matrix over its dense size (y) against the share "
                "of non-zero elements (x), one line per storage format (dense, 2:4 compressed, bitmap, "
                "CSR), told apart by colour and dash pattern.",
)


# --- speed ---------------------------------------------------------------------------------------

def speedup(accelerator, hidden, sparse_share, kernel_efficiency):
    """Dense over 2:4 time of a hidden x hidden weight times a hidden x tokens B, and of a step, against tokens.

    The weight is the sparse operand A; tokens are the columns of B.
    """
    acc = hardware.get(accelerator)
    gemm = sparsity.sparse_gemm_speedup(hidden, hidden, TOKENS, acc.peak_flops("fp16"),
                                        acc.bandwidth, "fp16", kernel_efficiency,
                                        OVERHEAD_SECONDS)
    step = sparsity.step_speedup(gemm, sparse_share)
    return {"tokens": TOKENS, "one GEMM": gemm, "whole step": step}


def speedup_chart(base):
    lines = base.transform_fold(["one GEMM", "whole step"], as_=["what", "speedup"]).mark_line(
        point=True).encode(
        x=alt.X("tokens:Q", title="tokens (columns of B)", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("speedup:Q", title="dense time / sparse time", scale=alt.Scale(domain=[0.9, 2.1])),
        color=alt.Color("what:N", title=None, scale=alt.Scale(domain=["one GEMM", "whole step"],
                                                            range=[charts.BLUE, charts.VERMILLION])),
        shape=alt.Shape("what:N", title=None, scale=alt.Scale(domain=["one GEMM", "whole step"])),
        strokeDash=alt.StrokeDash("what:N", title=None, scale=alt.Scale(domain=["one GEMM", "whole step"],
                                                                      range=[[1, 0], [6, 3]])),
        tooltip=["tokens:Q", "what:N", alt.Tooltip("speedup:Q", format=".3f")])
    promise = alt.Chart(pd.DataFrame({"y": [2.0]})).mark_rule(strokeDash=[4, 3], color="#555555").encode(y="y:Q")
    return (lines + promise).properties(width=420, height=260)


SPEEDUP = Exploration(
    name="sparse_speedup",
    compute=speedup,
    params=(Choice("accelerator", "accelerator", SPEEDUP_ACCELERATORS, "H100 SXM5"),
            Choice("hidden", "weight: hidden x hidden", (1024, 4096, 16384), 4096),
            Slider("sparse_share", "share of the step in sparse GEMMs", 0, 1, 0.05, 0.4,
                   grid_step=0.2),
            Slider("kernel_efficiency", "sparse kernel efficiency", 0.5, 1, 0.05, 1.0,
                   grid_step=0.1)),
    chart=speedup_chart,
    description="Line chart: dense time over sparse time (y) against the number of tokens (x, log "
                "scale) for one FP16 GEMM with a 2:4 weight (blue, solid) and for a step whose sparse "
                "GEMMs take a given share (vermillion, dashed); the dashed horizontal line is the 2x "
                "promise.",
)


# --- accuracy --------------------------------------------------------------------------------

#: Weight distributions of the pruning exploration: 0 = normal, else Student's t degrees of freedom.
TAILS = {"normal": 0.0, "t, 10 dof": 10.0, "t, 4 dof": 4.0, "t, 2 dof": 2.0}
PRUNE_ROWS, PRUNE_COLS, PRUNE_OUTS = 128, 256, 64


@lru_cache(maxsize=8)
def pruning(distribution):
    """Share of |A|, of A^2 and of ||AB|| lost by each 50% pruning method on one seeded matrix."""
    a = sparsity.random_matrix(PRUNE_ROWS, PRUNE_COLS, TAILS[distribution], seed=3)
    b = sparsity.random_matrix(PRUNE_COLS, PRUNE_OUTS, seed=4)
    rows = {"method": [], "measure": [], "lost": []}
    for method in sparsity.METHODS:
        for measure, value in sparsity.pruning_loss(a, b, method).items():
            rows["method"].append(method)
            rows["measure"].append(measure)
            rows["lost"].append(value)
    return rows


MEASURES = {"magnitude": "sum |a| removed", "energy": "sum a² removed",
            "output": "error of A B"}


def pruning_chart(base):
    return base.mark_bar().encode(
        y=alt.Y("method:N", title=None, sort=list(sparsity.METHODS)),
        x=alt.X("lost:Q", title="share lost", axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 0.5])),
        color=alt.Color("method:N", legend=None, sort=list(sparsity.METHODS)),
        row=alt.Row("measure:N", title=None, sort=list(MEASURES),
                    header=alt.Header(labelAngle=0, labelAlign="left")),
        tooltip=["method:N", "measure:N", alt.Tooltip("lost:Q", format=".1%")],
    ).properties(width=360, height=60)


PRUNING = Exploration(
    name="sparse_pruning",
    compute=pruning,
    params=(Choice("distribution", "weights", tuple(TAILS), "normal"),),
    chart=pruning_chart,
    description="Three small bar charts, one per measure (sum |a| removed, sum a² removed, error of "
                "A B): the share lost (x) when a 128 x 256 matrix is pruned to 50% by each method (one "
                "bar each): 2:4, pair-wise 4:8 and unstructured magnitude pruning.",
)


def pruning_frame() -> pd.DataFrame:
    """:func:`pruning` for every distribution, as a wide table of percentages."""
    frames = []
    for name in TAILS:
        frame = pd.DataFrame(pruning(name))
        frame["weights"] = name
        frames.append(frame)
    wide = pd.concat(frames).pivot_table(index=["weights", "measure"], columns="method",
                                         values="lost", sort=False)
    return (100 * wide[list(sparsity.METHODS)]).round(1)


# --- sparse training ---------------------------------------------------------------------------

#: The chapter's training runs: (label, method, density, finetune_2_4 epochs).
RUNS = (("dense", "dense", 1.0, 0), ("static 50%", "static", 0.5, 0),
        ("sparse momentum 50%", "sparse momentum", 0.5, 0), ("2:4 from the start", "2:4", 0.5, 0),
        ("sparse momentum, then 2:4", "sparse momentum", 0.5, 3))
EPOCHS = 12
#: Seeds of the training runs (data, initialisation and batches all change with the seed).
SEEDS = (0, 1, 2)


def training_runs(seed: int = 0) -> dict:
    """Every run of :data:`RUNS` with one seed, by label (about 3 s on two cores; cached)."""
    return _training_runs(_checks.seed(seed))


@lru_cache(maxsize=None)
def _training_runs(seed: int) -> dict:
    return {label: sparsity.train(method, density, EPOCHS, finetune_2_4=extra, seed=seed)
            for label, method, density, extra in RUNS}


def training_frame() -> pd.DataFrame:
    """Final test accuracy (mean and range over :data:`SEEDS`) and densities of each run (seed 0)."""
    sizes = np.array([w.size for w in training_runs()["dense"]["weights"]])
    rows = []
    for label in training_runs():
        acc = np.array([training_runs(seed)[label]["accuracy"][-1] for seed in SEEDS])
        run = training_runs()[label]
        overall = float((run["density"][-1] * sizes).sum() / sizes.sum())
        rows.append({"run": label, "epochs": len(run["accuracy"]),
                     "mean accuracy": f"{acc.mean():.3f}",
                     "range": f"{acc.min():.3f}-{acc.max():.3f}",
                     "density": f"{overall:.3f}",
                     "layer densities": " / ".join(f"{d:.3f}" for d in run["density"][-1])})
    return pd.DataFrame(rows).set_index("run")


def accuracy_spread() -> float:
    """The largest spread (max - min) of final test accuracy over :data:`SEEDS` among the runs."""
    return float(max(np.ptp([training_runs(seed)[label]["accuracy"][-1] for seed in SEEDS])
                     for label in training_runs()))


def mean_accuracy(label: str) -> float:
    """Final test accuracy of run ``label`` averaged over :data:`SEEDS`."""
    label = _checks.choice("label", label, [run[0] for run in RUNS])
    return float(np.mean([training_runs(seed)[label]["accuracy"][-1] for seed in SEEDS]))


def density_chart():
    """Density of each layer per epoch under sparse momentum, with the overall density."""
    run = training_runs()["sparse momentum 50%"]
    names = ["layer 1 (64 x 64)", "layer 2 (64 x 64)", "layer 3 (10 x 64)"]
    frame = pd.DataFrame(run["density"], columns=names)
    frame["epoch"] = np.arange(1, len(frame) + 1)
    long = frame.melt("epoch", var_name="layer", value_name="density")
    return alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("epoch:Q", title="epoch"),
        y=alt.Y("density:Q", title="share of weights kept", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("layer:N", title=None, sort=names),
        shape=alt.Shape("layer:N", title=None, sort=names),
        strokeDash=alt.StrokeDash("layer:N", title=None, sort=names),
        tooltip=["epoch:Q", "layer:N", alt.Tooltip("density:Q", format=".3f")],
    ).properties(width=420, height=220,
                 description=f"Line chart: the share of weights kept (y) in each of three layers (one line "
                             f"each, told apart by colour, marker and dash) per epoch (x, 1 to {len(frame)}) "
                             "under sparse momentum at 50% overall density.")


def accuracy_chart():
    """Test accuracy per epoch of every run."""
    frames = []
    for label, run in training_runs().items():
        frames.append(pd.DataFrame({"epoch": np.arange(1, len(run["accuracy"]) + 1),
                                    "accuracy": run["accuracy"], "run": label}))
    labels = [r[0] for r in RUNS]
    return alt.Chart(pd.concat(frames)).mark_line(point=True).encode(
        x=alt.X("epoch:Q", title="epoch"),
        y=alt.Y("accuracy:Q", title="test accuracy", scale=alt.Scale(zero=False)),
        color=alt.Color("run:N", title=None, sort=labels),
        shape=alt.Shape("run:N", title=None, sort=labels),
        strokeDash=alt.StrokeDash("run:N", title=None, sort=labels),
        tooltip=["run:N", "epoch:Q", alt.Tooltip("accuracy:Q", format=".3f")],
    ).properties(width=420, height=240,
                 description=f"Line chart: test accuracy (y) per epoch (x) of {len(labels)} training runs "
                             f"({', '.join(labels)}), one line each, told apart by colour, marker and dash.")


# --- measured reality ---------------------------------------------------------------------------

def _ratio(dense_id: str, sparse_id: str, higher_is_faster: bool = False) -> float:
    dense, sparse = measured.measurement(dense_id), measured.measurement(sparse_id)
    return sparse / dense if higher_is_faster else dense / sparse


@_checks.finite_result
def a100_gemm_model(m, k, n, kernel_efficiency=1.0) -> float:
    """The model's speed-up of one FP16 GEMM with a 2:4 weight on the A100 80GB."""
    m, k, n = _checks.count("m", m), _checks.count("k", k), _checks.count("n", n)
    kernel_efficiency = _checks.scalar("kernel_efficiency", kernel_efficiency)
    a100 = hardware.get("A100 SXM4 80GB")
    return float(sparsity.sparse_gemm_speedup(m, k, n, a100.peak_flops("fp16"), a100.bandwidth,
                                              "fp16", kernel_efficiency, OVERHEAD_SECONDS))


#: SAM's ViT-L image encoder (Kirillov et al. 2023; segment_anything/build_sam.py): 24 blocks of
#: width 1024 with a 4096-wide MLP, a 1024 x 1024 image cut into 16 x 16 patches = 64 x 64 tokens.
SAM_VIT_L = {"layers": 24, "tokens_per_image": 64 * 64}
#: The tokens of the DINOv2 ViT-L MLP microbenchmark (the m of its mkn).
MICRO_TOKENS = 13008


def vit_mlp_model() -> float:
    """Model of a ViT-L MLP linear's forward + backward with a 2:4 weight: two of three GEMMs sparse.

    Each GEMM of the (13008 x 1024) x (1024 x 4096) linear is compute-bound on the A100, so each
    sparse one runs at the GEMM model's speed-up; the weight gradient stays dense.
    """
    return float(sparsity.training_gemm_speedup(a100_gemm_model(4096, 1024, MICRO_TOKENS), 2))


@_checks.finite_result
def vit_step_share(batch: int = 8) -> float:
    """Share of the SAM ViT-L step spent in MLP linears, from the microbenchmark's times.

    The linears are compute-bound, so their time scales with tokens: the microbenchmark's
    dense fc1 + fc2 time x (batch x 4096 / 13008) x 24 layers, over the measured dense step.
    """
    batch = _checks.count("batch", batch)
    dense = sum(measured.measurement(f"sparse.vitl_{x}.a100_80.dense") for x in ("fc1", "fc2"))
    tokens = batch * SAM_VIT_L["tokens_per_image"]
    mlp = dense * tokens / MICRO_TOKENS * SAM_VIT_L["layers"]
    return float(mlp / measured.measurement("sparse.vitl_step.a100_80.dense"))


def vit_step_model() -> float:
    """Amdahl's law on the SAM ViT-L step: the MLP share at the microbenchmark's measured speed-up.

    Not the chapter's prediction (:func:`vit_step_prediction`): it borrows the measured layers.
    """
    dense = sum(measured.measurement(f"sparse.vitl_{x}.a100_80.dense") for x in ("fc1", "fc2"))
    sparse = sum(measured.measurement(f"sparse.vitl_{x}.a100_80.sparse") for x in ("fc1", "fc2"))
    return float(workloads.amdahl_speedup(dense / sparse, vit_step_share()))


def vit_step_prediction() -> float:
    """The chapter's prediction for the SAM ViT-L step: Amdahl's law at the model's layer speed-up."""
    return float(sparsity.step_speedup(vit_mlp_model(), vit_step_share()))


def decode_model() -> float:
    """Decoding is memory-bound: the speed-up is at most the ratio of the bytes read per token."""
    return (measured.measurement("sparse.llama3_8b.int4.size")
            / measured.measurement("sparse.llama3_8b.int4_sparse.size"))


def measured_frame() -> pd.DataFrame:
    """Every published 2:4 speed-up of the chapter next to the model's, and what the model is.

    ``model`` is always the chapter's own prediction; for the decoding case it is an upper bound
    (the ratio of bytes read per token). ``model is`` names which; ``with measured layers`` gives,
    for the SAM step only, Amdahl's law fed the measured layer speed-ups instead of the model's.
    """
    step = "SAM ViT-L training step"
    rows = [
        ("FP16 GEMM 3072 x 10240 x 3072", "GEMM",
         _ratio("sparse.linear_3072x10240x3072.a100_80.dense",
                "sparse.linear_3072x10240x3072.a100_80.sparse"),
         a100_gemm_model(3072, 10240, 3072), "roofline"),
        ("ViT-L MLP fc1, fwd + bwd", "layer",
         _ratio("sparse.vitl_fc1.a100_80.dense", "sparse.vitl_fc1.a100_80.sparse"),
         vit_mlp_model(), "roofline, 2 of 3 GEMMs sparse"),
        ("ViT-L MLP fc2, fwd + bwd", "layer",
         _ratio("sparse.vitl_fc2.a100_80.dense", "sparse.vitl_fc2.a100_80.sparse"),
         vit_mlp_model(), "roofline, 2 of 3 GEMMs sparse"),
        (step, "step",
         _ratio("sparse.vitl_step.a100_80.dense", "sparse.vitl_step.a100_80.sparse"),
         vit_step_prediction(), "Amdahl, model's layers"),
        ("Llama-3-8B decode, int4 (+2:4)", "step",
         _ratio("sparse.llama3_8b.a100_80.int4", "sparse.llama3_8b.a100_80.int4_sparse", True),
         decode_model(), "upper bound: ratio of bytes"),
    ]
    frame = pd.DataFrame(rows, columns=["case", "scope", "measured", "model", "model is"])
    frame["measured / model"] = frame["measured"] / frame["model"]
    frame = frame.set_index("case").round(3)
    frame["with measured layers"] = ["" if case != step else f"{vit_step_model():.3f}"
                                     for case in frame.index]
    return frame


#: The BF16 Llama-3-8B decoding row on the same A100 (torchao's generate.py), and its weight size in
#: GB as the row's detail states it (model_size_GB=, embeddings excluded, as for the 4-bit sizes).
DECODE_BF16_ROW = "aodecode.llama3_8b.a100_80.bf16"


def _detail_number(row_id: str, key: str) -> float:
    row = next(r for r in measured.measurements(row_id) if r["id"] == row_id)
    return float(row["detail"].split(f"{key}=")[1].split(";")[0].split()[0])


def decode_roof_frame() -> pd.DataFrame:
    """Llama-3-8B decoding on the A100 80GB: the bandwidth each run's weights alone consumed.

    GB/s = weight GB x tokens/s (:func:`gpumodel.sparsity.weight_read_rate`); the share is of the
    A100's bandwidth from the hardware table. BF16 from ``aodecode.``, the two 4-bit runs from
    ``sparse.llama3_8b.``.
    """
    bandwidth = hardware.get("A100 SXM4 80GB").bandwidth
    runs = (("BF16 (dense)", DECODE_BF16_ROW, _detail_number(DECODE_BF16_ROW, "model_size_GB")),
            ("int4, tinygemm", "sparse.llama3_8b.a100_80.int4",
             measured.measurement("sparse.llama3_8b.int4.size")),
            ("int4 + 2:4, Sparse-Marlin", "sparse.llama3_8b.a100_80.int4_sparse",
             measured.measurement("sparse.llama3_8b.int4_sparse.size")))
    rows = []
    for label, row_id, size in runs:
        tokens = measured.measurement(row_id)
        read = sparsity.weight_read_rate(size * 1e9, tokens)
        rows.append({"run": label, "tokens/s": tokens, "weights (GB)": size,
                     "weights read (GB/s)": round(read / 1e9, 1),
                     "share of bandwidth": round(read / bandwidth, 3)})
    return pd.DataFrame(rows).set_index("run")


#: Sparse-Marlin's README (IST-DASLab/Sparse-Marlin @ 5b04bf2c), RTX 3090, one large matrix, group
#: size 128: dense Marlin keeps "close-to-ideal 4x" over FP16 up to batch 16, Sparse-Marlin
#: "near-optimal speedups of around 5.3x". Kernel speed-ups over an FP16 GEMM, read from its prose.
SPARSE_MARLIN_RTX3090 = {"marlin": 4.0, "sparse_marlin": 5.3}


def sam_vith_miou() -> dict:
    """SAM ViT-h's segmentation accuracy (mIoU) dense and with its MLP linears 2:4, as the detail
    of the measurement row ``sparse.sam_vith.a100_80.sparse_mlp`` records it ("mIoU a -> b")."""
    detail = measured.measurements("sparse.sam_vith.a100_80.sparse_mlp")[0]["detail"]
    dense, sparse = detail.split("mIoU ")[1].split(" -> ")
    return {"dense": float(dense), "MLP linears 2:4": float(sparse.split(";")[0])}


# --- today's case ------------------------------------------------------------------------------

#: WikiText perplexity (lower is better) of LLaMA-2 pruned one-shot to 50%, no retraining: the table
#: of the Wanda README (locuslab/wanda @ 1317b0ba, "LLaMA-2 results"), by model and method; its code
#: implements all three methods (magnitude, Wanda, SparseGPT).
LLAMA2_PRUNED_PERPLEXITY = {
    "dense": {"7B": 5.12, "13B": 4.57, "70B": 3.12},
    "unstructured 50%, SparseGPT": {"7B": 6.51, "13B": 5.63, "70B": 3.98},
    "unstructured 50%, Wanda": {"7B": 6.42, "13B": 5.56, "70B": 3.98},
    "2:4, magnitude": {"7B": 54.59, "13B": 8.33, "70B": 6.33},
    "2:4, SparseGPT": {"7B": 10.17, "13B": 8.32, "70B": 5.40},
    "2:4, Wanda": {"7B": 11.02, "13B": 8.27, "70B": 5.16},
}

#: Sparse-Llama-3.1-8B-2of4 (Neural Magic model card, 2024-11-20): every linear of the transformer
#: blocks pruned to 2:4 with SparseGPT, then trained with knowledge distillation for 13B tokens.
#: Average scores (higher is better), dense Llama-3.1-8B against the sparse model.
SPARSE_LLAMA31_8B = {"Open LLM Leaderboard v1": (63.19, 62.16),
                     "Mosaic Eval Gauntlet v0.3": (55.34, 53.85),
                     "distillation tokens": 13e9}
#: Two of the six tasks of that Open LLM Leaderboard average, from the same card's table (dense,
#: sparse): the average hides tasks that move in opposite directions.
SPARSE_LLAMA31_8B_TASKS = {"MMLU (5-shot)": (65.4, 60.6), "GSM8K (5-shot)": (50.7, 56.3)}

#: Neural Magic, "2:4 Sparse Llama FP8: SOTA Performance for NVIDIA Hopper GPUs" (2024-12-18), vLLM
#: with CUTLASS sparse FP8 kernels, its summary: "an average of 30% lower latency and 20% higher
#: throughput from sparsity alone on NVIDIA Hopper GPUs" (2:4 Sparse Llama 3.1 8B in FP8 against
#: its dense FP8 counterpart; the per-scenario numbers are in its charts, not read here).
HOPPER_FP8_SPARSE = {"latency_cut": 0.30, "throughput_gain": 0.20}


def llm_pruning_frame() -> pd.DataFrame:
    """:data:`LLAMA2_PRUNED_PERPLEXITY` as a table, with each perplexity over the dense model's."""
    frame = pd.DataFrame(LLAMA2_PRUNED_PERPLEXITY).T
    frame.index.name = "LLaMA-2, WikiText perplexity"
    ratio = frame / frame.loc["dense"]
    for size in ("7B", "70B"):
        frame[f"{size} / dense"] = ratio[size].round(2)
    return frame


def sparse_llama_recovery(benchmark: str = "Open LLM Leaderboard v1") -> float:
    """Sparse-Llama-3.1-8B-2of4's score as a percentage of dense Llama-3.1-8B's on ``benchmark``."""
    dense, sparse = SPARSE_LLAMA31_8B[_checks.choice("benchmark", benchmark, SPARSE_LLAMA31_8B)]
    return float(sparsity.accuracy_recovery(dense, sparse))


def hopper_fp8_speedups() -> dict:
    """:data:`HOPPER_FP8_SPARSE` as speed-ups: 1 / (1 - latency cut), 1 + throughput gain.

    "latency" reads "30% lower latency" as the sparse latency being 0.7 of the dense one;
    "latency as ratio" reads it the way the same summary writes "1.7X lower latency", a ratio
    of latencies, under which 30% lower is 1.3x.
    """
    cut = HOPPER_FP8_SPARSE["latency_cut"]
    return {"latency": 1.0 / (1.0 - cut), "latency as ratio": 1.0 + cut,
            "throughput": 1.0 + HOPPER_FP8_SPARSE["throughput_gain"]}


@_checks.finite_result
def hopper_fp8_gemm(tokens: int) -> dict:
    """A d_model x d_model FP8 weight of Llama 3.1 8B times ``tokens`` on the H100 SXM5.

    Its dense intensity (FLOP per byte) and the chapter's model speed-up with the GPU's least
    time per kernel, t_o (:data:`gpumodel.throughput.LAUNCH_SECONDS`), and no host time t_h: a
    decoding step replayed as a CUDA graph.
    """
    tokens = _checks.count("tokens", tokens)
    d, h100 = workloads.LLAMA3_8B["d_model"], hardware.get("H100 SXM5")
    flops = 2.0 * d * d * tokens
    return {"intensity": float(flops / sparsity.gemm_bytes(d, d, tokens, dtype="fp8")),
            "speedup": float(sparsity.sparse_gemm_speedup(
                d, d, tokens, h100.peak_flops("fp8"), h100.bandwidth, dtype="fp8",
                overhead_seconds=throughput.LAUNCH_SECONDS))}


#: Most tokens the token sweeps (:func:`hopper_fp8_gemm_lowest`, :func:`overhead_bound_tokens`) take.
MAX_TOKENS = 1 << 20


def hopper_fp8_gemm_lowest(limit: int = 1 << 14) -> tuple:
    """The token count (1 to ``limit``) where :func:`hopper_fp8_gemm`'s speed-up is lowest, and it."""
    tokens = np.arange(1, _checks.count("limit", limit, MAX_TOKENS) + 1)
    d, h100 = workloads.LLAMA3_8B["d_model"], hardware.get("H100 SXM5")
    speedup = sparsity.sparse_gemm_speedup(d, d, tokens, h100.peak_flops("fp8"), h100.bandwidth,
                                           dtype="fp8", overhead_seconds=throughput.LAUNCH_SECONDS)
    i = int(np.argmin(speedup))
    return int(tokens[i]), float(speedup[i])


def hopper_fp8_share_needed(step_speedup: float, gemm_speedup: float) -> float:
    """Share of a step its sparse GEMMs must take for Amdahl's law to give ``step_speedup``."""
    step_speedup = _checks.scalar("step_speedup", step_speedup)
    gemm_speedup = _checks.positive("gemm_speedup", _checks.scalar("gemm_speedup", gemm_speedup))
    try:
        return float(workloads.part_fraction_needed(step_speedup, gemm_speedup))
    except ValueError as err:
        raise ValueError(f"step_speedup and gemm_speedup: {err}") from None


def violation_probability(pattern: str = "2:4") -> float:
    """Chance that a group breaks ``pattern`` when each element is non-zero with probability 1/2.

    A group of ``span`` independent elements breaks 2:4 if more than ``kept`` are non-zero:
    for 2:4, (4 + 1) / 16 = 5/16.
    """
    pat = sparsity.pattern(pattern)
    n = pat.span
    return sum(comb(n, j) for j in range(pat.kept * pat.unit + 1, n + 1)) / 2.0 ** n


def group_bits(dtype: str = "fp16") -> tuple:
    """Bits of one compressed group (values and metadata) and of the same group stored dense."""
    pat, bits = sparsity.pattern_for(dtype), sparsity.ELEMENT_BITS[dtype]
    return pat.kept * pat.unit * bits + pat.metadata_bits, pat.span * bits


def metadata_share(dtype: str = "fp16") -> float:
    """Metadata bits of a compressed group over the bits of its kept values: 1/8 for FP16."""
    pat, bits = sparsity.pattern_for(dtype), sparsity.ELEMENT_BITS[dtype]
    return pat.metadata_bits / (pat.kept * pat.unit * bits)


def sparse_marlin_fraction() -> float:
    """Sparse-Marlin's 4-bit values and metadata over dense 4-bit values.

    Sparse-Marlin dequantizes to FP16 and issues the FP16 2:4 instruction, so it keeps "two
    2-bit indices for each set of consecutive 4 elements" (its README): (2 x 4 + 4) / 16 = 0.75,
    not the 0.625 of the 4-bit pair-wise 4:8 pattern. Quantization scales are left out.
    """
    pat, bits = sparsity.pattern("2:4"), sparsity.ELEMENT_BITS["int4"]
    return (pat.kept * pat.unit * bits + pat.metadata_bits) / (pat.span * bits)


def overhead_bound_tokens(accelerator: str, hidden: int = 1024, limit: int = 1 << 16) -> int:
    """Most tokens at which a hidden x hidden FP16 GEMM's model speed-up is exactly 1.

    With :data:`OVERHEAD_SECONDS` per kernel, as in the speed-up exploration; 0 if none is.
    """
    acc = hardware.get(accelerator)
    hidden = _checks.count("hidden", hidden)
    tokens = np.arange(1, _checks.count("limit", limit, MAX_TOKENS) + 1)
    speedup = sparsity.sparse_gemm_speedup(hidden, hidden, tokens, acc.peak_flops("fp16"),
                                           acc.bandwidth, "fp16", 1.0, OVERHEAD_SECONDS)
    flat = tokens[speedup <= 1.0]
    return int(flat.max()) if flat.size else 0


def hopper_fp8_decode_bound() -> float:
    """The byte-ratio bound of a weight-bound decode step with FP8 weights made 2:4: 1 / c(fp8)."""
    return float(1.0 / sparsity.compressed_fraction("fp8"))


#: BERT-base (Devlin et al. 2019): 12 layers, width 768, feed-forward 3072; the tutorial pads
#: every SQuAD sequence to 384 tokens.
BERT_BASE = {"layers": 12, "d_model": 768, "d_ff": 3072, "seq_len": 384}
#: The batches of the measured BERT-base runs.
BERT_BATCHES = (4, 16, 64, 256)


def bert_linear_share(batch: int, mode: str = "eager") -> float:
    """Share of the measured dense BERT-base time that its encoder linears would take at the A100's peak.

    Per token and layer the linears (Q, K, V, output, two feed-forward) hold 4 d^2 + 2 d d_ff
    weights, 2 FLOP each. A lower bound on their real share: they cannot run faster than peak.
    """
    mode = _checks.choice("mode", mode, ("eager", "compiled"))
    if _checks.count("batch", batch) not in BERT_BATCHES:
        raise ValueError(f"batch must be one of the measured batches {', '.join(map(str, BERT_BATCHES))} "
                         f"(got {batch!r:.60})")
    batch = int(batch)
    b = BERT_BASE
    tokens = batch * b["seq_len"]
    flops = 2.0 * tokens * b["layers"] * (4 * b["d_model"] ** 2 + 2 * b["d_model"] * b["d_ff"])
    seconds = flops / hardware.get("A100 SXM4 80GB").peak_flops("fp16")
    return float(seconds / (1e-3 * measured.measurement(f"sparse.bert_base.a100_80.{mode}.bs{batch}.dense")))


@_checks.finite_result
def bert_ffn_intensity(batch: int, sparse: bool = False) -> float:
    """FLOP per byte of BERT-base's first feed-forward GEMM (d_ff x d_model weight) at ``batch``."""
    batch, sparse = _checks.count("batch", batch), _checks.flag("sparse", sparse)
    b = BERT_BASE
    tokens = batch * b["seq_len"]
    flops = 2.0 * b["d_ff"] * b["d_model"] * tokens
    return float(flops / sparsity.gemm_bytes(b["d_ff"], b["d_model"], tokens, sparse=sparse))


def bert_frame() -> pd.DataFrame:
    """BERT-base inference speed-ups with 2:4 encoder linears, by batch, eager and compiled."""
    rows = []
    for batch in BERT_BATCHES:
        row = {"batch": batch}
        for mode in ("eager", "compiled"):
            ids = [f"sparse.bert_base.a100_80.{mode}.bs{batch}.{k}" for k in ("dense", "sparse")]
            row[f"{mode} speed-up"] = round(_ratio(*ids), 3)
        rows.append(row)
    return pd.DataFrame(rows).set_index("batch")


def measured_chart():
    """Measured against modelled speed-up, one point per case, with the y = x line."""
    frame = measured_frame().reset_index()
    axis = alt.Scale(domain=[0.9, 2.1], zero=False)
    line = charts.identity_line(0.9, 2.1, axis)
    points = alt.Chart(frame).mark_point(filled=True, size=80).encode(
        x=alt.X("model:Q", title="model's speed-up", scale=axis),
        y=alt.Y("measured:Q", title="measured speed-up", scale=axis),
        color=alt.Color("scope:N", title=None),
        shape=alt.Shape("scope:N", title=None),
        tooltip=["case:N", alt.Tooltip("model:Q", format=".3f"),
                 alt.Tooltip("measured:Q", format=".3f")])
    return (line + points).properties(
        width=320, height=320,
        description=f"Scatter plot: measured speed-up of 2:4 sparsity (y) against the model's (x), one "
                    f"point per case ({len(frame)} cases), colour and marker shape giving the scope; points "
                    "on the dashed diagonal are predicted exactly.")


EXPLORATIONS = [SPEEDUP, STORAGE, PRUNING]


def sparse_overhead_exit_tokens(accelerator: str, hidden: int = 1024, limit: int = 1 << 16) -> int:
    """Fewest tokens at which the 2:4-sparse hidden x hidden FP16 GEMM takes longer than
    :data:`OVERHEAD_SECONDS` by its own compute or memory time (where its curve stops rising)."""
    acc = hardware.get(accelerator)
    hidden, limit = _checks.count("hidden", hidden), _checks.count("limit", limit, MAX_TOKENS)
    tokens = np.arange(1, limit + 1)
    terms = sparsity.sparse_gemm_terms(hidden, hidden, tokens, acc.peak_flops("fp16"),
                                       acc.bandwidth, "fp16", True)
    busy = np.maximum.reduce(list(terms.values())) > OVERHEAD_SECONDS
    return int(tokens[busy].min()) if busy.any() else limit


@_checks.finite_result
def gemm_intensities(accelerator: str, hidden: int, tokens: int) -> dict:
    """FLOP per byte of the dense and the 2:4-sparse hidden x hidden FP16 GEMM at ``tokens``,
    and the dense and sparse ridge points of the card."""
    acc = hardware.get(accelerator)
    hidden, tokens = _checks.count("hidden", hidden), _checks.count("tokens", tokens)
    flops = 2.0 * hidden * hidden * tokens
    peak, bw = acc.peak_flops("fp16"), acc.bandwidth
    return {"dense": float(flops / sparsity.gemm_bytes(hidden, hidden, tokens, "fp16")),
            "sparse": float(flops / sparsity.gemm_bytes(hidden, hidden, tokens, "fp16", True)),
            "ridge": float(peak / bw), "sparse_ridge": float(sparsity.sparse_ridge_point(peak, bw))}


check_direct_calls(globals())
