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
import dataclasses
import io
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
#: The latency per ring step the parallelism chapter assumes (5 us), not fitted to a sweep.
RING_STEP_SECONDS = 5e-6
#: Share of the link a ring reaches (NCCL's protocol overhead on NVLink, parallelism chapter).
PROTOCOL_EFFICIENCY = 0.8
#: Launch overhead per kernel that the sparsity chapter's GEMM model uses, seconds.
SPARSE_OVERHEAD_SECONDS = 5e-6
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


def _card(name: str, aliases: dict | None = None) -> hardware.Accelerator:
    return hardware.get((aliases or {}).get(name, name))


def _row_value(id: str, rows: dict) -> float:
    return rows[id]["value"]


# --- memory hierarchy: GEMMs, bandwidth, A100 against V100 -------------------------------------

def _deepbench(row: dict, model: str, rows: dict, cal) -> float:
    _, _, dtype, shape, _ = row["id"].split(".")
    m, n, k = (int(x) for x in shape.split("x"))
    acc = _card(row["hardware"])
    peak = acc.fp32_tflops * TFLOPS if dtype == "fp32" else acc.peak_flops("fp16")
    return _gemm_tflops(m, k, n, acc, peak, dtype, model, cal)


def _gemm_tflops(m: int, k: int, n: int, acc, peak: float, dtype: str, model: str, cal) -> float:
    """TFLOPS of one GEMM: the roofline (naive) or the best tiling with waves and split-K at the
    card's sustained matmul share of peak and streaming share of bandwidth (book)."""
    flops = memory.matmul_flops(m, k, n)
    if model == "naive":
        return float(flops / memory.matmul_roofline_seconds(m, k, n, peak, acc.bandwidth, dtype) / TFLOPS)
    peak, bw = peak * cal.gemm_share(acc), acc.bandwidth * cal.stream_share(acc)
    best = min(float(memory.gemm_seconds(m, k, n, peak, bw, acc.sm_count or 1, tm, tn, s,
                                         dtype)) for tm, tn, s in GEMM_CONFIGS)
    return float(flops / best / TFLOPS)


def _stream(row: dict, model: str, rows: dict, cal) -> float | None:
    if MEMORY_ALIASES.get(row["hardware"], row["hardware"]) not in hardware.names():
        return None
    share = 1.0 if model == "naive" else cal.constants["stream_share"]
    return share * _card(row["hardware"], MEMORY_ALIASES).memory_bandwidth_gbs


def _dle(row: dict, model: str, rows: dict, cal) -> float | None:
    _, net, side, gpus = row["id"].split(".")
    if side != "a100":
        return None
    old = rows.get(f"dle.{net}.v100_16.{gpus}")
    if old is None:
        return None
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
    return share * acc.peak_flops(dtype) / TFLOPS


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
    _, name, _, fmt = row["id"].split(".")
    if fmt not in COMPILED_BITS or name not in COMPILED_MODELS or (row.get("gpus") or 1) != 1:
        return None
    acc = _card(row["hardware"])
    arch, bits = COMPILED_MODELS[name], COMPILED_BITS[fmt]
    if model == "naive":
        nbytes = throughput.weight_bytes(bits, **arch, input_embedding=False)
        return float(acc.bandwidth / nbytes)
    return float(throughput.throughput("llm-decode", [acc], 1, engine="compiled",
                                       calibration=cal, context=8, weight_bits=bits, **arch)[0])


def _matmul(row: dict, model: str, rows: dict, cal) -> float | None:
    """A large dense matmul on one card: the fitted large-GEMM share x the dense peak of its dtype."""
    dtype = row["id"].split(".")[2]
    name = PEAK_ALIASES.get(row["hardware"], row["hardware"])
    if name not in hardware.names() or dtype not in hardware.TENSOR_COLUMNS:
        return None
    acc = hardware.get(name)
    share = 1.0 if model == "naive" else cal.constants["gemm_share"]
    return share * acc.peak_flops(dtype) / TFLOPS


# --- sparsity -----------------------------------------------------------------------------------

def _sparse_speedup(case: str, model: str, rows: dict) -> float:
    """The chapter's modelled speed-up of one 2:4 case (naive: the 2x of the math)."""
    if model == "naive":
        return 2.0
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
    if case == "vitl_step":
        # The sparsity chapter's Amdahl case: the MLP linears' share of SAM's ViT-L step, from
        # their measured dense times scaled to the step's tokens (batch 8 x 64 x 64 per image)
        # over 24 layers, at the layer model's speed-up.
        dense = sum(_row_value(f"sparse.vitl_{x}.a100_80.dense", rows) for x in ("fc1", "fc2"))
        step = _row_value("sparse.vitl_step.a100_80.dense", rows)
        share = dense * VIT_STEP_TOKENS / VIT_TOKENS * 24 / step
        layer = float(sparsity.training_gemm_speedup(gemm(4096, 1024, VIT_TOKENS), 2))
        return float(workloads.amdahl_speedup(layer, min(share, 1.0)))
    raise KeyError(case)


def _sparse(row: dict, model: str, rows: dict, cal) -> float | None:
    parts = row["id"].split(".")
    if parts[-1] != "sparse" or parts[1] not in ("linear_3072x10240x3072", "vitl_fc1",
                                                 "vitl_fc2", "vitl_step"):
        return None
    dense = rows.get(".".join(parts[:-1] + ["dense"]))
    return None if dense is None else dense["value"] / _sparse_speedup(parts[1], model, rows)


def _sparse_decode(row: dict, model: str, rows: dict, cal) -> float | None:
    if not row["id"].endswith("int4_sparse") or row["unit"] != "tokens/s":
        return None
    dense = rows["sparse.llama3_8b.a100_80.int4"]["value"]
    if model == "naive":
        return dense * 2.0
    ratio = (_row_value("sparse.llama3_8b.int4.size", rows)
             / _row_value("sparse.llama3_8b.int4_sparse.size", rows))
    return dense * ratio


# --- parallelism --------------------------------------------------------------------------------

def _collective(row: dict, model: str, rows: dict, cal) -> float | None:
    link = LINKS.get(row["hardware"])
    if link is None:
        return None
    bw = parallelism.link(link).bandwidth
    if model == "naive":
        return bw / GB
    return float(parallelism.modelled_bus_bandwidth(row["size_bytes"], int(row["gpus"]),
                                                    PROTOCOL_EFFICIENCY * bw, RING_STEP_SECONDS,
                                                    row["op"]) / GB)


# --- choosing a GPU -----------------------------------------------------------------------------

def _lambda(row: dict, model: str, rows: dict, cal) -> float:
    workload = "transformer-train" if ".bert_large." in row["id"] else "cnn-train"
    acc = _card(row["hardware"])
    batch = int(row["batch"])
    if model == "naive":
        table = throughput.kernels_for(workload, batch)
        return batch * acc.peak_flops("fp16") / float(table["flops"] @ table["launches"])
    return float(throughput.throughput(workload, [acc], batch, calibration=cal)[0])


def _decode(row: dict, model: str, rows: dict, cal) -> float:
    options = throughput._decode_options(row)
    acc = _card(row["hardware"])
    if model == "naive":
        nbytes = throughput.weight_bytes(options["weight_bits"], **{
            k: v for k, v in options.items() if k not in ("weight_bits", "context")},
            input_embedding=False)
        return float(acc.bandwidth / nbytes)
    return float(throughput.throughput("llm-decode", [acc], 1, calibration=cal, **options)[0])


def _detail_field(row: dict, key: str) -> str | None:
    for part in (row.get("detail") or "").split(";"):
        name, _, value = part.partition("=")
        if name.strip() == key:
            return value.strip()
    return None


def _llm_train(row: dict, model: str, rows: dict, cal) -> float | None:
    """Tokens/s per GPU of a Llama 3 8B pre-training run (torchtitan, FSDP, 16-bit)."""
    if row["id"].startswith("torchao.") and not row["id"].endswith(".bf16"):
        return None
    if row["hardware"] not in hardware.names():
        return None
    acc = _card(row["hardware"])
    watts = _detail_field(row, "power_limit_w")
    if watts is not None and acc.tdp_w:
        acc = throughput.power_limited(acc, float(watts))
    compiled = "compile" in row["what"]
    batch = int(row["batch"])
    table = throughput.llm_train_kernels(batch, gpus=int(row["gpus"]), fused=compiled)
    tokens = batch * throughput.LLAMA_TRAIN_SEQ
    if model == "naive":
        return tokens * acc.peak_flops("fp16") / float(table["flops"] @ table["launches"])
    engine = "compiled" if compiled else "eager"
    return tokens / float(throughput.step_seconds(table, [acc], engine, "16-bit", cal)[0])


# --- a reader's own measurements (measurements/run.py) ----------------------------------------

def _mine_card(row: dict) -> hardware.Accelerator | None:
    return hardware.get(row["hardware"]) if row["hardware"] in hardware.names() else None


def _mine_matmul(row: dict, model: str, rows: dict, cal) -> float | None:
    acc = _mine_card(row)
    if acc is None:
        return None
    _, _, dtype, shape = row["id"].split(".")
    m, n, k = (int(x) for x in shape.split("x"))
    return _gemm_tflops(m, k, n, acc, acc.peak_flops(dtype), dtype, model, cal)


def _mine_stream(row: dict, model: str, rows: dict, cal) -> float | None:
    acc = _mine_card(row)
    return None if acc is None else acc.memory_bandwidth_gbs


def _mine_sparse(row: dict, model: str, rows: dict, cal) -> float | None:
    acc = _mine_card(row)
    parts = row["id"].split(".")
    if acc is None or parts[-1] != "sparse" or not acc.sparse_2_4:
        return None
    pair = rows.get(".".join(parts[:-1] + ["dense"]))
    if pair is None:
        return None
    dense = pair["value"]
    if model == "naive":
        return dense / 2.0
    m, k, n = (int(x) for x in parts[2].split("x"))
    return dense / float(sparsity.sparse_gemm_speedup(m, k, n, acc.peak_flops("fp16"), acc.bandwidth,
                                                      "fp16", 1.0, SPARSE_OVERHEAD_SECONDS))


def _mine_allreduce(row: dict, model: str, rows: dict, cal) -> float | None:
    detail = row.get("detail") or ""
    if "link=" not in detail:
        return None
    name = detail.split("link=")[1].split(";")[0].strip()
    if name not in [l.name for l in parallelism.links()]:
        return None
    bw = parallelism.link(name).bandwidth
    if model == "naive":
        return bw / GB
    size = int(row["id"].split(".")[-1])
    return float(parallelism.modelled_bus_bandwidth(size, int(row["gpus"]), PROTOCOL_EFFICIENCY * bw,
                                                    RING_STEP_SECONDS) / GB)


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

UNSCORED_REASONS = {
    "l2.": "no chapter models L2 bandwidth; the memory chapter uses the measurement as an input",
    "torchao.llama3_8b.": "an 8-bit pre-training run (the step model has no FP8 training path: "
                          "scaling casts, mixed BF16 and FP8 GEMMs) or one on an H100 whose "
                          "form factor the source does not state",
    "torchao.": "the Tensor Core chapter derives MFU from these runs; no model predicts them",
    "power.": "a measurement the chapter shows, not a model's output",
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
            "detail": row["detail"], "size_bytes": row["size_bytes"], "op": row["op"]}


def dataset(measurements: str | None = None) -> list[dict]:
    """The measured rows: the book's (measurements plus collectives), or a reader's CSV file.

    A reader's file has the columns of ``data/measurements.csv`` (id, what, hardware, value,
    unit, batch, gpus, source, detail), as ``measurements/run.py`` writes it.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    if measurements is None:
        return measured.measurements() + [_collective_as_measurement(r) for r in measured.collectives()]
    path = _checks.text("measurements", measurements)
    try:
        with open(path, newline="") as handle:
            text = handle.read()
    except OSError as err:
        raise ValueError(f"measurements: cannot read {path!r} ({err.strerror})") from None
    return read_rows(text, path)


def read_rows(text: str, name: str = "measurements") -> list[dict]:
    """Rows of a measurements CSV in the book's schema, with numbers parsed; ValueError naming the file otherwise.

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    text = _checks.text("text", text)
    reader = csv.DictReader(io.StringIO(text))
    missing = set(measured._MEASUREMENT_COLUMNS) - set(reader.fieldnames or ())
    if missing:
        raise ValueError(f"text of {name}: missing columns {sorted(missing)}; expected "
                         f"{', '.join(measured._MEASUREMENT_COLUMNS)}")
    out = []
    for line, row in enumerate(reader, start=2):
        try:
            value = float(row["value"])
            batch = float(row["batch"]) if row["batch"] else None
            gpus = float(row["gpus"]) if row["gpus"] else None
        except ValueError:
            raise ValueError(f"text of {name}, line {line}: value, batch and gpus must be numbers") from None
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"text of {name}, line {line}: value must be a positive number "
                             f"(got {row['value']})")
        out.append(dict(row, value=value, batch=batch, gpus=gpus))
    return out


def _rule(row_id: str) -> Rule | None:
    for rule in RULES:
        if row_id.startswith(rule.prefix):
            return rule
    return None


def rows(model: str = "book", chapter: str | None = None, measurements: str | None = None,
         calibration=None) -> list[dict]:
    """Every scored row: id, chapter, hardware, workload, measured, predicted, unit, rel_error, source.

    ``rel_error`` = predicted / measured - 1 (positive: the model predicts more than was
    measured). ``model`` is "book" or "naive"; ``chapter`` filters; ``measurements`` scores a
    reader's CSV instead of the book's data (see :func:`dataset`).
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    model = _checks.choice("model", model, MODELS)
    if chapter is not None:
        chapter = _checks.choice("chapter", chapter, CHAPTERS)
    data = dataset(measurements)
    by_id = {r["id"]: r for r in data}
    cal = throughput._calibration(calibration)
    out = []
    for row in data:
        rule = _rule(row["id"])
        if rule is None or (chapter is not None and rule.chapter != chapter):
            continue
        predicted = rule.predict(row, model, by_id, cal)
        if predicted is None:
            continue
        predicted = float(predicted)
        out.append({"id": row["id"], "chapter": rule.chapter, "hardware": row["hardware"],
                    "workload": rule.workload, "measured": float(row["value"]),
                    "predicted": predicted, "unit": row["unit"],
                    "rel_error": predicted / float(row["value"]) - 1.0,
                    "source": f"{row['source'].strip('[]')}: {row.get('detail') or ''}".rstrip(": ")})
    return out


def unscored(measurements: str | None = None) -> list[dict]:
    """Rows that are not scored, with the reason: inputs to another row's prediction, or no model.

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    scored = {r["id"] for r in rows(measurements=measurements)}
    out = []
    for row in dataset(measurements):
        if row["id"] in scored:
            continue
        reason = next((why for prefix, why in UNSCORED_REASONS.items()
                       if row["id"].startswith(prefix)), None)
        if reason is None:
            reason = ("an input of another row, or hardware the table lacks" if _rule(row["id"])
                      else "no chapter predicts it")
        out.append({"id": row["id"], "reason": reason})
    return out


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
        _checks.scalar(f"scored[{i}]['rel_error'] (row {r['id']!r})", r["rel_error"])
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


def kendall_tau(x, y) -> float:
    """Kendall's rank correlation tau-b of two equal-length sequences (ties counted as neither).

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    x = np.asarray(_checks.as_array("x", x), float).ravel()
    y = np.asarray(_checks.as_array("y", y), float).ravel()
    if x.size != y.size or x.size < 2:
        raise ValueError(f"x and y must have the same length, at least 2 (got {x.size} and {y.size})")
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu_indices(x.size, 1)
    dx, dy = dx[upper], dy[upper]
    n0 = dx.size
    tied_x, tied_y = np.sum(dx == 0), np.sum(dy == 0)
    denom = np.sqrt((n0 - tied_x) * (n0 - tied_y))
    return float(np.sum(dx * dy) / denom) if denom > 0 else 0.0


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
                         f"{workload_prefix!r}")
    return float(np.percentile(errors, 10)), float(np.percentile(errors, 90))


_CV_CACHE: dict = {}


def _cross_validated(chapter: str) -> list[dict]:
    if chapter not in _CV_CACHE:
        _CV_CACHE[chapter] = cross_validate(chapter)
    return _CV_CACHE[chapter]
