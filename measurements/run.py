"""Measure your own GPU and score the book's models on it.

    .venv/bin/pip install torch                                      # into the book's environment
    .venv/bin/python measurements/run.py --out my_gpu.csv            # a few minutes, one GPU
    .venv/bin/python -m gpumodel validate --measurements my_gpu.csv  # the book's models against it

Runs matmuls of several shapes in BF16 and FP16 (FP8 where the GPU has FP8 Tensor Cores and
PyTorch exposes them), a copy kernel for memory bandwidth, a 2:4-sparse against a dense matmul
where the GPU supports 2:4, and, when started with ``torchrun --nproc-per-node N``, an
all-reduce sweep. Every result is timed with CUDA events after a warm-up and written as one row
in the schema of ``gpumodel/data/measurements.csv``, with the device, driver, library versions,
clocks, power limit and date in ``detail``, and ``hardware`` the book's name for the card
(:data:`DEVICE_NAMES`); a card the book lacks stops it before anything is measured, unless
``--hardware`` names it. Needs PyTorch with CUDA (or ROCm); nothing else in the book does.
See measurements/README.md.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import subprocess
import sys

COLUMNS = ("id", "what", "hardware", "value", "unit", "batch", "gpus", "source", "detail")
#: Matmul shapes (M, N, K): square, a skinny decoding-like one and a transformer MLP.
MATMUL_SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096), (16384, 4096, 4096), (4096, 16, 4096),
                 (4096, 128, 4096), (13008, 4096, 1024))
SPARSE_SHAPE = (3072, 10240, 3072)
COPY_BYTES = 2 * 1024**3
ALLREDUCE_SIZES = tuple(2**k for k in range(15, 31, 3))


class SetupError(Exception):
    """A missing prerequisite: the message is printed as one line and the script exits 2."""


def tflops(m: int, n: int, k: int, seconds: float) -> float:
    """Throughput of an (m x k) @ (k x n) matmul that took ``seconds``, in TFLOPS."""
    if seconds <= 0:
        raise ValueError("seconds must be > 0")
    return 2.0 * m * n * k / seconds / 1e12


def gbs(nbytes: float, seconds: float) -> float:
    """Bandwidth of moving ``nbytes`` in ``seconds``, in GB/s (decimal)."""
    if seconds <= 0:
        raise ValueError("seconds must be > 0")
    return nbytes / seconds / 1e9


def busbw_gbs(nbytes: float, seconds: float, ranks: int) -> float:
    """NCCL's bus bandwidth of an all-reduce, in GB/s: size / time x 2 (n - 1) / n."""
    return gbs(nbytes, seconds) * 2.0 * (ranks - 1) / ranks


def row(id: str, what: str, hardware: str, value: float, unit: str, detail: str,
        batch: str = "", gpus: int = 1) -> dict:
    """One measured row in the book's schema; ``source`` is "mine" (the reader's own run)."""
    if not value > 0:
        raise ValueError(f"{id}: value must be > 0 (got {value})")
    return {"id": id, "what": what, "hardware": hardware, "value": f"{value:.6g}", "unit": unit,
            "batch": batch, "gpus": str(gpus), "source": "mine", "detail": detail}


def write_rows(rows: list[dict], path: str) -> None:
    """Write rows as a CSV with the header of ``gpumodel/data/measurements.csv``."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


#: Device names as ``torch.cuda.get_device_name()`` prints them, upper case and without the
#: vendor and brand words (:func:`_device_key`), -> the name in the book's hardware table
#: (``gpumodel/data/accelerators.csv``) or its aliases (``gpumodel/data/hardware_aliases.csv``).
DEVICE_NAMES = {
    "H100 80GB HBM3": "H100 SXM5", "H100 PCIE": "H100 PCIe", "H200": "H200 SXM", "B200": "B200",
    "H800": "H800", "GH200 480GB": "GH200", "GH200 144G HBM3E": "GH200",
    "A100-SXM4-80GB": "A100 SXM4 80GB", "A100-SXM4-40GB": "A100 SXM4 40GB",
    "A100-PCIE-40GB": "A100 PCIe", "A100 80GB PCIE": "A100 80GB PCIe",
    "V100-SXM2-16GB": "V100 SXM2 16GB", "V100-SXM2-32GB": "V100 SXM2 32GB",
    "V100-PCIE-16GB": "V100 PCIe 16GB", "V100-SXM3-32GB": "V100 SXM3 32GB", "T4": "T4",
    "L40S": "L40S", "L40": "L40", "A40": "A40", "RTX A6000": "RTX A6000",
    "RTX 6000 ADA GENERATION": "RTX 6000 Ada", "RTX 2080 TI": "RTX 2080 Ti", "TITAN RTX": "RTX Titan",
    "RTX 3080": "RTX 3080", "RTX 3090": "RTX 3090", "RTX 4070 TI": "RTX 4070 Ti",
    "RTX 4090": "RTX 4090", "RTX 5090": "RTX 5090", "INSTINCT MI300X": "MI300X",
}


def _device_key(device: str) -> str:
    """'NVIDIA GeForce RTX 4090' -> 'RTX 4090': upper case, vendor and brand words dropped."""
    words = [w for w in device.upper().split() if w not in ("NVIDIA", "GEFORCE", "TESLA", "AMD")]
    return " ".join(words)


def table_name(device: str, names: list[str]) -> str | None:
    """The row of ``names`` (the hardware table's names and aliases) that a device name such as
    'NVIDIA H100 80GB HBM3' is: :data:`DEVICE_NAMES`, or a name spelled as the device is. None
    for any other device, never a near match (an 'RTX 3090 Ti' is not the 'RTX 3090')."""
    key = _device_key(device)
    if DEVICE_NAMES.get(key) in names:
        return DEVICE_NAMES[key]
    return next((name for name in names if _device_key(name) == key), None)


def hardware_for(device: str, names: list[str]) -> str:
    """The hardware-table name to record for ``device``, or a :class:`SetupError` saying how to
    add the card or name its row with ``--hardware``."""
    name = table_name(device, names)
    if name is None:
        raise SetupError(f"{device!r} is not in the book's hardware table: pass --hardware with "
                         "the table's name for it, or add the card as measurements/README.md says "
                         "(section 'A card the book lacks')")
    return name


def progress(done: int, total: int, label: str) -> None:
    """A one-line progress bar on stderr."""
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:40.40s}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _torch():
    try:
        import torch
    except ImportError:
        raise SetupError("PyTorch is not installed: install a CUDA or ROCm build of torch to "
                         "measure a GPU (nothing else in the book needs it)") from None
    if not torch.cuda.is_available():
        raise SetupError("PyTorch sees no GPU (torch.cuda.is_available() is False): run this on "
                         "a machine with an NVIDIA or AMD GPU and a CUDA or ROCm build of torch")
    return torch


def _smi(query: str, index: int = 0) -> str:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader",
                              "-i", str(index)], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _detail(torch) -> str:
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    parts = [f"device={props.name}", f"torch={torch.__version__}",
             f"cuda={torch.version.cuda or torch.version.hip}",
             f"driver={_smi('driver_version', index)}",
             f"sm_clock_max={_smi('clocks.max.sm', index)}",
             f"power_limit={_smi('power.limit', index)}",
             f"date={datetime.date.today().isoformat()}"]
    return "; ".join(parts)


def _time(torch, fn, repeats: int = 20, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / repeats


def _dtypes(torch) -> list[str]:
    names = ["bf16", "fp16"]
    major, minor = torch.cuda.get_device_capability()
    fp8 = (major, minor) >= (8, 9) and not torch.version.hip
    if fp8 and hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm"):
        names.append("fp8")
    return names


#: Operands are rotated through this many bytes, more than any GPU's L2, so that every timed
#: matmul reads its operands from DRAM as the model assumes.
ROTATE_BYTES = 512 * 1024**2


def _matmul(torch, dtype: str, m: int, n: int, k: int) -> float | None:
    size = (m * k + k * n) * (1 if dtype == "fp8" else 2)
    copies = max(1, -(-ROTATE_BYTES // size))
    if dtype == "fp8":
        a = [torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn) for _ in range(copies)]
        b = [torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t() for _ in range(copies)]
        one = torch.tensor(1.0, device="cuda")

        def step(i=[0]):
            i[0] = (i[0] + 1) % copies
            return torch._scaled_mm(a[i[0]], b[i[0]], scale_a=one, scale_b=one,
                                    out_dtype=torch.bfloat16)
    else:
        kind = torch.bfloat16 if dtype == "bf16" else torch.float16
        a = [torch.randn(m, k, device="cuda", dtype=kind) for _ in range(copies)]
        b = [torch.randn(k, n, device="cuda", dtype=kind) for _ in range(copies)]

        def step(i=[0]):
            i[0] = (i[0] + 1) % copies
            return a[i[0]] @ b[i[0]]
    try:
        return _time(torch, step)
    except RuntimeError:
        return None


def _copy(torch) -> float:
    """Copy 2 GiB, more than any L2, so that the copy streams from and to DRAM."""
    x = torch.empty(COPY_BYTES // 2, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    return _time(torch, lambda: y.copy_(x), repeats=10)


def _sparse(torch, m: int, k: int, n: int):
    try:
        from torch.sparse import to_sparse_semi_structured
    except ImportError:
        return None
    major, _ = torch.cuda.get_device_capability(0)
    if major < 8 or torch.version.hip:
        return None
    w = torch.randn(m, k, device="cuda", dtype=torch.float16)
    mask = torch.tensor([1, 1, 0, 0], device="cuda", dtype=torch.bool).tile(m, k // 4)
    w = w * mask
    x = torch.randn(k, n, device="cuda", dtype=torch.float16)
    dense = _time(torch, lambda: w @ x)
    try:
        ws = to_sparse_semi_structured(w)
        sparse = _time(torch, lambda: ws @ x)
    except (RuntimeError, NotImplementedError):
        return None
    return dense, sparse


def _allreduce(torch, detail: str, hardware: str) -> list[dict]:
    import torch.distributed as dist

    ranks, rank = dist.get_world_size(), dist.get_rank()
    out = []
    for size in ALLREDUCE_SIZES:
        x = torch.zeros(size // 2, device="cuda", dtype=torch.float16)
        dist.barrier()
        seconds = _time(torch, lambda: dist.all_reduce(x), repeats=10)
        if rank == 0:
            out.append(row(f"mine.allreduce.{size}", f"all_reduce bus bandwidth, {size} bytes",
                           hardware, busbw_gbs(size, seconds, ranks), "GB/s", detail, gpus=ranks))
    return out


def measure(hardware: str | None = None, link: str | None = None) -> list[dict]:
    """Run every measurement on GPU 0 (and the all-reduce under torchrun); rows in the book's schema."""
    torch = _torch()
    device = torch.cuda.get_device_name()
    if hardware is None:
        try:
            from gpumodel import hardware as table
        except ImportError:
            raise SetupError("gpumodel is not importable, so the device cannot be named as the book's "
                             "hardware table names it: run this with the book's environment "
                             "(.venv/bin/python measurements/run.py), or pass --hardware") from None
        hardware = hardware_for(device, table.names() + sorted(table.aliases()))
    ranks = int(os.environ.get("WORLD_SIZE", "1"))
    if ranks > 1:
        import torch.distributed as dist

        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl")
    rank = int(os.environ.get("RANK", "0"))
    detail = _detail(torch) + (f"; link={link}" if link else "")
    jobs = [("matmul", d, shape) for d in _dtypes(torch) for shape in MATMUL_SHAPES]
    jobs += [("copy", None, None), ("sparse", None, SPARSE_SHAPE)]
    rows = []
    if rank != 0:
        jobs = []
    for i, (kind, dtype, shape) in enumerate(jobs):
        progress(i, len(jobs), f"{kind} {dtype or ''} {shape or ''}")
        if kind == "matmul":
            m, n, k = shape
            seconds = _matmul(torch, dtype, m, n, k)
            if seconds is None:
                continue
            rows.append(row(f"mine.matmul.{dtype}.{m}x{n}x{k}",
                            f"torch matmul {m} x {n} x {k}, {dtype}", hardware,
                            tflops(m, n, k, seconds), "TFLOPS", detail))
        elif kind == "copy":
            seconds = _copy(torch)
            rows.append(row("mine.stream.copy", "copy kernel (read + write), 2 GiB", hardware,
                            gbs(2 * COPY_BYTES, seconds), "GB/s", detail))
        else:
            m, k, n = shape
            pair = _sparse(torch, m, k, n)
            if pair is not None:
                for name, seconds in zip(("dense", "sparse"), pair):
                    rows.append(row(f"mine.sparse.{m}x{k}x{n}.{name}",
                                    f"FP16 {m} x {k} weight @ {k} x {n}, {name}", hardware,
                                    seconds * 1e3, "ms", detail))
    if rank == 0:
        progress(len(jobs), len(jobs), "done")
    if ranks > 1:
        import torch.distributed as dist

        dist.barrier()
        rows += _allreduce(torch, detail, hardware)
        dist.destroy_process_group()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV file to write")
    parser.add_argument("--hardware", help="the hardware-table name of this GPU, e.g. 'H100 SXM5' "
                        "(found from the device name if left out; a card the table lacks stops "
                        "the script)")
    parser.add_argument("--link", help="for the all-reduce: the link name in the book's table, "
                        "e.g. 'NVLink 4 (H100)'")
    args = parser.parse_args(argv)
    try:
        rows = measure(args.hardware, args.link)
    except SetupError as err:
        print(f"measurements/run.py: {err}", file=sys.stderr)
        return 2
    if int(os.environ.get("RANK", "0")) == 0:
        write_rows(rows, args.out)
        print(f"wrote {len(rows)} rows to {args.out}; score them with "
              f"python -m gpumodel validate --measurements {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
