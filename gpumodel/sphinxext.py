"""Sphinx extension for the book build: offline charts and a clean console.

- writes the Vega/Vega-Lite/vega-embed bundle (from vl-convert, wrapped so its top-level names
  do not clash with Sphinx's globals) into the built site's ``_static`` and loads it on every page;
- drops duplicate inline scripts (Jupyter Book 1 registers sphinx-thebe's configuration twice,
  which throws "Identifier 'THEBE_JS_URL' has already been declared" in the browser);
- gives the theme a valid default colour mode (an empty one logs a console error);
- repairs the theme's markup that axe-core flags as serious (:func:`accessible_html`): the search
  field's ``aria-label`` that hides its visible text, the colour-mode button's name that omits its
  icon's title, and the bibliography's deprecated ``doc-biblioentry`` role inside a list;
- copies each chapter's student notebook (:mod:`gpumodel.student`: solutions removed, outputs
  cleared) into ``_static/student/`` and links it under the chapter's Exercises heading;
- (``make outputs`` strips stored widget state from the notebooks, so none is embedded either:
  widgets need a live kernel, and the static page uses Vega-Lite sliders instead).
Explained in :doc:`/book/about` (section "How the interactive figures work").
"""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes

from . import charts, student


def _page_context(app, pagename, templatename, context, doctree):
    context["default_mode"] = context.get("default_mode") or "light"
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (str(getattr(script, "filename", script) or ""),
               tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _chapter_notebook(app, docname: str) -> Path | None:
    path = Path(app.srcdir) / f"{docname}.ipynb"
    return path if path.exists() and student.has_exercises(path) else None


def _student_link(app, doctree, docname):
    if app.builder.format != "html" or _chapter_notebook(app, docname) is None:
        return
    name = Path(docname).name + ".ipynb"
    href = "../" * docname.count("/") + f"_static/student/{name}"
    html = (f'<p class="student-download">For a class: <a href="{href}" download>{name}, '
            f'the student notebook</a> (exercises without solutions, outputs cleared). '
            f'The full notebook is in the download menu at the top of the page.</p>')
    sections = list(doctree.findall(nodes.section))
    exercises = [s for s in sections if s.children and s[0].astext() == "Exercises"]
    target = exercises[0] if exercises else (sections[0] if sections else None)
    if target is not None:
        target.insert(1, nodes.raw("", html, format="html"))


_SEARCH_FIELD = re.compile(r'(<button class="[^"]*\bsearch-button-field\b[^"]*"[^>]*?) aria-label="[^"]*"')
_FIXES = (
    # the button's visible text ("Search Ctrl+K") is its name; an aria-label of "Search" hid part of it
    (_SEARCH_FIELD, r"\1"),
    # the visible sun/moon/half-circle icon's title ("Light", "Dark", "System Settings") is the
    # button's visible text, so the name must contain it
    (re.compile(r'(<button class="[^"]*\btheme-switch-button\b[^"]*" )aria-label="Color mode"'),
     r'\1aria-label="Color mode: light, dark or system settings"'),
    # a role="list" may only own list items; doc-biblioentry is deprecated and not one
    (re.compile(r'<div class="citation" (id="[^"]*") role="doc-biblioentry">'), r'<div class="citation" \1 role="listitem">'),
)


def accessible_html(text: str) -> str:
    """``text`` (a built page) with the theme's markup that fails axe-core's serious checks repaired.

    Explained in :doc:`/book/about` (section "How the interactive figures work").
    """
    for pattern, replacement in _FIXES:
        text = pattern.sub(replacement, text)
    return text


def _repair_pages(outdir: Path) -> None:
    for page in sorted(outdir.rglob("*.html")):
        if "_static" in page.relative_to(outdir).parts:
            continue
        text = page.read_text(encoding="utf-8")
        fixed = accessible_html(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def _build_finished(app, exception):
    if exception is None and app.builder.format == "html":
        _repair_pages(Path(app.outdir))
        charts.write_bundle(Path(app.outdir) / "_static")
        notebooks = sorted((Path(app.srcdir) / "book").glob("*.ipynb"))
        student.write(Path(app.outdir) / "_static" / "student", notebooks)


def setup(app):
    app.add_js_file(charts.BUNDLE_NAME)
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("doctree-resolved", _student_link)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
