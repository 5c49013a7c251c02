"""Student notebooks: each chapter without its solutions and outputs, ready to hand out.

Uses nbconvert's own preprocessors: ``TagRemovePreprocessor`` drops the cells tagged
"solution" (``tools/tag_solutions.py`` tags them, nbgrader-style) and
``ClearOutputPreprocessor`` clears every output. ``make student`` writes them to
``_build/student/``; the book build copies them next to each chapter page.
``python -m gpumodel.student OUTDIR NOTEBOOK...``.
Explained in :doc:`/book/about` (section "For instructors").
"""
from __future__ import annotations

import sys
from pathlib import Path

TAG = "solution"


def student_notebook(path: str | Path):
    """The notebook at ``path`` with its solution cells removed and all outputs cleared."""
    import nbformat
    from nbconvert.preprocessors import ClearOutputPreprocessor, TagRemovePreprocessor

    nb = nbformat.read(str(path), as_version=4)
    remove = TagRemovePreprocessor(remove_cell_tags={TAG}, enabled=True)
    nb, _ = remove.preprocess(nb, {})
    nb, _ = ClearOutputPreprocessor(enabled=True).preprocess(nb, {})
    nb.metadata.pop("widgets", None)
    return nb


def has_exercises(path: str | Path) -> bool:
    """Whether the notebook holds at least one tagged solution (a chapter with exercises)."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    return any(TAG in c.metadata.get("tags", []) for c in nb.cells)


def write(out_dir: str | Path, notebooks) -> list[Path]:
    """Write the student version of every notebook with exercises into ``out_dir``; the paths written."""
    import nbformat

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in map(Path, notebooks):
        if not has_exercises(path):
            continue
        target = out / path.name
        nbformat.write(student_notebook(path), str(target))
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m gpumodel.student OUTDIR NOTEBOOK...", file=sys.stderr)
        return 2
    written = write(argv[0], argv[1:])
    print(f"wrote {len(written)} student notebooks to {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
