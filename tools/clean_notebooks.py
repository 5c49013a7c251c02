"""Make executed notebooks reviewable (``make outputs`` runs it after executing them).

Removes what changes on every run without changing what a reader sees: stored ipywidgets state
(only meaningful with a live kernel; not compared by nbval) and per-cell execution timestamps.
"""
import sys

import nbformat

for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    changed = nb.metadata.pop("widgets", None) is not None
    for cell in nb.cells:
        changed |= cell.metadata.pop("execution", None) is not None
    if changed:
        nbformat.write(nb, path)
