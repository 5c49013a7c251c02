"""gpumodel: the models behind the book *Why deep-learning hardware is fast or slow*.

Pure, vectorized numpy functions in base units. Charts (``gpumodel.charts``) and
interactive panels (``gpumodel.explore``) import Altair, pandas and ipywidgets on
demand, so ``import gpumodel`` stays light.
"""
from . import hardware, memory, units
from .units import GB, GiB, KB, KiB, MB, MiB

__all__ = ["hardware", "memory", "units", "GB", "GiB", "KB", "KiB", "MB", "MiB"]
__version__ = "0.1.0"
