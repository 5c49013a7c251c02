"""The built book in headless Chromium with the network blocked.

Every page under the HTML root is opened (no console errors, no outside requests) and checked by
axe-core (vendored in tests/vendor, injected from disk): no violation of impact "serious" or
"critical", and has no formula that MathJax failed to typeset. Chapters are also checked for drawn
charts and working sliders.

Needs `make book` first; `make test` builds the book and sets GPUMODEL_REQUIRE_BROWSER=1,
which turns a missing build or browser into a failure instead of a skip. GPUMODEL_HTML points the
test at another build (e.g. `jupyter-book build . --path-output /tmp/b` gives /tmp/b/_build/html).
"""
import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("GPUMODEL_HTML") or ROOT / "_build" / "html").resolve()
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb") if p.stem not in ("seed_audit", "instructor_guide"))
PAGE_LIMIT = 3 * 1024 * 1024
REQUIRED = os.environ.get("GPUMODEL_REQUIRE_BROWSER") == "1"
AXE = ROOT / "tests" / "vendor" / "axe.min.js"
#: axe-core impacts that fail the test ("minor" and "moderate" are reported by axe but not failed on).
FAILING_IMPACTS = ("serious", "critical")
#: Folders of the build that hold no pages of the book: the theme's assets and the notebooks'
#: sources (_static, _sources, _images) and the executed notebooks (jupyter_execute).
NOT_PAGES = {"_static", "_sources", "_images", "jupyter_execute"}


def all_pages() -> list[str]:
    """Every HTML page of the build, relative to its root (none hard-coded: new chapters are found)."""
    if not HTML.is_dir():
        return ["book/intro.html"]  # reported as "not built" by the tests, rather than no tests at all
    return sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*.html")
                  if not NOT_PAGES.intersection(p.relative_to(HTML).parts))


PAGES = all_pages()


def _need(condition: bool, why: str):
    if not condition:
        if REQUIRED:
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    _need((HTML / "book" / "memory_hierarchy.html").exists(), f"the book is not built in {HTML} (run `make book`)")
    _need(AXE.exists(), f"{AXE} is missing (see tests/vendor/README.md)")
    chromium = shutil.which("chromium")
    _need(chromium is not None, "Debian chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield b
        b.close()


def _open(browser, name, charts=True):
    """Open a chapter (``name``) or any page (``name`` ending in .html) with the network blocked."""
    page = browser.new_page()
    errors, outside = [], []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    path = HTML / name if name.endswith(".html") else HTML / "book" / f"{name}.html"
    page.goto(path.as_uri(), wait_until="load")
    if charts or page.locator(".gpumodel-chart").count():
        page.wait_for_selector(".gpumodel-chart svg", timeout=20_000)
    page.wait_for_timeout(500)
    return page, errors, outside


def axe_violations(page) -> list[dict]:
    """axe-core's serious and critical violations on the open page, collapsed data tables opened."""
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.add_script_tag(path=str(AXE))
    # preload: false, or axe fetches the stylesheets by XHR, which file:// pages refuse (console errors)
    found = page.evaluate("""async () => {
        const result = await axe.run(document, {preload: false, resultTypes: ["violations"]});
        return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            targets: v.nodes.map(n => n.target.join(" "))}));
    }""")
    return [v for v in found if v["impact"] in FAILING_IMPACTS]


#: Waits for MathJax (vendored in _static) to finish its first typesetting, then returns what it
#: could not typeset: MathJax 3 renders a TeX error as an ``mjx-merror`` element carrying the
#: message in ``data-mjx-error`` (e.g. "Double subscripts" for a glue role left inside $...$).
MATHJAX_ERRORS = """async () => {
    if (!document.querySelector('script[src*="mathjax"]')) { return []; }
    const ready = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
    for (let i = 0; i < 400 && !ready(); i++) { await new Promise(r => setTimeout(r, 50)); }
    if (!ready()) { return ["MathJax did not start"]; }
    await MathJax.startup.promise;
    const errors = "mjx-merror, [data-mjx-error]";
    return Array.from(document.querySelectorAll(errors))
        .filter(e => !e.closest("mjx-assistive-mml"))  // the screen-reader copy of the same formula
        .filter(e => !e.parentElement || !e.parentElement.closest(errors))
        .map(e => (e.getAttribute("data-mjx-error") || e.textContent).slice(0, 120));
}"""


def mathjax_errors(page) -> list[str]:
    """MathJax's message for every formula it could not typeset on the open page."""
    return page.evaluate(MATHJAX_ERRORS)


def _describe(violations) -> str:
    return "\n".join(f"{v['impact']} {v['id']} ({v['help']}): {', '.join(v['targets'][:6])}"
                     + (f" and {len(v['targets']) - 6} more" if len(v["targets"]) > 6 else "")
                     for v in violations)


def test_every_page_is_walked():
    _need(HTML.is_dir(), f"the book is not built in {HTML} (run `make book`)")
    chapters = {f"book/{name}.html" for name in CHAPTERS}
    assert chapters <= set(PAGES), sorted(chapters - set(PAGES))
    assert {"index.html", "search.html", "genindex.html"} <= set(PAGES)


@pytest.mark.parametrize("path", PAGES)
def test_page_is_offline_clean_and_accessible(browser, path):
    page, errors, outside = _open(browser, path, charts=False)
    before_axe = list(errors)
    violations = axe_violations(page)
    late = errors[len(before_axe):]
    page.close()
    assert before_axe == [], f"{path}: console errors: {before_axe}"
    assert outside == [], f"{path}: requests outside the build: {outside}"
    assert violations == [], f"{path}: axe-core found\n{_describe(violations)}"
    assert late == [], f"{path}: console errors while axe ran: {late}"


@pytest.mark.parametrize("path", PAGES)
def test_page_has_no_mathjax_errors(browser, path):
    page, _, _ = _open(browser, path, charts=False)
    errors = mathjax_errors(page)
    page.close()
    assert errors == [], f"{path}: MathJax could not typeset {len(errors)} formula(s): {errors}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_page_has_no_errors_and_no_outside_requests(browser, name):
    page, errors, outside = _open(browser, name)
    charts = page.locator(".gpumodel-chart svg").count()
    # Vega gives the chart's container role="graphics-document" and the spec's description as aria-label
    labels = page.locator(".gpumodel-chart").evaluate_all(
        "s => s.map(e => e.getAttribute('role') === 'graphics-document' ? e.getAttribute('aria-label') || '' : '')")
    toggles = page.locator("details.gpumodel-data:has(table)").count()
    page.close()
    assert errors == []
    assert outside == []
    assert charts >= 2
    assert all(len(label) > 40 for label in labels), labels  # the spec's description, read by screen readers
    assert toggles == charts  # every chart has its data behind a toggle


@pytest.mark.parametrize("name", CHAPTERS)
def test_moving_a_slider_changes_the_chart(browser, name):
    page, errors, _ = _open(browser, name)
    chart = page.locator(".gpumodel-chart", has=page.locator("input[type=range]")).first
    slider = chart.locator("input[type=range]").first
    before = chart.locator("svg").inner_html()
    target = slider.evaluate("s => { const v = Number(s.value) === Number(s.min) ? s.max : s.min;"
                             " s.value = v; s.dispatchEvent(new Event('input', {bubbles: true})); return v; }")
    page.wait_for_timeout(500)
    after = chart.locator("svg").inner_html()
    page.close()
    assert target is not None
    assert before != after
    assert errors == []


@pytest.mark.parametrize("name", CHAPTERS)
def test_page_weight_and_no_cdn(name):
    page = HTML / "book" / f"{name}.html"
    _need(page.exists(), "the book is not built (run `make book`)")
    text = page.read_text()
    assert len(text.encode()) < PAGE_LIMIT
    assert not re.search(r'<(script|link)[^>]+(src|href)="https?://', text)
    assert "widget-state+json" not in text


@pytest.mark.parametrize("name", CHAPTERS)
def test_page_links_its_student_notebook(name):
    page = HTML / "book" / f"{name}.html"
    _need(page.exists(), "the book is not built (run `make book`)")
    match = re.search(r'<p class="student-download">.*?<a href="([^"]+)" download>', page.read_text())
    assert match, f"{name}: no student-notebook link"
    target = (page.parent / match.group(1)).resolve()
    assert target.exists(), target
    assert "{solution" not in target.read_text()
