"""The glossary (book/glossary.md) and the {term} links to it from the chapters.

Sphinx already fails the -W build on a {term} whose target is missing; these checks run without a
build and add what Sphinx does not check: every entry is used by some chapter, every chapter
links a fair number of terms, each term is linked once per chapter, no link reaches the
objectives and exercise questions that gpumodel.student prints into the instructor guide (they
would show as raw roles there), and each entry names the chapter that explains it.
"""
import json
import re
from pathlib import Path

import pytest
import yaml

from gpumodel import student

ROOT = Path(__file__).resolve().parents[1]

#: Headwords other pages link to by name (issue #14): spelled exactly like this.
REQUIRED = (
    "SM", "warp", "thread block", "Tensor Core", "tile", "HBM", "L2 cache", "shared memory",
    "arithmetic intensity", "ridge point", "roofline", "wave quantization", "TMA", "2:4 sparsity",
    "BF16", "FP8", "MX format", "loss scaling", "all-reduce", "bus bandwidth", "FSDP",
    "pipeline bubble", "MFU", "HPL", "HPCG",
    "kernel", "GEMM", "FLOP/s", "compute-bound", "memory-bound", "overhead-bound", "register",
    "CUDA core", "GDDR", "NVLink", "PCIe", "data parallelism", "tensor parallelism",
    "pipeline parallelism", "ZeRO", "KV cache", "mixed precision", "INT8", "FP4", "scale factor",
    "Amdahl's law", "occupancy", "split-K", "memory bandwidth", "latency",
)
#: A chapter of the book's Chapters part links at least this many distinct glossary entries.
MIN_TERMS_PER_CHAPTER = 8

TERM_ROLE = re.compile(r"\{term\}`([^`]+)`")
DOC_ROLE = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")
REF_ROLE = re.compile(r"\{ref\}`(?:[^`<]*<)?([^`>]+)>?`")


def term_target(text: str) -> str:
    """The glossary term a {term} role points at: the part in <...>, else the whole text."""
    m = re.fullmatch(r"(?s)(.*?)\s*<([^<>]+)>", text.strip())
    return (m.group(2) if m else text).strip()


def parse_glossary(text: str) -> list[dict]:
    """Entries of the ``{glossary}`` block: {"terms": [headword, ...], "definition": str}."""
    m = re.search(r"^```\{glossary\}\n(.*?)^```\s*$", text, re.S | re.M)
    assert m, "book/glossary.md has no ```{glossary} block"
    entries: list[dict] = []
    current = None
    for line in m.group(1).splitlines():
        if not line.strip():
            if current is not None and current["definition"]:
                current = None  # a blank line after a definition ends the entry
            continue
        if re.match(r"^:[\w-]+:", line):  # a directive option such as :sorted:
            continue
        if line[0].isspace():
            assert current is not None, f"definition without a term: {line!r}"
            current["definition"] += line.strip() + " "
        elif current is not None and not current["definition"]:
            current["terms"].append(line.strip())
        else:
            current = {"terms": [line.strip()], "definition": ""}
            entries.append(current)
    return entries


def markdown_cells(path: Path) -> list[str]:
    """Markdown sources of a notebook, or the text of a .md page as one cell."""
    if path.suffix == ".md":
        return [path.read_text()]
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "markdown"]


def code_cells(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "code"]


def toc_parts(toc_path: Path) -> dict[str, list[str]]:
    """Caption -> files of that part of _toc.yml."""
    toc = yaml.safe_load(toc_path.read_text())
    return {part.get("caption", ""): [c["file"] for c in part.get("chapters", [])]
            for part in toc.get("parts", [])}


def _guide_text(path: Path) -> list[str]:
    """The objectives and exercise tasks the instructor guide prints from a chapter, as it prints them."""
    out = []
    for chapter in student.outline([path]):
        out += chapter["objectives"] + [e["task"] for e in chapter["exercises"]]
    return out


def problems(root: Path, guide_chapters=None) -> list[str]:
    """Every violation of the glossary rules in the book under ``root``; empty when all hold.

    ``guide_chapters``: the chapters whose objectives and exercises the instructor guide prints
    (by default those of ``gpumodel.student.SESSIONS``).
    """
    if guide_chapters is None:
        guide_chapters = {name for _, name, _ in student.SESSIONS}
    out: list[str] = []
    book = root / "book"
    glossary_text = (book / "glossary.md").read_text()
    entries = parse_glossary(glossary_text)
    parts = toc_parts(root / "_toc.yml")
    in_toc = {f for files in parts.values() for f in files}
    chapters = [Path(f).name for f in parts.get("Chapters", [])]

    # The glossary itself: listed, unique headwords, each entry with a definition and a chapter.
    if "book/glossary" not in in_toc:
        out.append("book/glossary is not in _toc.yml")
    headword_of: dict[str, int] = {}
    for i, entry in enumerate(entries):
        for term in entry["terms"]:
            if term.lower() in headword_of:
                out.append(f"headword {term!r} appears twice (Sphinx compares terms case-insensitively)")
            headword_of[term.lower()] = i
        if not entry["definition"].strip():
            out.append(f"entry {entry['terms']} has no definition")
        docs = DOC_ROLE.findall(entry["definition"])
        if not docs:
            out.append(f"entry {entry['terms']} does not link the chapter that explains it ({{doc}})")
        for doc in docs:
            name = doc.strip().lstrip("/").removeprefix("book/")
            if not any((book / (name + ext)).exists() for ext in (".ipynb", ".md")):
                out.append(f"entry {entry['terms']} links {doc!r}, which does not exist")
            elif f"book/{name}" not in in_toc:
                out.append(f"entry {entry['terms']} links {doc!r}, which is not in _toc.yml")
    for term in REQUIRED:
        if term not in {t for e in entries for t in e["terms"]}:
            out.append(f"required headword {term!r} is missing")
    labels = {m for p in book.glob("*.ipynb") for cell in markdown_cells(p)
              for m in re.findall(r"^\(([\w-]+)\)=\s*$", cell, re.M)}
    for label in REF_ROLE.findall(glossary_text):
        if label.strip() not in labels:
            out.append(f"the glossary refers to label {label!r}, which no chapter defines")

    # The links: every target exists; none in code cells or in the text the instructor guide copies.
    linked_from: dict[str, set[int]] = {}
    for path in sorted(book.glob("*.ipynb")) + sorted(book.glob("*.md")):
        cells = markdown_cells(path)
        seen: dict[int, int] = {}
        for cell in cells:
            for text in TERM_ROLE.findall(cell):
                target = term_target(text)
                if target.lower() not in headword_of:
                    out.append(f"{path.name}: {{term}} target {target!r} is not a glossary headword")
                    continue
                entry = headword_of[target.lower()]
                seen[entry] = seen.get(entry, 0) + 1
        if path.suffix == ".ipynb" and path.stem in guide_chapters:
            for text in _guide_text(path):
                if "{term}" in text:
                    out.append(f"{path.name}: the instructor guide would print a raw {{term}} role: {text[:60]!r}")
        if path.suffix == ".ipynb" and any("{term}" in c for c in code_cells(path)):
            out.append(f"{path.name}: a {{term}} role in a code cell")
        if path.name == "glossary.md":
            continue
        for entry, n in seen.items():
            if n > 1 and path.stem in chapters:
                out.append(f"{path.name}: {entries[entry]['terms'][0]!r} linked {n} times (link the first use only)")
        if path.stem in chapters:
            for entry in seen:
                linked_from.setdefault(entry, set()).add(path.stem)
            if len(seen) < MIN_TERMS_PER_CHAPTER:
                out.append(f"{path.name}: links {len(seen)} glossary terms, fewer than {MIN_TERMS_PER_CHAPTER}")
    for i, entry in enumerate(entries):
        if i not in linked_from:
            out.append(f"entry {entry['terms']} is not linked from any chapter")
    return out


def test_glossary_and_term_links():
    found = problems(ROOT)
    assert not found, "\n".join(found)


def test_every_chapter_is_checked():
    chapters = toc_parts(ROOT / "_toc.yml")["Chapters"]
    assert len(chapters) >= 7
    for f in chapters:
        assert (ROOT / (f + ".ipynb")).exists() or (ROOT / (f + ".md")).exists(), f


def test_parse_glossary_groups_headwords():
    entries = parse_glossary("```{glossary}\n:sorted:\n\nstreaming multiprocessor\nSM\n  One SM.\n"
                             "  Second line.\n\nwarp\n  Threads.\n```\n")
    assert [e["terms"] for e in entries] == [["streaming multiprocessor", "SM"], ["warp"]]
    assert entries[0]["definition"].strip() == "One SM. Second line."
    assert term_target("Tensor Cores <Tensor Core>") == "Tensor Core"
    assert term_target("roofline") == "roofline"


def _mini_book(tmp_path: Path, chapter_md: str, definition: str = "See {doc}`ch`.") -> Path:
    (tmp_path / "book").mkdir()
    terms = "\n\n".join(f"{t}\n  Defined. {definition}" for t in REQUIRED)
    (tmp_path / "book" / "glossary.md").write_text(f"# Glossary\n\n```{{glossary}}\n:sorted:\n\n{terms}\n```\n")
    # a tagged solution cell makes the notebook a chapter with exercises for gpumodel.student
    nb = {"cells": [{"cell_type": "markdown", "id": "m", "metadata": {}, "source": chapter_md},
                    {"cell_type": "code", "id": "c", "metadata": {"tags": [student.TAG]}, "source": "",
                     "outputs": [], "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "book" / "ch.ipynb").write_text(json.dumps(nb))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n"
                                       "  - caption: Chapters\n    chapters:\n      - file: book/ch\n"
                                       "  - caption: Appendix\n    chapters:\n      - file: book/glossary\n")
    return tmp_path


ALL_LINKED = " ".join(f"{{term}}`{t}`" for t in REQUIRED)


def test_checker_passes_a_good_mini_book(tmp_path):
    assert problems(_mini_book(tmp_path, ALL_LINKED), guide_chapters={"ch"}) == []


@pytest.mark.parametrize("chapter_md, definition, expected", [
    (ALL_LINKED + " {term}`TPUs <TPU>`", "See {doc}`ch`.", "'TPU' is not a glossary headword"),
    (ALL_LINKED.replace("{term}`HPCG`", "HPCG"), "See {doc}`ch`.", "['HPCG'] is not linked from any chapter"),
    (ALL_LINKED + " {term}`warps <warp>`", "See {doc}`ch`.", "'warp' linked 2 times"),
    (ALL_LINKED, "See {doc}`how_a_gpu_works`.", "which does not exist"),
    (ALL_LINKED, "No chapter named.", "does not link the chapter"),
    (" ".join(f"{{term}}`{t}`" for t in REQUIRED[:5]), "See {doc}`ch`.", "fewer than 8"),
    ("```{admonition} Learning objectives\n- the {term}`roofline`\n```\n" + ALL_LINKED, "See {doc}`ch`.",
     "the instructor guide would print a raw {term} role"),
    ("```{exercise}\n:label: ch-ex\n\nWhy is a {term}`kernel` slow?\n```\n" + ALL_LINKED, "See {doc}`ch`.",
     "the instructor guide would print a raw {term} role"),
])
def test_checker_catches(tmp_path, chapter_md, definition, expected):
    found = problems(_mini_book(tmp_path, chapter_md, definition), guide_chapters={"ch"})
    assert any(expected in p for p in found), found


def test_checker_catches_a_missing_required_headword(tmp_path):
    root = _mini_book(tmp_path, ALL_LINKED)
    g = root / "book" / "glossary.md"
    g.write_text(g.read_text().replace("\nbus bandwidth\n", "\nbus bandwidths\n"))
    found = problems(root, guide_chapters={"ch"})
    assert any("required headword 'bus bandwidth' is missing" in p for p in found), found
