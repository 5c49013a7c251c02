"""The book's charts carry their data compactly and draw exactly as before (issue 25).

:func:`gpumodel.charts.compact_spec` stores a chart's large inline datasets as columns; these
tests prove nothing the chart reads is lost or changed: the rows come back from the columns, a
column read only by an expression or a tooltip stays, and the drawn SVG (slider states included)
is byte for byte the SVG of the row-wise spec.
"""
import copy
import json
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest

from gpumodel import charts, explore
from gpumodel.explorations import memory_hierarchy as mh

#: Explorations drawn both ways (cheap to precompute; a layered chart, a heat map with text, lines).
DRAWN = (mh.REGIMES, mh.L2_FIT, mh.ROOFLINE)


def _svg(spec: dict, values: dict) -> str:
    import vl_convert as vlc

    spec = copy.deepcopy(spec)
    for param in spec.get("params", []):
        if param["name"] in values:
            param["value"] = values[param["name"]]
    svg = vlc.vegalite_to_svg(spec, vl_version=charts._vl_version())
    return re.sub(r"clip\d+", "clip", svg)  # vl-convert numbers clip paths across calls


def _size(spec: dict) -> int:
    return len(json.dumps(spec.get("datasets", {}), separators=(",", ":")))


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


@pytest.mark.parametrize("exploration", DRAWN, ids=lambda e: e.name)
def test_compact_chart_draws_the_same_svg(exploration):
    spec = explore.static_chart(exploration).to_dict()
    small = charts.compact_spec(spec)
    assert _size(small) * 4 < _size(spec)
    assert _size(small) <= 150_000
    last = {p.name: _plain(list(p.grid())[-1]) for p in exploration.params}
    first = {p.name: _plain(list(p.grid())[0]) for p in exploration.params}
    for values in ({}, first, last):
        assert _svg(small, values) == _svg(spec, values), values


@pytest.mark.parametrize("exploration", DRAWN, ids=lambda e: e.name)
def test_rows_come_back_from_the_columns(exploration):
    spec = explore.static_chart(exploration).to_dict()
    back = charts.expand_data(charts.compact_spec(spec))
    assert {k: v for k, v in back.items() if k != "datasets"} == {
        k: v for k, v in spec.items() if k != "datasets"}
    for name, rows in spec["datasets"].items():
        kept = back["datasets"][name]
        assert len(kept) == len(rows)
        assert all(r[k] == v for r, row in zip(rows, kept) for k, v in row.items())


def _toy(rows=100, **mark):
    frame = [{"x": i, "y": i / 7, "unused": f"u{i}", "hidden": i % 3, "kind": "ab"[i % 2],
              "tip": i * 1.5} for i in range(rows)]
    chart = alt.Chart(pd.DataFrame(frame)).mark_point(**mark).encode(
        x="x:Q", y="y:Q", color="kind:N", tooltip=["tip:Q"]).transform_filter("datum.hidden < 2")
    return chart.properties(description="toy").to_dict()


def test_unread_columns_go_and_read_ones_stay():
    spec = _toy()
    small = charts.compact_spec(spec)
    (datum,) = next(iter(small["datasets"].values()))
    assert set(datum) == {"x", "y", "hidden", "kind", "tip"}  # "unused" is read by nothing
    steps = small["transform"]
    assert steps[0] == {"flatten": ["x", "y", "hidden", "kind", "tip"]}
    assert {"calculate": '["a","b"][datum["kind"]]', "as": "kind"} in steps
    assert steps[-1] == {"filter": "datum.hidden < 2"}  # the chart's own transforms follow
    assert _svg(small, {}) == _svg(spec, {})


def test_a_mark_showing_its_whole_datum_keeps_every_column():
    small = charts.compact_spec(_toy(tooltip=True))
    (datum,) = next(iter(small["datasets"].values()))
    assert "unused" in datum


def test_small_and_looked_up_datasets_stay_rows():
    assert charts.compact_spec(_toy(rows=10)) == _toy(rows=10)
    spec = _toy()
    name = spec["data"]["name"]
    spec["transform"].insert(0, {"lookup": "x", "from": {"data": {"name": name}, "key": "x",
                                                        "fields": ["y"]}, "as": ["y2"]})
    assert charts.compact_spec(spec)["datasets"] == spec["datasets"]
    with pytest.raises(ValueError, match="min_rows"):
        charts.compact_spec(spec, min_rows=0)


def test_grids_are_as_fine_as_their_sliders():
    """The L2 grid holds every value its slider allows; the regime grid every 2 µs (150 KB)."""
    tokens = next(p for p in mh.L2_FIT.params if p.name == "tokens")
    assert list(tokens.grid()) == list(np.arange(tokens.min, tokens.max + 1, tokens.step))
    overhead = next(p for p in mh.REGIMES.params if p.name == "overhead_us")
    assert len(overhead.grid()) >= 11
