"""The interactive pattern: one description gives a live panel and a static chart with bound sliders."""
import json
from pathlib import Path

import numpy as np
import pytest

from gpumodel import explore, memory
from gpumodel.explorations import all_explorations
from gpumodel.explorations import memory_hierarchy as mh


def toy():
    return explore.Exploration(
        name="toy",
        compute=lambda tile, dtype: {"x": np.arange(3), "y": memory.matmul_tile_traffic(256, 1024, 1024, tile, dtype)
                                     * np.ones(3)},
        params=(explore.Slider("tile", "tile", 32, 128, 32, 96, integer=True), explore.Choice("dtype", "dtype", ("fp16", "fp32"), "fp16")),
        chart=lambda base: base.mark_line().encode(x="x:Q", y="y:Q"),
        description="Line chart of tile traffic (y) against x.")


def test_grid_covers_every_combination_and_the_default():
    e = toy()
    grid = e.grid_table()
    assert sorted(grid["tile"].unique()) == [32, 64, 96, 128]
    assert len(grid) == 4 * 2 * 3
    assert set(grid["dtype"]) == {"fp16", "fp32"}


def test_static_chart_binds_each_parameter_and_filters_on_it():
    spec = explore.static_chart(toy()).to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert params["tile"]["bind"]["input"] == "range" and params["tile"]["value"] == 96
    assert params["dtype"]["bind"]["input"] == "select" and params["dtype"]["bind"]["options"] == ["fp16", "fp32"]
    text = json.dumps(spec)
    assert "datum['tile'] - tile" in text and "datum['dtype'] == dtype" in text


def test_static_grid_values_come_from_the_model():
    grid = toy().grid_table()
    row = grid[(grid["tile"] == 128) & (grid["dtype"] == "fp32")].iloc[0]
    assert row["y"] == memory.matmul_tile_traffic(256, 1024, 1024, 128, "fp32")


def test_panel_recomputes_when_a_control_moves():
    calls = []
    e = toy()
    original = e.compute
    tracked = explore.Exploration(e.name, lambda **kw: calls.append(kw) or original(**kw), e.params, e.chart,
                                  e.description)
    live = explore.panel(tracked)
    first = json.dumps(live.bundle, sort_keys=True)
    live.controls["tile"].value = 64
    assert calls[0] == {"tile": 96, "dtype": "fp16"} and calls[-1] == {"tile": 64, "dtype": "fp16"}
    assert json.dumps(live.bundle, sort_keys=True) != first


def test_descriptions_reject_bad_ranges():
    with pytest.raises(ValueError, match="default"):
        explore.Slider("t", "t", 0, 10, 1, 11)
    with pytest.raises(ValueError, match="min must be < max"):
        explore.Slider("t", "t", 5, 5, 1, 5)
    with pytest.raises(ValueError, match="default"):
        explore.Choice("c", "c", ("a", "b"), "z")
    with pytest.raises(ValueError, match="'width' must be an identifier and not one of"):
        explore.Slider("width", "width", 1, 10, 1, 5)


@pytest.mark.parametrize("exploration", all_explorations(), ids=lambda e: e.name)
def test_every_exploration_defaults_are_on_its_grid(exploration):
    table = exploration.table(**exploration.defaults())
    assert len(table) > 0
    for p in exploration.params:
        assert p.default in list(p.grid())


def test_book_renderer_is_offline_and_deterministic():
    from gpumodel import charts

    html = charts.embed_html({"mark": "point", "data": {"values": [{"a": "</script>"}]}})
    assert html == charts.embed_html({"mark": "point", "data": {"values": [{"a": "</script>"}]}})
    assert "http" not in html and "\\u003c/script>" in html and "vegaEmbed" in html
    stored = html.split('-spec">', 1)[1].split("</script>", 1)[0]  # the first close is its own
    assert json.loads(stored) == {"mark": "point", "data": {"values": [{"a": "</script>"}]}}


def test_tile_traffic_exploration_matches_model():
    table = mh.TILE_TRAFFIC.table(tokens=256, tile=96, dtype="fp16", scheme="all_pairs")
    v100 = table[table["accelerator"].str.startswith("V100")].iloc[0]
    assert v100["loads"] == 3993
    assert v100["microseconds"] == pytest.approx(3993 * 96 * 96 * 2 / 900e9 * 1e6)


def test_live_render_pours_the_model_into_the_same_chart():
    e = toy()
    bundle = e.render(tile=64, dtype="fp32")
    assert set(bundle) == {"application/vnd.vega.v5+json", "text/plain"}
    vega = json.dumps(bundle["application/vnd.vega.v5+json"])
    expected = float(memory.matmul_tile_traffic(256, 1024, 1024, 64, "fp32"))
    assert f"{expected:.1f}" in vega or str(int(expected)) in vega
    assert e.live_spec() is e.live_spec()


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(step=float("nan")), "step"), (dict(max=float("inf")), "max"), (dict(default=True), "default"),
    (dict(default=2.5, integer=True), "default"), (dict(grid_step=0.5, integer=True), "grid_step"),
    (dict(step=1e-300), "step"), (dict(label=None), "label"), (dict(integer="yes"), "integer"),
    (dict(min="0"), "min"), (dict(max=10**400), "max"),
])
def test_slider_refuses_bad_fields_when_built(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        explore.Slider(**{"name": "t", "label": "t", "min": 0, "max": 10, "step": 1, "default": 5, **kwargs})


def test_choice_and_exploration_refuse_bad_fields():
    with pytest.raises(ValueError, match="options"):
        explore.Choice("c", "c", "ab", "a")
    with pytest.raises(ValueError, match="default"):
        explore.Choice("c", "c", (0, 1), False)  # False == 0, but a bool is not an option
    with pytest.raises(ValueError, match="compute"):
        explore.Exploration("e", None, (), lambda base: base)
    with pytest.raises(ValueError, match="params"):
        explore.Exploration("e", lambda: {}, ("tile",), lambda base: base)


@pytest.mark.parametrize("values, name", [
    (dict(tile=1000), "tile"), (dict(tile=96.5), "tile"), (dict(tile=float("nan")), "tile"),
    (dict(tile=True), "tile"), (dict(tile=[96]), "tile"), (dict(dtype="fp12"), "dtype"),
    (dict(dtype=["fp16"]), "dtype"), (dict(colour="red"), "colour"),
])
def test_table_errors_name_the_slider_or_choice(values, name):
    with pytest.raises(ValueError, match=name):
        toy().table(**values)


def test_every_static_grid_value_passes_its_check():
    for exploration in all_explorations():
        for p in exploration.params:
            for value in p.grid():
                assert p.check(value) is value  # grid_table calls table() with every one of them


def test_a_value_an_ulp_past_the_end_is_clamped_to_the_end():
    from gpumodel.explore import Slider
    slider = Slider("s", "a slider", 0.5, 1.0, 0.05, 1.0)
    past = float(np.arange(0.5, 1.025, 0.05)[-1])  # 1.0000000000000004: float steps
    assert past > 1.0 and slider.check(past) == 1.0
    with pytest.raises(ValueError, match="s must be in"):
        slider.check(1.01)


def toy_with_units():
    e = toy()
    tile = explore.Slider("tile", "GPU tile", 32, 128, 32, 96, unit="elements", integer=True)
    share = explore.Slider("share", "share of the step", 0.05, 0.95, 0.05, 0.4)
    return explore.Exploration("toy_units", lambda tile, dtype, share: e.compute(tile=tile, dtype=dtype),
                               (tile, e.params[1], share), e.chart, e.description)


def test_panel_stores_a_plain_sentence_not_the_widget_repr():
    bundle = explore.panel(toy_with_units()).controls_bundle()
    assert bundle["text/plain"] == (
        "Live panel with these controls; they become live when this cell runs in a Python kernel "
        "(JupyterLab or Jupyter Notebook). The chart below is drawn at their defaults.\n"
        "- GPU tile (elements): 32 to 128 in steps of 32 (default 96)\n"
        "- dtype: fp16 / fp32 (default fp16)\n"
        "- share of the step: 0.05 to 0.95 in steps of 0.05 (default 0.4)")
    # a live frontend still draws the widgets; clean_notebooks.py drops this part from stored outputs
    assert set(bundle) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
    assert "HBox(" not in json.dumps(bundle)


def test_panel_displays_the_sentence_then_the_chart(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display",
                        lambda obj, raw=False, display_id=None: shown.append(obj) or object())
    live = explore.panel(toy())
    live._ipython_display_()
    assert shown[0]["text/plain"].startswith("Live panel with these controls")
    assert "HBox(" not in json.dumps(shown) and shown[1] is live.bundle


@pytest.mark.parametrize("exploration", all_explorations(), ids=lambda e: e.name)
def test_live_labels_match_the_static_bindings_and_show_units(exploration):
    live = explore.panel(exploration)
    bound = {p["name"]: p["bind"]["name"] for p in explore.static_chart(exploration).to_dict()["params"]}
    for p in exploration.params:
        control = live.controls[p.name]
        assert control.description == explore.control_label(p) == bound[p.name].strip()
        assert control.style.description_width == "initial"  # never cut to "latency ta…"
        if isinstance(p, explore.Slider) and p.unit:
            assert control.description.endswith(f" ({p.unit})")
    assert "HBox(" not in live.summary()


def test_control_label_adds_the_unit_only_to_sliders_with_one():
    assert explore.control_label(explore.Slider("t", "GPU tile", 32, 128, 32, 96, unit="elements")) == "GPU tile (elements)"
    assert explore.control_label(explore.Slider("t", "share", 0, 1, 0.1, 0.5)) == "share"
    assert explore.control_label(explore.Choice("c", "latency table", ("Volta", "Ampere"), "Volta")) == "latency table"


@pytest.mark.parametrize("name", ["var", "this", "new", "function", "in", "typeof", "if", "null",
                                  "true", "undefined", "NaN", "PI", "_"])
def test_names_the_chart_expressions_reserve_are_refused(name):
    with pytest.raises(ValueError, match="name"):
        explore.Slider(name, "a slider", 0, 1, 0.5, 0.5)
    with pytest.raises(ValueError, match="name"):
        explore.Choice(name, "a choice", ("a", "b"), "a")


def test_no_exploration_uses_a_reserved_name():
    for exploration in all_explorations():
        for param in exploration.params:
            assert param.name not in explore.EXPRESSION_WORDS | explore.RESERVED_NAMES


@pytest.mark.parametrize("low, high", [(1.0, 1e301), (-1e300, 0.0), (0.0, 1e16)])
def test_a_slider_beyond_the_largest_magnitude_is_refused_naming_min_and_max(low, high):
    """Its grid is rounded to 10 decimals: ends past 1e15 would overflow to inf (a leaked
    RuntimeWarning and an infinite grid), so they are refused with the allowed range."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"min and max must be within \+-1e\+15"):
            explore.Slider("s", "s", low, high, (high - low) / 10, low)
    assert explore.Slider("s", "s", -1e15, 1e15, 2e9, 0.0).grid().size == 1_000_001


@pytest.mark.parametrize("e", all_explorations(), ids=lambda e: e.name)
def test_live_chart_keeps_its_fixed_layers_and_is_a_vega5_spec(e):
    """The live table is added to the spec's own datasets (published estimates, reference lines), and
    the chart reaches Jupyter as the Vega 5 spec JupyterLab's Vega 5 renderer runs, with every dataset filled.

    Before: the live table replaced the datasets, the brain's synapse chart drew at 0 x 0, and
    JupyterLab redrew it in a loop (tests/test_jupyter_ui.py).
    """
    from gpumodel import charts

    vega = e.render(**e.defaults())[charts.JUPYTER_MIMETYPE]
    assert vega["$schema"] == "https://vega.github.io/schema/vega/v5.json"
    own = (e.live_spec().get("datasets") or {})
    rows = {d["name"]: d.get("values") for d in vega["data"]}
    for name, values in own.items():
        assert rows[name] == values
    assert rows[explore.LIVE_DATA]


def test_jupyter_renderer_refuses_a_chart_without_its_named_data():
    from gpumodel import charts
    from gpumodel.explorations import brain as bx

    spec = {**bx.SYNAPSE_COUNT.live_spec(), "datasets": {explore.LIVE_DATA: [{"flops": 1.0}]}}
    with pytest.raises(ValueError, match="named data it does not carry"):
        charts._jupyter_renderer(spec)
    charts.check_datasets(bx.SYNAPSE_COUNT.live_spec() | {"datasets": {
        **bx.SYNAPSE_COUNT.live_spec()["datasets"], explore.LIVE_DATA: []}})
    with pytest.raises(ValueError):
        charts.check_datasets([])


def test_jupyter_compiler_is_vega_lite_5():
    from gpumodel import charts

    assert charts.jupyter_vl_version().startswith("5.")
    assert charts.JUPYTER_VEGA_MAJOR == 5


def _lab_redraw():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "lab_redraw.py"
    spec = importlib.util.spec_from_file_location("lab_redraw", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lab_redraw_measures_one_slider_panel_per_chapter():
    """``make bench`` times a live panel per chapter in JupyterLab; each must have a slider."""
    import nbformat

    from gpumodel import explorations
    from gpumodel.explore import Slider

    lab = _lab_redraw()
    panels = lab._panels()
    chapters = {"how_a_gpu_runs", "memory_hierarchy", "tensor_cores", "low_precision",
                "sparsity", "parallelism", "choosing_a_gpu", "brain"}
    assert set(panels) == chapters
    for module, name in panels.items():
        exploration = getattr(getattr(explorations, module), name)
        assert any(isinstance(p, Slider) for p in exploration.params)
        nb = nbformat.from_dict(lab._notebook(module, name))
        nbformat.validate(nb)
        assert f"panel(m.{name})" in nb.cells[0].source


def test_a_choice_refuses_repeated_or_unhashable_options():
    with pytest.raises(ValueError, match="repeat"):
        explore.Choice("a", "A", (1, 1), 1)
    with pytest.raises(ValueError, match="hashable"):
        explore.Choice("a", "A", ([1], [2]), [1])
    assert explore.Choice("a", "A", (1, True, "1"), 1).options == (1, True, "1")


def test_a_slider_whose_grid_passes_the_largest_count_is_refused_at_construction():
    with pytest.raises(ValueError, match="step gives 1,000,002 grid values with the default"):
        explore.Slider("s", "S", 0, 1e15, 1e9, 5)
