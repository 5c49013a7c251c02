"""Explorations and figures of the chapter :doc:`/book/memory_hierarchy`."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from .. import _checks, charts, hardware, memory
from ..explore import Choice, Exploration, Slider, check_direct_calls
from ..units import MiB, TFLOPS

#: Accelerators the chapter compares, oldest first.
GPUS = ("V100 SXM2 16GB", "RTX 2080 Ti", "A100 SXM4 40GB", "RTX 4090", "H100 SXM5", "B200")
TPU = "TPU v2"
TPU_TILE = 128
DTYPES = ("fp32", "fp16", "int8")


def tile_traffic(tokens, tile, dtype, scheme):
    """Load time of the BERT matmul (tokens x 1024 @ 1024 x 1024) per accelerator, GPUs with ``tile`` tiles.

    GPU bandwidths come from the hardware table; the TPU v2 keeps the post's 600 GB/s and
    128 x 128 tiles. All bandwidths are read as decimal GB/s (ratios do not depend on the unit).
    """
    k, n = memory.TPU_POST["k"], memory.TPU_POST["n"]
    names = list(GPUS) + [TPU]
    tiles = np.array([tile] * len(GPUS) + [TPU_TILE], dtype=float)
    bandwidth = np.array([hardware.get(a).memory_bandwidth_gbs for a in GPUS]
                         + [memory.TPU_POST["tpu_bandwidth"]])
    traffic = memory.matmul_tile_traffic(tokens, k, n, tiles, dtype, scheme)
    seconds = memory.transfer_seconds(traffic, bandwidth, "GB/s")
    labels = [f"{a} ({int(t)}x{int(t)})" for a, t in zip(GPUS, tiles)]
    labels.append(f"{TPU} at the post's 600 GB/s ({TPU_TILE}x{TPU_TILE})")
    return {"accelerator": labels,
            "order": np.arange(len(names)),
            "loads": memory.tile_loads(tokens, k, n, tiles, scheme),
            "traffic_mib": traffic / MiB,
            "microseconds": seconds * 1e6}


def tile_traffic_chart(base):
    x = alt.X("microseconds:Q", title="time to load the tiles (µs, log scale)",
              scale=alt.Scale(type="log", domain=[0.5, 5000], nice=False),
              axis=alt.Axis(values=[1, 10, 100, 1000], format="~s"))
    y = alt.Y("accelerator:N", title=None, sort=alt.SortField("order"))
    dots = base.mark_circle(size=120, opacity=1).encode(
        x=x, y=y, color=alt.Color("accelerator:N", legend=None),
        tooltip=["accelerator:N", alt.Tooltip("loads:Q", format=",.0f"),
                 alt.Tooltip("traffic_mib:Q", title="MiB", format=".1f"),
                 alt.Tooltip("microseconds:Q", title="µs", format=".1f")])
    labels = base.mark_text(align="left", dx=8).encode(x=x, y=y, text=alt.Text("microseconds:Q", format=".1f"))
    return (dots + labels).properties(width=400, height=220)


TILE_TRAFFIC = Exploration(
    name="tile_traffic",
    compute=tile_traffic,
    params=(Slider("tokens", "rows of A (tokens)", 256, 2048, 128, 256, grid_step=256, integer=True),
            Slider("tile", "GPU tile", 32, 256, 16, 96, unit="elements", grid_step=32, integer=True),
            Choice("dtype", "data type", DTYPES, "fp16"),
            Choice("scheme", "load count", memory.LOAD_SCHEMES, "all_pairs")),
    chart=tile_traffic_chart,
    description="Dot chart: one row per accelerator (oldest at the top), the dot and its label give the "
                "time to load the tiles of a tokens x 1024 by 1024 x 1024 matmul (x, microseconds, log "
                "scale); GPUs use the slider's tile, the TPU keeps 128x128 tiles.",
)


ROOFLINE_ACCELERATORS = ("V100 SXM2 16GB", "A100 SXM4 40GB", "RTX 4090", "H100 SXM5", "B200", "TPU v4")


def roofline_point(accelerator, log2_tokens, hidden):
    """Roofline of ``accelerator`` (fp16/bf16 dense) and where a tokens x hidden @ hidden x hidden matmul sits on it."""
    acc = hardware.get(accelerator)
    dtype = "fp16" if acc.fp16_tflops else "bf16"
    peak, bw = acc.peak_flops(dtype), acc.bandwidth
    tokens = 2.0 ** np.asarray(log2_tokens)
    ridge = memory.ridge_point(peak, bw)
    curve = np.array([1.0, ridge, 10_000.0])
    point = memory.arithmetic_intensity(tokens, hidden, hidden, dtype)
    intensity = np.append(curve, point)
    attainable = memory.roofline(intensity, peak, bw) / TFLOPS
    return {"intensity": intensity, "tflops": attainable,
            "part": ["roofline"] * 3 + ["matmul"],
            "label": [""] * 3 + [f"{int(tokens)}x{int(hidden)} @ {int(hidden)}x{int(hidden)}: "
                                 f"{float(point):.0f} FLOP/B, {float(attainable[-1]):.0f} TFLOPS"]}


def roofline_chart(base):
    x = alt.X("intensity:Q", title="arithmetic intensity (FLOP/byte)", scale=alt.Scale(type="log", domain=[1, 10_000]))
    y = alt.Y("tflops:Q", title="attainable TFLOPS", scale=alt.Scale(type="log", domain=[1, 3000]))
    line = base.transform_filter("datum.part == 'roofline'").mark_line(strokeWidth=3).encode(x=x, y=y)
    point = base.transform_filter("datum.part == 'matmul'")
    dot = point.mark_point(size=160, filled=True, color=charts.VERMILLION).encode(
        x=x, y=y, tooltip=alt.Tooltip("label", type="nominal"))
    text = point.mark_text(align="left", fontSize=12).encode(
        x=alt.value(8), y=alt.value(10), text=alt.Text("label", type="nominal"))
    return (line + dot + text).properties(width=460, height=300)


ROOFLINE = Exploration(
    name="roofline",
    compute=roofline_point,
    params=(Choice("accelerator", "accelerator", ROOFLINE_ACCELERATORS, "H100 SXM5"),
            Slider("log2_tokens", "log2(rows of A)", 0, 14, 1, 8, integer=True),
            Slider("hidden", "k = n", 1024, 8192, 1024, 1024, integer=True)),
    chart=roofline_chart,
    description="Roofline, log-log: attainable TFLOPS (y) against arithmetic intensity in FLOP per "
                "byte (x) for one accelerator's 16-bit dense peak and bandwidth (the line), and a dot "
                "with a label where a tokens x hidden @ hidden x hidden matmul sits on it.",
)


WAVE_ACCELERATORS = ("V100 SXM2 16GB", "A100 SXM4 40GB", "RTX 4090", "H100 SXM5")


def wave_quantization(accelerator, tile, n):
    """Useful fraction of scheduled work against the rows m of the output, for one GPU and tile."""
    sms = hardware.get(accelerator).sm_count
    m = np.arange(32, 4097, 32, dtype=float)
    return {"m": m,
            "efficiency": memory.quantization_efficiency(m, n, tile, tile, sms),
            "tile_efficiency": memory.tile_quantization_efficiency(m, n, tile, tile),
            "waves": memory.wave_count(m, n, tile, tile, sms)}


def wave_chart(base):
    folded = base.transform_fold(["efficiency", "tile_efficiency"], as_=["kind", "value"])
    return folded.mark_line().encode(
        x=alt.X("m:Q", title="rows of the output m (tokens in the batch)"),
        y=alt.Y("value:Q", title="useful fraction of the work", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("kind:N", title=None,
                        scale=alt.Scale(domain=["efficiency", "tile_efficiency"], range=[charts.BLUE, "#999999"]),
                        legend=alt.Legend(orient="bottom",
                                          labelExpr="datum.label == 'efficiency' ? 'tiles and waves' : 'tiles only'")),
        strokeDash=alt.StrokeDash("kind:N", title=None,
                                  scale=alt.Scale(domain=["efficiency", "tile_efficiency"],
                                                  range=[[1, 0], [4, 3]]),
                                  legend=alt.Legend(orient="bottom",
                                                    labelExpr="datum.label == 'efficiency' ? 'tiles and waves' : 'tiles only'")),
        tooltip=["m:Q", alt.Tooltip("value:Q", format=".3f"), "waves:Q"],
    ).properties(width=460, height=240)


WAVES = Exploration(
    name="wave_quantization",
    compute=wave_quantization,
    params=(Choice("accelerator", "GPU", WAVE_ACCELERATORS, "A100 SXM4 40GB"),
            Choice("tile", "tile", (64, 128, 256), 128),
            Choice("n", "columns n", (1024, 2048, 4096, 8192), 4096)),
    chart=wave_chart,
    description="Line chart: the useful fraction of the scheduled work (y, 0 to 1) against the rows "
                "m of the output (x) for one GPU and tile, counting tile quantization only (grey, "
                "dashed) and tiles and waves together (blue, solid), with one output tile per SM "
                "per wave.",
)


L2_GPUS = ("V100 SXM2 16GB", "RTX 2080 Ti", "RTX 3090", "A100 SXM4 40GB", "RTX 4090", "H100 SXM5", "B200")


#: Output tile the L2 exploration assumes for every GPU (square, 16-bit: 64 FLOP/byte per tile).
L2_TILE = 128


def l2_fit(tokens, dtype, k_in_flight):
    """For each GPU and each BERT-large weight matmul: the L2 reuse level and the DRAM intensity it gives."""
    shapes = memory.bert_large_matmuls(tokens)
    accs = [hardware.get(name) for name in L2_GPUS]
    m, k, n = (np.array([[s[i] for s in shapes.values()]] * len(accs), dtype=float) for i in range(3))
    sms = np.array([[a.sm_count] for a in accs], dtype=float)
    l2 = np.array([[a.l2_bytes] for a in accs])
    args = (m, k, n, L2_TILE, L2_TILE, sms)
    levels = memory.l2_reuse(*args, l2, dtype, k_in_flight)
    traffic = memory.dram_traffic(*args, l2, dtype, k_in_flight)
    return {"gpu": np.repeat(L2_GPUS, len(shapes)), "matmul": list(shapes) * len(accs),
            "reuse": [memory.L2_REUSE[int(level)] for level in levels.ravel()],
            "intensity": (memory.matmul_flops(m, k, n) / traffic).ravel(),
            "whole_mib": (memory.matmul_min_traffic(m, k, n, dtype) / MiB).ravel(),
            "wave_mib": (memory.wave_working_set(*args, dtype, k_in_flight) / MiB).ravel(),
            "l2_mib": np.repeat([a.l2_cache_mib for a in accs], len(shapes))}


def l2_chart(base):
    cells = base.mark_rect(stroke="white").encode(
        x=alt.X("matmul:N", title=None, sort=list(memory.bert_large_matmuls(1))),
        y=alt.Y("gpu:N", title=None, sort=list(L2_GPUS)),
        color=alt.Color("reuse:N", title="operands come from DRAM",
                        scale=alt.Scale(domain=list(memory.L2_REUSE),
                                        range=["#d9d9d9", charts.SKY_BLUE, charts.GREEN])),
        tooltip=["gpu:N", "matmul:N", "reuse:N",
                 alt.Tooltip("intensity:Q", format=".0f", title="DRAM intensity (FLOP/B)"),
                 alt.Tooltip("whole_mib:Q", format=".1f", title="A + B + C (MiB)"),
                 alt.Tooltip("wave_mib:Q", format=".1f", title="one wave (MiB)"),
                 alt.Tooltip("l2_mib:Q", title="L2 (MiB)")])
    text = base.mark_text(fontSize=11).encode(
        x=alt.X("matmul:N", sort=list(memory.bert_large_matmuls(1))),
        y=alt.Y("gpu:N", sort=list(L2_GPUS)),
        text=alt.Text("intensity:Q", format=".0f"))
    return (cells + text).properties(width=360, height=220)


L2_FIT = Exploration(
    name="l2_fit",
    compute=l2_fit,
    params=(Slider("tokens", "tokens in the batch", 1024, 16384, 512, 4096, integer=True),
            Choice("dtype", "data type", ("fp16", "fp8"), "fp16"),
            Choice("k_in_flight", "K in flight", (256, 4096), 256)),
    chart=l2_chart,
    description="Grid: one row per GPU, one column per BERT-large weight matmul; each cell's "
                "shade (light to dark: per tile, per wave, single pass) says how often the matmul "
                "reads its operands from DRAM and its number is the FLOP per DRAM byte that gives "
                "(128 x 128 tiles).",
)


#: Colours of the wave diagram: the first wave's tiles, the strips it reads, everything else.
WAVE_PARTS = {"tiles of the first wave (C)": charts.BLUE,
              "tiles of later waves (C)": "#d9d9d9",
              "strip the first wave reads once (A, B)": charts.ORANGE,
              "strip of later waves only (A, B)": "#bbbbbb"}


def wave_reuse_frame(m=4096, n=4096, k=4096, tile=128, gpu="H100 SXM5") -> pd.DataFrame:
    """Rectangles of the wave diagram: C and its first wave's block, A's row strips, B's column strips.

    C (m x n) is cut into tile x tile output tiles, grouped by :func:`gpumodel.memory.wave_groups`
    for the SMs of ``gpu``; the first wave is the block of group 0. A (m x k) sits left of C, cut
    into one row strip per row of tiles, and B (k x n) above it, one column strip per column of
    tiles; a strip is the first wave's when a tile of group 0 needs it. Coordinates in elements,
    y downwards. Explained in :doc:`/book/memory_hierarchy`
    (section "L2 reuse: how real kernels reach the ridge").
    """
    m, n, k, tile = (_count(name, v) for name, v in (("m", m), ("n", n), ("k", k), ("tile", tile)))
    acc = _gpu(gpu)
    groups = memory.wave_groups(m, n, tile, tile, acc.sm_count)
    m, n, tile = float(m), float(n), float(tile)
    gap = 0.06 * max(m, n, k)
    first = groups == 0
    parts = list(WAVE_PARTS)
    rows = [{"x": 0.0, "x2": n, "y": 0.0, "y2": m, "part": parts[1], "what": "C"},
            {"x": 0.0, "x2": min(first.any(axis=0).sum() * tile, n), "y": 0.0,
             "y2": min(first.any(axis=1).sum() * tile, m), "part": parts[0], "what": "C, first wave"}]
    for i in range(groups.shape[0]):
        rows.append({"x": -gap - k, "x2": -gap, "y": i * tile, "y2": min((i + 1) * tile, m),
                     "part": parts[2 if first[i].any() else 3], "what": f"A, row strip {i + 1}"})
    for j in range(groups.shape[1]):
        rows.append({"x": j * tile, "x2": min((j + 1) * tile, n), "y": -gap - k, "y2": -gap,
                     "part": parts[2 if first[:, j].any() else 3], "what": f"B, column strip {j + 1}"})
    return pd.DataFrame(rows)


def _count(name, value):
    from .._checks import count

    return count(name, value)


def _gpu(name) -> hardware.Accelerator:
    """The accelerator ``name`` of the wave diagram, with errors that name the parameter ``gpu``."""
    try:
        acc = hardware.get(name)
    except ValueError as err:
        raise ValueError(f"gpu: {err}") from None
    if not acc.sm_count:
        raise ValueError(f"gpu must have SMs to run waves of tiles (got {name!r})")
    return acc


def wave_reuse_chart(m=4096, n=4096, k=4096, tile=128, gpu="H100 SXM5"):
    """Diagram of per-wave L2 reuse: the first wave's tiles of C and the strips of A and B it shares.

    Drawn from :func:`wave_reuse_frame`, so it follows the model's wave (:func:`gpumodel.memory.wave_shape`);
    white lines cut C into its output tiles.
    Explained in :doc:`/book/memory_hierarchy` (section "L2 reuse: how real kernels reach the ridge").
    """
    frame = wave_reuse_frame(m, n, k, tile, gpu)
    acc = _gpu(gpu)
    r, c = (int(v) for v in memory.wave_shape(m, n, tile, tile, acc.sm_count))
    rows = int(frame["what"].str.startswith("A").sum())
    cols = int(frame["what"].str.startswith("B").sum())
    m, n, k, tile = float(m), float(n), float(k), float(tile)
    gap = 0.06 * max(m, n, k)
    span_x, span_y = n + gap + k, m + gap + k
    size = 400 / max(span_x, span_y)
    x = alt.X("x:Q", axis=None, scale=alt.Scale(domain=[-gap - k, n], nice=False, zero=False))
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[-gap - k, m], nice=False, zero=False, reverse=True))
    rects = alt.Chart(frame).mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=x, x2="x2:Q", y=y, y2="y2:Q",
        color=alt.Color("part:N", title=None, sort=list(WAVE_PARTS),
                        scale=alt.Scale(domain=list(WAVE_PARTS), range=list(WAVE_PARTS.values())),
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=320)),
        tooltip=["what:N", "part:N"])
    cuts = pd.DataFrame([{"x": j * tile, "x2": j * tile, "y": 0.0, "y2": m} for j in range(1, cols)]
                        + [{"x": 0.0, "x2": n, "y": i * tile, "y2": i * tile} for i in range(1, rows)])
    lines = alt.Chart(cuts).mark_rule(color="#ffffff", strokeWidth=0.5).encode(x=x, x2="x2:Q", y=y, y2="y2:Q")
    labels = pd.DataFrame({"x": [-gap - k / 2, n / 2, n / 2], "y": [m / 2, -gap - k / 2, m / 2],
                           "label": [f"A (m x k)\n{m:g} x {k:g}", f"B (k x n)\n{k:g} x {n:g}",
                                     f"C (m x n)\n{m:g} x {n:g}"]})
    text = alt.Chart(labels).mark_text(fontSize=13, fontWeight="bold", color=charts.BLACK,
                                       lineBreak="\n").encode(x=x, y=y, text="label:N")
    # the edge names, in the gaps beside the edges they measure
    edges = pd.DataFrame({"x": [-gap - k / 2, -gap / 2, -gap / 2, n / 2],
                          "y": [-gap / 2, m / 2, -gap - k / 2, -gap / 2],
                          "label": ["k", "m", "k", "n"]})
    text += alt.Chart(edges).mark_text(fontSize=12, fontStyle="italic", color=charts.BLACK).encode(
        x=x, y=y, text="label:N")
    description = (
        f"Diagram of C = AB on the {gpu} ({acc.sm_count} SMs), edges labelled m, n and k: "
        f"C (m x n = {m:g} x {n:g}, lower right) is cut into "
        f"{rows} x {cols} output tiles of {tile:g} x {tile:g}; the {r} x {c} block of tiles in its top-left "
        f"corner, one wave (one tile per SM), is blue, the tiles of later waves light grey. A (m x k = "
        f"{m:g} x {k:g}, left) is cut into {rows} row strips and B (k x n = {k:g} x {n:g}, top) into {cols} "
        f"column strips; the {r} "
        f"strips of A and {c} of B that the wave needs are orange: each is read from DRAM once and shared "
        f"through L2 by the {c} (A) or {r} (B) tiles of the wave that use it.")
    return (rects + lines + text).properties(width=round(span_x * size), height=round(span_y * size),
                                             description=description)


#: Accelerators of the regime exploration.
REGIME_ACCELERATORS = ("V100 SXM2 16GB", "A100 SXM4 40GB", "RTX 4090", "H100 SXM5", "B200")


def regimes(accelerator, hidden, overhead_us):
    """Compute, memory and overhead time of a tokens x hidden @ hidden x hidden matmul against tokens."""
    acc = hardware.get(accelerator)
    tokens = 2.0 ** np.arange(0, 17)
    flops = memory.matmul_flops(tokens, hidden, hidden)
    nbytes = memory.matmul_min_traffic(tokens, hidden, hidden)
    args = (flops, nbytes, acc.peak_flops(), acc.bandwidth, overhead_us * 1e-6)
    parts = memory.kernel_terms(*args)
    which = memory.regime(*args)
    rows = {"tokens": [], "term": [], "microseconds": [], "bound": []}
    for term, seconds in parts.items():
        rows["tokens"].extend(tokens)
        rows["term"].extend([term] * tokens.size)
        rows["microseconds"].extend(seconds * 1e6)
        rows["bound"].extend(memory.REGIMES[int(i)] for i in which)
    return rows


def regimes_chart(base):
    return base.mark_line(point=True).encode(
        x=alt.X("tokens:Q", title="rows of A (tokens)", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("microseconds:Q", title="time (µs, log scale)",
                scale=alt.Scale(type="log", domain=[0.001, 10000])),
        color=alt.Color("term:N", title="term", sort=list(memory.REGIMES),
                        scale=alt.Scale(domain=list(memory.REGIMES),
                                        range=[charts.VERMILLION, charts.BLUE, charts.BLACK])),
        shape=alt.Shape("term:N", title="term", sort=list(memory.REGIMES),
                        scale=alt.Scale(domain=list(memory.REGIMES))),
        strokeDash=alt.StrokeDash("term:N", title="term", sort=list(memory.REGIMES),
                                  scale=alt.Scale(domain=list(memory.REGIMES))),
        tooltip=["tokens:Q", "term:N", alt.Tooltip("microseconds:Q", format=".3g"),
                 alt.Tooltip("bound:N", title="largest term")],
    ).properties(width=420, height=260)


REGIMES = Exploration(
    name="regimes",
    compute=regimes,
    params=(Choice("accelerator", "accelerator", REGIME_ACCELERATORS, "H100 SXM5"),
            Choice("hidden", "k = n", (1024, 4096, 8192), 1024),
            Slider("overhead_us", "overhead per kernel", 0, 20, 1, 5, unit="µs", grid_step=2)),
    chart=regimes_chart,
    description="Line chart, log-log: time in microseconds (y) against the rows of A (x) of the "
                "three terms of a square-weight matmul's time on one accelerator, compute, memory and "
                "overhead (one line each, told apart by colour, marker and dash); whichever is "
                "largest sets the regime.",
)


#: Accelerators whose rooflines the tile-intensity exploration offers.
INTENSITY_ACCELERATORS = ("V100 SXM2 16GB", "RTX 2080 Ti", "A100 SXM4 40GB", "RTX 4090",
                          "H100 SXM5", "B200")


def tile_intensities(accelerator, tile):
    """The BERT matmul's intensity under each traffic count, on one accelerator's roofline."""
    acc = hardware.get(accelerator)
    peak, bw = acc.peak_flops(), acc.bandwidth
    p = memory.TPU_POST
    counts = list(memory.TRAFFIC_COUNTS)
    points = np.array([float(memory.matmul_intensity(p["m"], p["k"], p["n"], tile, "fp16", c))
                       for c in counts])
    ridge = float(memory.ridge_point(peak, bw))
    curve = np.array([1.0, ridge, 4000.0])
    intensity = np.concatenate([curve, points])
    return {"intensity": intensity,
            "tflops": memory.roofline(intensity, peak, bw) / TFLOPS,
            "part": ["roofline"] * 3 + ["traffic count"] * len(counts),
            "count": [""] * 3 + counts,
            "ridge": ridge}


def tile_intensity_chart(base):
    x = alt.X("intensity:Q", title="FLOP per byte of global-memory traffic",
              scale=alt.Scale(type="log", domain=[1, 4000]))
    y = alt.Y("tflops:Q", title="attainable TFLOPS", scale=alt.Scale(type="log", domain=[1, 3000]))
    line = base.transform_filter("datum.part == 'roofline'").mark_line(
        strokeWidth=3, color="#767676").encode(x=x, y=y)
    dots = base.transform_filter("datum.part == 'traffic count'").mark_point(
        size=140, filled=True).encode(
        x=x, y=y, color=alt.Color("count:N", title="traffic count",
                                  sort=list(memory.TRAFFIC_COUNTS)),
        shape=alt.Shape("count:N", title="traffic count", sort=list(memory.TRAFFIC_COUNTS)),
        tooltip=["count:N", alt.Tooltip("intensity:Q", format=".1f"),
                 alt.Tooltip("tflops:Q", format=".0f"), alt.Tooltip("ridge:Q", format=".0f")])
    return (line + dots).properties(width=420, height=280)


TILE_INTENSITY = Exploration(
    name="tile_intensity",
    compute=tile_intensities,
    params=(Choice("accelerator", "accelerator", INTENSITY_ACCELERATORS, "H100 SXM5"),
            Choice("tile", "square tile", (64, 96, 128, 256), 128)),
    chart=tile_intensity_chart,
    description="Roofline, log-log: attainable TFLOPS (y) against FLOP per byte of global-memory "
                "traffic (x) for one accelerator (grey line), with the BERT matmul (256 x 1024 @ "
                "1024 x 1024, 16-bit) placed under three traffic counts (points told apart by colour "
                "and marker).",
)

EXPLORATIONS = [ROOFLINE, REGIMES, TILE_INTENSITY, L2_FIT, TILE_TRAFFIC, WAVES]


def l2_sizes_table() -> pd.DataFrame:
    """L2 and shared memory per SM of the chapter's GPUs, from the hardware table."""
    rows = [hardware.get(n) for n in L2_GPUS]
    return pd.DataFrame({"GPU": [a.name for a in rows], "architecture": [a.architecture for a in rows],
                         "year": [a.year for a in rows],
                         "L1/shared per SM (KiB)": [a.l1_shared_per_sm_kib for a in rows],
                         "L2 (MiB)": [a.l2_cache_mib for a in rows]})


def ridge_table() -> pd.DataFrame:
    """Dense 16-bit peak, bandwidth and ridge point for the roofline accelerators."""
    out = []
    for name in ROOFLINE_ACCELERATORS:
        acc = hardware.get(name)
        dtype = "fp16" if acc.fp16_tflops else "bf16"
        out.append({"accelerator": name, "peak TFLOPS (16-bit dense)": acc.peak_flops(dtype) / TFLOPS,
                    "bandwidth (GB/s)": acc.memory_bandwidth_gbs,
                    "ridge (FLOP/byte)": round(float(acc.ridge_point(dtype)))})
    return pd.DataFrame(out)


def ridge_all_table(intensity: float) -> pd.DataFrame:
    """Every accelerator's 16-bit dense ridge point, and which side of it ``intensity`` (FLOP/byte) lies.

    Two accumulate modes: FP32 (what training uses) and FP16, which GeForce cards run at twice
    their FP32-accumulate rate (elsewhere both run at the same rate; TPUs have no FP16 mode).
    """
    intensity = _checks.scalar("intensity", intensity)
    out = []
    for acc in hardware.accelerators():
        dtype = "fp16" if acc.fp16_tflops else "bf16"
        fp32_acc = float(acc.ridge_point(dtype))
        fp16_acc = (float(acc.peak_flops(dtype, accumulate="fp16") / acc.bandwidth)
                    if dtype == "fp16" else np.nan)
        out.append({"accelerator": acc.name, "ridge, FP32 accumulate": round(fp32_acc),
                    "ridge, FP16 accumulate": fp16_acc,
                    "bound, FP32 accumulate": "compute" if intensity >= fp32_acc else "memory",
                    "bound, FP16 accumulate": ("-" if np.isnan(fp16_acc) else
                                               "compute" if intensity >= fp16_acc else "memory")})
    table = pd.DataFrame(out).set_index("accelerator")
    table["ridge, FP16 accumulate"] = table["ridge, FP16 accumulate"].round().astype("Int64")
    return table


HIERARCHY_GPUS = ("V100 SXM2 16GB", "RTX 2080 Ti", "A100 SXM4 40GB", "RTX 3090", "RTX 4090", "H100 SXM5", "B200")
LEVELS = ("shared", "l1", "l2", "global")


def hierarchy_table() -> pd.DataFrame:
    """Capacity and bandwidth of each level for the chapter's GPUs (hardware table)."""
    rows = [hardware.get(n) for n in HIERARCHY_GPUS]
    return pd.DataFrame({
        "GPU": [a.name for a in rows],
        "SMs": pd.array([a.sm_count for a in rows], dtype="Int64"),
        "L1/shared per SM (KiB)": [a.l1_shared_per_sm_kib for a in rows],
        "L2 (MiB)": [a.l2_cache_mib for a in rows],
        "memory (GiB)": [a.memory_gib for a in rows],
        "usable (GiB)": [a.usable_memory_gib for a in rows],
        "bandwidth (GB/s)": [a.memory_bandwidth_gbs for a in rows]}).set_index("GPU")


def latency_table() -> pd.DataFrame:
    """Preferred measured latency in cycles per architecture and memory level (gpumodel/data/latencies.csv)."""
    from .. import measured

    rows = [r for r in measured.latencies() if r["preferred"] and r["quantity"] in LEVELS]
    table = pd.DataFrame(rows).pivot_table(index="architecture", columns="quantity", values="cycles")
    order = [a for a in measured.architectures() if a in table.index]
    return table.reindex(index=order, columns=[c for c in LEVELS if c in table.columns])


def dram_latency_table() -> pd.DataFrame:
    """Measured DRAM latency per architecture in cycles, the clock it was measured at, and nanoseconds."""
    from .. import measured

    rows = []
    for arch in measured.architectures():
        row = next((r for r in measured.latencies(arch) if r["preferred"] and r["quantity"] == "global"), None)
        if row is None or row["gpu"] == "post":
            continue
        seconds = (measured.latency_seconds(arch, "global") if row["clock_mhz"] else np.nan)
        rows.append({"architecture": arch, "measured on": row["gpu"], "cycles": row["cycles"],
                     "clock (MHz)": row["clock_mhz"], "ns": seconds * 1e9})
    return pd.DataFrame(rows).set_index("architecture").round({"ns": 0})


def latency_chart():
    """Bar chart of the latency table: cycles to reach each level, per architecture."""
    table = latency_table().reset_index().melt(id_vars="architecture", var_name="level", value_name="cycles")
    table = table.dropna()
    return alt.Chart(table).mark_bar().encode(
        y=alt.Y("architecture:N", sort=list(latency_table().index), title=None),
        x=alt.X("cycles:Q", title="latency (SM clock cycles)"),
        color=alt.Color("level:N", sort=list(LEVELS), title="level"),
        yOffset=alt.YOffset("level:N", sort=list(LEVELS)),
        tooltip=["architecture:N", "level:N", "cycles:Q"],
    ).properties(width=420, height=320,
                 description="Grouped bar chart: for each GPU architecture (rows), one bar per memory "
                             "level (shared, L1, L2, global, always in that order within a group) "
                             "giving its measured latency in SM clock cycles (x).")


def a100_v100_table() -> pd.DataFrame:
    """Measured A100/V100 speed-ups (DeepLearningExamples), raw and batch/network-corrected, next to the bandwidth ratio."""
    from .. import measured

    rows = measured.a100_v100_speedups()
    ratio = memory.bandwidth_ratio(hardware.get("A100 SXM4 40GB").memory_bandwidth_gbs,
                                   hardware.get("V100 SXM2 16GB").memory_bandwidth_gbs)
    table = pd.DataFrame({"network": [r["network"] for r in rows], "GPUs": [r["gpus"] for r in rows],
                          "against": [r["v100"] for r in rows],
                          "batch A100 / V100": [f"{r['batch_a100']:.0f} / {r['batch_v100']:.0f}" for r in rows],
                          "measured": [round(r["raw"], 2) for r in rows],
                          "corrected": [round(r["corrected"], 2) for r in rows]})
    table["bandwidth ratio"] = round(float(ratio), 2)
    return table


def speed_predictor_table() -> pd.DataFrame:
    """Three one-number predictions of the A100/V100 speed-up against the corrected measurements.

    Each predictor is a ratio of datasheet entries (bandwidth, dense 16-bit tensor peak, L2 size);
    its error is the median over the DeepLearningExamples rows of |predicted / measured - 1|.
    """
    from .. import measured

    a100, v100 = hardware.get("A100 SXM4 40GB"), hardware.get("V100 SXM2 16GB")
    corrected = np.array([r["corrected"] for r in measured.a100_v100_speedups()])
    predictors = {"memory bandwidth": (a100.memory_bandwidth_gbs, v100.memory_bandwidth_gbs),
                  "16-bit tensor peak": (a100.fp16_tflops, v100.fp16_tflops),
                  "L2 size": (a100.l2_cache_mib, v100.l2_cache_mib)}
    rows = []
    for name, (new, old) in predictors.items():
        ratio = float(memory.bandwidth_ratio(new, old))
        error = 100 * float(np.median(np.abs(ratio / corrected - 1)))
        rows.append({"predictor": name, "A100 / V100": round(ratio, 2),
                     "median error (%)": round(error)})
    return pd.DataFrame(rows).set_index("predictor")


@_checks.finite_result
def deepbench_configurations(gpu: str = "V100 SXM2 16GB", m: int = 4096, n: int = 128,
                             k: int = 4096, l2_bandwidth: float | None = None) -> pd.DataFrame:
    """Predicted TFLOPS of one GEMM for several tilings (tile, split-K) with wave quantization."""
    acc = hardware.get(_checks.choice("gpu", gpu, hardware.names()))
    m, n, k = _checks.count("m", m), _checks.count("n", n), _checks.count("k", k)
    if l2_bandwidth is not None:
        l2_bandwidth = _checks.scalar("l2_bandwidth", l2_bandwidth)
    configs = ((128, 128, 1), (128, 128, 2), (128, 128, 4), (64, 128, 1), (64, 64, 1), (64, 64, 2))
    rows = []
    for tm, tn, split in configs:
        seconds = memory.gemm_seconds(m, k, n, acc.peak_flops(), acc.bandwidth, acc.sm_count,
                                      tm, tn, split, l2_bandwidth=l2_bandwidth)
        tiles = int(np.ceil(m / tm) * np.ceil(n / tn) * split)
        rows.append({"tile": f"{tm} x {tn}", "split-K": split, "tiles": tiles,
                     "waves": int(np.ceil(tiles / acc.sm_count)),
                     "predicted TFLOPS": round(float(memory.matmul_flops(m, k, n) / seconds / TFLOPS), 1)})
    return pd.DataFrame(rows).set_index(["tile", "split-K"])


#: RRZE's STREAM runs used PCIe boards; each maps to the table row with the same memory system.
STREAM_HARDWARE = {"V100 PCIe 16GB": "V100 SXM2 16GB", "A100 40GB": "A100 SXM4 40GB",
                   "H100 PCIe": "H100 PCIe", "MI300X": "MI300X"}


def stream_table() -> pd.DataFrame:
    """Best measured streaming bandwidth against the datasheet peak.

    The best of the kernels that read (read, scale, triad), and beside it the write-only kernel,
    which reaches more on every board in the table.
    """
    from .. import measured

    rows = []
    for hw, name in STREAM_HARDWARE.items():
        values = [r["value"] for r in measured.measurements("stream.") if r["hardware"] == hw]
        write = [r["value"] for r in measured.measurements("write.") if r["hardware"] == hw]
        peak = hardware.get(name).memory_bandwidth_gbs
        rows.append({"GPU (measured board)": hw, "datasheet (GB/s)": peak,
                     "best that reads (GB/s)": max(values),
                     "fraction of datasheet": round(max(values) / peak, 2),
                     "write-only (GB/s)": max(write),
                     "write-only fraction": round(max(write) / peak, 2)})
    return pd.DataFrame(rows).set_index("GPU (measured board)")


def deepbench_table(gpu: str = "V100 SXM2 16GB") -> pd.DataFrame:
    """DeepBench cuBLAS FP16 GEMM throughput against the roofline bound for the same shape."""
    from .. import measured

    acc = hardware.get(_checks.choice("gpu", gpu, hardware.names()))
    rows = []
    for r in measured.measurements("deepbench."):
        parts = r["id"].split(".")
        if r["hardware"] != acc.name or parts[2] != "fp16" or parts[4] != "nn":
            continue
        m, n, k = (int(x) for x in parts[3].split("x"))
        bound = memory.matmul_flops(m, k, n) / memory.matmul_roofline_seconds(m, k, n, acc.peak_flops("fp16"),
                                                                               acc.bandwidth) / TFLOPS
        intensity = memory.arithmetic_intensity(m, k, n)
        rows.append({"M x N x K": f"{m} x {n} x {k}", "intensity (FLOP/B)": round(float(intensity)),
                     "roofline bound (TFLOPS)": round(float(bound), 1), "measured (TFLOPS)": r["value"],
                     "measured / bound": round(r["value"] / float(bound), 2)})
    return pd.DataFrame(rows).sort_values("intensity (FLOP/B)").set_index("M x N x K")


@_checks.finite_result
def explained_share(bound, measured_value, predicted) -> float:
    """Share (%) of the gap between a roofline bound and a measurement that a finer model's prediction closes."""
    bound, predicted = _checks.scalar("bound", bound), _checks.scalar("predicted", predicted)
    if _checks.scalar("measured_value", measured_value) == bound:
        raise ValueError(f"measured_value must differ from bound (both {bound:g}): there is no gap to close")
    return 100 * (bound - predicted) / (bound - measured_value)


check_direct_calls(globals())
