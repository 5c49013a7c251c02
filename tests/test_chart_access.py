"""Every chart the book draws is accessible: a text alternative, its data behind a toggle, colour that
survives colour-blindness and greyscale (the book's palette, and a second channel where colour tells
series apart in a line or point chart)."""
import importlib
import inspect
import json

import altair as alt
import pytest

from gpumodel import charts, explore
from gpumodel.explorations import CHAPTERS, all_explorations

SEQUENTIAL_SCHEMES = {"viridis", "cividis", "magma", "inferno", "plasma"}
ALLOWED = {c.lower() for c in charts.PALETTE + charts.GREYS}
SERIES_MARKS = {"line", "point", "circle", "square", "trail"}
#: Channels that tell series apart without colour.
SECOND_CHANNELS = {"shape", "strokeDash", "x", "y", "xOffset", "yOffset", "row", "column", "facet", "text"}


def _extra_charts():
    """Every chart-drawing function of gpumodel.explorations that is not an exploration's, called."""
    from gpumodel.explorations import brain as bx, low_precision as lp, parallelism as px, validation as vx

    args = {"brain.estimates_chart": lambda: (1e21,),
            "low_precision.dynamic_scaling_chart": lambda: (lp.dynamic_scaling_frame("fp16", growth_interval=200),),
            "parallelism.collective_chart": lambda: (px.collective_frame(),)}
    exploration_charts = {e.chart for e in all_explorations()}
    found = {}
    for chapter in CHAPTERS + ("validation",):
        module = importlib.import_module(f"gpumodel.explorations.{chapter}")
        for name, func in vars(module).items():
            if (not name.endswith("chart") or not inspect.isfunction(func)
                    or inspect.unwrap(func) in exploration_charts
                    or func.__module__ != module.__name__ or name == "chart" and chapter != "validation"):
                continue
            key = f"{chapter}.{name}"
            required = [p for p in inspect.signature(func).parameters.values() if p.default is p.empty]
            if key == "validation.chart":
                from gpumodel import validate

                for book_chapter in validate.CHAPTERS:
                    found[f"{key}({book_chapter})"] = lambda c=book_chapter: vx.chart(c)
                continue
            assert not required or key in args, f"{key} needs arguments: add them to _extra_charts"
            found[key] = (lambda f=func, k=key: f(*args[k]())) if required else func
    return found


EXTRA = _extra_charts()


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _colours(channel: dict):
    if "value" in channel:
        yield channel["value"]
    conditions = channel.get("condition", [])
    for condition in conditions if isinstance(conditions, list) else [conditions]:
        if "value" in condition:
            yield condition["value"]


def colour_problems(spec: dict) -> list[str]:
    """Colours outside the book's palette and series told apart by colour alone, in a Vega-Lite spec."""
    problems = []
    for node in _walk({k: v for k, v in spec.items() if k not in ("datasets", "config", "data")}):
        mark = node.get("mark")
        if isinstance(mark, dict):
            for key in ("color", "fill", "stroke"):
                if isinstance(mark.get(key), str) and mark[key].lower() not in ALLOWED:
                    problems.append(f"mark {key} {mark[key]} is not in charts.PALETTE or charts.GREYS")
        encoding = node.get("encoding")
        if not isinstance(encoding, dict):
            continue
        for key in ("color", "fill", "stroke"):
            channel = encoding.get(key)
            if not isinstance(channel, dict):
                continue
            for colour in _colours(channel):
                if isinstance(colour, str) and colour.lower() not in ALLOWED:
                    problems.append(f"{key} value {colour} is not in charts.PALETTE or charts.GREYS")
            scale = channel.get("scale") or {}
            scheme = scale.get("scheme")
            scheme = scheme.get("name") if isinstance(scheme, dict) else scheme
            if scheme is not None and not (channel.get("type") == "quantitative" and scheme in SEQUENTIAL_SCHEMES):
                problems.append(f"{key} uses scheme {scheme!r}: categorical colour must use charts.PALETTE "
                                f"(the theme's default), sequential colour one of {sorted(SEQUENTIAL_SCHEMES)}")
            if isinstance(scale.get("range"), list):
                bad = [c for c in scale["range"] if not isinstance(c, str) or c.lower() not in ALLOWED]
                if bad:
                    problems.append(f"{key} range has {bad}, not in charts.PALETTE or charts.GREYS")
            field = channel.get("field")
            mark_type = mark.get("type") if isinstance(mark, dict) else mark
            with_points = isinstance(mark, dict) and mark.get("point")
            if field and channel.get("type") in ("nominal", "ordinal") and (
                    mark_type in SERIES_MARKS or with_points):
                others = {c for c in SECOND_CHANNELS if isinstance(encoding.get(c), dict)
                          and encoding[c].get("field") == field}
                if not others:
                    problems.append(f"{mark_type} mark tells {field!r} apart by colour alone: add a shape or "
                                    "strokeDash encoding of the same field")
    return problems


def _specs():
    for e in all_explorations():
        yield f"{e.name} (static)", lambda e=e: explore.static_chart(e).to_dict()
        yield f"{e.name} (live)", lambda e=e: {**e.live_spec(), "datasets": {}}
    for key, make in EXTRA.items():
        yield key, lambda make=make: make().to_dict()


SPECS = dict(_specs())


@pytest.mark.parametrize("name", list(SPECS))
def test_chart_has_a_text_alternative_and_readable_colour(name):
    spec = SPECS[name]()
    text = charts.check_description(spec)
    assert len(text) >= 60, f"{name}: description too short to say what the axes and series are: {text!r}"
    assert colour_problems(spec) == [], name


@pytest.mark.parametrize("exploration", all_explorations(), ids=lambda e: e.name)
def test_exploration_text_names_every_control(exploration):
    text = exploration.alt_text()
    assert text.startswith(exploration.description.strip())
    for p in exploration.params:
        assert p.label in text


def test_colour_check_can_fail():
    bad = alt.Chart(alt.Data(values=[{"a": 1, "s": "x"}])).mark_line().encode(
        x="a:Q", y="a:Q", color=alt.Color("s:N", scale=alt.Scale(scheme="category10")))
    problems = colour_problems(bad.to_dict())
    assert any("scheme" in p for p in problems) and any("colour alone" in p for p in problems)
    tableau = alt.Chart(alt.Data(values=[{"a": 1}])).mark_point(color="#d62728").encode(x="a:Q")
    assert colour_problems(tableau.to_dict())
    good = alt.Chart(alt.Data(values=[{"a": 1, "s": "x"}])).mark_line().encode(
        x="a:Q", y="a:Q", color="s:N", strokeDash="s:N")
    assert colour_problems(good.to_dict()) == []


def test_the_theme_sets_the_palette_once():
    spec = alt.Chart(alt.Data(values=[{"a": 1}])).mark_point().encode(x="a:Q").to_dict()
    assert spec["config"]["range"]["category"] == list(charts.PALETTE)
    assert spec["config"]["range"]["ramp"] == {"scheme": charts.SEQUENTIAL}


@pytest.mark.parametrize("renderer", ["_book_renderer", "_jupyter_renderer"])
@pytest.mark.parametrize("description", [None, "", "   ", 3])
def test_renderers_refuse_a_chart_without_a_description(renderer, description):
    spec = alt.Chart(alt.Data(values=[{"a": 1}])).mark_point().encode(x="a:Q").to_dict()
    if description is not None:
        spec["description"] = description
    with pytest.raises(ValueError, match="description"):
        getattr(charts, renderer)(spec)


def test_an_exploration_needs_a_description():
    with pytest.raises(ValueError, match="description"):
        explore.Exploration("e", lambda: {"y": [1]}, (), lambda base: base.mark_point(), description=" ")


def test_book_html_has_the_data_at_the_default_settings():
    e = explore.Exploration(
        "toy", lambda n, kind: {"x": [0, 1, 2], "y": [n, 2 * n, 3 * n]},
        (explore.Slider("n", "n", 1, 5, 1, 2, integer=True), explore.Choice("kind", "kind", ("a", "b"), "b")),
        lambda base: base.mark_line().encode(x="x:Q", y="y:Q"), description="Line of y against x.")
    html = charts._book_renderer(explore.static_chart(e).to_dict())["text/html"]
    assert html.index("vegaEmbed") < html.index("<details")
    assert "<summary>Data behind this chart (at the default settings: n = 2, kind = b)</summary>" in html
    table = html[html.index("<table"):]
    assert table.count("<tr>") == 4  # header + the three rows at n = 2, kind = b (not the grid's 30)
    assert "<td>6</td>" in table and "<td>10</td>" not in table
    assert '<th scope="col">y</th>' in table and '<th scope="col">n</th>' not in table
    assert html == charts._book_renderer(explore.static_chart(e).to_dict())["text/html"]


def test_long_tables_are_cut_and_say_so():
    rows = [{"i": i, "v": i / 3, "s": "<b>"} for i in range(500)]
    spec = alt.Chart(alt.Data(values=rows)).mark_point().encode(x="i:Q").properties(description="d").to_dict()
    html = charts.data_html(spec, max_rows=100)
    assert "400 rows cut" in html and "first 100 of 500 rows" in html
    assert html.count("<tr>") == 101 and "&lt;b&gt;" in html and "<td>0.333333</td>" in html
    with pytest.raises(ValueError, match="max_rows"):
        charts.data_html(spec, max_rows=0)


def test_every_chart_function_is_covered():
    assert len(EXTRA) >= 10, sorted(EXTRA)
    assert all(json.dumps(SPECS[k]()["description"]) for k in list(SPECS)[:1])


def test_identity_line_is_the_diagonal_and_refuses_a_bad_range():
    from gpumodel import charts

    spec = charts.identity_line(0.5, 2.0).to_dict()
    assert spec["encoding"]["x"]["field"] == spec["encoding"]["y"]["field"] == "x"
    assert spec["mark"]["strokeDash"] == [4, 3]
    for lo, hi in ((2.0, 0.5), (1.0, 1.0), (float("nan"), 1.0), (0.0, float("inf"))):
        with pytest.raises(ValueError, match="lo < hi"):
            charts.identity_line(lo, hi)


def test_error_band_area_spans_the_two_errors_and_refuses_bad_ones():
    from gpumodel import charts
    spec = charts.error_band_area(1.0, 10.0, -0.2, 0.5).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert [r["band_low"] for r in rows] == pytest.approx([0.8, 8.0])
    assert [r["band_high"] for r in rows] == pytest.approx([1.5, 15.0])
    for bad in ((0.0, 1.0, 0.0, 0.1), (2.0, 1.0, 0.0, 0.1), (1.0, 2.0, -1.5, 0.1),
                (1.0, 2.0, 0.3, 0.1), (1.0, float("inf"), 0.0, 0.1)):
        with pytest.raises(ValueError, match="error_band_area"):
            charts.error_band_area(*bad)
