"""Accelerator specifications, loaded and validated from ``data/accelerators.csv``.

Every row names its source. Values are stored as the datasheets publish them and
converted to base units by the properties of :class:`Accelerator`, with one convention
for each kind of quantity, stated here once:

* **capacities are binary.** DRAM dies come in binary sizes, so a part sold as "80 GB"
  holds 80 GiB (``memory_gib``); caches and shared memory likewise (MiB, KiB).
  ``usable_memory_gib`` is what a program can allocate, as device queries report it
  (less than the physical capacity: ECC, firmware and driver reservations).
* **rates are decimal.** Bandwidth in GB/s (1e9 bytes/s) and throughput in TFLOPS (1e12).

``memory_basis`` says what ``memory_gib`` is: ``physical`` (the DRAM the GPU addresses, in
GiB) or ``vendor`` (the vendor's stated figure, copied as published: the H200's 141, below
the HBM3e it carries, and Google's TPU figures, whose physical capacity is not published).

Tensor throughputs are **dense**; the 2:4-sparse peak is derived (x2) only for parts that
support it. ``peak_clock_mhz`` is the SM clock at which the vendor quotes those peaks (on
Hopper below the maximum clock); ``max_clock_mhz`` is the maximum SM clock (device queries'
"GPU Max Clock rate"). ``l1_shared_per_sm_kib`` is the combined L1 data cache and shared
memory of one SM (on AMD the vector L1 plus the LDS, two separate arrays);
``max_shared_per_sm_kib`` is the most of it a kernel can use as shared memory (LDS on AMD).
``tdp_w`` is the rated board power (TDP); ``measured_max_power_w`` is a
measured maximum, kept apart because the two are not comparable.

Boards that measured rows name but the table does not hold (an "A100 PCIe", a "GH200") are
listed once in ``data/hardware_aliases.csv`` with their die, the row (if any) whose peak or
bandwidth stands in for theirs, and the reason: :func:`aliases`.
Explained in :doc:`/book/memory_hierarchy` (section "Today's model: a roofline for each level").
"""
from __future__ import annotations

import csv
import functools
from dataclasses import dataclass, fields
from importlib import resources

from . import _checks
from .units import GB, GiB, KiB, MiB, TFLOPS

TENSOR_COLUMNS = {"fp16": "fp16_tflops", "bf16": "bf16_tflops", "tf32": "tf32_tflops",
                  "fp8": "fp8_tflops", "int8": "int8_tops", "fp4": "fp4_tflops"}
_REQUIRED = ("name", "vendor", "kind", "architecture", "year", "memory_gib", "memory_basis",
             "memory_bandwidth_gbs", "source")
_FLAGS = ("sparse_2_4", "geforce_half_rate")
MEMORY_BASES = ("physical", "vendor")


@dataclass(frozen=True)
class Accelerator:
    """One row of the hardware table (published units; see the properties for base units)."""
    name: str
    vendor: str
    kind: str
    architecture: str
    year: int
    memory_gib: float
    memory_basis: str
    usable_memory_gib: float | None
    memory_bandwidth_gbs: float
    sm_count: int | None
    warps_per_sm: int | None
    tensor_cores_per_sm: int | None
    peak_clock_mhz: float | None
    max_clock_mhz: float | None
    l1_shared_per_sm_kib: float | None
    max_shared_per_sm_kib: float | None
    l2_cache_mib: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    tf32_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    fp4_tflops: float | None
    fp32_tflops: float | None
    sparse_2_4: bool
    geforce_half_rate: bool
    tdp_w: float | None
    measured_max_power_w: float | None
    launch_price_usd: float | None
    source: str

    @property
    def memory_bytes(self) -> float:
        """Memory capacity in bytes (a part sold as "80 GB" holds 80 GiB): the physical DRAM, or the
        vendor's figure where ``memory_basis`` is "vendor"."""
        return self.memory_gib * GiB

    @property
    def usable_memory_bytes(self) -> float | None:
        """Memory a program can allocate, in bytes, as device queries report it (None if unpublished).

        Use this, not :attr:`memory_bytes`, to decide whether something fits.
        Explained in :doc:`/book/memory_hierarchy` (section "Units: GB or GiB?").
        """
        return None if self.usable_memory_gib is None else self.usable_memory_gib * GiB

    @property
    def bandwidth(self) -> float:
        """Peak memory bandwidth in bytes/s (datasheet GB/s taken as 1e9 bytes/s)."""
        return self.memory_bandwidth_gbs * GB

    @property
    def l2_bytes(self) -> float | None:
        """L2 cache in bytes (datasheet MB of cache are binary: 2**20 bytes)."""
        return None if self.l2_cache_mib is None else self.l2_cache_mib * MiB

    @property
    def l1_shared_bytes_per_sm(self) -> float | None:
        """Combined L1 data cache and shared memory per SM in bytes (None if not applicable)."""
        return None if self.l1_shared_per_sm_kib is None else self.l1_shared_per_sm_kib * KiB

    @property
    def max_shared_bytes_per_sm(self) -> float | None:
        """The most shared memory (LDS on AMD) one SM can give its blocks, in bytes."""
        return None if self.max_shared_per_sm_kib is None else self.max_shared_per_sm_kib * KiB

    def peak_flops(self, dtype: str = "fp16", sparse: bool = False, accumulate: str = "fp32") -> float:
        """Dense tensor peak in FLOP/s (OP/s for int8) for ``dtype``; x2 if ``sparse`` and 2:4 is supported.

        The table holds the FP32-accumulate rate. ``accumulate="fp16"`` (fp16 and fp8 inputs only)
        gives the FP16-accumulate rate: twice the table's on GeForce cards, which halve FP32
        accumulation, and the same elsewhere.
        Raises ValueError when the accelerator has no tensor throughput for ``dtype``.
        """
        dtype = _checks.choice("dtype", dtype, TENSOR_COLUMNS)
        sparse = _checks.flag("sparse", sparse)
        accumulate = _checks.choice("accumulate", accumulate, ("fp32", "fp16"))
        if accumulate == "fp16" and dtype not in ("fp16", "fp8"):
            raise ValueError(f"accumulate='fp16' applies to fp16 and fp8 inputs, not {dtype}")
        value = getattr(self, TENSOR_COLUMNS[dtype])
        if value is None:
            have = [d for d, c in TENSOR_COLUMNS.items() if getattr(self, c) is not None]
            raise ValueError(f"{self.name} has no {dtype} tensor throughput in the table "
                             f"(it has: {', '.join(have) or 'none'})")
        if sparse and not self.sparse_2_4:
            raise ValueError(f"{self.name} does not support 2:4 sparsity")
        half_rate = accumulate == "fp16" and self.geforce_half_rate
        return value * TFLOPS * (2.0 if sparse else 1.0) * (2.0 if half_rate else 1.0)

    def ridge_point(self, dtype: str = "fp16") -> float:
        """Arithmetic intensity (FLOP/byte) where compute and memory time are equal."""
        return self.peak_flops(dtype) / self.bandwidth


def _positive_number(where: str, raw: str) -> float:
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{where}: not a number ({raw!r})") from None
    if number <= 0:
        raise ValueError(f"{where}: must be > 0 (got {raw})")
    return number


def _parse(row: dict, line: int) -> Accelerator:
    kwargs = {}
    for f in fields(Accelerator):
        raw = (row.get(f.name) or "").strip()
        where = f"accelerators.csv line {line}, column {f.name}"
        if f.name in _REQUIRED and not raw:
            raise ValueError(f"{where}: required value is empty")
        if f.name in _FLAGS:
            if raw not in ("yes", "no"):
                raise ValueError(f"{where}: must be 'yes' or 'no' (got {raw!r})")
            kwargs[f.name] = raw == "yes"
        elif f.type in ("str",):
            kwargs[f.name] = raw
        elif not raw:
            kwargs[f.name] = None
        else:
            number = _positive_number(where, raw)
            kwargs[f.name] = int(number) if f.type.startswith("int") else number
    if kwargs["memory_basis"] not in MEMORY_BASES:
        raise ValueError(f"accelerators.csv line {line}, column memory_basis: must be one of "
                         f"{', '.join(MEMORY_BASES)} (got {kwargs['memory_basis']!r})")
    for small, large in (("max_shared_per_sm_kib", "l1_shared_per_sm_kib"),
                         ("peak_clock_mhz", "max_clock_mhz")):
        if None not in (kwargs[small], kwargs[large]) and kwargs[small] > kwargs[large]:
            raise ValueError(f"accelerators.csv line {line}, column {small}: {kwargs[small]:g} "
                             f"exceeds {large} {kwargs[large]:g}")
    usable = kwargs["usable_memory_gib"]
    if usable is not None and usable > kwargs["memory_gib"]:
        raise ValueError(f"accelerators.csv line {line}, column usable_memory_gib: "
                         f"{usable:g} exceeds memory_gib {kwargs['memory_gib']:g}")
    if kwargs["kind"] not in ("gpu", "tpu"):
        raise ValueError(f"accelerators.csv line {line}: kind must be 'gpu' or 'tpu'")
    return Accelerator(**kwargs)


@functools.lru_cache(maxsize=None)
def _load() -> dict[str, Accelerator]:
    text = resources.files("gpumodel").joinpath("data/accelerators.csv").read_text()
    rows = csv.DictReader(text.splitlines())
    missing = set(f.name for f in fields(Accelerator)) - set(rows.fieldnames or ())
    if missing:
        raise ValueError(f"accelerators.csv lacks columns: {', '.join(sorted(missing))}")
    table: dict[str, Accelerator] = {}
    for line, row in enumerate(rows, start=2):
        acc = _parse(row, line)
        if acc.name in table:
            raise ValueError(f"accelerators.csv line {line}: duplicate name {acc.name!r}")
        table[acc.name] = acc
    return table


def names() -> list[str]:
    """Names of every accelerator in the table, in table order."""
    return list(_load())


def accelerators() -> list[Accelerator]:
    """Every accelerator in the table, in table order."""
    return list(_load().values())


def get(name: str) -> Accelerator:
    """The accelerator called ``name`` (case-insensitive); unknown names raise ValueError with suggestions."""
    table = _load()
    return table[_checks.choice("accelerator name", name, table)]


@dataclass(frozen=True)
class CPU:
    """One row of the CPU table (``data/cpus.csv``), for comparing a CPU with a GPU.

    Explained in :doc:`/book/how_a_gpu_runs` (section "CPU versus GPU").
    """
    name: str
    vendor: str
    architecture: str
    year: int
    cores: int
    threads: int
    base_clock_ghz: float
    all_core_boost_ghz: float
    fp32_flop_per_cycle_per_core: float
    memory_channels: int
    memory_mts: float
    channel_bytes: float
    l3_cache_mib: float
    tdp_w: float
    source: str

    @property
    def peak_flops(self) -> float:
        """FP32 vector peak in FLOP/s: cores x FLOP per cycle x all-core boost clock.

        The boost clock, like the GPUs' peaks, which are quoted at their boost clocks.
        """
        return self.cores * self.fp32_flop_per_cycle_per_core * self.all_core_boost_ghz * 1e9

    @property
    def bandwidth(self) -> float:
        """Peak DRAM bandwidth in bytes/s: channels x transfers per second x bytes per transfer."""
        return self.memory_channels * self.memory_mts * 1e6 * self.channel_bytes


def _parse_cpu(row: dict, line: int) -> CPU:
    kwargs = {}
    for f in fields(CPU):
        raw = (row.get(f.name) or "").strip()
        where = f"cpus.csv line {line}, column {f.name}"
        if not raw:
            raise ValueError(f"{where}: required value is empty")
        if f.type == "str":
            kwargs[f.name] = raw
            continue
        number = _positive_number(where, raw)
        kwargs[f.name] = int(number) if f.type == "int" else number
    return CPU(**kwargs)


@functools.lru_cache(maxsize=None)
def _load_cpus() -> dict[str, CPU]:
    text = resources.files("gpumodel").joinpath("data/cpus.csv").read_text()
    table = {}
    for line, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        cpu = _parse_cpu(row, line)
        table[cpu.name] = cpu
    return table


def cpus() -> list[CPU]:
    """Every CPU in the CPU table, in table order.

    Explained in :doc:`/book/how_a_gpu_runs` (section "CPU versus GPU").
    """
    return list(_load_cpus().values())


def get_cpu(name: str) -> CPU:
    """The CPU called ``name`` (case-insensitive); unknown names raise ValueError with suggestions.

    Explained in :doc:`/book/how_a_gpu_runs` (section "CPU versus GPU").
    """
    table = _load_cpus()
    return table[_checks.choice("cpu name", name, table)]


def records() -> list[dict]:
    """The table as a list of dicts (published units), e.g. for ``pandas.DataFrame``."""
    return [{f.name: getattr(a, f.name) for f in fields(Accelerator)} for a in accelerators()]


@dataclass(frozen=True)
class Alias:
    """A board that measured rows name but the hardware table does not hold (``data/hardware_aliases.csv``).

    ``die`` is the chip it is built on; ``peak_as`` and ``memory_as`` name the table row whose
    dense Tensor Core peak, or whose DRAM bandwidth, is also this board's (None where none is);
    ``reason`` says why, and ``source`` cites it.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    name: str
    die: str
    peak_as: str | None
    memory_as: str | None
    reason: str
    source: str


@functools.lru_cache(maxsize=None)
def _load_aliases() -> dict[str, Alias]:
    text = resources.files("gpumodel").joinpath("data/hardware_aliases.csv").read_text()
    table: dict[str, Alias] = {}
    known = set(names())
    for line, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        values = {f.name: (row.get(f.name) or "").strip() for f in fields(Alias)}
        where = f"hardware_aliases.csv line {line}"
        for column in ("name", "die", "reason", "source"):
            if not values[column]:
                raise ValueError(f"{where}, column {column}: required value is empty")
        if values["name"] in known or values["name"] in table:
            raise ValueError(f"{where}: {values['name']!r} is already a hardware row or alias")
        for column in ("peak_as", "memory_as"):
            if values[column] and values[column] not in known:
                raise ValueError(f"{where}, column {column}: {values[column]!r} is not a hardware row")
            values[column] = values[column] or None
        table[values["name"]] = Alias(**values)
    return table


def aliases() -> dict[str, Alias]:
    """Every alias of ``data/hardware_aliases.csv``, by the name measured rows use.

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    return dict(_load_aliases())


def joins(name: str) -> bool:
    """Whether ``name`` is a row of the hardware table or one of its :func:`aliases`.

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    name = _checks.text("name", name)
    return name in _load() or name in _load_aliases()
