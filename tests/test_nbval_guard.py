"""Prove that strict nbval bites: one changed digit in one stored number must fail the run."""
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "memory_hierarchy.ipynb"


def _tamper(nb):
    """Change one digit of the first printed number; keep the notebook only up to that cell.

    Returns the stored text up to and including the changed digit.
    """
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and re.search(r"\d", output["text"]):
                match = re.search(r"\d", output["text"])
                digit = str((int(match.group()) + 1) % 10)
                output["text"] = output["text"][:match.start()] + digit + output["text"][match.end():]
                nb.cells = nb.cells[: index + 1]
                return output["text"][: match.end()]
    raise AssertionError("no printed number found in the chapter")


def test_changed_digit_fails_nbval(tmp_path):
    nb = nbformat.read(CHAPTER, as_version=4)
    changed = _tamper(nb)
    copy = tmp_path / "tampered.ipynb"
    nbformat.write(nb, copy)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider", "--color=no",
         "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"), str(copy)],
        capture_output=True, text=True, cwd=tmp_path, env={**__import__("os").environ, "GPUMODEL_BOOK": ""})
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1 failed" in result.stdout
    assert "Cell outputs differ" in result.stdout
    assert changed.splitlines()[-1] in result.stdout
