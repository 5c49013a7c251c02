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

#: Boards whose tensor peaks are quoted below their maximum SM clock (peak_clock_mhz <
#: max_clock_mhz); everywhere else the two columns hold the same clock. Their FP32 peak is
#: quoted at the maximum clock (H100 SXM5: 66.9 = 132 x 128 x 2 x 1.98 GHz).
TENSOR_CLOCK_BELOW_MAX = {"H100 SXM5", "H100 PCIe", "H200 SXM", "H100 SXM 96GB HBM2e"}

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
    for alias in hardware.aliases().values():
        used |= source_keys(alias.source)
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
                                 if a.kind == "gpu" and a.tensor_cores_per_sm and a.peak_clock_mhz],
                         ids=lambda a: a.name)
def test_tensor_peak_follows_from_sms_tensor_cores_and_clock(acc):
    """Published dense FP16 peak = SMs x Tensor Cores per SM x FLOP per Tensor Core per clock x boost clock."""
    per_tc = FLOP_PER_TC_CLOCK[(_family(acc), acc.geforce_half_rate)]
    derived = acc.sm_count * acc.tensor_cores_per_sm * per_tc * acc.peak_clock_mhz * 1e6 / 1e12
    _close(acc.fp16_tflops, derived, acc.name, "fp16")


def test_every_gpu_with_an_fp16_peak_and_a_clock_is_derived():
    """No GPU row escapes the derivation above for lack of a FLOP-per-clock entry."""
    for acc in hardware.accelerators():
        if acc.kind == "gpu" and acc.tensor_cores_per_sm and acc.peak_clock_mhz:
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
                                 if a.vendor == "NVIDIA" and a.sm_count and a.max_clock_mhz and a.fp32_tflops],
                         ids=lambda a: a.name)
def test_fp32_peak_follows_from_sms_lanes_and_clock(acc):
    clock = acc.max_clock_mhz
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
    assert hardware.get("H100 PCIe").peak_clock_mhz == 1620
    assert hardware.get("H100 PCIe").max_clock_mhz == 1755
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


# --- columns that say what they hold (issue 24) -------------------------------------------------

def test_peak_clock_is_the_max_clock_except_where_the_vendor_quotes_peaks_lower():
    """One convention: peak_clock_mhz is the clock of the tensor peaks, max_clock_mhz the maximum."""
    for acc in hardware.accelerators():
        if acc.peak_clock_mhz is None or acc.max_clock_mhz is None:
            continue
        if acc.name in TENSOR_CLOCK_BELOW_MAX:
            assert acc.peak_clock_mhz < acc.max_clock_mhz, acc.name
        else:
            assert acc.peak_clock_mhz == acc.max_clock_mhz, acc.name
    assert {a.name for a in hardware.accelerators() if a.kind == "gpu" and a.max_clock_mhz is None} == {"B200"}


#: Maximum shared memory per SM by architecture family (KiB): CUDA C++ programming guide,
#: technical specifications per compute capability, and the ROCm specifications (LDS per CU).
MAX_SHARED_KIB = {"Volta": 96, "Turing": 64, "Ampere (GA100)": 164, "Ampere (GA102)": 100, "Ada": 100,
                  "Hopper": 228, "Blackwell (GB100)": 228, "Blackwell (GB202)": 100, "CDNA3": 64}


@pytest.mark.parametrize("acc", [a for a in hardware.accelerators() if a.kind == "gpu"], ids=lambda a: a.name)
def test_max_shared_memory_is_the_architecture_value_and_fits_in_l1_shared(acc):
    family = "Blackwell (GB100)" if acc.architecture.startswith("Blackwell (GB100") else _family(acc)
    assert acc.max_shared_per_sm_kib == MAX_SHARED_KIB[family]
    assert acc.max_shared_per_sm_kib <= acc.l1_shared_per_sm_kib
    assert acc.max_shared_bytes_per_sm == acc.max_shared_per_sm_kib * 1024
    assert acc.l1_shared_bytes_per_sm == acc.l1_shared_per_sm_kib * 1024
    assert "max_shared_per_sm_kib" in acc.source


def test_spot_values_of_the_issue_24_columns():
    shared = {n: hardware.get(n).max_shared_per_sm_kib
              for n in ("V100 SXM2 16GB", "A100 SXM4 80GB", "RTX 3090", "RTX 4090", "H100 SXM5")}
    assert shared == {"V100 SXM2 16GB": 96, "A100 SXM4 80GB": 164, "RTX 3090": 100, "RTX 4090": 100,
                      "H100 SXM5": 228}
    mi300x = hardware.get("MI300X")
    assert (mi300x.l1_shared_per_sm_kib, mi300x.max_shared_per_sm_kib) == (96, 64)  # 32 KiB L1 + 64 KiB LDS
    h100 = hardware.get("H100 SXM5")
    assert (h100.peak_clock_mhz, h100.max_clock_mhz) == (1830, 1980)


def test_memory_basis_marks_vendor_figures():
    """memory_gib is physical DRAM except the H200's 141 and Google's TPU figures."""
    vendor = {a.name for a in hardware.accelerators() if a.memory_basis == "vendor"}
    assert vendor == {"H200 SXM"} | {a.name for a in hardware.accelerators() if a.kind == "tpu"}
    assert all(a.memory_basis in hardware.MEMORY_BASES for a in hardware.accelerators())
    for name in vendor:
        assert "memory_basis vendor" in hardware.get(name).source


def test_accelerator_parse_checks_the_new_columns():
    base = dict(_row_of("H100 SXM5"))
    for column, value, match in (("memory_basis", "usable", "memory_basis"),
                                 ("memory_basis", "", "memory_basis"),
                                 ("max_shared_per_sm_kib", "300", "max_shared_per_sm_kib"),
                                 ("peak_clock_mhz", "2500", "peak_clock_mhz")):
        with pytest.raises(ValueError, match=match):
            hardware._parse(dict(base, **{column: value}), 2)


def _row_of(name):
    import csv
    rows = csv.DictReader((ROOT / "gpumodel" / "data" / "accelerators.csv").read_text().splitlines())
    return next(r for r in rows if r["name"] == name)


# --- every row that names hardware joins (issue 24) ---------------------------------------------

#: Data files and the column that names hardware in each. A row with the value in the third
#: element names no board (the post's own latencies, given for 'Ampere GPUs').
HARDWARE_COLUMNS = (("measurements.csv", "hardware", ()), ("collectives.csv", "hardware", ()),
                    ("latencies.csv", "gpu", ("post",)))


def _data_rows(filename):
    import csv
    return list(csv.DictReader((ROOT / "gpumodel" / "data" / filename).read_text().splitlines()))


@pytest.mark.parametrize("filename,column,no_board", HARDWARE_COLUMNS, ids=lambda x: str(x))
def test_every_row_that_names_hardware_joins(filename, column, no_board):
    """Each name is a row of accelerators.csv or of the one alias table, hardware_aliases.csv."""
    unjoined = sorted({r[column] for r in _data_rows(filename)
                       if r[column] not in no_board and not hardware.joins(r[column])})
    assert not unjoined, f"{filename}: {unjoined} join neither accelerators.csv nor hardware_aliases.csv"


def test_every_data_file_naming_hardware_is_checked():
    """A data file with a hardware-naming column is in HARDWARE_COLUMNS."""
    import csv
    checked = {f for f, _, _ in HARDWARE_COLUMNS} | {"accelerators.csv", "hardware_aliases.csv"}
    for path in sorted((ROOT / "gpumodel" / "data").glob("*.csv")):
        header = next(csv.reader(path.read_text().splitlines()))
        if {"hardware", "gpu", "accelerator"} & set(header):
            assert path.name in checked, path.name


def test_every_data_row_has_as_many_fields_as_its_header():
    """An unquoted comma silently cut a detail short before (the reader drops extra fields)."""
    import csv
    for path in sorted((ROOT / "gpumodel" / "data").glob("*.csv")):
        rows = list(csv.reader(path.read_text().splitlines()))
        bad = [(i + 1, r[0]) for i, r in enumerate(rows) if len(r) != len(rows[0])]
        assert not bad, f"{path.name}: lines with a wrong field count {bad}"


def test_every_alias_has_a_reason_a_die_and_a_source():
    for alias in hardware.aliases().values():
        assert len(alias.reason) > 40, alias.name
        assert alias.die and alias.source, alias.name
        assert alias.name not in hardware.names(), alias.name
        for target in (alias.peak_as, alias.memory_as):
            assert target is None or target in hardware.names(), alias.name
        keys = re.findall(r"\[([A-Za-z0-9_]+)\]", alias.source)
        assert keys and set(keys) <= bib_keys(), alias.name


def test_every_alias_is_used_by_data_or_by_a_reader_file():
    """No alias without a user: a data row names it, or measurements/run.py may write it."""
    named = {r[c] for f, c, _ in HARDWARE_COLUMNS for r in _data_rows(f)}
    import importlib.util

    spec = importlib.util.spec_from_file_location("measure_run", ROOT / "measurements" / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    readers = set(run.DEVICE_NAMES.values())
    assert {"A100 80GB PCIe", "H800"} <= readers
    assert set(hardware.aliases()) <= named | readers


def test_alias_dicts_of_the_calibration_come_from_the_one_table():
    from gpumodel import calibration, validate
    table = hardware.aliases()
    assert calibration.DIE_ALIASES == {n: a.die for n, a in table.items()}
    assert calibration.PEAK_ALIASES == {n: a.peak_as for n, a in table.items() if a.peak_as}
    assert calibration.MEMORY_ALIASES == {n: a.memory_as for n, a in table.items() if a.memory_as}
    assert validate.PEAK_ALIASES is calibration.PEAK_ALIASES
    assert validate.MEMORY_ALIASES is calibration.MEMORY_ALIASES
    assert calibration.die("A100 80GB") == "GA100" and calibration.die("V100 SXM3 32GB") == "GV100"


def test_alias_parse_rejects_bad_rows(monkeypatch):
    from importlib import resources
    good = (resources.files("gpumodel") / "data" / "hardware_aliases.csv").read_text()
    header = good.splitlines()[0]
    cases = ((header + "\nGH200,GH100,H100 SXM9,,why not,[x]\n", "peak_as"),
             (header + "\nGH200,GH100,,,,[x]\n", "reason"),
             (header + "\nH100 SXM5,GH100,,,a reason,[x]\n", "already"))

    class Fake:
        def __init__(self, text):
            self.text = text

        def joinpath(self, _):
            return self

        def read_text(self):
            return self.text
    for text, match in cases:
        hardware._load_aliases.cache_clear()
        monkeypatch.setattr(hardware.resources, "files", lambda _pkg, t=text: Fake(t))
        try:
            with pytest.raises(ValueError, match=match):
                hardware._load_aliases()
        finally:
            monkeypatch.undo()
            hardware._load_aliases.cache_clear()


def test_collective_algorithm_labels_say_what_the_source_records():
    """H200 sweep: NVLS only where the source's NCCL log says NVLS ran (2 MiB and up)."""
    for r in measured.collectives("torchdist.h200x8."):
        expected = "NVLS (SIMPLE)" if r["size_bytes"] >= 2 * 2**20 else "ring (LL); NVLS enabled"
        assert r["algorithm"] == expected, r["id"]
        assert "DERIVED" not in r["detail"] and "time_us" not in r["detail"]


def test_sparse_marlin_rows_cite_the_files_that_hold_them():
    for r in measured.measurements("sparse.llama3_8b."):
        assert r["source"] == "torchao2024sparsemarlin"
        assert "torchao/quantization/README.md @ 65d86c6c" in r["detail"]
        assert "benchmark_results.txt" in r["detail"]
    assert "float16" in measured.measurements("sparse.llama3_8b.a100_80.int4_sparse")[0]["detail"]
    assert "bfloat16" in measured.measurements("sparse.llama3_8b.a100_80.int4")[0]["detail"]
    for r in measured.measurements("gptfast."):
        assert "0f925b5" not in r["detail"] and "32971d3" in r["detail"]


def test_no_two_citations_read_alike():
    """Author-year labels must tell sources apart: [NVIDIA, 2020a] and [NVIDIA, 2020b], not two
    [NVIDIA, 2020]. ``tools/bib_years.py`` adds the letters; run it after adding entries."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("bib_years", ROOT / "tools" / "bib_years.py")
    bib_years = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bib_years)
    from pybtex.database import parse_file
    labels = {}
    for path in sorted((ROOT / "book" / "bib").glob("*.bib")):
        for key, entry in parse_file(path).entries.items():
            label = (bib_years.label(entry), entry.fields.get("year"))
            assert label not in labels, f"{key} and {labels[label]} both cite as {label}"
            labels[label] = key


def test_no_source_is_in_the_bibliography_twice():
    from pybtex.database import parse_file
    urls = {}
    for path in sorted((ROOT / "book" / "bib").glob("*.bib")):
        for key, entry in parse_file(path).entries.items():
            url = entry.fields.get("url", "").rstrip("/")
            if url and "#" not in url:
                assert url not in urls, f"{key} and {urls[url]} are the same source ({url})"
                urls[url] = key
