"""One description, two interactives.

An :class:`Exploration` is a compute function (calling gpumodel models) plus the
description of its parameters and a chart of one state. From it:

* :func:`panel` builds an ipywidgets panel that re-runs ``compute`` live in Jupyter;
* :func:`static_chart` precomputes ``compute`` over a grid of parameter values and binds
  Vega-Lite parameters to sliders that select from that grid, so the static HTML page stays
  interactive without a kernel and without re-implementing the model in the browser.

:func:`show` picks the right one: the static chart in the book build, the panel elsewhere.
Explained in :doc:`/book/about` (section "How the interactive figures work").
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from . import charts

#: Names Vega already uses for its own signals; a parameter with one of them would silently
#: resize or restyle the chart in the static page.
RESERVED_NAMES = frozenset({"width", "height", "padding", "autosize", "background", "cursor",
                            "datum", "item", "event", "parent"})


def _check_name(name: str) -> None:
    if not name.isidentifier() or name in RESERVED_NAMES:
        raise ValueError(f"parameter name {name!r} must be an identifier and not one of "
                         f"{', '.join(sorted(RESERVED_NAMES))}")


@dataclass(frozen=True)
class Slider:
    """A numeric parameter: live range and step, and the coarser ``grid_step`` the static page precomputes."""
    name: str
    label: str
    min: float
    max: float
    step: float
    default: float
    unit: str = ""
    grid_step: float | None = None
    integer: bool = False

    def __post_init__(self):
        _check_name(self.name)
        if not self.min < self.max:
            raise ValueError(f"slider {self.name}: min must be < max")
        if not self.min <= self.default <= self.max:
            raise ValueError(f"slider {self.name}: default must be in [{self.min}, {self.max}]")
        if self.step <= 0 or (self.grid_step is not None and self.grid_step <= 0):
            raise ValueError(f"slider {self.name}: step and grid_step must be > 0")

    def grid(self) -> np.ndarray:
        """The values precomputed for the static page (always includes the default)."""
        step = self.grid_step or self.step
        values = np.arange(self.min, self.max + step / 2, step)
        values = np.union1d(values, [self.default])
        return np.round(values, 10)

    def snap_expression(self) -> str:
        """Vega expression matching a data row to the slider's current value."""
        return f"abs(datum['{self.name}'] - {self.name}) < 1e-9"

    def binding(self):
        step = self.grid_step or self.step
        label = f"{self.label} ({self.unit}) " if self.unit else f"{self.label} "
        return alt.binding_range(min=self.min, max=float(self.grid().max()), step=step, name=label)


@dataclass(frozen=True)
class Choice:
    """A categorical parameter (an accelerator, a dtype, a method)."""
    name: str
    label: str
    options: tuple
    default: object

    def __post_init__(self):
        _check_name(self.name)
        if self.default not in self.options:
            raise ValueError(f"choice {self.name}: default must be one of the options")

    def grid(self) -> Sequence:
        return list(self.options)

    def snap_expression(self) -> str:
        return f"datum['{self.name}'] == {self.name}"

    def binding(self):
        return alt.binding_select(options=list(self.options), name=f"{self.label} ")


@dataclass(frozen=True)
class Exploration:
    """A gpumodel computation, the description of its parameters, and how to draw one state."""
    name: str
    compute: Callable[..., Mapping[str, object]]
    params: tuple
    chart: Callable[[alt.Chart], alt.TopLevelMixin]
    description: str = ""
    notes: dict = field(default_factory=dict)

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def table(self, **values) -> pd.DataFrame:
        """``compute`` at ``values`` (defaults for the rest) as a table, parameters added as columns."""
        full = {**self.defaults(), **values}
        columns = dict(self.compute(**full))
        frame = pd.DataFrame({k: np.broadcast_to(v, np.broadcast(*columns.values()).shape)
                              for k, v in columns.items()})
        for name, value in full.items():
            frame[name] = value
        return frame

    def grid_table(self) -> pd.DataFrame:
        """``compute`` over every combination of the parameters' grids (the static page's data)."""
        names = [p.name for p in self.params]
        frames = [self.table(**dict(zip(names, combo)))
                  for combo in itertools.product(*(p.grid() for p in self.params))]
        return pd.concat(frames, ignore_index=True)

    def draw(self, **values):
        """The chart of one state as an Altair object."""
        return self.chart(alt.Chart(self.table(**values)))

    def live_spec(self) -> dict:
        """The chart's Vega-Lite spec with its data left as a named slot, built once per exploration."""
        cached = self.__dict__.get("_live_spec")
        if cached is None:
            cached = self.chart(alt.Chart(alt.Data(name=LIVE_DATA))).to_dict()
            object.__setattr__(self, "_live_spec", cached)
        return cached

    def render(self, **values) -> dict:
        """The mimebundle the live panel displays: ``compute`` at ``values`` poured into :meth:`live_spec`."""
        records = alt.utils.data.to_values(self.table(**values))["values"]
        spec = {**self.live_spec(), "datasets": {LIVE_DATA: records}}
        return alt.renderers.get()(spec)


LIVE_DATA = "live_table"


def static_chart(exploration: Exploration, decimals: int = 6):
    """The chart with sliders bound to Vega-Lite parameters over the precomputed grid."""
    data = exploration.grid_table().round(decimals)
    expression = " && ".join(p.snap_expression() for p in exploration.params)
    base = alt.Chart(data).transform_filter(expression)
    vl_params = [alt.param(name=p.name, value=p.default, bind=p.binding()) for p in exploration.params]
    return exploration.chart(base).add_params(*vl_params)


class Panel:
    """Live controls for an exploration; each change re-runs the model and updates the chart in place.

    The chart is a display with an id (``update_display_data``), not an ``Output`` widget, so no
    chart output is routed through widget state.
    """

    def __init__(self, exploration: Exploration):
        import ipywidgets as widgets

        self.exploration = exploration
        self.controls = {}
        for p in exploration.params:
            if isinstance(p, Choice):
                control = widgets.Dropdown(options=list(p.options), value=p.default, description=p.label)
            else:
                kind = widgets.IntSlider if p.integer else widgets.FloatSlider
                control = kind(min=p.min, max=p.max, step=p.step, value=p.default, description=p.label,
                               continuous_update=False, style={"description_width": "initial"})
            control.observe(self._redraw, names="value")
            self.controls[p.name] = control
        self.box = widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        self.handle = None
        self.bundle = exploration.render(**self.values())

    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _redraw(self, _=None):
        self.bundle = self.exploration.render(**self.values())
        if self.handle is not None:
            self.handle.update(self.bundle, raw=True)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.box)
        self.handle = display(self.bundle, raw=True, display_id=True)


def panel(exploration: Exploration) -> Panel:
    """An ipywidgets panel: moving a control re-runs the model and redraws the chart (needs a live kernel)."""
    return Panel(exploration)


def show(exploration: Exploration):
    """Display the exploration: bound Vega-Lite sliders in the book build, a live ipywidgets panel elsewhere."""
    from IPython.display import display

    display(static_chart(exploration) if charts.book_mode() else panel(exploration))


def callback_seconds(exploration: Exploration, values: dict) -> float:
    """Wall time of one live-panel callback without a frontend: recompute, refill the chart, render its output."""
    start = time.perf_counter()
    exploration.render(**values)
    return time.perf_counter() - start


def glue(name: str, value) -> None:
    """Make a computed number available to the prose as ``{glue:text}`name:.2f```; shows nothing in the cell."""
    from myst_nb import glue as myst_glue

    myst_glue(name, float(value), display=False)
