"""Remove stored ipywidgets state from notebooks (``make outputs`` runs it after executing them).

Widget state is only meaningful with a live kernel; in the HTML book it would be dead weight
and in nbval it is not compared.
"""
import sys

import nbformat

for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    if nb.metadata.pop("widgets", None) is not None:
        nbformat.write(nb, path)
