"""How many FLOP/s is a brain? The 2015 post's estimate, its sensitivity, and the projection.

The post (Dettmers 2015, "The Brain vs Deep Learning Part I") models cerebellar neurons as small
convolutional nets and counts FLOP per second. Its formula was an image and is lost; only its
inputs and its result (1.075 x 10^21 FLOP/s) survive. :func:`estimate_terms` is a
**reconstruction** from those inputs, under two readings (see :data:`READINGS`).
Rates are in FLOP/s, times in years, powers in watts.
Explained in :doc:`/book/brain`.
"""
from __future__ import annotations

import csv
import io
import math
from functools import lru_cache
from importlib import resources

import numpy as np

from . import _checks

#: The post's inputs: cell counts, synaptic inputs and outputs per cell, dendritic filter sizes
#: (branches x dendrites x time steps), the soma filter's time steps, the firing rate (Hz) and
#: FLOP per multiply-add.
POST = {"granule_cells": 50e9, "purkinje_cells": 100e6, "granule_inputs": 15.0,
        "purkinje_inputs": 1e5, "granule_branches": 3.0, "granule_dendrites": 4.0,
        "purkinje_branches": 10.0, "purkinje_dendrites": 1000.0, "time_steps": 5.0,
        "granule_outputs": 100.0, "purkinje_outputs": 1000.0, "firing_rate": 200.0,
        "flop_per_mac": 2.0}

#: The two readings of the lost formula.
#: "reconstruction": every input synapse of both cell types (granule and Purkinje) passes
#: through the Purkinje dendritic filter (branches x dendrites x time steps) at every time step:
#: it lands exactly on 1.075 x 10^21 with the post's inputs.
#: "self-consistent": each cell type uses its own filter, and the dense input, soma filter and
#: output synapses are counted too; about 1.0 x 10^21.
READINGS = ("reconstruction", "self-consistent")


@_checks.finite_result
def estimate_terms(reading: str = "reconstruction", *, granule_cells=50e9, purkinje_cells=100e6, granule_inputs=15.0,
                   purkinje_inputs=1e5, granule_branches=3.0, granule_dendrites=4.0,
                   purkinje_branches=10.0, purkinje_dendrites=1000.0, time_steps=5.0,
                   granule_outputs=100.0, purkinje_outputs=1000.0, firing_rate=200.0, flop_per_mac=2.0,
                   granule_rate=None, purkinje_rate=None, steps_per_second=None) -> dict:
    """FLOP/s of each term of the brain estimate under ``reading``, from the post's inputs (:data:`POST`), any of which can be overridden.

    A term is cells x multiply-adds per cell per time step x time steps x firing rate x FLOP
    per multiply-add: the time steps are the filter's temporal depth, evaluated once per action
    potential. "reconstruction" returns {"granule dendrites", "purkinje dendrites"}, both with
    the Purkinje filter; "self-consistent" adds the dense input, soma and output stages of both
    cell types, each with its own filter.

    ``granule_rate`` and ``purkinje_rate`` (Hz) give each cell type its own firing rate in place
    of ``firing_rate`` (section "How sensitive is it?"). ``steps_per_second`` (Hz) reads the time
    step differently: the filter runs once per time step, that many times a second, in place of
    time steps x firing rate per second, so the time steps count once and the rates drop out
    (section "Does the time step count twice?").
    Explained in :doc:`/book/brain` (section "The post's estimate, reconstructed").
    """
    reading = _checks.choice("reading", reading, READINGS)
    given = locals()
    v = {name: _checks.positive(name, given[name]) for name in POST}
    for name in ("granule_rate", "purkinje_rate", "steps_per_second"):
        if given[name] is not None:
            v[name] = _checks.positive(name, given[name])
    _checks.broadcast(**v)
    runs = {}  # filter evaluations per second, per cell type
    for cell in ("granule", "purkinje"):
        rate = v.get(f"{cell}_rate", v["firing_rate"])
        runs[cell] = v.get("steps_per_second", v["time_steps"] * rate) * v["flop_per_mac"]
    purkinje_filter = v["purkinje_branches"] * v["purkinje_dendrites"] * v["time_steps"]
    granule_filter = v["granule_branches"] * v["granule_dendrites"] * v["time_steps"]
    if reading == "reconstruction":
        return {"granule dendrites": v["granule_cells"] * v["granule_inputs"] * purkinje_filter * runs["granule"],
                "purkinje dendrites": v["purkinje_cells"] * v["purkinje_inputs"] * purkinje_filter
                * runs["purkinje"]}
    out = {}
    for cell, filt in (("granule", granule_filter), ("purkinje", purkinje_filter)):
        n, per_event = v[f"{cell}_cells"], runs[cell]
        out[f"{cell} dense input"] = n * v[f"{cell}_inputs"] * per_event
        out[f"{cell} dendrites"] = n * v[f"{cell}_inputs"] * filt * per_event
        out[f"{cell} soma"] = n * v[f"{cell}_dendrites"] * v["time_steps"] * per_event
        out[f"{cell} outputs"] = n * v[f"{cell}_outputs"] * per_event
    return out


@_checks.finite_result
def estimate(reading: str = "reconstruction", *, granule_cells=50e9, purkinje_cells=100e6, granule_inputs=15.0,
             purkinje_inputs=1e5, granule_branches=3.0, granule_dendrites=4.0,
             purkinje_branches=10.0, purkinje_dendrites=1000.0, time_steps=5.0,
             granule_outputs=100.0, purkinje_outputs=1000.0, firing_rate=200.0, flop_per_mac=2.0,
             granule_rate=None, purkinje_rate=None, steps_per_second=None):
    """The brain estimate in FLOP/s: the sum of :func:`estimate_terms` (same inputs). The post's inputs give 1.075e21 ("reconstruction").

    Explained in :doc:`/book/brain` (section "The post's estimate, reconstructed").
    """
    extra = ("granule_rate", "purkinje_rate", "steps_per_second")
    given = {name: value for name, value in locals().items() if name in POST or name in extra}
    return sum(estimate_terms(reading, **given).values())


#: The H100 SXM5's dense FP64 matrix (Tensor Core) peak, FLOP/s (66.9 TFLOPS, restating NVIDIA's
#: figures; [lockwood_h100]). The hardware table has no FP64 column.
H100_FP64_MATRIX_FLOPS = 66.9e12
#: The H100 SXM5's FP64 vector (FMA, no Tensor Core) peak, FLOP/s (33.5 TFLOPS; [lockwood_h100]):
#: the units HPCG's sparse kernels (SpMV, Gauss-Seidel) run on.
H100_FP64_VECTOR_FLOPS = 33.5e12

#: Quantities of data/brain_inputs.csv that are not inputs of :func:`estimate`: per-cell-type
#: rates, the post's whole-brain synapse count, and the counts for the cerebrum (section "Where
#: this model is wrong").
OTHER_INPUTS = ("granule_rate", "purkinje_rate", "brain_synapses", "brain_neurons", "cerebellum_neurons",
                "cerebrum_inputs")

_INPUT_COLUMNS = ("parameter", "value", "label", "who", "year", "method", "source", "detail")


def _data_rows(filename: str, columns: tuple):
    """(line number, row) of a CSV file in gpumodel/data, after checking it has ``columns``."""
    text = resources.files("gpumodel.data").joinpath(filename).read_text()
    reader = csv.DictReader(io.StringIO(text))
    missing = set(columns) - set(reader.fieldnames or ())
    if missing:
        raise ValueError(f"{filename} lacks columns: {', '.join(sorted(missing))}")
    return enumerate(reader, start=2)


@lru_cache(maxsize=1)
def _inputs() -> tuple:
    out = []
    for line, row in _data_rows("brain_inputs.csv", _INPUT_COLUMNS):
        try:
            value = float(row["value"])
        except ValueError:
            raise ValueError(f"brain_inputs.csv line {line}: value must be a number") from None
        known = row["parameter"] in POST or row["parameter"] in OTHER_INPUTS
        if not known or not value > 0 or not row["source"].strip():
            raise ValueError(f"brain_inputs.csv line {line}: parameter must be an input of estimate(), "
                             "value > 0, and a source given")
        out.append({**row, "value": value, "year": int(row["year"])})
    return tuple(out)


def measured_inputs(parameter: str = "purkinje_cells") -> list:
    """Published values of one input of :func:`estimate` (cell counts, firing rates) or of :data:`OTHER_INPUTS`, the post's first.

    Each row: parameter, value, label (short name), who, year, method, source (a citation key),
    detail (the quoted sentence). The post's own value is the row whose source is the post. Explained in
    :doc:`/book/brain` (section "How sensitive is it?").
    """
    names = sorted({r["parameter"] for r in _inputs()})
    parameter = _checks.choice("parameter", parameter, names)
    return [dict(r) for r in _inputs() if r["parameter"] == parameter]


def _counted(parameter: str) -> tuple:
    """(lowest, highest) value of ``parameter`` among the sources other than the post."""
    values = [r["value"] for r in measured_inputs(parameter) if r["source"] != "[dettmers2015brain]"]
    return (min(values), max(values))


#: The ranges the sensitivity analysis moves each input over, (low, high), with where they come
#: from: the post's text, a count or recording (data/brain_inputs.csv), or "the book's choice".
RANGES = {
    "purkinje_cells": (_counted("purkinje_cells"),
                       "counted: 15.4 million (fractionator, 12 aged brains, 1989) and 30.5 million "
                       "(Andersen et al. 1992); the post's 100 million is above both"),
    "granule_cells": ((50e9, _counted("granule_cells")[1]),
                      "the post's 50 billion to the 101 billion counted by Andersen et al. 1992"),
    "purkinje_rate": (_counted("purkinje_rate"),
                      "background Purkinje simple-spike rate, 30 to 100 Hz, the 'natural range' a "
                      "simulation was tuned to (De Schutter and Bower 1994); simple spikes can reach "
                      "several hundred per second (Kobayashi et al. 1998), so the post's 200 Hz is "
                      "above the background, not above every rate"),
    "granule_rate": ((1.0, 200.0), "the book's choice: granule cells fire at a low ongoing rate "
                                   "(Chadderton et al. 2004), up to the post's 200 Hz"),
    "purkinje_inputs": ((75e3, 1.5e5), "the post: 100,000 'might be a slight overestimate (but 75000 would be too "
                                        "conservative)'; the book's choice of 150,000 for 'more than 100000' "
                                        "(no count of synapses per human Purkinje cell was consulted)"),
    "time_steps": ((2.4, 6.0), "the post: conscious recognition takes 80 to 200 ms, 2.4 to 6 steps at 30 per second"),
    "purkinje_dendrites": ((500.0, 2000.0), "the book's choice around the post's 'about 1000 dendrites'"),
    "purkinje_branches": ((3.0, 20.0), "the book's choice around the post's 'about 10'"),
    "flop_per_mac": ((1.0, 2.0), "counting a multiply-add as one operation or as two FLOP"),
}


@_checks.finite_result
def sensitivity(reading: str = "reconstruction") -> dict:
    """The estimate with each input of :data:`RANGES` at its low and its high end, the others at the post's values.

    Returns {"input": names, "low": FLOP/s, "high": FLOP/s, "base": FLOP/s}, for a tornado chart.
    The time steps enter twice (filter depth and steps per event), so they move the estimate
    by their square. A range need not contain the post's value (its Purkinje cells lie above
    the counted ones and its firing rate above the background range), so "base" can fall
    outside low to high. Explained in :doc:`/book/brain` (section "How sensitive is it?").
    """
    reading = _checks.choice("reading", reading, READINGS)
    names = list(RANGES)
    low = [float(estimate(reading, **{n: RANGES[n][0][0]})) for n in names]
    high = [float(estimate(reading, **{n: RANGES[n][0][1]})) for n in names]
    return {"input": names, "low": np.array(low), "high": np.array(high),
            "base": np.full(len(names), float(estimate(reading)))}


@_checks.finite_result
def synapse_count_flops(synapses, firing_rate=200.0, flop_per_event=2.0):
    """The simplest count: every synapse does one multiply-add per action potential, synapses x rate x FLOP per event, in FLOP/s.

    Explained in :doc:`/book/brain` (section "Today's framing: what a brain's FLOP/s can mean").
    """
    n = _checks.positive("synapses", synapses)
    r = _checks.positive("firing_rate", firing_rate)
    f = _checks.positive("flop_per_event", flop_per_event)
    return n * r * f


@_checks.finite_result
def roofline_gpus(synapses, rate_hz, bytes_per_synapse=2.0, flop_per_event=2.0,
                  accelerator: str = "H100 SXM5", dtype: str = "bf16") -> dict:
    """How many of ``accelerator`` a synapse-count model needs, by memory bandwidth, by compute and by memory capacity.

    The model holds every synapse's weight in memory, reads it once per event and does
    ``flop_per_event`` with it, at batch 1: bytes/s = synapses x rate_hz x bytes_per_synapse,
    FLOP/s = synapses x rate_hz x flop_per_event. The default of 2 FLOP per event counts a
    multiply-add; a binary spike times a weight is an add, 1 FLOP. The default of 2 bytes per
    event reads the weight only: updating an accumulator per event would add more, so it is a
    lower bound. Returns {"bandwidth": GPUs to stream the weights (bytes/s over the
    accelerator's bandwidth, bytes/s), "compute": GPUs for the arithmetic (FLOP/s over its dense
    ``dtype`` peak), "capacity": GPUs to hold the weights (synapses x bytes_per_synapse over its
    usable memory), "binding": the name of the largest of the three counts, "intensity":
    FLOP/byte, "ridge": the accelerator's ridge point, FLOP/byte}. Below the ridge "bandwidth"
    exceeds "compute"; at low rates "capacity" exceeds both. ValueError for an accelerator
    whose usable memory is unpublished.

    ``dtype`` names a Tensor Core peak ("bf16", "fp8", ...), an optimistic ceiling for batch-1
    work, whose events are scatter-adds or matrix-vector products; ``dtype="fp32"`` takes the
    non-tensor FP32 (vector) peak instead, the units such work runs on, with its own ridge
    (ValueError where the table has no FP32 figure).
    Explained in :doc:`/book/brain` (section "The brain as a batch-1 workload").
    """
    from . import hardware
    from .units import TFLOPS

    n = _checks.positive("synapses", synapses)
    r = _checks.positive("rate_hz", rate_hz)
    b = _checks.positive("bytes_per_synapse", bytes_per_synapse)
    f = _checks.positive("flop_per_event", flop_per_event)
    _checks.broadcast(synapses=n, rate_hz=r, bytes_per_synapse=b, flop_per_event=f)
    acc = hardware.get(_checks.choice("accelerator", accelerator, hardware.names()))
    dtype = _checks.text("dtype", dtype)
    if dtype == "fp32":  # the vector units: not a Tensor Core column
        if acc.fp32_tflops is None:
            raise ValueError(f"accelerator {accelerator!r} has no FP32 (vector) peak in the table")
        peak = acc.fp32_tflops * TFLOPS
    else:
        peak = acc.peak_flops(dtype)
    if acc.usable_memory_bytes is None:
        raise ValueError(f"accelerator {accelerator!r} has no published usable memory, so the "
                         "GPUs needed to hold the weights cannot be counted")
    counts = {"bandwidth": n * r * b / acc.bandwidth, "compute": n * r * f / peak,
              "capacity": n * b / acc.usable_memory_bytes}
    names = np.array(list(counts))
    largest = names[np.argmax(np.stack(np.broadcast_arrays(*counts.values())), axis=0)]
    binding = str(largest) if np.ndim(largest) == 0 else largest
    return {**counts, "binding": binding, "intensity": f / b, "ridge": peak / acc.bandwidth}


# --- the projection ----------------------------------------------------------------------------

@_checks.finite_result
def doublings(start, target, whole: bool = True):
    """Doublings from ``start`` to ``target`` FLOP/s: log2(target / start), rounded up to whole periods if ``whole``; 0 if already reached.

    Explained in :doc:`/book/brain` (section "When would a computer get there?").
    """
    s = _checks.positive("start", start)
    t = _checks.positive("target", target)
    whole = _checks.flag("whole", whole)
    n = np.maximum(np.log2(t / s), 0.0)
    return np.ceil(n - 1e-12) if whole else n


@_checks.finite_result
def year_reached(start, target, doubling_years, base_year=2015.0, whole: bool = True):
    """The year a machine of ``start`` FLOP/s in ``base_year`` grows to ``target`` at one doubling every ``doubling_years``.

    base_year + :func:`doublings` x doubling_years. Explained in :doc:`/book/brain` (section "When would a computer get there?").
    """
    period = _checks.positive("doubling_years", doubling_years)
    base = _checks.in_range("base_year", base_year, 1900, 3000)
    return base + doublings(start, target, whole) * period


@_checks.finite_result
def projected_flops(year, start, doubling_years, base_year=2015.0):
    """FLOP/s in ``year`` of a machine of ``start`` FLOP/s in ``base_year`` doubling every ``doubling_years``.

    Explained in :doc:`/book/brain` (section "When would a computer get there?").
    """
    y = _checks.in_range("year", year, 1900, 3000)
    s = _checks.positive("start", start)
    period = _checks.positive("doubling_years", doubling_years)
    base = _checks.in_range("base_year", base_year, 1900, 3000)
    return s * 2.0 ** ((y - base) / period)


@_checks.finite_result
def fitted_doubling_years(years, flops):
    """The doubling period of a least-squares line through log2(flops) against years, in years.

    Explained in :doc:`/book/brain` (section "Ten years of evidence").
    """
    y = _checks.as_array("years", years)
    f = _checks.positive("flops", flops)
    if y.ndim != 1 or y.shape != f.shape or y.size < 2 or np.ptp(y) == 0:
        raise ValueError("years and flops must be 1-D arrays of the same length, with at least two different years")
    centred = y - y.mean()
    spread = np.sum(centred**2)
    if not 0 < spread < np.inf:
        raise ValueError(f"years must differ by more than rounding (got values from {y.min():g} to "
                         f"{y.max():g}): their spread cannot be squared in float64")
    logs = np.log2(f)
    if np.ptp(y) >= 1e-6 * np.max(np.abs(y)):
        slope = np.polyfit(y, logs, 1)[0]
    else:  # years close together far from 0: the centred form keeps its precision
        slope = np.sum(centred * (logs - logs.mean())) / spread
    if not slope > 0:
        raise ValueError("flops must grow over the years to have a doubling period")
    return float(1.0 / slope)


@_checks.finite_result
def fitted_flops(years, flops, year):
    """FLOP/s of the least-squares line of :func:`fitted_doubling_years` at ``year``: where the fitted trend stands, not the record.

    The line passes through the mean year and the mean of log2(flops), with the fitted slope, so
    a record that has grown more slowly of late lies below it. Same ValueErrors as
    :func:`fitted_doubling_years`, and for a ``year`` outside 1900 to 3000.
    Explained in :doc:`/book/brain` (section "Ten years of evidence").
    """
    period = fitted_doubling_years(years, flops)
    y = _checks.as_array("years", years)
    f = _checks.positive("flops", flops)
    at = _checks.in_range("year", year, 1900, 3000)
    return 2.0 ** (np.mean(np.log2(f)) + (at - np.mean(y)) / period)


#: Boltzmann's constant, J/K (exact, SI 2019).
BOLTZMANN = 1.380649e-23


@_checks.finite_result
def landauer_bit_erasures(power_watts, temperature_kelvin=310.0):
    """The most irreversible bit operations per second that ``power_watts`` can pay for at ``temperature_kelvin``: P / (k T ln 2).

    Explained in :doc:`/book/brain` (section "Today's framing: what a brain's FLOP/s can mean").
    """
    p = _checks.positive("power_watts", power_watts)
    t = _checks.positive("temperature_kelvin", temperature_kelvin)
    return p / (BOLTZMANN * t * math.log(2.0))


# --- data ---------------------------------------------------------------------------------------

_RECORD_COLUMNS = ("list", "metric", "system", "pflops", "source", "detail")
METRICS = ("hpl", "hpcg")


@lru_cache(maxsize=1)
def _records() -> tuple:
    out = []
    for line, row in _data_rows("top500.csv", _RECORD_COLUMNS):
        try:
            year, month = (int(x) for x in row["list"].split("-"))
            pflops = float(row["pflops"])
        except ValueError:
            raise ValueError(f"top500.csv line {line}: list must be YYYY-MM and pflops a number") from None
        if row["metric"] not in METRICS or not pflops > 0 or month not in (6, 11) or not row["source"].strip():
            raise ValueError(f"top500.csv line {line}: metric must be hpl or hpcg, pflops > 0, the list June "
                             "or November, and a source given")
        out.append({"list": row["list"], "year": year + (month - 0.5) / 12, "metric": row["metric"],
                    "system": row["system"], "flops": pflops * 1e15, "source": row["source"],
                    "detail": row["detail"]})
    return tuple(out)


def records(metric: str = "hpcg", filled: bool = False) -> list:
    """The number-one system of each TOP500 list on ``metric`` ("hpl" or "hpcg"): list, year (mid-month), system, FLOP/s, source.

    Only lists whose leader was checked have a row. With ``filled``, every June and November list
    from the first row to the last has one: a missing list repeats the row before it (its system
    and FLOP/s, with "filled" as its source), a step function that assumes the leader held its
    place, for the fit's sensitivity to the gaps.
    Explained in :doc:`/book/brain` (section "Ten years of evidence").
    """
    metric = _checks.choice("metric", metric, METRICS)
    filled = _checks.flag("filled", filled)
    rows = [dict(r) for r in _records() if r["metric"] == metric]
    if not filled or not rows:
        return rows
    have = {r["list"]: r for r in rows}
    first, last = (int(rows[i]["list"][:4]) for i in (0, -1))
    out = []
    for year in range(first, last + 1):
        for month in (6, 11):
            name = f"{year}-{month:02d}"
            if rows[0]["list"] <= name <= rows[-1]["list"]:
                row = have.get(name) or {**out[-1], "list": name, "year": year + (month - 0.5) / 12,
                                         "source": "filled", "detail": f"no checked leader: {out[-1]['list']} repeated"}
                out.append(dict(row))
    return out
