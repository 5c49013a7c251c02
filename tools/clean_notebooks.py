"""Make executed notebooks reviewable (``make outputs`` runs it after executing them).

Removes what changes on every run without changing what a reader sees:
- stored ipywidgets state and widget views (random model ids; a view cannot be drawn without the
  state, and the state only means something with a live kernel; the text form stays, and nbval
  compares it: for a live panel it is ``Panel.summary()``, the controls with their ranges and units);
- per-cell execution timestamps;
- the arbitrary split of printed output into several chunks (consecutive stream outputs are joined).
"""
import sys

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _clean_outputs(outputs):
    cleaned = []
    for out in outputs:
        if out.get("output_type") == "display_data":
            out.get("data", {}).pop(WIDGET_VIEW, None)
        if (out.get("output_type") == "stream" and cleaned and cleaned[-1].get("output_type") == "stream"
                and cleaned[-1].get("name") == out.get("name")):
            cleaned[-1]["text"] = "".join(cleaned[-1]["text"]) + "".join(out["text"])
            continue
        cleaned.append(out)
    return cleaned


for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = _clean_outputs(cell.outputs)
    nbformat.write(nb, path)
