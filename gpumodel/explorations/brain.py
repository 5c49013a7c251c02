"""Explorations, tables and figures of the chapter :doc:`/book/brain`."""
from __future__ import annotations

import csv
import io
from functools import lru_cache
from importlib import resources

import altair as alt
import numpy as np
import pandas as pd

from .. import _checks, brain, charts
from ..explore import Choice, Exploration, Slider, check_direct_calls

LABELS = {"firing_rate": "firing rate (Hz)", "purkinje_inputs": "synapses per Purkinje cell",
          "purkinje_cells": "Purkinje cells", "granule_cells": "granule cells",
          "purkinje_rate": "rate driving the Purkinje filter (Hz)",
          "granule_rate": "rate driving the granule filter (Hz)",
          "time_steps": "time steps", "purkinje_dendrites": "Purkinje dendrites",
          "purkinje_branches": "branches per dendrite", "flop_per_mac": "FLOP per multiply-add"}


def terms_frame(reading: str = "reconstruction") -> pd.DataFrame:
    """Each term of the estimate in FLOP/s and as a share of the total."""
    terms = brain.estimate_terms(reading)
    total = sum(terms.values())
    return pd.DataFrame({"term": list(terms), "FLOP/s": [f"{float(v):.3g}" for v in terms.values()],
                         "share": [f"{float(v) / total:.4%}" for v in terms.values()]}).set_index("term")


def counted_frame() -> pd.DataFrame:
    """The estimate under each reading with the post's cell counts and with the counted ones.

    Rows: the post's counts; each counted Purkinje total of data/brain_inputs.csv with the
    post's granule cells; the largest Purkinje count with the counted granule cells. Columns:
    reading, cells (which counts), FLOP/s, and the ratio to Carlsmith's 1e21 line.
    """
    purkinje = brain.measured_inputs("purkinje_cells")
    granule = max(r["value"] for r in brain.measured_inputs("granule_cells"))
    cases = [(f"{r['label']}: {r['value'] / 1e6:.3g} million Purkinje",
              {"purkinje_cells": r["value"]}) for r in purkinje]
    most = max(r["value"] for r in purkinje if r["label"] != "the post")
    cases.append((f"{most / 1e6:.3g} million Purkinje, {granule / 1e9:.3g} billion granule",
                  {"purkinje_cells": most, "granule_cells": granule}))
    line = carlsmith_line()
    rows = [{"reading": reading, "cells": name, "FLOP/s": float(brain.estimate(reading, **kw)),
             "of 1e21": float(brain.estimate(reading, **kw)) / line}
            for reading in brain.READINGS for name, kw in cases]
    return pd.DataFrame(rows)


def counted_table() -> pd.DataFrame:
    """:func:`counted_frame` printed to two significant figures."""
    frame = counted_frame()
    frame["FLOP/s"] = [f"{v:.2g}" for v in frame["FLOP/s"]]
    frame["of 1e21"] = [f"{v:.2f}" for v in frame["of 1e21"]]
    return frame.set_index(["reading", "cells"])


def carlsmith_line() -> float:
    """Carlsmith's 10% line, 1e21 FLOP/s: the high end of his headline row in brain_estimates.csv."""
    row = next(r for r in _estimates() if r["key"] == "carlsmith_2020_headline")
    return float(row["flops_high"])


def crossing_year(start, target, doubling_years, base_year=2015.0) -> float:
    """The first whole year after a steady doubling from ``start`` reaches ``target``: the
    book's count (the post multiplies whole periods, which gives the same years here).

    :func:`gpumodel.brain.year_reached` with ``whole=False`` (the crossing, e.g. 2052.48, during
    2052), then ceil (2053): the chapter's projection years and the projection exploration's
    dotted line both show this value.
    """
    start, target = _checks.scalar("start", start), _checks.scalar("target", target)
    doubling_years = _checks.scalar("doubling_years", doubling_years)
    base_year = _checks.scalar("base_year", base_year)
    return float(np.ceil(brain.year_reached(start, target, doubling_years, base_year, whole=False)))


# --- the estimate with sliders -------------------------------------------------------------------

def estimate(reading, firing_rate, purkinje_inputs, time_steps, flop_per_mac):
    """Terms and total of the estimate for the slider values (log10 FLOP/s)."""
    terms = brain.estimate_terms(reading, firing_rate=firing_rate, purkinje_inputs=purkinje_inputs,
                                 time_steps=time_steps, flop_per_mac=flop_per_mac)
    names = list(terms) + ["total"]
    values = [float(v) for v in terms.values()] + [float(sum(terms.values()))]
    return {"term": names, "log10_flops": np.log10(values),
            "label": [f"{v:.3g}" for v in values]}


def estimate_chart(base):
    x = alt.X("log10_flops:Q", title="log10 FLOP/s", scale=alt.Scale(domain=[12, 23]))
    bars = base.mark_bar().encode(
        x=x, x2=alt.datum(12), y=alt.Y("term:N", title=None, sort=None),
        color=alt.condition("datum.term == 'total'", alt.value("#333333"), alt.value(charts.BLUE)),
        tooltip=["term:N", "label:N"])
    text = base.mark_text(align="left", dx=4, fontSize=10).encode(x=x, y=alt.Y("term:N", sort=None),
                                                                   text="label:N")
    return (bars + text).properties(width=400, height=200)


ESTIMATE = Exploration(
    name="brain_estimate",
    compute=estimate,
    params=(Choice("reading", "reading", brain.READINGS, "reconstruction"),
            Slider("firing_rate", "firing rate", 50, 1000, 50, 200, unit="Hz", grid_step=150, integer=True),
            Slider("purkinje_inputs", "synapses per Purkinje cell", 75000, 150000, 5000, 100000,
                   grid_step=25000, integer=True),
            Slider("time_steps", "time steps", 1, 6, 1, 5, integer=True, grid_step=1),
            Choice("flop_per_mac", "FLOP per multiply-add", (1, 2), 2)),
    chart=estimate_chart,
    description="Bar chart: the post's estimate of the brain's FLOP/s, one bar per term and one (dark "
                "grey) for the total, as log10 FLOP/s (x, printed beside each bar), for either reading "
                "of its lost formula.",
)


def tornado_frame(reading: str = "reconstruction") -> pd.DataFrame:
    """:func:`gpumodel.brain.sensitivity` with readable names, the ranges and their sources."""
    s = brain.sensitivity(reading)
    rows = []
    for name, low, high in zip(s["input"], s["low"], s["high"]):
        (lo, hi), why = brain.RANGES[name]
        rows.append({"input": LABELS[name], "range": f"{lo:,.6g} to {hi:,.6g}", "low": low, "high": high,
                     "factor": high / low, "why": why})
    return pd.DataFrame(rows).sort_values("factor", ascending=False).reset_index(drop=True)


def tornado_table(reading: str = "reconstruction") -> pd.DataFrame:
    """:func:`tornado_frame` with its numbers printed to three significant figures."""
    frame = tornado_frame(reading)
    for column in ("low", "high"):
        frame[column] = [f"{v:.3g}" for v in frame[column]]
    frame["factor"] = [f"{v:.3g}" for v in frame["factor"]]
    return frame.set_index("input")


def tornado_chart(reading: str = "reconstruction"):
    """Bars from the estimate at each input's low end to its high end, on a log axis, around the base."""
    frame = tornado_frame(reading)
    base = float(brain.estimate(reading))
    x = alt.X("low:Q", title="FLOP/s (log scale)", scale=alt.Scale(type="log", domain=[1e19, 1e22]),
              axis=alt.Axis(values=[1e19, 1e20, 1e21, 1e22], format=".0e"))
    bars = alt.Chart(frame).mark_bar().encode(
        x=x, x2="high:Q", y=alt.Y("input:N", title=None, sort=list(frame["input"])),
        tooltip=["input:N", "range:N", alt.Tooltip("low:Q", format=".3g"), alt.Tooltip("high:Q", format=".3g")])
    rule = alt.Chart(pd.DataFrame({"base": [base]})).mark_rule(color=charts.VERMILLION).encode(x="base:Q")
    return (bars + rule).properties(
        width=420, height=200,
        description=f"Tornado chart, log axis: for each of the {len(frame)} inputs of the brain estimate "
                    f"({reading} reading), a bar from the estimate in FLOP/s (x) at the input's low end "
                    f"to its high end; the vertical vermillion line is the base estimate, {base:.2g} FLOP/s.")


# --- other estimates -----------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _estimates() -> tuple:
    text = resources.files("gpumodel.data").joinpath("brain_estimates.csv").read_text()
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        rows.append({k: row[k] for k in row})
    return tuple(rows)


#: Readable names for the parts of brain_estimates.csv keys (the rest lose their underscores).
PARTS = {"functional_retina_moravec": "retina, Moravec-style",
         "functional_retina_dnn": "retina, deep networks",
         "synapse": "synapse count"}


def estimates_frame() -> pd.DataFrame:
    """Published estimates: who, year, kind, low / central / high FLOP/s, method."""
    def num(x):
        return float(x) if x else np.nan
    def label(r):
        surname = r["who"].split(" (")[0].split()[-1]
        part = r["key"].split("_", 2)[2] if r["key"].count("_") >= 2 else ""
        part = PARTS.get(part, part.replace("_", " "))
        return f"{surname} {r['year']}" + (f", {part}" if part else "")
    rows = [{"estimate": label(r), "kind": r["kind"], "low": num(r["flops_low"]),
             "central": num(r["flops_central"]), "high": num(r["flops_high"]), "method": r["method"],
             "source": r["source"]} for r in _estimates()]
    return pd.DataFrame(rows)


def estimates_table() -> pd.DataFrame:
    """:func:`estimates_frame` with its numbers printed to two significant figures."""
    frame = estimates_frame().set_index("estimate")
    for column in ("low", "central", "high"):
        frame[column] = ["" if pd.isna(v) else f"{v:.2g}" for v in frame[column]]
    return frame[["kind", "low", "central", "high", "method"]]


def estimates_chart(landauer: float):
    """Every estimate on one log axis (a range as a bar, a central value as a point), with the Landauer bound.

    A row with a central and a high value but no low one (Carlsmith's headline: 1e15 "more
    likely than not enough", under 10% that more than 1e21 is needed) is a judgment with no
    floor: a dot at its central value and a hollow triangle at its high one, no bar.
    """
    landauer = float(_checks.positive("landauer", _checks.scalar("landauer", landauer)))
    frame = estimates_frame()
    ceiling = frame["low"].isna() & frame["central"].notna() & (frame["high"] > frame["central"])
    frame["low"] = frame["low"].fillna(frame["central"])
    frame["high"] = frame["high"].fillna(frame["central"])
    frame["mid"] = frame["central"].fillna(np.sqrt(frame["low"] * frame["high"]))
    order = list(frame.sort_values("mid")["estimate"])
    tops = frame[ceiling]
    frame = frame[~ceiling]
    x = alt.X("low:Q", title="FLOP/s (log scale)", scale=alt.Scale(type="log", domain=[1e12, 1e26]))
    y = alt.Y("estimate:N", title=None, sort=order)
    color = alt.Color("kind:N", title=None, legend=alt.Legend(orient="bottom"))
    tip = ["estimate:N", "kind:N", "method:N", alt.Tooltip("low:Q", format=".2g"),
           alt.Tooltip("high:Q", format=".2g")]
    ranges = alt.Chart(frame).mark_rule(strokeWidth=6).encode(x=x, x2="high:Q", y=y, color=color, tooltip=tip)
    mids = pd.concat([frame, tops])
    points = alt.Chart(mids).mark_point(filled=True, size=60, color=charts.BLACK).encode(
        x=alt.X("mid:Q", scale=alt.Scale(type="log", domain=[1e12, 1e26])), y=y, tooltip=tip)
    ceilings = alt.Chart(tops).mark_point(shape="triangle-left", size=80, filled=False,
                                          color=charts.BLACK).encode(
        x=alt.X("high:Q", scale=alt.Scale(type="log", domain=[1e12, 1e26])), y=y, tooltip=tip)
    bound = alt.Chart(pd.DataFrame({"x": [landauer], "what": ["Landauer bound at 20 W"]})).mark_rule(
        strokeDash=[4, 3], color=charts.VERMILLION).encode(x="x:Q", tooltip=["what:N", alt.Tooltip("x:Q", format=".2g")])
    return (ranges + points + ceilings + bound).properties(
        width=440, height=300,
        description=f"Range chart, log axis: {len(mids)} published estimates of the brain's FLOP/s (one "
                    "row each, lowest at the top), a thick bar from each one's low to its high value "
                    "coloured by the kind of estimate and a black dot at its central value; "
                    "Carlsmith's overall judgment has no bar: a dot at the 1e15 FLOP/s he thinks more "
                    "likely than not enough and a hollow triangle at the 1e21 he thinks more than 90% "
                    "likely enough; the vertical "
                    f"dashed vermillion line is the Landauer bound at 20 W ({landauer:.2g}).")


LANDAUER_WATTS = 20.0


def synapse_count(log10_synapses, log10_rate, flop_per_event):
    """The synapse count of :func:`gpumodel.brain.synapse_count_flops` for the slider values, in FLOP/s."""
    flops = brain.synapse_count_flops(10.0**log10_synapses, 10.0**log10_rate, flop_per_event)
    return {"estimate": ["your synapse count"], "flops": [float(flops)]}


def synapse_count_chart(base):
    point = base.mark_point(shape="diamond", size=160, filled=True, color=charts.VERMILLION).encode(
        x=alt.X("flops:Q", scale=alt.Scale(type="log", domain=[1e12, 1e26])),
        y=alt.value(-12), tooltip=["estimate:N", alt.Tooltip("flops:Q", format=".2g")])
    rule = base.mark_rule(color=charts.VERMILLION).encode(x="flops:Q")
    return estimates_chart(float(brain.landauer_bit_erasures(LANDAUER_WATTS))) + rule + point


SYNAPSE_COUNT = Exploration(
    name="brain_synapse_count",
    compute=synapse_count,
    params=(Slider("log10_synapses", "log10(synapses)", 13, 15, 0.5, 14, grid_step=0.5),
            Slider("log10_rate", "log10(events per second)", 0, 3, 0.1, 2.3, grid_step=0.1),
            Choice("flop_per_event", "FLOP per synaptic event", (1, 2), 2)),
    chart=synapse_count_chart,
    description="Range chart, log axis: the published estimates of the brain's FLOP/s (one row each, "
                "a bar from low to high coloured by kind, a dot at the central value) and your "
                "synapse count, synapses x events per second x FLOP per event, as a vermillion "
                "vertical line and diamond.",
)


# --- the projection and the evidence ---------------------------------------------------------------

YEARS = np.arange(2013.0, 2081.0)
STARTS = {"Tianhe-2 HPCG, 2015 (the post)": ("hpcg", "2014-06", 2015.0),
          "El Capitan HPCG, 2025": ("hpcg", "2025-11", 2025.875),
          "El Capitan HPL, 2025": ("hpl", "2025-11", 2025.875)}


def _start(name):
    metric, listing, year = STARTS[name]
    row = next(r for r in brain.records(metric) if r["list"] == listing)
    return row["flops"], year


def projection(start, doubling_years):
    """Projected FLOP/s against year from a starting machine, with the year the estimate is reached."""
    flops, year = _start(start)
    target = float(brain.estimate())
    years = YEARS[YEARS >= np.floor(year)]
    reached = crossing_year(flops, target, doubling_years, year)
    return {"year": years, "log10_flops": np.log10(brain.projected_flops(years, flops, doubling_years, year)),
            "reached": np.full(years.size, reached)}


@lru_cache(maxsize=1)
def records_frame() -> pd.DataFrame:
    """The number-one systems on HPL and HPCG per list, as log10 FLOP/s."""
    rows = [{"year": r["year"], "log10_flops": np.log10(r["flops"]), "metric": r["metric"].upper(),
             "system": r["system"], "list": r["list"]} for m in brain.METRICS for r in brain.records(m)]
    return pd.DataFrame(rows)


def projection_chart(base):
    x = alt.X("year:Q", title="year", scale=alt.Scale(domain=[2013, 2080]), axis=alt.Axis(format="d"))
    y = alt.Y("log10_flops:Q", title="log10 FLOP/s", scale=alt.Scale(domain=[14, 23]))
    line = base.mark_line(color=charts.BLUE, clip=True).encode(x=x, y=y)
    reached = base.mark_rule(color=charts.BLUE, strokeDash=[2, 2]).encode(
        x="mean(reached):Q", tooltip=[alt.Tooltip("mean(reached):Q", title="year reached", format="d")])
    target = alt.Chart(pd.DataFrame({"y": [np.log10(float(brain.estimate()))]})).mark_rule(
        color=charts.VERMILLION, strokeDash=[4, 3]).encode(y="y:Q")
    points = alt.Chart(records_frame()).mark_point(filled=True).encode(
        x=x, y=y, shape=alt.Shape("metric:N", title="number one on"),
        color=alt.Color("metric:N", title="number one on", scale=alt.Scale(range=[charts.GREEN, charts.ORANGE])),
        tooltip=["list:N", "system:N", "metric:N", alt.Tooltip("log10_flops:Q", format=".2f")])
    return (line + reached + target + points).properties(width=440, height=280)


PROJECTION = Exploration(
    name="brain_projection",
    compute=projection,
    params=(Choice("start", "start from", tuple(STARTS), "Tianhe-2 HPCG, 2015 (the post)"),
            Slider("doubling_years", "doubling period", 0.5, 4.0, 0.1, 1.8, unit="years", grid_step=0.5)),
    chart=projection_chart,
    description="Line chart: log10 FLOP/s (y) against year (x, 2013 to 2080) of growth at a constant "
                "doubling period from a starting machine (blue line, a dotted vertical line where it "
                "reaches the estimate), against the post's estimate (dashed vermillion horizontal line) "
                "and the number-one systems on HPL and HPCG since 2013 (points, colour and shape by "
                "list).",
)


EXPLORATIONS = [SYNAPSE_COUNT, ESTIMATE, PROJECTION]


check_direct_calls(globals())
