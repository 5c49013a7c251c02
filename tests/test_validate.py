"""How wrong is each model: `python -m gpumodel validate`, its recorded scores and the reader's script."""
import csv
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpumodel import calibration, measured, validate

ROOT = Path(__file__).resolve().parents[1]
RECORDED = json.loads((ROOT / "tests" / "validation_recorded.json").read_text())
EXAMPLE = ROOT / "tests" / "data" / "my_gpu_example.csv"


def _run_module():
    spec = importlib.util.spec_from_file_location("measure_run", ROOT / "measurements" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "gpumodel", *args], capture_output=True, text=True,
                          cwd=ROOT)


# --- the dataset ---------------------------------------------------------------------------------

def test_at_least_sixty_scored_rows_across_five_chapters():
    rows = validate.rows()
    assert len(rows) >= 60
    assert len({r["chapter"] for r in rows}) >= 5
    for r in rows:
        assert set(r) == set(validate.COLUMNS)
        assert r["measured"] > 0 and r["predicted"] > 0


def test_every_scored_row_names_where_to_find_it():
    details = {r["id"]: r["detail"] for r in measured.measurements() + measured.collectives()}
    for r in validate.rows():
        assert r["source"], r["id"]
        assert "@" in details[r["id"]] or "section" in details[r["id"]], (r["id"], details[r["id"]])


def test_unscored_rows_carry_a_reason():
    scored = {r["id"] for r in validate.rows()}
    for r in validate.unscored():
        assert r["id"] not in scored and r["reason"]


def test_no_prediction_uses_its_own_row():
    """Changing a scored row's measured value must not change its prediction."""
    rows = validate.dataset()
    by_id = {r["id"]: r for r in rows}
    for r in validate.rows():
        rule = validate._rule(r["id"])
        altered = dict(by_id[r["id"]], value=by_id[r["id"]]["value"] * 3.0)
        assert rule.predict(altered, "book", {**by_id, r["id"]: altered},
                            calibration.default()) == pytest.approx(r["predicted"])


# --- the scores ----------------------------------------------------------------------------------

def test_no_median_is_worse_than_recorded():
    summary = validate.summary(validate.rows())
    assert summary["overall"]["median"] <= RECORDED["overall"]
    for chapter, median in RECORDED["chapters"].items():
        assert summary["chapters"][chapter]["median"] <= median, chapter


def test_the_book_models_beat_the_datasheet_alone():
    book = validate.summary(validate.rows("book"))
    naive = validate.summary(validate.rows("naive"))
    assert book["overall"]["median"] < naive["overall"]["median"]


def test_summary_statistics():
    rows = [{"id": f"x{i}", "chapter": "sparsity", "rel_error": e} for i, e in
            enumerate([0.1, -0.2, 0.5, -1.0 + 1e-9, 0.0])]
    s = validate.summary(rows)
    assert s["overall"]["rows"] == 5
    assert s["overall"]["median"] == pytest.approx(0.2)
    assert s["overall"]["within_30"] == pytest.approx(0.6)
    assert [w["id"] for w in s["worst"]] == ["x3", "x2", "x1"]


def test_chapter_filter_and_bad_names():
    assert {r["chapter"] for r in validate.rows(chapter="parallelism")} == {"parallelism"}
    with pytest.raises(ValueError, match="chapter"):
        validate.rows(chapter="brains")
    with pytest.raises(ValueError, match="model"):
        validate.rows(model="fitted")


# --- the command line --------------------------------------------------------------------------

def test_validate_json_has_rows_and_summary():
    out = _cli("validate", "--json", "--chapter", "sparsity")
    payload = json.loads(out.stdout)
    assert out.returncode == 0
    assert set(payload) == {"rows", "summary"}
    assert set(payload["rows"][0]) == set(validate.COLUMNS)
    assert set(payload["summary"]) == {"chapters", "overall", "worst"}
    assert len(payload["summary"]["chapters"]["sparsity"]["worst"]) == 3


def test_validate_text_prints_the_summary():
    out = _cli("validate")
    assert out.returncode == 0
    assert "worst overall:" in out.stdout and "worst in sparsity:" in out.stdout
    assert "within 30%" in out.stdout


@pytest.mark.parametrize("args", [["validate", "--chapter", "brains"],
                                  ["validate", "--measurements", "/no/such/file.csv"],
                                  ["validate", "--model", "fitted"]])
def test_validate_refuses_bad_input_with_one_line(args):
    out = _cli(*args)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1


# --- a reader's own GPU ----------------------------------------------------------------------------

def test_a_readers_csv_is_scored():
    rows = validate.rows(measurements=str(EXAMPLE))
    ids = {r["id"] for r in rows}
    assert "mine.matmul.bf16.8192x8192x8192" in ids and "mine.stream.copy" in ids
    assert "mine.sparse.3072x10240x3072.sparse" in ids and "mine.allreduce.1073741824" in ids
    assert {r["chapter"] for r in rows} == {"memory_hierarchy", "sparsity", "parallelism"}


def test_a_malformed_csv_is_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,value\nmine.stream.copy,12\n")
    with pytest.raises(ValueError, match="missing columns"):
        validate.rows(measurements=str(bad))
    bad.write_text(EXAMPLE.read_text().replace(",2900,", ",fast,"))
    assert "mine.stream.copy" not in {r["id"] for r in validate.rows(measurements=str(bad))}
    [entry] = [r for r in validate.unscored(str(bad)) if r["id"] == "mine.stream.copy"]
    assert entry["line"] == 5 and "value must be a positive number" in entry["reason"]


def test_run_script_writes_the_books_schema(tmp_path):
    run = _run_module()
    assert tuple(run.COLUMNS) == measured._MEASUREMENT_COLUMNS
    rows = [run.row("mine.stream.copy", "copy", "H100 SXM5", run.gbs(2e9, 1e-3), "GB/s", "device=x")]
    path = tmp_path / "mine.csv"
    run.write_rows(rows, str(path))
    read = validate.read_rows(path.read_text(), str(path))
    assert read[0]["value"] == pytest.approx(2000.0)
    assert validate.rows(measurements=str(path))[0]["predicted"] == 3350.0


def test_run_script_arithmetic_and_names():
    run = _run_module()
    assert run.tflops(4096, 4096, 4096, 1e-3) == pytest.approx(137.438953472)
    assert run.busbw_gbs(1e9, 1e-2, 8) == pytest.approx(175.0)
    names = ["H100 SXM5", "H100 PCIe", "RTX 4090", "A100 SXM4 80GB"]
    assert run.table_name("NVIDIA H100 80GB HBM3", names) == "H100 SXM5"
    assert run.table_name("NVIDIA GeForce RTX 4090", names) == "RTX 4090"
    assert run.table_name("NVIDIA A100-SXM4-80GB", names) == "A100 SXM4 80GB"
    assert run.table_name("Some Other GPU", names) is None
    for other in ("NVIDIA GH200 480GB", "NVIDIA H200 NVL", "NVIDIA GB200", "NVIDIA L40"):
        assert run.table_name(other, names + ["H200 SXM", "B200", "L40S"]) is None, other
    with pytest.raises(ValueError):
        run.row("x", "x", "x", 0.0, "ms", "")


#: Cards students get, as ``torch.cuda.get_device_name()`` prints them -> the row run.py records
#: (None: not in the book's table, so run.py stops and says how to add it or pass --hardware).
STUDENT_CARDS = {
    "NVIDIA A100 80GB PCIe": "A100 80GB PCIe", "NVIDIA A100-SXM4-80GB": "A100 SXM4 80GB",
    "NVIDIA A100-PCIE-40GB": "A100 PCIe", "NVIDIA GH200 480GB": "GH200", "NVIDIA H100 PCIe": "H100 PCIe",
    "NVIDIA H100 80GB HBM3": "H100 SXM5", "NVIDIA H200": "H200 SXM", "Tesla T4": "T4",
    "Tesla V100-SXM2-16GB": "V100 SXM2 16GB", "NVIDIA L40S": "L40S", "NVIDIA L40": "L40",
    "NVIDIA RTX A6000": "RTX A6000", "NVIDIA RTX 6000 Ada Generation": "RTX 6000 Ada",
    "NVIDIA GeForce RTX 4090": "RTX 4090", "NVIDIA GeForce RTX 3090": "RTX 3090",
    "AMD Instinct MI300X": "MI300X", "NVIDIA L4": None, "NVIDIA A10G": None, "NVIDIA A10": None,
    "NVIDIA GeForce RTX 3060": None, "NVIDIA GeForce RTX 3090 Ti": None, "NVIDIA H100 NVL": None,
    "NVIDIA GeForce RTX 4070 Ti SUPER": None,
}


@pytest.mark.parametrize("device", STUDENT_CARDS)
def test_run_script_names_the_cards_students_get_as_the_table_does(device):
    from gpumodel import hardware

    run = _run_module()
    names = hardware.names() + sorted(hardware.aliases())
    expected = STUDENT_CARDS[device]
    assert run.table_name(device, names) == expected
    if expected is None:
        with pytest.raises(run.SetupError, match="--hardware.*README"):
            run.hardware_for(device, names)
    else:
        assert run.hardware_for(device, names) == expected and hardware.joins(expected)


def test_every_device_name_of_the_run_script_is_a_row_or_an_alias():
    from gpumodel import hardware

    run = _run_module()
    assert all(hardware.joins(name) for name in run.DEVICE_NAMES.values())
    assert all(key == run._device_key(key) for key in run.DEVICE_NAMES)


@pytest.mark.parametrize("gpumodel_importable", [True, False])
def test_run_script_on_an_unknown_card_stops_before_measuring(tmp_path, monkeypatch, capsys,
                                                              gpumodel_importable):
    """An L4 (not in the table), or any card outside the book's environment: exit 2, one line,
    no file, never the raw device name as ``hardware``."""
    import types

    run = _run_module()
    cuda = types.SimpleNamespace(is_available=lambda: True, get_device_name=lambda *a: "NVIDIA L4")
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    if not gpumodel_importable:
        import gpumodel

        monkeypatch.setitem(sys.modules, "gpumodel.hardware", None)
        monkeypatch.delattr(gpumodel, "hardware", raising=False)
    out = tmp_path / "x.csv"
    assert run.main(["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--hardware" in err
    assert ("'NVIDIA L4' is not in the book's hardware table" in err) == gpumodel_importable
    assert not out.exists()


def test_run_script_without_torch_fails_with_one_line(tmp_path):
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here; the no-torch message cannot be checked")
    out = subprocess.run([sys.executable, str(ROOT / "measurements" / "run.py"), "--out",
                          str(tmp_path / "x.csv")], capture_output=True, text=True)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "PyTorch" in out.stderr or "GPU" in out.stderr


def test_no_left_out_median_is_worse_than_recorded():
    summary = validate.cv_summary()
    assert summary["overall"]["left_out"]["median"] <= RECORDED["left_out"]["overall"]
    for chapter, median in RECORDED["left_out"]["chapters"].items():
        assert summary["chapters"][chapter]["left_out"]["median"] <= median, chapter


def test_leaving_a_chip_out_withholds_its_rows_and_its_own_measurements():
    full, without = calibration.default(), calibration.default("GA100")
    assert "GA100" in full.gemm_shares and "GA100" not in without.gemm_shares
    assert "GA100" not in without.latencies and without.rows < full.rows
    assert calibration.die("A100 PCIe") == calibration.die("A100 SXM4 80GB") == "GA100"
    assert calibration.die("GH200") == calibration.die("H200 SXM") == "GH100"


def test_kendall_tau_of_known_orders():
    assert validate.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert validate.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert validate.kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


def test_cv_cli_prints_in_sample_and_left_out_and_json_carries_tau():
    out = _cli("validate", "--cv", "--json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert {"chapters", "overall", "tau"} <= set(payload["summary"])
    assert all(r["cv"] in ("chip", "workload") for r in payload["rows"])


@pytest.mark.parametrize("error", [float("nan"), float("inf"), None, True, "0.1"])
def test_summary_refuses_an_unscored_error(error):
    rows = [{"id": "a", "chapter": "sparsity", "rel_error": 0.1},
            {"id": "b", "chapter": "sparsity", "rel_error": error}]
    with pytest.raises(ValueError, match=r"scored\[1\].*'b'"):
        validate.summary(rows)


@pytest.mark.parametrize("bad, fragment", [
    ({"chapter": "zzz"}, "['chapter'] must be one of"), ({"chapter": None}, "['chapter'] must be one of"),
    ({"rel_error": -2.0}, "['rel_error'] must be >= -1")])
def test_summary_refuses_rows_it_would_drop_or_cannot_be_errors(bad, fragment):
    """A row of an unknown chapter used to count overall but in no chapter; an error below -1
    is no prediction over a positive measurement."""
    row = dict({"id": "a", "chapter": "sparsity", "rel_error": 0.1}, **bad)
    with pytest.raises(ValueError, match=r"scored\[1\]" + re.escape(fragment)):
        validate.summary([{"id": "b", "chapter": "sparsity", "rel_error": -1.0}, row])


def test_kendall_tau_of_many_items_is_refused_before_it_takes_gigabytes():
    """All pairs are compared: 10,000 items are ranked a block of rows at a time (tens of MB,
    about a second; 50,000 once asked for 20 GB at once and died), more are refused naming x."""
    import time
    import tracemalloc

    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.random(validate.MAX_TAU_ITEMS)
    tracemalloc.start()
    try:
        start = time.process_time()
        tau = validate.kendall_tau(x, x + rng.random(x.size))
        elapsed, peak = time.process_time() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.3 < tau < 0.7 and elapsed < 10 and peak < 200 * 2**20
    with pytest.raises(ValueError, match=r"x and y must have at most 10,000"):
        validate.kendall_tau(np.arange(50_000.0), np.arange(50_000.0))
    with pytest.raises(ValueError, match=r"x must be a 1-D sequence"):
        validate.kendall_tau([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0, 3.0, 4.0])


def test_discordant_pairs_are_the_pairs_that_hold_tau_below_one():
    summary = validate.cv_summary()
    for workload, t in summary["tau"].items():
        pairs = validate.discordant_pairs(workload)
        n0 = t["cards"] * (t["cards"] - 1) // 2
        assert len(pairs) == pytest.approx((1.0 - t["left_out"]) * n0 / 2.0)
        assert all(p["measured_gap"] > 0 for p in pairs)
    q4 = validate.discordant_pairs("decode.llama3_8b_q4")
    assert (q4[0]["first"], q4[0]["second"]) == ("L40S", "RTX 3090")
    assert q4[0]["measured_gap"] == pytest.approx(115.55 / 115.42 - 1.0)


@pytest.mark.parametrize("bad", ["decode.llama3_8b", "lambda", 3, None])
def test_discordant_pairs_refuse_unknown_workloads(bad):
    with pytest.raises(ValueError, match="workload"):
        validate.discordant_pairs(bad)


# --- a reader's file: names in any letter case, ids that are not one line ------------------------

def test_column_and_hardware_names_are_matched_ignoring_case_and_surrounding_spaces(tmp_path):
    text = EXAMPLE.read_text()
    header, body = text.split("\n", 1)
    loose = tmp_path / "loose.csv"
    loose.write_text(" , ".join(c.upper() for c in header.split(",")) + "\n"
                     + body.replace(",H100 SXM5,", ",  h100 sxm5 ,"))
    expected = validate.rows(measurements=str(EXAMPLE))
    got = validate.rows(measurements=str(loose))
    assert [(r["id"], r["hardware"], r["predicted"]) for r in got] == [
        (r["id"], r["hardware"], r["predicted"]) for r in expected]
    unscored = [{u["id"] for u in validate.unscored(str(path))} for path in (loose, EXAMPLE)]
    assert unscored[0] == unscored[1]


def test_columns_differing_only_in_case_are_refused_as_repeated():
    with pytest.raises(ValueError, match=r"repeated columns \['id'\]"):
        validate.read_rows("id,ID,what,hardware,value,unit,batch,gpus,source,detail\n"
                           "a,a,x,H100 SXM5,1,GB/s,,1,m,x\n")


@pytest.mark.parametrize("control", ["\n", "\r", "\t", "\x1b", "\u2028", "\u202e"])
def test_an_id_with_a_control_character_is_listed_unscored_never_scored(tmp_path, control):
    row_id = f"mine.stream{control}.copy"
    path = tmp_path / "mine.csv"
    path.write_text("id,what,hardware,value,unit,batch,gpus,source,detail\n"
                    "mine.stream.copy,copy,H100 SXM5,2900,GB/s,,1,mine,x\n"
                    f'"{row_id}",copy,H100 SXM5,2900,GB/s,,1,mine,x\n', newline="")
    assert [r["id"] for r in validate.rows(measurements=str(path))] == ["mine.stream.copy"]
    [entry] = validate.unscored(str(path))
    assert entry["file"] == str(path) and entry["line"] == 3 and entry["id"] == row_id
    assert "control character" in entry["reason"] and repr(control) in entry["reason"]
    assert entry["reason"].isprintable()


def test_a_fifo_whose_writer_writes_nothing_is_given_up_within_the_limit(tmp_path):
    import os
    import time

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    writer = subprocess.Popen(f"exec sleep 20 > '{fifo}'", shell=True)  # holds it open, writes nothing
    try:
        time.sleep(0.2)
        start = time.monotonic()
        with pytest.raises(ValueError, match="measurements"):
            validate.dataset(str(fifo))
        assert time.monotonic() - start < 10
    finally:
        writer.kill()
        writer.wait()


def test_kendall_tau_of_huge_opposite_values_warns_of_no_overflow():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert validate.kendall_tau([1e308, -1e308], [1, 2]) == -1.0
        assert validate.kendall_tau([-1.7e308, 0, 1.7e308], [1, 2, 3]) == 1.0
