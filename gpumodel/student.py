"""Reader and student notebooks: each chapter with its numbers written into the prose.

In the book's sources, prose cites computed numbers as ``{glue:text}`name:fmt```, glossary
terms as ``{term}``, sources as ``{cite:p}`` and sections as ``{ref}``/``{doc}``; Sphinx
resolves them when it builds the HTML, but Jupyter shows the markup. :func:`reader_notebook`
writes a copy whose markdown says what the HTML says: each glued value formatted from the
chapter's own saved outputs, each term as its text, each citation as (Author, year), each
section reference as its text or a link to the chapter. ``make lab`` and ``make notebook``
open these copies (``_build/reader/``). Student notebooks are reader copies without the cells
tagged "solution" (``tools/tag_solutions.py`` tags them, nbgrader-style) and without outputs,
using nbconvert's ``TagRemovePreprocessor`` and ``ClearOutputPreprocessor``; each exercise that
asks for numbers gets an answer cell and a check cell (:mod:`gpumodel.grading`).
``make student`` writes them to ``_build/student/``; the book build copies them next to each
chapter page. ``make book-student`` builds the HTML book without solutions from the sources
:func:`write_student_book` writes. ``python -m gpumodel.student [--reader] OUTDIR NOTEBOOK...``
or ``python -m gpumodel.student --book OUTDIR``.
Explained in :doc:`/book/instructor_guide`.
"""
from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

TAG = "solution"


#: Largest notebook read, in bytes (the book's largest, with its outputs, is a few MB).
MAX_NOTEBOOK_BYTES = 256 * 2**20


def _not_json(constant: str):
    raise ValueError(f"it holds {constant}, which JSON cannot hold")


def _read(path: str | Path):
    """The notebook at ``path`` (nbformat 4), or a ValueError naming the path and why it cannot
    be read: missing, a directory, not JSON, not a notebook. A named pipe nobody writes to is
    read as empty, never waited on."""
    import nbformat

    from . import _checks

    if not isinstance(path, (str, Path)):
        raise ValueError(f"path must be a file name (got {type(path).__name__})")
    try:
        data = _checks.read_bytes(str(path), MAX_NOTEBOOK_BYTES)
    except ValueError as err:
        raise ValueError(f"{str(path)!r}: cannot read it ({err})") from None
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"{str(path)!r}: larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8")
        json.loads(text, parse_constant=_not_json)  # NaN and Infinity are not JSON
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # noqa: BLE001 - nbformat raises many kinds for a bad file
        message = " ".join(str(err).split())[:200]
        raise ValueError(f"{str(path)!r}: not a Jupyter notebook ({message})") from None
    return nb


#: MyST roles a reader copy resolves; any left in a reader's markdown is a placeholder.
PLACEHOLDER = re.compile(r"\{(glue:text|glue|term|cite:p|cite:t|cite|ref|doc|numref|eq)\}`")
_ROLE = re.compile(r"\{(glue:text|term|cite:p|cite:t|ref|doc)\}`([^`]*)`")
#: Text for one medium only (Sphinx's ``only`` directive): the HTML build sets the "html" tag, so
#: it keeps ``{only} html`` blocks and drops ``{only} jupyter`` ones; a reader copy does the reverse.
_ONLY_HTML = re.compile(r"^```\{only\} html\n.*?^```\n*", re.M | re.S)
_ONLY_JUPYTER = re.compile(r"^```\{only\} jupyter\n(.*?)^```", re.M | re.S)
_CHAPTER_LINK = re.compile(r"\]\(([a-z_]+)(#[\w-]+)?\)")
_LABEL = re.compile(r"^\(([\w-]+)\)=\s*\n#+\s+(.+)$", re.M)


#: Longest glued value read as a Python literal; a longer one is kept as text (a literal of
#: hundreds of thousands of characters makes the parser run out of memory).
MAX_GLUE_CHARS = 10_000


def glue_values(nb) -> dict:
    """Every value the notebook glued, from its saved outputs: name -> number (or text)."""
    return _glue_values(nb, "nb")


def _glue_values(nb, where: str) -> dict:
    """:func:`glue_values`, a malformed glue refused with a ValueError naming ``where`` (the
    notebook) and the cell."""
    import ast

    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError(f"{where} must be a Jupyter notebook (nbformat 4; got {type(nb).__name__})")
    values = {}
    for index, cell in enumerate(cells):
        outputs = cell.get("outputs", []) if isinstance(cell, dict) else []
        for out in outputs if isinstance(outputs, list) else []:
            if not isinstance(out, dict):
                continue
            metadata, data = out.get("metadata", {}), out.get("data", {})
            scrapbook = metadata.get("scrapbook", {}) if isinstance(metadata, dict) else {}
            if not isinstance(scrapbook, dict):
                raise ValueError(f"{where}: cell {index}: an output's metadata 'scrapbook' must be "
                                 f"a dict (got {type(scrapbook).__name__})")
            name = scrapbook.get("name")
            text = data.get("application/papermill.record/text/plain") if isinstance(data, dict) else None
            if name is None or text is None:
                continue
            if not isinstance(name, str):
                raise ValueError(f"{where}: cell {index}: a glued name must be a string "
                                 f"(got {type(name).__name__})")
            text = "".join(map(str, text)) if isinstance(text, list) else str(text)
            if len(text) > MAX_GLUE_CHARS:
                values[name] = text.strip("'\"")
                continue
            try:
                values[name] = ast.literal_eval(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                values[name] = text.strip("'\"")
    return values


def _book_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "book"


@functools.lru_cache(maxsize=1)
def _citations() -> dict:
    """BibTeX key -> (author label, year), as the book's author-year citations print them."""
    from pybtex.database import parse_file

    out = {}
    for path in sorted((_book_dir() / "bib").glob("*.bib")):
        for key, entry in parse_file(str(path)).entries.items():
            people = entry.persons.get("author") or entry.persons.get("editor") or []

            def last(p):
                return re.sub(r"[{}\\]", "", " ".join(p.last_names) or " ".join(p.first_names))
            if not people:
                who = key
            elif len(people) == 1:
                who = last(people[0])
            elif len(people) == 2 and str(people[1]) != "others":
                who = f"{last(people[0])} and {last(people[1])}"
            else:
                who = f"{last(people[0])} et al."
            out[key] = (who, entry.fields.get("year", "n.d."))
    return out


@functools.lru_cache(maxsize=1)
def _sections() -> dict:
    """Section label -> (heading text, notebook or page file name), over the book's sources."""
    import nbformat

    out = {}
    for path in sorted(_book_dir().glob("*.ipynb")) + sorted(_book_dir().glob("*.md")):
        if path.suffix == ".ipynb":
            texts = [c.source for c in nbformat.read(str(path), as_version=4).cells
                     if c.cell_type == "markdown"]
        else:
            texts = [path.read_text()]
        for text in texts:
            for label, heading in _LABEL.findall(text):
                out[label] = (heading.strip(), path.name)
    return out


def _doc_title(name: str) -> tuple[str, str]:
    """A chapter's title and file name, for ``{doc}`name```."""
    import nbformat

    for suffix in (".ipynb", ".md"):
        path = _book_dir() / (name + suffix)
        if path.exists():
            if suffix == ".ipynb":
                return _title(nbformat.read(str(path), as_version=4)) or name, path.name
            for line in path.read_text().splitlines():
                if line.startswith("# "):
                    return line[2:].strip(), path.name
            return name, path.name
    return name, name


def _explicit(body: str) -> tuple[str | None, str]:
    """``text <target>`` -> (text, target); ``target`` -> (None, target).

    Read from the end, in linear time (a regular expression backtracks quadratically on a long
    run of spaces): the target is what lies between the last ``<`` and a final ``>`` (a final
    newline allowed after it), without ``<`` or ``>``; the text before it loses its trailing
    white space."""
    inner = body[:-1] if body.endswith("\n") else body
    if not inner.endswith(">"):
        return None, body
    inner = inner[:-1]
    start = inner.rfind("<")
    target = inner[start + 1:]
    if start < 0 or not target or ">" in target:
        return None, body
    return inner[:start].rstrip(), target


#: Largest width or precision a glue's format spec may ask for (the book's use at most 5).
MAX_FORMAT_DIGITS = 100


def _formatted(name: str, value, spec: str) -> str:
    """``format(value, spec)``, or a ValueError naming the glued value and its spec."""
    if any(int(run) > MAX_FORMAT_DIGITS for run in re.findall(r"[0-9]+", spec)):
        raise ValueError(f"glued value {name!r}: format spec {spec!r} asks for a width or precision "
                         f"above {MAX_FORMAT_DIGITS}")
    try:
        return format(value, spec)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"glued value {name!r} = {str(value)[:40]!r} cannot be formatted with "
                         f"{spec!r} ({err})") from None


def resolve_markdown(text: str, values: dict) -> str:
    """Markdown with each glue, term, cite, ref and doc role replaced by what the HTML shows.

    Blocks for the HTML page only (``{only} html``) go, and those for Jupyter
    (``{only} jupyter``) lose their fence.
    ``values`` maps glued names to values (:func:`glue_values`); a format spec after the name
    (``{glue:text}`name:,.0f```) is applied with Python's :func:`format`. An unknown name is
    an error, so a reader never sees a placeholder.
    Explained in :doc:`/book/instructor_guide`.
    """
    from . import _checks

    _checks.text("text", text)
    if not isinstance(values, dict):
        raise ValueError(f"values must be a dict from glued name to value (got {_checks._brief(values)})")

    def one(match):
        role, body = match.group(1), match.group(2)
        if role == "glue:text":
            name, _, spec = body.partition(":")
            if name not in values:
                raise ValueError(f"glued value {name!r} is not in the notebook's outputs")
            value = values[name]
            return _formatted(name, value, spec) if spec and not isinstance(value, str) else str(value)
        shown, target = _explicit(body)
        if role == "term":
            return shown or target
        if role == "ref":
            heading, page = _sections().get(target, (target, ""))
            return shown or heading
        if role == "doc":
            title, page = _doc_title(target.strip("/").split("/")[-1])
            return f"[{shown or title}]({page})"
        cites = [_citations().get(k.strip(), (k.strip(), "n.d.")) for k in body.split(",")]
        if role == "cite:t":
            return "; ".join(f"{who} ({year})" for who, year in cites)
        return "(" + "; ".join(f"{who}, {year}" for who, year in cites) + ")"

    text = _ONLY_HTML.sub("", text)
    text = _ONLY_JUPYTER.sub(lambda m: m.group(1).strip("\n"), text)
    text = _ROLE.sub(one, text)
    return _CHAPTER_LINK.sub(lambda m: m.group(0) if not (_book_dir() / (m.group(1) + ".ipynb"))
                             .exists() else f"]({m.group(1)}.ipynb{m.group(2) or ''})", text)


#: An exercise directive's opening line (``{exercise}`` or gated ``{exercise-start}``) and its options.
_EXERCISE = re.compile(r"^(`{3,}|:{3,})\{exercise(?:-start)?\}[^\n]*\n((?::[\w-]+:[^\n]*\n)*)", re.M)


@functools.lru_cache(maxsize=1)
def _chapter_numbers() -> dict:
    """Chapter file name (no suffix) -> the number the HTML gives it: its place among the
    chapters of ``_toc.yml``'s numbered parts, counted on across parts as
    ``use_multitoc_numbering`` does."""
    import yaml

    toc = yaml.safe_load((_book_dir().parent / "_toc.yml").read_text())
    numbers = {}
    for part in toc.get("parts", []):
        if part.get("numbered"):
            for entry in part.get("chapters", []):
                numbers[Path(entry["file"]).stem] = len(numbers) + 1
    return numbers


def _exercise_numbers(nb, chapter: int) -> list[tuple[int, str]]:
    """(cell index, "4.1") of each numbered exercise, in document order: sphinx-exercise counts
    a chapter's exercises from 1 after the chapter's number, skipping those marked ``:nonumber:``."""
    out = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for match in _EXERCISE.finditer(cell.source):
            if ":nonumber:" not in match.group(2):
                out.append((index, f"{chapter}.{len(out) + 1}"))
    return out


def _number_as_html(nb, name: str) -> None:
    """Give the chapter's title and exercises the numbers the HTML shows ("4. Low precision",
    "Exercise 4.1"): the title's number written in, each exercise's as the ``:enumerator:``
    option jupyterlab-myst displays (it would otherwise count from 1 in each notebook)."""
    chapter = _chapter_numbers().get(name)
    if chapter is None:
        return
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^# ", cell.source, re.M):
            cell.source = re.sub(r"^# ", f"# {chapter}. ", cell.source, count=1, flags=re.M)
            break
    numbers = iter(number for _, number in _exercise_numbers(nb, chapter))

    def enumerate_one(match):
        if ":nonumber:" in match.group(2):
            return match.group(0)
        return f"{match.group(0)}:enumerator: {next(numbers)}\n"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _EXERCISE.sub(enumerate_one, cell.source)


def _resolve_cell(path, index: int, source: str, values: dict) -> str:
    """:func:`resolve_markdown` of one cell, an error naming the notebook and the cell."""
    try:
        return resolve_markdown(source, values)
    except ValueError as err:
        raise ValueError(f"{str(path)!r}: cell {index}: {err}") from None


def _paths(name: str, notebooks) -> list[Path]:
    """``notebooks`` (a list or tuple of paths) as Paths; a bare path, None or anything else is
    refused naming ``name``."""
    from . import _checks

    if not isinstance(notebooks, (list, tuple)):
        raise ValueError(f"{name} must be a list of notebook paths (got {_checks._brief(notebooks)})")
    for path in notebooks:
        if not isinstance(path, (str, Path)):
            raise ValueError(f"{name} must hold notebook paths (got {_checks._brief(path)})")
    return [Path(p) for p in notebooks]


def _out_dir(out_dir) -> Path:
    """``out_dir`` as a Path, made if missing, or a ValueError naming it and why it cannot be."""
    from . import _checks

    if not isinstance(out_dir, (str, Path)):
        raise ValueError(f"out_dir must be a folder name (got {_checks._brief(out_dir)})")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"out_dir {str(out)!r} cannot be made ({err.strerror or err})") from None
    return out


def reader_notebook(path: str | Path):
    """The notebook at ``path`` with every markdown cell resolved (:func:`resolve_markdown`),
    its chapter and exercises numbered as in the HTML ("Exercise 4.1").

    Outputs are kept, so the charts and tables of the last run show before anything runs.
    Explained in :doc:`/book/instructor_guide`.
    """
    nb = _read(path)
    values = _glue_values(nb, repr(str(path)))
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            cell.source = _resolve_cell(path, index, cell.source, values)
    _number_as_html(nb, Path(path).stem)
    nb.metadata.pop("widgets", None)
    return nb


def student_notebook(path: str | Path):
    """The notebook at ``path`` resolved for a reader, its solution cells removed and outputs cleared."""
    from nbconvert.preprocessors import ClearOutputPreprocessor, TagRemovePreprocessor

    nb = reader_notebook(path)
    remove = TagRemovePreprocessor(remove_cell_tags={TAG}, enabled=True)
    nb, _ = remove.preprocess(nb, {})
    nb, _ = ClearOutputPreprocessor(enabled=True).preprocess(nb, {})
    nb.metadata.pop("widgets", None)
    return nb


def has_exercises(path: str | Path) -> bool:
    """Whether the notebook holds at least one tagged solution (a chapter with exercises)."""
    nb = _read(path)
    return any(TAG in c.metadata.get("tags", []) for c in nb.cells)


def write_readers(out_dir: str | Path, notebooks) -> list[Path]:
    """Write the reader copy of every notebook (and the glossary page) into ``out_dir``; the paths.

    Explained in :doc:`/book/instructor_guide`.
    """
    import shutil

    import nbformat

    notebooks = _paths("notebooks", notebooks)
    out = _out_dir(out_dir)
    written = []
    for path in notebooks:
        target = out / path.name
        nbformat.write(reader_notebook(path), str(target))
        written.append(target)
    glossary = _book_dir() / "glossary.md"
    if glossary.exists():
        shutil.copy(glossary, out / glossary.name)
    return written


def solutionless_notebook(path: str | Path):
    """The notebook at ``path`` without its cells tagged "solution"; markup and outputs kept.

    What the student edition of the HTML book builds from. Explained in :doc:`/book/instructor_guide`.
    """
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb = _read(path)
    remove = TagRemovePreprocessor(remove_cell_tags={TAG}, enabled=True)
    nb, _ = remove.preprocess(nb, {})
    return nb


def write_student_book(out_dir: str | Path) -> Path:
    """A copy of the book's sources in ``out_dir`` whose chapters hold no solution: ``make
    book-student`` builds the student edition of the HTML from it. Returns ``out_dir``.

    Explained in :doc:`/book/instructor_guide`.
    """
    import shutil

    import nbformat

    root = _book_dir().parent
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(root / name, out / name)
    shutil.copytree(root / "_static", out / "_static")
    shutil.copytree(_book_dir(), out / "book",
                    ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"))
    for path in sorted(_book_dir().glob("*.ipynb")):
        nbformat.write(solutionless_notebook(path), str(out / "book" / path.name))
    return out


def write(out_dir: str | Path, notebooks) -> list[Path]:
    """Write the student version of every notebook with exercises into ``out_dir``; the paths written.

    Each is :func:`student_notebook` with every exercise that asks for numbers followed by an answer
    cell and a check cell (:func:`gpumodel.grading.student_notebook`).
    """
    import nbformat

    from . import grading

    notebooks = _paths("notebooks", notebooks)
    out = _out_dir(out_dir)
    written = []
    for path in notebooks:
        if not has_exercises(path):
            continue
        target = out / path.name
        nbformat.write(grading.student_notebook(path), str(target))
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    if not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv):
        print("usage: python -m gpumodel.student [--reader] OUTDIR NOTEBOOK... (arguments are "
              "strings)", file=sys.stderr)
        return 2
    argv = list(argv)
    if argv[:1] == ["--book"] and len(argv) == 2:
        print(f"wrote the student edition's sources to {write_student_book(argv[1])}")
        return 0
    reader = bool(argv) and argv[0] == "--reader"
    argv = argv[1:] if reader else argv
    if len(argv) < 2:
        print("usage: python -m gpumodel.student [--reader] OUTDIR NOTEBOOK...", file=sys.stderr)
        return 2
    try:
        if reader:
            written = write_readers(argv[0], argv[1:])
        else:
            written = write(argv[0], argv[1:])
    except (OSError, ValueError) as err:  # a bad notebook, or an OUTDIR that cannot be made
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"gpumodel.student: error: {message}", file=sys.stderr)
        return 2
    print(f"wrote {len(written)} {'reader' if reader else 'student'} notebooks to {argv[0]}")
    return 0



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

    Each exercise is {"label", "number", "kind", "task"}: number as the HTML and the reader
    copies show it ("4.1"), kind "predict, then check" (for class: a slider and a guess) or
    "compute" (for homework), task its whole statement as plain text, with the chapter's
    computed values written in (:func:`resolve_markdown`), so it stands alone. A chapter's
    "number" is the HTML's (None for an unnumbered page).
    Explained in :doc:`/book/instructor_guide`.
    """
    import re

    out = []
    for path in _paths("notebooks", notebooks):
        if not has_exercises(path):
            continue
        nb = _read(path)
        values = _glue_values(nb, repr(str(path)))
        objectives = []
        for cell in nb.cells:
            if "Learning objectives" in cell.source:
                objectives = [line[2:].strip().rstrip(";.") for line in cell.source.splitlines()
                              if line.startswith("- ")]
                break
        chapter = _chapter_numbers().get(path.stem)
        numbers = dict(_exercise_numbers(nb, chapter)) if chapter else {}
        exercises = []
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "markdown" or "{exercise}" not in cell.source:
                continue
            found = re.search(r"^:label: (\S+)", cell.source, re.M)
            if found is None:
                raise ValueError(f"{str(path)!r}: cell {index}: an exercise without a ':label:' option")
            label = found.group(1)
            rest = cell.source.split(":label:", 1)[1].split("\n", 1)
            body = rest[1].strip().strip("`").strip() if len(rest) == 2 else ""
            if not body:
                raise ValueError(f"{str(path)!r}: cell {index}: exercise {label!r} has no statement "
                                 f"after its ':label:' line")
            predict = body.startswith("*Predict, then check.*")
            body = _resolve_cell(path, index, body, values)
            task = _plain(body.replace("*Predict, then check.*", ""))
            exercises.append({"label": label, "number": numbers.get(index),
                              "kind": "predict, then check" if predict else "compute", "task": task})
        out.append({"chapter": path.stem, "number": chapter, "title": _title(nb),
                    "objectives": objectives, "exercises": exercises})
    return out


def readings(path: str | Path, count: int = 5) -> list[str]:
    """The first ``count`` distinct sources a chapter cites, as "Author (year), title": the
    readings of its session. Explained in :doc:`/book/instructor_guide`."""
    from pybtex.database import parse_file

    from . import _checks

    count = _checks.count("count", count)
    titles = {}
    for bib in sorted((_book_dir() / "bib").glob("*.bib")):
        for key, entry in parse_file(str(bib)).entries.items():
            titles[key] = re.sub(r"[{}\\\\]", "", entry.fields.get("title", key))
    keys = []
    for cell in _read(path).cells:
        if cell.cell_type != "markdown":
            continue
        for group in re.findall(r"\{cite:[pt]\}`([^`]*)`", cell.source):
            for key in (k.strip() for k in group.split(",")):
                if key and key not in keys:
                    keys.append(key)
    out = []
    for key in keys[:count]:
        who, year = _citations().get(key, (key, "n.d."))
        out.append(f"{who} ({year}), {titles.get(key, key)}")
    return out


_TAKEAWAY_OPTION = re.compile(r":[a-z]+:[^\n]*")


def _takeaways(block: str) -> list[str]:
    """The text of each Takeaway box (``{admonition} Takeaway``) in ``block``, its options left out.

    Read line by line, in linear time (a regular expression backtracks quadratically over a
    long run of option lines with no closing fence)."""
    lines = block.split("\n")
    out, index = [], 0
    while index < len(lines) - 1:
        if lines[index] != "```{admonition} Takeaway":
            index += 1
            continue
        first = index + 1
        while first < len(lines) - 1 and _TAKEAWAY_OPTION.fullmatch(lines[first]):
            first += 1
        end = next((k for k in range(first, len(lines)) if lines[k].startswith("```")), None)
        if end is None:
            break
        out.append("".join(line + "\n" for line in lines[first:end]))
        index = end + 1
    return out


#: Sections a lecture does not walk through.
_NOT_LECTURED = ("Summary", "Exercises", "References")


def lecture_outline(path: str | Path) -> list[dict]:
    """A chapter as a lecture: one entry per section ("## " heading) in order, with its Takeaway
    box as plain text (computed values written in; "" where the section has none) and the
    number of interactive explorations in it. Summary, exercises and references are left out.
    Explained in :doc:`/book/instructor_guide` (section "Lecture outlines").
    """
    nb = reader_notebook(path)
    sections = []
    for cell in nb.cells:
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if cell.cell_type == "code":
            if sections and re.search(r"^show\(", source, re.M):
                sections[-1]["explorations"] += 1
            continue
        for block in re.split(r"(?m)^(?=## )", source):
            if block.startswith("## "):
                heading = block.splitlines()[0][3:].strip()
                sections.append({"section": heading, "takeaway": "", "explorations": 0})
            if sections:
                for text in _takeaways(block):
                    sections[-1]["takeaway"] = _plain(text)
    return [s for s in sections if s["section"] not in _NOT_LECTURED]


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
    """Every exercise: label, its number in the book ("4.1", as the HTML and the reader copies
    show it), session, kind, where it fits (class or homework), minutes, its task."""
    import pandas as pd

    chapters = {c["chapter"]: c for c in outline(book_notebooks())}
    rows = []
    for number, name, _ in SESSIONS:
        for e in chapters.get(name, {"exercises": []})["exercises"]:
            rows.append({"label": e["label"], "exercise": e["number"], "session": number,
                         "kind": e["kind"],
                         "suggested for": "class" if e["kind"] == "predict, then check" else "homework",
                         "suggested minutes": MINUTES[e["kind"]], "task": e["task"]})
    return pd.DataFrame(rows).set_index("label")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
