"""Altair set-up for the book and for Jupyter; one offline renderer for the HTML build.

In Jupyter, a chart's Vega-Lite spec is compiled to Vega (offline, by vl-convert) and sent
as ``application/vnd.vega.v5+json``, which JupyterLab draws itself with no network
(JupyterLab has no renderer for Altair 6's Vega-Lite 6 mimetype). In the book build (environment variable ``GPUMODEL_BOOK=1``, set by
``make book``), charts are emitted as a ``<div>`` plus a call to ``vegaEmbed`` from the
book's own ``_static/vega-bundle.js``: no CDN, and a div id derived from the spec so
re-running a notebook gives identical output.
Explained in :doc:`/book/about` (section "How the interactive figures work").
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import altair as alt

BOOK_ENV = "GPUMODEL_BOOK"
BUNDLE_NAME = "vega-bundle.js"

_EMBED = """<div id="{id}" class="gpumodel-chart"></div>
<script type="text/javascript">
(function () {{
  var spec = {spec};
  var tries = 0;
  function draw() {{
    if (window.vegaEmbed) {{
      window.vegaEmbed("#{id}", spec, {{"actions": false, "renderer": "svg"}})
        .catch(function (err) {{ console.error("gpumodel chart {id}: " + err); }});
    }} else if (tries++ < 400) {{
      setTimeout(draw, 25);
    }} else {{
      console.error("gpumodel chart {id}: {bundle} did not load");
    }}
  }}
  draw();
}})();
</script>"""


def book_mode() -> bool:
    """True while the HTML book is being built (``GPUMODEL_BOOK=1``)."""
    return os.environ.get(BOOK_ENV, "") == "1"


def embed_html(spec: dict) -> str:
    """HTML that draws a Vega-Lite ``spec`` with the book's vendored vega-embed bundle."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    chart_id = "vl-" + hashlib.sha1(text.encode()).hexdigest()[:16]
    return _EMBED.format(id=chart_id, spec=text.replace("</", "<\\/"), bundle=BUNDLE_NAME)


def _book_renderer(spec: dict, **_) -> dict:
    return {"text/html": embed_html(spec)}


def _jupyter_renderer(spec: dict, **_) -> dict:
    import vl_convert as vlc

    vega = vlc.vegalite_to_vega(spec, vl_version=_vl_version())
    return {"application/vnd.vega.v5+json": vega,
            "text/plain": "<chart: open this notebook in JupyterLab, or read the HTML book, to see it>"}


def _vl_version() -> str:
    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def setup() -> None:
    """Choose the renderer for this environment; called when this module is imported."""
    alt.renderers.register("gpumodel_book", _book_renderer)
    alt.renderers.register("gpumodel_jupyter", _jupyter_renderer)
    alt.renderers.enable("gpumodel_book" if book_mode() else "gpumodel_jupyter")
    alt.data_transformers.disable_max_rows()


def write_bundle(static_dir: str | Path) -> Path:
    """Write vega, vega-lite and vega-embed as one script into ``static_dir`` (offline, via vl-convert)."""
    import vl_convert as vlc

    path = Path(static_dir) / BUNDLE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    bundle = vlc.javascript_bundle(vl_version=_vl_version())
    path.write_text("(function () {\n" + bundle + "\n})();\n")
    return path


setup()
