"""Explorations, tables and figures of the chapter :doc:`/book/tensor_cores`."""
from __future__ import annotations

import re

import altair as alt
import numpy as np
import pandas as pd

from .. import _checks, charts, hardware, measured, memory
from .. import tensor_cores as tc
from ..explore import Choice, Exploration, Slider, check_direct_calls

#: Latency sets offered by the cycle-budget exploration: the post's table first, then measured
#: architectures that have a shared-memory or L1 latency (Turing has neither, so it is left out).
LATENCY_SETS = ("Ampere (Dettmers 2023)", "Volta", "Ampere", "Ada", "Hopper", "Blackwell")
METHOD_LABELS = {"ffma": "FFMA", "tensor_core": "Tensor Cores", "async_copy": "TC + async copy"}
#: Fixed end of the cycle axis per matrix size, so that moving the other controls moves the bars.
AXIS_MAX = {32: 2500.0, 64: 13000.0}
PARTS = ("global", "shared", "compute")
PART_COLORS = (charts.BLUE, charts.ORANGE, charts.GREEN)
#: The Tensor Core latency choices: 1 cycle (the post, a throughput) or the mma latency measured on A100.
MMA_CHOICES = (1.0, measured.latency("Ampere", "mma_fp16"))


def cycle_budget(latencies, memory_level, mma_latency, size, sms, tensor_cores_per_sm):
    """Cycles of the post's matmul per method, split into global, shared and compute (one row per method and part)."""
    preset = tc.latency_preset(latencies, memory_level, "throughput")
    preset["mma_latency"] = float(mma_latency)
    rows = {"method": [], "part": [], "cycles": [], "total": []}
    for method in tc.METHODS:
        parts = tc.matmul_cycle_breakdown(size, sms, 8, tensor_cores_per_sm, method=method, **preset)
        total = float(sum(parts.values()))
        for part in PARTS:
            rows["method"].append(METHOD_LABELS[method])
            rows["part"].append(part)
            rows["cycles"].append(float(parts[part]))
            rows["total"].append(total)
    rows["axis_max"] = AXIS_MAX[int(size)]
    return rows


def cycle_budget_chart(base):
    y = alt.Y("method:N", title=None, sort=list(METHOD_LABELS.values()))
    bars = base.mark_bar(clip=True).encode(
        x=alt.X("sum(cycles):Q", title="cycles (SM clock ticks)"), y=y,
        color=alt.Color("part:N", title="waiting for", sort=list(PARTS),
                        scale=alt.Scale(domain=list(PARTS), range=list(PART_COLORS)),
                        legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("method:N"), alt.Tooltip("part:N"), alt.Tooltip("cycles:Q", format=",.0f")])
    # The totals sit at the fixed axis end (axis_max), which also fixes the x domain for one matrix size.
    totals = base.transform_filter("datum.part == 'compute'").transform_calculate(
        label="format(datum.total, ',.0f') + ' cycles'").mark_text(align="left", dx=8).encode(
        x=alt.X("axis_max:Q"), y=y, text=alt.Text("label:N"))
    # Right padding keeps room for the longest label whatever the first state drew.
    return (bars + totals).properties(width=460, height=150, padding={"left": 5, "top": 5, "bottom": 5, "right": 90})


CYCLE_BUDGET = Exploration(
    name="cycle_budget",
    compute=cycle_budget,
    params=(Choice("latencies", "latency table", LATENCY_SETS, "Ampere (Dettmers 2023)"),
            Choice("memory_level", "global load from", tc.MEMORY_LEVELS, "l2"),
            Choice("mma_latency", "Tensor Core op (cycles)", MMA_CHOICES, 1.0),
            Choice("size", "matrix size", (32, 64), 32),
            Choice("sms", "SMs", (4, 8, 16), 8),
            Choice("tensor_cores_per_sm", "Tensor Cores per SM (counts ops, not work)", (4, 8), 8)),
    chart=cycle_budget_chart,
    description="Stacked bar chart: one bar per method (with and without Tensor Cores), its length the "
                "cycles a size x size matmul takes (x, SM clock ticks), split into waiting for global "
                "memory, shared memory and compute (8 warps per SM), with the total printed at the end.",
)


def double_buffering(k_tiles, load_cycles, compute_cycles):
    """Cycles per K tile of a serial and a double-buffered loop, split into Tensor Core busy and idle."""
    rows = {"loop": [], "state": [], "per_tile": [], "total": [], "utilization": []}
    for loop, flag in (("serial", False), ("double buffered", True)):
        total = float(tc.tiled_loop_cycles(k_tiles, load_cycles, compute_cycles, flag))
        util = float(tc.tensor_core_utilization(k_tiles, load_cycles, compute_cycles, flag))
        busy = float(compute_cycles)
        for state, value in (("busy", busy), ("idle", total / k_tiles - busy)):
            rows["loop"].append(loop)
            rows["state"].append(state)
            rows["per_tile"].append(value)
            rows["total"].append(total)
            rows["utilization"].append(util)
    return rows


def double_buffering_chart(base):
    y = alt.Y("loop:N", title=None, sort=["serial", "double buffered"])
    x_scale = alt.Scale(domain=[0, 800])
    bars = base.mark_bar().encode(
        x=alt.X("sum(per_tile):Q", title="cycles per K tile (total / k)", scale=x_scale),
        y=y,
        color=alt.Color("state:N", title="Tensor Cores", sort=["busy", "idle"],
                        scale=alt.Scale(domain=["busy", "idle"], range=[charts.GREEN, "#d9d9d9"]),
                        legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("loop:N"), alt.Tooltip("state:N"), alt.Tooltip("per_tile:Q", format=",.1f"),
                 alt.Tooltip("total:Q", format=",.0f", title="total cycles")])
    labels = base.transform_filter("datum.state == 'idle'").transform_calculate(
        label="format(datum.total, ',.0f') + ' cycles, busy ' + format(datum.utilization, '.0%')").mark_text(
        align="left", dx=6).encode(x=alt.value(462), y=y, text=alt.Text("label:N"))
    return (bars + labels).properties(width=460, height=110, padding={"left": 5, "top": 5, "bottom": 5, "right": 60})


DOUBLE_BUFFERING = Exploration(
    name="double_buffering",
    compute=double_buffering,
    params=(Choice("k_tiles", "K tiles", (1, 2, 4, 8, 16, 32), 8),
            Slider("load_cycles", "load per tile", 0, 400, 50, 200, unit="cycles", integer=True),
            Slider("compute_cycles", "compute per tile", 50, 400, 50, 100, unit="cycles", integer=True)),
    chart=double_buffering_chart,
    description="Stacked bar chart: one bar for the serial loop (load, then compute) and one for the "
                "double-buffered loop (load the next tile while computing), giving cycles per K tile "
                "(x) split into Tensor Cores busy (green) and idle (grey), with total cycles and the "
                "busy share printed beside each bar.",
)

#: GPUs and tiles of the per-SM feed exploration (GPUs with a sourced boost clock).
FEED_GPUS = ("V100 SXM2 16GB", "A100 SXM4 40GB", "RTX 4090", "H100 SXM5")
FEED_TILES = ("64x64", "128x128", "128x256", "256x128")
FEED_PARTS = ("Tensor Cores", "DRAM, own strips", "DRAM, shared by a wave")
#: The output the wave in the feed exploration covers, and the K-step of one tile.
FEED_OUTPUT = 8192
FEED_TILE_K = 64


def sm_feed(gpu, tile):
    """Cycles per K-step of one SM: the Tensor Cores' work against DRAM loads, alone or shared by a wave."""
    acc = hardware.get(gpu)
    tm, tn = (int(x) for x in tile.split("x"))
    bpc, fpc = _per_sm_rates(acc)
    r, c = memory.wave_shape(FEED_OUTPUT, FEED_OUTPUT, tm, tn, acc.sm_count)
    alone = tc.k_step_cycles(tm, tn, FEED_TILE_K, bpc, fpc)
    shared = tc.k_step_cycles(tm, tn, FEED_TILE_K, bpc, fpc, share_a=c, share_b=r)
    cycles = [float(alone["compute"]), float(alone["load"]), float(shared["load"])]
    return {"part": list(FEED_PARTS), "cycles": cycles,
            "label": [f"{v:,.0f} cycles" for v in cycles]}


def sm_feed_chart(base):
    y = alt.Y("part:N", title=None, sort=list(FEED_PARTS))
    x = alt.X("cycles:Q", title="cycles per K-step of 64 (one SM)",
              scale=alt.Scale(type="log", domain=[10, 20000]))
    bars = base.mark_bar().encode(
        x=x, y=y, color=alt.Color("part:N", legend=None, sort=list(FEED_PARTS),
                                  scale=alt.Scale(range=[charts.GREEN, "#999999", charts.BLUE])),
        tooltip=["part:N", alt.Tooltip("cycles:Q", format=",.0f")])
    text = base.mark_text(align="left", dx=4).encode(x=x, y=y, text="label:N")
    return (bars + text).properties(width=420, height=120,
                                    padding={"left": 5, "top": 5, "bottom": 5, "right": 80})


SM_FEED = Exploration(
    name="sm_feed",
    compute=sm_feed,
    params=(Choice("gpu", "GPU", FEED_GPUS, "H100 SXM5"),
            Choice("tile", "output tile", FEED_TILES, "128x128")),
    chart=sm_feed_chart,
    description="Bar chart, log axis: cycles per K-step of 64 on one SM (x) for three rows: the "
                "Tensor Cores' work, the strips' DRAM load when fetched alone, and the same load shared "
                "by a wave through L2, each bar labelled with its cycles.",
)

EXPLORATIONS = [SM_FEED, CYCLE_BUDGET, DOUBLE_BUFFERING]


#: Most K tiles a timeline draws (one bar per tile and unit; the chart shows a handful).
MAX_TIMELINE_TILES = 1000


def loop_timeline(k_tiles=4, load_cycles=200, compute_cycles=100):
    """Gantt chart of a serial and a double-buffered loop over ``k_tiles`` tiles: when each tile
    loads and computes.

    ``k_tiles`` is a whole number from 1 to :data:`MAX_TIMELINE_TILES`; the cycles are
    numbers >= 0.
    """
    k_tiles = _checks.count("k_tiles", k_tiles, MAX_TIMELINE_TILES)
    load_cycles, compute_cycles = (
        float(_checks.non_negative(name, _checks.scalar(name, value)))
        for name, value in (("load_cycles", load_cycles), ("compute_cycles", compute_cycles)))
    rows = []
    for loop, flag in (("serial", False), ("double buffered", True)):
        load_start, load_end, compute_end, previous_end = 0.0, 0.0, 0.0, 0.0
        for i in range(int(k_tiles)):
            if flag:  # two buffers: tile i loads once tile i-1 has loaded and tile i-2's buffer is free
                load_start = 0.0 if i == 0 else max(load_end, previous_end)
            else:
                load_start = compute_end
            previous_end = compute_end
            load_end = load_start + load_cycles
            compute_start = max(load_end, compute_end)
            compute_end = compute_start + compute_cycles
            rows.append({"loop": loop, "unit": "load (async copy)", "start": load_start, "end": load_end,
                         "tile": f"{i + 1}"})
            rows.append({"loop": loop, "unit": "compute (Tensor Cores)", "start": compute_start,
                         "end": compute_end, "tile": f"{i + 1}"})
    table = pd.DataFrame(rows)
    for loop, flag in (("serial", False), ("double buffered", True)):
        end = table.loc[table["loop"] == loop, "end"].max()
        assert np.isclose(end, tc.tiled_loop_cycles(k_tiles, load_cycles, compute_cycles, flag))
    return table


def loop_timeline_chart(k_tiles=4, load_cycles=200, compute_cycles=100):
    """The timeline of :func:`loop_timeline` as one row per loop and unit."""
    table = loop_timeline(k_tiles, load_cycles, compute_cycles)
    table["row"] = table["loop"] + ": " + table["unit"].str.split(" ").str[0]
    order = [f"{loop}: {unit}" for loop in ("serial", "double buffered") for unit in ("load", "compute")]
    base = alt.Chart(table)
    bars = base.mark_bar(stroke="white").encode(
        x=alt.X("start:Q", title="cycles", axis=alt.Axis(tickCount=6)), x2="end:Q",
        y=alt.Y("row:N", title=None, sort=order),
        color=alt.Color("unit:N", title=None, legend=alt.Legend(orient="bottom"),
                        scale=alt.Scale(domain=["load (async copy)", "compute (Tensor Cores)"],
                                        range=[charts.BLUE, charts.GREEN])),
        tooltip=["loop:N", "unit:N", "tile:N", "start:Q", "end:Q"])
    text = base.mark_text(color="white", fontSize=10).encode(
        x=alt.X("mid:Q"), y=alt.Y("row:N", sort=order), text="tile:N").transform_calculate(
        mid="(datum.start + datum.end) / 2")
    return (bars + text).properties(
        width=460, height=160,
        description=f"Timeline (Gantt chart) of a loop over {int(k_tiles)} K tiles, {load_cycles:g} cycles to "
                    f"load and {compute_cycles:g} to compute each: four rows (serial load, serial compute, "
                    "double-buffered load, double-buffered compute), one bar per tile from its start to its "
                    "end cycle (x), labelled with the tile number.")


def latency_table() -> pd.DataFrame:
    """Preferred latencies (cycles) per architecture for the quantities the cycle model uses."""
    quantities = ("global", "l2", "l1", "shared", "ffma", "mma_fp16")
    rows = [r for r in measured.latencies() if r["preferred"] and r["quantity"] in quantities]
    table = pd.DataFrame(rows).pivot_table(index="architecture", columns="quantity", values="cycles")
    order = [a for a in measured.architectures() if a in table.index]
    return table.reindex(index=order, columns=[q for q in quantities if q in table.columns])


def preset_cycles_table(memory_levels=tc.MEMORY_LEVELS) -> pd.DataFrame:
    """The post's 32x32 example (8 SMs, 8 warps, 8 Tensor Cores per SM) under each latency set and memory level."""
    memory_levels = _checks.items("memory_levels", memory_levels,
                                  lambda name, level: _checks.choice(name, level, tc.MEMORY_LEVELS))
    out = []
    example = {k: tc.POST_EXAMPLE[k] for k in ("size", "sms", "warps_per_sm", "tensor_cores_per_sm")}
    for arch in LATENCY_SETS:
        for level in memory_levels:
            preset = tc.latency_preset(arch, level, "throughput")
            row = {"latencies": arch, "global load from": level}
            for method in tc.METHODS:
                row[METHOD_LABELS[method]] = round(float(tc.matmul_cycles(**example, **preset, method=method)))
            out.append(row)
    return pd.DataFrame(out).set_index(["latencies", "global load from"])


#: (latency set, memory level, Tensor Core latency) rows of :func:`mma_latency_table`.
MMA_CASES = (("Ampere (Dettmers 2023)", "l2", "throughput"), ("Ampere (Dettmers 2023)", "global", "throughput"),
             ("Ampere", "l2", "throughput"), ("Ampere", "l2", "measured"),
             ("Ampere", "global", "throughput"), ("Ampere", "global", "measured"))


def mma_latency_table() -> pd.DataFrame:
    """The post's example with Tensor Cores, charging the Tensor Core op 1 cycle or the A100's measured mma latency."""
    out = []
    for arch, level, choice in MMA_CASES:
        preset = tc.latency_preset(arch, level, choice)
        out.append({"latencies": arch, "global load from": level, "Tensor Core op": choice,
                    "mma latency (cycles)": preset["mma_latency"],
                    "cycles with Tensor Cores": round(float(tc.matmul_cycles(**(tc.POST_EXAMPLE | preset),
                                                                              method="tensor_core")))})
    return pd.DataFrame(out).set_index(["latencies", "global load from", "Tensor Core op"])


def _rate_basis(architecture: str) -> str:
    """Where the FLOP per Tensor Core per cycle of ``architecture`` comes from, per TENSOR_CORE_SOURCES.

    "back-solved" rates were derived from a datasheet peak, so their ratio is 1 by construction;
    "not re-read" rates come from a whitepaper the book did not check; "whitepaper" rates were read.
    """
    source = tc.TENSOR_CORE_SOURCES[tc.tensor_core_family(architecture)]
    if "derived" in source:
        return "back-solved"
    if "not re-read" in source:
        return "not re-read"
    return "whitepaper"


def peak_table() -> pd.DataFrame:
    """Derived against published dense FP16 tensor TFLOPS for every accelerator of the hardware table that has the numbers.

    The "rate from" column says where the FLOP per Tensor Core per cycle comes from: only the
    "whitepaper" rows are independent checks of the datasheet; a "back-solved" row matches by construction.
    """
    rows = tc.derived_vs_published()
    accs = {a.name: a for a in hardware.accelerators()}
    return pd.DataFrame({
        "accelerator": [r["name"] for r in rows],
        "SMs": [accs[r["name"]].sm_count for r in rows],
        "TC/SM": [accs[r["name"]].tensor_cores_per_sm for r in rows],
        "FLOP/TC/cycle": [int(tc.flop_per_tensor_core_cycle(r["architecture"], bool(accs[r["name"]].geforce_half_rate)))
                          for r in rows],
        "peak clock (MHz)": [accs[r["name"]].peak_clock_mhz for r in rows],
        "derived TFLOPS": [round(r["derived_tflops"], 1) for r in rows],
        "published TFLOPS": [r["published_tflops"] for r in rows],
        "derived / published": [round(r["ratio"], 3) for r in rows],
        "rate from": [_rate_basis(r["architecture"]) for r in rows],
    }).set_index("accelerator")


def warps_table() -> pd.DataFrame:
    """Resident warps and threads per SM by architecture, from the hardware table."""
    rows = {}
    for acc in hardware.accelerators():
        if acc.warps_per_sm is None:
            continue
        base, rest = acc.architecture.split(" (", 1)
        family = f"{base} ({rest.rstrip(')').split(',')[0]})"
        rows.setdefault(family, {"architecture": family, "example": acc.name,
                                 "warps per SM": acc.warps_per_sm,
                                 "threads per SM": acc.warps_per_sm * tc.WARP_SIZE})
    return pd.DataFrame(list(rows.values())).set_index("architecture")


#: GPUs of the per-SM balance table, oldest first.
#: Largest tile side :func:`sm_balance_table` takes.
MAX_TILE = 2**14
BALANCE_GPUS = ("V100 SXM2 16GB", "A100 SXM4 40GB", "H100 SXM5", "B200")


def _per_sm_rates(acc) -> tuple[float, float]:
    """DRAM bytes and dense 16-bit Tensor Core FLOP per cycle per SM of ``acc`` at its boost clock."""
    clock = acc.peak_clock_mhz * 1e6
    return (float(tc.per_sm_cycle(acc.bandwidth, acc.sm_count, clock)),
            float(tc.per_sm_cycle(acc.peak_flops(), acc.sm_count, clock)))


def sm_balance_table(tile_m=128, tile_n=128, tile_k=64, gpus=BALANCE_GPUS) -> pd.DataFrame:
    """Per SM and cycle: what DRAM delivers, what the Tensor Cores consume, and one K-step of a tile.

    A GPU without a sourced boost clock gets blank per-cycle columns; its compute / load ratio
    (tile intensity over ridge point) does not depend on the clock and is still given.
    """
    from .. import memory

    gpus = _checks.items("gpus", gpus, lambda name, gpu: _checks.choice(name, gpu, hardware.names()))
    tile_m, tile_n, tile_k = (_checks.count(name, size, MAX_TILE) for name, size in
                              (("tile_m", tile_m), ("tile_n", tile_n), ("tile_k", tile_k)))
    rows = []
    for name in gpus:
        acc = hardware.get(name)
        ratio = float(memory.output_tile_intensity(tile_m, tile_n) / acc.ridge_point())
        row = {"GPU": name, "DRAM bytes/cycle/SM": np.nan, "Tensor FLOP/cycle/SM": np.nan,
               "load cycles": np.nan, "compute cycles": np.nan, "compute / load": round(ratio, 2)}
        if acc.peak_clock_mhz is not None:
            bpc, fpc = _per_sm_rates(acc)
            step = tc.k_step_cycles(tile_m, tile_n, tile_k, bpc, fpc)
            row.update({"DRAM bytes/cycle/SM": round(bpc, 1), "Tensor FLOP/cycle/SM": round(fpc),
                        "load cycles": round(float(step["load"])),
                        "compute cycles": round(float(step["compute"]))})
        rows.append(row)
    table = pd.DataFrame(rows).set_index("GPU")
    for column in ("Tensor FLOP/cycle/SM", "load cycles", "compute cycles"):
        table[column] = table[column].astype("Int64")
    return table


def gemm_peak_fractions() -> pd.DataFrame:
    """The best measured matrix multiplications as a fraction of the datasheet dense peak.

    The GH200's GPU is the GH100 die of the H100 SXM5 and is held to that row's peak
    (``hardware_aliases.csv``); the software column is the PyTorch or ROCm version the
    measurement names in its detail (blank where it names none).
    """
    from ..calibration import PEAK_ALIASES

    cases = (("deepbench.v100.fp16.4096x7000x4096.nn", "V100 SXM2 16GB", "fp16"),
             ("mamf.a100_sxm.bf16", "A100 SXM4 80GB", "bf16"),
             ("mamf.h100_sxm.bf16", "H100 SXM5", "bf16"),
             ("mamf.h100_sxm.fp8", "H100 SXM5", "fp8"),
             ("mamf.gh200.bf16", "GH200", "bf16"),
             ("mamf.gh200.fp8", "GH200", "fp8"),
             ("mamf.b200.bf16", "B200", "bf16"),
             ("mamf.mi300x.bf16", "MI300X", "bf16"))
    details = {r["id"]: r["detail"] for r in measured.measurements()}
    rows = []
    for key, name, dtype in cases:
        value = measured.measurement(key)
        peak = hardware.get(PEAK_ALIASES.get(name, name)).peak_flops(dtype) / 1e12
        found = re.search(r"(torch [0-9][^;, ]*|ROCm [0-9.]+)", details[key])
        rows.append({"measurement": key, "GPU": name, "dtype": dtype,
                     "software": found.group(1) if found else "",
                     "measured (TFLOPS)": value, "peak (TFLOPS)": peak,
                     "fraction of peak": round(value / peak, 3)})
    return pd.DataFrame(rows).set_index("measurement")


def l2_bandwidth_scaled(measurement: str, measured_on: str, target: str,
                        measured_clock_mhz=None) -> float:
    """A measured L2 bandwidth (GB/s) carried over to another board of the same chip, in TB/s.

    Assumes L2 bandwidth grows with the number of SMs times the clock: a scaling rule, not a
    measurement, used to compare an H100 PCIe figure with the H100 SXM5. The target runs at its
    peak (datasheet) clock; the measurement is taken to have run at ``measured_clock_mhz``, by
    default the source board's peak clock (the result files record no clock): 10.1 TB/s from
    the H100 PCIe at 1,620 MHz, 9.4 TB/s if it ran at its 1,755 MHz maximum.
    """
    source = hardware.get(_checks.choice("measured_on", measured_on, hardware.names()))
    dest = hardware.get(_checks.choice("target", target, hardware.names()))
    try:
        value = measured.measurement(_checks.text("measurement", measurement))
    except ValueError as err:
        raise ValueError(f"measurement: {err}") from None
    if measured_clock_mhz is None:
        clock = source.peak_clock_mhz
    else:
        clock = _checks.scalar("measured_clock_mhz", measured_clock_mhz)
        if not 1.0 <= clock <= 1e5:
            raise ValueError(f"measured_clock_mhz must be a clock in MHz from 1 to 100000 "
                             f"(got {clock!r})")
    ratio = (dest.sm_count * dest.peak_clock_mhz) / (source.sm_count * clock)
    return value / 1000 * ratio


check_direct_calls(globals())
