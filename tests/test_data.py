"""Checks of the hardware table and the measured-data tables against their own sources and physics."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpumodel import hardware, measured

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "book" / "bib" / "hardware.bib"
EXTERNAL_KEYS = {"dettmers2018tpu", "dettmers2023gpu"}  # defined in another bib file

# Dense FP16-input / FP32-accumulate FLOP per Tensor Core per SM clock, from the whitepapers:
# Volta/Turing 64 FMA per TC; GA100 256 FMA; GA102 and Ada 128 FMA (FP32 accumulate at full rate
# on pro/data-center parts, half rate on GeForce); GH100 512 FMA; GB202 GeForce as Ada GeForce.
FLOP_PER_TC_CLOCK = {
    ("Volta", False): 128, ("Turing", False): 128, ("Turing", True): 64,
    ("Ampere (GA100)", False): 512, ("Ampere (GA102)", False): 256, ("Ampere (GA102)", True): 128,
    ("Ada", False): 256, ("Ada", True): 128,
    ("Hopper", False): 1024,
    ("Blackwell (GB202)", True): 128,
}
GEFORCE = {"RTX 2080 Ti", "RTX 3080", "RTX 3090", "RTX 4070 Ti", "RTX 4090", "RTX 5090"}


def bib_keys() -> set[str]:
    return set(re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(), flags=re.M))


def source_keys(text: str) -> set[str]:
    return set(re.findall(r"\[([A-Za-z0-9_:-]+)\]", text))


def _family(acc) -> str:
    for prefix in ("Ampere (GA100)", "Ampere (GA102)", "Blackwell (GB202)", "Volta", "Turing", "Ada", "Hopper"):
        if acc.architecture.startswith(prefix):
            return prefix
    return acc.architecture


# --- sources ----------------------------------------------------------------------------------

def test_bib_does_not_redefine_external_keys():
    assert not bib_keys() & EXTERNAL_KEYS


@pytest.mark.parametrize("acc", hardware.accelerators(), ids=lambda a: a.name)
def test_every_accelerator_cites_known_keys(acc):
    keys = source_keys(acc.source)
    assert keys, f"{acc.name}: source names no [key]"
    assert keys <= bib_keys() | EXTERNAL_KEYS, f"{acc.name}: unknown keys {keys - bib_keys() - EXTERNAL_KEYS}"


def test_latency_and_measurement_sources_are_known_keys():
    known = bib_keys() | EXTERNAL_KEYS
    for row in measured.latencies() + measured.measurements():
        keys = {k.strip() for k in row["source"].split(";")}
        assert keys <= known, (row, keys - known)


# --- internal consistency -----------------------------------------------------------------------

@pytest.mark.parametrize("acc", hardware.accelerators(), ids=lambda a: a.name)
def test_lower_precision_is_not_slower(acc):
    chain = [v for v in (acc.fp16_tflops or acc.bf16_tflops, acc.fp8_tflops, acc.fp4_tflops) if v is not None]
    assert chain == sorted(chain)


@pytest.mark.parametrize("acc", [a for a in hardware.accelerators() if a.vendor == "NVIDIA"], ids=lambda a: a.name)
def test_bf16_equals_fp16_where_supported(acc):
    if acc.bf16_tflops is not None and acc.name not in GEFORCE:
        assert acc.bf16_tflops == acc.fp16_tflops
    if acc.bf16_tflops is not None and acc.name in GEFORCE:
        assert acc.bf16_tflops == acc.fp16_tflops  # both at the halved FP32-accumulate rate


def test_geforce_half_rate_flag_is_exactly_the_geforce_cards():
    assert {a.name for a in hardware.accelerators() if a.geforce_half_rate} == GEFORCE


@pytest.mark.parametrize("acc", [a for a in hardware.accelerators()
                                 if a.vendor == "NVIDIA" and a.tensor_cores_per_sm and a.boost_clock_mhz],
                         ids=lambda a: a.name)
def test_tensor_peak_follows_from_sms_tensor_cores_and_clock(acc):
    per_tc = FLOP_PER_TC_CLOCK[(_family(acc), acc.geforce_half_rate)]
    derived = acc.sm_count * acc.tensor_cores_per_sm * per_tc * acc.boost_clock_mhz * 1e6 / 1e12
    assert derived == pytest.approx(acc.fp16_tflops, rel=0.03)


def test_worked_examples_of_the_derivation():
    assert 80 * 8 * 128 * 1.53e9 / 1e12 == pytest.approx(125, rel=0.01)      # V100
    assert 108 * 4 * 512 * 1.41e9 / 1e12 == pytest.approx(312, rel=0.01)     # A100
    assert 132 * 4 * 1024 * 1.83e9 / 1e12 == pytest.approx(989.4, rel=0.001)  # H100 SXM5


def test_spot_values():
    assert hardware.get("V100 SXM2 16GB").memory_bandwidth_gbs == 900
    assert hardware.get("A100 SXM4 40GB").memory_bandwidth_gbs == 1555
    assert hardware.get("A100 SXM4 80GB").memory_bandwidth_gbs == 2039
    assert hardware.get("H100 SXM5").memory_bandwidth_gbs == 3350
    assert hardware.get("RTX 4090").l2_cache_mib == 72
    assert hardware.get("H100 PCIe").boost_clock_mhz == 1620
    assert hardware.get("TPU v3").bf16_tflops == 123


def test_tpus_have_no_gpu_columns():
    for acc in hardware.accelerators():
        if acc.kind == "tpu":
            assert acc.sm_count is None and acc.fp16_tflops is None and acc.bf16_tflops is not None


# --- loaders --------------------------------------------------------------------------------------

def _accelerator_row(**changes) -> dict:
    from dataclasses import fields
    acc = hardware.get("A100 SXM4 40GB")
    row = {f.name: "" if getattr(acc, f.name) is None else str(getattr(acc, f.name)) for f in fields(acc)}
    row.update(sparse_2_4="yes", geforce_half_rate="no")
    row.update(changes)
    return row


def test_accelerator_parse_rejects_bad_values_naming_the_column():
    with pytest.raises(ValueError, match="memory_bandwidth_gbs"):
        hardware._parse(_accelerator_row(memory_bandwidth_gbs="fast"), 2)
    with pytest.raises(ValueError, match="source"):
        hardware._parse(_accelerator_row(source=""), 2)
    with pytest.raises(ValueError, match="geforce_half_rate"):
        hardware._parse(_accelerator_row(geforce_half_rate="maybe"), 2)


LAT_HEADER = "architecture,gpu,quantity,cycles,clock_mhz,preferred,method,source\n"


def test_latency_parse_rejects_bad_rows_naming_the_column():
    with pytest.raises(ValueError, match="cycles"):
        measured._parse_latencies(LAT_HEADER + "Volta,V100,l2,-3,,yes,x,k\n")
    with pytest.raises(ValueError, match="cycles"):
        measured._parse_latencies(LAT_HEADER + "Volta,V100,l2,soon,,yes,x,k\n")
    with pytest.raises(ValueError, match="source"):
        measured._parse_latencies(LAT_HEADER + "Volta,V100,l2,200,,yes,x,\n")
    with pytest.raises(ValueError, match="quantity"):
        measured._parse_latencies(LAT_HEADER + "Volta,V100,l3,200,,yes,x,k\n")
    with pytest.raises(ValueError, match="preferred"):
        measured._parse_latencies(LAT_HEADER + "Volta,V100,l2,200,,yes,x,k\nVolta,V100,l2,210,,yes,y,k\n")
    with pytest.raises(ValueError, match="preferred"):
        measured._parse_latencies(LAT_HEADER + "Volta,V100,l2,200,,no,x,k\n")
    with pytest.raises(ValueError, match="method"):
        measured._parse_latencies("architecture,gpu,quantity,cycles,clock_mhz,preferred,source\n")


MEAS_HEADER = "id,what,hardware,value,unit,batch,gpus,source,detail\n"


def test_measurement_parse_rejects_bad_rows_naming_the_column():
    with pytest.raises(ValueError, match="value"):
        measured._parse_measurements(MEAS_HEADER + "a,b,c,0,GB/s,,1,k,d\n")
    with pytest.raises(ValueError, match="source"):
        measured._parse_measurements(MEAS_HEADER + "a,b,c,5,GB/s,,1,,d\n")
    with pytest.raises(ValueError, match="id"):
        measured._parse_measurements(MEAS_HEADER + "a,b,c,5,GB/s,,1,k,d\na,b,c,6,GB/s,,1,k,d\n")


def test_one_preferred_row_per_architecture_and_quantity():
    seen = {}
    for row in measured.latencies():
        seen.setdefault((row["architecture"], row["quantity"]), []).append(row["preferred"])
    assert all(flags.count(True) == 1 for flags in seen.values())
    assert {a for a, _ in seen} <= {"Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell", "Ampere (Dettmers 2023)"}


def test_latency_values():
    assert measured.latency("Ampere (Dettmers 2023)", "global") == 380
    assert measured.latency("Ampere (Dettmers 2023)", "mma_fp16") == 1
    assert measured.latency("Volta", "shared") == 19
    assert measured.latency("ampere", "mma_fp16") == 16
    assert measured.latency("Hopper", "global") == pytest.approx(689.2)
    assert all(isinstance(r["cycles"], float) and isinstance(r["preferred"], bool) for r in measured.latencies())
    assert {r["architecture"] for r in measured.latencies("Ada")} == {"Ada"}
    assert measured.architectures()[:6] == ["Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell"]


def test_latency_rejects_unknown_names_listing_known_ones():
    with pytest.raises(ValueError, match="architecture.*known: Volta"):
        measured.latency("Kepler", "l2")
    with pytest.raises(ValueError, match="quantity.*known:.*l2"):
        measured.latency("Turing", "ffma")
    with pytest.raises(ValueError, match="architecture"):
        measured.latencies("Pascal")


def test_measurement_values():
    assert measured.measurement("dle.maskrcnn.a100.1gpu") == 25
    assert measured.measurement("dle.maskrcnn.v100_16.1gpu") == 15
    assert measured.measurement("dle.transformer.a100.1gpu") == 82618
    assert measured.measurement("dle.transformer.v100_32.1gpu") == 40163
    assert measured.measurement("torchao.llama3_8b.h100.fp8_tensorwise") == 7689.5
    assert measured.measurement("mamf.h100_sxm.bf16") == 794.5
    assert measured.measurement("deepbench.v100.fp16.4096x7000x4096.nn") == pytest.approx(112.28)
    rows = measured.measurements("dle.maskrcnn.")
    assert {r["batch"] for r in rows} == {8.0, 4.0} and all(isinstance(r["value"], float) for r in rows)
    assert measured.measurements("no.such.prefix") == []


def test_measured_values_stay_below_their_peaks():
    assert measured.measurement("stream.a100_40.read") < hardware.get("A100 SXM4 40GB").memory_bandwidth_gbs
    assert measured.measurement("mamf.h100_sxm.bf16") < hardware.get("H100 SXM5").bf16_tflops
    assert measured.measurement("mamf.h100_sxm.fp8") < hardware.get("H100 SXM5").fp8_tflops
    assert measured.measurement("deepbench.v100.fp16.4096x7000x4096.nn") < hardware.get("V100 SXM2 16GB").fp16_tflops
    assert measured.measurement("deepbench.t4.fp16.4096x7000x4096.tn") < hardware.get("T4").fp16_tflops


def test_measurement_rejects_unknown_ids_listing_known_ones():
    with pytest.raises(ValueError, match="measurement.*known:.*dle.maskrcnn.a100.1gpu"):
        measured.measurement("dle.maskrcnn.a100.2gpu.nope")


def test_fp16_accumulate_rate_doubles_only_on_geforce():
    rtx, h100 = hardware.get("RTX 4090"), hardware.get("H100 SXM5")
    assert rtx.peak_flops("fp8", accumulate="fp16") == 2 * rtx.peak_flops("fp8")
    assert h100.peak_flops("fp8", accumulate="fp16") == h100.peak_flops("fp8")
    assert rtx.peak_flops("fp16", sparse=True) == 2 * rtx.peak_flops("fp16")
    with pytest.raises(ValueError, match="accumulate"):
        rtx.peak_flops("bf16", accumulate="fp16")
    with pytest.raises(ValueError, match="accumulate"):
        rtx.peak_flops("fp8", accumulate="fp64")
