"""The seed audit: required rows, values computed at call time, honest status."""
import json
import subprocess
import sys

import pytest

from gpumodel import audit, memory

REQUIRED = [
    "tpu_vs_gpu.tpu_tile_loads", "tpu_vs_gpu.tpu_bytes", "tpu_vs_gpu.tpu_seconds",
    "tpu_vs_gpu.v100_tile_loads", "tpu_vs_gpu.v100_bytes", "tpu_vs_gpu.v100_seconds",
    "tpu_vs_gpu.v100_slower", "tpu_vs_gpu.rtx2080ti_slower", "tpu_vs_gpu.fp32_tpu_speedup",
    "tpu_vs_gpu.int8_gpu_speedup", "bandwidth.a100_vs_v100",
]


def test_required_rows_present_with_fields():
    rows = {r["id"]: r for r in audit.reproduce()}
    for rid in REQUIRED:
        assert rid in rows, rid
    for r in rows.values():
        assert set(r) == {"id", "seed_value", "model_value", "unit", "source", "status", "note"}
        assert r["status"] in audit.STATUSES
        assert r["source"]
        if r["status"] == "differs":
            assert r["note"], f"{r['id']} differs without saying why"


def test_expected_statuses():
    rows = {r["id"]: r for r in audit.reproduce()}
    assert rows["tpu_vs_gpu.tpu_seconds"]["status"] == "match"
    assert rows["tpu_vs_gpu.rtx2080ti_slower"]["status"] == "differs"
    assert rows["tpu_vs_gpu.rtx2080ti_slower"]["model_value"] == pytest.approx(53.19, abs=0.01)
    assert rows["bandwidth.a100_vs_v100"]["model_value"] == pytest.approx(1555 / 900)


def test_model_value_is_computed_at_call_time(monkeypatch):
    before = {r["id"]: r for r in audit.reproduce()}["tpu_vs_gpu.tpu_tile_loads"]
    monkeypatch.setattr(memory, "tile_loads", lambda *a, **k: 999.0)
    after = {r["id"]: r for r in audit.reproduce()}["tpu_vs_gpu.tpu_tile_loads"]
    assert before["status"] == "match" and after["model_value"] == 999.0 and after["status"] == "differs"


@pytest.mark.parametrize("value, printed, expected", [
    (5.208e-05, "5.2e-05", True), (5.59e-05, "5.2e-05", False), (31.6, "32", True),
    (53.19, "54", False), (1.7278, "1.73", True), (2.9999, "3.0", True), (3.06, "3.0", False),
])
def test_rounds_to(value, printed, expected):
    assert audit.rounds_to(value, printed) is expected


def test_ids_are_unique():
    ids = [r.id for r in audit.rows()]
    assert len(ids) == len(set(ids))


def test_cli_reproduce_json():
    out = subprocess.run([sys.executable, "-m", "gpumodel", "reproduce", "--json"],
                         capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)
    assert {r["id"] for r in rows} >= set(REQUIRED)
    assert all(isinstance(r["model_value"], float) for r in rows)


def test_frame_takes_one_prefix_as_a_string():
    assert list(audit.frame("tpu_vs_gpu").index) == list(audit.frame(("tpu_vs_gpu",)).index)
    assert len(audit.frame("tpu")) == len(audit.frame(("tpu",))) > 0
    with pytest.raises(ValueError, match="prefixes"):
        audit.frame(5)


@pytest.mark.parametrize("value, printed", [(1.0, "1e400"), (True, "1"), (1.0, 1.0), (1.0, "abc"),
                                            (float("nan"), "1")])
def test_rounds_to_refuses_bad_input(value, printed):
    with pytest.raises(ValueError, match="value|printed"):
        audit.rounds_to(value, printed)


def test_exact_rows_match_only_within_half_a_percent():
    from gpumodel.audit import SeedRow
    row = SeedRow("x.exact", "2", lambda: 1.5, "x", "src", tolerance=0.005)
    assert row.evaluate()["status"] == "differs"
    assert SeedRow("x.exact", "2", lambda: 2.005, "x", "src", tolerance=0.005).evaluate()["status"] == "match"
    assert SeedRow("x.rounded", "2", lambda: 1.5, "x", "src").evaluate()["status"] == "match"


def test_reconstructed_status():
    assert audit.STATUSES == ("match", "reconstructed", "differs")
    rows = {r["id"]: r for r in audit.reproduce()}
    assert rows["brain.flops"]["status"] == "reconstructed"
    assert rows["brain.doublings"]["status"] == "match"
    built = audit.SeedRow("x.built", "2", lambda: 2.0, "x", "src", reconstructed=True)
    assert built.evaluate()["status"] == "reconstructed"
    broken = audit.SeedRow("x.built", "2", lambda: 3.0, "x", "src", note_if_differs="why",
                           reconstructed=True)
    assert broken.evaluate()["status"] == "differs"
