"""The book's explorations, one module per chapter, each listing ``EXPLORATIONS``.

``make bench`` times every callback registered here.
"""
from __future__ import annotations

import importlib

CHAPTERS = ("how_a_gpu_runs", "memory_hierarchy", "tensor_cores", "low_precision", "sparsity", "parallelism", "brain",
            "choosing_a_gpu")


def all_explorations() -> list:
    """Every chapter's explorations, in book order."""
    found = []
    for chapter in CHAPTERS:
        found.extend(importlib.import_module(f"{__name__}.{chapter}").EXPLORATIONS)
    return found
