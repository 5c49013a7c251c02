"""Tag every cell of an exercise's solution with "solution" (nbgrader-style cell tags).

A solution runs from the markdown cell that opens ``{solution-start}`` to the one that closes
``{solution-end}``. Text before the opening fence or after the closing one is split into a cell
of its own, so that removing the tagged cells (``make student``) removes the solution and nothing
else. Idempotent: run it after adding an exercise; ``tests/test_student.py`` checks the tags.
"""
import re
import sys

import nbformat

START = re.compile(r"^```\{solution-start\}", re.M)
END = re.compile(r"^```\{solution-end\}\n```[ \t]*$", re.M)
TAG = "solution"


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
        nbformat.write(tag_notebook(nb), path)
