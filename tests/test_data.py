"""Checks of the hardware table and the measured-data tables against their own sources and physics."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpumodel import hardware, measured, parallelism

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "book" / "bib" / "hardware.bib"
EXTERNAL_KEYS = {"dettmers2018tpu", "dettmers2023gpu"}  # defined in another bib file

# Dense FP16-input / FP32-accumulate FLOP per Tensor Core per SM clock, from the whitepapers:
# Volta/Turing 64 FMA per TC; GA100 256 FMA; GA102 and Ada 128 FMA (FP32 accumulate at full rate
# on pro/data-center parts, half rate on GeForce); GH100 512 FMA; GB202 GeForce as Ada GeForce;
# AMD CDNA3 (MI300X): 256 FP16 FMA per matrix core per clock (1307.4 = 304 CUs x 4 x 512 x 2.1 GHz).
FLOP_PER_TC_CLOCK = {
    ("Volta", False): 128, ("Turing", False): 128, ("Turing", True): 64,
    ("Ampere (GA100)", False): 512, ("Ampere (GA102)", False): 256, ("Ampere (GA102)", True): 128,
    ("Ada", False): 256, ("Ada", True): 128,
    ("Hopper", False): 1024,
    ("Blackwell (GB202)", True): 128,
    ("CDNA3", False): 512,
}
GEFORCE = {"RTX 2080 Ti", "RTX 3080", "RTX 3090", "RTX 4070 Ti", "RTX 4090", "RTX 5090"}

# Relative tolerance of every identity below. Published numbers are rounded to 3-4 digits, so a
# consistent datasheet agrees to well under 1%; rows that do not are listed, with the reason, in
# IDENTITY_EXCEPTIONS instead of loosening the tolerance for every row.
REL = 0.01

#: (accelerator, quantity) pairs whose published value breaks an identity by more than REL. The
#: published number is kept (it is what the vendor states); each entry says why it is off.
IDENTITY_EXCEPTIONS = {
    ("L40S", "fp16"): "L40S datasheet: FP16/BF16 362.05 dense, but TF32 183, FP8 733 (= 1466 sparse / 2) and FP32 91.6 "
                      "all follow from 142 SMs at 2520 MHz (the device-query maximum clock); 362.05 implies 2490 MHz",
    ("L40S", "tf32"): "same L40S datasheet inconsistency, seen from the FP16 side: 183 is not 362.05 / 2",
    ("L40S", "fp8"): "same L40S datasheet inconsistency: 733 is not 2 x 362.05",
    ("L40S", "int8"): "same L40S datasheet inconsistency: 733 is not 2 x 362.05",
    ("B200", "tf32"): "Blackwell datasheet rounds HGX B200 TF32 to 2.2 PFLOPS sparse (1100 dense) while FP16/BF16 is "
                      "4.5 PFLOPS sparse (2250 dense): 2.2% below half the FP16 rate",
}

#: Clock (MHz) at which a vendor computes its non-tensor FP32 peak, where that is not the
#: boost_clock_mhz column (which holds the clock of the tensor peaks).
FP32_CLOCK_MHZ = {
    "H100 SXM5": 1980,  # FP32 66.9 = 132 x 128 x 2 x 1.98 GHz, the device-query maximum SM clock; tensor peaks use 1830
    "H200 SXM": 1980,   # as H100 SXM5
    "H100 PCIe": 1755,  # FP32 51 ~ 114 x 128 x 2 x 1.755 GHz, the board's maximum boost (nvforum2023tensor); tensor 1620
}

#: FP32 lanes per SM (non-tensor FMA units), from the architecture whitepapers.
FP32_PER_SM = {"Volta": 64, "Turing": 64, "Ampere (GA100)": 64, "Ampere (GA102)": 128, "Ada": 128,
               "Hopper": 128, "Blackwell (GB202)": 128}

#: Maximum resident warps per SM by compute capability (CUDA C++ Programming Guide, technical
#: specifications per compute capability), keyed by the architecture names of the table.
WARPS_PER_SM = {"Volta": 64, "Turing": 32, "Ampere (GA100)": 64, "Ampere (GA102)": 48, "Ada": 48,
                "Hopper": 64, "Blackwell (GB100": 64, "Blackwell (GB202)": 48}


def bib_keys() -> set[str]:
    return set(re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(), flags=re.M))


def source_keys(text: str) -> set[str]:
    return set(re.findall(r"\[([A-Za-z0-9_:-]+)\]", text))


def _family(acc) -> str:
    for prefix in ("Ampere (GA100)", "Ampere (GA102)", "Blackwell (GB202)", "Blackwell (GB100", "Volta", "Turing",
                   "Ada", "Hopper", "CDNA3"):
        if acc.architecture.startswith(prefix):
            return prefix
    return acc.architecture


def _bib_entries() -> dict[str, str]:
    text = BIB.read_text()
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"^@\w+\{([^,\s]+),", text, flags=re.M)]
    return {key: text[pos:(starts[i + 1][0] if i + 1 < len(starts) else len(text))]
            for i, (pos, key) in enumerate(starts)}


def _close(value, expected, acc_name, quantity):
    """Assert value == expected within REL, unless (acc_name, quantity) is a listed exception (then assert it is off)."""
    if (acc_name, quantity) in IDENTITY_EXCEPTIONS:
        assert value != pytest.approx(expected, rel=REL), (
            f"{acc_name} {quantity} now agrees within {REL:.0%}: remove it from IDENTITY_EXCEPTIONS")
    else:
        assert value == pytest.approx(expected, rel=REL), f"{acc_name} {quantity}: {value} vs derived {expected:.4g}"


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


def test_every_cpu_cites_known_keys():
    for cpu in hardware.cpus():
        keys = source_keys(cpu.source)
        assert keys and keys <= bib_keys(), (cpu.name, keys - bib_keys())


def test_links_and_collectives_cite_known_keys():
    known = bib_keys() | EXTERNAL_KEYS
    for source in [l.source for l in parallelism.links()] + [r["source"] for r in measured.collectives()]:
        keys = source_keys(source)
        assert keys and keys <= known, (source, keys - known)


def test_brain_data_cites_known_keys():
    import csv
    from gpumodel import brain
    known = set()
    for bib in (ROOT / "book" / "bib").glob("*.bib"):
        known |= set(re.findall(r"^@\w+\{([^,\s]+),", bib.read_text(), flags=re.M))
    rows = [r["source"] for m in brain.METRICS for r in brain.records(m)]
    path = ROOT / "gpumodel" / "data" / "brain_estimates.csv"
    rows += [r["source"] for r in csv.DictReader(path.open())]
    for source in rows:
        keys = source_keys(source)
        assert keys and keys <= known, (source, keys - known)


def test_every_bib_entry_has_a_checkable_address():
    for key, entry in _bib_entries().items():
        assert re.search(r"^\s*(url|doi)\s*=\s*\{\S+\}", entry, flags=re.M), f"{key} has no url or doi"


def test_bib_keys_are_unique():
    keys = re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(), flags=re.M)
    assert len(keys) == len(set(keys))


def test_every_bib_entry_is_used_by_a_data_file():
    """Unused entries rot; hardware.bib holds the sources of gpumodel/data/*.csv only."""
    used = set()
    for acc in hardware.accelerators():
        used |= source_keys(acc.source)
    for row in measured.latencies() + measured.measurements():
        used |= {k.strip() for k in row["source"].split(";")}
    for row in parallelism.links():
        used |= source_keys(row.source)
    for row in measured.collectives():
        used |= source_keys(row["source"])
    for cpu in hardware.cpus():
        used |= source_keys(cpu.source)
    unused = set(_bib_entries()) - used
    assert not unused, f"hardware.bib entries cited by no data row: {sorted(unused)}"


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
                                 if a.kind == "gpu" and a.tensor_cores_per_sm and a.boost_clock_mhz],
                         ids=lambda a: a.name)
def test_tensor_peak_follows_from_sms_tensor_cores_and_clock(acc):
    """Published dense FP16 peak = SMs x Tensor Cores per SM x FLOP per Tensor Core per clock x boost clock."""
    per_tc = FLOP_PER_TC_CLOCK[(_family(acc), acc.geforce_half_rate)]
    derived = acc.sm_count * acc.tensor_cores_per_sm * per_tc * acc.boost_clock_mhz * 1e6 / 1e12
    _close(acc.fp16_tflops, derived, acc.name, "fp16")


def test_every_gpu_with_an_fp16_peak_and_a_clock_is_derived():
    """No GPU row escapes the derivation above for lack of a FLOP-per-clock entry."""
    for acc in hardware.accelerators():
        if acc.kind == "gpu" and acc.tensor_cores_per_sm and acc.boost_clock_mhz:
            assert (_family(acc), acc.geforce_half_rate) in FLOP_PER_TC_CLOCK, acc.name


@pytest.mark.parametrize("acc", [a for a in hardware.accelerators() if a.kind == "gpu" and a.fp16_tflops],
                         ids=lambda a: a.name)
def test_precision_ladder_identities(acc):
    """Within one datasheet: TF32 = FP16 / 2; FP8 = 2 x FP16; INT8 = 2 x the FP16-accumulate FP16 rate
    (= 4 x the table's FP32-accumulate value on GeForce); FP4 = 2 x FP8 (4 x on GeForce, whose FP4 is not halved)."""
    f16 = acc.fp16_tflops
    geforce = acc.name in GEFORCE
    if acc.tf32_tflops is not None:
        _close(acc.tf32_tflops, f16 / 2, acc.name, "tf32")
    if acc.fp8_tflops is not None:
        _close(acc.fp8_tflops, 2 * f16, acc.name, "fp8")
    if acc.int8_tops is not None:
        _close(acc.int8_tops, (4 if geforce else 2) * f16, acc.name, "int8")
    if acc.fp4_tflops is not None:
        _close(acc.fp4_tflops, (4 if geforce else 2) * acc.fp8_tflops, acc.name, "fp4")


def test_identity_exceptions_name_real_rows():
    names = set(hardware.names())
    assert {name for name, _ in IDENTITY_EXCEPTIONS} <= names
    assert all(reason for reason in IDENTITY_EXCEPTIONS.values())


@pytest.mark.parametrize("acc", [a for a in hardware.accelerators()
                                 if a.vendor == "NVIDIA" and a.sm_count and a.boost_clock_mhz and a.fp32_tflops],
                         ids=lambda a: a.name)
def test_fp32_peak_follows_from_sms_lanes_and_clock(acc):
    clock = FP32_CLOCK_MHZ.get(acc.name, acc.boost_clock_mhz)
    derived = acc.sm_count * FP32_PER_SM[_family(acc)] * 2 * clock * 1e6 / 1e12
    assert acc.fp32_tflops == pytest.approx(derived, rel=REL)


# --- memory capacity, occupancy and power ----------------------------------------------------------

@pytest.mark.parametrize("acc", [a for a in hardware.accelerators() if a.usable_memory_gib is not None],
                         ids=lambda a: a.name)
def test_usable_memory_is_a_little_less_than_physical(acc):
    """Device queries report less than the DRAM (driver reservations; ECC on GDDR6 takes 1/16), never more."""
    assert acc.usable_memory_gib <= acc.memory_gib
    assert acc.usable_memory_gib >= 0.9 * acc.memory_gib
    assert acc.usable_memory_bytes < acc.memory_bytes


@pytest.mark.parametrize("acc", hardware.accelerators(), ids=lambda a: a.name)
def test_warps_per_sm_is_the_known_value_for_the_architecture(acc):
    if acc.vendor != "NVIDIA":
        assert acc.warps_per_sm is None  # TPUs have no warps; AMD wavefronts are 64 wide, not comparable
    else:
        assert acc.warps_per_sm == WARPS_PER_SM[_family(acc)]


def test_power_columns_hold_different_kinds_of_number():
    """tdp_w is a rating, measured_max_power_w a measurement; only TPUs carry the latter here."""
    for acc in hardware.accelerators():
        if acc.measured_max_power_w is not None:
            assert acc.kind == "tpu"
            if acc.tdp_w is not None:
                assert acc.measured_max_power_w < acc.tdp_w
    assert hardware.get("TPU v3").tdp_w == 450 and hardware.get("TPU v3").measured_max_power_w == 262
    assert hardware.get("TPU v4").tdp_w is None and hardware.get("TPU v4").measured_max_power_w == 192


def test_rows_fixed_from_the_issue():
    assert hardware.get("RTX 4070 Ti").int8_tops == pytest.approx(60 * 4 * 512 * 2.61e9 / 1e12, abs=0.05)
    assert hardware.get("TPU v5p").fp8_tflops is None and hardware.get("TPU v5p").int8_tops == 918
    b200 = hardware.get("B200")
    assert (b200.sm_count, b200.memory_gib, b200.memory_bandwidth_gbs, b200.fp32_tflops) == (148, 192, 7700, 75)
    assert b200.usable_memory_gib < 180 < b200.memory_gib
    assert hardware.get("L40S").l2_cache_mib == 96
    assert hardware.get("H200 SXM").l2_cache_mib == 60


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


# --- latency clocks and measurement labels ---------------------------------------------------------

def test_every_latency_clock_is_explained_and_plausible():
    for row in measured.latencies():
        if row["clock_mhz"] is None:
            continue
        assert 500 <= row["clock_mhz"] <= 3000, row
        method = row["method"]
        assert f"{row['clock_mhz']:g} MHz" in method or "clock_mhz is" in method, row
        if "clocks not locked" in method:
            assert "maximum boost clock" in method, row


def test_rrze_latency_clocks_are_those_of_the_result_files():
    files = {"V100 PCIe 16GB": 1380, "A100 SXM4 80GB": 1410, "A40": 1740, "L40": 2490, "GH200": 1980}
    for row in measured.latencies():
        if row["source"] == "rrze2024gpubenches":
            assert row["clock_mhz"] == files[row["gpu"]], row


def test_latency_seconds_uses_the_recorded_clock():
    assert measured.latency_seconds("Hopper", "global") == pytest.approx(689.2 / 1.98e9)
    with pytest.raises(ValueError, match="clock"):
        measured.latency_seconds("Blackwell", "global")  # no published B200 clock


def test_dgx2_rows_are_sxm3_and_dgx1_rows_are_sxm2():
    for row in measured.measurements("dle."):
        if "v100" not in row["id"]:
            continue
        on_dgx2 = row["detail"].startswith("DGX-2")
        assert ("SXM3" in row["hardware"]) == on_dgx2, row
        assert ("SXM2" in row["hardware"]) == (not on_dgx2), row


def test_transformer_batches_are_the_mixed_precision_ones():
    batch = {r["id"]: r["batch"] for r in measured.measurements("dle.transformer.")}
    assert batch["dle.transformer.v100_16.1gpu"] == 5120 and batch["dle.transformer.v100_16.8gpu"] == 5120
    assert batch["dle.transformer.v100_32.1gpu"] == 10240 and batch["dle.transformer.a100.1gpu"] == 10240


def test_deepbench_v100_memory_size_is_marked_as_assumed():
    for row in measured.measurements("deepbench.v100."):
        assert "assumption" in row["detail"], row
