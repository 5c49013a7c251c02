"""The step model's few global constants, each fitted by a function from named measured rows.

A measured row says how fast one program ran on one chip. The step model of
:mod:`gpumodel.throughput` needs a handful of numbers that no datasheet gives (the share of
the Tensor Core peak a large GEMM reaches, the share of the DRAM bandwidth a streaming
kernel reaches, how many bytes a decoding kernel keeps in flight, what each kernel of
llama.cpp's CUDA graph costs). Each is fitted here, from the rows :data:`FITTED_FROM` names,
by a function that a reader can rerun, and never typed in. Rows are grouped by **die**, not
by board name: the six A100 boards are one chip, and the H100 SXM5, H100 PCIe, H200 and GH200 share one die.
:func:`fit` with ``leave_out`` withholds every row of those dies, and their own measured
inputs (matmul share, streaming share, DRAM latency), so that ``validate --cv`` can score
each chip with constants it did not help to fit.
Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

from . import _checks, hardware, measured

#: Boards named in the measured data that the hardware table does not list, and their die:
#: the ``die`` column of ``data/hardware_aliases.csv`` (one table, each alias with its reason).
DIE_ALIASES = {a.name: a.die for a in hardware.aliases().values()}
#: Boards in the measured data whose dense 16-bit peak is that of a row of the table
#: (the alias table's ``peak_as`` column).
PEAK_ALIASES = {a.name: a.peak_as for a in hardware.aliases().values() if a.peak_as}
#: Boards whose memory system (generation, bus width, clock) is that of a row of the table
#: (the alias table's ``memory_as`` column).
MEMORY_ALIASES = {a.name: a.memory_as for a in hardware.aliases().values() if a.memory_as}

#: Each fitted constant and the ids (prefixes) of the rows it is fitted from.
FITTED_FROM = {
    "gemm_share": ("mamf.",),
    "stream_share": ("stream.",),
    "conv_share": ("lambda.resnet50.",),
    "llamacpp_bytes_in_flight": ("decode.",),
    "llamacpp_node_seconds": ("decode.",),
    "compiled_bytes_in_flight": ("gptfast.", "aodecode."),
    "compiled_dequant_per_sm_cycle": ("gptfast.", "aodecode."),
    "ring_step_seconds": ("nccl.", "torchdist."),
}
#: What each constant means, with its unit.
MEANING = {
    "gemm_share": "share of the dense Tensor Core peak a large GEMM sustains (median over chips)",
    "stream_share": "share of the DRAM bandwidth a streaming kernel reaches (median over chips)",
    "conv_share": "share of the dense Tensor Core peak a cuDNN convolution sustains",
    "llamacpp_bytes_in_flight": "bytes llama.cpp's matrix-vector kernels keep in flight per SM",
    "llamacpp_node_seconds": "seconds each kernel of llama.cpp's CUDA graph adds to a token",
    "compiled_bytes_in_flight": "bytes torch.compile's matrix-vector kernels keep in flight per SM",
    "compiled_dequant_per_sm_cycle": "weights a compiled weight-only kernel unpacks per SM and cycle",
    "ring_step_seconds": "seconds per step of an NCCL ring all-reduce: the smallest message's "
                         "measured time over its 2(n-1) steps (median over chips)",
}


def die(hardware_name: str) -> str:
    """The die a board is built on, from the table's architecture column or :data:`DIE_ALIASES`.

    'A100 SXM4 80GB' -> 'GA100', 'GH200' -> 'GH100', 'MI300X' -> 'CDNA3'; a name the book
    does not know is its own die.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    name = _checks.text("hardware_name", hardware_name)
    if name in DIE_ALIASES:
        return DIE_ALIASES[name]
    if name not in hardware.names():
        return name
    arch = hardware.get(name).architecture
    inside = re.search(r"\(([A-Z]{2}\d{3}[A-Z]?)", arch)
    return inside.group(1) if inside else arch.split()[0]


def _check_rows(name: str, rows) -> list:
    if not isinstance(rows, (list, tuple)) or not all(_is_row(r) for r in rows):
        raise ValueError(f"{name} must be a list of measured rows (dicts with a str id and "
                         f"hardware and a positive finite value), as measured.measurements() gives")
    return list(rows)


def _is_row(r) -> bool:
    return (isinstance(r, dict) and isinstance(r.get("id"), str)
            and isinstance(r.get("hardware"), str) and isinstance(r.get("value"), (int, float))
            and not isinstance(r.get("value"), bool) and np.isfinite(r["value"]) and r["value"] > 0)


def row_dies(row: dict) -> frozenset:
    """The dies one measured row involves: its own board's and, for an A100/V100 pair, the V100's."""
    if not (isinstance(row, dict) and isinstance(row.get("id"), str)
            and isinstance(row.get("hardware"), str)):
        raise ValueError("row must be a measured row: a dict with a str id and hardware")
    dies = {die(row["hardware"])}
    if row["id"].startswith("dle."):
        dies.add("GV100")
    return frozenset(dies)


@dataclass(frozen=True)
class Calibration:
    """Fitted global constants plus the measured per-die inputs they were fitted with.

    ``gemm_shares``, ``stream_shares`` and ``latencies`` map a die to its own measured
    matmul share, streaming share and DRAM latency (seconds); ``left_out`` lists the dies
    withheld from all of it.
    """
    constants: dict
    gemm_shares: dict = field(default_factory=dict)
    stream_shares: dict = field(default_factory=dict)
    latencies: dict = field(default_factory=dict)
    left_out: frozenset = frozenset()
    rows: int = 0

    def gemm_share(self, acc) -> float:
        """The card's measured large-GEMM share of peak if its die was measured, else the global one."""
        return self.gemm_shares.get(die(acc.name), self.constants["gemm_share"])

    def stream_share(self, acc) -> float:
        """The card's measured streaming share of DRAM bandwidth, else the global one."""
        return self.stream_shares.get(die(acc.name), self.constants["stream_share"])

    def latency(self, acc) -> float:
        """The card's measured DRAM latency in seconds, else the median over the measured dies."""
        own = self.latencies.get(die(acc.name))
        return own if own is not None else float(np.median(list(self.latencies.values())))


def _kept(rows, leave_out) -> list:
    return [r for r in rows if not (row_dies(r) & leave_out)]


def _by_die(pairs) -> dict:
    groups = {}
    for d, value in pairs:
        groups.setdefault(d, []).append(value)
    return {d: float(np.mean(v)) for d, v in groups.items()}


def gemm_shares(rows) -> dict:
    """Per die: best measured 16-bit matmul (``mamf.*.bf16`` rows) over the table's dense peak."""
    rows = _check_rows("rows", rows)
    pairs = []
    for r in rows:
        if r["id"].startswith("mamf.") and r["id"].endswith((".bf16", ".fp16")):
            acc = hardware.get(PEAK_ALIASES.get(r["hardware"], r["hardware"]))
            pairs.append((die(r["hardware"]), r["value"] * 1e12 / acc.peak_flops("bf16")))
    return _by_die(pairs)


def stream_shares(rows) -> dict:
    """Per die: measured streaming bandwidth (read, scale, triad; ``stream.*`` rows) over the datasheet's."""
    rows = _check_rows("rows", rows)
    pairs = []
    for r in rows:
        name = MEMORY_ALIASES.get(r["hardware"], r["hardware"])
        if r["id"].startswith("stream.") and name in hardware.names():
            pairs.append((die(r["hardware"]), r["value"] / hardware.get(name).memory_bandwidth_gbs))
    return _by_die(pairs)


def dram_latencies() -> dict:
    """Per die: measured DRAM (global-memory) pointer-chase latency in seconds, where the clock is known.

    The preferred row of each architecture where one exists, else the mean of the die's rows.
    """
    pairs, preferred = [], {}
    for r in measured.latencies():
        if r["quantity"] != "global" or r["clock_mhz"] is None or r["gpu"] == "post":
            continue
        d = die(r["gpu"])
        seconds = r["cycles"] / (r["clock_mhz"] * 1e6)
        if r["preferred"]:
            preferred[d] = seconds
        pairs.append((d, seconds))
    out = _by_die(pairs)
    out.update(preferred)
    return out


def ring_step_latencies(leave_out=()) -> dict:
    """Per die: the latency per ring step of its smallest measured all-reduce, in seconds.

    The smallest message of a sweep is all latency: its measured time, nbytes x 2(n-1)/n over
    the bus bandwidth, divided by the ring's 2(n-1) steps. Rows come from the book's
    ``data/collectives.csv`` (ring or NCCL's default algorithm; NVLS rows are not rings),
    without the dies in ``leave_out``.
    Explained in :doc:`/book/parallelism` (section "Measured reality").
    """
    from . import parallelism
    leave_out = _dies(leave_out)
    smallest = {}
    for r in measured.collectives():
        d = die(r["hardware"])
        if (r["op"] != "all_reduce" or r["algorithm"].upper().startswith("NVLS")
                or d in leave_out):
            continue
        if d not in smallest or r["size_bytes"] < smallest[d]["size_bytes"]:
            smallest[d] = r
    out = {}
    for d, r in smallest.items():
        n = int(r["gpus"])
        seconds = r["size_bytes"] * parallelism.bus_factor(n) / (r["busbw_gbs"] * 1e9)
        out[d] = float(seconds / (2 * (n - 1)))
    return out


def _median_log_error(predicted, measured_values, axis=-1):
    """Median |log(predicted / measured)| along ``axis`` (rows last)."""
    return np.median(np.abs(np.log(np.asarray(predicted) / np.asarray(measured_values))), axis=axis)


def _sweep(rates: dict, key: str, values) -> dict:
    """``rates`` of one card repeated once per entry of ``values``, with ``key`` set to them."""
    n = len(values)
    out = {k: np.repeat(np.asarray(v, float)[:1], n) for k, v in rates.items()}
    out[key] = np.asarray(values, float)
    return out


def _swept(rows, partial: Calibration, engine: str, key: str, values, table_of) -> np.ndarray:
    """GPU seconds of each row's step (columns) at each value of one rate (rows of the result).

    ``values(acc, rates)`` gives the swept rate ``key`` on the row's card, one entry per grid
    point; ``table_of(row)`` the row's kernel table. The other rates stay those of ``partial``.
    """
    from . import throughput
    out = []
    for r in rows:
        acc = hardware.get(r["hardware"])
        rates = throughput.achieved_rates([acc], "16-bit", engine, partial)
        out.append(throughput.device_seconds(table_of(r), _sweep(rates, key, values(acc, rates))))
    return np.stack(out, axis=-1)


def _best(grid, predicted, rows) -> float:
    loss = _median_log_error(predicted, np.array([r["value"] for r in rows]))
    return float(grid[int(np.argmin(loss))])


def _in_flight(partial: Calibration):
    """The Little's-law cap of a card's matrix-vector rate at each bytes-in-flight grid value."""
    return lambda acc, rates: np.minimum(rates["stream"][0],
                                         acc.sm_count * QUEUE_GRID / partial.latency(acc))


def _compiled_rows(rows, quantized: bool) -> list:
    from . import validate
    out = []
    for r in rows:
        parts = r["id"].split(".")
        if (r["id"].startswith(FITTED_FROM["compiled_bytes_in_flight"]) and len(parts) == 4
                and parts[1] in validate.COMPILED_MODELS and parts[3] in validate.COMPILED_BITS
                and (r.get("gpus") or 1) == 1 and (parts[3] != "bf16") == quantized):
            out.append(r)
    return out


def _compiled_table(row) -> dict:
    from . import throughput, validate
    _, name, _, fmt = row["id"].split(".")
    return throughput.decode_kernels(1, context=8, weight_bits=validate.COMPILED_BITS[fmt],
                                     **validate.COMPILED_MODELS[name])


def _fit_decode(rows, partial: Calibration) -> tuple[float, float]:
    """llama.cpp's bytes in flight per SM and seconds per graph kernel: the pair on a grid
    that minimizes the median |log(predicted / measured)| over the ``decode.*`` rows."""
    from . import throughput
    rows = [r for r in rows if r["id"].startswith(FITTED_FROM["llamacpp_bytes_in_flight"])]
    if not rows:
        return (throughput.DEFAULT_CONSTANTS["llamacpp_bytes_in_flight"],
                throughput.DEFAULT_CONSTANTS["llamacpp_node_seconds"])
    device = _swept(rows, partial, "llama.cpp", "weights", _in_flight(partial),
                    throughput.decode_row_kernels)
    kernels = np.array([np.sum(throughput.decode_row_kernels(r)["launches"]) for r in rows])
    work = device - partial.constants["llamacpp_node_seconds"] * kernels[None, :]
    nodes = NODE_GRID[:, None] * kernels[None, :]
    predicted = 1.0 / (work[:, None, :] + nodes[None, :, :])
    loss = _median_log_error(predicted, np.array([r["value"] for r in rows]))
    i, k = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return float(QUEUE_GRID[i]), float(NODE_GRID[k])


def _fit_compiled(rows, partial: Calibration) -> float:
    """torch.compile's bytes in flight per SM: the grid value that minimizes the median
    |log(predicted / measured)| over the 16-bit single-GPU compiled decoding rows."""
    from . import throughput
    rows = _compiled_rows(rows, quantized=False)
    if not rows:
        return throughput.DEFAULT_CONSTANTS["compiled_bytes_in_flight"]
    device = _swept(rows, partial, "compiled", "weights", _in_flight(partial), _compiled_table)
    return _best(QUEUE_GRID, 1.0 / device, rows)


def _fit_dequant(rows, partial: Calibration) -> float:
    """Weights unpacked per SM and cycle by compiled weight-only kernels: the grid value that
    minimizes the median |log(predicted / measured)| over the quantized single-GPU rows."""
    from . import throughput
    rows = _compiled_rows(rows, quantized=True)
    if not rows:
        return throughput.DEFAULT_CONSTANTS["compiled_dequant_per_sm_cycle"]
    device = _swept(rows, partial, "compiled", "dequant",
                    lambda acc, _: acc.sm_count * acc.peak_clock_mhz * 1e6 * DEQUANT_GRID,
                    _compiled_table)
    return _best(DEQUANT_GRID, 1.0 / device, rows)


def _fit_conv(rows, partial: Calibration) -> float:
    """The convolutions' share of peak: the grid value that minimizes the median
    |log(predicted / measured)| over the ResNet-50 training rows (eager: host time counted)."""
    from . import throughput
    rows = [r for r in rows if r["id"].startswith(FITTED_FROM["conv_share"])]
    if not rows:
        return throughput.DEFAULT_CONSTANTS["conv_share"]

    def table(r):
        return throughput.cnn_train_kernels(int(r["batch"]))
    device = _swept(rows, partial, "eager", "conv",
                    lambda acc, rates: SHARE_GRID * rates["peak"][0], table)
    host = np.array([np.sum(table(r)["launches"]) * throughput.EAGER_HOST_SECONDS for r in rows])
    batch = np.array([float(r["batch"]) for r in rows])
    return _best(SHARE_GRID, batch / np.maximum(device, host), rows)


#: The grids the fits search: bytes in flight per SM, seconds per graph kernel, shares of
#: peak.
QUEUE_GRID = np.geomspace(512, 65536, 113)
NODE_GRID = np.geomspace(0.1e-6, 50e-6, 109)
SHARE_GRID = np.geomspace(0.05, 1.0, 121)
DEQUANT_GRID = np.geomspace(1.0, 64.0, 97)


def fit(leave_out=(), rows=None) -> Calibration:
    """Fit every constant of :data:`FITTED_FROM` from the book's measured rows, without the dies in ``leave_out``.

    ``leave_out`` is a die name or a list of them (see :func:`die`); ``rows`` replaces the
    book's measured rows (a list of measurement dicts). The matmul and streaming shares are
    medians over dies of each die's mean measured share; the rest are grid searches that
    minimize the median |log(predicted / measured)| of their rows, in the order of
    :data:`FITTED_FROM`, each using the constants fitted before it.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    from . import throughput
    data = measured.measurements() if rows is None else _check_rows("rows", rows)
    if rows is not None and not data:
        raise ValueError("rows must hold at least one measured row (None: the book's)")
    leave_out = _dies(leave_out, data if rows is not None else ())
    kept = _kept(data, leave_out)
    gemm, stream = gemm_shares(kept), stream_shares(kept)
    latencies = {d: s for d, s in dram_latencies().items() if d not in leave_out}
    constants = dict(throughput.DEFAULT_CONSTANTS)
    if gemm:
        constants["gemm_share"] = float(np.median(list(gemm.values())))
    if stream:
        constants["stream_share"] = float(np.median(list(stream.values())))
    partial = Calibration(constants, gemm, stream, latencies, leave_out, len(kept))
    q, node = _fit_decode(kept, partial)
    constants.update(llamacpp_bytes_in_flight=q, llamacpp_node_seconds=node)
    constants["compiled_bytes_in_flight"] = _fit_compiled(kept, partial)
    partial = Calibration(constants, gemm, stream, latencies, leave_out, len(kept))
    constants["compiled_dequant_per_sm_cycle"] = _fit_dequant(kept, partial)
    constants["conv_share"] = _fit_conv(kept, partial)
    steps = ring_step_latencies(leave_out)
    if steps:
        constants["ring_step_seconds"] = float(np.median(list(steps.values())))
    return Calibration(constants, gemm, stream, latencies, leave_out, len(kept))


@functools.lru_cache(maxsize=64)
def _cached(leave_out: frozenset) -> Calibration:
    return fit(leave_out)


def default(leave_out=()) -> Calibration:
    """The book's calibration (every measured row), or one without the dies in ``leave_out``; cached.

    ``leave_out`` is a die name (a bare string is one die, "GA100") or a list of them; a name
    that is no die of the table or of the measured rows is refused.

    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    return _cached(_dies(leave_out))


def _dies(leave_out, rows=()) -> frozenset:
    """``leave_out`` (one die name, a bare string, or a list of them) as a frozenset; a name that
    is no die of the table, of the book's measured rows or of ``rows`` is refused."""
    if isinstance(leave_out, str):
        leave_out = (leave_out,)
    if not isinstance(leave_out, (list, tuple, set, frozenset)) or \
            not all(isinstance(d, str) for d in leave_out):
        raise ValueError(f"leave_out must be a die name or a list of them (got {leave_out!r:.60})")
    unknown = set(leave_out) - _known_dies()
    if unknown and rows:
        unknown -= {d for r in rows for d in row_dies(r)}
    if unknown:
        raise ValueError(f"leave_out: unknown die {', '.join(sorted(map(repr, unknown)))[:200]} "
                         f"(known: {', '.join(sorted(_known_dies()))})")
    return frozenset(leave_out)


@functools.lru_cache(maxsize=1)
def _known_dies() -> frozenset:
    """Every die of the table's boards, of :data:`DIE_ALIASES` and of the book's measured rows."""
    dies = {die(name) for name in hardware.names()} | set(DIE_ALIASES.values())
    for row in measured.measurements() + list(measured.collectives()):
        if isinstance(row.get("hardware"), str):
            dies.add(die(row["hardware"]))
    return frozenset(dies)


def with_constants(base: Calibration | None = None, share_scale=None) -> Calibration:
    """A copy of ``base`` (default: :func:`default`) with every share of the peak scaled, for a slider.

    ``share_scale`` (0.1 to 2) multiplies the fitted and the measured large-GEMM shares and the
    convolution share (each capped at 1); None leaves them as fitted.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    base = default() if base is None else base
    if not isinstance(base, Calibration):
        raise ValueError(f"base must be a Calibration or None (got {base!r:.60})")
    if share_scale is None:
        return base
    scale = float(_checks.in_range("share_scale", _checks.scalar("share_scale", share_scale),
                                   0.1, 2.0))
    constants = dict(base.constants)
    for name in ("gemm_share", "conv_share"):
        constants[name] = min(1.0, constants[name] * scale)
    shares = {d: min(1.0, s * scale) for d, s in base.gemm_shares.items()}
    return Calibration(constants, shares, dict(base.stream_shares), dict(base.latencies),
                       base.left_out, base.rows)


def constants_table(base: Calibration | None = None) -> list[dict]:
    """The fitted constants of ``base`` (default: :func:`default`): name, value, meaning, fitted from.

    Explained in :doc:`/book/choosing_a_gpu` (section "Today's model: a step on the host and the GPU").
    """
    base = default() if base is None else base
    if not isinstance(base, Calibration):
        raise ValueError(f"base must be a Calibration or None (got {base!r:.60})")
    return [{"constant": name, "value": base.constants[name], "meaning": MEANING[name],
             "fitted from": ", ".join(p + "*" for p in FITTED_FROM[name])} for name in FITTED_FROM]
