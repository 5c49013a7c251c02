"""Autograded checks (issue 23, item 4): every exercise with a numeric answer has an answer and a
check cell; the hidden tests pass the reference answers and fail wrong ones; nothing hidden reaches
the student; nbgrader grades a folder of submissions into a CSV, one row per student and exercise."""
import copy
import csv
import io
import os
import re
import tokenize
from pathlib import Path

import nbformat
import pytest

from gpumodel import grading, student

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = [p for p in sorted((ROOT / "book").glob("*.ipynb")) if student.has_exercises(p)]
#: Answers whose range the question itself sets ("which of the four").
RANGE_IN_THE_QUESTION = {"answer_mh_single_pass_4608"}
#: The smallest chapter, graded end to end with nbgrader.
END_TO_END = ROOT / "book" / "brain.ipynb"


def _labels(path) -> list[str]:
    nb = nbformat.read(str(path), as_version=4)
    return [re.search(r"^:label: (\S+)", c.source, re.M).group(1) for c in nb.cells
            if c.cell_type == "markdown" and "{exercise}" in c.source]


def _graded(nb):
    return [c for c in nb.cells if "nbgrader" in c.metadata]


def _run_checks(source: str, values: dict) -> None:
    exec(compile(source, "<check cell>", "exec"), dict(values))


def test_every_exercise_has_graded_answers():
    book = {label for path in CHAPTERS for label in _labels(path)}
    table = set(grading.answers_by_label())
    assert table == book, f"exercises without graded answers: {sorted(book - table)}; unknown: {sorted(table - book)}"
    assert set(grading.NOT_GRADED) <= table
    variables = [a.variable for a in grading.ANSWERS]
    assert len(variables) == len(set(variables))
    assert all(re.fullmatch(r"answer_[a-z0-9_]+", v) for v in variables)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_plausible_ranges_hold_the_answer_without_giving_it_away(path):
    for e in grading.expected_answers(path):
        a, value, tolerance = e["answer"], e["value"], e["tolerance"]
        assert a.low < value < a.high, a
        assert a.high - a.low >= 40 * tolerance or a.variable in RANGE_IN_THE_QUESTION, (
            f"{a.variable}: the range is narrow enough to guess")
        assert tolerance <= 0.12 * abs(value) or a.abs_tol, f"{a.variable}: tolerance too loose"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_reference_answers_pass_the_hidden_tests_and_wrong_ones_fail(path):
    expected = {e["answer"].variable: e for e in grading.expected_answers(path)}
    cells = [c for c in _graded(grading.source_notebook(path)) if c.metadata["nbgrader"]["grade"]]
    assert len(cells) == len(grading.answers_by_label().keys() & set(_labels(path)))
    for cell in cells:
        assert grading.BEGIN_HIDDEN in cell.source and grading.END_HIDDEN in cell.source
        names = re.findall(r"^check\((answer_\w+),", cell.source, re.M)
        reference = {name: expected[name]["value"] for name in names}
        _run_checks(cell.source, reference)
        for name in names:
            value, tolerance = reference[name], expected[name]["tolerance"]
            off = max(0.2 * abs(value), 2 * tolerance)
            for wrong in (value - 2 * tolerance, value + 2 * tolerance, value - off, value + off):
                with pytest.raises((AssertionError, ValueError), match=name):
                    _run_checks(cell.source, reference | {name: wrong})
            with pytest.raises(ValueError, match="not set yet"):
                _run_checks(cell.source, reference | {name: ...})


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_student_notebook_holds_no_solution_hidden_test_or_answer(path):
    nb = grading.student_notebook(path)
    added = _graded(nb)
    assert [c.source for c in nb.cells if c not in added] == [c.source for c in student.student_notebook(path).cells]
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    text = "\n".join(c.source for c in added)
    for marker in (grading.BEGIN_HIDDEN, "check_close(", grading.BEGIN_SOLUTION, "glue("):
        assert marker not in text
    numbers = [float(t.string) for cell in added for t in tokenize.generate_tokens(
        io.StringIO(cell.source).readline) if t.type == tokenize.NUMBER]
    for e in grading.expected_answers(path):
        assert f"{e['answer'].variable} = ..." in text
        near = [n for n in numbers if abs(n - e["value"]) <= e["tolerance"]]
        assert not near, f"{e['answer'].variable}: the cells' code holds {near}, an accepted answer"
    for cell in added:
        if cell.metadata["nbgrader"]["grade"]:
            assert cell.metadata["nbgrader"]["locked"] and cell.metadata["editable"] is False


def test_make_student_writes_the_checks_and_no_answer(tmp_path):
    written = student.write(tmp_path, CHAPTERS)
    assert len(written) == len(CHAPTERS)
    for target in written:
        text = target.read_text()
        assert "HIDDEN TESTS" not in text and "check_close(" not in text and "BEGIN SOLUTION" not in text
        for e in grading.expected_answers(ROOT / "book" / target.name):
            if len(repr(e["value"]).strip("0").replace(".", "")) >= 6:
                assert repr(e["value"]) not in text, e["answer"].variable
        labels = {c.metadata["nbgrader"]["grade_id"] for c in _graded(nbformat.read(str(target), as_version=4))}
        assert {f"check-{label}" for label in _labels(ROOT / "book" / target.name)} <= labels


def test_the_check_tests_form_units_and_plausibility(capsys):
    assert grading.check(0.85, "answer_x", "fraction", 0, 1) == 0.85
    assert "plausible" in capsys.readouterr().out
    grading.check(0.85, "answer_x", "%", 0, 100)
    assert "for 85% write 85" in capsys.readouterr().out
    with pytest.raises(ValueError, match="not set yet"):
        grading.check(..., "answer_x", "fraction", 0, 1)
    for bad in ("0.85", True, [0.85], None):
        with pytest.raises(ValueError, match="plain number"):
            grading.check(bad, "answer_x", "fraction", 0, 1)
    with pytest.raises(ValueError, match="finite"):
        grading.check(float("nan"), "answer_x", "fraction", 0, 1)
    with pytest.raises(ValueError, match=r"\(fraction\)\. Scaled by 1/100 it would be: check the unit"):
        grading.check(85.0, "answer_x", "fraction", 0, 1)
    with pytest.raises(ValueError, match="Scaled by 100 it would be"):
        grading.check(0.0126, "answer_x", "ms", 1, 1e5)
    with pytest.raises(ValueError, match="not plausible") as err:
        grading.check(-5.0, "answer_x", "ms", 1e-3, 1e3)
    assert "Scaled" not in str(err.value)
    import numpy as np
    assert grading.check(np.float64(2.0), "answer_x", "times", 0.1, 10) == 2.0
    assert grading.check(np.array(2.0), "answer_x", "times", 0.1, 10) == 2.0
    with pytest.raises(ValueError, match="plain number"):
        grading.check(np.array([2.0]), "answer_x", "times", 0.1, 10)


def test_tolerance_is_what_the_book_prints_or_one_percent():
    assert grading._half_last_digit(",.0f", 2150.0) == 0.5
    assert grading._half_last_digit(".3f", 0.9) == pytest.approx(5e-4)
    assert grading._half_last_digit(".2e", 3.37e20) == pytest.approx(5e17)
    by_name = {e["answer"].variable: e for path in CHAPTERS for e in grading.expected_answers(path)}
    assert by_name["answer_br_year_1_8"]["tolerance"] == 1
    assert by_name["answer_cg_breakeven_days"]["tolerance"] == pytest.approx(0.01 * 181.1236251070276)


def test_the_command_line_answers_bad_input_with_exit_2(tmp_path, capsys):
    assert grading.main([]) == 2
    assert grading.main(["grade", str(tmp_path), str(tmp_path), str(tmp_path / "g.csv")]) == 2
    assert "no gradebook" in capsys.readouterr().err


@pytest.mark.slow
def test_nbgrader_grades_a_folder_of_submissions_into_a_csv(tmp_path):
    """End to end, offline, no Docker (about 30 s): ``make grader``'s course for one chapter, its
    release equal to the student notebook, and ``nbgrader autograde`` of three students: the
    reference solutions (full marks), every answer 20% off (nothing) and an unanswered notebook."""
    pytest.importorskip("nbgrader")
    course, submissions = tmp_path / "course", tmp_path / "submitted-notebooks"
    written = grading.write_course(course, [END_TO_END])
    assert written == [course / "source" / "brain" / "brain.ipynb"]
    release = nbformat.read(str(course / "release" / "brain" / "brain.ipynb"), as_version=4)
    assert [c.source for c in release.cells] == [c.source for c in grading.student_notebook(END_TO_END).cells]
    assert "HIDDEN" not in "".join(c.source for c in release.cells)

    source = nbformat.read(str(written[0]), as_version=4)
    wrong = copy.deepcopy(source)
    for cell in _graded(wrong):
        if cell.metadata["nbgrader"]["solution"]:
            names = re.findall(r"^(answer_\w+) = \.\.\.", cell.source, re.M)
            cell.source += "\n" + "\n".join(f"{n} = 1.2 * {n}" for n in names)
    for who, nb in (("reference", source), ("wrong", wrong), ("blank", release)):
        (submissions / who).mkdir(parents=True)
        nbformat.write(nb, str(submissions / who / "brain.ipynb"))

    out = tmp_path / "grades.csv"
    assert grading.main(["grade", str(course), str(submissions), str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    labels = _labels(END_TO_END)
    assert sorted((r["student"], r["exercise"]) for r in rows) == sorted(
        (who, label) for who in ("reference", "wrong", "blank") for label in labels)
    scores = {(r["student"], r["exercise"]): float(r["score"]) for r in rows}
    assert all(scores["reference", label] == 1 for label in labels)
    assert all(scores["wrong", label] == 0 and scores["blank", label] == 0 for label in labels)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("GPUMODEL_GRADE_ALL"), reason="runs every chapter (minutes); "
                    "set GPUMODEL_GRADE_ALL=1")
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_reference_solution_passes_its_hidden_tests_when_run(path):
    """Each chapter's nbgrader source run top to bottom: no cell fails, so every check cell (visible
    checks and hidden tests) passes on the reference solutions."""
    from nbclient import NotebookClient

    nb = grading.source_notebook(path)
    NotebookClient(nb, timeout=grading.CELL_TIMEOUT_S, allow_errors=True, kernel_name="python3").execute()
    failed = [(c.metadata.get("nbgrader", {}).get("grade_id"), o.ename, o.evalue[:120])
              for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not failed


@pytest.mark.parametrize("kwargs, name", [
    ({"low": "a"}, "low"), ({"low": None}, "low"), ({"high": float("nan")}, "high"),
    ({"low": 20, "high": 10}, "low must be <= high"), ({"unit": None}, "unit"), ({"name": 5}, "name"),
])
def test_check_refuses_bad_instructor_settings_naming_them(kwargs, name):
    args = {"answer": 5, "name": "x", "unit": "ms", "low": 0, "high": 10} | kwargs
    with pytest.raises(ValueError, match=name):
        grading.check(**args)


@pytest.mark.parametrize("answer", [10**400, None, "abc", [1]])
def test_check_and_check_close_tell_a_student_what_to_fix_and_leak_nothing_else(answer):
    with pytest.raises(ValueError, match="answer_x must be a"):
        grading.check(answer, "answer_x", "ms", 0, 10)
    with pytest.raises(ValueError, match="answer_x must be a"):
        grading.check_close(answer, 1.0, 0.1, "answer_x")


def test_check_close_refuses_bad_instructor_values_naming_them():
    with pytest.raises(ValueError, match="expected"):
        grading.check_close(1.0, None, 0.1, "x")
    with pytest.raises(ValueError, match="tolerance"):
        grading.check_close(1.0, 1.0, -1, "x")
    grading.check_close(1.0, 1.05, 0.1, "x")
    with pytest.raises(AssertionError):
        grading.check_close(1.0, 2.0, 0.1, "x")


@pytest.mark.parametrize("call, name", [
    (lambda: grading.grade(None, "x", "y"), "course_dir"),
    (lambda: grading.write_course("/tmp", None), "notebooks"),
    (lambda: grading.write_course("/tmp", [], release=1), "release"),
])
def test_grading_refuses_bad_arguments_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_grading_main_answers_arguments_that_are_not_strings_with_2():
    assert grading.main(None) == 2
    assert grading.main(["course", None, None]) == 2
