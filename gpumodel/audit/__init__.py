"""The seed audit: every number from the seed posts that the book reproduces.

Each row holds the number as the post prints it and a function that computes the
model's value at call time. A row ``match``es when the model's value, rounded the way
the post rounded it, equals the post's number; otherwise it ``differs`` and its note
says why. A row whose model was rebuilt from the post's number (a lost formula reconstructed
so that it lands on the post's result) is ``reconstructed`` when it agrees: its agreement holds
by construction and checks only that the reconstruction still stands, not the post. Chapters add rows by adding a module here and listing it in ``_CHAPTERS``.
Rendered in :doc:`/book/seed_audit`; printed by ``python -m gpumodel reproduce``.
"""
from __future__ import annotations

import importlib
import math
import re
from dataclasses import dataclass
from typing import Callable

from .. import _checks

#: Every status a row can have: see :meth:`SeedRow.evaluate`.
STATUSES = ("match", "reconstructed", "differs")

_CHAPTERS = ("memory_hierarchy", "tensor_cores", "low_precision", "sparsity", "parallelism", "brain",
             "choosing_a_gpu")


@dataclass(frozen=True)
class SeedRow:
    """One audited number. ``seed_value`` is a string exactly as printed in the post."""
    id: str
    seed_value: str
    model: Callable[[], float]
    unit: str
    source: str
    note_if_differs: str = ""
    note: str = ""
    #: If set, the row matches when the model is within this relative distance of the post's
    #: number instead of when it rounds to it: for an exact factor ("2x", where rounding to the
    #: nearest integer would accept 1.5) or for a post that carried a rounded intermediate forward.
    tolerance: float | None = None
    #: The model was built to reproduce this number (the post's formula is lost and was
    #: reconstructed from its result), so agreement is ``reconstructed``, not ``match``.
    reconstructed: bool = False
    #: What the table shows in the post's column when the post prints no number of its own
    #: (``seed_value`` is then the value its words imply, which the status is computed from).
    shown: str = ""

    def evaluate(self) -> dict:
        """The row with ``model_value`` computed now and its ``status``, one of :data:`STATUSES`.

        "match": the model, rounded as the post rounded, gives the post's number; "reconstructed":
        the same, for a row whose model was built to give it; "differs": it does not.
        """
        value = float(self.model())
        if self.tolerance is not None:
            target = float(self.seed_value.replace(",", ""))
            same = abs(value - target) <= self.tolerance * abs(target)
        else:
            same = rounds_to(value, self.seed_value)
        status = ("reconstructed" if self.reconstructed else "match") if same else "differs"
        note = self.note_if_differs if status == "differs" else self.note
        return {"id": self.id, "seed_value": self.shown or self.seed_value, "model_value": value,
                "unit": self.unit, "source": self.source, "status": status, "note": note}


def rounds_to(value: float, printed: str) -> bool:
    """Whether ``value`` rounded to the precision of ``printed`` (e.g. ``"5.2e-05"``, ``"1.73"``) equals it."""
    value = _checks.scalar("value", value)
    text = _checks.text("printed", printed).strip().lower().replace(",", "")
    if not _PRINTED.fullmatch(text):
        raise ValueError(f"printed must be a number as printed, e.g. '1.73' or '5.2e-05' (got {printed!r:.60})")
    target = float(text)
    if not math.isfinite(target):
        raise ValueError(f"printed must be finite (got {printed!r:.60})")
    if "e" in text:
        mantissa, exponent = text.split("e")
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        if abs(int(exponent)) > 300:
            raise ValueError(f"printed must have an exponent in [-300, 300] (got {printed!r:.60})")
        scale = 10.0 ** int(exponent)
        scaled = value / scale
        if not math.isfinite(scaled):  # value is astronomically larger than the printed number
            return False
        return round(scaled, decimals) == round(target / scale, decimals)
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(value, decimals) == round(target, decimals)


_PRINTED = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?")


def rows() -> list[SeedRow]:
    """Every registered row, chapter by chapter."""
    out: list[SeedRow] = []
    for chapter in _CHAPTERS:
        out.extend(importlib.import_module(f"{__name__}.{chapter}").ROWS)
    ids = [r.id for r in out]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise ValueError(f"duplicate seed-audit ids: {sorted(dupes)}")
    return out


def reproduce() -> list[dict]:
    """Evaluate every row now: a list of dicts with id, seed_value, model_value, unit, source, status, note."""
    return [row.evaluate() for row in rows()]


def frame(prefixes: tuple[str, ...] = ()):
    """The audit as a pandas DataFrame (model values to 4 significant figures), optionally only ids with ``prefixes``."""
    import pandas as pd

    if isinstance(prefixes, str):
        prefixes = (prefixes,)  # one prefix, not its letters
    if prefixes is None or not hasattr(prefixes, "__iter__") or isinstance(prefixes, (bytes, dict)):
        raise ValueError(f"prefixes must be a string or a sequence of strings (got {prefixes!r:.80})")
    prefixes = tuple(prefixes)
    if not all(isinstance(p, str) for p in prefixes):
        raise ValueError(f"prefixes must be a string or a sequence of strings (got {prefixes!r:.80})")
    rows = [r for r in reproduce() if not prefixes or r["id"].startswith(prefixes)]
    table = pd.DataFrame(rows, columns=["id", "seed_value", "model_value", "unit", "status", "source", "note"])
    table["model_value"] = [f"{v:.4g}" for v in table["model_value"]]
    return table.rename(columns={"seed_value": "post", "model_value": "model"}).set_index("id")
