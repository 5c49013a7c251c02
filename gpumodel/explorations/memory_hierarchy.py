"""Explorations and figures of the chapter :doc:`/book/memory_hierarchy`."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from .. import hardware, memory
from ..explore import Choice, Exploration, Slider
from ..units import MiB, TFLOPS

#: Accelerators the chapter compares, oldest first.
GPUS = ("V100 SXM2 16GB", "RTX 2080 Ti", "A100 SXM4 40GB", "RTX 4090", "H100 SXM5", "B200")
TPU = "TPU v2"
TPU_TILE = 128
DTYPES = ("fp32", "fp16", "int8")


def tile_traffic(tokens, tile, dtype, scheme):
    """Load time of the BERT matmul (tokens x 1024 @ 1024 x 1024) per accelerator, GPUs with ``tile`` tiles."""
    k = n = memory.TPU_POST["k"]
    names = list(GPUS) + [TPU]
    tiles = np.array([tile] * len(GPUS) + [TPU_TILE], dtype=float)
    bandwidth = np.array([hardware.get(a).memory_bandwidth_gbs for a in names])
    traffic = memory.matmul_tile_traffic(tokens, k, n, tiles, dtype, scheme)
    seconds = memory.transfer_seconds(traffic, bandwidth, "GB/s")
    return {"accelerator": [f"{a} ({int(t)}x{int(t)})" for a, t in zip(names, tiles)],
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
    return (dots + labels).properties(width=420, height=220)


TILE_TRAFFIC = Exploration(
    name="tile_traffic",
    compute=tile_traffic,
    params=(Slider("tokens", "rows of A (tokens)", 256, 2048, 128, 256, grid_step=256, integer=True),
            Slider("tile", "GPU tile", 32, 256, 16, 96, unit="elements", grid_step=32, integer=True),
            Choice("dtype", "data type", DTYPES, "fp16"),
            Choice("scheme", "load count", memory.LOAD_SCHEMES, "all_pairs")),
    chart=tile_traffic_chart,
    description="Tile loads and load time of a tokens x 1024 by 1024 x 1024 matmul; the TPU keeps 128x128 tiles.",
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
    dot = point.mark_point(size=160, filled=True, color="#d62728").encode(
        x=x, y=y, tooltip=alt.Tooltip("label", type="nominal"))
    text = point.mark_text(align="left", fontSize=12).encode(
        x=alt.value(8), y=alt.value(10), text=alt.Text("label", type="nominal"))
    return (line + dot + text).properties(width=460, height=300)


ROOFLINE = Exploration(
    name="roofline",
    compute=roofline_point,
    params=(Choice("accelerator", "accelerator", ROOFLINE_ACCELERATORS, "A100 SXM4 40GB"),
            Slider("log2_tokens", "log2(rows of A)", 0, 14, 1, 8, integer=True),
            Slider("hidden", "k = n", 1024, 8192, 1024, 1024, integer=True)),
    chart=roofline_chart,
    description="A matmul tokens x hidden @ hidden x hidden on the roofline of one accelerator.",
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
                        scale=alt.Scale(domain=["efficiency", "tile_efficiency"], range=["#1f77b4", "#bbbbbb"]),
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
    description="Tile and wave quantization: one output tile per SM per wave.",
)


L2_GPUS = ("V100 SXM2 16GB", "RTX 2080 Ti", "RTX 3090", "A100 SXM4 40GB", "RTX 4090", "H100 SXM5", "B200")


def l2_fit(tokens, dtype):
    """For each GPU and each BERT-large weight matmul: operand MiB and whether A and B fit in L2 together."""
    rows = {"gpu": [], "matmul": [], "operand_mib": [], "l2_mib": [], "fits": []}
    for name in L2_GPUS:
        acc = hardware.get(name)
        for matmul, (m, k, n) in memory.bert_large_matmuls(tokens).items():
            nbytes = memory.matmul_operand_bytes(m, k, n, dtype)
            rows["gpu"].append(name)
            rows["matmul"].append(matmul)
            rows["operand_mib"].append(float(nbytes / MiB))
            rows["l2_mib"].append(acc.l2_cache_mib)
            rows["fits"].append("fits" if memory.fits_in_cache(nbytes, acc.l2_bytes) else "does not fit")
    return rows


def l2_chart(base):
    return base.mark_rect(stroke="white").encode(
        x=alt.X("matmul:N", title=None, sort=list(memory.bert_large_matmuls(1))),
        y=alt.Y("gpu:N", title=None, sort=list(L2_GPUS)),
        color=alt.Color("fits:N", title="A and B in L2", scale=alt.Scale(domain=["fits", "does not fit"],
                                                                          range=["#4c9f70", "#d9d9d9"])),
        tooltip=["gpu:N", "matmul:N", alt.Tooltip("operand_mib:Q", format=".1f", title="A + B (MiB)"),
                 alt.Tooltip("l2_mib:Q", title="L2 (MiB)")],
    ).properties(width=360, height=220)


L2_FIT = Exploration(
    name="l2_fit",
    compute=l2_fit,
    params=(Slider("tokens", "tokens in the batch", 512, 16384, 512, 4096, grid_step=512, integer=True),
            Choice("dtype", "data type", ("fp16", "fp8"), "fp16")),
    chart=l2_chart,
    description="Which BERT-large matmuls keep both inputs in L2, per GPU.",
)

EXPLORATIONS = [TILE_TRAFFIC, ROOFLINE, WAVES, L2_FIT]


def l2_sizes_table() -> pd.DataFrame:
    """L2 and shared memory per SM of the chapter's GPUs, from the hardware table."""
    rows = [hardware.get(n) for n in L2_GPUS]
    return pd.DataFrame({"GPU": [a.name for a in rows], "architecture": [a.architecture for a in rows],
                         "year": [a.year for a in rows],
                         "L1/shared per SM (KiB)": [a.shared_mem_per_sm_kib for a in rows],
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


HIERARCHY_GPUS = ("V100 SXM2 16GB", "RTX 2080 Ti", "A100 SXM4 40GB", "RTX 3090", "RTX 4090", "H100 SXM5", "B200")
LEVELS = ("shared", "l1", "l2", "global")


def hierarchy_table() -> pd.DataFrame:
    """Capacity and bandwidth of each level for the chapter's GPUs (hardware table; registers: 256 KiB per SM)."""
    rows = [hardware.get(n) for n in HIERARCHY_GPUS]
    return pd.DataFrame({"GPU": [a.name for a in rows], "SMs": pd.array([a.sm_count for a in rows], dtype="Int64"),
                         "L1/shared per SM (KiB)": [a.shared_mem_per_sm_kib for a in rows],
                         "L2 (MiB)": [a.l2_cache_mib for a in rows],
                         "memory (GiB)": [a.memory_gib for a in rows],
                         "bandwidth (GB/s)": [a.memory_bandwidth_gbs for a in rows]}).set_index("GPU")


def latency_table() -> pd.DataFrame:
    """Preferred measured latency in cycles per architecture and memory level (gpumodel/data/latencies.csv)."""
    from .. import measured

    rows = [r for r in measured.latencies() if r["preferred"] and r["quantity"] in LEVELS]
    table = pd.DataFrame(rows).pivot_table(index="architecture", columns="quantity", values="cycles")
    order = [a for a in measured.architectures() if a in table.index]
    return table.reindex(index=order, columns=[c for c in LEVELS if c in table.columns])


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
    ).properties(width=420, height=320)


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


#: RRZE's STREAM runs used PCIe boards; each maps to the table row with the same memory system.
STREAM_HARDWARE = {"V100 PCIe 16GB": "V100 SXM2 16GB", "A100 40GB": "A100 SXM4 40GB",
                   "H100 PCIe": "H100 PCIe", "MI300X": "MI300X"}


def stream_table() -> pd.DataFrame:
    """Best measured streaming bandwidth (read, scale or triad) against the datasheet peak."""
    from .. import measured

    rows = []
    for hw, name in STREAM_HARDWARE.items():
        values = [r["value"] for r in measured.measurements("stream.") if r["hardware"] == hw]
        peak = hardware.get(name).memory_bandwidth_gbs
        rows.append({"GPU (measured board)": hw, "datasheet (GB/s)": peak, "best measured (GB/s)": max(values),
                     "fraction of datasheet": round(max(values) / peak, 2)})
    return pd.DataFrame(rows).set_index("GPU (measured board)")


def deepbench_table(gpu: str = "V100 SXM2 16GB") -> pd.DataFrame:
    """DeepBench cuBLAS FP16 GEMM throughput against the roofline bound for the same shape."""
    from .. import measured

    acc = hardware.get(gpu)
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
