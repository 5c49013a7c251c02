"""The built chapter in headless Chromium with the network blocked.

Needs `make book` first; `make test` builds the book and sets GPUMODEL_REQUIRE_BROWSER=1,
which turns a missing build or browser into a failure instead of a skip.
"""
import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb") if p.stem not in ("seed_audit", "instructor_guide"))
PAGE_LIMIT = 3 * 1024 * 1024
REQUIRED = os.environ.get("GPUMODEL_REQUIRE_BROWSER") == "1"


def _need(condition: bool, why: str):
    if not condition:
        if REQUIRED:
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    _need((HTML / "book" / "memory_hierarchy.html").exists(), "the book is not built (run `make book`)")
    chromium = shutil.which("chromium")
    _need(chromium is not None, "Debian chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield b
        b.close()


def _open(browser, name):
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
    page.goto((HTML / "book" / f"{name}.html").as_uri(), wait_until="load")
    page.wait_for_selector(".gpumodel-chart svg", timeout=20_000)
    page.wait_for_timeout(500)
    return page, errors, outside


@pytest.mark.parametrize("name", CHAPTERS)
def test_page_has_no_errors_and_no_outside_requests(browser, name):
    page, errors, outside = _open(browser, name)
    charts = page.locator(".gpumodel-chart svg").count()
    page.close()
    assert errors == []
    assert outside == []
    assert charts >= 2


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
