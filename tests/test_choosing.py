"""The chapter on choosing a GPU: money, power, the kernel-sum speed model, ranking and memory."""
import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumodel import calibration, cost, hardware, measured, throughput, workloads
from gpumodel.explorations import choosing_a_gpu as C

D = cost.POST_DESKTOP


# --- money -------------------------------------------------------------------------------------

def test_the_guides_desktop_example():
    watts = D["gpu_w"] + D["cpu_w"]
    assert cost.energy_kwh(watts, 0.15, cost.HOURS_PER_YEAR) == pytest.approx(591.3)
    assert cost.electricity_usd(watts, 0.15, 1, 0.12) == pytest.approx(70.956)
    assert cost.cloud_usd(2.14, 0.15, 300) == pytest.approx(2311.2)
    assert cost.desktop_usd(2200, watts, 0.15, 300, 0.12) == pytest.approx(2200 + 70.956 * 300 / 365)
    assert cost.breakeven_days(2200, watts, 0.12, 2.14, 0.15) == pytest.approx(292.96, abs=0.01)


def test_rtx4090_electricity_is_103_dollars_a_year():
    assert cost.electricity_usd(450, 0.15, 1, 0.175) == pytest.approx(103.48, abs=0.01)


@settings(max_examples=60, deadline=None)
@given(price=st.floats(100, 1e5), watts=st.floats(0, 3000), kwh=st.floats(0, 1),
       hourly=st.floats(5, 50), u=st.floats(0.01, 1))
def test_desktop_and_cloud_cost_the_same_on_the_breakeven_day(price, watts, kwh, hourly, u):
    days = cost.breakeven_days(price, watts, kwh, hourly, u)
    assert cost.desktop_usd(price, watts, u, days, kwh) == pytest.approx(cost.cloud_usd(hourly, u, days))


@settings(max_examples=40, deadline=None)
@given(u1=st.floats(0.01, 1), u2=st.floats(0.01, 1))
def test_breakeven_comes_sooner_with_more_use(u1, u2):
    lo, hi = sorted((u1, u2))
    assert cost.breakeven_days(2200, 450, 0.12, 2.14, hi) <= cost.breakeven_days(2200, 450, 0.12, 2.14, lo)


@pytest.mark.parametrize("call, name", [
    (lambda: cost.ownership_usd(-1, 450, 0.15, 5, 0.175), "purchase_usd"),
    (lambda: cost.electricity_usd(450, 0.15, 5, -0.1), "usd_per_kwh"),
    (lambda: cost.cloud_usd(-2.14, 0.15, 300), "usd_per_hour"),
    (lambda: cost.cloud_usd(2.14, 1.5, 300), "utilization"),
    (lambda: cost.energy_kwh(450, -0.1, 10), "utilization"),
    (lambda: cost.breakeven_days(2200, 450, 0.12, 0.01, 0.15), "cloud_usd_per_hour"),
    (lambda: cost.breakeven_days(2200, 450, 0.12, 2.14, 0.0), "utilization"),
    (lambda: cost.energy_per_work_change(250, 200, 1.0), "slowdown"),
])
def test_bad_money_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_power_limit_and_psu():
    assert cost.psu_headroom_w(1600, 4, 350) == 200
    assert cost.system_power_w(4, 450, 150, 50) == 2000
    assert cost.energy_per_work_change(250, 200, 0.07) == pytest.approx(0.8 / 0.93 - 1)


# --- the kernel-sum model ------------------------------------------------------------------------

def test_resnet50_v15_forward_is_4_09_gmac():
    assert throughput.resnet50_forward_flops() / 2 == pytest.approx(4.089e9, rel=1e-3)


def _moved(table, word):
    return sum(b * n for k, b, n in zip(table["kernel"], table["bytes"], table["launches"])
               if word in k)


def test_nchw_transposes_move_each_conv_input_and_output_six_more_times():
    nchw = throughput.cnn_train_kernels(8)
    nhwc = throughput.cnn_train_kernels(8, channels_last=True)
    assert _moved(nhwc, "transposes") == 0
    # conv1 7x7: 224 x 224 x 3 in, 112 x 112 x 64 out, 2 bytes, 6 passes, batch 8
    conv1 = 2 * 6 * 8 * (224 * 224 * 3 + 112 * 112 * 64)
    first = [k for k in nchw["kernel"] if "transposes" in k][0]
    i = nchw["kernel"].index(first)
    assert first.startswith("conv1 7x7")
    assert nchw["bytes"][i] * nchw["launches"][i] == pytest.approx(conv1)
    assert len(nchw["kernel"]) - len(nhwc["kernel"]) == 53


def test_batch_norm_and_relu_take_thirteen_passes():
    table = throughput.cnn_train_kernels(8)
    # conv1's output, 112 x 112 x 64 per image, not a block output
    assert _moved(table, "conv1 7x7 batch norm") == pytest.approx(
        2 * 8 * 112 * 112 * 64 * 13)


def test_nchw_resnet50_is_mostly_memory_bound_on_the_h100():
    regime = throughput.time_by_regime(throughput.cnn_train_kernels(256),
                                       ["H100 SXM5"])
    assert regime["memory"][0] / sum(v[0] for v in regime.values()) > 0.8


def test_bert_large_parameters_and_activations():
    assert workloads.encoder_params() == 333_768_704
    per_layer = 384 * 1 * 1024 * (34 + 5 * 16 * 384 / 1024)
    assert workloads.activation_bytes(24, 1024, 16, 384, 1) == pytest.approx(24 * per_layer)


def test_lambda_batches_fit_the_memory_model():
    for r in throughput.measured.measurements("lambda.bert_large."):
        usable = hardware.get(r["hardware"]).usable_memory_bytes
        if usable is None:
            continue
        fit = workloads.max_training_batch(usable, workloads.encoder_params(), 24, 1024, 16, 384)
        assert r["batch"] <= fit <= 1.25 * r["batch"], r


def test_transformer_step_counts_six_flop_per_weight_and_token():
    table = throughput.transformer_train_kernels(2, seq=128, layers=3)
    gemm = sum(f * n for k, f, n in zip(table["kernel"], table["flops"], table["launches"])
               if f > 0 and not k.startswith("attention scores"))
    weights = 3 * (4 * 1024**2 + 2 * 1024 * 4096)
    assert gemm == pytest.approx(6 * weights * 2 * 128)


def test_decode_moves_the_weights_once_per_step():
    table = throughput.decode_kernels(1, context=1, weight_bits=16)
    weights = workloads.transformer_params(**workloads.LLAMA3_8B, input_embedding=False) - \
        (2 * 32 + 1) * 4096
    moved = float(table["bytes"] @ table["launches"])
    assert moved == pytest.approx(2 * weights, rel=0.01)


def _rates(c=1.0, **changes):
    base = {"gemm": [300e12], "conv": [100e12], "stream": [2e12], "weights": [1e12],
            "floor": [0.0], "host": [0.0], "peak": [400e12], "dequant": [1e300]}
    base.update(changes)
    return {k: c * np.array(v, float) if k in ("gemm", "conv", "stream", "weights") else
            np.array(v, float) for k, v in base.items()}


@settings(max_examples=30, deadline=None)
@given(c=st.floats(0.1, 10), batch=st.integers(1, 64))
def test_scaling_every_rate_scales_the_gpu_time_without_a_floor(c, batch):
    table = throughput.kernels_for("transformer-train", batch, seq=128, layers=2)
    t1 = throughput.device_seconds(table, _rates())[0]
    t2 = throughput.device_seconds(table, _rates(c))[0]
    assert t1 / t2 == pytest.approx(c, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(bw=st.floats(1e11, 1e13), more=st.floats(1.0, 4.0))
def test_more_bandwidth_is_never_slower(bw, more):
    for w in throughput.WORKLOADS:
        table = throughput.kernels_for(w)
        slow = throughput.device_seconds(table, _rates(stream=[bw], weights=[bw]))[0]
        fast = throughput.device_seconds(table, _rates(stream=[bw * more], weights=[bw * more]))[0]
        assert fast <= slow


def test_host_and_gpu_overlap_so_the_step_is_the_longer():
    table = throughput.transformer_train_kernels(4)
    parts = throughput.step_parts(table, ["RTX 4090", "H100 SXM5"])
    assert np.allclose(parts["step"], np.maximum(parts["host"], parts["device"]))
    launches = float(np.sum(table["launches"]))
    assert parts["host"] == pytest.approx(launches * throughput.EAGER_HOST_SECONDS)


def test_llama_cpp_graph_nodes_each_add_the_fitted_node_time_on_the_gpu():
    table = throughput.decode_kernels(1)
    launches = float(np.sum(table["launches"]))
    assert launches == 23 * 32 + 3
    node = calibration.default().constants["llamacpp_node_seconds"]
    cards = ["RTX 4090", "H100 SXM5"]
    parts = throughput.step_parts(table, cards, engine="llama.cpp")
    assert np.all(parts["host"] == 0)
    rates = throughput.achieved_rates(cards, engine="llama.cpp")
    without = throughput.device_seconds(table, {**rates, "gap": np.zeros(2)})
    assert np.allclose(parts["device"] - without, launches * node)
    regime = throughput.time_by_regime(table, cards, engine="llama.cpp")
    assert np.allclose(sum(regime.values()), parts["step"])
    assert np.all(regime["overhead"] >= launches * node)


def test_decode_at_batch_one_on_a_gddr_card_is_stream_bandwidth_over_bytes():
    """On the RTX 4090 llama.cpp keeps enough bytes in flight, so F16 decoding is bandwidth-bound."""
    acc = hardware.get("RTX 4090")
    table = throughput.decode_kernels(1, context=2048)
    rates = throughput.achieved_rates([acc], engine="llama.cpp")
    assert rates["weights"][0] == rates["stream"][0]
    moved = float(table["bytes"] @ table["launches"])
    parts = throughput.step_parts(table, [acc], engine="llama.cpp")
    assert parts["device"][0] > parts["host"][0]
    floors = float(np.sum(table["launches"][np.array(table["kind"]) == "elementwise"])) * 2e-6
    nodes = float(np.sum(table["launches"])) * rates["gap"][0]
    assert parts["device"][0] == pytest.approx(
        moved / rates["stream"][0] + floors + nodes, rel=0.01)


def test_littles_law_caps_decoding_on_the_a100():
    """llama.cpp's bytes in flight per SM x 108 SMs / 392 ns is below the A100's stream rate."""
    cal = calibration.default()
    acc = hardware.get("A100 SXM4 80GB")
    rates = throughput.achieved_rates([acc], engine="llama.cpp")
    cap = acc.sm_count * cal.constants["llamacpp_bytes_in_flight"] / cal.latency(acc)
    assert rates["weights"][0] == pytest.approx(cap) and cap < rates["stream"][0]


def test_geforce_half_rate_is_in_the_peak():
    peak, _ = throughput.card_rates(["RTX 4090", "RTX 6000 Ada"])
    assert peak[0] == pytest.approx(165.2e12) and peak[1] == pytest.approx(364.2e12)


def test_fp8_math_uses_the_fp8_peak_only_where_it_exists():
    p16, _ = throughput.card_rates(["H100 SXM5", "A100 SXM4 40GB"])
    p8, _ = throughput.card_rates(["H100 SXM5", "A100 SXM4 40GB"], "fp8")
    assert p8[0] == pytest.approx(2 * p16[0], rel=1e-4) and p8[1] == p16[1]


# --- ranking and recommendation -------------------------------------------------------------------

def _toy_table():
    base = hardware.get("RTX 4090")
    fast = dataclasses.replace(base, name="Fast", memory_bandwidth_gbs=2000.0, fp16_tflops=400.0,
                               launch_price_usd=4000.0, memory_gib=48, usable_memory_gib=47.0)
    twin_a = dataclasses.replace(base, name="Twin A", launch_price_usd=1000.0)
    twin_b = dataclasses.replace(base, name="Twin B", launch_price_usd=None)
    slow = dataclasses.replace(base, name="Slow", memory_bandwidth_gbs=500.0, fp16_tflops=80.0,
                               launch_price_usd=500.0, memory_gib=8, usable_memory_gib=7.5)
    return [slow, twin_b, fast, twin_a]


def test_rank_on_a_small_fixed_table():
    table = _toy_table()
    rows = throughput.rank("transformer-train", reference=table[3], accelerators=table)
    assert [r["accelerator"] for r in rows] == ["Fast", "Twin A", "Twin B", "Slow"]
    assert rows[1]["relative_throughput"] == rows[2]["relative_throughput"] == 1.0
    assert rows[2]["relative_per_1000_usd"] is None
    assert rows[1]["relative_per_1000_usd"] == pytest.approx(1.0)
    again = throughput.rank("transformer-train", reference=table[3], accelerators=table[::-1])
    assert rows == again


def test_rank_uses_price_overrides():
    rows = throughput.rank("llm-decode", accelerators=["RTX 4090"], prices={"RTX 4090": 2000})
    assert rows[0]["price_usd"] == 2000.0
    with pytest.raises(ValueError, match="prices"):
        throughput.rank("llm-decode", prices={"RTX 4090": -1})
    with pytest.raises(ValueError, match="prices"):
        throughput.rank("llm-decode", prices={"RTX 9090": 1})


def test_recommend_filters_by_budget_and_memory():
    table = _toy_table()
    picks = throughput.recommend("cnn-train", 1500, 8, accelerators=table)
    assert [p["accelerator"] for p in picks] == ["Twin A"]
    assert "23.6 GiB" in picks[0]["reason"]
    assert throughput.recommend("cnn-train", 400, 0, accelerators=table) == []


@pytest.mark.parametrize("call, name", [
    (lambda: throughput.rank("video-train"), "workload"),
    (lambda: throughput.rank("cnn-train", reference="A200"), "reference"),
    (lambda: throughput.throughput("cnn-train", ["H100 SXM5", "B300"]), "accelerators"),
    (lambda: throughput.throughput("cnn-train", ["H100 SXM5"], [1, 2]), "batch"),
    (lambda: throughput.recommend("cnn-train", -5, 8), "budget_usd"),
    (lambda: throughput.kernel_times({"flops": [1]}, ["T4"]), "kernels"),
    (lambda: throughput.throughput("cnn-train", engine="vllm"), "engine"),
])
def test_bad_speed_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- measured reality ----------------------------------------------------------------------------

#: Median absolute errors of the speed relative to the A100 80GB, recorded with the fitted step
#: model; a model change may not make them worse. (The kernel-sum model before it scored 0.141,
#: 0.269 and 0.483 relative, but 0.44, 1.04 and 0.30 absolute; the absolute and left-out
#: errors are guarded in test_validate.py.) llm-decode rose from 0.073 to 0.094 when llama.cpp's
#: CUDA-graph nodes replaced its host launches (absolute decoding errors fell, and the
#: reference A100 row moved); cnn-train fell from 0.381 with the NCHW transposes.
RECORDED = {"transformer-train": 0.143, "cnn-train": 0.287, "llm-decode": 0.094}


@pytest.mark.parametrize("workload", throughput.WORKLOADS)
def test_median_error_is_no_worse_than_recorded(workload):
    assert throughput.median_error(workload) <= RECORDED[workload]


def test_validation_rows_are_relative_to_the_reference():
    for w in throughput.WORKLOADS:
        rows = throughput.validation(w)
        ref = [r for r in rows if r["accelerator"] == "A100 SXM4 80GB"]
        assert len(ref) == 1 and ref[0]["measured_relative"] == ref[0]["predicted_relative"] == 1.0


def test_every_wgmma_free_gemm_in_bert_stays_compute_bound_with_l2_reuse():
    frame = C.l2_check_frame()
    assert set(frame["bound"]) == {"compute"}


# --- command line -------------------------------------------------------------------------------

def _cli(*args):
    return subprocess.run([sys.executable, "-m", "gpumodel", *args], capture_output=True, text=True)


def test_rank_json_rows():
    out = _cli("rank", "--workload", "transformer-train", "--json")
    rows = json.loads(out.stdout)
    assert out.returncode == 0 and len(rows) == len(hardware.names())
    assert {"accelerator", "workload", "relative_throughput"} <= set(rows[0])
    ref = next(r for r in rows if r["accelerator"] == throughput.REFERENCE)
    assert ref["relative_throughput"] == 1.0
    values = [r["relative_throughput"] for r in rows]
    assert values == sorted(values, reverse=True)


@pytest.mark.parametrize("args", [["rank", "--workload", "video"], ["rank"],
                                  ["rank", "--workload", "cnn-train", "--reference", "A200"]])
def test_rank_refuses_bad_input_with_one_line(args):
    out = _cli(*args)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 300), context=st.integers(1, 40000), bits=st.floats(2, 16))
def test_vectorized_decode_equals_the_kernel_sum(batch, context, bits):
    cards = ["RTX 4090", "H100 SXM5"]
    fast = throughput.decode_throughput(cards, [1, batch], context=context, weight_bits=bits)
    slow = throughput.throughput("llm-decode", cards, batch, context=context, weight_bits=bits)
    assert fast[:, 1] == pytest.approx(slow, rel=1e-9)


def test_band_is_the_left_out_error_of_the_measured_ratios():
    from gpumodel import validate
    left_out = {r["id"]: r for r in validate.cross_validate("choosing_a_gpu")}
    ref = left_out["lambda.bert_large.a100_80_sxm"]["rel_error"]
    ratios = [(1 + r["rel_error"]) / (1 + ref) - 1 for i, r in left_out.items()
              if i.startswith("lambda.bert_large.") and i != "lambda.bert_large.a100_80_sxm"]
    assert len(ratios) == 8
    assert throughput.band("transformer-train") == pytest.approx(
        (np.percentile(ratios, 10), np.percentile(ratios, 90)))
    low, high = throughput.band()
    assert -1 < low < 0 < high


@pytest.mark.parametrize("workload", throughput.WORKLOADS)
def test_rank_rows_carry_the_band_and_the_reference_has_none(workload):
    low, high = throughput.band(workload)
    for r in throughput.rank(workload):
        rel = r["relative_throughput"]
        if r["accelerator"] == throughput.REFERENCE:
            assert r["band_low"] == r["band_high"] == rel
        else:
            assert r["band_low"] == pytest.approx(rel / (1 + high))
            assert r["band_high"] == pytest.approx(rel / (1 + low))


def test_tables_print_the_likely_range():
    frame = C.rank_frame("cnn-train")
    assert frame.loc["A100 SXM4 40GB", "80% range"] == "-"
    assert C.validation_frame("cnn-train").loc["A100 SXM4 80GB", "80% range"] == "-"
    assert "80% range" in C.show_value(C.value_frame()).columns


def test_llama3_8b_step_counts_six_flop_per_weight_attention_and_recompute():
    table = throughput.llm_train_kernels(2, fused=True, selective_recompute=False)
    tokens = 2 * throughput.LLAMA_TRAIN_SEQ
    per_kind = throughput.flops_by_kind(table)
    gemm = per_kind["gemm"]
    norms = (2 * 32 + 1) * 4096
    linear = workloads.transformer_params(**workloads.LLAMA3_8B, input_embedding=False) - norms
    assert gemm == pytest.approx(6 * linear * tokens, rel=1e-12)
    assert per_kind["attention"] == pytest.approx(3.5 * 2 * tokens * 8192 * 4096 * 32)
    assert sum(per_kind.values()) == pytest.approx(table["flops"] @ table["launches"])
    again = throughput.llm_train_kernels(2, fused=True)
    extra = again["flops"] @ again["launches"] - table["flops"] @ table["launches"]
    recomputed = 2 * tokens * 32 * 4096 * (1024 + 4096 + 14336)
    assert extra == pytest.approx(recomputed)


@given(st.floats(1.0, 2000.0), st.floats(1.0, 2000.0))
def test_sustained_clock_share_is_the_cube_root_and_never_above_one(limit, tdp):
    share = float(throughput.sustained_clock_share(limit, tdp))
    assert 0 < share <= 1
    assert share == pytest.approx(min(1.0, (limit / tdp) ** (1 / 3)))


def test_power_limit_scales_the_peaks_not_the_bandwidth():
    full, capped = hardware.get("H100 SXM5"), throughput.power_limited("H100 SXM5", 500)
    assert capped.peak_flops("bf16") / full.peak_flops("bf16") == pytest.approx(
        (500 / 700) ** (1 / 3))
    assert capped.bandwidth == full.bandwidth and capped.name == full.name
    assert throughput.power_limited("H100 SXM5", 900).peak_flops("bf16") == \
        full.peak_flops("bf16")


def test_flash_attention_runs_at_its_sourced_share_on_the_h100():
    rates = throughput.achieved_rates(["H100 SXM5", "RTX 4090"])
    share = throughput.ATTENTION_SHARE["GH100"]
    assert rates["attention"][0] == pytest.approx(share * rates["peak"][0])
    assert rates["attention"][1] == rates["gemm"][1]


def test_every_llama_pretraining_row_is_scored_and_overrated():
    rows = C.llm_train_rows()
    assert len(rows) == 6
    assert all(r["rel_error"] > 0 for r in rows)


# --- issue 24 ---------------------------------------------------------------------------------

def test_a_zero_d_batch_is_one_batch_for_all_cards():
    cards = ["H100 SXM5", "A100 SXM4 40GB"]
    for batch in (np.array(4), np.int64(4)):
        assert np.array_equal(throughput.throughput("llm-decode", cards, batch),
                              throughput.throughput("llm-decode", cards, 4))
        assert np.array_equal(throughput.relative_throughput("llm-decode", cards, batch=batch),
                              throughput.relative_throughput("llm-decode", cards, batch=4))
    rank = throughput.rank("llm-decode", accelerators=cards, batch=np.array(4))
    assert rank == throughput.rank("llm-decode", accelerators=cards, batch=4)


def test_price_keys_match_card_names_as_hardware_get_does():
    cards = ["H100 SXM5", "RTX 4090"]
    exact = throughput.rank("llm-decode", accelerators=cards, prices={"H100 SXM5": 1.0})
    other = throughput.rank("llm-decode", accelerators=cards, prices={"h100 sxm5": 1.0})
    assert exact == other and exact[0]["price_usd"] == 1.0
    with pytest.raises(ValueError, match="prices"):
        throughput.rank("llm-decode", prices={"h100 sxm5": 1.0, "H100 SXM5": 2.0})
    with pytest.raises(ValueError, match="prices"):
        throughput.rank("llm-decode", prices={"H100 SXM9": 1.0})


@pytest.mark.parametrize("key, bad", [("launches", [True, 1.0]), ("launches", [-1.0, 1.0]),
                                      ("flops", [1e9, 1 + 2j]), ("bytes", [[1e6, 1e8]]),
                                      ("dequantized", [1.0]), ("dequantized", 3.0),
                                      ("Launches", [1.0, 1.0])])
def test_bad_kernel_tables_are_refused(key, bad):
    kernels = {"flops": [1e9, 0.0], "bytes": [1e6, 1e8], "launches": [2.0, 1.0], key: bad}
    for fn in (throughput.kernel_times, throughput.time_by_regime,
               throughput.flop_utilization, throughput.step_parts):
        with pytest.raises(ValueError, match="kernels"):
            fn(kernels, "H100 SXM5")


def test_graph_node_share_is_the_nodes_time_over_the_token():
    row = "decode.llama3_8b_q4.rtx4090"
    share = C.graph_node_share(row)
    table = throughput.decode_row_kernels(
        [r for r in C.measured.measurements(row) if r["id"] == row][0])
    node = calibration.default().constants["llamacpp_node_seconds"]
    step = throughput.step_parts(table, ["RTX 4090"], engine="llama.cpp")["step"][0]
    assert share == pytest.approx(np.sum(table["launches"]) * node / step)
    assert 0 < share < 1
    with pytest.raises(ValueError, match="row_id"):
        C.graph_node_share("lambda.resnet50.rtx4090")


# --- today's buyer --------------------------------------------------------------------------------

def test_prefill_counts_two_flop_per_weight_and_token_plus_causal_attention():
    n = workloads.transformer_params(**workloads.LLAMA3_8B, input_embedding=False)
    assert throughput.prefill_flops(2048) == pytest.approx(2 * n * 2048 + 2 * 32 * 2048**2 * 4096)
    assert throughput.prefill_flops(2048) == pytest.approx(3.1839683e13, rel=1e-7)
    assert throughput.prefill_flops(1, layers=1, d_model=8, d_ff=16, heads=2, kv_heads=1, vocab=10) == \
        pytest.approx(2 * workloads.transformer_params(1, 8, 16, 2, 1, 10, input_embedding=False) + 2 * 8)


def test_time_to_first_token_is_compute_for_long_prompts_and_the_weight_read_for_short():
    w = throughput.weight_bytes(input_embedding=False)
    assert throughput.time_to_first_token(2048, 8e14, 3.35e12) == pytest.approx(
        throughput.prefill_flops(2048) / 8e14)
    assert throughput.time_to_first_token(1, 8e14, 3.35e12) == pytest.approx(w / 3.35e12)
    # intensity about P FLOP per weight byte at 16 bits
    assert throughput.prefill_flops(2048) / w == pytest.approx(2121.25, abs=0.01)


@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 32768), rate=st.floats(1e12, 2e15), bw=st.floats(1e11, 1e13))
def test_ttft_grows_with_the_prompt_and_is_at_least_both_bounds(p, rate, bw):
    t = throughput.time_to_first_token(p, rate, bw)
    assert t >= throughput.prefill_flops(p) / rate * (1 - 1e-12)
    assert t >= throughput.weight_bytes(input_embedding=False) / bw * (1 - 1e-12)
    assert throughput.time_to_first_token(p + 1, rate, bw) >= t
    assert np.isfinite(t)


def test_lora_parameters_of_llama3_8b():
    assert workloads.lora_params(4096, 4096, 16) == 131072
    assert workloads.lora_params(14336, 4096, 8) == 8 * 18432
    # rank 16 on all seven matrices of Llama 3 8B: 41,943,040 (PEFT's count for this setup)
    assert workloads.decoder_lora_params(16) == 41943040
    assert workloads.decoder_lora_params(1, layers=1, d_model=8, d_ff=16, heads=2, kv_heads=1) == \
        9 * 8 + 2 * 4 + 3 * 16


def test_qlora_constants_and_memory():
    assert workloads.QLORA_CONSTANT_BITS == pytest.approx(0.126953125)
    assert workloads.QLORA_WEIGHT_BITS == pytest.approx(4.126953125)
    assert workloads.lora_memory_bytes(8e9, 4e7) == pytest.approx(16e9 + 6.4e8)
    assert workloads.lora_memory_bytes(7e9, 4e7, 4.0, 1e9) == pytest.approx(3.5e9 + 2e9 + 6.4e8)
    assert workloads.lora_memory_bytes(0.0, 0.0) == 0.0


@settings(max_examples=60, deadline=None)
@given(n=st.floats(1e6, 1e12), a=st.floats(0, 1e9), bits=st.floats(1, 16), rank=st.integers(1, 512))
def test_fewer_bits_and_lower_rank_never_need_more_memory(n, a, bits, rank):
    assert workloads.lora_memory_bytes(n, a, bits) <= workloads.lora_memory_bytes(n, a, 16.0) * (1 + 1e-12)
    assert workloads.decoder_lora_params(rank) == pytest.approx(rank * workloads.decoder_lora_params(1))
    assert workloads.lora_memory_bytes(n, a) <= 16 * n + 16 * a


@pytest.mark.parametrize("call, name", [
    (lambda: throughput.prefill_flops(0), "prompt"),
    (lambda: throughput.prefill_flops(10.5), "prompt"),
    (lambda: throughput.time_to_first_token(2048, -1.0, 3e12), "flop_rate"),
    (lambda: throughput.time_to_first_token(2048, 1e15, 0.0), "bandwidth"),
    (lambda: throughput.time_to_first_token(2048, 1e15, 3e12, weight_bits=40), "weight_bits"),
    (lambda: workloads.lora_params(4096, 4096, 0), "rank"),
    (lambda: workloads.lora_params(4096.5, 4096, 8), "d_in"),
    (lambda: workloads.decoder_lora_params(8, kv_heads=3), "kv_heads"),
    (lambda: workloads.lora_memory_bytes(-1.0, 1e6), "frozen_params"),
    (lambda: workloads.lora_memory_bytes(1e9, 1e6, weight_bits=0.5), "weight_bits"),
    (lambda: workloads.lora_memory_bytes(1e9, float("nan")), "adapter_params"),
    (lambda: workloads.lora_memory_bytes(1e9, 1e6, adapter_state_bytes=0), "adapter_state_bytes"),
])
def test_bad_buyer_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_fp8_shares_count_what_the_step_executes():
    from gpumodel.explorations import choosing_a_gpu as cgx
    s = cgx.fp8_linear_shares("H100 SXM5")
    # the converted GEMMs do most of the executed FLOP but take less of the time than that
    assert 0.75 < s["flop_share"] < 0.9
    assert 0 < s["time_share"] < s["flop_share"]


def test_prefill_reaches_the_ridge_where_the_gemm_intensity_does():
    from gpumodel import memory
    from gpumodel.explorations import choosing_a_gpu as cgx
    p = cgx.prefill_ridge_tokens("H100 SXM5", 4096, 1024)
    ridge = hardware.get("H100 SXM5").ridge_point("bf16")
    below = memory.arithmetic_intensity(np.floor(p), 4096, 1024, "bf16")
    above = memory.arithmetic_intensity(np.ceil(p), 4096, 1024, "bf16")
    assert below < ridge <= above


def test_a_job_that_fills_a_card_past_the_measured_margin_is_tight():
    frame = C.jobs_frame()
    # BERT-large at 32 x 384 needs about 23 GiB of the RTX 4090's 23.6 usable: 97% full
    assert frame.loc["fine-tune BERT-large, 32 x 384 tokens", "RTX 4090"] == "tight"
    assert frame.loc["fine-tune BERT-base, 32 x 128 tokens", "RTX 4090"] == "fits"
    assert frame.loc["train GPT-2 XL (1.5B), 8 x 1024 tokens", "RTX 4090"] == "-"


# --- a batch each card can hold ----------------------------------------------------------------

def test_fit_margin_is_the_fullest_measured_bert_run():
    assert throughput.fit_margin() == pytest.approx(
        max(C.lambda_batch_fill()["need"]), rel=1e-12)
    assert throughput.fit_margin() == pytest.approx(0.919720342531215, rel=1e-9)


def test_cnn_memory_counts_two_saved_tensors_per_convolution_output():
    per_image = (throughput.cnn_train_memory_bytes(2)
                 - throughput.cnn_train_memory_bytes(1))
    convs = throughput._resnet50_convs(224)
    elements = sum(px * n for _, _, px, _, _, n, _ in convs)
    assert elements == 11_113_984
    assert per_image == pytest.approx(4.0 * elements)
    params = sum(k * n for _, _, _, _, k, n, _ in convs) + 2048 * 1000
    assert throughput.cnn_train_memory_bytes(1) == pytest.approx(14.0 * params + 4.0 * elements)


def test_lambda_resnet_batches_fit_within_the_bert_margin():
    """The ResNet-50 memory model was not fitted to Lambda's batches; their fills check it."""
    for row in measured.measurements("lambda.resnet50."):
        card = hardware.get(row["hardware"])
        usable = card.usable_memory_bytes or card.memory_bytes
        need = throughput.memory_need_bytes("cnn-train", int(row["batch"]))
        assert 0.6 < need / usable <= throughput.fit_margin(), row["id"]


def test_largest_batch_on_named_cards():
    cards = ["V100 SXM2 16GB", "RTX 4090", "A100 SXM4 40GB", "RTX 3080", "T4"]
    assert throughput.largest_batch("transformer-train", cards).tolist() == [16, 29, 32, 7, 15]
    assert throughput.largest_batch("cnn-train", cards).tolist() == [256, 256, 256, 208, 256]
    assert throughput.largest_batch("llm-decode", cards).tolist() == [0, 1, 1, 0, 0]
    assert throughput.largest_batch("llm-decode", cards, weight_bits=4.5).tolist() == [1] * 5


def test_rank_runs_each_card_at_a_batch_it_holds():
    rows = {r["accelerator"]: r for r in throughput.rank("transformer-train")}
    assert rows["RTX 4090"]["batch"] == 29 and rows["RTX 4090"]["fits"]
    assert rows["H100 SXM5"]["batch"] == 32
    decode = {r["accelerator"]: r for r in throughput.rank("llm-decode")}
    assert decode["T4"]["batch"] == 0 and not decode["T4"]["fits"]
    assert decode["T4"]["relative_throughput"] == 0.0
    assert list(decode)[-1] in {"T4", "V100 SXM2 16GB", "RTX 3080", "RTX 4070 Ti",
                                "RTX 2080 Ti", "TPU v2", "TPU v5e"}
    same = {r["accelerator"]: r for r in throughput.rank("transformer-train", batch=32)}
    assert not same["RTX 4090"]["fits"] and same["H100 SXM5"]["fits"]
    assert same["RTX 4090"]["batch"] == 32


def test_recommend_and_value_skip_cards_that_cannot_hold_the_model():
    picks = throughput.recommend("llm-decode", 10_000, 0)
    assert all(p["batch"] >= 1 for p in picks)
    assert "RTX 3080" not in C.value_frame("llm-decode").index


@settings(max_examples=40, deadline=None)
@given(memory=st.floats(1.0, 400.0), workload=st.sampled_from(throughput.WORKLOADS))
def test_largest_batch_is_the_largest_that_fits(memory, workload):
    card = dataclasses.replace(hardware.get("H100 SXM5"), name="Probe", memory_gib=memory,
                               usable_memory_gib=memory)
    b = int(throughput.largest_batch(workload, [card])[0])
    room = throughput.fit_margin() * memory * 2.0**30
    cap = throughput.DEFAULT_BATCH[workload]
    if b:
        assert throughput.memory_need_bytes(workload, b) <= room * (1 + 1e-12)
    if b < cap:
        assert throughput.memory_need_bytes(workload, b + 1) > room * (1 - 1e-12)
    bigger = dataclasses.replace(card, memory_gib=memory * 1.5, usable_memory_gib=memory * 1.5)
    assert throughput.largest_batch(workload, [bigger])[0] >= b


@pytest.mark.parametrize("call, name", [
    (lambda: throughput.largest_batch("cnn-train", cap=0), "cap"),
    (lambda: throughput.memory_need_bytes("cnn-train", batch=-1), "batch"),
    (lambda: throughput.cnn_train_memory_bytes(8, image=16), "image"),
    (lambda: throughput.rank("llm-decode", batch=[1, 2]), "batch"),
    (lambda: throughput.rank("llm-decode", reference="T4"), "reference"),
])
def test_batch_fit_refusals_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_attention_ops_follow_the_measured_runs_code():
    """DeepLearningExamples' BERT scales and masks the scores and copies the context as
    separate operations; the mask's backward is a pass-through, so it has no kernel."""
    table = throughput.transformer_train_kernels(2, seq=16, layers=1, d_model=64, heads=4,
                                                 d_ff=128, vocab=10, positions=16)
    byname = dict(zip(table["kernel"], table["bytes"]))
    scores = 2 * 16 * 4 * 16
    assert byname["attention scaling (forward)"] == 2.0 * scores * 2.0
    assert byname["attention scaling (backward)"] == 2.0 * scores * 2.0
    assert byname["attention mask (forward)"] == 2.0 * scores * 2.0
    assert "attention mask (backward)" not in byname
    assert byname["context copy (backward)"] == 2.0 * 2 * 16 * 64 * 2.0


@pytest.mark.parametrize("change, fragment", [
    ({"constants": "stream_share:-1"}, r"constants\['stream_share'\] must be in \(0, 1.5\]"),
    ({"constants": "stream_share:x"}, r"constants\['stream_share'\] must be a number"),
    ({"constants": "stream_share:None"}, r"constants\['stream_share'\] must be a number"),
    ({"constants": "conv_share:2"}, r"constants\['conv_share'\] must be in"),
    ({"constants": "llamacpp_node_seconds:inf"}, r"constants\['llamacpp_node_seconds'\] must be finite"),
    ({"constants": {}}, "constants lacks gemm_share"),
    ({"latencies": {}}, "latencies must hold"),
    ({"gemm_shares": {"GA100": 0.0}}, r"gemm_shares\['GA100'\] must be in"),
])
def test_a_calibration_with_bad_constants_is_refused_naming_it(change, fragment):
    base = calibration.default()
    changes = {}
    for field_name, value in change.items():
        if isinstance(value, str):
            key, text = value.split(":")
            number = {"x": "x", "None": None}[text] if text in ("x", "None") else float(text)
            value = dict(base.constants, **{key: number})
        changes[field_name] = value
    bad = dataclasses.replace(base, **changes)
    for call in (lambda: throughput.throughput("cnn-train", ["T4"], calibration=bad),
                 lambda: throughput.rank("cnn-train", calibration=bad),
                 lambda: throughput.decode_throughput(["T4"], [1], calibration=bad)):
        with pytest.raises(ValueError, match="calibration: " + fragment):
            call()
    assert throughput.throughput("cnn-train", ["T4"], calibration=base)[0] == pytest.approx(
        throughput.throughput("cnn-train", ["T4"])[0])


def test_largest_batch_refuses_a_per_item_memory_lost_in_rounding_naming_the_option():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="d_ff=1e"):
            throughput.largest_batch("llm-decode", ["T4"], d_ff=1e300)


@pytest.mark.parametrize("call", [
    lambda p: throughput.rank("cnn-train", prices=p),
    lambda p: throughput.recommend("cnn-train", 1e4, 8, prices=p),
    lambda p: C.value_frame(prices=p),
])
def test_a_price_below_a_cent_is_refused_naming_prices(call):
    with pytest.raises(ValueError, match=r"prices\['T4'\] must be 0 \(no price\) or at least 0.01"):
        call({"T4": 1e-320})


def test_reference_frame_names_references():
    with pytest.raises(ValueError, match="^references: "):
        C.reference_frame(references=("T4",))


@pytest.mark.parametrize("call", [
    lambda k: throughput.device_seconds(k, throughput.achieved_rates(["T4"])),
    lambda k: throughput.step_seconds(k, ["T4"]),
    lambda k: throughput.kernel_times(k, ["T4"]),
])
def test_an_empty_kernel_table_is_refused_not_timed_as_zero(call):
    with pytest.raises(ValueError, match="kernels must hold at least one kernel"):
        call({"flops": [], "bytes": [], "launches": []})


def test_memory_range_refuses_an_unknown_card_in_skip():
    from gpumodel.explorations import validation as vx

    with pytest.raises(ValueError, match="skip: 'nope' is no card"):
        vx.memory_range("choosing_a_gpu", "decode.", "HBM", skip=("nope",))


def test_calibration_refuses_unknown_dies_and_no_rows():
    with pytest.raises(ValueError, match="leave_out: unknown die 'nope'"):
        calibration.default(leave_out="nope")
    with pytest.raises(ValueError, match="leave_out: unknown die 'nope'"):
        calibration.default(leave_out=["GA100", "nope"])
    assert calibration.default(leave_out="GA100").left_out == frozenset({"GA100"})  # a bare string is one die
    with pytest.raises(ValueError, match="rows must hold at least one"):
        calibration.fit(rows=[])


@pytest.mark.parametrize("call", [
    lambda: throughput.weight_bytes(heads=32, kv_heads=5),
    lambda: throughput.weight_bytes(d_model=64, heads=128),
    lambda: throughput.prefill_flops(1, heads=32, kv_heads=5),
    lambda: throughput.prefill_flops(1, d_model=64, heads=128),
])
def test_weight_bytes_and_prefill_flops_refuse_heads_that_decode_kernels_refuses(call):
    with pytest.raises(ValueError, match="d_model must be a multiple of heads, and heads of kv_heads"):
        call()


def test_a_batch_past_the_largest_is_refused_by_rank_and_the_cli():
    with pytest.raises(ValueError, match="batch must be a whole number in"):
        throughput.rank("cnn-train", batch=10**23)
    done = subprocess.run([sys.executable, "-m", "gpumodel", "rank", "--workload", "cnn-train",
                           "--batch", "99999999999999999999999"], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and not done.stdout


def test_band_errors_of_the_rows_a_prefix_names():
    f16 = throughput.band_errors("llm-decode", "decode.llama3_8b_f16.")
    every = throughput.band_errors("llm-decode")
    assert len(f16) == 6 and len(every) == 18
    assert set(f16) <= set(every)
    assert all(e < 0 for e in f16)
    with pytest.raises(ValueError, match="prefix"):
        throughput.band_errors("llm-decode", "lambda.")
    with pytest.raises(ValueError, match="prefix"):
        throughput.band_errors("llm-decode", 3)
