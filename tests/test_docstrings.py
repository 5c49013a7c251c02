"""The package and the book are one body of work: every public function names the section that explains it."""
import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

import pytest

import gpumodel

ROOT = Path(__file__).resolve().parents[1]
REF = re.compile(r':doc:`/book/(\w+)`(?:\s*\(sections?\s+((?:"[^"]+"(?:,|\s+and)?\s*)+)\))?')
SKIP = {"gpumodel.__main__", "gpumodel.bench", "gpumodel.sphinxext"}


def _public_functions():
    for info in pkgutil.walk_packages(gpumodel.__path__, "gpumodel."):
        if info.name in SKIP or info.name.split(".")[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isfunction(obj) and not name.startswith("_") and obj.__module__ == info.name:
                yield f"{info.name}.{name}", obj


def _headings(doc: str) -> set[str]:
    path = ROOT / "book" / f"{doc}.ipynb"
    if path.exists():
        text = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "markdown")
    else:
        text = (ROOT / "book" / f"{doc}.md").read_text()
    return {m.group(1).strip() for m in re.finditer(r"^#+\s+(.+)$", text, flags=re.M)}


MODEL_MODULES = ("gpumodel.memory", "gpumodel.hardware", "gpumodel.measured", "gpumodel.tensor_cores",
                 "gpumodel.precision", "gpumodel.units")


@pytest.mark.parametrize("qualname, func", list(_public_functions()), ids=lambda v: v if isinstance(v, str) else "")
def test_docstring_points_to_an_existing_section(qualname, func):
    doc = inspect.getdoc(func) or ""
    refs = list(REF.finditer(doc)) or list(REF.finditer(inspect.getdoc(inspect.getmodule(func)) or ""))
    if not refs:
        assert not qualname.startswith(MODEL_MODULES), f"{qualname} does not name the section that explains it"
        return
    for ref in refs:
        page = ref.group(1)
        assert (ROOT / "book" / f"{page}.ipynb").exists() or (ROOT / "book" / f"{page}.md").exists(), page
        for section in re.findall(r'"([^"]+)"', ref.group(2) or ""):
            assert section in _headings(page), f"{qualname}: no section {section!r} in book/{page}"
