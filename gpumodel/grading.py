"""Autograded checks for the exercises with numeric answers, and an offline autograder.

Every exercise whose answer is a number gets, in the student notebook, an answer cell where the
student sets named variables (``answer_<name> = ...``) and a check cell that tests each answer's
form (a plain, finite number), unit (stated; a value off by a factor of 100, 1,000, 10**6 or
10**9 is pointed out) and plausibility (a physical range wide enough not to give the answer
away). The instructor's copy of the check cell also holds hidden tests, between nbgrader's
``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``, that compare each answer with the value
the chapter's solution computes (read from its glued outputs), within a tolerance: what the book
prints, rounded, or 1% (:data:`ANSWERS` lists them, with their units and ranges).

``make student`` writes the student notebooks (:func:`student_notebook`); ``make grader`` writes an
nbgrader course directory (:func:`write_course`: ``source/`` with the reference solutions and
hidden tests, ``release/`` from ``nbgrader generate_assignment``), and

    python -m gpumodel.grading grade COURSE_DIR SUBMISSIONS_DIR GRADES.csv

grades a folder of submitted notebooks (``SUBMISSIONS_DIR/<student>/<chapter>.ipynb``) offline,
without Docker, with ``nbgrader autograde``, into a CSV with one row per student and exercise
(:func:`grade`). Explained in :doc:`/book/instructor_guide` (section "Checking and grading answers").
"""
from __future__ import annotations

import ast
import math
import numbers
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import student

#: The relative tolerance of a hidden test, unless an answer sets its own.
REL_TOL = 0.01
#: Factors a unit slip multiplies an answer by (percent for fraction, ms for s, bytes for GB ...).
UNIT_SLIPS = (100.0, 1e3, 1e6, 1e9)
#: What replaces the reference solution in the student's answer cell (nbgrader's code stub).
CODE_STUB = "# YOUR CODE HERE"
BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
#: The Execute preprocessor's limit per cell when nbgrader runs a submission (seconds).
CELL_TIMEOUT_S = 300


@dataclass(frozen=True)
class Answer:
    """One number an exercise asks for: the student sets ``answer_<name>`` in ``unit``.

    ``glue`` names the value the chapter's solution glues (the expected answer); ``low`` and
    ``high`` bound what is physically plausible; ``abs_tol`` widens the tolerance for counts and
    years that may be rounded either way; ``expression`` gives the reference solution's value
    where the solution glues it under a computed name.
    """
    label: str
    name: str
    glue: str
    what: str
    unit: str
    low: float
    high: float
    abs_tol: float = 0.0
    rel_tol: float = REL_TOL
    expression: str | None = None

    @property
    def variable(self) -> str:
        return f"answer_{self.name}"


#: The H100's memory-bound share in the ResNet-50 exercise, which the solution computes in a loop.
_SPLIT_H100 = 'throughput.time_by_regime(throughput.kernels_for("cnn-train", 256), ["H100 SXM5"])'
_MEMORY_SHARE_H100 = f'100 * {_SPLIT_H100}["memory"][0] / sum(v[0] for v in {_SPLIT_H100}.values())'

_A = Answer
#: Every numeric answer, by exercise. Questions that ask "which" or "why" are left to the reader of
#: the notebook; :data:`NOT_GRADED` lists them.
ANSWERS = (
    # brain
    _A("br-ex-predict", "br_factor", "ex_br_factor", "by what factor the estimate falls", "times", 1, 1e4),
    _A("br-ex-years", "br_doublings", "ex_br_periods", "whole doublings needed", "doublings", 1, 200,
       abs_tol=0.5),
    _A("br-ex-years", "br_year_1", "ex_br_y1", "year reached at 1 year per doubling", "year", 2025.9, 2300,
       abs_tol=1, rel_tol=0),
    _A("br-ex-years", "br_year_1_8", "ex_br_y18", "year reached at 1.8 years per doubling", "year", 2025.9,
       2300, abs_tol=1, rel_tol=0),
    _A("br-ex-years", "br_year_3", "ex_br_y3", "year reached at 3 years per doubling", "year", 2025.9, 2300,
       abs_tol=1, rel_tol=0),
    _A("br-ex-landauer", "br_erasures_per_watt", "ex_br_per_watt", "bit erasures per second per watt",
       "erasures/s per W", 1e12, 1e30),
    _A("br-ex-landauer", "br_watts", "ex_br_watts", "power at one erased bit per FLOP", "W", 1e-4, 1e6),
    _A("br-ex-roofline", "br_gpus_bandwidth", "ex_br_rf_bw", "H100s needed by memory bandwidth", "GPUs", 1,
       1e8, abs_tol=1),
    _A("br-ex-roofline", "br_gpus_compute", "ex_br_rf_fl", "H100s needed by compute, vector units",
       "GPUs", 1, 1e8, abs_tol=1),
    _A("br-ex-roofline", "br_gpus_capacity", "ex_br_rf_cap", "H100s needed by memory capacity", "GPUs", 1,
       1e8, abs_tol=1),
    _A("br-ex-roofline", "br_gpus_bandwidth_fp8", "ex_br_rf_fp8", "H100s needed by bandwidth, FP8 weights",
       "GPUs", 1, 1e8, abs_tol=1),
    _A("br-ex-roofline", "br_gpus_capacity_fp8", "ex_br_rf_fp8_cap", "H100s needed by capacity, FP8 weights",
       "GPUs", 1, 1e8, abs_tol=1),
    # choosing_a_gpu
    _A("cg-ex-predict", "cg_4090_decode", "ex_cg_4090_dec", "RTX 4090 decoding throughput",
       "times the A100 SXM4 40GB", 0.01, 100),
    _A("cg-ex-predict", "cg_6000_decode", "ex_cg_6000_dec", "RTX 6000 Ada decoding throughput",
       "times the A100 SXM4 40GB", 0.01, 100),
    _A("cg-ex-breakeven", "cg_breakeven_days", "ex_cg_lab_days", "days until the desktop is cheaper", "days",
       1, 1e5),
    _A("cg-ex-memory", "cg_batch_512", "ex_cg_b512", "largest batch of 512-token sequences", "sequences", 1,
       1e4, abs_tol=0.5),
    _A("cg-ex-power", "cg_full_power", "ex_cg_full_w", "power at full load", "W", 100, 1e5),
    _A("cg-ex-power", "cg_limited_power", "ex_cg_limited_w", "power with 300 W per GPU", "W", 100, 1e5),
    _A("cg-ex-value", "cg_3090_value", "ex_cg_3090_value", "RTX 3090 training per $1,000 owned",
       "times the A100 SXM4 40GB per $1,000", 1e-3, 100),
    _A("cg-ex-value", "cg_4090_value", "ex_cg_4090_value", "RTX 4090 training per $1,000 owned",
       "times the A100 SXM4 40GB per $1,000", 1e-3, 100),
    _A("cg-ex-qlora", "cg_qlora_gib", "ex_cg_70b_gib", "memory QLoRA needs before activations", "GiB", 1,
       1e4),
    _A("cg-ex-qlora", "cg_qlora_left_gib", "ex_cg_70b_left", "memory left for activations", "GiB", -1e3,
       1e3),
    # how_a_gpu_runs
    _A("hg-ex-predict", "hg_tokens", "ex_hg_rows", "tokens from which it is compute-bound", "tokens", 1, 1e5,
       abs_tol=1),
    _A("hg-ex-predict", "hg_first_point", "ex_hg_first", "first compute-bound point of the chart", "tokens",
       1, 1e5, abs_tol=0.5),
    _A("hg-ex-cpu", "hg_cpu_ms", "ex_hg_cpu_ms", "least time on the EPYC 9654", "ms", 1e-4, 1e5,
       expression=('1e3 * memory.kernel_seconds(f, memory.matmul_min_traffic(4096, 4096, 4096, "fp32"), '
                   '*cases["cpu"][:2])')),
    _A("hg-ex-cpu", "hg_fp32_ms", "ex_hg_fp32_ms", "least time on the H100's FP32 units", "ms", 1e-4, 1e5,
       expression=('1e3 * memory.kernel_seconds(f, memory.matmul_min_traffic(4096, 4096, 4096, "fp32"), '
                   '*cases["fp32"][:2])')),
    _A("hg-ex-cpu", "hg_bf16_ms", "ex_hg_bf16_ms", "least time on the H100's Tensor Cores", "ms", 1e-4, 1e5,
       expression=('1e3 * memory.kernel_seconds(f, memory.matmul_min_traffic(4096, 4096, 4096, "bf16"), '
                   '*cases["bf16"][:2])')),
    _A("hg-ex-decode", "hg_tokens_by_memory", "ex_hg_by_memory", "tokens/s the bandwidth allows", "tokens/s",
       1, 1e8),
    _A("hg-ex-decode", "hg_tokens_by_compute", "ex_hg_by_compute", "tokens/s the Tensor Cores allow",
       "tokens/s", 1, 1e8),
    _A("hg-ex-flight", "hg_in_flight_kb", "ex_hg_ada_kb", "bytes in flight", "kB", 1, 1e6),
    _A("hg-ex-flight", "hg_warps_per_sm", "ex_hg_ada_warps", "warps per SM", "warps", 0.01, 1e3),
    _A("hg-ex-regimes", "hg_memory_share_h100", "ex_hg_resnet_sxm5", "share of the step memory-bound, H100",
       "%", 0, 100,
       expression=_MEMORY_SHARE_H100),
    _A("hg-ex-regimes", "hg_memory_share_4090", "ex_hg_resnet_4090", "share of the step memory-bound, RTX 4090",
       "%", 0, 100,
       expression='share'),
    # low_precision
    _A("lp-ex-e5m2", "lp_e5m2_flushed", "ex_e5m2_flushed", "gradients E5M2 flushes at its best scale", "%", 0,
       100),
    _A("lp-ex-e5m2", "lp_e4m3_overflow", "ex_e4m3_over", "gradients E4M3 overflows at that scale", "%", 0,
       100),
    _A("lp-ex-e5m2", "lp_e4m3_flushed_there", "ex_e4m3_flushed", "gradients E4M3 flushes at that scale", "%",
       0, 100),
    _A("lp-ex-e5m2", "lp_e4m3_flushed", "ex_e4m3_best", "gradients E4M3 loses at its own best scale", "%", 0,
       100),
    _A("lp-ex-memory", "lp_bf16_gib", "ex_bf16_gib", "weights in BF16", "GiB", 1, 1e5),
    _A("lp-ex-memory", "lp_fp8_gib", "ex_fp8_gib", "weights in FP8", "GiB", 1, 1e5),
    _A("lp-ex-memory", "lp_nf4_gib", "ex_nf4_gib", "weights in NF4 with its scales", "GiB", 1, 1e5),
    _A("lp-ex-amdahl", "lp_ideal_speedup", "ex_ideal", "speedup with no overhead", "times", 1, 100),
    _A("lp-ex-amdahl", "lp_overhead", "ex_overhead", "overhead that gives the measured speedup",
       "% of the BF16 step", 0, 100),
    _A("lp-ex-mx", "lp_mx_gauss", "ex_mx_gauss", "FP4 error over INT4 error, Gaussian data", "ratio", 0.01, 100),
    _A("lp-ex-mx", "lp_mx_heavy", "ex_mx_heavy", "FP4 error over INT4 error, heavy-tailed data", "ratio", 0.01,
       100),
    _A("lp-ex-mx", "lp_exact_gauss", "ex_exact_gauss", "the same ratio with an exact scale, Gaussian data",
       "ratio", 0.01, 100),
    _A("lp-ex-predict", "lp_step_speedup", "ex_lp_pred_step", "end-to-end speedup", "times", 0.1, 20),
    _A("lp-ex-kvcache", "lp_sequences_bf16", "ex_kv_bf16", "sequences that fit with a BF16 cache", "sequences",
       0, 1e5, abs_tol=0.5),
    _A("lp-ex-kvcache", "lp_sequences_fp8", "ex_kv_fp8", "sequences that fit with an FP8 cache", "sequences",
       0, 1e5, abs_tol=0.5),
    # memory_hierarchy
    _A("mh-ex-tiles", "mh_a100_us", "ex_a100_us", "time to load the tiles on the A100", "µs", 1e-3, 1e6),
    _A("mh-ex-tiles", "mh_tpu_us", "ex_tpu_us", "time to load the tiles on the TPU v2", "µs", 1e-3, 1e6),
    _A("mh-ex-tiles", "mh_tile_ratio", "ex_tile_ratio", "TPU time over A100 time", "ratio", 0.01, 100),
    _A("mh-ex-ridge", "mh_tokens", "ex_m_star", "tokens from which it is compute-bound", "tokens", 1, 1e6,
       abs_tol=1),
    _A("mh-ex-waves", "mh_worst_rows", "ex_worst_m", "the m that wastes the most work", "rows", 1024, 2048,
       abs_tol=0.5),
    _A("mh-ex-units", "mh_left_gib", "ex_left", "room left", "GiB", -1e3, 1e3),
    _A("mh-ex-units", "mh_left_decimal_gib", "ex_decimal_left", "room left reading 80 GB as 80e9 bytes", "GiB",
       -1e3, 1e3),
    _A("mh-ex-predict", "mh_single_pass_4608", "ex_mh_single_4608", "matmuls that still fit at 4,608 tokens",
       "matmuls", 0, 4, abs_tol=0.5,
       expression='(row["reuse"] == "single pass").sum()'),
    _A("mh-ex-predict", "mh_ffn_intensity_4608", "ex_mh_ffn_4608", "FFN up's FLOP per DRAM byte at 4,608",
       "FLOP/byte", 1, 1e6,
       expression='row.loc["FFN up", "intensity"]'),
    _A("mh-ex-flash", "mh_flash_intensity", "ex_fa_i", "FLOP per L2 byte", "FLOP/byte", 0.1, 1e5),
    _A("mh-ex-flash", "mh_flash_share", "ex_fa_share", "share of the 16-bit peak allowed", "%", 0, 100),
    # parallelism
    _A("par-ex-predict", "par_half_size_8", "ex_par_half8", "message size at half the link, 8 GPUs", "MB",
       1e-3, 1e6),
    _A("par-ex-predict", "par_half_size_16", "ex_par_half16", "message size at half the link, 16 GPUs", "MB",
       1e-3, 1e6),
    _A("par-ex-zero", "par_zero_gpus", "ex_par_zero_gpus", "smallest power-of-two number of H100s", "GPUs", 1,
       1e6, abs_tol=0.5),
    _A("par-ex-bubble", "par_microbatches", "ex_par_m1", "micro-batches without interleaving", "micro-batches",
       1, 1e5, abs_tol=0.5),
    _A("par-ex-bubble", "par_microbatches_interleaved", "ex_par_m2", "micro-batches with 2 chunks per stage",
       "micro-batches", 1, 1e5, abs_tol=0.5),
    _A("par-ex-dp", "par_compute_ms", "ex_par_compute", "computation time", "ms", 1e-3, 1e6),
    _A("par-ex-dp", "par_allreduce_ms", "ex_par_comm", "all-reduce time", "ms", 1e-3, 1e6),
    _A("par-ex-dp", "par_efficiency", "ex_par_eff", "scaling efficiency", "fraction", 0, 1),
    _A("par-ex-dp", "par_latency_ms", "ex_par_lat_ms", "bucket latency in the all-reduce", "ms", 0, 1e6),
    _A("par-ex-dp", "par_efficiency_fp32", "ex_par_fp32_eff", "scaling efficiency with FP32 gradients",
       "fraction", 0, 1),
    _A("par-ex-moe", "par_moe_gb", "ex_par_moe_gb", "all-to-all bytes sent per GPU per step", "GB", 1e-4, 1e5),
    _A("par-ex-moe", "par_moe_ms", "ex_par_moe_ms", "all-to-all time on NVLink 4", "ms", 1e-3, 1e6),
    _A("par-ex-moe", "par_moe_share", "ex_par_moe_share", "all-to-all time over expert math time, NVLink",
       "fraction", 0, 50),
    _A("par-ex-moe", "par_moe_share_network", "ex_par_moe_share_ndr",
       "all-to-all time over expert math time, one 400 Gb/s port", "fraction", 0, 50),
    _A("par-ex-cp", "par_cp_gib", "ex_par_cp16", "activation memory per GPU with context parallelism", "GiB",
       1e-2, 1e7),
    _A("par-ex-cp", "par_no_cp_gib", "ex_par_cp1", "activation memory per GPU without it", "GiB", 1e-2, 1e7),
    # sparsity
    _A("sp-ex-predict", "sp_speedup_1", "ex_sp_one", "2:4 speedup at 1 token", "times", 0.1, 10),
    _A("sp-ex-predict", "sp_speedup_16384", "ex_sp_many", "2:4 speedup at 16,384 tokens", "times", 0.1, 10),
    _A("sp-ex-csr", "sp_csr_dense_density", "ex_csr_even", "density below which CSR beats dense", "%", 0, 100),
    _A("sp-ex-csr", "sp_csr_24_density", "ex_csr_vs_24", "density below which CSR beats 2:4", "%", 0, 100),
    _A("sp-ex-fit", "sp_dense_gib", "ex_fit_dense", "dense FP16 weights", "GiB", 0.1, 1e4),
    _A("sp-ex-fit", "sp_sparse_gib", "ex_fit_sparse", "2:4-compressed FP16 weights", "GiB", 0.1, 1e4),
    _A("sp-ex-step", "sp_step_measured", "ex_step_measured", "step speedup with the measured layers", "times",
       0.1, 10),
    _A("sp-ex-step", "sp_step_bound", "ex_step_bound", "step speedup at the bound", "times", 0.1, 10),
    # tensor_cores
    _A("tc-ex-h100", "tc_ffma_cycles", "ex_h100_ffma", "cycles with FFMA", "cycles", 1, 1e7,
       expression='tc.matmul_cycles(**(P | hopper), method="ffma")'),
    _A("tc-ex-h100", "tc_tensor_core_cycles", "ex_h100_tc", "cycles with Tensor Cores", "cycles", 1, 1e7,
       expression='tc.matmul_cycles(**(P | hopper), method="tensor_core")'),
    _A("tc-ex-h100", "tc_async_cycles", "ex_h100_async", "cycles with asynchronous copies", "cycles", 1, 1e7,
       expression='tc.matmul_cycles(**(P | hopper), method="async_copy")'),
    _A("tc-ex-h100", "tc_global_share", "ex_h100_share", "share of the Tensor Core variant's cycles waiting",
       "%", 0, 100),
    _A("tc-ex-sms", "tc_sms_8", "ex_sms_8", "fewest SMs with 8 Tensor Cores each", "SMs", 1, 1e3, abs_tol=0.5),
    _A("tc-ex-sms", "tc_sms_4", "ex_sms_4", "fewest SMs with 4 Tensor Cores each", "SMs", 1, 1e3, abs_tol=0.5),
    _A("tc-ex-buffer", "tc_serial_busy", "ex_serial", "utilization, serial", "%", 0, 100),
    _A("tc-ex-buffer", "tc_double_busy", "ex_double", "utilization, double buffered", "%", 0, 100),
    _A("tc-ex-buffer", "tc_load_limit", "ex_limit", "slowest load for 90% utilization", "cycles", 1, 1e5),
    _A("tc-ex-smem", "tc_smem_bytes", "ex_smem_total", "shared-memory bytes per cycle", "B/cycle", 1, 1e5),
    _A("tc-ex-smem", "tc_smem_share", "ex_smem_share", "share of shared-memory bandwidth", "%", 0, 1e4),
    _A("tc-ex-smem", "tc_smem_cap", "ex_smem_cap", "fraction of peak allowed", "%", 0, 100),
    _A("tc-ex-peak", "tc_sxm5_peak", "ex_sxm_peak", "H100 SXM5 dense BF16 peak", "TFLOPS", 1, 1e5),
    _A("tc-ex-peak", "tc_pcie_peak", "ex_pcie_peak", "H100 PCIe dense BF16 peak", "TFLOPS", 1, 1e5),
    _A("tc-ex-peak", "tc_sm_ratio", "ex_sm_ratio", "SXM5 SMs over PCIe SMs", "ratio", 0.1, 10),
    _A("tc-ex-peak", "tc_clock_ratio", "ex_clock_ratio", "SXM5 clock over PCIe clock", "ratio", 0.1, 10),
    _A("tc-ex-mfu", "tc_mfu_bf16", "ex_mfu_bf16", "MFU against the BF16 peak", "%", 0, 100),
    _A("tc-ex-mfu", "tc_mfu_fp8", "ex_mfu_fp8", "MFU against the FP8 peak", "%", 0, 100),
    _A("tc-ex-predict", "tc_busy_serial", "ex_tc_pred_serial", "Tensor Cores busy, serial", "%", 0, 100),
    _A("tc-ex-predict", "tc_busy_double", "ex_tc_pred_double", "Tensor Cores busy, double buffered", "%", 0,
       100),
)
del _A

#: Parts of exercises that ask for a choice or a reason, not a number: read, not autograded.
NOT_GRADED = {
    "br-ex-roofline": "which count binds",
    "cg-ex-predict": "which card ranks higher (the two numbers are graded)",
    "cg-ex-value": "which card in the table is best",
    "cg-ex-qlora": "whether it fits (the memory and what is left are graded)",
    "hg-ex-cpu": "whether each is compute- or memory-bound",
    "hg-ex-regimes": "why the shares differ",
    "lp-ex-memory": "whether each fits",
    "lp-ex-mx": "what changes with an exact scale (the ratio is graded)",
    "mh-ex-waves": "why",
    "mh-ex-units": "whether the weights fit",
    "mh-ex-predict": "which of the four fit, and whether FFN up stays above the ridge point",
    "sp-ex-predict": "which regime each is in",
    "sp-ex-fit": "whether either fits",
    "tc-ex-peak": "how much of the difference each factor explains (both ratios are graded)",
    "tc-ex-mfu": "which of the two says more",
}


def answers_by_label() -> dict[str, list[Answer]]:
    """:data:`ANSWERS` grouped by exercise label, in the table's order."""
    out: dict[str, list[Answer]] = {}
    for answer in ANSWERS:
        out.setdefault(answer.label, []).append(answer)
    return out


_START = re.compile(r"\{solution-start\}\s+(\S+)")
_GLUE_SPEC = re.compile(r"\{glue:text\}`([^`:]+):([^`]*)`")
_PRECISION = re.compile(r"\.(\d+)([efg%])")


def _solutions(nb) -> dict[str, dict]:
    """Per exercise label: its solution's code (the cells tagged "solution") and its prose."""
    out: dict[str, dict] = {}
    label = None
    for cell in nb.cells:
        if student.TAG not in cell.metadata.get("tags", []):
            label = None
            continue
        if cell.cell_type == "markdown":
            found = _START.search(cell.source)
            if found:
                label = found.group(1)
                out[label] = {"code": [], "prose": ""}
                continue
        if label is None:
            continue
        if cell.cell_type == "code":
            out[label]["code"].append(cell.source)
        else:
            out[label]["prose"] += cell.source + "\n"
    return out


def _half_last_digit(spec: str, value: float) -> float:
    """Half a unit in the last place the book prints ``value`` with format ``spec``."""
    found = _PRECISION.search(spec)
    if not found:
        return 0.5
    digits, kind = int(found.group(1)), found.group(2)
    if kind == "f":
        return 0.5 * 10.0 ** -digits
    if kind == "%":
        return 0.5 * 10.0 ** -(digits + 2)
    exponent = math.floor(math.log10(abs(value))) if value else 0
    return 0.5 * 10.0 ** (exponent - digits + (1 if kind == "g" else 0))


def _glued_expressions(code: str) -> dict[str, str]:
    """``glue("name", expression)`` calls in solution code: name -> the expression's source."""
    out = {}
    for node in ast.walk(ast.parse(code)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "glue" and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out[node.args[0].value] = ast.get_source_segment(code, node.args[1])
    return out


def expected_answers(path: str | Path) -> list[dict]:
    """Every graded answer of one chapter with the value its solution computes and the tolerance.

    Each is {"answer": :class:`Answer`, "value", "tolerance", "expression"}: the value read from the
    chapter's glued outputs, the tolerance the larger of ``rel_tol`` of it, ``abs_tol`` and half a
    unit in the last digit the solution prints, and the reference solution's expression for it.
    """
    nb = student._read(path)
    values = student._glue_values(nb, repr(str(path)))
    solutions = _solutions(nb)
    out = []
    for label, answers in answers_by_label().items():
        if label not in solutions:
            continue
        code = "\n".join(solutions[label]["code"])
        expressions = _glued_expressions(code)
        specs = dict(_GLUE_SPEC.findall(solutions[label]["prose"]))
        for answer in answers:
            if answer.glue not in values:
                raise ValueError(f"{label}: glued value {answer.glue!r} is not in the chapter's outputs")
            value = values[answer.glue]
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"{str(path)!r}: {label}: glued value {answer.glue!r} must be a finite "
                                 f"number (got {str(value)[:40]!r})")
            value = float(value)
            expression = answer.expression or expressions.get(answer.glue)
            if expression is None:
                raise ValueError(f"{label}: the solution does not glue {answer.glue!r} by name")
            tolerance = max(answer.rel_tol * abs(value), answer.abs_tol,
                            _half_last_digit(specs.get(answer.glue, ""), value))
            out.append({"answer": answer, "value": value, "tolerance": tolerance, "expression": expression})
    return out


def _plain_answer(answer, name: str, unit: str) -> float:
    """A student's answer as a float, or a ValueError saying what to fix (never another error)."""
    if answer is Ellipsis:
        raise ValueError(f"{name} is not set yet: replace the ... with your number ({unit})")
    if getattr(answer, "shape", None) == () and hasattr(answer, "item"):
        answer = answer.item()
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        raise ValueError(f"{name} must be a plain number in {unit}, not {type(answer).__name__} "
                         f"({str(answer)[:40]!r})")
    try:
        return float(answer)
    except (OverflowError, TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number in {unit} (got {type(answer).__name__} "
                         f"{str(answer)[:40]!r}{'...' if len(str(answer)) > 40 else ''})") from None


def check(answer, name: str, unit: str, low: float, high: float) -> float:
    """The check a student runs on an answer: a plain finite number, in ``unit``, between ``low``
    and ``high``. Says nothing of whether it is right; raises ValueError with what to fix.
    Explained in :doc:`/book/instructor_guide` (section "Checking and grading answers")."""
    from . import _checks

    name, unit = _checks.text("name", name), _checks.text("unit", unit)
    low, high = _checks.scalar("low", low), _checks.scalar("high", high)
    if low > high:
        raise ValueError(f"low must be <= high (got low={low:g}, high={high:g})")
    value = _plain_answer(answer, name, unit)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number (got {value})")
    if not low <= value <= high:
        slips = [f"{f:g}" for f in UNIT_SLIPS if low <= value * f <= high][:1]
        slips += [f"1/{f:g}" for f in UNIT_SLIPS if low <= value / f <= high][:1]
        hint = (f" Scaled by {' or '.join(slips)} it would be: check the unit." if slips else "")
        raise ValueError(f"{name} = {value:g} is not plausible: expected between {low:g} and {high:g} "
                         f"({unit}).{hint}")
    print(f"{name} = {value:g} {unit}: a number in a plausible range (the grader checks its value)")
    if unit.startswith("%") and 0 < abs(value) < 1:
        print(f"  note: in percent, {value:g} means {value / 100:g} of the whole; for {value:.0%} write "
              f"{100 * value:g}")
    return value


def check_close(answer, expected: float, tolerance: float, name: str) -> None:
    """A hidden test: ``answer`` within ``tolerance`` of ``expected``, or an AssertionError.

    An answer that is not a plain finite number is a ValueError saying so (as :func:`check`);
    ``expected`` and ``tolerance`` (>= 0) are the instructor's and refused naming them."""
    from . import _checks

    name = _checks.text("name", name)
    expected = _checks.scalar("expected", expected)
    tolerance = float(_checks.non_negative("tolerance", _checks.scalar("tolerance", tolerance)))
    value = _plain_answer(answer, name, "the exercise's unit")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number (got {value})")
    assert abs(value - expected) <= tolerance, f"{name} = {value:g} is not the expected value"


def _check_line(answer: Answer) -> str:
    return (f"check({answer.variable}, {answer.variable!r}, unit={answer.unit!r}, "
            f"low={answer.low:g}, high={answer.high:g})")


def _graded_cells(label: str, expected: list[dict], code: list[str], reference: bool):
    """The answer cell and the check cell of one exercise (nbgrader metadata, schema 3)."""
    import nbformat

    lines = [f"# Exercise {label}: set each answer to a plain number in the unit named, then run the check."]
    lines += [f"{e['answer'].variable} = ...  # {e['answer'].what} ({e['answer'].unit})" for e in expected]
    lines.append(BEGIN_SOLUTION if reference else CODE_STUB)
    if reference:
        lines += [c.rstrip() for c in code]
        lines += [f"{e['answer'].variable} = {e['expression']}" for e in expected]
        lines.append(END_SOLUTION)
    answer_cell = nbformat.v4.new_code_cell("\n".join(lines))
    answer_cell.metadata["nbgrader"] = {"grade": False, "grade_id": f"answer-{label}", "locked": False,
                                        "schema_version": 3, "solution": True, "task": False}
    checks = ["from gpumodel.grading import check, check_close", ""]
    checks += [_check_line(e["answer"]) for e in expected]
    if reference:
        checks.append(BEGIN_HIDDEN)
        checks += [f"check_close({e['answer'].variable}, {e['value']!r}, {e['tolerance']:.3g}, "
                   f"{e['answer'].variable!r})" for e in expected]
        checks.append(END_HIDDEN)
    check_cell = nbformat.v4.new_code_cell("\n".join(checks))
    check_cell.metadata["nbgrader"] = {"grade": True, "grade_id": f"check-{label}", "locked": True,
                                       "points": 1, "schema_version": 3, "solution": False, "task": False}
    check_cell.metadata["editable"] = False
    check_cell.metadata["deletable"] = False
    return [answer_cell, check_cell]


def _graded_notebook(path: str | Path, reference: bool):
    """The chapter as a reader reads it (:func:`student.reader_notebook`), outputs cleared, each
    solution replaced by the exercise's answer and check cells (or removed where nothing is graded)."""
    from nbconvert.preprocessors import ClearOutputPreprocessor

    nb = student.reader_notebook(path)
    solutions = _solutions(student._read(path))
    by_label: dict[str, list[dict]] = {}
    for e in expected_answers(path):
        by_label.setdefault(e["answer"].label, []).append(e)
    cells = []
    for cell in nb.cells:
        if student.TAG in cell.metadata.get("tags", []):
            found = _START.search(cell.source) if cell.cell_type == "markdown" else None
            if found and found.group(1) in by_label:
                label = found.group(1)
                cells += _graded_cells(label, by_label[label], solutions[label]["code"], reference)
            continue
        cells.append(cell)
    nb.cells = cells
    nb, _ = ClearOutputPreprocessor(enabled=True).preprocess(nb, {})
    nb.metadata.pop("widgets", None)
    return nb


def student_notebook(path: str | Path):
    """The student notebook of a chapter: no solution, no output, no hidden test; each exercise
    with a numeric answer followed by its answer cell and check cell (what ``make student`` writes)."""
    return _graded_notebook(path, reference=False)


def source_notebook(path: str | Path):
    """The instructor's nbgrader source of a chapter: each answer cell holds the chapter's solution
    code between nbgrader's solution markers, each check cell its hidden tests."""
    return _graded_notebook(path, reference=True)


_CONFIG = f'''"""nbgrader settings for the book's exercises (written by python -m gpumodel.grading)."""
c = get_config()  # noqa: F821
c.ClearSolutions.code_stub = {{"python": {CODE_STUB!r}}}
c.Execute.timeout = {CELL_TIMEOUT_S}
c.Execute.interrupt_on_timeout = True
'''


def _nbgrader(course: Path, *args: str) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "GPUMODEL_BOOK"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{tail}")


def write_course(out_dir: str | Path, notebooks, release: bool = True) -> list[Path]:
    """An nbgrader course directory in ``out_dir``: ``nbgrader_config.py``, one assignment per chapter
    with graded exercises in ``source/<chapter>/<chapter>.ipynb`` and, with ``release``, the student
    versions nbgrader generates in ``release/`` (the gradebook records the hidden tests). The
    source notebooks written. Explained in :doc:`/book/instructor_guide` (section "Checking and grading answers")."""
    import nbformat

    from . import _checks

    release = _checks.flag("release", release)
    notebooks = student._paths("notebooks", notebooks)
    course = student._out_dir(out_dir)
    (course / "nbgrader_config.py").write_text(_CONFIG)
    written = []
    for path in notebooks:
        if not expected_answers(path):
            continue
        folder = course / "source" / path.stem
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / path.name
        nbformat.write(source_notebook(path), str(target))
        written.append(target)
        if release:
            _nbgrader(course, "generate_assignment", path.stem, "--force")
    return written


def grade(course_dir: str | Path, submissions: str | Path, csv_path: str | Path) -> list[dict]:
    """Autograde ``submissions/<student>/<chapter>.ipynb`` against the course's hidden tests with
    ``nbgrader autograde`` (offline, no Docker) and write ``csv_path``: one row per student and
    exercise (student, chapter, exercise, score, max_score, status). The rows.
    Explained in :doc:`/book/instructor_guide` (section "Checking and grading answers")."""
    import csv
    import shutil

    for label, given in (("course_dir", course_dir), ("submissions", submissions), ("csv_path", csv_path)):
        if not isinstance(given, (str, Path)):
            raise ValueError(f"{label} must be a path (got {type(given).__name__})")
    course, submissions = Path(course_dir), Path(submissions)
    if not (course / "gradebook.db").exists():
        raise ValueError(f"{str(course)!r} holds no gradebook: write it with `make grader` first")
    if not submissions.is_dir():
        raise ValueError(f"{str(submissions)!r} is not a folder of submissions")
    try:
        from nbgrader.api import Gradebook, MissingEntry
    except ImportError:
        raise ValueError("nbgrader is not installed (pip install -r requirements.txt)") from None
    chapters = sorted(p.name for p in (course / "source").iterdir() if p.is_dir())
    students = sorted(p.name for p in submissions.iterdir() if p.is_dir())
    for who in students:
        for chapter in chapters:
            notebook = submissions / who / f"{chapter}.ipynb"
            if notebook.exists():
                target = course / "submitted" / who / chapter
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy(notebook, target / notebook.name)
    for chapter in chapters:
        if any((course / "submitted" / who / chapter).exists() for who in students):
            _nbgrader(course, "autograde", chapter, "--force")
    order = {f"check-{label}": i for i, label in enumerate(answers_by_label())}
    rows = []
    with Gradebook(f"sqlite:///{(course / 'gradebook.db').resolve()}") as gradebook:
        for who in students:
            for chapter in chapters:
                notebook = gradebook.find_notebook(chapter, chapter)
                for cell in sorted(notebook.grade_cells, key=lambda c: (order.get(c.name, len(order)), c.name)):
                    row = {"student": who, "chapter": chapter, "exercise": cell.name.removeprefix("check-"),
                           "score": 0.0, "max_score": cell.max_score, "status": "not submitted"}
                    try:
                        found = gradebook.find_grade(cell.name, chapter, chapter, who)
                        row["score"], row["status"] = found.score, "graded"
                    except MissingEntry:
                        pass
                    rows.append(row)
    with open(csv_path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else
                                ["student", "chapter", "exercise", "score", "max_score", "status"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


_USAGE = ("usage: python -m gpumodel.grading course OUTDIR NOTEBOOK...\n"
          "       python -m gpumodel.grading grade COURSE_DIR SUBMISSIONS_DIR GRADES.csv")


def main(argv: list[str]) -> int:
    if not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv):
        print(_USAGE.splitlines()[0] + " (arguments are strings)", file=sys.stderr)
        return 2
    try:
        if len(argv) >= 3 and argv[0] == "course":
            written = write_course(argv[1], argv[2:])
            print(f"wrote {len(written)} assignments to {argv[1]} (source/ and release/)")
            return 0
        if len(argv) == 4 and argv[0] == "grade":
            rows = grade(argv[1], argv[2], argv[3])
            print(f"graded {len({r['student'] for r in rows})} students: {len(rows)} rows in {argv[3]}")
            return 0
    except (OSError, ValueError, RuntimeError) as err:
        print(f"gpumodel.grading: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    print(_USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
