"""Package-level promises: light import, validation helpers, units."""
import subprocess
import sys

import numpy as np
import pytest

from gpumodel import _checks, units


def test_import_does_not_pull_pandas_altair_or_widgets():
    code = "import sys, gpumodel; print(sorted(m for m in ('pandas', 'altair', 'ipywidgets', 'ml_dtypes') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_units():
    assert units.GiB / units.GB == pytest.approx(1.073741824)
    assert units.bandwidth_unit("GiB/s") == 2**30
    assert units.byte_unit("mb") == 1e6
    assert units.dtype_bytes("BF16") == 2


def test_choice_suggests_close_names():
    with pytest.raises(ValueError, match=r"unknown accelerator 'RTX 409'; did you mean 'RTX 4090'"):
        _checks.choice("accelerator", "RTX 409", ["RTX 4090", "RTX 3090", "H100 SXM5"])
    assert _checks.choice("dtype", "FP16", ["fp16"]) == "fp16"


def test_range_checks_report_parameter_and_range():
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        _checks.in_range("p", np.array([0.5, 1.5]), 0, 1)
    with pytest.raises(ValueError, match="x must be >= 0"):
        _checks.non_negative("x", -1)
    with pytest.raises(ValueError, match="n must be a whole number"):
        _checks.positive_int("n", 2.5)
    with pytest.raises(ValueError, match="finite"):
        _checks.positive("y", np.inf)
