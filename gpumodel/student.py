"""Student notebooks: each chapter without its solutions and outputs, ready to hand out.

Uses nbconvert's own preprocessors: ``TagRemovePreprocessor`` drops the cells tagged
"solution" (``tools/tag_solutions.py`` tags them, nbgrader-style) and
``ClearOutputPreprocessor`` clears every output. ``make student`` writes them to
``_build/student/``; the book build copies them next to each chapter page.
``python -m gpumodel.student OUTDIR NOTEBOOK...``.
Explained in :doc:`/book/instructor_guide`.
"""
from __future__ import annotations

import sys
from pathlib import Path

TAG = "solution"


#: Largest notebook read, in bytes (the book's largest, with its outputs, is a few MB).
MAX_NOTEBOOK_BYTES = 256 * 2**20


def _read(path: str | Path):
    """The notebook at ``path`` (nbformat 4), or a ValueError naming the path and why it cannot
    be read: missing, a directory, not JSON, not a notebook. A named pipe nobody writes to is
    read as empty, never waited on."""
    import os

    import nbformat

    if not isinstance(path, (str, Path)):
        raise ValueError(f"path must be a file name (got {type(path).__name__})")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        os.set_blocking(fd, True)
        with open(fd, "rb") as handle:
            data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    except (OSError, ValueError) as err:
        why = getattr(err, "strerror", None) or str(err)
        raise ValueError(f"{str(path)!r}: cannot read it ({why})") from None
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"{str(path)!r}: larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # noqa: BLE001 - nbformat raises many kinds for a bad file
        message = " ".join(str(err).split())[:200]
        raise ValueError(f"{str(path)!r}: not a Jupyter notebook ({message})") from None
    return nb


def student_notebook(path: str | Path):
    """The notebook at ``path`` with its solution cells removed and all outputs cleared."""
    from nbconvert.preprocessors import ClearOutputPreprocessor, TagRemovePreprocessor

    nb = _read(path)
    remove = TagRemovePreprocessor(remove_cell_tags={TAG}, enabled=True)
    nb, _ = remove.preprocess(nb, {})
    nb, _ = ClearOutputPreprocessor(enabled=True).preprocess(nb, {})
    nb.metadata.pop("widgets", None)
    return nb


def has_exercises(path: str | Path) -> bool:
    """Whether the notebook holds at least one tagged solution (a chapter with exercises)."""
    nb = _read(path)
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
    try:
        written = write(argv[0], argv[1:])
    except (OSError, ValueError) as err:  # a bad notebook, or an OUTDIR that cannot be made
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"gpumodel.student: error: {message}", file=sys.stderr)
        return 2
    print(f"wrote {len(written)} student notebooks to {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def _title(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def _plain(text: str) -> str:
    """Markdown of an exercise as plain text: citations dropped, computed values marked, math unwrapped."""
    import re

    text = re.sub(r"\s*\{cite:[a-z]+\}`[^`]*`", "", text)
    text = re.sub(r"\{glue:text\}`[^`]*`", "(a computed value)", text)
    text = text.replace("\\$", "\0").replace("\\times", "×").replace("\\,", " ")
    text = text.replace("$", "").replace("*", "").replace("\0", "$")
    return " ".join(text.split())


def outline(notebooks) -> list[dict]:
    """Per chapter with exercises: its title, learning objectives and exercises, read from the notebook.

    Each exercise is {"label", "kind", "task"}: kind "predict, then check" (for class: a slider
    and a guess) or "compute" (for homework), task its first sentence.
    Explained in :doc:`/book/instructor_guide`.
    """
    import re

    out = []
    for path in map(Path, notebooks):
        if not has_exercises(path):
            continue
        nb = _read(path)
        objectives = []
        for cell in nb.cells:
            if "Learning objectives" in cell.source:
                objectives = [line[2:].strip().rstrip(";.") for line in cell.source.splitlines()
                              if line.startswith("- ")]
                break
        exercises = []
        for cell in nb.cells:
            if cell.cell_type != "markdown" or "{exercise}" not in cell.source:
                continue
            label = re.search(r"^:label: (\S+)", cell.source, re.M).group(1)
            body = cell.source.split(":label:", 1)[1].split("\n", 1)[1].strip().strip("`").strip()
            predict = body.startswith("*Predict, then check.*")
            task = _plain(body.replace("*Predict, then check.*", ""))
            sentences = re.split(r"(?<=[.?])\s+", task)
            question = next((s for s in sentences if s.endswith("?")), sentences[0])
            exercises.append({"label": label, "kind": "predict, then check" if predict else "compute",
                              "task": question})
        out.append({"chapter": path.stem, "title": _title(nb), "objectives": objectives,
                    "exercises": exercises})
    return out


#: The suggested course: one chapter per session; the lab goes with the last. (session, chapter, focus)
SESSIONS = (
    (1, "how_a_gpu_runs", "CPU and GPU; a matmul's FLOP and bytes; three regimes"),
    (2, "memory_hierarchy", "roofline, bandwidth, L2, waves"),
    (3, "tensor_cores", "feeding Tensor Cores; peaks, cycles, MFU"),
    (4, "low_precision", "formats, scaling, 8 and 4 bits"),
    (5, "sparsity", "2:4 hardware, Amdahl's law, accuracy"),
    (6, "parallelism", "collectives; data, tensor, pipeline; ZeRO"),
    (7, "choosing_a_gpu", "a step on every card; memory, money, power"),
    (8, "brain", "brain-FLOPS estimates and projections; the lab"),
)
#: Suggested minutes per exercise: a predict-then-check exercise fits a class, a computation homework.
MINUTES = {"predict, then check": 10, "compute": 25}


def book_notebooks() -> list[Path]:
    """The book's notebooks (``book/*.ipynb`` next to the package), in file-name order."""
    return sorted((Path(__file__).resolve().parents[1] / "book").glob("*.ipynb"))


def session_frame():
    """The eight sessions: chapter title, focus, objectives and exercises per session."""
    import pandas as pd

    chapters = {c["chapter"]: c for c in outline(book_notebooks())}
    rows = []
    for number, chapter, focus in SESSIONS:
        c = chapters.get(chapter)
        rows.append({"session": number, "chapter": chapter if c else "(lab)", "focus": focus,
                     "objectives": len(c["objectives"]) if c else 0,
                     "exercises": len(c["exercises"]) if c else 0})
    return pd.DataFrame(rows).set_index("session")


def exercise_frame():
    """Every exercise: label, chapter, kind, where it fits (class or homework), minutes, its task."""
    import pandas as pd

    chapters = {c["chapter"]: c for c in outline(book_notebooks())}
    rows = []
    for number, name, _ in SESSIONS:
        for e in chapters.get(name, {"exercises": []})["exercises"]:
            rows.append({"label": e["label"], "session": number, "kind": e["kind"],
                         "suggested for": "class" if e["kind"] == "predict, then check" else "homework",
                         "suggested minutes": MINUTES[e["kind"]], "task": e["task"]})
    return pd.DataFrame(rows).set_index("label")
