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

import functools
import inspect
import itertools
import numbers
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
#: Words the static chart's Vega expressions cannot use as a parameter's name: JavaScript's
#: reserved words and literals (a syntax error) and Vega's constants and its internal ``_``
#: (the expression would read the constant, not the slider).
EXPRESSION_WORDS = frozenset("""
    break case catch class const continue debugger default delete do else enum export extends
    false finally for function if implements import in instanceof interface let new null
    package private protected public return static super switch this throw true try typeof
    var void while with yield await arguments eval undefined NaN Infinity
    E LN2 LN10 LOG2E LOG10E PI SQRT1_2 SQRT2 MIN_VALUE MAX_VALUE _
""".split())


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name.isidentifier() or name in RESERVED_NAMES:
        raise ValueError(f"parameter name {name!r:.60} must be an identifier and not one of "
                         f"{', '.join(sorted(RESERVED_NAMES))}")
    if name in EXPRESSION_WORDS:
        raise ValueError(f"parameter name {name!r} is a word of the chart's expression "
                         "language (a JavaScript reserved word or a Vega constant); rename it")


#: Most values a slider may step through (the static page precomputes its grid).
MAX_SLIDER_VALUES = 10**6
#: Largest magnitude of a slider's ends: its grid is rounded to 10 decimals, which must not overflow.
MAX_SLIDER_MAGNITUDE = 1e15


def _number(value) -> float | None:
    """``value`` as a finite float, or None if it is not one real, finite number (bools are not
    numbers; a 0-d array of a number and a Fraction are)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if np.isfinite(number) else None


def _real(owner: str, field_name: str, value) -> float:
    """``value`` as a finite float; bools, strings, arrays, None, NaN and inf are refused, naming the field."""
    number = _number(value)
    if number is None:
        raise ValueError(f"{owner}: {field_name} must be a finite number (got {value!r:.60})")
    return number


def _member(value, options) -> bool:
    """Whether ``value`` equals one of ``options`` of the same kind (True is not 1, "1" is not 1)."""
    for option in options:
        if isinstance(option, (bool, np.bool_)) != isinstance(value, (bool, np.bool_)):
            continue
        if isinstance(option, str) != isinstance(value, str):
            continue
        try:
            if bool(option == value):
                return True
        except (TypeError, ValueError):
            continue
    return False


def _string(owner: str, field_name: str, value) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{owner}: {field_name} must be a string (got {value!r:.60})")


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
        owner = f"slider {self.name}"
        _string(owner, "label", self.label)
        _string(owner, "unit", self.unit)
        if not isinstance(self.integer, (bool, np.bool_)):
            raise ValueError(f"{owner}: integer must be True or False (got {self.integer!r:.60})")
        low, high = _real(owner, "min", self.min), _real(owner, "max", self.max)
        default, step = _real(owner, "default", self.default), _real(owner, "step", self.step)
        grid_step = None if self.grid_step is None else _real(owner, "grid_step", self.grid_step)
        for field_name, number in (("min", low), ("max", high), ("default", default),
                                   ("step", step), ("grid_step", grid_step)):
            given = getattr(self, field_name)
            if number is not None and not isinstance(given, (int, float, np.integer, np.floating)):
                object.__setattr__(self, field_name, number)  # a 0-d array or a Fraction: a float
        if not low < high:
            raise ValueError(f"{owner}: min must be < max")
        if max(abs(low), abs(high)) > MAX_SLIDER_MAGNITUDE:
            raise ValueError(f"{owner}: min and max must be within +-{MAX_SLIDER_MAGNITUDE:g} "
                             f"(got [{low:g}, {high:g}])")
        if not low <= default <= high:
            raise ValueError(f"{owner}: default must be in [{self.min}, {self.max}]")
        if step <= 0 or (grid_step is not None and grid_step <= 0):
            raise ValueError(f"{owner}: step and grid_step must be > 0")
        for field_name, size in (("step", step), ("grid_step", grid_step)):
            if size is not None and not (high - low) / size <= MAX_SLIDER_VALUES:
                raise ValueError(f"{owner}: {field_name} must be at least (max - min) / {MAX_SLIDER_VALUES:g} "
                                 f"(got {size:g} for a range of {high - low:g})")
        if self.integer:
            for field_name, value in (("min", low), ("max", high), ("default", default), ("step", step),
                                      ("grid_step", grid_step)):
                if value is not None and value != np.floor(value):
                    raise ValueError(f"{owner}: integer slider, so {field_name} must be a whole number "
                                     f"(got {value:g})")
        # The static grid may end one grid step past max (its last value); those values are valid too.
        grid = self.grid()  # at most MAX_SLIDER_VALUES steps: that many values and both ends
        if grid.size > MAX_SLIDER_VALUES + 1:
            raise ValueError(f"{owner}: {'grid_step' if grid_step is not None else 'step'} gives "
                             f"{grid.size:,} grid values with the default, more than "
                             f"{MAX_SLIDER_VALUES + 1:,}; take a larger one")
        object.__setattr__(self, "_top", max(high, float(grid.max())))

    def check(self, value):
        """``value`` if this slider can take it (a number in [min, max], whole if ``integer``), else a ValueError naming the slider."""
        number = _number(value)
        if number is None:
            raise ValueError(f"{self.name} must be a single finite number in [{self.min}, {self.max}] "
                             f"(got {value!r:.60})")
        slack = 1e-9 * max(1.0, self._top - float(self.min))  # float steps overshoot by an ulp or so
        if not (float(self.min) - slack <= number <= self._top + slack):
            raise ValueError(f"{self.name} must be in [{self.min}, {self._top:g}] (got {value!r:.60})")
        if self.integer and number != np.floor(number):
            raise ValueError(f"{self.name} must be a whole number in [{self.min}, {self.max}] (got {value!r:.60})")
        if not float(self.min) <= number <= self._top:
            return min(max(number, float(self.min)), self._top)  # an ulp past an end: the end
        return value if isinstance(value, (int, float, np.integer, np.floating)) else number

    def grid(self) -> np.ndarray:
        """The values precomputed for the static page (always includes the default)."""
        step = float(self.grid_step or self.step)
        values = np.round(np.arange(float(self.min), float(self.max) + step / 2, step), 10)
        return np.union1d(values, [round(float(self.default), 10)])

    def snap_expression(self) -> str:
        """Vega expression matching a data row to the slider's current value."""
        return f"abs(datum['{self.name}'] - {self.name}) < 1e-9"

    def binding(self):
        step = self.grid_step or self.step
        return alt.binding_range(min=self.min, max=float(self.grid().max()), step=step,
                                 name=control_label(self) + " ")

    def summary(self) -> str:
        """One line for a reader without a kernel: label (unit), range, step and default."""
        return (f"{control_label(self)}: {_plain(self.min)} to {_plain(self.max)} in steps of "
                f"{_plain(self.step)} (default {_plain(self.default)})")


@dataclass(frozen=True)
class Choice:
    """A categorical parameter (an accelerator, a dtype, a method)."""
    name: str
    label: str
    options: tuple
    default: object

    def __post_init__(self):
        _check_name(self.name)
        _string(f"choice {self.name}", "label", self.label)
        if not isinstance(self.options, (tuple, list)) or not self.options:
            raise ValueError(f"choice {self.name}: options must be a non-empty tuple (got {self.options!r:.60})")
        for index, option in enumerate(self.options):
            try:
                hash(option)
            except TypeError:
                raise ValueError(f"choice {self.name}: options must be numbers, strings or other "
                                 f"hashable values (got {option!r:.60})") from None
            if _member(option, self.options[:index]):
                raise ValueError(f"choice {self.name}: options must not repeat (got {option!r:.60} twice)")
        if not _member(self.default, self.options):
            raise ValueError(f"choice {self.name}: default must be one of the options")

    def check(self, value):
        """``value`` if it is one of the options, else a ValueError naming the choice."""
        if not _member(value, self.options):
            raise ValueError(f"{self.name} must be one of {', '.join(map(repr, self.options))} (got {value!r:.60})")
        return value

    def grid(self) -> Sequence:
        return list(self.options)

    def snap_expression(self) -> str:
        return f"datum['{self.name}'] == {self.name}"

    def binding(self):
        return alt.binding_select(options=list(self.options), name=control_label(self) + " ")

    def summary(self) -> str:
        """One line for a reader without a kernel: label, the options and the default."""
        return f"{control_label(self)}: {' / '.join(map(str, self.options))} (default {self.default})"


def control_label(param: Slider | Choice) -> str:
    """The label a control shows, ``label (unit)`` for a slider with a unit; the static page's
    bound sliders and the live panel both use it."""
    if isinstance(param, Slider) and param.unit:
        return f"{param.label} ({param.unit})"
    return param.label


def _plain(value) -> str:
    """A number as the controls show it: 16384, 0.05, 1.8 (no trailing zeros, no exponent below 1e10)."""
    return f"{float(value):.10g}"


@dataclass(frozen=True)
class Exploration:
    """A gpumodel computation, the description of its parameters, and how to draw one state."""
    name: str
    compute: Callable[..., Mapping[str, object]]
    params: tuple
    chart: Callable[[alt.Chart], alt.TopLevelMixin]
    description: str = ""
    notes: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"exploration name must be a non-empty string (got {self.name!r:.60})")
        for field_name in ("compute", "chart"):
            if not callable(getattr(self, field_name)):
                raise ValueError(f"exploration {self.name}: {field_name} must be callable "
                                 f"(got {getattr(self, field_name)!r:.60})")
        if not isinstance(self.params, (tuple, list)) or not all(isinstance(p, (Slider, Choice)) for p in self.params):
            raise ValueError(f"exploration {self.name}: params must be a tuple of Slider and Choice "
                             f"(got {self.params!r:.60})")
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"exploration {self.name}: params must have distinct names (got {names})")
        if not isinstance(self.description, str) or not self.description.strip():
            raise ValueError(f"exploration {self.name}: description must be a non-empty string saying what the "
                             f"chart shows, its axes and series (got {self.description!r:.60})")
        if not isinstance(self.notes, dict):
            raise ValueError(f"exploration {self.name}: notes must be a dict (got {self.notes!r:.60})")

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def table(self, **values) -> pd.DataFrame:
        """``compute`` at ``values`` (defaults for the rest) as a table, parameters added as columns.

        Each value is checked against its Slider or Choice first, so a bad one raises a ValueError
        naming the slider or choice rather than the model parameter it feeds.
        """
        params = {p.name: p for p in self.params}
        unknown = sorted(set(values) - set(params))
        if unknown:
            raise ValueError(f"exploration {self.name} has no parameter {', '.join(unknown)} "
                             f"(its parameters: {', '.join(params)})")
        values = {name: params[name].check(value) for name, value in values.items()}
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

    def alt_text(self) -> str:
        """The chart's text alternative: :attr:`description` plus what each control changes."""
        controls = "; ".join(
            control_label(p)
            + (f" from {p.min:g} to {p.max:g}" if isinstance(p, Slider) else
               f", one of {', '.join(map(str, p.options))}")
            + f", default {p.default}" for p in self.params)
        text = self.description.strip()
        return f"{text} Controls: {controls}." if controls else text

    def draw(self, **values):
        """The chart of one state as an Altair object."""
        return self.chart(alt.Chart(self.table(**values))).properties(description=self.alt_text())

    def live_spec(self) -> dict:
        """The chart's Vega-Lite spec with its data left as a named slot, built once per exploration."""
        cached = self.__dict__.get("_live_spec")
        if cached is None:
            cached = self.chart(alt.Chart(alt.Data(name=LIVE_DATA))).properties(
                description=self.alt_text()).to_dict()
            object.__setattr__(self, "_live_spec", cached)
        return cached

    def render(self, **values) -> dict:
        """The mimebundle the live panel displays: ``compute`` at ``values`` poured into :meth:`live_spec`.

        The live table is added to the spec's own datasets (the fixed layers' rows: published
        estimates, reference lines), not put in their place.
        """
        records = alt.utils.data.to_values(self.table(**values))["values"]
        live = self.live_spec()
        spec = {**live, "datasets": {**(live.get("datasets") or {}), LIVE_DATA: records}}
        return alt.renderers.get()(spec)


LIVE_DATA = "live_table"


def check_direct_calls(namespace: dict) -> None:
    """Make a chapter module's compute and chart functions refuse bad input when called directly.

    Each public module-level function of ``namespace`` (a module's ``globals()``) that is the compute
    function of one of its Explorations is replaced by a wrapper checking every argument against
    the matching Slider or Choice (so ``compute(4096, "fp16")`` refuses what :meth:`Exploration.table`
    refuses); each chart function by one refusing a ``base`` that is not an Altair chart. The
    Explorations keep the unwrapped functions: ``table`` checks once, and the live callbacks pay
    nothing.
    """
    explorations = [value for value in namespace.values() if isinstance(value, Exploration)]
    for name, value in list(namespace.items()):
        if name.startswith("_"):
            continue
        for exploration in explorations:
            if value is exploration.compute:
                namespace[name] = _checked_compute(value, exploration)
            elif value is exploration.chart:
                namespace[name] = _checked_chart(value)


def _checked_compute(compute: Callable, exploration: Exploration) -> Callable:
    signature = inspect.signature(compute)
    params = {p.name: p for p in exploration.params}

    @functools.wraps(compute)
    def checked(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as err:  # an unknown keyword, too many or too few arguments
            raise ValueError(f"{compute.__name__}: {err} (parameters: "
                             f"{', '.join(signature.parameters)})") from None
        for name, value in bound.arguments.items():
            if name in params:
                bound.arguments[name] = params[name].check(value)
        return compute(*bound.args, **bound.kwargs)

    return checked


def _checked_chart(chart: Callable) -> Callable:
    name = next(iter(inspect.signature(chart).parameters))

    @functools.wraps(chart)
    def checked(base):
        if not isinstance(base, alt.Chart):
            raise ValueError(f"{name} must be an Altair Chart of the exploration's table (got {base!r:.60})")
        return chart(base)

    return checked


def static_chart(exploration: Exploration, decimals: int = 6):
    """The chart with sliders bound to Vega-Lite parameters over the precomputed grid."""
    data = exploration.grid_table().round(decimals)
    expression = " && ".join(p.snap_expression() for p in exploration.params)
    base = alt.Chart(data).transform_filter(expression)
    vl_params = [alt.param(name=p.name, value=p.default, bind=p.binding()) for p in exploration.params]
    return exploration.chart(base).add_params(*vl_params).properties(description=exploration.alt_text())


class Panel:
    """Live controls for an exploration; each change re-runs the model and updates the chart in place.

    The chart is a display with an id (``update_display_data``), not an ``Output`` widget, so no
    chart output is routed through widget state. The controls' stored text form is
    :meth:`summary`, a plain description, not the widget's ``HBox(children=...`` repr.
    """

    def __init__(self, exploration: Exploration):
        import ipywidgets as widgets

        self.exploration = exploration
        self.controls = {}
        for p in exploration.params:
            # "initial": the description takes its full width instead of being cut to 80 px.
            style = {"description_width": "initial"}
            if isinstance(p, Choice):
                layout = widgets.Layout(width="max-content", max_width="100%", margin="2px 1em 2px 0")
                control = widgets.Dropdown(options=list(p.options), value=p.default,
                                           description=control_label(p), style=style, layout=layout)
            else:
                kind = widgets.IntSlider if p.integer else widgets.FloatSlider
                # room for the whole label, then a track of about 12em and the readout
                layout = widgets.Layout(width=f"calc({len(control_label(p)) + 2}ch + 16em)",
                                        max_width="100%", margin="2px 1em 2px 0")
                control = kind(min=p.min, max=p.max, step=p.step, value=p.default,
                               description=control_label(p), continuous_update=False, style=style,
                               layout=layout)
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

    def summary(self) -> str:
        """What the stored output says before the cell runs: the controls, their ranges and units."""
        lines = ["Live panel with these controls; they become live when this cell runs in a Python "
                 "kernel (JupyterLab or Jupyter Notebook). The chart below is drawn at their defaults."]
        lines += [f"- {p.summary()}" for p in self.exploration.params]
        return "\n".join(lines)

    def controls_bundle(self) -> dict:
        """The controls' mimebundle: the widget view for a live frontend, :meth:`summary` as text."""
        return {**self.box._repr_mimebundle_(), "text/plain": self.summary()}

    def _ipython_display_(self):
        from IPython.display import display

        display(self.controls_bundle(), raw=True)
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
    """Make a computed number available to the prose as ``{glue:text}`name:.2f```.

    In the book build it shows nothing in the cell; elsewhere (Jupyter, where the prose shows
    the role raw) it also prints ``name = value`` so the reader finds the number under its name.
    """
    from myst_nb import glue as myst_glue

    myst_glue(name, float(value), display=False)
    if not charts.book_mode():
        print(f"{name} = {float(value):,.6g}")
