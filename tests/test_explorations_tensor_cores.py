"""The Tensor Core chapter's explorations, tables and figures: sizes, the post's defaults, and the timeline."""
import json

import numpy as np
import pytest

from gpumodel import hardware, measured
from gpumodel import tensor_cores as tc
from gpumodel.explorations import tensor_cores as tce
from gpumodel.explore import static_chart


@pytest.mark.parametrize("exploration", tce.EXPLORATIONS, ids=lambda e: e.name)
def test_static_page_stays_small(exploration):
    assert len(exploration.grid_table()) <= 4000
    assert len(json.dumps(static_chart(exploration).to_dict())) < 700_000


def test_cycle_budget_defaults_are_the_post():
    table = tce.CYCLE_BUDGET.table()
    totals = table.groupby("method", sort=False)["total"].first()
    assert list(totals) == [504.0, 235.0, 200.0]
    assert (table["total"] <= table["axis_max"]).all()


def test_cycle_budget_fits_its_axis_for_the_post_size():
    grid = tce.CYCLE_BUDGET.grid_table()
    small = grid[grid["size"] == 32]
    assert (small["total"] <= small["axis_max"]).all()


def test_double_buffering_columns():
    table = tce.DOUBLE_BUFFERING.table(k_tiles=4, load_cycles=200, compute_cycles=100)
    totals = table.groupby("loop", sort=False)["total"].first()
    assert list(totals) == [1200.0, 900.0]
    per_tile = table.groupby("loop", sort=False)["per_tile"].sum()
    assert np.allclose(per_tile * 4, totals)


@pytest.mark.parametrize("k,load,compute", [(1, 200, 100), (4, 200, 100), (5, 100, 200), (3, 0, 50), (6, 150, 150)])
def test_timeline_ends_where_the_model_says(k, load, compute):
    table = tce.loop_timeline(k, load, compute)
    for loop, flag in (("serial", False), ("double buffered", True)):
        assert table.loc[table["loop"] == loop, "end"].max() == pytest.approx(
            tc.tiled_loop_cycles(k, load, compute, flag))


def test_tables():
    assert tce.preset_cycles_table().loc[("Ampere (Dettmers 2023)", "l2")].tolist() == [504, 235, 200]
    assert tce.mma_latency_table()["cycles with Tensor Cores"].iloc[0] == 235
    peaks = tce.peak_table()
    assert peaks["derived / published"].between(0.98, 1.02).all()


def test_peak_table_says_which_rates_were_back_solved():
    """Back-solved rates match their datasheet by construction; only "whitepaper" rows are checks."""
    basis = tce.peak_table()["rate from"]
    assert set(basis) <= {"whitepaper", "not re-read", "back-solved"}
    assert basis["RTX 5090"] == basis["MI300X"] == "back-solved"
    assert basis["RTX 4090"] == "not re-read"
    for name in ("V100 SXM2 16GB", "A100 SXM4 40GB", "RTX 3090", "H100 SXM5"):
        assert basis[name] == "whitepaper"


@pytest.mark.parametrize("k_tiles", [1e300, 10**103, 2**26, 1001, 0, -1, 2.5, float("nan"), None,
                                     "4", True])
def test_timeline_refuses_a_tile_count_it_cannot_draw_naming_it(k_tiles):
    """range(int(1e300)) appended rows until the machine ran out of memory: k_tiles is now a
    whole number from 1 to MAX_TIMELINE_TILES, refused naming it otherwise."""
    with pytest.raises(ValueError, match="k_tiles"):
        tce.loop_timeline(k_tiles, 200, 100)


def test_timeline_refuses_bad_cycles_naming_them():
    for name, bad in (("load_cycles", -1.0), ("compute_cycles", float("inf")), ("load_cycles", "1")):
        with pytest.raises(ValueError, match=name):
            tce.loop_timeline(**{"k_tiles": 4, "load_cycles": 200, "compute_cycles": 100, name: bad})


def test_l2_scaling_names_its_clock():
    pcie, sxm = hardware.get("H100 PCIe"), hardware.get("H100 SXM5")
    value = measured.measurement("l2.h100_pcie.read") / 1000
    default = tce.l2_bandwidth_scaled("l2.h100_pcie.read", "H100 PCIe", "H100 SXM5")
    assert default == pytest.approx(value * 132 * 1830 / (114 * 1620))
    at_max = tce.l2_bandwidth_scaled("l2.h100_pcie.read", "H100 PCIe", "H100 SXM5",
                                     measured_clock_mhz=pcie.max_clock_mhz)
    assert at_max == pytest.approx(value * 132 * 1830 / (114 * 1755))
    assert round(float(default), 1) == 10.1 and round(float(at_max), 1) == 9.4
    assert sxm.sm_count == 132
    with pytest.raises(ValueError, match="measured_clock_mhz"):
        tce.l2_bandwidth_scaled("l2.h100_pcie.read", "H100 PCIe", "H100 SXM5",
                                measured_clock_mhz=0)
