"""How wrong is each model? Every published measurement next to the prediction of the chapter that owns it.

Each measured row of ``data/measurements.csv`` and ``data/collectives.csv`` that a chapter's
model can predict gets one prediction, in the row's own unit, from that chapter's model and
the hardware table, with nothing fitted to the row. Two model sets are scored: ``"book"``,
the models the chapters teach, and ``"naive"``, the datasheet alone (peak FLOP/s, peak
bandwidth, a link's line rate, the 2x of 2:4 sparsity), so that every improvement is measured.
Rows that are inputs (the dense baseline of a speed-up, the V100 side of an A100/V100 ratio)
or that no chapter models are listed by :func:`unscored` with the reason. Some predictions
use other measured rows as inputs (an A100 from its V100 pair, a sparse time from its dense
time, a step's MLP share from its layer times); the chapters say so. The step model's few
constants are fitted to named families of rows (:mod:`gpumodel.calibration`), one
calibration for the whole book, never a constant per row; :func:`cross_validate` refits them
with each chip's rows left out and scores those rows.
Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality") and in each chapter's
"Where this model is wrong".
"""
from __future__ import annotations

import csv
import functools
import io
import math
import unicodedata
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import (_checks, calibration, hardware, measured, memory, parallelism, sparsity, throughput,
               workloads)
from .units import GB, TFLOPS

MODELS = ("book", "naive")
CHAPTERS = ("memory_hierarchy", "tensor_cores", "low_precision", "sparsity", "parallelism",
            "choosing_a_gpu")
COLUMNS = ("id", "chapter", "hardware", "workload", "measured", "predicted", "unit", "rel_error",
           "source")
#: A row is "within" when its absolute relative error is at most this.
WITHIN = 0.30

#: Boards measured in the data that share their Tensor Core peak with a row of the table
#: (``data/hardware_aliases.csv``, column ``peak_as``, with the reason for each).
PEAK_ALIASES = calibration.PEAK_ALIASES
#: Boards whose memory system (HBM generation, bus width, clock) matches a row of the table
#: (``data/hardware_aliases.csv``, column ``memory_as``, with the reason for each).
MEMORY_ALIASES = calibration.MEMORY_ALIASES
#: The NVLink generation of each collective's hardware.
LINKS = {"A100 SXM4 80GB": "NVLink 3 (A100)", "H200 SXM": "NVLink 4 (H100)"}
#: Share of the link a ring reaches (NCCL's protocol overhead on NVLink, parallelism chapter).
PROTOCOL_EFFICIENCY = 0.8
#: Launch overhead per kernel that the sparsity chapter's GEMM model uses, seconds: t_h.
SPARSE_OVERHEAD_SECONDS = throughput.EAGER_HOST_SECONDS
#: Tokens of the DINOv2 ViT-L MLP microbenchmark and of SAM's training step (8 images of 64 x 64).
VIT_TOKENS = 13008
VIT_STEP_TOKENS = 8 * 64 * 64
#: DeepBench tilings the book's GEMM model chooses from (tile_m, tile_n, split-K), as cuBLAS does.
GEMM_CONFIGS = ((128, 128, 1), (128, 128, 2), (128, 128, 4), (64, 128, 1), (64, 64, 1),
                (64, 64, 2), (128, 256, 1), (256, 128, 1), (128, 32, 1), (128, 32, 4))


@dataclass(frozen=True)
class Rule:
    """How one family of rows (ids starting with ``prefix``) is predicted."""
    prefix: str
    chapter: str
    workload: str
    predict: Callable[[dict, str, dict, object], float | None]


class _Unscorable(ValueError):
    """Raised by a rule that cannot predict a row; the message is the one-line reason."""


#: Longest hardware name worth looking up; the table's longest is far shorter.
_LONGEST_NAME = 100


@functools.lru_cache(maxsize=1024)
def _lookup(name: str) -> hardware.Accelerator | None:
    try:
        return hardware.get(name)
    except ValueError:
        return None


def _card(name: str, aliases: dict | None = None) -> hardware.Accelerator:
    name = (aliases or {}).get(name, name)
    acc = _lookup(name) if len(name) <= _LONGEST_NAME else None
    if acc is None:
        raise _Unscorable(f"hardware {name!r:.80} is not in the hardware table "
                         "(python -m gpumodel list)")
    return acc


@functools.lru_cache(maxsize=None)
def _known_names() -> frozenset:
    return frozenset(hardware.names())


#: Predictions already made with one calibration, keyed by what they depend on; bounded.
_MEMOS: dict = {}
_MEMO_ENTRIES = 100_000


#: Most distinct step-model runs (card, batch, GPUs, context) one reader's file may ask for:
#: each costs about half a millisecond, so this bounds a file's scoring to a few seconds.
MAX_STEP_RUNS = 5000
#: Step-model runs the reader's file being scored may still ask for (None: no file, no bound).
_step_runs_left: list = [None]


def _memo(cal, room: int = 1) -> dict:
    """The predictions remembered for this calibration, with room for ``room`` more."""
    holder = _MEMOS.get(id(cal))
    if holder is None or holder[0] is not cal:
        if len(_MEMOS) >= 16:
            _MEMOS.clear()
        holder = _MEMOS[id(cal)] = (cal, {})
    if len(holder[1]) + room > _MEMO_ENTRIES:
        holder[1].clear()
    return holder[1]


def _cached(cal, key: tuple, compute: Callable[[], float], step: bool = False) -> float:
    """``compute()``, remembered for this calibration: the models are pure functions.

    A ``step`` run (the step model's kernel tables, the slow part) counts against
    :data:`MAX_STEP_RUNS` while a reader's file is scored.
    """
    memo = _memo(cal, 0)
    if key not in memo:
        memo = _memo(cal)
        if step and _step_runs_left[0] is not None:
            if _step_runs_left[0] <= 0:
                raise _Unscorable(f"the file asks the step model for more than {MAX_STEP_RUNS} "
                                  "distinct runs (cards, batch sizes, GPU counts, contexts); "
                                  "split it into files of fewer")
            _step_runs_left[0] -= 1
        memo[key] = compute()
    return memo[key]


def _peak(acc: hardware.Accelerator, dtype: str) -> float:
    peak = _peak_or_none(acc.name, dtype) if len(dtype) <= _LONGEST_NAME else None
    if peak is None:
        raise _Unscorable(f"{acc.name} has no {dtype!r:.40} peak in the hardware table")
    return peak


@functools.lru_cache(maxsize=1024)
def _peak_or_none(name: str, dtype: str) -> float | None:
    try:
        return _lookup(name).peak_flops(dtype)
    except ValueError:
        return None


def _row_value(id: str, rows: dict) -> float:
    if id not in rows:
        raise _Unscorable(f"needs the row {id} in the same file")
    return rows[id]["value"]


def _parts(row: dict, count: int, pattern: str) -> list[str]:
    parts = row["id"].split(".")
    if len(parts) != count:
        raise _Unscorable(f"an id of this family looks like {pattern}")
    return parts


def _shape(text: str) -> tuple[int, ...]:
    sizes = text.split("x")
    if len(sizes) != 3 or not all(s.isascii() and s.isdigit() and 0 < len(s) < 10 and int(s) > 0
                                  for s in sizes):
        raise _Unscorable(f"the shape {text!r:.40} must be three whole numbers from 1 to "
                         "999999999, joined by x")
    return tuple(int(s) for s in sizes)


def _whole(row: dict, column: str) -> int:
    if row.get(column) is None:
        raise _Unscorable(f"{column} is empty; this family needs it")
    return int(row[column])


# --- memory hierarchy: GEMMs, bandwidth, A100 against V100 -------------------------------------

def _deepbench(row: dict, model: str, rows: dict, cal) -> float:
    return _gemm_tflops(*_deepbench_gemm(row), model, cal)


def _deepbench_gemm(row: dict) -> tuple:
    """m, k, n, card, peak and dtype of a DeepBench row."""
    _, _, dtype, shape, _ = _parts(row, 5, "deepbench.<set>.<dtype>.<m>x<n>x<k>.<kind>")
    m, n, k = _shape(shape)
    acc = _card(row["hardware"])
    if dtype == "fp32" and acc.fp32_tflops:
        peak = acc.fp32_tflops * TFLOPS
    elif dtype == "fp32":
        raise _Unscorable(f"{acc.name} has no fp32 peak in the hardware table")
    else:
        peak = _peak(acc, "fp16")
    return m, k, n, acc, peak, dtype


def _gemm_tflops(m: int, k: int, n: int, acc, peak: float, dtype: str, model: str, cal) -> float:
    """TFLOPS of one GEMM: the roofline (naive) or the best tiling with waves and split-K at the
    card's sustained matmul share of peak and streaming share of bandwidth (book)."""
    key = ("gemm", m, k, n, acc.name, peak, dtype, model)
    return _cached(cal, key, lambda: float(_gemm_tflops_now(m, k, n, acc, peak, dtype, model,
                                                            cal)))


def _gemm_tflops_now(m, k, n, acc, peak: float, dtype: str, model: str, cal):
    """:func:`_gemm_tflops` computed; ``m``, ``k`` and ``n`` may be arrays of many shapes."""
    flops = memory.matmul_flops(m, k, n)
    if model == "naive":
        return flops / memory.matmul_roofline_seconds(m, k, n, peak, acc.bandwidth, dtype) / TFLOPS
    peak, bw = peak * cal.gemm_share(acc), acc.bandwidth * cal.stream_share(acc)
    tile_m, tile_n, split = (np.array(c, dtype=float) for c in zip(*GEMM_CONFIGS))
    m, k, n = (np.asarray(x, dtype=float)[..., None] for x in (m, k, n))
    best = memory.gemm_seconds(m, k, n, peak, bw, acc.sm_count or 1, tile_m, tile_n, split,
                               dtype).min(axis=-1)
    return flops / best / TFLOPS


def _stream(row: dict, model: str, rows: dict, cal) -> float | None:
    if MEMORY_ALIASES.get(row["hardware"], row["hardware"]) not in _known_names():
        raise _Unscorable(f"hardware {row['hardware']!r:.80} is not in the hardware table "
                          "(python -m gpumodel list)")
    share = 1.0 if model == "naive" else cal.constants["stream_share"]
    return share * _card(row["hardware"], MEMORY_ALIASES).memory_bandwidth_gbs


def _dle(row: dict, model: str, rows: dict, cal) -> float | None:
    _, net, side, gpus = _parts(row, 4, "dle.<network>.<a100 or v100_16>.<n>gpu")
    if side != "a100":
        raise _Unscorable("only the a100 side of an A100/V100 pair is predicted")
    pair = f"dle.{net}.v100_16.{gpus}"
    old = rows.get(pair)
    if old is None:
        raise _Unscorable(f"needs its V100 pair {pair} in the same file")
    if row["batch"] is None or old["batch"] is None:
        raise _Unscorable(f"batch is empty here or in {pair}; this family needs both")
    ratio = float(memory.bandwidth_ratio(_card(row["hardware"]).memory_bandwidth_gbs,
                                         _card(old["hardware"]).memory_bandwidth_gbs))
    if model == "naive":
        return old["value"] * ratio
    family = measured.DLE_NETWORKS[net][1] if net in measured.DLE_NETWORKS else "cnn"
    network = measured.POST_NETWORK_FACTOR[family] if gpus == "8gpu" else 1.0
    doublings = np.log2(row["batch"] / old["batch"])
    return float(old["value"] * ratio * measured.POST_BATCH_GAIN ** doublings * network)


# --- Tensor Cores and low precision -------------------------------------------------------------

def _mamf(row: dict, model: str, rows: dict, cal) -> float:
    dtype = row["id"].split(".")[-1]
    acc = _card(row["hardware"], PEAK_ALIASES)
    share = 1.0 if model == "naive" else cal.constants["gemm_share"]
    return share * _peak(acc, dtype) / TFLOPS


#: Bits per weight of each compiled decoding format in the data: int8 keeps one BF16 scale per
#: output row (about 8 bits); gpt-fast's int4 a BF16 scale and zero point per 32 weights
#: (4 + 32 / 32), torchao's per 64 (4 + 32 / 64); FP8 weight-only and FP8 with dynamic
#: activation quantization store one byte per weight.
COMPILED_BITS = {"bf16": 16.0, "int8": 8.0, "int8wo": 8.0, "int4_g32": 5.0, "int4wo_g64": 4.5,
                 "fp6": 6.0, "float8wo": 8.0, "float8dq_tensor": 8.0, "float8dq_row": 8.0}
#: The architecture of each model named in a compiled decoding row's id.
COMPILED_MODELS = {"llama2_7b": workloads.LLAMA2_7B, "llama3_8b": workloads.LLAMA3_8B,
                   "llama31_8b": workloads.LLAMA3_8B, "llama2_70b": workloads.LLAMA2_70B,
                   "llama31_70b": workloads.LLAMA3_70B}


def _gptfast(row: dict, model: str, rows: dict, cal) -> float | None:
    """gpt-fast and torchao decoding at batch 1 (one GPU): the compiled engine, CUDA graphs."""
    _, name, _, fmt = _parts(row, 4, "gptfast.<model>.<card>.<format>")
    if fmt not in COMPILED_BITS:
        raise _Unscorable(f"format {fmt!r:.40} is not one of {', '.join(COMPILED_BITS)}")
    if name not in COMPILED_MODELS:
        raise _Unscorable(f"model {name!r:.40} is not one of {', '.join(COMPILED_MODELS)}")
    if (row.get("gpus") or 1) != 1:
        raise _Unscorable("the decoding model covers one GPU; gpus must be 1 or empty")
    acc = _card(row["hardware"])
    arch, bits = COMPILED_MODELS[name], COMPILED_BITS[fmt]
    if model == "naive":
        nbytes = throughput.weight_bytes(bits, **arch, input_embedding=False)
        return float(acc.bandwidth / nbytes)
    return _cached(cal, ("gptfast", acc.name, name, fmt), lambda: float(throughput.throughput(
        "llm-decode", [acc], 1, engine="compiled", calibration=cal, context=8,
        weight_bits=bits, **arch)[0]))


def _matmul(row: dict, model: str, rows: dict, cal) -> float | None:
    """A large dense matmul on one card: the fitted large-GEMM share x the dense peak of its dtype."""
    parts = row["id"].split(".")
    dtype = parts[2] if len(parts) > 2 else ""
    name = PEAK_ALIASES.get(row["hardware"], row["hardware"])
    if dtype not in hardware.TENSOR_COLUMNS:
        raise _Unscorable("the id's third part must be one of "
                          f"{', '.join(hardware.TENSOR_COLUMNS)}")
    if name not in _known_names():
        raise _Unscorable(f"hardware {name!r:.80} is not in the hardware table "
                          "(python -m gpumodel list)")
    acc = hardware.get(name)
    share = 1.0 if model == "naive" else cal.constants["gemm_share"]
    return share * _peak(acc, dtype) / TFLOPS


# --- sparsity -----------------------------------------------------------------------------------

def _sparse_speedup(case: str, model: str, rows: dict) -> float:
    """The chapter's modelled speed-up of one 2:4 case (naive: the 2x of the math)."""
    if model == "naive":
        return 2.0
    if case == "vitl_step":
        # The sparsity chapter's Amdahl case: the MLP linears' share of SAM's ViT-L step, from
        # their measured dense times scaled to the step's tokens (batch 8 x 64 x 64 per image)
        # over 24 layers, at the layer model's speed-up.
        dense = sum(_row_value(f"sparse.vitl_{x}.a100_80.dense", rows) for x in ("fc1", "fc2"))
        step = _row_value("sparse.vitl_step.a100_80.dense", rows)
        share = dense * VIT_STEP_TOKENS / VIT_TOKENS * 24 / step
        layer = _layer_speedup("vitl_fc1")
        return float(workloads.amdahl_speedup(layer, min(share, 1.0)))
    return _layer_speedup(case)


@functools.lru_cache(maxsize=None)
def _layer_speedup(case: str) -> float:
    """The modelled 2:4 speed-up of one sparse GEMM case on the A100 (pure, so cached)."""
    a100 = hardware.get("A100 SXM4 80GB")

    def gemm(m, k, n):
        return float(sparsity.sparse_gemm_speedup(m, k, n, a100.peak_flops("fp16"), a100.bandwidth,
                                                  "fp16", 1.0, SPARSE_OVERHEAD_SECONDS))
    if case == "linear_3072x10240x3072":
        return gemm(3072, 10240, 3072)
    if case == "vitl_fc1":
        return float(sparsity.training_gemm_speedup(gemm(4096, 1024, VIT_TOKENS), 2))
    if case == "vitl_fc2":
        return float(sparsity.training_gemm_speedup(gemm(1024, 4096, VIT_TOKENS), 2))
    raise KeyError(case)


#: The 2:4 cases the sparsity chapter models (``sparse.<case>.<card>.sparse``).
SPARSE_CASES = ("linear_3072x10240x3072", "vitl_fc1", "vitl_fc2", "vitl_step")


def _sparse(row: dict, model: str, rows: dict, cal) -> float | None:
    parts = row["id"].split(".")
    if parts[-1] != "sparse":
        raise _Unscorable("only the sparse side of a dense/sparse pair is predicted")
    if parts[1] not in SPARSE_CASES:
        raise _Unscorable(f"the case {parts[1]!r:.60} is not one of {', '.join(SPARSE_CASES)}")
    pair = ".".join(parts[:-1] + ["dense"])
    dense = rows.get(pair)
    if dense is None:
        raise _Unscorable(f"needs its dense pair {pair:.80} in the same file")
    return dense["value"] / _sparse_speedup(parts[1], model, rows)


def _sparse_decode(row: dict, model: str, rows: dict, cal) -> float | None:
    if not row["id"].endswith("int4_sparse") or row["unit"] != "tokens/s":
        raise _Unscorable("only the int4_sparse decoding row in tokens/s is predicted")
    dense = _row_value("sparse.llama3_8b.a100_80.int4", rows)
    if model == "naive":
        return dense * 2.0
    ratio = (_row_value("sparse.llama3_8b.int4.size", rows)
             / _row_value("sparse.llama3_8b.int4_sparse.size", rows))
    return dense * ratio


# --- parallelism --------------------------------------------------------------------------------

def _collective(row: dict, model: str, rows: dict, cal) -> float | None:
    link = LINKS.get(row["hardware"])
    if link is None:
        raise _Unscorable(f"the collectives model knows the links of {', '.join(LINKS)} only")
    if row.get("size_bytes") is None or row.get("op") is None or row.get("gpus") is None:
        raise _Unscorable("needs size_bytes, op and gpus, which only the book's collectives.csv "
                          "carries; write mine.allreduce.<bytes> with link= in its detail")
    bw = parallelism.link(link).bandwidth
    if model == "naive":
        return bw / GB
    if str(row.get("algorithm", "")).upper().startswith("NVLS"):
        return float(parallelism.modelled_bus_bandwidth(
            row["size_bytes"], int(row["gpus"]),
            parallelism.NVLS_EFFICIENCY * PROTOCOL_EFFICIENCY * bw,
            parallelism.NVLS_LATENCY_SECONDS, row["op"], "nvls") / GB)
    return float(parallelism.modelled_bus_bandwidth(row["size_bytes"], int(row["gpus"]),
                                                    PROTOCOL_EFFICIENCY * bw,
                                                    cal.constants["ring_step_seconds"],
                                                    row["op"]) / GB)


# --- choosing a GPU -----------------------------------------------------------------------------

def _lambda(row: dict, model: str, rows: dict, cal) -> float:
    workload = "transformer-train" if ".bert_large." in row["id"] else "cnn-train"
    acc = _card(row["hardware"])
    batch = _whole(row, "batch")
    if model == "naive":
        table = throughput.kernels_for(workload, batch)
        return batch * _peak(acc, "fp16") / float(table["flops"] @ table["launches"])
    return _cached(cal, ("lambda", workload, acc.name, batch), lambda: float(
        throughput.throughput(workload, [acc], batch, calibration=cal)[0]), step=True)


def _decode(row: dict, model: str, rows: dict, cal) -> float:
    for key in ("params", "file_bytes", "context"):
        _detail_number(row, key)
    options = throughput._decode_options(row)
    acc = _card(row["hardware"])
    if model == "naive":
        nbytes = throughput.weight_bytes(options["weight_bits"], **{
            k: v for k, v in options.items() if k not in ("weight_bits", "context")},
            input_embedding=False)
        return float(acc.bandwidth / nbytes)
    key = ("decode", acc.name, tuple(sorted(options.items())))
    return _cached(cal, key, lambda: float(throughput.throughput(
        "llm-decode", [acc], 1, calibration=cal, **options)[0]), step=True)


#: Largest number a reader's detail may state (a parameter count or a file size in bytes).
_LARGEST_DETAIL = 1e15


def _detail_number(row: dict, key: str) -> float:
    detail = row.get("detail") or ""
    if f"{key}=" not in detail:
        raise _Unscorable(f"its detail must state {key}= (params=, file_bytes= and context=)")
    text = detail.split(f"{key}=")[1].split(";")[0].strip()
    number = _checks.plain_number(text)
    if not 1 <= number <= _LARGEST_DETAIL:
        raise _Unscorable(f"{key}= in its detail must be a number from 1 to "
                          f"{_LARGEST_DETAIL:.0e} (got {text!r:.40})")
    return number


def _llm_train(row: dict, model: str, rows: dict, cal) -> float:
    """Tokens/s per GPU of a Llama 3 8B pre-training run (torchtitan, FSDP, 16-bit)."""
    if row["id"].startswith("torchao.") and not row["id"].endswith(".bf16"):
        raise _Unscorable("an 8-bit run: the step model has no FP8 training path")
    acc = _card(row["hardware"])
    batch, gpus = _whole(row, "batch"), _whole(row, "gpus")
    if "power_limit_w=" in (row.get("detail") or "") and acc.tdp_w:
        acc = throughput.power_limited(acc, _detail_number(row, "power_limit_w"))
    compiled = "compile" in (row.get("what") or "")
    table = throughput.llm_train_kernels(batch, gpus=gpus, fused=compiled)
    tokens = batch * throughput.LLAMA_TRAIN_SEQ
    if model == "naive":
        return tokens * acc.peak_flops("fp16") / float(table["flops"] @ table["launches"])
    engine = "compiled" if compiled else "eager"
    return tokens / _cached(cal, ("train", acc, batch, gpus, compiled), lambda: float(
        throughput.step_seconds(table, [acc], engine, "16-bit", cal)[0]), step=True)


# --- a reader's own measurements (measurements/run.py) ----------------------------------------

def _mine_card(row: dict) -> hardware.Accelerator:
    if row["hardware"] not in _known_names():
        raise _Unscorable(f"hardware {row['hardware']!r:.80} is not a name in the hardware "
                          "table (python -m gpumodel list; measurements/run.py writes it)")
    return _lookup(row["hardware"])


def _mine_matmul(row: dict, model: str, rows: dict, cal) -> float:
    return _gemm_tflops(*_mine_matmul_gemm(row), model, cal)


def _mine_matmul_gemm(row: dict) -> tuple:
    """m, k, n, card, peak and dtype of a reader's matmul row."""
    _, _, dtype, shape = _parts(row, 4, "mine.matmul.<dtype>.<m>x<n>x<k>")
    acc = _mine_card(row)
    m, n, k = _shape(shape)
    return m, k, n, acc, _peak(acc, dtype), dtype


def _mine_stream(row: dict, model: str, rows: dict, cal) -> float:
    return _mine_card(row).memory_bandwidth_gbs


def _mine_sparse(row: dict, model: str, rows: dict, cal) -> float:
    parts, acc = _mine_sparse_card(row)
    pair = ".".join(parts[:-1] + ["dense"])
    dense_row = rows.get((pair, row["hardware"]), {})
    dense = dense_row.get("value")
    if dense is None:  # the pair on the same board: a file may hold several boards' runs
        raise _Unscorable(f"needs the row {pair} on {row['hardware']} in the same file")
    if dense_row.get("unit") != row["unit"]:
        raise _Unscorable(f"its dense pair {pair} is in {dense_row.get('unit')!r:.40}, this row "
                          f"in {row['unit']!r:.40}; both must be in the same unit")
    if model == "naive":
        return dense / 2.0
    m, k, n = _shape(parts[2])
    peak = _peak(acc, "fp16")
    return dense / _cached(cal, ("sparse", m, k, n, acc.name), lambda: float(
        _sparse_speedup_now(m, k, n, acc, peak)))


def _sparse_speedup_now(m, k, n, acc, peak: float):
    """The 2:4 speed-up of reader's GEMMs; ``m``, ``k`` and ``n`` may be arrays of many shapes."""
    return sparsity.sparse_gemm_speedup(m, k, n, peak, acc.bandwidth, "fp16", 1.0,
                                        SPARSE_OVERHEAD_SECONDS)


def _mine_sparse_card(row: dict) -> tuple[list[str], hardware.Accelerator]:
    """The id's parts and the card of a reader's sparse row (the sparse side, on a 2:4 card)."""
    parts = _parts(row, 4, "mine.sparse.<m>x<k>x<n>.<dense or sparse>")
    acc = _mine_card(row)
    if parts[-1] != "sparse":
        raise _Unscorable("only the sparse side of a dense/sparse pair is predicted")
    if not acc.sparse_2_4:
        raise _Unscorable(f"{acc.name} has no 2:4 sparse Tensor Cores")
    return parts, acc


def _mine_allreduce(row: dict, model: str, rows: dict, cal) -> float:
    size, gpus, name = _mine_allreduce_args(row)
    bw = _link_bandwidth(name)
    if model == "naive":
        return bw / GB
    return _cached(cal, ("allreduce", size, gpus, name), lambda: float(
        _allreduce_now(size, gpus, name)))


def _allreduce_now(size, gpus, name: str):
    """Modelled bus bandwidth in GB/s; ``size`` and ``gpus`` may be arrays of many runs."""
    step = calibration.default().constants["ring_step_seconds"]
    return parallelism.modelled_bus_bandwidth(size, gpus, PROTOCOL_EFFICIENCY
                                              * _link_bandwidth(name), step) / GB


def _mine_allreduce_args(row: dict) -> tuple[int, int, str]:
    """Message size in bytes, GPU count and link name of a reader's all-reduce row."""
    size = _parts(row, 3, "mine.allreduce.<bytes>")[-1]
    detail = row.get("detail") or ""
    if "link=" not in detail:
        raise _Unscorable("its detail must name the link (link=<name>)")
    name = detail.split("link=")[1].split(";")[0].strip()
    known = _link_names()
    if name not in known:
        raise _Unscorable(f"link {name!r:.60} is not one of {', '.join(known)}")
    if not (size.isascii() and size.isdigit() and 0 < len(size) < 16 and int(size) > 0):
        raise _Unscorable(f"the message size {size!r:.40} must be a whole number of bytes")
    gpus = _whole(row, "gpus")
    if gpus < 2:
        raise _Unscorable("an all-reduce needs gpus of 2 or more")
    return int(size), gpus, name


@functools.lru_cache(maxsize=None)
def _link_names() -> tuple[str, ...]:
    return tuple(link.name for link in parallelism.links())


@functools.lru_cache(maxsize=None)
def _link_bandwidth(name: str) -> float:
    return parallelism.link(name).bandwidth


RULES = (
    Rule("deepbench.", "memory_hierarchy", "cuBLAS GEMM", _deepbench),
    Rule("stream.", "memory_hierarchy", "streaming kernel", _stream),
    Rule("dle.", "memory_hierarchy", "A100 training from V100 throughput", _dle),
    Rule("mamf.", "tensor_cores", "best-shape matmul", _mamf),
    Rule("amdmaf.", "tensor_cores", "best-shape matmul", _mamf),
    Rule("gemm.", "tensor_cores", "large matmul", _matmul),
    Rule("gptfast.", "low_precision", "LLM decoding, batch 1", _gptfast),
    Rule("aodecode.", "low_precision", "LLM decoding, batch 1", _gptfast),
    Rule("sparse.llama3_8b.", "sparsity", "2:4 decoding", _sparse_decode),
    Rule("sparse.", "sparsity", "2:4 sparse GEMM or step", _sparse),
    Rule("nccl.", "parallelism", "collective", _collective),
    Rule("torchdist.", "parallelism", "collective", _collective),
    Rule("lambda.", "choosing_a_gpu", "training throughput", _lambda),
    Rule("decode.", "choosing_a_gpu", "LLM decoding, batch 1", _decode),
    Rule("train.", "choosing_a_gpu", "LLM pre-training", _llm_train),
    Rule("torchao.llama3_8b.", "choosing_a_gpu", "LLM pre-training", _llm_train),
    Rule("mine.matmul.", "memory_hierarchy", "torch matmul", _mine_matmul),
    Rule("mine.stream.", "memory_hierarchy", "copy kernel", _mine_stream),
    Rule("mine.sparse.", "sparsity", "2:4 sparse matmul", _mine_sparse),
    Rule("mine.allreduce.", "parallelism", "all-reduce", _mine_allreduce),
)

#: The units a reader's row of each family may state (those of the book's rows and of
#: measurements/run.py); a row in another unit (MB/s for GB/s, s for ms) is not scored.
READER_UNITS = {
    "deepbench.": ("TFLOPS",), "stream.": ("GB/s",), "dle.": ("img/s", "tokens/s"),
    "mamf.": ("TFLOPS",), "amdmaf.": ("TFLOPS",), "gemm.": ("TFLOPS", "TOPS"),
    "gptfast.": ("tokens/s",), "aodecode.": ("tokens/s",), "sparse.llama3_8b.": ("tokens/s", "GB"),
    "sparse.": ("img/s", "ms"), "nccl.": ("GB/s",), "torchdist.": ("GB/s",),
    "lambda.": ("images/s", "sequences/s"), "decode.": ("tokens/s",), "train.": ("tokens/s",),
    "torchao.llama3_8b.": ("tokens/s",), "mine.matmul.": ("TFLOPS",), "mine.stream.": ("GB/s",),
    "mine.sparse.": ("ms",), "mine.allreduce.": ("GB/s",),
}

UNSCORED_REASONS = {
    "l2.": "no chapter models L2 bandwidth; the memory chapter uses the measurement as an input",
    "torchao.llama3_8b.": "an 8-bit pre-training run (the step model has no FP8 training path: "
                          "scaling casts, mixed BF16 and FP8 GEMMs) or one on an H100 whose "
                          "form factor the source does not state",
    "torchao.": "the Tensor Core chapter derives MFU from these runs; no model predicts them",
    "power.": "a measurement the chapter shows, not a model's output",
    "write.": "a write-only kernel, shown beside the streaming rows; the streaming share is "
              "fitted to kernels that read (read, scale, triad), as deep-learning kernels do",
    "dle.": "the V100 side of an A100/V100 pair: the input the A100 row is predicted from",
    "stream.": "measured on a board whose bandwidth no row of the table has (an A100 80GB of unstated "
               "form factor, A40, GH200; see data/hardware_aliases.csv)",
    "sparse.bert_base.": "the dense baseline ran FP32 weights under autocast, the sparse model FP16: "
                         "the sparsity chapter shows the pair is not comparable",
    "sparse.sam_vith.": "an inference throughput the sparsity chapter quotes without a model",
    "sparse.llama3_8b.": "an input of the 2:4 decoding row (its dense speed or a checkpoint size)",
    "sparse.": "an input of a sparse row (its dense time) or a pruning cost, which no chapter models",
}


def _collective_as_measurement(row: dict) -> dict:
    return {"id": row["id"], "what": f"{row['op']} bus bandwidth, {row['algorithm']}",
            "hardware": row["hardware"], "value": row["busbw_gbs"], "unit": "GB/s",
            "batch": None, "gpus": row["gpus"], "source": row["source"],
            "detail": row["detail"], "size_bytes": row["size_bytes"], "op": row["op"],
            "algorithm": row["algorithm"]}


#: Largest reader's file :func:`dataset` reads, in bytes (several hundred thousand rows).
MAX_FILE_BYTES = 64 * 2**20
#: Most lines (blank ones too) and columns a reader's file may have: 200,000 rows score in
#: seconds; past these, the file is refused (a blank or wide file costs time to read too).
MAX_LINES = 300_000
MAX_COLUMNS = 100
#: Largest batch or GPU count a reader's row may state.
MAX_COUNT = 10**6


def dataset(measurements: str | None = None) -> list[dict]:
    """The measured rows: the book's (measurements plus collectives), or a reader's CSV file.

    A reader's file has the columns of ``data/measurements.csv`` (id, what, hardware, value,
    unit, batch, gpus, source, detail), as ``measurements/run.py`` writes it: UTF-8 (a
    byte-order mark is fine), at most :data:`MAX_FILE_BYTES`; see :func:`read_rows`. Scoring
    it asks the step model (training and decoding rows) for at most :data:`MAX_STEP_RUNS`
    distinct runs; rows past that are listed as unscored with the reason.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    if measurements is None:
        return measured.measurements() + [_collective_as_measurement(r) for r in measured.collectives()]
    path = _checks.text("measurements", measurements)
    try:
        data = _checks.read_bytes(path, MAX_FILE_BYTES)
    except ValueError as err:
        raise ValueError(f"measurements: cannot read {path!r} ({err})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB, the limit for a "
                         "measurements file; split it")
    return read_rows(_utf8(data, path), path)


def _utf8(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{name}, line {line}: byte 0x{data[err.start]:02x} is not UTF-8; "
                         "save the file as CSV UTF-8") from None


def read_rows(text: str, name: str = "measurements") -> list[dict]:
    """Rows of a measurements CSV in the book's schema, with numbers parsed.

    A file that is not a CSV of that schema (a missing column, a row with more or fewer
    fields than the header, an unterminated quote, a field over 131,072 characters, a NUL
    byte, no rows, more than :data:`MAX_LINES` lines or :data:`MAX_COLUMNS` columns) raises a
    ValueError naming ``text``, ``name`` and the line. A row that is well formed but cannot be
    scored (an empty id or one holding a control character such as a newline, a value that
    is not a positive number in ASCII digits (``'٣'``, ``'３'`` and ``2_900`` are refused), a
    batch or gpus that is not a whole number from 1 to :data:`MAX_COUNT`, the id and hardware
    of an earlier row) is kept with its reason in ``problem``; every row carries ``file`` and
    ``line``. Column names and hardware names are matched ignoring letter case and surrounding
    whitespace (``ID``, ``h100 sxm5``) where that is unambiguous.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    text = _checks.text("text", text)
    where = "text of " + _checks.text("name", name)
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise ValueError(f"{where}, line {line}: a NUL byte; this is not a CSV text file")
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    expected = ", ".join(measured._MEASUREMENT_COLUMNS)
    header = _next_fields(reader, where)
    if header is None:
        raise ValueError(f"{where}, line 1: the file is empty; expected the header {expected}")
    canonical = {c.lower(): c for c in measured._MEASUREMENT_COLUMNS}
    header_line, columns = header[0], [canonical.get(c.strip().lower(), c.strip()) for c in header[1]]
    if len(columns) > MAX_COLUMNS:
        raise ValueError(f"{where}, line {header_line}: {len(columns)} columns, more than the "
                         f"{MAX_COLUMNS} a measurements file may have; expected {expected}")
    named = [c for c in columns if c]  # a spreadsheet may add unnamed empty columns
    repeated = sorted({c for c in named if named.count(c) > 1})
    missing = set(measured._MEASUREMENT_COLUMNS) - set(columns)
    if missing or repeated:
        what = (f"missing columns {sorted(missing)}" if missing
                else f"repeated columns {repeated} (letter case aside)")
        raise ValueError(f"{where}, line {header_line}: {what}; expected {expected}")
    out, seen = [], {}
    shared: dict[str, str] = {}  # one copy of each repeated field (hardware, unit, detail, ...)
    unique = columns.index("id")
    while (item := _next_fields(reader, where)) is not None:
        line, fields = item
        if len(fields) != len(columns):
            raise ValueError(f"{where}, line {line}: {len(fields)} fields where the header has "
                             f"{len(columns)} (a stray comma or quote?)")
        fields = [f.strip() if i == unique else shared.setdefault(f.strip(), f.strip())
                  for i, f in enumerate(fields)]
        row = _parsed_row(dict(zip(columns, fields)), name, line)
        row["hardware"] = _names_by_lower_case().get(row["hardware"].lower(), row["hardware"])
        if [f.lower() for f in fields] == [c.lower() for c in columns]:
            row["problem"] = "repeats the header (two files joined?); not a measurement"
        first = seen.setdefault((row["id"], row["hardware"]), line)
        if first != line and not row["problem"]:
            row["problem"] = (f"repeats the id and hardware of line {first}; keep one row "
                              "per id and board")
        out.append(row)
    if not out:
        raise ValueError(f"{where}, line {header_line + 1}: no rows after the header")
    return out


@functools.lru_cache(maxsize=1)
def _names_by_lower_case() -> dict[str, str]:
    """The hardware table's names by their lower-case spelling (those no other name shares)."""
    lower = [n.lower() for n in hardware.names()]
    return {low: n for low, n in zip(lower, hardware.names()) if lower.count(low) == 1}


def _next_fields(reader, where: str) -> tuple[int, list[str]] | None:
    """The next row that is not blank, with the line it starts on; None at the end."""
    while True:
        start = reader.line_num + 1
        if start > MAX_LINES:
            raise ValueError(f"{where}, line {start}: more than {MAX_LINES:,} lines, the limit "
                             "for a measurements file; split it")
        try:
            fields = next(reader)
        except StopIteration:
            return None
        except csv.Error as err:
            raise ValueError(f"{where}, line {start}: not a well-formed CSV row ({err})") from None
        if any(f.strip() for f in fields):
            return start, fields


def _parsed_row(row: dict, name: str, line: int) -> dict:
    value, value_problem = _reader_number(row["value"], "value", whole=False)
    batch, batch_problem = _reader_number(row["batch"], "batch", whole=True)
    gpus, gpus_problem = _reader_number(row["gpus"], "gpus", whole=True)
    problem = "id is empty" if not row["id"] else (_id_problem(row["id"]) or value_problem
                                                   or batch_problem or gpus_problem)
    return dict(row, value=value, batch=batch, gpus=gpus, file=name, line=line,
                problem=problem)


#: Unicode categories an id may not hold: control and format characters, line and paragraph separators.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp"})


def _id_problem(row_id: str) -> str | None:
    bad = next((ch for ch in row_id if unicodedata.category(ch) in _UNPRINTABLE), None)
    if bad is None:
        return None
    return (f"id holds the control character {bad!r} (U+{ord(bad):04X}); an id is one line "
            "of printable text")


def _reader_number(text: str, column: str, whole: bool) -> tuple[float | None, str | None]:
    if whole and not text:
        return None, None
    number = _checks.plain_number(text)
    if whole and not (1 <= number <= MAX_COUNT and number == int(number)):
        return None, (f"{column} must be empty or a whole number from 1 to {MAX_COUNT} "
                      f"in ASCII digits (got {text!r:.40})")
    if not whole and not (math.isfinite(number) and number > 0):
        return None, (f"{column} must be a positive number in ASCII digits, such as 2900 or "
                      f"2.9e3 (got {text!r:.40})")
    return number, None


def _rule(row_id: str) -> Rule | None:
    second_dot = row_id.find(".", row_id.find(".") + 1)
    family = row_id if second_dot < 0 else row_id[:second_dot + 1]
    if len(family) > _LONGEST_NAME:
        return _family_rule.__wrapped__(family)
    return _family_rule(family)


@functools.lru_cache(maxsize=4096)
def _family_rule(family: str) -> Rule | None:
    """The rule of ids starting ``family`` (their first two parts): no prefix has more."""
    for rule in RULES:
        if family.startswith(rule.prefix):
            return rule
    return None


def rows(model: str = "book", chapter: str | None = None, measurements: str | None = None,
         calibration=None) -> list[dict]:
    """Every scored row: id, chapter, hardware, workload, measured, predicted, unit, rel_error, source.

    ``rel_error`` = predicted / measured - 1 (positive: the model predicts more than was
    measured). ``model`` is "book" or "naive"; ``chapter`` filters; ``measurements`` scores a
    reader's CSV instead of the book's data (see :func:`dataset`); its rows that cannot be
    scored are listed by :func:`unscored`.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    return _score(model, chapter, measurements, calibration)[0]


def unscored(measurements: str | None = None) -> list[dict]:
    """Rows that are not scored, with the reason: inputs to another row's prediction, or no model.

    For a reader's file each entry also names the ``file`` and ``line``, and the reason says
    what the row lacks.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    return _score("book", None, measurements)[1]


def _score(model: str, chapter: str | None, measurements: str | None,
           calibration=None) -> tuple[list[dict], list[dict]]:
    """The scored rows and the unscored ones, from one reading of the data."""
    model = _checks.choice("model", model, MODELS)
    if chapter is not None:
        chapter = _checks.choice("chapter", chapter, CHAPTERS)
    data = dataset(measurements)
    by_id = {r["id"]: r for r in data if not r.get("problem")}
    if measurements is not None:  # a reader's pairs are looked up on their own board too
        by_id.update({(r["id"], r["hardware"]): r for r in data if not r.get("problem")})
    cal = throughput._calibration(calibration)
    scored, skipped = [], []
    reader = measurements is not None
    _step_runs_left[0] = MAX_STEP_RUNS if reader else None
    try:
        for start in range(0, len(data), _CHUNK_ROWS):
            chunk = data[start:start + _CHUNK_ROWS]
            if reader:
                _prefetch(chunk, model, cal)
            for row in chunk:
                rule = _rule(row["id"])
                if chapter is not None and (rule is None or rule.chapter != chapter):
                    continue
                predicted, reason = _predict(rule, row, model, by_id, cal, reader)
                if predicted is None:
                    skipped.append(_unscored_entry(row, rule, reason))
                    continue
                scored.append({"id": row["id"], "chapter": rule.chapter,
                               "hardware": row["hardware"], "workload": rule.workload,
                               "measured": float(row["value"]), "predicted": predicted,
                               "unit": row["unit"],
                               "rel_error": predicted / float(row["value"]) - 1.0,
                               "source": f"{row['source'].strip('[]')}: "
                                         f"{row.get('detail') or ''}".rstrip(": ")})
    finally:
        _step_runs_left[0] = None
    return scored, skipped


#: Rows of a reader's file prefetched (and their predictions remembered) at a time.
_CHUNK_ROWS = 20_000


def _prefetch(rows: list[dict], model: str, cal) -> None:
    """Remember the predictions of a reader's GEMM, sparse and all-reduce rows, one vectorized
    call per card (the same models as the row-by-row rules, which then find them remembered),
    so that a file of 200,000 distinct shapes scores in seconds. A row that cannot be parsed
    is left to its rule, which says why."""
    groups: dict = {}
    for row in rows:
        family = next((f for f in _PREFETCH if row["id"].startswith(f)), None)
        if row.get("problem") or family is None:
            continue
        try:
            group, item = _PREFETCH[family][0](row, model)
        except _Unscorable:
            continue
        if group is not None:
            groups.setdefault((family, group), set()).add(item)
    memo = _memo(cal, sum(len(items) for items in groups.values()) + len(rows))
    for (family, group), items in groups.items():
        items = sorted(items)
        try:
            values = _PREFETCH[family][1](np.array(items, dtype=float).T, group, model, cal)
        except (ValueError, ArithmeticError):
            continue  # each row then meets the model's refusal itself
        for item, value in zip(items, np.broadcast_to(values, len(items))):
            memo[_PREFETCH[family][2](item, group, model)] = float(value)


def _gemm_group(row: dict, model: str):
    parse = _deepbench_gemm if row["id"].startswith("deepbench.") else _mine_matmul_gemm
    m, k, n, acc, peak, dtype = parse(row)
    return (acc, peak, dtype), (m, k, n)


def _sparse_group(row: dict, model: str):
    parts, acc = _mine_sparse_card(row)
    if model == "naive":
        return None, None
    return (acc, _peak(acc, "fp16")), _shape(parts[2])


def _allreduce_group(row: dict, model: str):
    size, gpus, name = _mine_allreduce_args(row)
    return (None, None) if model == "naive" else (name, (size, gpus))


_GEMM_PREFETCH = (
    _gemm_group,
    lambda a, g, model, cal: _gemm_tflops_now(a[0], a[1], a[2], g[0], g[1], g[2], model, cal),
    lambda item, g, model: ("gemm", *item, g[0].name, g[1], g[2], model))
#: Families whose reader's rows are prefetched: (group and item of a row, the vectorized
#: model over a group's items, the memo key of one item).
_PREFETCH = {
    "deepbench.": _GEMM_PREFETCH,
    "mine.matmul.": _GEMM_PREFETCH,
    "mine.sparse.": (_sparse_group,
                     lambda a, g, model, cal: _sparse_speedup_now(a[0], a[1], a[2], g[0], g[1]),
                     lambda item, g, model: ("sparse", *item, g[0].name)),
    "mine.allreduce.": (_allreduce_group,
                        lambda a, g, model, cal: _allreduce_now(a[0], a[1], g),
                        lambda item, g, model: ("allreduce", *item, g)),
}


def _predict(rule, row, model, by_id, cal, reader: bool) -> tuple[float | None, str | None]:
    """The prediction of one row, or None and (for a reader's row) the reason there is none."""
    if row.get("problem"):
        return None, row["problem"]
    if rule is None:
        return None, _no_rule(row["id"]) if reader else None
    if reader and row["unit"] not in READER_UNITS[rule.prefix]:
        return None, (f"unit {row['unit']!r:.40} is not one this family is predicted in "
                      f"({', '.join(READER_UNITS[rule.prefix])})")
    try:
        predicted = rule.predict(row, model, by_id, cal)
    except _Unscorable as err:
        return None, str(err) if reader else None
    except (ValueError, ArithmeticError) as err:
        if not reader:
            raise
        return None, f"the model refused it: {err}"
    if predicted is None:
        return None, None
    predicted = float(predicted)
    if reader and not (math.isfinite(predicted) and math.isfinite(predicted / row["value"])):
        return None, "its prediction over its value is not a finite number"
    return predicted, None


def _no_rule(row_id: str) -> str:
    family = row_id.split(".")[0]
    return (f"no chapter predicts ids starting {family!r:.40}; the families are "
            f"{', '.join(rule.prefix for rule in RULES)}")


def _unscored_entry(row: dict, rule, reason: str | None) -> dict:
    if "line" not in row:
        if reason is None:
            reason = next((why for prefix, why in UNSCORED_REASONS.items()
                           if row["id"].startswith(prefix)), None)
        if reason is None:
            reason = ("an input of another row, or hardware the table lacks" if rule
                      else "no chapter predicts it")
        return {"id": row["id"], "reason": reason}
    reason = " ".join((reason or "an input of another row").split())
    return {"file": row["file"], "line": row["line"], "id": row["id"], "reason": reason}


def summary(scored: list[dict]) -> dict:
    """Per chapter and overall: rows, median and 90th-percentile |rel_error|, share within 30%, worst three.

    Every ``rel_error`` must be a finite number: a row that could not be scored (NaN, None)
    is refused, naming its id, rather than turning every statistic into NaN; leave such rows
    out (or list them as unscored) before summarising.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    if not isinstance(scored, list) or not all(
            isinstance(r, dict) and {"id", "chapter", "rel_error"} <= set(r) for r in scored):
        raise ValueError("scored must be the list of dicts that rows() returns")
    for i, r in enumerate(scored):
        where = f"scored[{i}]"
        if _checks.scalar(f"{where}['rel_error'] (row {r['id']!r:.60})", r["rel_error"]) < -1:
            raise ValueError(f"{where}['rel_error'] must be >= -1, a prediction over a positive "
                             f"measurement less one (got {r['rel_error']!r:.40})")
        if not isinstance(r["chapter"], str) or r["chapter"] not in CHAPTERS:
            raise ValueError(f"{where}['chapter'] must be one of {', '.join(CHAPTERS)} "
                             f"(got {r['chapter']!r:.60})")
    out = {"chapters": {}, "overall": _stats([r["rel_error"] for r in scored])}
    for chapter in CHAPTERS:
        mine = [r for r in scored if r["chapter"] == chapter]
        if mine:
            out["chapters"][chapter] = dict(_stats([r["rel_error"] for r in mine]), worst=_worst(mine))
    out["worst"] = _worst(scored)
    return out


def _worst(scored: list[dict]) -> list[dict]:
    worst = sorted(scored, key=lambda r: (-abs(r["rel_error"]), r["id"]))[:3]
    return [{"id": r["id"], "rel_error": r["rel_error"]} for r in worst]


# --- calibration that cannot overfit: leave one chip out --------------------------------------

#: Share of rows within 10% of their measurement, reported beside the 30% of :data:`WITHIN`.
WITHIN_TIGHT = 0.10
#: Kendall's tau is reported for each workload measured on at least this many cards.
TAU_MIN_CARDS = 6


def _workload_key(row_id: str) -> str:
    """A row's workload without its card: 'gptfast.llama2_7b.a100_80.bf16' -> 'gptfast.llama2_7b.bf16'."""
    parts = row_id.split(".")
    return ".".join(parts[:2] + parts[3:]) if len(parts) > 3 else ".".join(parts[:2])


def _tau_workload(row_id: str) -> str:
    return ".".join(row_id.split(".")[:2])


def _order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """-1, 0 or 1 as ``a`` is below, equal to or above ``b``: the sign of ``a - b`` without
    computing it (1e308 - -1e308 overflows)."""
    return (a > b).astype(np.int8) - (a < b).astype(np.int8)


def kendall_tau(x, y) -> float:
    """Kendall's rank correlation tau-b of two equal-length sequences (ties counted as neither).

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    x, y = _checks.as_array("x", x), _checks.as_array("y", y)
    for name, values in (("x", x), ("y", y)):
        if values.ndim > 1:
            raise ValueError(f"{name} must be a 1-D sequence (got shape {values.shape})")
    x, y = x.ravel(), y.ravel()
    if x.size != y.size or x.size < 2:
        raise ValueError(f"x and y must have the same length, at least 2 (got {x.size} and {y.size})")
    if x.size > MAX_TAU_ITEMS:
        raise ValueError(f"x and y must have at most {MAX_TAU_ITEMS:,} elements (got {x.size:,}): "
                         "every pair is compared")
    n = x.size
    agree = tied_x = tied_y = 0
    rows = max(1, 2**20 // n)  # a block of rows against every later element, a few MB at a time
    for start in range(0, n - 1, rows):
        stop = min(start + rows, n - 1)
        later = np.arange(n)[None, :] > np.arange(start, stop)[:, None]
        dx = _order(x[start:stop, None], x[None, :])[later]
        dy = _order(y[start:stop, None], y[None, :])[later]
        agree += int(np.sum(dx * dy))
        tied_x, tied_y = tied_x + int(np.sum(dx == 0)), tied_y + int(np.sum(dy == 0))
    n0 = n * (n - 1) // 2
    denom = np.sqrt(float(n0 - tied_x) * float(n0 - tied_y))
    return float(agree / denom) if denom > 0 else 0.0


#: Most elements :func:`kendall_tau` ranks (it compares all n (n - 1) / 2 pairs; 10,000 take
#: about a second).
MAX_TAU_ITEMS = 10_000


def cross_validate(chapter: str | None = None) -> list[dict]:
    """Every scored row predicted with constants fitted without it: its chip left out, or its workload.

    For a chapter whose rows span two or more dies, each row is predicted by
    :func:`gpumodel.calibration.fit` with the row's dies left out (every row of those dies
    withheld, and their own measured matmul share, streaming share and latency too); a row
    that involves two chips (an A100/V100 pair) is left out with both. For a chapter whose
    rows are all on one die, the row's workload is left out instead (every row of the same
    workload on any card). Rows carry the keys of :func:`rows` plus ``left_out`` (what was
    withheld) and ``cv`` ("chip" or "workload").
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    if chapter is not None:
        chapter = _checks.choice("chapter", chapter, CHAPTERS)
    data = dataset()
    by_id = {r["id"]: r for r in data}
    scored = rows("book", chapter)
    dies_of_chapter = {}
    for r in scored:
        dies_of_chapter.setdefault(r["chapter"], set()).update(calibration.row_dies(by_id[r["id"]]))
    fits, out = {}, []
    for r in scored:
        row = by_id[r["id"]]
        rule = _rule(r["id"])
        if len(dies_of_chapter[r["chapter"]]) > 1:
            mode, key = "chip", calibration.row_dies(row)
            if key not in fits:
                fits[key] = calibration.default(key)
            label = "+".join(sorted(key))
        else:
            mode, workload = "workload", _workload_key(r["id"])
            key = ("workload", workload)
            if key not in fits:
                keep = [m for m in measured.measurements() if _workload_key(m["id"]) != workload]
                fits[key] = calibration.fit(rows=keep)
            label = workload
        predicted = float(rule.predict(row, "book", by_id, fits[key]))
        out.append(dict(r, predicted=predicted, rel_error=predicted / r["measured"] - 1.0,
                        left_out=label, cv=mode))
    return out


def _stats(errors: list[float]) -> dict:
    if not errors:
        return {"rows": 0, "median": None, "p90": None, "p10_signed": None, "p90_signed": None,
                "within_10": None, "within_30": None}
    e = np.array(errors, float)
    a = np.abs(e)
    return {"rows": int(a.size), "median": float(np.median(a)), "p90": float(np.percentile(a, 90)),
            "p10_signed": float(np.percentile(e, 10)), "p90_signed": float(np.percentile(e, 90)),
            "within_10": float(np.mean(a <= WITHIN_TIGHT)), "within_30": float(np.mean(a <= WITHIN))}


def cv_summary(chapter: str | None = None) -> dict:
    """In-sample against left-out scores, per chapter and overall, and Kendall's tau per workload.

    {"chapters": {chapter: {"cv": "chip" or "workload", "in_sample": stats, "left_out": stats}},
    "overall": {...}, "tau": {workload: {"cards", "in_sample", "left_out"}}}; stats as in
    :func:`summary` plus ``within_10`` and the signed 10th and 90th percentiles of the
    relative error (the error band each prediction of that chapter carries).
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    inside = rows("book", chapter)
    left = cross_validate(chapter)
    out = {"chapters": {}, "tau": {}}
    for name in CHAPTERS:
        a = [r["rel_error"] for r in inside if r["chapter"] == name]
        b = [r for r in left if r["chapter"] == name]
        if a:
            out["chapters"][name] = {"cv": b[0]["cv"], "in_sample": _stats(a),
                                     "left_out": _stats([r["rel_error"] for r in b])}
    out["overall"] = {"in_sample": _stats([r["rel_error"] for r in inside]),
                      "left_out": _stats([r["rel_error"] for r in left])}
    groups = {}
    for r_in, r_out in zip(inside, left):
        groups.setdefault(_tau_workload(r_in["id"]), []).append((r_in, r_out))
    for name, pairs in groups.items():
        cards = {p[0]["hardware"] for p in pairs}
        if len(cards) < TAU_MIN_CARDS or len(cards) != len(pairs):
            continue
        measured_values = [p[0]["measured"] for p in pairs]
        out["tau"][name] = {"cards": len(pairs),
                            "in_sample": kendall_tau([p[0]["predicted"] for p in pairs],
                                                     measured_values),
                            "left_out": kendall_tau([p[1]["predicted"] for p in pairs],
                                                    measured_values)}
    return out


def discordant_pairs(workload: str) -> list[dict]:
    """The pairs of cards that the left-out predictions order the other way from the measurements.

    ``workload`` is a key of ``cv_summary()["tau"]`` (such as "decode.llama3_8b_q4"). One dict
    per pair: first and second (the card measured faster first), measured_gap (how much
    faster the first measured, as a fraction of the second) and the left-out errors of both.
    These are the pairs that hold Kendall's tau below 1.
    Explained in :doc:`/book/choosing_a_gpu` (section "Where this model is wrong").
    """
    if not isinstance(workload, str):
        raise ValueError(f"workload must be a string such as 'decode.llama3_8b_q4' "
                         f"(got {workload!r:.60})")
    rows_of = [r for r in cross_validate() if _tau_workload(r["id"]) == workload]
    known = sorted(cv_summary()["tau"])
    if workload not in known:
        raise ValueError(f"workload must be one with Kendall's tau: {', '.join(known)} "
                         f"(got {workload!r:.60})")
    out = []
    for i, a in enumerate(rows_of):
        for b in rows_of[i + 1:]:
            if (a["measured"] - b["measured"]) * (a["predicted"] - b["predicted"]) >= 0:
                continue
            fast, slow = (a, b) if a["measured"] > b["measured"] else (b, a)
            out.append({"first": fast["hardware"], "second": slow["hardware"],
                        "measured_gap": fast["measured"] / slow["measured"] - 1.0,
                        "first_error": fast["rel_error"], "second_error": slow["rel_error"]})
    return sorted(out, key=lambda p: p["measured_gap"])


def error_band(chapter: str, workload_prefix: str | None = None) -> tuple[float, float]:
    """The 10th and 90th percentiles of the left-out relative error of a chapter's rows (optionally
    of the rows whose id starts with ``workload_prefix``): the band a prediction carries.

    A prediction p of that rule is read as "between p / (1 + high) and p / (1 + low)".
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    chapter = _checks.choice("chapter", chapter, CHAPTERS)
    if workload_prefix is not None and not isinstance(workload_prefix, str):
        raise ValueError(f"workload_prefix must be a str or None (got {workload_prefix!r:.60})")
    errors = [r["rel_error"] for r in _cross_validated(chapter)
              if workload_prefix is None or r["id"].startswith(workload_prefix)]
    if not errors:
        raise ValueError(f"no left-out rows for chapter {chapter!r} and workload_prefix "
                         f"{workload_prefix!r:.60}")
    return float(np.percentile(errors, 10)), float(np.percentile(errors, 90))


_CV_CACHE: dict = {}


def _cross_validated(chapter: str) -> list[dict]:
    if chapter not in _CV_CACHE:
        _CV_CACHE[chapter] = cross_validate(chapter)
    return _CV_CACHE[chapter]
