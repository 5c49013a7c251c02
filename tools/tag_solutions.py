"""Tag every cell of an exercise's solution with "solution" (nbgrader-style cell tags), and fold
the code of cells that only glue numbers into the prose ("hide-input").

A solution runs from the markdown cell that opens ``{solution-start}`` to the one that closes
``{solution-end}``. Text before the opening fence or after the closing one is split into a cell
of its own, so that removing the tagged cells (``make student``) removes the solution and nothing
else. Idempotent: run it after adding an exercise; ``tests/test_student.py`` checks the tags.

A code cell whose every output is a glued value (its papermill record, or the ``name = value``
line that :func:`gpumodel.explore.glue` prints for Jupyter readers) shows nothing on the page
but its code; it is tagged "hide-input", so the HTML page folds that code behind a toggle and
reads as prose. ``tests/test_notebooks.py`` checks the tag.
"""
import re
import sys

import nbformat

START = re.compile(r"^```\{solution-start\}", re.M)
END = re.compile(r"^```\{solution-end\}\n```[ \t]*$", re.M)
TAG = "solution"
FOLD = "hide-input"
GLUE_ECHO = re.compile(r"^[A-Za-z_]\w* = .*$")


def glue_only(cell) -> bool:
    """True for a code cell that has outputs and every one of them is a glued value."""
    if cell.cell_type != "code" or not cell.get("outputs"):
        return False
    for out in cell.outputs:
        if out.get("output_type") == "display_data" and "scrapbook" in out.get("metadata", {}):
            continue
        if out.get("output_type") == "stream" and out.get("name") == "stdout" and all(
                GLUE_ECHO.match(line) for line in out.get("text", "").splitlines() if line):
            continue
        return False
    return True


def fold_glue_cells(nb):
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if glue_only(cell):
            if FOLD not in tags:
                cell.metadata["tags"] = tags + [FOLD]
        elif FOLD in tags:
            tags.remove(FOLD)
    return nb


def _tag(cell):
    tags = cell.metadata.setdefault("tags", [])
    if TAG not in tags:
        tags.append(TAG)


def tag_notebook(nb):
    cells, inside = [], False
    for cell in nb.cells:
        text = cell.source if cell.cell_type == "markdown" else ""
        start = START.search(text)
        if start and start.start() > 0:
            cells.append(nbformat.v4.new_markdown_cell(text[:start.start()].rstrip("\n")))
            cell.source = text = text[start.start():]
        if start:
            inside = True
        end = END.search(text)
        if inside:
            if end and end.end() < len(text.rstrip()):
                rest = text[end.end():].lstrip("\n")
                cell.source = text[:end.end()]
                _tag(cell)
                cells.append(cell)
                cells.append(nbformat.v4.new_markdown_cell(rest))
                inside = False
                continue
            _tag(cell)
        cells.append(cell)
        if end:
            inside = False
    nb.cells = cells
    return nb


if __name__ == "__main__":
    for path in sys.argv[1:]:
        nb = nbformat.read(path, as_version=4)
        nbformat.write(fold_glue_cells(tag_notebook(nb)), path)
