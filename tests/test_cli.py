"""The command line: tables, JSON, and one-line errors with exit code 2."""
import json
import subprocess
import sys

import pytest

from gpumodel import cli


def run(*args):
    return subprocess.run([sys.executable, "-m", "gpumodel", *args], capture_output=True, text=True)


def test_list_json_has_every_accelerator():
    rows = json.loads(run("list", "--json").stdout)
    assert "H100 SXM5" in {r["name"] for r in rows}
    assert all(r["source"] for r in rows)


def test_matmul_json_values(capsys):
    assert cli.main(["matmul", "-a", "A100 SXM4 40GB", "-m", "256", "-k", "1024", "-n", "1024",
                     "--tile", "128", "--scheme", "all_pairs", "--json"]) == 0
    values = {r["quantity"]: r["value"] for r in json.loads(capsys.readouterr().out)}
    assert values["tile_loads"] == 1024
    assert values["tile_traffic_mib"] == 32
    assert values["tile_load_seconds"] == pytest.approx(32 * 2**20 / 1555e9)
    assert values["bound"] == "memory"


def test_compare_ratio(capsys):
    assert cli.main(["compare", "a100 sxm4 40gb", "V100 SXM2 16GB", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["ratio"] == pytest.approx(1555 / 900)


@pytest.mark.parametrize("args, fragment", [
    (["matmul", "-a", "H100", "-m", "1", "-k", "1", "-n", "1"], "did you mean 'H100 SXM5'"),
    (["matmul", "-a", "H100 SXM5", "-m", "0", "-k", "1", "-n", "1"], "m must be"),
    (["matmul", "-a", "H100 SXM5", "-m", "8", "-k", "8", "-n", "8", "--dtype", "fp12"], "dtype"),
    (["compare", "TPU v2", "V100 SXM2 16GB", "--dtype", "fp16"], "no fp16"),
    (["show", "Voodoo 2"], "unknown accelerator"),
    (["frobnicate"], "invalid choice"),
    (["matmul", "-a", "H100 SXM5", "-m", "many", "-k", "1", "-n", "1"], "invalid int"),
])
def test_bad_input_exit_2_one_line(args, fragment):
    result = run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert fragment in lines[0]


def _strict(text):
    return json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


@pytest.mark.parametrize("args", [
    ["matmul", "-a", "H100 SXM5", "-m", str(10**400), "-k", "1", "-n", "1"],
    ["matmul", "-a", "H100 SXM5", "-m", str(10**103), "-k", str(10**103), "-n", str(10**103)],
    ["matmul", "-a", "H100 SXM5", "-m", str(10**103), "-k", str(10**103), "-n", str(10**103), "--json"],
    ["matmul", "-a", "H100 SXM5", "-m", "8", "-k", "8", "-n", "8", "--tile", str(10**200)],
])
def test_huge_sizes_exit_2_one_line(args):
    result = run(*args)
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_json_is_strict(capsys):
    assert cli.main(["matmul", "-a", "H100 SXM5", "-m", str(10**100), "-k", "1", "-n", "1", "--json"]) == 0
    values = {r["quantity"]: r["value"] for r in _strict(capsys.readouterr().out)}
    assert values["flop"] == 2e100
