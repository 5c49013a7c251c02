"""Altair set-up for the book and for Jupyter; one offline renderer for the HTML build.

In Jupyter, a chart's Vega-Lite spec is compiled to Vega (offline, by vl-convert) and sent
as ``application/vnd.vega.v5+json``, which JupyterLab and Notebook 7 draw themselves with no
network. Their renderer (``@jupyterlab/vega5-extension``) runs Vega 5 and has no mimetype for
Altair 6's Vega-Lite 6, so the spec is compiled by vl-convert's newest Vega-Lite 5 compiler
(:func:`jupyter_vl_version`): a Vega 5 spec under the Vega 5 mimetype, not Vega 6 under the v5
name (which the renderer warns about on every draw). Every named dataset the spec uses must be
in its ``datasets`` (:func:`check_datasets`): a chart without its rows compiles to a 0 x 0 view,
and the Jupyter renderer, which stores a PNG of each chart in the output once drawn, stores an
empty one and redraws for ever. In the book build (environment variable ``GPUMODEL_BOOK=1``, set by
``make book``), charts are emitted as a ``<div>`` plus a call to ``vegaEmbed`` from the
book's own ``_static/vega-bundle.js`` (Vega 6 and Vega-Lite 6): no CDN, and a div id derived
from the spec so re-running a notebook gives identical output.

Every chart must carry a top-level Vega-Lite ``description`` (Vega puts it on the SVG as its
``aria-label``, the text a screen reader reads): both renderers raise a ``ValueError`` without one.
In the book build each chart is followed by a collapsed "Data behind this chart" table. Colours come
from :data:`PALETTE` (Okabe and Ito's colour-blind-safe set), registered once as the Altair theme.
Explained in :doc:`/book/about` (section "How the interactive figures work").
"""
from __future__ import annotations

import copy
import hashlib
import html
import json
import math
import os
import re
from pathlib import Path

import altair as alt
import pandas as pd

from . import _checks

BOOK_ENV = "GPUMODEL_BOOK"
BUNDLE_NAME = "vega-bundle.js"

#: Okabe and Ito's categorical palette (readable with every common colour-vision deficiency), in the
#: order a chart's series take it: blue, orange, bluish green, vermillion, reddish purple, sky blue,
#: yellow, black.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY_BLUE, YELLOW, BLACK = PALETTE
#: Neutral colours for reference lines, text, cell borders and de-emphasised series.
GREYS = ("#000000", "#333333", "#555555", "#767676", "#7f7f7f", "#999999", "#bbbbbb", "#d9d9d9", "#ffffff",
         "white", "black")
#: Sequential scheme (its lightness rises monotonically, so it also reads in greyscale).
SEQUENTIAL = "viridis"
#: Most rows of one "Data behind this chart" table; the rest are cut, and the summary says how many.
MAX_TABLE_ROWS = 150

#: How a chart is put on the page: its spec as inert JSON, parsed and drawn when the chart comes
#: within :data:`LAZY_MARGIN` of the screen (IntersectionObserver) or, after the page has
#: loaded, when the browser is idle; charts on the first screen are drawn at once.
_EMBED = """<div id="{id}" class="gpumodel-chart"></div>
<script type="application/json" id="{id}-spec">{spec}</script>
<script type="text/javascript">
(function () {{
  var id = "{id}", done = false, tries = 0;
  function draw() {{
    if (done) {{ return; }}
    if (!window.vegaEmbed) {{
      if (tries++ < 400) {{ setTimeout(draw, 25); }}
      else {{ console.error("gpumodel chart " + id + ": {bundle} did not load"); }}
      return;
    }}
    done = true;
    var spec = JSON.parse(document.getElementById(id + "-spec").textContent);
    window.vegaEmbed("#" + id, spec, {{"actions": false, "renderer": "svg"}})
      .catch(function (err) {{ console.error("gpumodel chart " + id + ": " + err); }});
  }}
  if (!("IntersectionObserver" in window)) {{ draw(); return; }}
  var seen = new IntersectionObserver(function (entries) {{
    for (var i = 0; i < entries.length; i++) {{
      if (entries[i].isIntersecting) {{ seen.disconnect(); draw(); return; }}
    }}
  }}, {{"rootMargin": "{margin} 0px"}});
  seen.observe(document.getElementById(id));
  function later() {{
    var idle = window.requestIdleCallback || function (f) {{ return setTimeout(f, 50); }};
    idle(function () {{ seen.disconnect(); draw(); }}, {{"timeout": 2000}});
  }}
  if (document.readyState === "complete") {{ later(); }}
  else {{ window.addEventListener("load", later); }}
}})();
</script>"""
#: How far below (or above) the screen a chart is drawn ahead of being scrolled into view.
LAZY_MARGIN = "300px"


def _theme() -> dict:
    return {"config": {"range": {"category": list(PALETTE), "ordinal": {"scheme": SEQUENTIAL},
                                 "ramp": {"scheme": SEQUENTIAL}, "heatmap": {"scheme": SEQUENTIAL}},
                       "mark": {"color": BLUE}}}


def _bound(name: str, value) -> float:
    """``value`` as one float (NaN and inf too, which the range checks then refuse); None, bools,
    strings, arrays of more than one number are refused naming ``name``."""
    number = _checks.as_array(name, value, allow_nonfinite=True)
    if number.ndim:
        raise ValueError(f"{name} must be a single number (got shape {number.shape})")
    return float(number)


def identity_line(lo: float, hi: float, scale=None):
    """The dashed grey diagonal y = x from ``lo`` to ``hi``: where a prediction equals its measurement.

    ``scale`` (an ``alt.Scale``) is shared with the points the line is layered with.
    Explained in :doc:`/book/about` (section "How the interactive figures work").
    """
    lo, hi = _bound("lo", lo), _bound("hi", hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"identity_line needs finite lo < hi (got lo={lo!r}, hi={hi!r})")
    kwargs = {} if scale is None else {"scale": scale}
    return alt.Chart(pd.DataFrame({"x": [lo, hi]})).mark_line(strokeDash=[4, 3], color=GREYS[2]).encode(
        x=alt.X("x:Q", **kwargs), y=alt.Y("x:Q", **kwargs))


def error_band_area(lo: float, hi: float, low: float, high: float, scale=None):
    """The grey band y = x(1 + low) to y = x(1 + high) from x = ``lo`` to ``hi``.

    Layered under a predicted-against-measured chart, it shows where a prediction falls when
    its error lies between ``low`` and ``high`` (the 10th and 90th percentiles of the left-out
    error: :func:`gpumodel.validate.error_band`). ``scale`` is shared with the points.
    Explained in :doc:`/book/choosing_a_gpu` (section "Measured reality").
    """
    lo, hi, low, high = (_bound(name, v) for name, v in
                         (("lo", lo), ("hi", hi), ("low", low), ("high", high)))
    if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 < lo < hi):
        raise ValueError(f"error_band_area needs finite 0 < lo < hi (got lo={lo!r}, hi={hi!r})")
    if not (math.isfinite(low) and math.isfinite(high) and -1.0 < low <= high):
        raise ValueError("error_band_area needs finite -1 < low <= high "
                         f"(got low={low!r}, high={high!r})")
    if not math.isfinite(hi * (1 + high)):
        raise ValueError(f"error_band_area: hi x (1 + high) overflows float64 (got hi={hi!r}, "
                         f"high={high!r})")
    kwargs = {} if scale is None else {"scale": scale}
    frame = pd.DataFrame({"x": [lo, hi], "band_low": [lo * (1 + low), hi * (1 + low)],
                          "band_high": [lo * (1 + high), hi * (1 + high)]})
    return alt.Chart(frame).mark_area(opacity=0.35, color=GREYS[7], clip=True).encode(
        x=alt.X("x:Q", **kwargs), y=alt.Y("band_low:Q", **kwargs), y2="band_high:Q")


def check_description(spec: dict) -> str:
    """The spec's top-level ``description`` (its text alternative); ValueError if it is missing or empty."""
    text = spec.get("description") if isinstance(spec, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise ValueError("gpumodel chart without a description: every chart needs a top-level Vega-Lite "
                         "description (its text alternative): add .properties(description=\"...\") saying "
                         "what the axes, the series and any slider show")
    return text


def book_mode() -> bool:
    """True while the HTML book is being built (``GPUMODEL_BOOK=1``)."""
    return os.environ.get(BOOK_ENV, "") == "1"


def embed_html(spec: dict) -> str:
    """HTML that draws a Vega-Lite ``spec`` with the book's vendored vega-embed bundle.

    The spec is stored as JSON in the page and drawn lazily: when the chart nears the screen, or
    when the browser is idle after the page has loaded (:data:`LAZY_MARGIN`).
    """
    if not isinstance(spec, dict):
        raise ValueError(f"spec must be a Vega-Lite spec, a dict (got {type(spec).__name__})")
    try:
        text = json.dumps(spec, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except ValueError:  # NaN or inf, which the page's JSON.parse refuses: null, missing to Vega
        text = json.dumps(_nonfinite_as_null(spec), sort_keys=True, separators=(",", ":"),
                          allow_nan=False)
    chart_id = "vl-" + hashlib.sha1(text.encode()).hexdigest()[:16]
    # "<" as its JSON escape: nothing in the spec can close the script element or open a comment
    return _EMBED.format(id=chart_id, spec=text.replace("<", "\\u003c"), bundle=BUNDLE_NAME,
                         margin=LAZY_MARGIN)


def _nonfinite_as_null(value):
    """``value`` (a spec, nested dicts and lists) with every NaN and inf float as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _nonfinite_as_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nonfinite_as_null(v) for v in value]
    return value


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.6g}"
    return html.escape(str(value))


def _bound_values(spec: dict) -> dict:
    """The default value of each parameter bound to an input (a slider or a menu), by name."""
    found = {}
    for param in spec.get("params", []) or []:
        if isinstance(param, dict) and "bind" in param and "value" in param:
            found[param["name"]] = param["value"]
    return found


def _matches(row: dict, values: dict) -> bool:
    for name, value in values.items():
        if name not in row:
            continue
        cell = row[name]
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (cell, value))
        if numbers and abs(cell - value) < 1e-9:
            continue
        if cell != value:
            return False
    return True


def _datasets(spec: dict) -> list[list[dict]]:
    """The inline datasets of a spec (named ones in order, then any inline ``data.values``)."""
    found = [rows for rows in (spec.get("datasets") or {}).values() if isinstance(rows, list)]
    stack = [spec]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and isinstance(data.get("values"), list):
                found.append(data["values"])
            stack.extend(v for k, v in node.items() if k not in ("datasets", "data"))
        elif isinstance(node, list):
            stack.extend(node)
    return found


def data_html(spec: dict, max_rows: int = MAX_TABLE_ROWS) -> str:
    """A collapsed ``<details>`` with the data a chart shows as HTML tables (at the default slider values).

    For a chart whose parameters are bound to sliders or menus, the rows are those the chart draws at
    the parameters' default values; tables longer than ``max_rows`` rows are cut, and the summary says so.
    """
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError(f"max_rows must be a whole number >= 1 (got {max_rows!r:.60})")
    if not isinstance(spec, dict):
        raise ValueError(f"spec must be a Vega-Lite spec, a dict (got {type(spec).__name__})")
    values = _bound_values(spec)
    tables, cut = [], 0
    for rows in _datasets(spec):
        rows = [r for r in rows if isinstance(r, dict) and _matches(r, values)]
        if not rows:
            continue
        columns = [c for c in dict.fromkeys(k for r in rows for k in r) if c not in values]
        if not columns:
            continue
        shown = rows[:max_rows]
        cut += len(rows) - len(shown)
        head = "".join(f'<th scope="col">{html.escape(str(c))}</th>' for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns) + "</tr>"
                       for r in shown)
        note = (f"<caption>first {len(shown)} of {len(rows)} rows</caption>" if len(rows) > len(shown)
                else "")
        tables.append(f'<table class="gpumodel-data-table">{note}<thead><tr>{head}</tr></thead>'
                      f"<tbody>{body}</tbody></table>")
    if not tables:
        return ""
    summary = "Data behind this chart"
    if values:
        summary += " (at the default settings: " + ", ".join(
            f"{html.escape(str(k))} = {_cell(v)}" for k, v in values.items()) + ")"
    if cut:
        summary += f"; {cut} rows cut"
    return (f'<details class="gpumodel-data"><summary>{summary}</summary>'
            f'<div class="gpumodel-data-tables" tabindex="0" role="region" aria-label="Data behind this chart">'
            f'{"".join(tables)}</div></details>')


#: Inline datasets with fewer rows stay rows of objects (a transform would save next to nothing).
COMPACT_MIN_ROWS = 50
#: Keys of a Vega-Lite view (a node whose ``data`` a transform can follow).
_VIEW_KEYS = {"mark", "layer", "hconcat", "vconcat", "concat", "facet", "spec", "repeat",
              "encoding"}
_SCALAR = (str, int, float, bool, type(None))


def _strings(node, skip=("datasets",)):
    """Every string value (and string in a list) under ``node``, outside the keys in ``skip``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in skip:
                yield from _strings(value, skip)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value, skip)
    elif isinstance(node, str):
        yield node


def _shows_every_field(spec: dict) -> bool:
    """Whether a mark shows its whole datum (``tooltip: true``): every column is then used."""
    stack = [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            tip = node.get("tooltip")
            if tip is True or (isinstance(tip, dict) and tip.get("content") == "data"):
                return True
            stack.extend(v for k, v in node.items() if k != "datasets")
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _data_nodes(spec: dict) -> tuple[dict, set]:
    """The views that read each named dataset, and the names read anywhere else (a lookup)."""
    views, other = {}, set()
    stack = [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and isinstance(data.get("name"), str):
                if _VIEW_KEYS.intersection(node):
                    views.setdefault(data["name"], []).append(node)
                else:
                    other.add(data["name"])
            stack.extend(v for k, v in node.items() if k != "datasets")
        elif isinstance(node, list):
            stack.extend(node)
    return views, other


def _columns(rows: list, strings: list[str], keep_all: bool, groups: set):
    """``rows`` as datums of columns, and the columns stored as indexes into their values.

    Consecutive rows that share the values of the ``groups`` columns (the sliders' and menus'
    parameters) become one datum holding those values once and every other column as an
    array. None if the rows are not flat rows sharing one set of keys.
    """
    keys = list(rows[0]) if rows and isinstance(rows[0], dict) else []
    if not keys or any(not isinstance(r, dict) or list(r) != keys for r in rows):
        return None
    if any(re.search(r"[.\\\[\]]", k) for k in keys):
        return None  # a Vega-Lite field name would read these as nested access
    if not all(isinstance(v, _SCALAR) for r in rows for v in r.values()):
        return None
    keys = [k for k in keys if keep_all or any(k in s for s in strings)]  # drop unread columns
    by = [k for k in keys if k in groups]
    starts = [i for i in range(len(rows))
              if i == 0 or any(rows[i][k] != rows[i - 1][k] for k in by)] + [len(rows)]
    datums = [{k: _whole(rows[a][k]) for k in by} for a in starts[:-1]]
    lookups = {}
    for key in keys:
        if key in by:
            continue
        values = [_whole(r[key]) for r in rows]
        distinct = list(dict.fromkeys(json.dumps(v) for v in values))
        index = {text: i for i, text in enumerate(distinct)}
        indexes = [index[json.dumps(v)] for v in values]
        if len(_json(indexes)) + len(",".join(distinct)) < len(_json(values)):
            lookups[key] = "[" + ",".join(distinct) + "]"
            values = indexes
        for datum, a, b in zip(datums, starts, starts[1:]):
            datum[key] = values[a:b]
    return [k for k in keys if k not in by], datums, lookups


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def _whole(value):
    """A whole float as the int it equals where that is shorter to write (256.0 as 256)."""
    if (isinstance(value, float) and value.is_integer() and abs(value) < 2**53
            and math.copysign(1.0, value) > 0 and len(str(int(value))) < len(repr(value))):
        return int(value)
    return value


_LOOKUP = re.compile(r"^(\[.*\])\[datum\[(\".*\")\]\]$", re.S)


def expand_data(spec: dict) -> dict:
    """``spec`` with each dataset :func:`compact_spec` stored as columns back as rows.

    Explained in :doc:`/book/about` (section "How the interactive figures work").
    """
    if not isinstance(spec, dict) or not isinstance(spec.get("datasets"), dict):
        return spec
    out = copy.deepcopy(spec)
    views, _ = _data_nodes(out)
    for name, datums in out["datasets"].items():
        steps = (views.get(name) or [{}])[0].get("transform") or []
        if not (steps and isinstance(steps[0], dict) and "flatten" in steps[0]):
            continue
        flat, lookups, used = steps[0]["flatten"], {}, 1
        for step in steps[1:]:
            match = _LOOKUP.match(step.get("calculate", "")) if isinstance(step, dict) else None
            if match is None or json.loads(match.group(2)) != step.get("as"):
                break
            lookups[step["as"]] = json.loads(match.group(1))
            used += 1
        rows = []
        for datum in datums:
            for i in range(len(datum[flat[0]])):
                row = {k: v[i] if k in flat else v for k, v in datum.items()}
                rows.append({k: lookups[k][v] if k in lookups else v for k, v in row.items()})
        out["datasets"][name] = rows
        for node in views[name]:
            node["transform"] = node["transform"][used:]
            if not node["transform"]:
                del node["transform"]
    return out


def compact_spec(spec: dict, min_rows: int = COMPACT_MIN_ROWS) -> dict:
    """``spec`` with each large inline dataset stored as columns, drawn exactly as before.

    A named dataset of at least ``min_rows`` rows that only views read becomes one datum of
    arrays, which each reading view unpacks first (a Vega-Lite ``flatten`` transform). A
    column with few distinct values (a category's names, a slider's grid) holds an index into
    them, listed once, which a ``calculate`` turns back into the value. Columns the spec never
    names are dropped (unless a mark shows its whole datum). Every value is kept as it was
    (a whole float is written as an integer), so the chart, its slider filters and its
    labels for screen readers see the same numbers. :func:`expand_data` undoes it.
    Explained in :doc:`/book/about` (section "How the interactive figures work").
    """
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 1:
        raise ValueError(f"min_rows must be a whole number >= 1 (got {min_rows!r:.60})")
    datasets = spec.get("datasets") if isinstance(spec, dict) else None
    if not isinstance(datasets, dict):
        return spec
    views, other = _data_nodes(spec)
    strings = list(_strings(spec))
    keep_all = _shows_every_field(spec)
    groups = set(_bound_values(spec))
    out = copy.deepcopy({k: v for k, v in spec.items() if k != "datasets"})
    out["datasets"] = dict(datasets)
    out_views, _ = _data_nodes(out)
    for name, rows in datasets.items():
        if name in other or name not in views or not isinstance(rows, list) or len(rows) < min_rows:
            continue
        found = _columns(rows, strings, keep_all, groups)
        if found is None or not found[0]:
            continue
        if groups:  # one datum per setting, or one datum in all: whichever is smaller
            single = _columns(rows, strings, keep_all, set())
            if len(_json(single[1:])) <= len(_json(found[1:])):
                found = single
        flat, datums, lookups = found
        steps = [{"flatten": flat}]
        steps += [{"calculate": f"{values}[datum[{json.dumps(key)}]]", "as": key}
                  for key, values in lookups.items()]
        out["datasets"][name] = datums
        for node in out_views[name]:
            node["transform"] = copy.deepcopy(steps) + list(node.get("transform") or [])
    return out


def _book_renderer(spec: dict, **_) -> dict:
    check_description(spec)
    return {"text/html": embed_html(compact_spec(spec)) + "\n" + data_html(spec)}


def _jupyter_renderer(spec: dict, **_) -> dict:
    text = check_description(spec)
    check_datasets(spec)
    vega = _to_vega(spec)
    if not str(vega.get("$schema", "")).endswith(f"/vega/v{JUPYTER_VEGA_MAJOR}.json"):
        raise RuntimeError(f"vl-convert compiled a {vega.get('$schema')} spec; {JUPYTER_MIMETYPE} needs "
                           f"Vega {JUPYTER_VEGA_MAJOR}")
    return {JUPYTER_MIMETYPE: vega, "text/plain": f"Chart: {text}"}


#: Compiled Vega of specs without their data, by the spec's text: a live panel redraws one spec
#: with new data, and compiling is most of a redraw's time.
_VEGA_CACHE: dict = {}
_VEGA_CACHE_SIZE = 256


def _to_vega(spec: dict) -> dict:
    """vl-convert's Vega for ``spec``; compiled once without the named datasets, which are
    then put in as the ``values`` of the Vega data sets of the same names (what vl-convert
    does with them)."""
    import vl_convert as vlc

    datasets = spec.get("datasets")
    if not isinstance(datasets, dict) or not datasets:
        return vlc.vegalite_to_vega(spec, vl_version=jupyter_vl_version())
    skeleton = {k: v for k, v in spec.items() if k != "datasets"}
    key = json.dumps([skeleton, sorted(datasets)], sort_keys=True, default=str)
    compiled = _VEGA_CACHE.get(key)
    if compiled is None:
        empty = {**skeleton, "datasets": {name: [] for name in datasets}}
        compiled = vlc.vegalite_to_vega(empty, vl_version=jupyter_vl_version())
        if len(_VEGA_CACHE) >= _VEGA_CACHE_SIZE:
            _VEGA_CACHE.clear()
        _VEGA_CACHE[key] = compiled
    vega = copy.deepcopy(compiled)
    for data in vega.get("data", []):
        if data.get("name") in datasets and data.get("values") == []:
            data["values"] = copy.deepcopy(datasets[data["name"]])
    return vega


#: The mimetype a chart is saved under in Jupyter: JupyterLab's and Notebook 7's Vega 5 renderer.
JUPYTER_MIMETYPE = "application/vnd.vega.v5+json"
#: The Vega major version that renderer runs (JupyterLab 4 bundles Vega 5) and the spec must declare.
JUPYTER_VEGA_MAJOR = 5
#: The Vega-Lite major version whose compiler emits Vega 5 specs.
_JUPYTER_VL_MAJOR = 5


def jupyter_vl_version() -> str:
    """The Vega-Lite version whose compiler (in vl-convert) writes the Vega 5 specs Jupyter draws.

    vl-convert's newest Vega-Lite 5 (Vega-Lite 6 compiles to Vega 6, which JupyterLab 4's Vega 5
    renderer warns about on every draw); RuntimeError if this vl-convert has none.
    """
    import vl_convert as vlc

    found = [v for v in vlc.get_vegalite_versions() if v.split(".")[0] == str(_JUPYTER_VL_MAJOR)]
    if not found:
        raise RuntimeError(f"vl-convert {vlc.__version__} has no Vega-Lite {_JUPYTER_VL_MAJOR} compiler: "
                           "pin a vl-convert-python that lists one in get_vegalite_versions()")
    return max(found, key=lambda v: tuple(int(n) for n in v.split(".")))


def _named_data(node, found: set) -> set:
    if isinstance(node, dict):
        data = node.get("data")
        if isinstance(data, dict) and isinstance(data.get("name"), str) and not any(
                k in data for k in ("values", "url", "sequence", "sphere", "graticule")):
            found.add(data["name"])
        for key, value in node.items():
            if key != "datasets":
                _named_data(value, found)
    elif isinstance(node, list):
        for value in node:
            _named_data(value, found)
    return found


def check_datasets(spec: dict) -> None:
    """ValueError if the spec draws from a named dataset (``{"data": {"name": ...}}``) not in its ``datasets``.

    Such a chart compiles and draws with no rows, often as a 0 x 0 view; JupyterLab's Vega renderer
    then stores an empty PNG of it and redraws it in a loop.
    """
    if not isinstance(spec, dict):
        raise ValueError(f"a chart spec is a dict (got {type(spec).__name__})")
    datasets = spec.get("datasets") or {}
    missing = sorted(_named_data(spec, set()) - set(datasets))
    if missing:
        raise ValueError(f"gpumodel chart draws from named data it does not carry: {', '.join(missing)} "
                         "(keep the spec's own datasets when adding one)")


def _vl_version() -> str:
    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def setup() -> None:
    """Choose the renderer for this environment; called when this module is imported."""
    alt.renderers.register("gpumodel_book", _book_renderer)
    alt.renderers.register("gpumodel_jupyter", _jupyter_renderer)
    alt.renderers.enable("gpumodel_book" if book_mode() else "gpumodel_jupyter")
    alt.data_transformers.disable_max_rows()
    alt.theme.register("gpumodel", enable=True)(_theme)


def write_bundle(static_dir: str | Path) -> Path:
    """Write vega, vega-lite and vega-embed as one script into ``static_dir`` (offline, via vl-convert)."""
    import vl_convert as vlc

    path = Path(static_dir) / BUNDLE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    bundle = vlc.javascript_bundle(vl_version=_vl_version())
    path.write_text("(function () {\n" + bundle + "\n})();\n")
    return path


setup()
