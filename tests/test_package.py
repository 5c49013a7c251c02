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


@pytest.mark.parametrize("value", [True, np.array([True, False]), "1", b"1", None, 1 + 2j, np.array([1j]),
                                   np.array([1.0, None], dtype=object), [[1.0, 2.0], [3.0]], {}, 10**400,
                                   [10**400], np.nan, [1.0, np.inf]])
def test_as_array_refuses_what_is_not_a_finite_real_number(value):
    with pytest.raises(ValueError, match="^x must be"):
        _checks.as_array("x", value)


def test_as_array_accepts_real_numbers():
    assert _checks.as_array("x", 3).dtype == float
    np.testing.assert_array_equal(_checks.as_array("x", [1, 2.5, np.float32(3)]), [1, 2.5, 3])
    assert np.isnan(_checks.as_array("x", [np.nan], allow_nonfinite=True)).all()
    assert _checks.as_array("x", np.array([10**20], dtype=object))[0] == 1e20


def test_scalar_flag_choice_and_broadcast():
    assert _checks.scalar("s", np.float32(2)) == 2.0
    with pytest.raises(ValueError, match="s must be a single number"):
        _checks.scalar("s", [2.0])
    with pytest.raises(ValueError, match="sparse must be True or False"):
        _checks.flag("sparse", "no")
    for bad in (["fp16"], 16, None):
        with pytest.raises(ValueError, match="dtype must be a string"):
            units.dtype_bytes(bad)
    with pytest.raises(ValueError, match=r"a \(3,\), b \(2,\)"):
        _checks.broadcast(a=np.ones(3), b=np.ones(2), c=1.0)
    assert _checks.broadcast(a=np.ones(3), b=1.0) == (3,)


def test_finite_result_names_the_arguments_and_silences_warnings():
    @_checks.finite_result
    def ratio(top, bottom):
        return np.asarray(top, dtype=float) / np.asarray(bottom, dtype=float)

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="bottom is too large or too small"):
            ratio(1.0, 1e-320)
        with pytest.raises(ValueError, match=r"top \(3,\), bottom \(2,\)"):
            ratio(np.ones(3), np.ones(2))
    assert ratio(1.0, 4.0) == 0.25


def test_the_wheel_holds_the_package_and_its_data(tmp_path):
    """`make dist`: one wheel with every module and data file, so `pip install` needs no clone."""
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    import shutil

    src = tmp_path / "src"
    shutil.copytree(root / "gpumodel", src / "gpumodel",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "pyproject.toml", src / "pyproject.toml")
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                          "--no-build-isolation", "--wheel-dir", str(tmp_path / "dist"), str(src)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("gpumodel-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {f"gpumodel/data/{p.name}" for p in (root / "gpumodel" / "data").glob("*.csv")}
    assert data <= names
    modules = {str(p.relative_to(root)) for p in (root / "gpumodel").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules <= names, sorted(modules - names)
