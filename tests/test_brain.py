"""Tests of gpumodel.brain: every term of the estimate, the projection's edges, the data."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumodel import brain


def test_reconstruction_terms():
    terms = brain.estimate_terms()
    assert terms["granule dendrites"] == pytest.approx(50e9 * 15 * (10 * 1000 * 5) * 5 * 200 * 2)
    assert terms["purkinje dendrites"] == pytest.approx(1e8 * 1e5 * (10 * 1000 * 5) * 5 * 200 * 2)
    assert brain.estimate() == pytest.approx(1.075e21)


def test_self_consistent_terms():
    t = brain.estimate_terms("self-consistent")
    per_event = 5 * 200 * 2
    assert t["granule dendrites"] == pytest.approx(50e9 * 15 * (3 * 4 * 5) * per_event)
    assert t["purkinje dendrites"] == pytest.approx(1e8 * 1e5 * (10 * 1000 * 5) * per_event)
    assert t["granule dense input"] == pytest.approx(50e9 * 15 * per_event)
    assert t["purkinje soma"] == pytest.approx(1e8 * 1000 * 5 * per_event)
    assert t["granule outputs"] == pytest.approx(50e9 * 100 * per_event)
    assert t["granule soma"] == pytest.approx(50e9 * 4 * 5 * per_event)
    assert t["purkinje dense input"] == pytest.approx(1e8 * 1e5 * per_event)
    assert t["purkinje outputs"] == pytest.approx(1e8 * 1000 * per_event)
    assert len(t) == 8
    assert brain.estimate("self-consistent") == pytest.approx(1.0001247e21)
    assert t["purkinje dendrites"] / sum(t.values()) > 0.9998


def test_overrides_and_sensitivity():
    assert brain.estimate(firing_rate=1000) == pytest.approx(5 * 1.075e21)
    assert brain.estimate(time_steps=1) == pytest.approx(1.075e21 / 25)
    s = brain.sensitivity()
    assert list(s["input"]) == list(brain.RANGES)
    assert (s["low"] <= s["high"]).all()
    # the measured Purkinje counts and rates lie below the post's values: base is above the bar
    above = {n for n, h, b in zip(s["input"], s["high"], s["base"]) if h < b}
    assert above == {"purkinje_cells", "purkinje_rate"}


def test_projection_edges():
    assert brain.doublings(0.58e15, 1.075e21) == 21
    assert brain.doublings(2e21, 1.075e21) == 0
    assert brain.doublings(1.075e21, 1.075e21) == 0
    assert brain.year_reached(0.58e15, 1.075e21, 3.0) == 2078
    assert brain.year_reached(0.58e15, 1.075e21, 1.8) == pytest.approx(2052.8)
    assert brain.year_reached(2e21, 1.075e21, 2.0, 2025) == 2025
    assert brain.projected_flops(2025, 1e15, 2.0, 2015) == pytest.approx(32e15)


def test_fitted_doubling():
    years = np.arange(2000, 2011)
    assert brain.fitted_doubling_years(years, 2.0 ** ((years - 2000) / 2.0)) == pytest.approx(2.0)


def test_synapse_count():
    assert brain.synapse_count_flops(1e13) == 4e15


def test_landauer():
    assert brain.landauer_bit_erasures(20.0) == pytest.approx(20 / (1.380649e-23 * 310 * np.log(2)))


def test_records_load_with_a_source_per_row():
    for metric in brain.METRICS:
        rows = brain.records(metric)
        assert rows and all(r["source"].startswith("[") and r["flops"] > 0 for r in rows)
    first = brain.records("hpcg")[0]
    assert first["list"] == "2014-06" and first["flops"] == pytest.approx(0.58e15, rel=0.01)


@settings(max_examples=80, deadline=None)
@given(st.floats(1e10, 1e22), st.floats(1e10, 1e22), st.floats(0.1, 10))
def test_projection_properties(start, target, period):
    n = brain.doublings(start, target)
    assert n >= 0 and n == np.ceil(n)
    assert brain.projected_flops(2015 + float(brain.doublings(start, target, whole=False)) * period,
                                 start, period) == pytest.approx(max(target, start), rel=1e-9)


@pytest.mark.parametrize("call, name", [
    (lambda: brain.year_reached(1e15, 1e21, 0), "doubling_years"),
    (lambda: brain.year_reached(1e15, 1e21, -1.0), "doubling_years"),
    (lambda: brain.doublings(0, 1e21), "start"),
    (lambda: brain.estimate(firing_rate=0), "firing_rate"),
    (lambda: brain.estimate(purkinje_cells=-1.0), "purkinje_cells"),
    (lambda: brain.estimate("detailed"), "reading"),
    (lambda: brain.fitted_doubling_years([2000, 2001], [2.0, 1.0]), "grow"),
    (lambda: brain.records("linpack"), "metric"),
    (lambda: brain.records("hpcg", filled="yes"), "filled"),
    (lambda: brain.estimate(purkinje_rate=0.0), "purkinje_rate"),
    (lambda: brain.estimate(granule_rate=-1.0), "granule_rate"),
    (lambda: brain.estimate(steps_per_second=float("nan")), "steps_per_second"),
    (lambda: brain.measured_inputs("dendrite_count"), "parameter"),
    (lambda: brain.roofline_gpus(0.0, 10.0), "synapses"),
    (lambda: brain.roofline_gpus(1e14, -10.0), "rate_hz"),
    (lambda: brain.roofline_gpus(1e14, 10.0, bytes_per_synapse=0), "bytes_per_synapse"),
    (lambda: brain.roofline_gpus(1e14, 10.0, flop_per_event=float("inf")), "flop_per_event"),
    (lambda: brain.roofline_gpus(1e14, 10.0, accelerator="H100"), "accelerator"),
    (lambda: brain.roofline_gpus(1e14, 10.0, dtype="fp99"), "dtype"),
])
def test_bad_input_is_refused(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- issue 24 ---------------------------------------------------------------------------------

def test_estimate_terms_refuses_shapes_that_estimate_refuses():
    for fn in (brain.estimate_terms, brain.estimate):
        with pytest.raises(ValueError, match="granule_cells"):
            fn(granule_cells=[1e9, 2e9], purkinje_cells=[1e6, 2e6, 3e6])


@pytest.mark.parametrize("years", [[0.0, 1e-300], [1e300, 1e300 * (1 + 1e-15)], [1e200, 2e200]])
def test_fitted_doubling_years_refuses_degenerate_years(years, capfd):
    with pytest.raises(ValueError, match="years"):
        brain.fitted_doubling_years(years, [1.0, 2.0])
    assert capfd.readouterr().err == ""


def test_fitted_doubling_years_of_close_years():
    assert brain.fitted_doubling_years([2000, 2000 + 1e-9, 2001], [1.0, 2.0, 4.0]) \
        == pytest.approx(2 / 3, rel=1e-6)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(years=st.lists(st.floats(min_value=-1e300, max_value=1e300), min_size=2, max_size=6),
       step=st.floats(min_value=1e-300, max_value=1e3))
def test_fitted_doubling_years_never_fails_inside_numpy(years, step, capfd):
    flops = 2.0 ** np.arange(len(years)) * step
    capfd.readouterr()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            period = brain.fitted_doubling_years(years, flops)
    except ValueError as err:
        assert "years" in str(err) or "flops" in str(err)
    else:
        assert period > 0 and np.isfinite(period)
    assert capfd.readouterr().err == ""


# --- issue 22: measured cell counts and rates, the time step read once, the roofline ------------

def test_measured_cell_counts_from_their_sources():
    purkinje = {r["label"]: r["value"] for r in brain.measured_inputs("purkinje_cells")}
    assert purkinje == {"the post": 100e6, "fractionator 1989": 15.4e6, "Andersen et al. 1992": 30.5e6}
    granule = {r["label"]: r["value"] for r in brain.measured_inputs("granule_cells")}
    assert granule == {"the post": 50e9, "Andersen et al. 1992": 101e9}
    assert all(r["source"].startswith("[") and r["detail"] for r in brain.measured_inputs("purkinje_rate"))
    assert brain.RANGES["purkinje_cells"][0] == (15.4e6, 30.5e6)
    assert brain.RANGES["purkinje_rate"][0] == (30.0, 100.0)


def test_counted_cells_put_both_readings_below_1e21():
    # reconstruction: (G x 15 + P x 1e5) x 5e4-tap filter x 5 steps x 200 Hz x 2 FLOP = (...) x 1e8
    assert brain.estimate(purkinje_cells=15.4e6) == pytest.approx((50e9 * 15 + 15.4e6 * 1e5) * 1e8)
    assert brain.estimate(purkinje_cells=15.4e6) == pytest.approx(2.29e20)
    assert brain.estimate(purkinje_cells=30.5e6) == pytest.approx(3.8e20)
    assert brain.estimate(purkinje_cells=30.5e6, granule_cells=101e9) == pytest.approx(4.565e20)
    assert brain.estimate("self-consistent", purkinje_cells=15.4e6) == pytest.approx(1.5411e20, rel=1e-4)
    assert brain.estimate("self-consistent", purkinje_cells=30.5e6) == pytest.approx(3.0511e20, rel=1e-4)


def test_per_cell_rates_and_steps_per_second():
    t = brain.estimate_terms(purkinje_rate=50.0, granule_rate=1.0)
    assert t["purkinje dendrites"] == pytest.approx(1e8 * 1e5 * 5e4 * 5 * 50 * 2)
    assert t["granule dendrites"] == pytest.approx(50e9 * 15 * 5e4 * 5 * 1 * 2)
    assert brain.estimate(purkinje_rate=200.0, granule_rate=200.0) == brain.estimate()
    # the filter run once per 1/30-s step: 1.075e13 inputs x 5e4 taps x 30/s x 2 FLOP
    assert brain.estimate(steps_per_second=30.0) == pytest.approx(1.075e13 * 5e4 * 30 * 2)
    assert brain.estimate(steps_per_second=30.0) == pytest.approx(3.225e19)
    assert brain.estimate(steps_per_second=30.0, firing_rate=1000.0) == brain.estimate(steps_per_second=30.0)
    assert brain.estimate(steps_per_second=1000.0) == pytest.approx(brain.estimate())


def test_roofline_gpus_worked_example():
    r = brain.roofline_gpus(1e14, 200.0)
    assert r["bandwidth"] == pytest.approx(1e14 * 2 * 200 / 3.35e12)
    assert r["bandwidth"] == pytest.approx(11940.3, rel=1e-4)
    assert r["compute"] == pytest.approx(1e14 * 200 * 2 / 989.4e12, rel=1e-3)
    assert r["intensity"] == 1.0 and r["ridge"] == pytest.approx(295.34, rel=1e-3)
    slow = brain.roofline_gpus(1e14, 10.0)
    assert slow["bandwidth"] == pytest.approx(597.0, rel=1e-3) and slow["compute"] == pytest.approx(2.02, rel=1e-2)
    # 200 TB of BF16 weights over the H100's 79.21 GiB usable: capacity binds at 10 Hz, bandwidth at 200
    assert slow["capacity"] == pytest.approx(2e14 / (79.21 * 2**30)) == r["capacity"]
    assert slow["capacity"] == pytest.approx(2351.53, rel=1e-5)
    assert slow["binding"] == "capacity" and r["binding"] == "bandwidth"
    merkle = brain.roofline_gpus(1e15, 10.0)
    assert merkle["capacity"] == pytest.approx(23515.3, rel=1e-5) and merkle["binding"] == "capacity"
    fp8 = brain.roofline_gpus(1e15, 10.0, bytes_per_synapse=1.0)
    assert fp8["capacity"] == pytest.approx(merkle["capacity"] / 2) and fp8["compute"] == merkle["compute"]


def test_fitted_flops_exact():
    # on an exact exponential the line is the data; off it, it passes through the mean point
    years = [2000.0, 2002.0, 2004.0]
    assert brain.fitted_flops(years, [1.0, 2.0, 4.0], 2006.0) == pytest.approx(8.0)
    # two points, one flat stretch after: the line stands above the last point
    assert brain.fitted_flops([2000.0, 2001.0, 2002.0], [1.0, 4.0, 4.0], 2002.0) \
        == pytest.approx(2.0 ** (4 / 3 + 1.0))
    hpcg = brain.records("hpcg")
    level = brain.fitted_flops([r["year"] for r in hpcg], [r["flops"] for r in hpcg], hpcg[-1]["year"])
    assert level == pytest.approx(35.03e15, rel=1e-3)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.3, 5.0), st.floats(1e10, 1e20), st.integers(2, 12))
def test_fitted_flops_on_a_line(period, start, n):
    years = [2000.0 + i for i in range(n)]
    flops = [start * 2.0 ** (i / period) for i in range(n)]
    for year, value in zip(years, flops):
        assert brain.fitted_flops(years, flops, year) == pytest.approx(value, rel=1e-6)


def test_fitted_flops_refuses():
    with pytest.raises(ValueError, match="year"):
        brain.fitted_flops([2000.0, 2001.0], [1.0, 2.0], 1800.0)
    with pytest.raises(ValueError, match="grow"):
        brain.fitted_flops([2000.0, 2001.0], [2.0, 1.0], 2001.0)


def test_roofline_gpus_vector_units():
    # batch 1 runs on the vector units: the H100 SXM5's non-tensor FP32 peak, 66.9 TFLOP/s
    fast = brain.roofline_gpus(1e14, 200.0, dtype="fp32")
    assert fast["compute"] == pytest.approx(1e14 * 200 * 2 / 66.9e12)
    assert fast["compute"] == pytest.approx(597.9, rel=1e-4)
    assert fast["ridge"] == pytest.approx(66.9e12 / 3.35e12) == pytest.approx(19.97, rel=1e-3)
    slow = brain.roofline_gpus(1e14, 10.0, dtype="fp32")
    assert slow["compute"] == pytest.approx(29.9, rel=1e-3)
    tensor = brain.roofline_gpus(1e14, 200.0)
    # the dtype moves only the compute count and the ridge
    for key in ("bandwidth", "capacity", "intensity", "binding"):
        assert fast[key] == tensor[key]
    assert fast["compute"] / tensor["compute"] == pytest.approx(989.4 / 66.9)
    with pytest.raises(ValueError, match="FP32"):
        brain.roofline_gpus(1e14, 10.0, accelerator="TPU v4", dtype="fp32")


def test_roofline_gpus_needs_usable_memory():
    with pytest.raises(ValueError, match="usable memory"):
        brain.roofline_gpus(1e14, 10.0, accelerator="H100 PCIe")


@settings(max_examples=60, deadline=None)
@given(st.floats(1e9, 1e16), st.floats(0.1, 1e3), st.floats(0.5, 8), st.floats(0.5, 8))
def test_roofline_gpus_properties(synapses, rate, nbytes, flop):
    for dtype in ("bf16", "fp32"):
        r = brain.roofline_gpus(synapses, rate, nbytes, flop, dtype=dtype)
        # the ratio of the two counts is the ridge over the intensity, whatever the size
        assert r["bandwidth"] / r["compute"] == pytest.approx(r["ridge"] / r["intensity"], rel=1e-9)
        assert r["intensity"] == pytest.approx(flop / nbytes)
    double = brain.roofline_gpus(2 * synapses, rate, nbytes, flop)
    assert double["bandwidth"] == pytest.approx(2 * r["bandwidth"], rel=1e-12)
    vec = brain.roofline_gpus(np.array([synapses, 2 * synapses]), rate, nbytes, flop)
    assert vec["bandwidth"].shape == (2,)
    # the binding count is the largest of the three; capacity does not depend on the rate
    counts = {k: r[k] for k in ("bandwidth", "compute", "capacity")}
    assert r["binding"] == max(counts, key=counts.get)
    assert r[r["binding"]] == max(counts.values())
    assert brain.roofline_gpus(synapses, 2 * rate, nbytes, flop)["capacity"] == r["capacity"]
    assert list(vec["binding"]) == [brain.roofline_gpus(s, rate, nbytes, flop)["binding"]
                                    for s in (synapses, 2 * synapses)]


def test_carlsmith_rows_match_his_statements():
    """The headline is a judgment with no floor (1e15 about a median ceiling, 1e21 a 90% one);
    the retina method gives two disjoint ranges, drawn as two rows."""
    import math

    from gpumodel.explorations import brain as bx
    frame = bx.estimates_frame().set_index("estimate")
    head = frame.loc["Carlsmith 2020, headline"]
    assert math.isnan(head["low"]) and head["central"] == 1e15 and head["high"] == 1e21
    assert bx.carlsmith_line() == 1e21
    retina = frame[frame.index.str.contains("retina")]
    assert sorted(zip(retina["low"], retina["high"])) == [(1e12, 1e15), (1e16, 1e20)]
    spec = bx.estimates_chart(6.7e21).to_dict()
    assert "triangle" in str(spec) and "no bar" in spec["description"]


def test_purkinje_rate_rows_are_a_background_range():
    rows = brain.measured_inputs("purkinje_rate")
    assert all("background" in r["method"] and "not a maximum" in r["method"] for r in rows)


# --- review of the brain chapter: the HPCG gaps filled, the post's quoted inputs, the FP64 ridge --

def test_filled_hpcg_records_and_their_fit():
    full = brain.records("hpcg", filled=True)
    assert [r["list"] for r in full[:3]] == ["2014-06", "2014-11", "2015-06"]
    assert len(full) == 24 and len(brain.records("hpcg")) == 12
    assert full[1]["flops"] == pytest.approx(0.58e15) and full[1]["source"] == "filled"
    fit = brain.fitted_doubling_years([r["year"] for r in full], [r["flops"] for r in full])
    assert fit == pytest.approx(1.7548, abs=1e-4)


@pytest.mark.parametrize("metric", brain.METRICS)
def test_filled_records_keep_every_checked_row_and_never_fall(metric):
    rows, full = brain.records(metric), brain.records(metric, filled=True)
    assert [r for r in full if r["source"] != "filled"] == rows
    years = [r["year"] for r in full]
    assert all(0.4 < b - a < 0.6 for a, b in zip(years, years[1:]))  # June and November, none missing
    flops = [r["flops"] for r in full]
    assert all(b >= a for a, b in zip(flops, flops[1:]))


def test_quoted_inputs_of_the_post_and_the_cerebrum():
    def values(name):
        return [r["value"] for r in brain.measured_inputs(name)]
    assert values("brain_synapses") == [1e13]
    assert values("firing_rate") == [50.0, 1000.0]
    assert values("cerebrum_inputs") == [5000.0, 15000.0]
    assert values("brain_neurons")[0] - values("cerebellum_neurons")[0] == pytest.approx(17.07e9)
    assert brain.H100_FP64_VECTOR_FLOPS / 3.35e12 == pytest.approx(10.0)
    assert brain.estimate(purkinje_rate=1.0, granule_rate=1.0) == pytest.approx(5.375e18)
