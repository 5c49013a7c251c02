"""Explorations, tables and figures of the chapter :doc:`/book/low_precision`."""
from __future__ import annotations

from functools import lru_cache

import altair as alt
import numpy as np
import pandas as pd

from .. import _checks, charts, hardware, measured, memory, precision, throughput
from ..explore import Choice, Exploration, Slider, check_direct_calls

#: The chapter's synthetic gradients: magnitudes 10**N(-6, 1.5) (most far below 1, spread over decades).
GRAD_LOG10_MEAN, GRAD_LOG10_STD, GRAD_N = -6.0, 1.5, 20_000
#: Formats a reader can train in (loss-scaling exploration).
TRAIN_FORMATS = ("fp16", "bf16", "fp8_e5m2", "fp8_e4m3")
#: Formats small enough to list every value (number-line exploration).
LINE_FORMATS = ("fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "int4", "nf4")
#: The activation matrix of the outlier experiment: tokens x features @ features x outputs.
ROWS, COLS, OUTS, N_OUTLIER_COLS = 128, 256, 64, 4
#: Largest outlier scale: the outlier columns stay far inside FP16's range (LLM.int8() keeps them in 16-bit).
MAX_OUTLIER_SCALE = 1000.0
#: Most samples a 4-bit table draws per distribution (the chapter's have 65,536).
MAX_SAMPLES = 2**20
#: Largest |log2(loss scale)| a sweep takes (2**1000 is still a float64).
MAX_LOG2_SCALE = 1000


def format_frame(names=precision.FORMATS) -> pd.DataFrame:
    """:func:`gpumodel.precision.format_table` as a table, numbers printed to 4 significant figures."""
    def fmt(v):
        if v is None:
            return ""
        return f"{v:,.0f}" if float(v).is_integer() and abs(v) < 1e6 else f"{v:.4g}"

    if isinstance(names, (list, tuple, np.ndarray)) and len(names) == 0:
        raise ValueError("names must be a non-empty list of format names (got an empty one)")
    rows = precision.format_table(names)
    return pd.DataFrame({
        "format": [r["name"] for r in rows], "bits": [r["bits"] for r in rows],
        "exponent": [fmt(r["exponent_bits"]) for r in rows],
        "mantissa": [fmt(r["mantissa_bits"]) for r in rows],
        "max": [fmt(r["max"]) for r in rows], "smallest normal": [fmt(r["smallest_normal"]) for r in rows],
        "smallest subnormal": [fmt(r["smallest_subnormal"]) for r in rows],
        "epsilon": [fmt(r["eps"]) for r in rows], "past max": [r["overflow"] for r in rows]}).set_index("format")


# --- every value of a small format ------------------------------------------------------------

def number_line(fmt):
    """Every finite non-negative value of ``fmt``, with its kind (zero, subnormal, normal) and gap to the next."""
    values = precision.representable_values(fmt)
    values = values[values >= 0]
    info = precision.format_info(fmt)
    kind = np.where(values == 0, "zero", np.where(values < info["smallest_normal"], "subnormal", "normal"))
    if info["kind"] != "float":
        kind = np.where(values == 0, "zero", "integer" if info["kind"] == "int" else "code value")
    gap = np.append(np.diff(values), np.nan)
    return {"value": values, "kind": kind, "relative_gap": gap / np.where(values > 0, values, np.nan)}


KINDS = ["zero", "subnormal", "normal", "integer", "code value"]
KIND_COLORS = [charts.BLACK, charts.ORANGE, charts.BLUE, charts.GREEN, charts.PURPLE]


def number_line_chart(base):
    color = alt.Color("kind:N", title="value", scale=alt.Scale(domain=KINDS, range=KIND_COLORS),
                      legend=alt.Legend(orient="bottom"))
    tooltip = [alt.Tooltip("value:Q", format=".6g"), "kind:N", alt.Tooltip("relative_gap:Q", format=".3f")]
    linear = base.mark_tick(thickness=1.5, size=28).encode(
        x=alt.X("value:Q", title="value (linear axis)"), color=color, tooltip=tooltip
    ).properties(width=520, height=40)
    log = base.transform_filter("datum.value > 0").mark_tick(thickness=1.5, size=28).encode(
        x=alt.X("value:Q", title="value (log axis)", scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(format=".3~g")), color=color, tooltip=tooltip
    ).properties(width=520, height=40)
    gap = base.transform_filter("datum.value > 0 && isValid(datum.relative_gap)").mark_point(filled=True).encode(
        x=alt.X("value:Q", title="value (log axis)", scale=alt.Scale(type="log", base=2), axis=alt.Axis(format=".3~g")),
        y=alt.Y("relative_gap:Q", title="gap to next / value", scale=alt.Scale(type="log", base=2)),
        color=color, shape=alt.Shape("kind:N", title="value", scale=alt.Scale(domain=KINDS),
                                     legend=alt.Legend(orient="bottom")),
        tooltip=tooltip).properties(width=520, height=160)
    return alt.vconcat(linear, log, gap)


NUMBER_LINE = Exploration(
    name="number_line",
    compute=number_line,
    params=(Choice("fmt", "format", LINE_FORMATS, "fp8_e4m3"),),
    chart=number_line_chart,
    description="Three stacked panels for one 8- or 4-bit format: every non-negative value as a tick "
                "on a linear axis, then on a log axis, then a scatter plot of the relative gap to the "
                "next value (y, log) against the value (x, log); colour (and, in the scatter, marker "
                "shape) gives the kind of value: zero, subnormal, normal, integer or code value.",
)


# --- loss scaling -----------------------------------------------------------------------------

def gradients(n=GRAD_N) -> np.ndarray:
    """The chapter's seeded gradient sample of ``n`` values (the chapter's has 20,000; each size computed once).

    Every size draws from the same distribution with the same seed; a larger sample reaches
    further into its tails, which is what the loss-scaling section checks.
    """
    return _gradients(_checks.count("n", n, MAX_SAMPLES))


@lru_cache(maxsize=4)
def _gradients(n: int) -> np.ndarray:
    return precision.gradient_sample(n, GRAD_LOG10_MEAN, GRAD_LOG10_STD, seed=0)


BIN_WIDTH = 0.5
X_DOMAIN = (-14.0, 14.0)


@lru_cache(maxsize=1)
def _log_histogram():
    logs = np.log10(np.abs(gradients()))
    edges = np.arange(np.floor(logs.min()), np.ceil(logs.max()) + BIN_WIDTH, BIN_WIDTH)
    counts, _ = np.histogram(logs, edges)
    keep = counts > 0
    return (edges[:-1] + BIN_WIDTH / 2)[keep], (counts / logs.size)[keep]


def loss_scaling(log2_scale, fmt):
    """Histogram of log10 |gradient x 2**log2_scale|, each bin marked by what a cast to ``fmt`` does to it."""
    scale = 2.0 ** float(log2_scale)
    centers, share = _log_histogram()
    shifted = centers + np.log10(scale)
    q = precision.quantize(10.0**shifted, fmt)
    info = precision.format_info(fmt)
    fate = np.where(q == 0, "flushed to zero", np.where(~np.isfinite(q) | (10.0**shifted > info["max"]),
                                                       "overflow", "kept"))
    over, under = precision.overflow_underflow_fractions(gradients(), fmt, scale)
    lo, hi = np.clip(np.log10([info["smallest_subnormal"], info["max"]]), *X_DOMAIN)
    label = f"loss scale 2^{int(log2_scale)}: {100 * over:.2f}% overflow, {100 * under:.2f}% flushed to zero"
    return {"log10_magnitude": np.append(shifted, [lo, hi]), "share": np.append(share, [0.0, 0.0]),
            "fate": np.append(fate, ["limit", "limit"]), "label": [""] * (shifted.size + 1) + [label]}


FATES = ["flushed to zero", "kept", "overflow"]


def loss_scaling_chart(base):
    x = alt.X("log10_magnitude:Q", title="log10 |scaled gradient|", scale=alt.Scale(domain=list(X_DOMAIN)))
    bars = base.transform_filter("datum.fate != 'limit'").mark_bar(width=7).encode(
        x=x, y=alt.Y("share:Q", title="share of gradients", scale=alt.Scale(domain=[0, 0.16])),
        color=alt.Color("fate:N", title=None, scale=alt.Scale(domain=FATES, range=[charts.ORANGE, charts.BLUE, charts.VERMILLION]),
                        legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("log10_magnitude:Q", format=".2f"), alt.Tooltip("share:Q", format=".4f"), "fate:N"])
    limits = base.transform_filter("datum.fate == 'limit'").mark_rule(strokeDash=[4, 3], color="#555555").encode(x=x)
    text = base.transform_filter("datum.label != ''").mark_text(
        align="left", fontSize=12).encode(x=alt.value(4), y=alt.value(8), text="label:N")
    return (bars + limits + text).properties(width=520, height=240)


LOSS_SCALING = Exploration(
    name="loss_scaling",
    compute=loss_scaling,
    params=(Slider("log2_scale", "log2(loss scale)", 0, 32, 1, 0, grid_step=2, integer=True),
            Choice("fmt", "format", TRAIN_FORMATS, "fp16")),
    chart=loss_scaling_chart,
    description="Histogram: the share of gradients (y) at each log10 magnitude after scaling by the "
                "loss scale (x), coloured by their fate when cast to the format: flushed to zero (left "
                "of the lower dashed line), kept, or overflowing (right of the upper dashed line).",
)


def scale_sweep(fmt, log2_scales=np.arange(0, 33), n=GRAD_N) -> pd.DataFrame:
    """Overflow and flush-to-zero fractions of the chapter's gradients (:func:`gradients` of ``n`` values) against log2(loss scale)."""
    fmt = _checks.choice("fmt", fmt, precision.FORMATS)
    scales = _checks.in_range("log2_scales", log2_scales, -MAX_LOG2_SCALE, MAX_LOG2_SCALE)
    if scales.ndim != 1 or not scales.size:
        raise ValueError(f"log2_scales must be a non-empty 1-D sequence (got {log2_scales!r:.60})")
    over, under = precision.overflow_underflow_fractions(gradients(n), fmt, 2.0 ** np.asarray(log2_scales, float))
    return pd.DataFrame({"log2_scale": log2_scales, "overflow": over, "flushed": under})


def best_scale(fmt, log2_scales=np.arange(0, 41), n=GRAD_N) -> tuple[int, float]:
    """The log2(loss scale) that flushes the fewest of the chapter's gradients (``n`` of them) to zero without any overflow, and that fraction.

    An overflow is fatal (inf or NaN in the gradients skips the step), so only scales without one
    are usable; among those with the fewest flushed values, the smallest is returned.
    """
    sweep = scale_sweep(fmt, log2_scales, n)
    scales = sweep["log2_scale"].to_numpy(dtype=float)
    if np.any(scales != np.floor(scales)):
        raise ValueError(f"log2_scales must be whole numbers: best_scale returns one as an int "
                         f"(got {log2_scales!r:.60})")
    safe = sweep[sweep["overflow"] == 0].reset_index(drop=True)
    if safe.empty:
        raise ValueError(f"every scale of log2_scales overflows some gradient in {fmt}: add smaller ones")
    row = safe.iloc[int(np.argmin(safe["flushed"].to_numpy()))]
    return int(row["log2_scale"]), float(row["flushed"])


#: Most steps of a synthetic loss-scaling run (the chapter's has 3,000).
MAX_RUN_STEPS = 10**6


def step_peaks(steps=3000, seed=1) -> np.ndarray:
    """Largest gradient magnitude per step: around 1e-2, drifting, with rare spikes (seeded).

    ``steps`` is a whole number from 1 to :data:`MAX_RUN_STEPS` (an array of steps, which numpy
    would read as a shape, is refused naming it).
    """
    steps = _checks.count("steps", steps, MAX_RUN_STEPS)
    rng = np.random.default_rng(_checks.seed(seed))
    drift = np.cumsum(rng.normal(0, 0.01, steps))
    spikes = np.where(rng.random(steps) < 0.002, 2.5, 0.0)
    return 10.0 ** (-2.0 + 0.15 * rng.standard_normal(steps) + drift + spikes)


def dynamic_scaling_frame(fmt="fp16", growth_interval=200, steps=3000) -> pd.DataFrame:
    """A closed-loop dynamic loss-scaling run on :func:`step_peaks`: scale, safe ceiling and skipped steps."""
    steps = _checks.count("steps", steps, MAX_RUN_STEPS)
    fmt = _checks.choice("fmt", fmt, precision.FORMATS)
    peaks = step_peaks(steps)
    scales, flags = precision.dynamic_loss_scale_run(peaks, fmt, growth_interval=growth_interval)
    ceiling = precision.format_info(fmt)["max"] / peaks
    return pd.DataFrame({"step": np.arange(steps), "scale": scales, "log2_scale": np.log2(scales),
                         "ceiling": ceiling, "skipped": flags})


def skip_causes(frame: pd.DataFrame) -> dict:
    """Why each skipped step of a dynamic-scaling run overflowed, and how far below its ceiling the scale ran.

    A skip where the ceiling (the largest scale that would not overflow) fell by more than half
    from the step before is a "spike" in the gradients; any other is "growth": the scale grew, or
    the ceiling drifted, until they met. ``median_headroom`` is the median of log2(ceiling / scale)
    over the steps that did not overflow, in powers of two.
    """
    _checks.table("frame", frame, ("ceiling", "scale", "skipped"))
    dropped = frame["ceiling"] < frame["ceiling"].shift(1).bfill() / 2
    skipped = frame["skipped"]
    clean = frame[~skipped]
    return {"growth": int((skipped & ~dropped).sum()), "spike": int((skipped & dropped).sum()),
            "median_headroom": float(np.median(np.log2(clean["ceiling"] / clean["scale"])))}


def dynamic_scaling_chart(frame: pd.DataFrame):
    """The loss scale per step against the largest scale that does not overflow."""
    _checks.table("frame", frame, ("step", "ceiling", "scale", "skipped"))
    scale = frame["scale"].to_numpy()
    changes = np.flatnonzero(np.diff(scale)) + 1  # the scale is piecewise constant: keep its corners only
    corners = np.union1d(np.union1d(changes, changes - 1), [0, len(frame) - 1])
    long = pd.concat([
        pd.DataFrame({"step": frame["step"].iloc[::10], "value": frame["ceiling"].iloc[::10], "series": "ceiling"}),
        pd.DataFrame({"step": frame["step"].iloc[corners], "value": scale[corners], "series": "scale"})])
    ticks = [2.0**k for k in range(12, 31, 2)]
    axis = alt.Axis(values=ticks, labelExpr="'2^' + format(log(datum.value) / LN2, 'd')")
    y = alt.Y("value:Q", title="loss scale (log axis)", scale=alt.Scale(type="log", base=2), axis=axis)
    lines = alt.Chart(long).mark_line(strokeWidth=1.2).encode(
        x=alt.X("step:Q", title="training step"), y=y,
        color=alt.Color("series:N", title=None, scale=alt.Scale(domain=["ceiling", "scale"], range=["#999999", charts.BLUE]),
                        legend=alt.Legend(orient="bottom", labelExpr="datum.label == 'ceiling' ? "
                                          "'largest scale without overflow' : 'dynamic loss scale'")),
        strokeDash=alt.StrokeDash("series:N", title=None,
                                  scale=alt.Scale(domain=["ceiling", "scale"], range=[[3, 2], [1, 0]]),
                                  legend=alt.Legend(orient="bottom", labelExpr="datum.label == 'ceiling' ? "
                                                    "'largest scale without overflow' : 'dynamic loss scale'")))
    skips = alt.Chart(frame[frame["skipped"]]).mark_point(color=charts.VERMILLION, size=40, filled=True).encode(
        x="step:Q", y=alt.Y("scale:Q", scale=alt.Scale(type="log", base=2), axis=axis))
    return (lines + skips).properties(
        width=520, height=240,
        description=f"Line chart over {len(frame)} training steps (x): the dynamic loss scale (blue, solid, "
                    "log axis y) against the largest scale that does not overflow (grey, dashed); "
                    f"vermillion dots mark the {int(frame['skipped'].sum())} skipped steps.")


# --- outliers and the int8/fp8 matmul ---------------------------------------------------------

@lru_cache(maxsize=1)
def weights() -> np.ndarray:
    """A seeded COLS x OUTS weight matrix, N(0, 1/COLS)."""
    return np.random.default_rng(7).standard_normal((COLS, OUTS)) / np.sqrt(COLS)


#: The matmul methods compared, with the granularity of their scales in the name.
METHODS = ("int8, per row", "LLM.int8() mixed", "int8, per tensor", "fp8 e4m3, per row",
           "fp8 e4m3, per tensor", "fp8 e5m2, per tensor")


@lru_cache(maxsize=64)
def _activations(outlier_scale: float, n_outlier_cols: int) -> tuple:
    """X with its outlier columns, and the exact X @ W (cached, read-only: the model is pure)."""
    X = precision.outlier_activations(ROWS, COLS, n_outlier_cols, outlier_scale, seed=0)
    exact = X @ weights()
    X.setflags(write=False)
    exact.setflags(write=False)
    return X, exact


def _outliers(outlier_scale, n_outlier_cols) -> tuple:
    """:func:`_activations` for checked arguments: a scale in (0, :data:`MAX_OUTLIER_SCALE`] and
    a whole number of columns in [0, COLS]."""
    outlier_scale = _checks.positive("outlier_scale", _checks.scalar("outlier_scale", outlier_scale))
    outlier_scale = float(_checks.in_range("outlier_scale", outlier_scale, 0, MAX_OUTLIER_SCALE))
    n_outlier_cols = _checks.scalar("n_outlier_cols", n_outlier_cols)
    if not 0 <= n_outlier_cols <= COLS or n_outlier_cols != int(n_outlier_cols):
        raise ValueError(f"n_outlier_cols must be a whole number in [0, {COLS}] (got {n_outlier_cols:g})")
    return _activations(outlier_scale, int(n_outlier_cols))


@lru_cache(maxsize=64)
def _threshold_free_errors(outlier_scale: float, n_outlier_cols: int) -> tuple:
    """Errors (%) of the methods that do not depend on LLM.int8()'s threshold (cached: the model is pure)."""
    X, exact = _activations(outlier_scale, n_outlier_cols)
    W = weights()
    approx = (precision.absmax_int8_matmul(X, W), precision.scheme_matmul(X, W, "int8", "per tensor"),
              precision.scheme_matmul(X, W, "fp8_e4m3", "per row"),
              precision.fp8_matmul(X, W, "fp8_e4m3"), precision.fp8_matmul(X, W, "fp8_e5m2"))
    return tuple(100 * precision.matmul_relative_error(a, exact) for a in approx)


@_checks.finite_result
def matmul_errors(outlier_scale, threshold=6.0, n_outlier_cols=N_OUTLIER_COLS) -> dict:
    """Relative error of X @ W for each method, X with ``n_outlier_cols`` outlier features of std ``outlier_scale``."""
    _outliers(outlier_scale, n_outlier_cols)
    return _matmul_errors(outlier_scale, threshold, n_outlier_cols)


def _matmul_errors(outlier_scale, threshold, n_outlier_cols) -> dict:
    X, exact = _activations(float(outlier_scale), int(n_outlier_cols))
    W = weights()
    mixed = 100 * precision.matmul_relative_error(precision.mixed_int8_matmul(X, W, threshold), exact)
    rest = _threshold_free_errors(float(outlier_scale), int(n_outlier_cols))
    return {"method": list(METHODS), "error_pct": [rest[0], mixed, *rest[1:]]}


def outlier_columns(outlier_scale, threshold=6.0, n_outlier_cols=N_OUTLIER_COLS) -> int:
    """How many of the COLS feature columns LLM.int8() keeps in 16-bit (any |value| >= ``threshold``)."""
    X, _ = _outliers(outlier_scale, n_outlier_cols)
    threshold = _checks.scalar("threshold", threshold)
    return int(np.any(np.abs(X) >= threshold, axis=0).sum())


def outlier_errors(outlier_scale, threshold):
    return _matmul_errors(outlier_scale, threshold, N_OUTLIER_COLS)


def outlier_chart(base):
    y = alt.Y("method:N", title=None, sort=list(METHODS))
    x = alt.X("error_pct:Q", title="relative error of X @ W (%)", scale=alt.Scale(domain=[0, 12]))
    bars = base.mark_bar().encode(x=x, y=y, color=alt.Color("method:N", legend=None, sort=list(METHODS)),
                                  tooltip=["method:N", alt.Tooltip("error_pct:Q", format=".2f")])
    text = base.mark_text(align="left", dx=4).encode(x=x, y=y, text=alt.Text("error_pct:Q", format=".2f"))
    return (bars + text).properties(width=440, height=200)


OUTLIERS = Exploration(
    name="outlier_features",
    compute=outlier_errors,
    params=(Slider("outlier_scale", "outlier feature scale", 1, 60, 1, 20, grid_step=5),
            Slider("threshold", "LLM.int8() threshold", 2, 12, 1, 6, grid_step=1)),
    chart=outlier_chart,
    description="Bar chart: one bar per quantization method, its length the relative error of the "
                "int8/fp8 matmul X @ W in percent (x, printed at the bar's end), when a few activation "
                "features are much larger than the rest.",
)


def _samples_and_blocks(n, block_sizes=(1,)) -> tuple:
    n = _checks.count("n", n, MAX_SAMPLES)
    return n, _checks.items("block_sizes", block_sizes, lambda name, size: _checks.count(name, size, n))


def four_bit_frame(block_sizes=(16, 32, 64, 128, 256, 1024), n=2**16) -> pd.DataFrame:
    """MSE of blockwise int4, fp4 and nf4 on seeded Gaussian and Student-t (3 dof) data, per block size."""
    n, block_sizes = _samples_and_blocks(n, block_sizes)
    rng = np.random.default_rng(0)
    data = {"Gaussian": rng.standard_normal(n), "heavy-tailed (t, 3 dof)": rng.standard_t(3, n)}
    rows = []
    for dist, x in data.items():
        for b in block_sizes:
            mse = {f: precision.quantization_mse(x, f, b) for f in ("int4", "fp4_e2m1", "nf4")}
            rows.append({"data": dist, "block": b, "int4 MSE": mse["int4"], "fp4 MSE": mse["fp4_e2m1"],
                         "nf4 MSE": mse["nf4"], "fp4 / int4": mse["fp4_e2m1"] / mse["int4"]})
    return pd.DataFrame(rows).set_index(["data", "block"])


def four_bit_matmul_errors(block_size=64) -> dict:
    """Relative error of X @ W with W quantized blockwise to int4, fp4 or nf4 (X exact)."""
    X = precision.outlier_activations(ROWS, COLS, 0, seed=0)
    W = weights()
    exact = X @ W
    return {f: precision.matmul_relative_error(X @ precision.blockwise_quantize(W, f, block_size), exact)
            for f in ("int4", "fp4_e2m1", "nf4")}


# --- speed ------------------------------------------------------------------------------------

#: memory-model dtype names of the precision formats (bytes per element must agree).
MEMORY_DTYPE = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8_e4m3": "fp8", "int8": "int8", "fp4_e2m1": "fp4"}


#: Rows of the bytes table: label -> (format, block size, bytes per scale, memory-model dtype).
BYTES_ROWS = {"fp32": ("fp32", None, 0.0, "fp32"), "bf16": ("bf16", None, 0.0, "bf16"),
              "fp8_e4m3 (one scale per tensor)": ("fp8_e4m3", None, 0.0, "fp8"),
              "int8 (one scale per row)": ("int8", None, 0.0, "int8"),
              "MXFP4 (E8M0 scale per 32)": ("fp4_e2m1", 32, 1.0, "fp4"),
              "NVFP4 (E4M3 scale per 16)": ("fp4_e2m1", 16, 1.0, "fp4")}


def bytes_frame(accelerator="H100 SXM5") -> pd.DataFrame:
    """Bytes per element (scales included), and the memory time of the BERT matmul at minimum traffic."""
    acc = hardware.get(accelerator)
    p = memory.TPU_POST
    elements = memory.matmul_min_traffic(p["m"], p["k"], p["n"], "fp32") / 4.0
    rows = []
    for label, (fmt, block, scale, _) in BYTES_ROWS.items():
        per = precision.bytes_per_element(fmt, block_size=block, scale_bytes=scale)
        rows.append({"format": label, "bytes / element": per,
                     "memory time (µs)": round(float(elements * per / acc.bandwidth) * 1e6, 2)})
    return pd.DataFrame(rows).set_index("format")


def four_bit_scales_frame(block_sizes=(16, 32, 64), n=2**16) -> pd.DataFrame:
    """FP4 / INT4 mean squared error per block size, with exact (FP32), power-of-two (E8M0) and E4M3 scales."""
    n, block_sizes = _samples_and_blocks(n, block_sizes)
    rng = np.random.default_rng(0)
    data = {"Gaussian": rng.standard_normal((1, n)), "heavy-tailed (t, 3 dof)": rng.standard_t(3, (1, n))}
    rows = []
    for dist, x in data.items():
        for b in block_sizes:
            row = {"data": dist, "block": b}
            for fmt in ("fp32", "e8m0", "e4m3"):
                mse = {f: float(np.mean((precision.scaled_quantize(x, f, 1, b, fmt) - x) ** 2))
                       for f in ("int4", "fp4_e2m1")}
                row[f"fp4 / int4, {fmt} scales"] = mse["fp4_e2m1"] / mse["int4"]
            rows.append(row)
    return pd.DataFrame(rows).set_index(["data", "block"]).round(3)


def four_bit_schemes_frame(n=2**16) -> pd.DataFrame:
    """MSE of FP4 under exact-scale blocks of 16 and 32, MX (32, E8M0) and NVFP4 (16, E4M3)."""
    n, _ = _samples_and_blocks(n)
    rng = np.random.default_rng(0)
    data = {"Gaussian": rng.standard_normal((1, n)), "heavy-tailed (t, 3 dof)": rng.standard_t(3, (1, n))}
    cases = {"16, FP32 scale": (1, 16, "fp32"), "32, FP32 scale": (1, 32, "fp32"),
             "16, E8M0 scale": (1, 16, "e8m0"), "MX: 32, E8M0 scale": (1, 32, "e8m0"),
             "NVFP4: 16, E4M3 scale": (1, 16, "e4m3")}
    rows = []
    for dist, x in data.items():
        row = {"data": dist}
        for label, (br, bc, fmt) in cases.items():
            row[label] = float(np.mean((precision.scaled_quantize(x, "fp4_e2m1", br, bc, fmt) - x) ** 2))
        rows.append(row)
    return pd.DataFrame(rows).set_index("data")


#: Synthetic gradient matrix of the scaling section: rows x columns and log10 spreads.
GRAD_SHAPE = (256, 1024)
GRAD_LOG10 = {"log10_mean": -6.0, "log10_row_std": 1.2, "log10_within_std": 0.8}


@lru_cache(maxsize=1)
def gradient_rows() -> np.ndarray:
    """The chapter's seeded gradient matrix, whose magnitude varies from row to row."""
    return precision.gradient_matrix(*GRAD_SHAPE, **GRAD_LOG10, seed=3)


def gradient_scaling_frame(schemes=("per tensor", "per row", "1x128 blocks", "per column",
                                    "128x1 blocks")) -> pd.DataFrame:
    """What each scaling scheme loses when the gradient matrix is cast to E4M3 or E5M2."""
    schemes = _checks.items("schemes", schemes,
                            lambda name, scheme: _checks.choice(name, scheme, precision.SCALING_SCHEMES))
    g = gradient_rows()
    rows = []
    for scheme in schemes:
        for fmt in ("fp8_e4m3", "fp8_e5m2"):
            loss = precision.cast_losses(g, fmt, scheme)
            rows.append({"scales": scheme, "format": fmt,
                         "values lost (%)": 100 * loss["lost_values"],
                         "norm lost (%)": 100 * loss["lost_norm"]})
    return pd.DataFrame(rows).set_index(["scales", "format"])


def decode_frame(accelerators=("H100 SXM5", "RTX 4090"), batch=1) -> pd.DataFrame:
    """Upper bound on decoding tokens/s of Llama 3 8B with 16-, 8- and 4-bit weights."""
    from .. import workloads

    accelerators = _checks.items("accelerators", accelerators,
                                 lambda name, card: _checks.choice(name, card, hardware.names()))
    batch = _checks.count("batch", batch)

    params = workloads.transformer_params(**workloads.LLAMA3_8B, input_embedding=False)
    formats = {"bf16": ("bf16", None), "int8 (per channel)": ("int8", None),
               "int4 (groups of 32)": ("int4", 32)}
    rows = []
    for name in accelerators:
        acc = hardware.get(name)
        usable = acc.usable_memory_bytes or acc.memory_bytes
        for label, (fmt, group) in formats.items():
            per = precision.bytes_per_element(fmt, block_size=group, scale_bytes=4.0)
            weight_bytes = params * per
            rows.append({"GPU": name, "weights": label, "GiB": round(weight_bytes / 2**30, 1),
                         "fits": bool(memory.fits_in_cache(weight_bytes, usable)),
                         "tokens/s at most": round(float(memory.decode_tokens_per_second(
                             weight_bytes, acc.bandwidth, batch)))})
    return pd.DataFrame(rows).set_index(["GPU", "weights"])


def fp8_scenarios(fractions=(0.4, 0.5, 0.6, 0.7)) -> pd.DataFrame:
    """The overhead (share of the BF16 step) that reproduces each measured FP8 run, for assumed GEMM shares."""
    fractions = _checks.items("fractions", fractions,
                              lambda name, f: float(_checks.in_range(name, _checks.scalar(name, f), 0, 1)))
    meas = measured_fp8()
    rows = []
    for f in fractions:
        row = {"matmul share of the BF16 step": f,
               "no-overhead speedup": round(float(precision.fp8_training_speedup(meas["gemm"], f)), 3)}
        for recipe in ("tensorwise", "rowwise"):
            overhead = precision.fp8_overhead_needed(meas[recipe], meas["gemm"], f)
            row[f"overhead for {recipe} (% of step)"] = round(100 * float(overhead), 1)
        rows.append(row)
    return pd.DataFrame(rows).set_index("matmul share of the BF16 step")


def measured_fp8() -> dict:
    """Measured FP8/BF16 ratios on H100: best-shape GEMM (MAMF) and Llama3-8B training (torchao)."""
    m = measured.measurement
    return {"gemm": m("mamf.h100_sxm.fp8") / m("mamf.h100_sxm.bf16"),
            "tensorwise": m("torchao.llama3_8b.h100.fp8_tensorwise") / m("torchao.llama3_8b.h100.bf16"),
            "rowwise": m("torchao.llama3_8b.h100.fp8_rowwise") / m("torchao.llama3_8b.h100.bf16")}


def fp8_speedup(gemm_speedup, transpose_overhead_pct):
    """End-to-end FP8 training speedup against the GEMM share of the step, plus the measured runs."""
    f = np.linspace(0.0, 1.0, 11)
    s = precision.fp8_training_speedup(gemm_speedup, f, transpose_overhead_pct / 100)
    meas = measured_fp8()
    return {"gemm_fraction": np.append(f, [0.0, 0.0]), "speedup": np.append(s, [meas["tensorwise"], meas["rowwise"]]),
            "series": ["model"] * f.size + ["measured, fp8 tensorwise", "measured, fp8 rowwise"]}


def fp8_speedup_chart(base):
    x = alt.X("gemm_fraction:Q", title="share of the BF16 step spent in matmuls", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("speedup:Q", title="end-to-end speedup over BF16", scale=alt.Scale(domain=[0.8, 2.0]))
    line = base.transform_filter("datum.series == 'model'").mark_line(strokeWidth=3).encode(
        x=x, y=y, tooltip=[alt.Tooltip("gemm_fraction:Q", format=".2f"), alt.Tooltip("speedup:Q", format=".3f")])
    rules = base.transform_filter("datum.series != 'model'").mark_rule(strokeWidth=2).encode(
        y=y, color=alt.Color("series:N", title=None, scale=alt.Scale(range=[charts.VERMILLION, charts.ORANGE]),
                             legend=alt.Legend(orient="bottom")),
        strokeDash=alt.StrokeDash("series:N", title=None, scale=alt.Scale(range=[[6, 3], [2, 2]]),
                                  legend=alt.Legend(orient="bottom")),
        tooltip=["series:N", alt.Tooltip("speedup:Q", format=".3f")])
    return (line + rules).properties(width=460, height=260)


FP8_SPEEDUP = Exploration(
    name="fp8_speedup",
    compute=fp8_speedup,
    params=(Slider("gemm_speedup", "FP8 matmul speedup", 1.2, 2.0, 0.05, 1.8, unit="x", grid_step=0.1),
            Slider("transpose_overhead_pct", "cast and transpose overhead", 0, 20, 1, 0, unit="% of step", grid_step=4)),
    chart=fp8_speedup_chart,
    description="Line chart: Amdahl's law for FP8 training, the end-to-end speed-up over BF16 (y) "
                "against the share of the BF16 step spent in matmuls (x), for a faster matmul, the "
                "rest of the step unchanged, plus a cast/transpose tax; two horizontal dashed lines "
                "mark the measured FP8 tensorwise and rowwise speed-ups.",
)

EXPLORATIONS = [NUMBER_LINE, LOSS_SCALING, OUTLIERS, FP8_SPEEDUP]


#: gpt-fast's batch-1 Llama 2 7B decoding on an A100 80GB (measurements.csv ids) and the
#: weight format of each: (format, group size for the scales).
GPTFAST = {"bf16": ("gptfast.llama2_7b.a100_80.bf16", "bf16", None),
           "int8 (per channel)": ("gptfast.llama2_7b.a100_80.int8", "int8", None),
           "int4 (groups of 32)": ("gptfast.llama2_7b.a100_80.int4_g32", "int4", 32)}


#: What gpt-fast's README says of the A100 those runs used (README.md @ 32971d3, "Benchmarks"
#: and the note under speculative decoding): power-limited to 330 W; "Empirically, seems like
#: peak bandwidth is about 1700 GB/s" (its authors' estimate of what the card achieves, in
#: bytes/s); the BF16 Llama 2 7B run reports 1397.31 GB/s of memory bandwidth.
GPTFAST_A100 = {"power_limit_w": 330.0, "achievable_bandwidth": 1700e9,
                "bf16_bandwidth": 1397.31e9}


def decode_measured_frame(accelerator="A100 SXM4 80GB") -> pd.DataFrame:
    """Measured batch-1 decoding of Llama 2 7B against the weight-bandwidth bound, per weight format.

    Two bounds: at the datasheet bandwidth, and at the bandwidth gpt-fast's authors estimate
    their power-limited card achieves (``GPTFAST_A100``).
    """
    from .. import workloads

    acc = hardware.get(accelerator)
    params = workloads.transformer_params(**workloads.LLAMA2_7B, input_embedding=False)
    rows = []
    for label, (key, fmt, group) in GPTFAST.items():
        weight_bytes = params * precision.bytes_per_element(fmt, block_size=group, scale_bytes=4.0)
        bound = float(memory.decode_tokens_per_second(weight_bytes, acc.bandwidth))
        reach = float(memory.decode_tokens_per_second(
            weight_bytes, GPTFAST_A100["achievable_bandwidth"]))
        value = measured.measurement(key)
        rows.append({"weights": label, "bound (tokens/s)": round(bound),
                     "measured (tokens/s)": value, "measured / bound": round(value / bound, 2),
                     "achievable bound (tokens/s)": round(reach),
                     "measured / achievable": round(value / reach, 2)})
    return pd.DataFrame(rows).set_index("weights")


def bert_compute_us(dtype: str, accelerator: str = "H100 SXM5") -> float:
    """Compute time (µs) of the BERT matmul (256 x 1024 @ 1024 x 1024) at the dense peak for ``dtype``."""
    p = memory.TPU_POST
    flops = memory.matmul_flops(p["m"], p["k"], p["n"])
    return float(flops / hardware.get(accelerator).peak_flops(dtype) * 1e6)


# --- today's FP4 and FP8 machinery ------------------------------------------------------------

#: The block formats of the Hadamard example: scheme and block size (the Hadamard size).
RHT_SCHEMES = {"NVFP4": ("NVFP4 (16, E4M3)", 16), "MXFP4": ("MX (32, E8M0)", 32)}


def rounding_bias(value=0.2, draws=10_000, name="fp4_e2m1", seed=0) -> dict:
    """``value`` rounded to nearest and, ``draws`` times, stochastically: both results and their bias (%).

    ``value`` must be nonzero and lie between the format's smallest and largest values.
    """
    name = _checks.choice("name", name, precision.SMALL_FORMATS)
    draws, number = _checks.count("draws", draws, MAX_SAMPLES), _checks.scalar("value", value)
    grid = precision.representable_values(name)
    if not grid.min() <= number < grid.max() or number == 0:
        raise ValueError(f"value must be nonzero and in [{grid.min():g}, {grid.max():g}) for {name} "
                         f"(got {number:g})")
    nearest = float(precision.quantize(value, name))
    mean = float(precision.stochastic_round(np.full(draws, value), name, seed).mean())
    grid = precision.representable_values(name)
    below, above = grid[grid <= value].max(), grid[grid > value].min()
    return {"below": float(below), "above": float(above),
            "nearest": nearest, "stochastic_mean": mean,
            "nearest_bias_pct": 100 * (nearest - value) / value,
            "stochastic_bias_pct": 100 * (mean - value) / value}


def hadamard_frame(outlier_scale=20.0, seed=0) -> pd.DataFrame:
    """The chapter's outlier activations in FP4 blocks, without and with a random Hadamard rotation.

    Error of X @ W (%), both operands quantized along the inner dimension, and the share of
    ordinary activations (columns whose largest |value| is below 5 standard deviations of X)
    flushed to zero (%).
    """
    seed = _checks.seed(seed)
    X, exact = _outliers(outlier_scale, N_OUTLIER_COLS)
    W = weights()
    ordinary = np.abs(X).max(axis=0) < 5 * np.abs(X).std()
    rows = []
    for label, (scheme, size) in RHT_SCHEMES.items():
        plain = precision.scheme_quantize(X, "fp4_e2m1", scheme)
        turned = precision.rotated_quantize(X, "fp4_e2m1", scheme, size, seed)
        w_plain = precision.scheme_quantize(W.T, "fp4_e2m1", scheme).T
        w_turned = precision.rotated_quantize(W.T, "fp4_e2m1", scheme, size, seed).T
        e0 = precision.matmul_relative_error(plain @ w_plain, exact)
        e1 = precision.matmul_relative_error(turned @ w_turned, exact)
        rows.append({"format": label, "block": size,
                     "X @ W error (%)": 100 * e0, "with Hadamard (%)": 100 * e1,
                     "error ratio": e0 / e1,
                     "ordinary flushed (%)": 100 * np.mean(plain[:, ordinary] == 0),
                     "with Hadamard flushed (%)": 100 * np.mean(turned[:, ordinary] == 0)})
    return pd.DataFrame(rows).set_index("format")


def smoothing_frame(outlier_scale=20.0, alpha=0.5) -> pd.DataFrame:
    """Per-tensor INT8 errors (%) of X, W and X @ W before and after SmoothQuant's migration."""
    X, exact = _outliers(outlier_scale, N_OUTLIER_COLS)
    alpha = _checks.in_range("alpha", _checks.scalar("alpha", alpha), 0, 1)
    W = weights()
    s = precision.smooth_scales(np.abs(X).max(axis=0), np.abs(W).max(axis=1), alpha)
    rows = {}
    for label, (A, B) in {"as is": (X, W), "smoothed": (X / s, W * s[:, None])}.items():
        err = precision.matmul_relative_error
        rows[label] = {
            "X error (%)": 100 * err(precision.scheme_quantize(A, "int8", "per tensor"), A),
            "W error (%)": 100 * err(precision.scheme_quantize(B, "int8", "per tensor"), B),
            "X @ W error (%)": 100 * err(precision.scheme_matmul(A, B, "int8", "per tensor"),
                                         exact),
            "X max / median": float(np.abs(A).max() / np.median(np.abs(A)))}
    return pd.DataFrame(rows).T


def kv_batch_fit(context=8192, accelerator="H100 SXM5", weight_bits=16.0) -> pd.DataFrame:
    """Llama 3 8B: key/value cache per sequence (GB) and the sequences that fit beside the weights."""
    context = _checks.count("context", context)
    card = hardware.get(accelerator)
    usable = card.usable_memory_bytes or card.memory_bytes
    weights_b = throughput.weight_bytes(_checks.scalar("weight_bits", weight_bits))
    rows = {}
    for label, bits in (("bf16", 16.0), ("fp8", 8.0)):
        per = throughput.kv_cache_bytes(context, kv_bits=bits)
        rows[label] = {"KV bytes per token": per / context, "KV GB per sequence": per / 1e9,
                       "sequences that fit": int((usable - weights_b) // per)}
    return pd.DataFrame(rows).T


check_direct_calls(globals())
