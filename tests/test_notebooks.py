"""The committed chapters: listed in the table of contents, stored with outputs, tagged sparingly."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
VEGA5 = "application/vnd.vega.v5+json"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_in_the_toc(path):
    assert f"book/{path.stem}" in (ROOT / "_toc.yml").read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_code_cell_has_stored_output_and_count(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code" and "".join(c["source"])]
    assert cells
    for cell in cells:
        source = "".join(cell["source"])
        assert cell["execution_count"] is not None, f"unexecuted cell: {source[:60]}"
        quiet = all(re.match(r"(from |import |[\w, .\[\]\"']+\s*=[^=]|\s)", line) for line in source.splitlines())
        if not quiet and "glue(" not in source:
            assert cell["outputs"], f"no stored output to compare: {source[:60]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_only_panel_cells_skip_comparison(path):
    for cell in json.loads(path.read_text())["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "nbval-ignore-output" in tags:
            assert "show(" in "".join(cell["source"]), "nbval-ignore-output on a cell that is not a panel"
        assert "nbval-skip" not in tags


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_stored_widget_state(path):
    assert "widgets" not in json.loads(path.read_text()).get("metadata", {})


MAX_CODE_LINE = 77  # what the HTML code column holds on a 1280-px screen


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_code_lines_fit_the_html_column(path):
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            assert len(line) <= MAX_CODE_LINE, f"{len(line)} characters: {line}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_solution_states_a_computed_answer(path):
    cells = json.loads(path.read_text())["cells"]
    text = ["".join(c["source"]) for c in cells]
    for i, source in enumerate(text):
        if cells[i]["cell_type"] != "markdown" or "```{solution-end}" not in source:
            continue
        assert "{glue:text}" in source, f"solution before cell {i} states no computed number"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_saved_charts_are_vega5_specs_with_their_rows(path):
    """What JupyterLab's renderer runs (Vega 5) is what every saved chart declares, with every dataset's rows.

    A Vega 6 spec makes the renderer warn on every draw; a chart without its rows draws at 0 x 0 and
    the renderer redraws it in a loop (tests/test_jupyter_ui.py opens the chapters in JupyterLab).
    """
    for cell in json.loads(path.read_text())["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            assert not any("vegalite" in k or "vega.v6" in k for k in data), list(data)
            if VEGA5 in data:
                assert data[VEGA5]["$schema"].endswith("/vega/v5.json")
                empty = [d["name"] for d in data[VEGA5].get("data", [])
                         if d["name"].startswith("data-") and not d.get("values")]
                assert empty == [], f"named datasets without rows: {empty}"


def test_cells_that_only_glue_are_folded():
    """A code cell whose outputs are all glued values shows only code on the page: fold it."""
    import importlib.util

    import nbformat
    spec = importlib.util.spec_from_file_location(
        "tag_solutions", Path(__file__).resolve().parents[1] / "tools" / "tag_solutions.py")
    tagger = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tagger)
    for path in sorted((Path(__file__).resolve().parents[1] / "book").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            tags = cell.metadata.get("tags", [])
            assert tagger.glue_only(cell) == ("hide-input" in tags), (
                f"{path.name} cell {i}: run tools/tag_solutions.py (fold glue-only cells)")
