"""The command line: tables, JSON, and one-line errors with exit code 2."""
import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumodel import cli

ROOT = Path(__file__).resolve().parents[1]


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


# --- a reader's measurements file: every byte is untrusted ------------------------------------

HEADER = "id,what,hardware,value,unit,batch,gpus,source,detail\n"
STREAM = "mine.stream.copy,copy,H100 SXM5,2900,GB/s,,1,mine,x\n"


def _validate_file(tmp_path, content, *extra):
    path = tmp_path / "mine.csv"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return str(path), run("validate", "--measurements", str(path), *extra)


def _one_line_error(result, *fragments):
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.mark.parametrize("content, line, fragment", [
    (HEADER + "mine.stream.copy,copy,H100 SXM5,2900\n", 2, "4 fields where the header has 9"),
    (HEADER + STREAM + STREAM.replace("\n", ",extra\n"), 3, "10 fields"),
    (HEADER + 'mine.stream.copy,"copy,H100 SXM5,2900,GB/s,,1,mine,x\n', 2, "unexpected end"),
    (HEADER + 'mine.stream.copy,"co"py,H100 SXM5,2900,GB/s,,1,mine,x\n', 2, "well-formed"),
    (HEADER + STREAM.replace("copy,H100", "a" * 200_000 + ",H100"), 2, "field limit"),
    ((HEADER + STREAM + STREAM.replace("copy,H100", "caf\xe9,H100")).encode("latin-1"), 3,
     "not UTF-8"),
    (b"", 1, "empty"),
    (b"\n\n", 1, "empty"),
    (HEADER, 2, "no rows after the header"),
    ("what,hardware,value\nx,H100 SXM5,1\n", 1, "missing columns ['batch', 'detail', 'gpus', 'id'"),
    (HEADER.replace("\n", ",id\n") + STREAM.replace("\n", ",y\n"), 1,
     "repeated columns ['id']"),
    (bytes(range(256)) * 4, 2, "byte 0x80 is not UTF-8"),
    (HEADER.encode() + b"mine.stream.copy,\x00,H100 SXM5,1,GB/s,,1,mine,x\n", 2, "NUL"),
    (HEADER + STREAM + "\n" * 300_000, 300_001, "more than 300,000 lines"),
    (HEADER + STREAM + ",,,,,,,,\n" * 300_000, 300_001, "more than 300,000 lines"),
    (HEADER + "".join(f"mine.stream.{i},x,H100 SXM5,1,GB/s,,1,m,x\n" for i in range(300_000)),
     300_001, "split it"),
    (HEADER.replace("\n", "," * 2_000_000 + "\n") + STREAM, 1, "2000009 columns"),
], ids=["short row", "long row", "unterminated quote", "text after a quote", "huge field",
        "latin-1", "empty", "blank lines", "header only", "missing id", "repeated column",
        "binary junk", "nul byte", "300,000 blank lines", "300,000 empty rows",
        "300,000 rows", "two million columns"])
def test_a_malformed_file_exits_2_naming_file_and_line(tmp_path, content, line, fragment):
    path, result = _validate_file(tmp_path, content)
    _one_line_error(result, path, f"line {line}:", fragment)


def test_an_oversize_file_is_refused_without_reading_it_all(tmp_path):
    from gpumodel import validate
    path = tmp_path / "huge.csv"
    with open(path, "wb") as handle:
        handle.truncate(validate.MAX_FILE_BYTES + 1)
    _one_line_error(run("validate", "--measurements", str(path)), str(path), "64 MiB")
    _one_line_error(run("validate", "--measurements", "/dev/zero"), "/dev/zero", "64 MiB")


def test_unnamed_empty_columns_of_a_spreadsheet_are_accepted(tmp_path):
    _, result = _validate_file(tmp_path, HEADER.replace("\n", ",,\n") + STREAM.replace("\n", ",,\n"))
    assert result.returncode == 0 and "mine.stream.copy" in result.stdout, result.stderr


def test_a_byte_order_mark_is_accepted(tmp_path):
    _, result = _validate_file(tmp_path, ("\ufeff" + HEADER + STREAM).encode())
    assert result.returncode == 0, result.stderr
    assert json.loads(run("validate", "--json", "--measurements",
                          str(tmp_path / "mine.csv")).stdout)["rows"][0]["id"] == STREAM[:16]


BAD_COUNTS = ["nan", "inf", "-inf", "-3", "0", "1.5", "1e300", "many", "0x10"]
FAMILY_LACKS = [
    ("lambda.bert_large.x,x,RTX 3090,100,sequences/s,,1,m,x", "batch is empty"),
    ("decode.llama.x,x,RTX 4090,100,tokens/s,,1,m,x", "params="),
    ("decode.llama.x,x,RTX 4090,100,tokens/s,,1,m,params=0;file_bytes=1e9;context=8", "params="),
    ("decode.llama.x,x,RTX 4090,100,tokens/s,,1,m,params=8e9;file_bytes=x;context=8",
     "file_bytes="),
    ("sparse.vitl_step.a100_80.sparse,x,A100 SXM4 80GB,100,ms,,1,m,x", "dense pair"),
    ("sparse.linear_3072x10240x3072.a100_80.sparse,x,A100 SXM4 80GB,1,ms,,1,m,x", "dense pair"),
    ("sparse.llama3_8b.a100_80.int4_sparse,x,A100 SXM4 80GB,100,tokens/s,,1,m,x",
     "sparse.llama3_8b.a100_80.int4"),
    ("sparse.other.a100_80.sparse,x,A100 SXM4 80GB,1,ms,,1,m,x", "is not one of"),
    ("nccl.all_reduce.x,x,H200 SXM,100,GB/s,,8,m,x", "size_bytes"),
    ("torchdist.all_reduce.x,x,RTX 3090,100,GB/s,,8,m,x", "links of"),
    ("gptfast.llama2_7b.h100.fp99,x,H100 SXM5,100,tokens/s,,1,m,x", "format 'fp99'"),
    ("gptfast.llama9.h100.bf16,x,H100 SXM5,100,tokens/s,,1,m,x", "model 'llama9'"),
    ("gptfast.llama2_7b.h100.bf16,x,H100 SXM5,100,tokens/s,,8,m,x", "one GPU"),
    ("gptfast.x,x,H100 SXM5,100,tokens/s,,1,m,x", "looks like"),
    ("dle.x.a100.1gpu,x,A100 SXM4 40GB,100,img/s,8,1,m,x", "V100 pair"),
    ("dle.x.v100_16.1gpu,x,V100 SXM2 16GB,100,img/s,8,1,m,x", "a100 side"),
    ("dle.x,x,A100 SXM4 40GB,100,img/s,8,1,m,x", "looks like"),
    ("deepbench.a.fp16.1x2.b,x,H100 SXM5,1,TFLOPS,,,m,x", "shape"),
    ("deepbench.a.fp32.1x1x1.b,x,TPU v2,1,TFLOPS,,,m,x", "no fp32 peak"),
    ("mamf.x.fp99,x,H100 SXM5,1,TFLOPS,,,m,x", "no 'fp99' peak"),
    ("gemm.x,x,H100 SXM5,1,TFLOPS,,,m,x", "third part"),
    ("stream.x.read,x,Voodoo 2,1,GB/s,,,m,x", "not in the hardware table"),
    ("mine.matmul.bf16.0x1x1,x,H100 SXM5,1,TFLOPS,,1,m,x", "shape"),
    ("mine.matmul.bf16.1x1x1,x,h100,1,TFLOPS,,1,m,x", "not a name in the hardware table"),
    ("mine.sparse.8x8x8.sparse,x,V100 SXM2 16GB,1,ms,,1,m,x", "no 2:4"),
    ("mine.sparse.8x8x8.sparse,x,H100 SXM5,1,ms,,1,m,x", "mine.sparse.8x8x8.dense"),
    ("mine.allreduce.1024,x,H100 SXM5,1,GB/s,,8,m,x", "link="),
    ("mine.allreduce.1024,x,H100 SXM5,1,GB/s,,8,m,link=Tin can", "link 'Tin can'"),
    ("mine.allreduce.1024,x,H100 SXM5,1,GB/s,,,m,link=NVLink 4 (H100)", "gpus is empty"),
    ("mine.allreduce.-5,x,H100 SXM5,1,GB/s,,8,m,link=NVLink 4 (H100)", "message size"),
    ("mine.stream.tiny,x,H100 SXM5,5e-324,GB/s,,1,m,x", "not a finite number"),
    ("mine.stream.copy,x,H100 SXM5,fast,GB/s,,1,m,x", "value must be a positive number"),
    ("mine.stream.copy,x,H100 SXM5,-1,GB/s,,1,m,x", "value must be a positive number"),
    (",x,H100 SXM5,1,GB/s,,1,m,x", "id is empty"),
    ("frobnicate.x,x,H100 SXM5,1,GB/s,,1,m,x", "no chapter predicts"),
] + [
    # digits Python's float() reads but a CSV number is not made of: refused, row by row
    (f"mine.stream.copy,x,H100 SXM5,{v},GB/s,,1,m,x", "ASCII digits")
    for v in ("\u0663\u0660\u0660\u0660", "\uff13\uff10\uff10\uff10", "2_900", "\u0663e3")
] + [(f"mine.stream.copy,x,H100 SXM5,100,GB/s,,{g},m,x", "ASCII digits")
     for g in ("\u0661", "\uff11", "1_0")] + [
    ("decode.llama3_8b_q4.x,x,RTX 4090,100,tokens/s,,1,m,"
     "params=\u0668030000000; file_bytes=4917737554; context=256", "params="),
    # a unit other than the family's: refused, never scored as if it were the family's
    ("mine.stream.copy,x,A100 SXM4 40GB,2900000,MB/s,,1,m,x", "unit 'MB/s'"),
    ("mine.matmul.bf16.1024x1024x1024,x,H100 SXM5,1,GFLOPS,,1,m,x", "unit 'GFLOPS'"),
    ("lambda.bert_large.x,x,RTX 3090,100,tokens/s,8,1,m,x", "unit 'tokens/s'"),
    ("train.x,x,H100 SXM5,100,GB/s,8,8,m,x", "unit 'GB/s'"),
    ("stream.x.read,x,H100 SXM5,100,gb/s,,,m,x", "unit 'gb/s'"),
    ("mine.allreduce.1024,x,H100 SXM5,1,Gb/s,,8,m,link=NVLink 4 (H100)", "unit 'Gb/s'"),
] + [(f"lambda.bert_large.x,x,RTX 3090,100,sequences/s,{b},1,m,x", "batch must be") for b in BAD_COUNTS
     ] + [(f"mine.stream.copy,x,H100 SXM5,100,GB/s,,{g},m,x", "gpus must be") for g in BAD_COUNTS]


@pytest.mark.parametrize("row, reason", FAMILY_LACKS, ids=[r for r, _ in FAMILY_LACKS])
def test_a_row_that_cannot_be_scored_is_listed_with_file_line_and_reason(tmp_path, row, reason):
    path, result = _validate_file(tmp_path, HEADER + STREAM + row + "\n", "--json")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    payload = _strict(result.stdout)
    assert [r["id"] for r in payload["rows"]] == ["mine.stream.copy"]
    [entry] = payload["unscored"]
    assert entry["file"] == path and entry["line"] == 3 and entry["id"] == row.split(",")[0]
    assert reason in entry["reason"] and "\n" not in entry["reason"]
    text = run("validate", "--measurements", path)
    assert text.returncode == 0 and f"{path}, line 3: " in text.stdout


def test_a_sparse_row_whose_dense_pair_is_in_another_unit_is_not_scored(tmp_path):
    rows = ("mine.sparse.8192x8192x8192.dense,x,H100 SXM5,0.5,s,,1,m,x\n"
            "mine.sparse.8192x8192x8192.sparse,x,H100 SXM5,300,ms,,1,m,x\n")
    path, result = _validate_file(tmp_path, HEADER + STREAM + rows, "--json")
    payload = _strict(result.stdout)
    assert [r["id"] for r in payload["rows"]] == ["mine.stream.copy"]
    reasons = {u["line"]: u["reason"] for u in payload["unscored"]}
    assert "unit 's'" in reasons[3] and "same unit" in reasons[4]


def test_a_header_repeated_inside_the_file_is_listed_as_such(tmp_path):
    """Two files joined: the second header is a row that says so, not "value must be a
    positive number (got 'value')"."""
    path, result = _validate_file(tmp_path, HEADER + STREAM + HEADER.upper(), "--json")
    [entry] = _strict(result.stdout)["unscored"]
    assert entry["line"] == 3 and "repeats the header" in entry["reason"]


def test_a_named_pipe_nobody_writes_to_is_refused_not_waited_on(tmp_path):
    import os
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    result = subprocess.run([sys.executable, "-m", "gpumodel", "validate", "--measurements",
                             str(fifo)], capture_output=True, text=True, timeout=60)
    _one_line_error(result, str(fifo), "empty")


def test_a_file_with_no_scorable_row_lists_every_row(tmp_path):
    path, result = _validate_file(tmp_path, HEADER + "\x1b[2Jmine.x,x,y,1,z,,,m,\n")
    assert result.returncode == 0
    assert "no row could be scored" in result.stdout and "\x1b" not in result.stdout
    assert f"{path}, line 2: " in result.stdout


def _distinct_rows(count: int, seed: int = 0) -> str:
    """``count`` rows of a reader's file, no two alike: GEMM shapes, sparse pairs, all-reduce
    sizes and GPU counts, DeepBench shapes and training batches, on several boards."""
    import random
    rng = random.Random(seed)
    rows = []
    while len(rows) < count:
        m, k, n = (rng.randint(1, 50_000) for _ in range(3))
        board = rng.choice(["H100 SXM5", "A100 SXM4 80GB", "RTX 4090"])
        kind = len(rows) % 5
        if kind == 0:
            rows.append(f"mine.matmul.bf16.{m}x{n}x{k},x,{board},300,TFLOPS,,1,m,x")
        elif kind == 1:
            rows += [f"mine.sparse.{m}x{k}x{n}.{side},x,{board},{t},ms,,1,m,x"
                     for side, t in (("dense", 1.0), ("sparse", 0.7))]
        elif kind == 2:
            rows.append(f"mine.allreduce.{m * k},x,{board},300,GB/s,,{rng.randint(2, 10**6)},m,"
                        "link=NVLink 4 (H100)")
        elif kind == 3:
            rows.append(f"deepbench.x.fp16.{m}x{n}x{k}.train,x,{board},100,TFLOPS,,,m,x")
        else:
            rows.append(f"lambda.bert_large.{len(rows)},x,{board},100,sequences/s,"
                        f"{rng.randint(1, 10**6)},1,m,x")
    return HEADER + "\n".join(rows[:count]) + "\n"


def test_200000_distinct_rows_validate_in_a_few_seconds(tmp_path):
    """Distinct rows (each a new model call), not one example repeated: the GEMM, sparse and
    all-reduce rows are predicted in one vectorized call per board, and the step model's runs
    are bounded (:data:`gpumodel.validate.MAX_STEP_RUNS`). CPU seconds, as the machine is shared."""
    import resource
    import time
    path = tmp_path / "big.csv"
    path.write_text(_distinct_rows(200_000))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "gpumodel", "validate", "--json",
                             "--measurements", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert result.returncode == 0, result.stderr
    assert cpu < 12 and wall < 120, (cpu, wall)
    payload = json.loads(result.stdout)
    assert len(payload["rows"]) + len(payload["unscored"]) == 200_000
    assert len(payload["rows"]) > 100_000


def test_290000_rows_as_json_take_under_550_mb(tmp_path):
    """The JSON is written piece by piece (not built as one string of 80 MB with its 300 MB of
    pieces) and a file's repeated fields are held once: 290,000 rows took 750 MB, now 410."""
    path = tmp_path / "big.csv"
    path.write_text(_distinct_rows(290_000, seed=1))
    code = ("import resource, sys; from gpumodel import cli; code = cli.main(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
            "sys.exit(code)")
    result = subprocess.run([sys.executable, "-c", code, "validate", "--json", "--measurements",
                             str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 0, result.stderr
    payload = _strict(result.stdout)
    assert len(payload["rows"]) + len(payload["unscored"]) == 290_000
    assert int(result.stderr.split()[-1]) < 550 * 1024, result.stderr  # kB, as Linux counts


def test_200000_repeated_rows_validate_in_a_few_seconds(tmp_path):
    import time
    rows = (ROOT / "tests" / "data" / "my_gpu_example.csv").read_text().splitlines()
    body = "\n".join(rows[1:]) + "\n"
    path = tmp_path / "big.csv"
    path.write_text(rows[0] + "\n" + body * (200_000 // (len(rows) - 1) + 1))
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "gpumodel", "validate", "--json",
                             "--measurements", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert result.returncode == 0, result.stderr
    assert time.perf_counter() - start < 20
    payload = json.loads(result.stdout)
    assert len(payload["rows"]) + len(payload["unscored"]) >= 200_000


@pytest.mark.parametrize("model", ["book", "naive"])
def test_vectorized_predictions_equal_the_row_by_row_ones(tmp_path, monkeypatch, model):
    from gpumodel import validate
    path = tmp_path / "mine.csv"
    path.write_text(_distinct_rows(600, seed=1) + "mine.matmul.bf16.1x999999999x999999999,x,"
                    "H100 SXM5,1,TFLOPS,,1,m,x\nmine.allreduce.7,x,H100 SXM5,1,GB/s,,1,m,"
                    "link=NVLink 4 (H100)\n")
    validate._MEMOS.clear()
    vectorized = validate._score(model, None, str(path))
    validate._MEMOS.clear()
    monkeypatch.setattr(validate, "_PREFETCH", {})
    assert validate._score(model, None, str(path)) == vectorized


def test_step_model_runs_beyond_the_bound_are_listed_with_the_reason(tmp_path, monkeypatch):
    from gpumodel import validate
    monkeypatch.setattr(validate, "MAX_STEP_RUNS", 3)
    validate._MEMOS.clear()
    rows = "".join(f"lambda.bert_large.{b},x,RTX 3090,100,sequences/s,{b},1,m,x\n" for b in range(1, 7))
    path = tmp_path / "mine.csv"
    path.write_text(HEADER + rows + rows.replace("RTX 3090", "RTX 4090").replace("large.", "large.b"))
    scored, unscored = validate._score("book", None, str(path))
    assert [r["id"] for r in scored] == [f"lambda.bert_large.{b}" for b in (1, 2, 3)]
    assert [e["line"] for e in unscored] == list(range(5, 14))
    assert all("more than 3 distinct runs" in e["reason"] for e in unscored)
    assert validate._step_runs_left == [None]
    assert len(validate._score("book", None, None)[0]) > 100  # the book's data: no bound


_PIECES = [HEADER, HEADER.rstrip("\n"), STREAM, ",", '"', '""', "\n", "\r\n", "\r", "\ufeff",
           "\x00", "nan", "inf", "-3", "0", "1.5", "1e309", "H100 SXM5", "mine.", "matmul.",
           "sparse.", "allreduce.", "stream.", "decode.", "gptfast.", "dle.", "lambda.",
           "nccl.", "bf16.", "8x8x8", ".dense", ".sparse", "link=NVLink 4 (H100)", "params=",
           ";", "=", "\x1b[31m", "é", "\udcff", "9" * 30, "x" * 300]


_FIELD = st.one_of(st.sampled_from(_PIECES), st.text(max_size=12))
_ID = st.lists(st.sampled_from(_PIECES[18:32] + ["a100", "v100_16", "8gpu", "fp99", "x"]),
               max_size=6).map("".join)
_ROW = st.tuples(_ID, st.lists(_FIELD, min_size=8, max_size=8)).map(
    lambda r: ",".join([r[0], *r[1]]) + "\n")
_FILE = st.one_of(
    st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=12), st.binary(max_size=8)),
             max_size=40),
    st.lists(_ROW, min_size=1, max_size=12).map(lambda rows: [HEADER, *rows]))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=_FILE, as_json=st.booleans())
def test_hostile_reader_files_never_trace_back(tmp_path, pieces, as_json):
    data = b"".join(p if isinstance(p, bytes) else p.encode("utf-8", "surrogateescape")
                    for p in pieces)
    path = tmp_path / "hostile.csv"
    path.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    argv = ["validate", "--measurements", str(path)] + (["--json"] if as_json else [])
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    assert code in (0, 2)
    if code == 2:
        assert out.getvalue() == "" and len(err.getvalue().strip().splitlines()) == 1
        assert str(path) in err.getvalue() or "measurements" in err.getvalue()
    elif as_json:
        payload = _strict(out.getvalue())
        listed = len(payload["rows"]) + len(payload["unscored"])
        assert listed >= 1 and all(e["reason"] for e in payload["unscored"])
    else:
        _assert_printable(out.getvalue())


def _assert_printable(text: str) -> None:
    """No control character of a reader's file reaches the terminal: lines are printable."""
    for line in text.split("\n"):
        assert line.isprintable(), repr(line)


@pytest.mark.parametrize("bad", ["\x1b[2J", "\r", "\x07", "\u202e", "\x85", "\u2028"])
def test_control_characters_in_a_readers_ids_are_escaped_everywhere(tmp_path, bad):
    """Such ids are never scored (issue 24): listed as unscored, escaped, beside a scored row."""
    ids = [f"mine.stream.{bad}x", f"mine.matmul.{bad}"]
    path, result = _validate_file(tmp_path, HEADER + STREAM + f'"{ids[0]}",copy,H100 SXM5,2900,GB/s,,1,m,x\n'
                                  + f'"{ids[1]}",x,H100 SXM5,1,TFLOPS,,1,m,x\n'
                                  + '"mine.stream.a\nb",copy,H100 SXM5,2900,GB/s,,1,m,x\n')
    assert result.returncode == 0, result.stderr
    _assert_printable(result.stdout)
    assert "worst overall: " in result.stdout and "unscored: 3 rows" in result.stdout
    assert result.stdout.count("control character") >= 2  # a trailing \r is stripped as whitespace


def test_a_repeated_id_on_the_same_board_is_listed_not_scored_twice(tmp_path):
    path, result = _validate_file(tmp_path, HEADER + STREAM + STREAM.replace("2900", "100"),
                                  "--json")
    payload = _strict(result.stdout)
    assert [(r["id"], r["measured"]) for r in payload["rows"]] == [("mine.stream.copy", 2900)]
    [entry] = payload["unscored"]
    assert entry["line"] == 3 and "repeats the id and hardware of line 2" in entry["reason"]


def test_two_boards_in_one_file_pair_each_sparse_row_with_its_own_dense_row(tmp_path):
    """Files of two GPUs joined: the same ids, other hardware; no row is paired across boards."""
    def pair(board, dense):
        return "".join(f"mine.sparse.3072x10240x3072.{kind},x,{board},{value},ms,,1,m,x\n"
                       for kind, value in (("dense", dense), ("sparse", 0.07)))
    alone = {}
    for board, dense in (("H100 SXM5", 0.09), ("A100 SXM4 80GB", 0.5)):
        _, result = _validate_file(tmp_path, HEADER + pair(board, dense), "--json")
        alone[board] = _strict(result.stdout)["rows"][0]["predicted"]
    _, result = _validate_file(tmp_path, HEADER + pair("H100 SXM5", 0.09)
                               + pair("A100 SXM4 80GB", 0.5), "--json")
    both = {r["hardware"]: r["predicted"] for r in _strict(result.stdout)["rows"]}
    assert both == alone
    _, result = _validate_file(tmp_path, HEADER + pair("A100 SXM4 80GB", 0.5).splitlines()[0]
                               + "\n" + pair("H100 SXM5", 0.09).splitlines()[1] + "\n", "--json")
    [_, entry] = _strict(result.stdout)["unscored"]
    assert "needs the row mine.sparse.3072x10240x3072.dense on H100 SXM5" in entry["reason"]


@pytest.mark.parametrize("args", [["list"], ["show", "H100 SXM5"], ["compare", "H100 SXM5",
                                                                    "A100 SXM4 80GB"],
                                  ["rank", "--workload", "llm-decode"], ["validate", "--json"],
                                  ["matmul", "-a", "H100 SXM5", "-m", "8", "-k", "8", "-n", "8"]])
def test_a_closed_pipe_ends_quietly(args):
    proc = subprocess.Popen([sys.executable, "-m", "gpumodel", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait() == 1
    assert stderr == ""


def test_head_reads_one_line_without_a_traceback():
    result = subprocess.run(f"{sys.executable} -m gpumodel rank --workload llm-decode | head -1",
                            shell=True, capture_output=True, text=True)
    assert result.stdout.count("\n") == 1 and result.stderr == ""


@pytest.mark.parametrize("given, canonical", [
    (["list", "--kind", "GPU"], ["list", "--kind", "gpu"]),
    (["rank", "--workload", "LLM-DECODE"], ["rank", "--workload", "llm-decode"]),
    (["rank", "--workload", "cnn train"], ["rank", "--workload", "cnn-train"]),
    (["validate", "--chapter", "Sparsity", "--model", "NAIVE"],
     ["validate", "--chapter", "sparsity", "--model", "naive"]),
    (["matmul", "-a", "h100 sxm5", "-m", "8", "-k", "8", "-n", "8", "--scheme", "All Pairs"],
     ["matmul", "-a", "H100 SXM5", "-m", "8", "-k", "8", "-n", "8", "--scheme", "all_pairs"]),
])
def test_names_on_the_command_line_are_read_as_the_library_reads_them(capsys, given, canonical):
    """A workload, chapter, model, kind or scheme in another case (or with a space for - or _)
    is the same name, as --dtype and accelerator names already were; an unknown one exits 2."""
    assert cli.main([*given, "--json"]) == 0
    first = capsys.readouterr().out
    assert cli.main([*canonical, "--json"]) == 0
    assert capsys.readouterr().out == first
    assert cli.main([given[0], given[1], "no-such-name"] + given[3:]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_an_id_with_a_newline_is_listed_unscored_on_one_line(tmp_path):
    """A quoted id holding a newline: never scored, listed as unscored on one line that shows
    the file, the line and the id escaped (repr)."""
    row = '"mine.stream\n.copy",copy,H100 SXM5,2900,GB/s,,1,mine,x\n'
    path, result = _validate_file(tmp_path, HEADER + STREAM + row)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    [listed] = [line for line in result.stdout.splitlines() if "control character" in line]
    assert listed.startswith(f"{path}, line 3: 'mine.stream\\n.copy': ")
    payload = _strict(run("validate", "--json", "--measurements", path).stdout)
    assert [r["id"] for r in payload["rows"]] == ["mine.stream.copy"]
    assert [u["id"] for u in payload["unscored"]] == ["mine.stream\n.copy"]


def test_a_header_and_hardware_in_other_letter_case_are_scored(tmp_path):
    loose = HEADER.upper() + STREAM.replace("H100 SXM5", " h100 sxm5 ")
    _, result = _validate_file(tmp_path, loose, "--json")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    [row] = _strict(result.stdout)["rows"]
    assert row["id"] == "mine.stream.copy" and row["hardware"] == "H100 SXM5"
