"""Student notebooks: solutions tagged in every chapter, and removed (with all outputs) by `make student`."""
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpumodel import student

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
CHAPTERS = [p for p in NOTEBOOKS if student.has_exercises(p)]


def _tagged(cell) -> bool:
    return student.TAG in cell.metadata.get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_solution_cell_and_only_those_are_tagged(path):
    nb = nbformat.read(str(path), as_version=4)
    inside = False
    for cell in nb.cells:
        text = cell.source if cell.cell_type == "markdown" else ""
        if "{solution-start}" in text:
            assert not inside and text.lstrip().startswith("```{solution-start}"), text[:80]
            inside = True
        assert _tagged(cell) == inside, (path.stem, cell.source[:80])
        if "{solution-end}" in text:
            assert inside and text.rstrip().endswith("```"), text[-80:]
            inside = False
        if _tagged(cell):
            assert not re.search(r"^#+ ", cell.source, re.M), cell.source[:80]
    assert not inside


def test_every_chapter_has_exercises():
    assert {p.stem for p in CHAPTERS} == {p.stem for p in NOTEBOOKS} - {"seed_audit", "instructor_guide"}


def test_every_chapter_has_three_exercises_and_a_predict_then_check():
    for chapter in student.outline(NOTEBOOKS):
        kinds = [e["kind"] for e in chapter["exercises"]]
        assert len(kinds) >= 3, chapter["chapter"]
        assert "predict, then check" in kinds, chapter["chapter"]
        assert chapter["objectives"], chapter["chapter"]


def test_the_instructor_guide_plans_a_session_for_every_chapter():
    planned = {chapter for _, chapter, _ in student.SESSIONS}
    assert {p.stem for p in CHAPTERS} <= planned
    guide = (ROOT / "book" / "instructor_guide.ipynb").read_text()
    for path in CHAPTERS:
        assert f"({path.stem}.ipynb)" in guide, f"the guide does not link {path.stem}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_student_notebook_has_no_solution_and_no_output(path):
    original = nbformat.read(str(path), as_version=4)
    nb = student.student_notebook(path)
    text = "\n".join(c.source for c in nb.cells)
    assert "{solution" not in text
    assert not re.search(r"glue:text\}`ex_", text), "solution glue left in the student notebook"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    values = student.glue_values(original)
    exercises = [student.resolve_markdown(c.source, values) for c in original.cells
                 if "{exercise}" in c.source]
    shown = [c.source for c in nb.cells if "{exercise}" in c.source]
    assert [re.sub(r"^:enumerator: \S+\n", "", text, flags=re.M) for text in shown] == exercises
    assert len(exercises) >= 3
    for source in exercises:
        assert re.search(r"^:label: \S+", source, re.M), source[:80]
    solution_code = [c.source for c in original.cells if _tagged(c) and c.cell_type == "code"]
    kept = {c.source for c in nb.cells}
    assert not any(code in kept for code in solution_code)


def test_make_student_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "gpumodel.student", str(tmp_path), *map(str, NOTEBOOKS)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.glob("*.ipynb")) == sorted(p.name for p in CHAPTERS)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_objectives_citations_and_glossary_links(path):
    """What the course kit promises of each chapter: objectives, sources, and terms linked to the glossary."""
    nb = nbformat.read(str(path), as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "```{admonition} Learning objectives" in text
    assert len(re.findall(r"\{cite:[pt]\}`", text)) >= 3, "fewer than three citations"
    assert len(re.findall(r"\{term\}`", text)) >= 8, "fewer than eight glossary links"
    exercises = re.findall(r"^:label: (\S+)", text, re.M)
    assert len(exercises) == len(set(exercises))
    for label in exercises:
        assert f"{{solution-start}} {label}" in text, f"{label} has no solution"


def test_exercise_labels_are_unique_book_wide():
    labels = []
    for path in CHAPTERS:
        nb = nbformat.read(str(path), as_version=4)
        labels += [m for c in nb.cells if c.cell_type == "markdown"
                   for m in re.findall(r"^```\{exercise\}\n:label: (\S+)", c.source, re.M)]
    assert len(labels) == len(set(labels)), sorted(l for l in labels if labels.count(l) > 1)


# --- what a reader opens: numbers, terms and citations written into the text ------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_reader_and_student_copies_hold_no_placeholder(path):
    copies = [student.reader_notebook(path)]
    if student.has_exercises(path):
        copies.append(student.student_notebook(path))
    for nb in copies:
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                assert not student.PLACEHOLDER.search(cell.source), cell.source[:200]
                assert "{only}" not in cell.source and "In this HTML page" not in cell.source


def test_glued_numbers_are_formatted_as_the_html_formats_them():
    nb = student.reader_notebook(ROOT / "book" / "memory_hierarchy.ipynb")
    values = student.glue_values(nbformat.read(str(ROOT / "book" / "memory_hierarchy.ipynb"),
                                               as_version=4))
    ridge = format(values["h100_ridge"], ".0f")
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert f"A kernel on an H100 must do about {ridge} FLOP for every byte" in text


def test_roles_read_as_the_html_reads_them():
    values = {"x": 1234.5678, "share": 0.4567}
    text = ("{glue:text}`x:,.1f` and {glue:text}`share:.0%`; a {term}`kernel`, "
            "{term}`tiles <tile>`; {cite:p}`dettmers2014dataparallel,nvidia2022h100`; "
            "{ref}`waves <waves>`; {doc}`parallelism`; [the chapter](tensor_cores)")
    out = student.resolve_markdown(text, values)
    assert out.startswith("1,234.6 and 46%; a kernel, tiles; (Dettmers, 2014")
    assert "NVIDIA, 2022" in out and "waves" in out
    assert "[Parallelism" in out and "](parallelism.ipynb)" in out
    assert "](tensor_cores.ipynb)" in out
    assert not student.PLACEHOLDER.search(out)


def test_an_unknown_glued_name_is_an_error_not_a_placeholder():
    with pytest.raises(ValueError, match="nope"):
        student.resolve_markdown("{glue:text}`nope:.0f`", {})


def test_reader_command_writes_every_chapter_and_the_glossary(tmp_path):
    out = tmp_path / "reader"
    run = subprocess.run([sys.executable, "-m", "gpumodel.student", "--reader", str(out)]
                         + [str(p) for p in NOTEBOOKS], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert {p.name for p in out.glob("*.ipynb")} == {p.name for p in NOTEBOOKS}
    assert (out / "glossary.md").exists()


def test_the_guide_numbers_sessions_as_the_book_numbers_chapters():
    """Chapter N of the HTML book is session N of the instructor guide."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbered = next(p for p in toc["parts"] if p.get("numbered"))
    chapters = [c["file"].split("/")[-1] for c in numbered["chapters"]]
    assert chapters == [chapter for _, chapter, _ in student.SESSIONS]


def test_the_student_edition_sources_hold_no_solution(tmp_path):
    out = student.write_student_book(tmp_path / "src")
    assert (out / "_config.yml").exists() and (out / "_toc.yml").exists()
    assert (out / "book" / "bib").is_dir() and (out / "book" / "glossary.md").exists()
    for path in CHAPTERS:
        nb = nbformat.read(str(out / "book" / path.name), as_version=4)
        text = "\n".join(c.source for c in nb.cells)
        assert "{solution" not in text
        assert not any(_tagged(c) for c in nb.cells)
        assert "{glue:text}" in text  # the HTML build resolves the markup itself


@pytest.mark.parametrize("content", [None, b"", b"not json", b'{"cells": 5}', b"\xff\xfe",
                                     "directory", "fifo"])
def test_a_bad_notebook_exits_2_with_one_line(tmp_path, content):
    """A missing file, a directory, a named pipe nobody writes to, an empty or non-JSON file,
    JSON that is not a notebook: one line naming the file, exit 2 (tracebacks, or a hang on the
    pipe, before); has_exercises raises a ValueError naming it."""
    import os
    import subprocess
    import sys

    path = tmp_path / "bad.ipynb"
    if content == "directory":
        path.mkdir()
    elif content == "fifo":
        os.mkfifo(path)
    elif content is not None:
        path.write_bytes(content)
    result = subprocess.run([sys.executable, "-m", "gpumodel.student", str(tmp_path / "out"),
                             str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], result.stderr
    with pytest.raises(ValueError, match="bad.ipynb"):
        student.has_exercises(path)


def test_readings_are_the_first_sources_a_chapter_cites():
    lines = student.readings(ROOT / "book" / "memory_hierarchy.ipynb")
    assert len(lines) == 5
    assert lines[0].startswith("Dettmers (2018), TPUs vs GPUs")
    assert all("\\" not in line and "{" not in line for line in lines)


def test_every_exercise_in_the_guide_stands_alone_with_its_numbers():
    for chapter in student.outline(CHAPTERS):
        for e in chapter["exercises"]:
            assert "(a computed value)" not in e["task"] and "{glue" not in e["task"], e


def _html_exercise_numbers(path) -> dict:
    """Exercise label -> "N.k" as sphinx-exercise numbers it in the HTML, worked out independently:
    N the chapter's place in _toc.yml's numbered part, k the exercise's place in the chapter's
    markdown, in document order."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbered = next(p for p in toc["parts"] if p.get("numbered"))
    chapter = [c["file"].split("/")[-1] for c in numbered["chapters"]].index(path.stem) + 1
    text = "\n".join(c.source for c in nbformat.read(str(path), as_version=4).cells
                     if c.cell_type == "markdown")
    labels = re.findall(r"^```\{exercise\}\n:label: (\S+)", text, re.M)
    return {label: f"{chapter}.{k}" for k, label in enumerate(labels, 1)}


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_reader_and_student_copies_number_exercises_and_the_chapter_as_the_html(path):
    """Jupyter shows "Exercise 4.1" (the directive's enumerator) and "4. Low precision", as the HTML."""
    expected = _html_exercise_numbers(path)
    chapter = next(iter(expected.values())).split(".")[0]
    for nb in (student.reader_notebook(path), student.student_notebook(path)):
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        shown = dict(re.findall(r"^```\{exercise\}\n:label: (\S+)\n:enumerator: (\S+)\n", text, re.M))
        assert shown == expected
        assert re.search(rf"^# {chapter}\. \S", text, re.M), path.stem
        assert len(re.findall(r"^# ", text, re.M)) == 1


def test_the_guide_calls_each_exercise_by_the_html_number():
    frame = student.exercise_frame()
    for path in CHAPTERS:
        for label, number in _html_exercise_numbers(path).items():
            assert frame.loc[label, "exercise"] == number, label
    assert student.exercise_frame().loc["tc-ex-h100", "exercise"] == "3.1"


def test_pages_outside_the_numbered_chapters_are_left_unnumbered():
    nb = student.reader_notebook(ROOT / "book" / "instructor_guide.ipynb")
    assert nb.cells[0].source.splitlines()[1] == "# Instructor guide"


def test_a_nonumber_exercise_is_skipped_by_the_count():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# T"),
        nbformat.v4.new_markdown_cell("```{exercise}\n:label: a\n:nonumber:\n\nx\n```"),
        nbformat.v4.new_markdown_cell("```{exercise}\n:label: b\n\ny\n```")])
    assert student._exercise_numbers(nb, 4) == [(2, "4.1")]
    student._number_as_html(nb, "low_precision")
    assert nb.cells[0].source == "# 4. T"
    assert ":enumerator:" not in nb.cells[1].source
    assert nb.cells[2].source.startswith("```{exercise}\n:label: b\n:enumerator: 4.1\n")


def test_lecture_outline_walks_the_sections_with_their_takeaways():
    outline = student.lecture_outline(ROOT / "book" / "parallelism.ipynb")
    names = [s["section"] for s in outline]
    assert names[0].startswith("Today's model")
    assert "Tensor parallelism" in names
    assert not {"Summary", "Exercises", "References"} & set(names)
    tp = outline[names.index("Tensor parallelism")]
    assert tp["takeaway"].startswith("Tensor parallelism communicates activations")
    assert tp["explorations"] >= 1
    for s in outline:
        assert "{glue" not in s["takeaway"] and "$" not in s["takeaway"]
    assert any(s["takeaway"] == "" for s in outline)


def test_lecture_outline_refuses_what_is_not_a_notebook(tmp_path):
    bad = tmp_path / "x.ipynb"
    bad.write_text("not json")
    with pytest.raises(ValueError, match="not a Jupyter notebook"):
        student.lecture_outline(bad)


def _markdown_notebook(path, *sources):
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(s) for s in sources]),
                   str(path))
    return path


def test_long_option_runs_and_space_runs_are_read_in_linear_time(tmp_path):
    import time

    take = _markdown_notebook(tmp_path / "take.ipynb",
                              "## S\n```{admonition} Takeaway\n" + ":a:\n" * 200_000)
    term = _markdown_notebook(tmp_path / "term.ipynb", "{term}`" + " " * 200_000 + "x<`")
    start = time.monotonic()
    assert student.lecture_outline(take) == [{"section": "S", "takeaway": "", "explorations": 0}]
    student.reader_notebook(term)
    assert time.monotonic() - start < 5


def test_takeaways_and_explicit_targets_read_as_before():
    assert student._takeaways("```{admonition} Takeaway\n:class: tip\nOne.\nTwo.\n```\n") == ["One.\nTwo.\n"]
    assert student._takeaways("```{admonition} Takeaway\n:a:\n") == []
    assert student._explicit("the text  <target>") == ("the text", "target")
    assert student._explicit("<target>\n") == ("", "target")
    assert student._explicit("a <b> c") == (None, "a <b> c")
    assert student._explicit("a <<b>") == ("a <", "b")


def _glued_notebook(path, text, markdown, scrapbook=None):
    cell = nbformat.v4.new_code_cell("glue()")
    cell.outputs = [nbformat.v4.new_output(
        "display_data", data={"application/papermill.record/text/plain": text},
        metadata={"scrapbook": {"name": "x"} if scrapbook is None else scrapbook})]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell(markdown)]), str(path))
    return path


@pytest.mark.parametrize("text, markdown, scrapbook, fragment", [
    ("[1, 2]", "{glue:text}`x:.2f`", None, r"glued value 'x' = '\[1, 2\]' cannot be formatted with '.2f'"),
    ("None", "{glue:text}`x:.2f`", None, "glued value 'x' = 'None' cannot be formatted"),
    ("1.5", "{glue:text}`x:zz`", None, "glued value 'x' = '1.5' cannot be formatted with 'zz'"),
    ("1.5", "{glue:text}`x:99999999999`", None, "glued value 'x': format spec '99999999999' asks for a width"),
    ("1.5", "{glue:text}`x:.999999999`", None, "glued value 'x': format spec '.999999999' asks for a width"),
    ("1", "", "str", "an output's metadata 'scrapbook' must be a dict"),
    ("1", "", {"name": ["x"]}, "a glued name must be a string"),
])
def test_hostile_glues_are_refused_naming_the_notebook_and_cell(tmp_path, text, markdown, scrapbook, fragment):
    path = _glued_notebook(tmp_path / "nb.ipynb", text, markdown, scrapbook)
    with pytest.raises(ValueError, match=rf"nb.ipynb': cell \d: {fragment}"):
        student.reader_notebook(path)


def test_a_huge_glued_literal_is_kept_as_text_not_parsed(tmp_path):
    path = _glued_notebook(tmp_path / "nb.ipynb", "-" * 200_000 + "1", "# T\n")
    assert student.reader_notebook(path).cells[1].source == "# T\n"
    assert student.glue_values(student._read(path))["x"].endswith("-1")


def test_a_notebook_holding_nan_is_refused_naming_it(tmp_path):
    path = tmp_path / "nan.ipynb"
    path.write_text('{"cells": [], "metadata": {"x": NaN}, "nbformat": 4, "nbformat_minor": 5}')
    for func in (student.reader_notebook, student.solutionless_notebook):
        with pytest.raises(ValueError, match="nan.ipynb.*NaN"):
            func(path)


@pytest.mark.parametrize("source, fragment", [
    ("```{exercise}\nno label here\n```", "an exercise without a ':label:' option"),
    ("```{exercise}\n:label: ex1", "exercise 'ex1' has no statement"),
])
def test_an_exercise_without_label_or_statement_is_refused_by_outline(tmp_path, source, fragment):
    path = tmp_path / "ex.ipynb"
    cells = [nbformat.v4.new_markdown_cell("# T\n"), nbformat.v4.new_markdown_cell(source),
             nbformat.v4.new_code_cell("x", metadata={"tags": [student.TAG]})]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))
    with pytest.raises(ValueError, match=rf"ex.ipynb': cell 1: {fragment}"):
        student.outline([path])


@pytest.mark.parametrize("call, name", [
    (lambda: student.readings(NOTEBOOKS[0], "3"), "count"),
    (lambda: student.readings(NOTEBOOKS[0], 1.5), "count"),
    (lambda: student.readings(NOTEBOOKS[0], 0), "count"),
    (lambda: student.readings(NOTEBOOKS[0], None), "count"),
    (lambda: student.resolve_markdown(None, {}), "text"),
    (lambda: student.resolve_markdown("x", None), "values"),
    (lambda: student.resolve_markdown("x", ["x"]), "values"),
    (lambda: student.glue_values(None), "nb"),
    (lambda: student.outline(str(NOTEBOOKS[0])), "notebooks"),
    (lambda: student.outline(None), "notebooks"),
    (lambda: student.outline([5]), "notebooks"),
    (lambda: student.write_readers("/tmp", None), "notebooks"),
    (lambda: student.write(None, []), "out_dir"),
    (lambda: student.write_readers("/proc/nope", []), "out_dir"),
])
def test_bad_arguments_are_refused_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_main_answers_arguments_that_are_not_strings_with_2():
    assert student.main([None, None]) == 2
    assert student.main(None) == 2
