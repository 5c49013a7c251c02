"""Published measurements: latency microbenchmarks and measured throughputs.

Loaded and validated from ``data/latencies.csv`` (SM clock cycles per architecture and memory
level) and ``data/measurements.csv`` (measured bandwidths, GEMM TFLOPS and training throughputs).
Every row names its source (keys in ``book/bib/hardware.bib``).
Explained in :doc:`/book/memory_hierarchy` (section "Measured reality").
"""
from __future__ import annotations

import csv
import functools
from importlib import resources

from . import _checks

QUANTITIES = ("global", "l2", "l1", "shared", "ffma", "mma_fp16", "mma_int8")
_LATENCY_COLUMNS = ("architecture", "gpu", "quantity", "cycles", "clock_mhz", "preferred", "method", "source")
_MEASUREMENT_COLUMNS = ("id", "what", "hardware", "value", "unit", "batch", "gpus", "source", "detail")


def _rows(text: str, filename: str, columns: tuple[str, ...]):
    reader = csv.DictReader(text.splitlines())
    missing = set(columns) - set(reader.fieldnames or ())
    if missing:
        raise ValueError(f"{filename} lacks columns: {', '.join(sorted(missing))}")
    for line, row in enumerate(reader, start=2):
        yield line, {k: (row.get(k) or "").strip() for k in columns}


def _number(raw: str, filename: str, line: int, column: str) -> float:
    where = f"{filename} line {line}, column {column}"
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{where}: not a number ({raw!r})") from None
    if not value > 0:
        raise ValueError(f"{where}: must be > 0 (got {raw})")
    return value


def _require(row: dict, filename: str, line: int, columns) -> None:
    for column in columns:
        if not row[column]:
            raise ValueError(f"{filename} line {line}, column {column}: required value is empty")


def _parse_latencies(text: str) -> tuple[dict, ...]:
    name = "latencies.csv"
    out, preferred = [], {}
    for line, row in _rows(text, name, _LATENCY_COLUMNS):
        _require(row, name, line, ("architecture", "gpu", "quantity", "cycles", "source"))
        if row["quantity"] not in QUANTITIES:
            raise ValueError(f"{name} line {line}, column quantity: unknown {row['quantity']!r} "
                             f"(known: {', '.join(QUANTITIES)})")
        if row["preferred"] not in ("yes", "no"):
            raise ValueError(f"{name} line {line}, column preferred: must be 'yes' or 'no' "
                             f"(got {row['preferred']!r})")
        row["cycles"] = _number(row["cycles"], name, line, "cycles")
        row["clock_mhz"] = _number(row["clock_mhz"], name, line, "clock_mhz") if row["clock_mhz"] else None
        row["preferred"] = row["preferred"] == "yes"
        key = (row["architecture"], row["quantity"])
        if row["preferred"]:
            if key in preferred:
                raise ValueError(f"{name} line {line}, column preferred: second preferred row for "
                                 f"{key} (first on line {preferred[key]})")
            preferred[key] = line
        out.append(row)
    lacking = sorted({(r["architecture"], r["quantity"]) for r in out} - set(preferred))
    if lacking:
        raise ValueError(f"{name} column preferred: no preferred row for {lacking}")
    return tuple(out)


def _parse_measurements(text: str) -> tuple[dict, ...]:
    name = "measurements.csv"
    out, seen = [], {}
    for line, row in _rows(text, name, _MEASUREMENT_COLUMNS):
        _require(row, name, line, ("id", "what", "hardware", "value", "unit", "source"))
        if row["id"] in seen:
            raise ValueError(f"{name} line {line}, column id: duplicate {row['id']!r} "
                             f"(first on line {seen[row['id']]})")
        seen[row["id"]] = line
        row["value"] = _number(row["value"], name, line, "value")
        for column in ("batch", "gpus"):
            row[column] = _number(row[column], name, line, column) if row[column] else None
        out.append(row)
    return tuple(out)


def _read(filename: str) -> str:
    return resources.files("gpumodel").joinpath(f"data/{filename}").read_text()


@functools.lru_cache(maxsize=None)
def _latency_rows() -> tuple[dict, ...]:
    return _parse_latencies(_read("latencies.csv"))


@functools.lru_cache(maxsize=None)
def _measurement_rows() -> tuple[dict, ...]:
    return _parse_measurements(_read("measurements.csv"))


def architectures() -> list[str]:
    """Architectures with latency rows, in table order (e.g. 'Volta', ..., 'Ampere (Dettmers 2023)').

    Explained in :doc:`/book/memory_hierarchy` (section "Measured reality").
    """
    return list(dict.fromkeys(r["architecture"] for r in _latency_rows()))


def latencies(architecture: str | None = None) -> list[dict]:
    """Latency rows (cycles in SM clock cycles as float, preferred as bool), optionally for one architecture.

    Explained in :doc:`/book/memory_hierarchy` (section "Measured reality").
    """
    rows = _latency_rows()
    if architecture is not None:
        architecture = _checks.choice("architecture", architecture, architectures())
        rows = [r for r in rows if r["architecture"] == architecture]
    return [dict(r) for r in rows]


def latency(architecture: str, quantity: str) -> float:
    """Preferred measured latency in SM clock cycles of ``quantity`` (e.g. 'l2') on ``architecture``.

    Unknown architectures or quantities raise ValueError listing the known ones.
    Explained in :doc:`/book/memory_hierarchy` (section "Measured reality").
    """
    architecture = _checks.choice("architecture", architecture, architectures())  # None is not an architecture
    rows = [r for r in latencies(architecture) if r["preferred"]]
    table = {r["quantity"]: r["cycles"] for r in rows}
    return table[_checks.choice("quantity", quantity, table)]


def latency_seconds(architecture: str, quantity: str) -> float:
    """Preferred measured latency of ``quantity`` on ``architecture`` in seconds: cycles / SM clock.

    The clock is the one the measurement ran at (``clock_mhz`` in latencies.csv, with its
    source); rows without a known clock raise ValueError.
    Explained in :doc:`/book/memory_hierarchy` (section "Latency of each level").
    """
    row = _preferred_row(architecture, quantity)
    if row["clock_mhz"] is None:
        raise ValueError(f"architecture {row['architecture']!r}: the {row['quantity']} latency has no "
                         "recorded clock, so it cannot be converted to seconds")
    return row["cycles"] / (row["clock_mhz"] * 1e6)


def _preferred_row(architecture: str, quantity: str) -> dict:
    architecture = _checks.choice("architecture", architecture, architectures())
    rows = {r["quantity"]: r for r in latencies(architecture) if r["preferred"]}
    return rows[_checks.choice("quantity", quantity, rows)]


def measurements(prefix: str = "") -> list[dict]:
    """Measurement rows whose id starts with ``prefix`` (value as float, in the row's ``unit``).

    Explained in :doc:`/book/memory_hierarchy` (section "Measured reality").
    """
    prefix = _checks.text("prefix", prefix)
    return [dict(r) for r in _measurement_rows() if r["id"].startswith(prefix)]


def measurement(id: str) -> float:
    """The measured value of row ``id`` in its unit (e.g. GB/s, TFLOPS, tokens/s); unknown ids raise ValueError.

    Explained in :doc:`/book/memory_hierarchy` (section "Measured reality").
    """
    table = {r["id"]: r["value"] for r in _measurement_rows()}
    return table[_checks.choice("measurement id", id, table)]


#: The post's corrections: throughput gain per batch doubling, and the 8-GPU networking advantage
#: of DGX A100 over DGX-1 for CNNs and for transformers (Dettmers 2023, "Practical Ada / Hopper
#: Speed Estimates").
POST_BATCH_GAIN = 1.136
POST_NETWORK_FACTOR = {"cnn": 1.05, "transformer": 1.07}
DLE_NETWORKS = {"maskrcnn": ("Mask R-CNN", "cnn"), "transformer": ("Transformer (WMT14)", "transformer"),
                "seresnext101_pyt": ("SE-ResNeXt101 (PyTorch)", "cnn"),
                "seresnext101_tf": ("SE-ResNeXt101 (TensorFlow)", "cnn")}


def a100_v100_speedups(network: str | None = None) -> list[dict]:
    """A100-over-V100 speed-ups from NVIDIA's DeepLearningExamples, raw and with the post's corrections.

    One row per network, GPU count (1 or 8) and V100 variant present in measurements.csv:
    raw throughput ratio, batch sizes, and :func:`gpumodel.memory.batch_corrected_speedup`
    (13.6% per batch doubling; networking factor for 8 GPUs).
    Explained in :doc:`/book/memory_hierarchy` (section "Bandwidth predicts speed").
    """
    from .memory import batch_corrected_speedup

    names = list(DLE_NETWORKS) if network is None else [_checks.choice("network", network, DLE_NETWORKS)]
    rows = {r["id"]: r for r in _measurement_rows() if r["id"].startswith("dle.")}
    out = []
    for name in names:
        label, family = DLE_NETWORKS[name]
        for gpus in ("1gpu", "8gpu"):
            new = rows.get(f"dle.{name}.a100.{gpus}")
            for variant in ("v100_16", "v100_32"):
                old = rows.get(f"dle.{name}.{variant}.{gpus}")
                if new is None or old is None:
                    continue
                factor = POST_NETWORK_FACTOR[family] if gpus == "8gpu" else 1.0
                out.append({"network": label, "key": name, "gpus": int(gpus[0]), "v100": old["hardware"],
                            "batch_a100": new["batch"], "batch_v100": old["batch"],
                            "raw": new["value"] / old["value"],
                            "corrected": float(batch_corrected_speedup(new["value"], old["value"], new["batch"],
                                                                       old["batch"], POST_BATCH_GAIN, factor))})
    return out


_COLLECTIVE_COLUMNS = ("id", "hardware", "gpus", "op", "algorithm", "size_bytes", "busbw_gbs", "source", "detail")


@functools.lru_cache(maxsize=1)
def _collective_rows() -> tuple[dict, ...]:
    filename = "collectives.csv"
    out = []
    for line, row in _rows(_read(filename), filename, _COLLECTIVE_COLUMNS):
        _require(row, filename, line, ("id", "hardware", "op", "source"))
        for column in ("gpus", "size_bytes", "busbw_gbs"):
            row[column] = _number(row[column], filename, line, column)
        out.append(row)
    return tuple(out)


def collectives(prefix: str = "") -> list[dict]:
    """Measured collective rows (``data/collectives.csv``) whose id starts with ``prefix``.

    Each has the GPUs, the operation, its size in bytes and the bus bandwidth in GB/s as
    NCCL's tests define it. Explained in :doc:`/book/parallelism` (section "Measured reality").
    """
    prefix = _checks.text("prefix", prefix)
    return [dict(r) for r in _collective_rows() if r["id"].startswith(prefix)]
