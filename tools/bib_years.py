"""Give citations that would read alike a letter after the year: [NVIDIA, 2020a], [NVIDIA, 2020b].

The book cites author-year. Two entries with the same first author (or authors) and year
would print the same label, so this script appends a, b, c ... to the year of each entry in
such a group, in the order of their titles. It is idempotent: run it after adding entries
(``.venv/bin/python tools/bib_years.py``); ``tests/test_data.py`` fails while two labels
collide.
"""
from __future__ import annotations

import collections
import re
import string
from pathlib import Path

from pybtex.database import parse_file

BIB_DIR = Path(__file__).resolve().parents[1] / "book" / "bib"


def label(entry) -> str:
    """The author part of an author-year citation, as the book's style prints it."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    if not people:
        return "?"

    def last(p):
        return " ".join(p.last_names) or " ".join(p.first_names)
    if len(people) == 1:
        return last(people[0])
    if len(people) == 2 and str(people[1]) != "others":
        return f"{last(people[0])} and {last(people[1])}"
    return f"{last(people[0])} et al."


def base_year(entry) -> str:
    return re.sub(r"[a-z]$", "", entry.fields.get("year", ""))


def groups() -> dict:
    """(author label, year) -> [(key, title, file)] for every entry of the book's .bib files."""
    out = collections.defaultdict(list)
    for path in sorted(BIB_DIR.glob("*.bib")):
        for key, entry in parse_file(path).entries.items():
            title = re.sub(r"[{}]", "", entry.fields.get("title", "")).lower()
            out[(label(entry), base_year(entry))].append((key, title, path))
    return out


def suffixes() -> dict:
    """key -> the year it should carry (with a letter where its label collides)."""
    years = {}
    for (_, year), members in groups().items():
        members = sorted(members, key=lambda m: (m[1], m[0]))
        for i, (key, _, _) in enumerate(members):
            years[key] = year + (string.ascii_lowercase[i] if len(members) > 1 else "")
    return years


def main() -> None:
    years = suffixes()
    for path in sorted(BIB_DIR.glob("*.bib")):
        text = path.read_text()
        chunks = re.split(r"(?m)^(?=@)", text)
        for i, chunk in enumerate(chunks):
            head = re.match(r"@\w+\{([^,\s]+),", chunk)
            if head and head.group(1) in years:
                chunks[i] = re.sub(r"(\byear\s*=\s*\{)[^}]*(\})",
                                   lambda m: m.group(1) + years[head.group(1)] + m.group(2),
                                   chunk, count=1)
        new = "".join(chunks)
        if new != text:
            path.write_text(new)
            print(f"updated {path.name}")


if __name__ == "__main__":
    main()
