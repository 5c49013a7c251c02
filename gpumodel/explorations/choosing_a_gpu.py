"""Explorations, tables and figures of the chapter :doc:`/book/choosing_a_gpu`."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from .. import (_checks, calibration, charts, cost, hardware, measured, memory, throughput, validate,
               workloads)
from ..explore import Choice, Exploration, Slider, check_direct_calls
from ..units import GB, GiB, dtype_bytes

#: Cards drawn in the decoding exploration.
DECODE_CARDS = ("RTX 4090", "RTX 5090", "A100 SXM4 80GB", "H100 SXM5", "B200")
#: Models of the decoding exploration: Llama 3 8B and 70B (Grattafiori et al. 2024).
LLAMA3 = {"8B": {"layers": 32, "d_model": 4096, "d_ff": 14336, "heads": 32, "kv_heads": 8,
                 "vocab": 128256},
          "70B": {"layers": 80, "d_model": 8192, "d_ff": 28672, "heads": 64, "kv_heads": 8,
                  "vocab": 128256}}
DECODE_BATCHES = 2 ** np.arange(0, 9)
#: Largest batch the BERT-large L2 check takes (its token count must stay a float64 count).
MAX_BATCH = 10**6
WEIGHT_BITS = {"16-bit": 16.0, "8-bit": 8.0, "4-bit (+ scales)": 4.5}


def _card_name(name: str, value) -> str:
    return _checks.choice(name, value, hardware.names())


def _gpus(include_tpus: bool = False) -> list:
    return [a for a in hardware.accelerators() if include_tpus or a.kind == "gpu"]


# --- today's model ----------------------------------------------------------------------------

def kernel_frame(workload: str, accelerator: str, batch=None, top: int = 8,
                 formatted: bool = True) -> pd.DataFrame:
    """The kernels of one step on one card, largest first: ms per step, share, regime, intensity.

    ``formatted=False`` keeps the columns as numbers (share as a fraction).
    """
    top, formatted = _checks.count("top", top), _checks.flag("formatted", formatted)
    table = throughput.kernels_for(workload, batch)
    engine = throughput.DEFAULT_ENGINE[workload]
    ms = throughput.kernel_times(table, [accelerator], engine=engine)[:, 0] * 1e3
    rates = throughput.achieved_rates([accelerator], engine=engine)
    kinds = np.array(table["kind"])
    compute = table["flops"] / np.where(kinds == "conv", rates["conv"][0], rates["gemm"][0])
    memory_s = table["bytes"] / np.where(kinds == "weights", rates["weights"][0],
                                         rates["stream"][0])
    bound = np.where(compute >= memory_s, "compute", "memory")
    bound = np.where(np.maximum(compute, memory_s) < rates["floor"][0], "overhead", bound)
    intensity = np.divide(table["flops"], table["bytes"])
    frame = pd.DataFrame({"kernel": table["kernel"], "ms per step": ms,
                          "share": ms / ms.sum(), "FLOP/byte": intensity, "bound": bound})
    frame = frame.sort_values("ms per step", ascending=False).head(top)
    if not formatted:
        return frame.set_index("kernel")
    return frame.assign(**{"ms per step": frame["ms per step"].map("{:,.2f}".format),
                           "share": frame["share"].map("{:.1%}".format),
                           "FLOP/byte": frame["FLOP/byte"].map("{:,.0f}".format)}
                        ).set_index("kernel")


def regime_shares(workload: str, accelerator: str, batch=None) -> dict:
    """Share of one step's time in compute-, memory- and overhead-bound kernels on one card."""
    split = throughput.time_by_regime(throughput.kernels_for(workload, batch), [accelerator],
                                      engine=throughput.DEFAULT_ENGINE[workload])
    total = sum(float(v[0]) for v in split.values())
    return {k: float(v[0]) / total for k, v in split.items()}


def l2_check_frame(batch: int = 32, cards=("V100 SXM2 16GB", "RTX 4090", "A100 SXM4 40GB",
                                             "H100 SXM5", "B200")) -> pd.DataFrame:
    """Intensity of BERT-large's weight GEMMs with the traffic L2 allows, against each card's ridge."""
    batch = _checks.count("batch", batch, MAX_BATCH)
    cards = _checks.items("cards", cards, _card_name)
    arch = throughput.BERT_LARGE_SQUAD
    tokens = batch * arch["seq"]
    rows = []
    for name in cards:
        acc = hardware.get(name)
        ridge = float(acc.ridge_point("fp16"))
        worst = np.inf
        for m, k, n in memory.bert_large_matmuls(tokens).values():
            traffic = memory.dram_traffic(m, k, n, 128, 128, acc.sm_count, acc.l2_bytes)
            worst = min(worst, float(memory.matmul_flops(m, k, n) / traffic))
        rows.append({"accelerator": name, "L2 (MiB)": f"{acc.l2_cache_mib:g}",
                     "lowest GEMM intensity (FLOP/byte)": f"{worst:,.0f}",
                     "ridge (FLOP/byte)": f"{ridge:,.0f}",
                     "bound": "compute" if worst >= ridge else "memory"})
    return pd.DataFrame(rows).set_index("accelerator")


# --- the ranking, with a slider -----------------------------------------------------------------

def ranking(workload, share_scale):
    """Every GPU's modelled throughput relative to the reference card for one workload, with
    every fitted and measured share of the Tensor Core peak multiplied by ``share_scale``; each
    at the largest batch it holds, cards that hold none left out."""
    cal = calibration.with_constants(share_scale=share_scale)
    rows = [r for r in throughput.rank(workload, accelerators=_gpus(), calibration=cal)
            if r["batch"] > 0]
    return {"gpu": [r["accelerator"] for r in rows],
            "relative": [r["relative_throughput"] for r in rows],
            "low": [r["band_low"] for r in rows], "high": [r["band_high"] for r in rows],
            "reference": [r["accelerator"] == throughput.REFERENCE for r in rows]}


_FASTEST_FIRST = alt.EncodingSortField("relative", order="descending")


def ranking_chart(base):
    bars = base.mark_bar().encode(
        x=alt.X("relative:Q", title=f"throughput relative to the {throughput.REFERENCE}",
                scale=alt.Scale(domain=[0, 6])),
        y=alt.Y("gpu:N", title=None, sort=_FASTEST_FIRST),
        color=alt.condition("datum.reference", alt.value(charts.VERMILLION), alt.value(charts.BLUE)),
        tooltip=["gpu:N", alt.Tooltip("relative:Q", format=".2f"),
                 alt.Tooltip("low:Q", format=".2f", title="10th percentile"),
                 alt.Tooltip("high:Q", format=".2f", title="90th percentile")])
    whiskers = base.mark_rule(color=charts.GREYS[1], clip=True).encode(
        x="low:Q", x2="high:Q", y=alt.Y("gpu:N", sort=_FASTEST_FIRST))
    return (bars + whiskers).properties(width=380, height=330)


RANKING = Exploration(
    name="gpu_ranking",
    compute=ranking,
    params=(Choice("workload", "workload", throughput.WORKLOADS, "transformer-train"),
            Slider("share_scale", "shares of the Tensor Core peak, x the fitted ones", 0.5,
                   1.2, 0.05, 1.0, grid_step=0.1)),
    chart=ranking_chart,
    description="Bar chart: every GPU in the hardware table (one bar each, fastest at the top) ranked "
                "by the step model's throughput relative to the reference card (its bar in "
                "vermillion) for one workload: BERT-large training at up to 32 sequences of 384 "
                "tokens, ResNet-50 training at up to 256 images (each card at the largest batch "
                "its memory holds), or Llama 3 8B decoding one 16-bit sequence (cards that "
                "cannot hold the weights left out); "
                "a grey line across each bar spans the 10th to 90th percentile of the model's "
                "left-out error on that workload's measured rows.",
)


def rank_frame(workload: str, top: int | None = None, prices=None) -> pd.DataFrame:
    """The ranking as a table: relative throughput with its 80% range (10th to 90th percentile
    of the left-out error, :func:`gpumodel.throughput.band`), the batch each card holds,
    usable memory, price and value per $1,000. TPUs are left out of decoding: its model uses
    llama.cpp's fitted constants, and llama.cpp does not run on TPUs."""
    if top is not None:
        top = _checks.count("top", top)
    workload = _checks.choice("workload", workload, throughput.WORKLOADS)
    rows = throughput.rank(workload, accelerators=_gpus(workload != "llm-decode"),
                           prices=prices)
    frame = pd.DataFrame([{
        "accelerator": r["accelerator"], "batch": r["batch"] or "does not fit",
        "relative": f"{r['relative_throughput']:.2f}" if r["batch"] else "-",
        "80% range": "-" if r["band_low"] == r["band_high"] else
        f"{r['band_low']:.2f}-{r['band_high']:.2f}",
        "memory (GiB)": f"{r['usable_memory_gib'] or r['memory_gib']:.0f}",
        "price ($)": "-" if r["price_usd"] is None else f"{r['price_usd']:,.0f}",
        "per $1,000": "-" if r["relative_per_1000_usd"] is None or not r["batch"]
        else f"{r['relative_per_1000_usd']:.3f}"} for r in rows])
    return frame.set_index("accelerator").head(top)


# --- the post's method and measured reality -------------------------------------------------------

PREDICTOR_LABELS = {"model": "step model", "bandwidth": "bandwidth ratio",
                    "peak": "16-bit peak ratio"}


def validation_frame(workload: str) -> pd.DataFrame:
    """Measured and predicted throughput relative to the workload's reference card, per card,
    with the prediction's 10th-90th percentile range from the left-out error."""
    rows = throughput.validation(workload)
    rivals = {p: throughput.validation(workload, p) for p in ("bandwidth", "peak")}
    ref = throughput.VALIDATION[workload][1]
    out = []
    for i, r in enumerate(rows):
        model = r["predicted_relative"]
        out.append({"accelerator": r["accelerator"], "batch": r["batch"],
                    "measured": f"{r['measured_relative']:.2f}",
                    "model": f"{model:.2f}",
                    "80% range": "-" if r["accelerator"] == ref else
                    "{:.2f}-{:.2f}".format(*throughput.band_bounds(model, workload)),
                    "error": f"{r['error']:+.0%}",
                    "bandwidth ratio": f"{rivals['bandwidth'][i]['predicted_relative']:.2f}",
                    "peak ratio": f"{rivals['peak'][i]['predicted_relative']:.2f}"})
    return pd.DataFrame(out).set_index("accelerator")


def error_summary() -> pd.DataFrame:
    """Median absolute error of each predictor on each workload (cards other than the reference)."""
    rows = {PREDICTOR_LABELS[p]: {w: f"{throughput.median_error(w, p):.0%}"
                                  for w in throughput.WORKLOADS}
            for p in throughput.PREDICTORS}
    return pd.DataFrame(rows).T


def validation_points() -> pd.DataFrame:
    """Every workload's predicted and measured relative throughput, one row per card."""
    rows = []
    for w in throughput.WORKLOADS:
        for r in throughput.validation(w):
            rows.append({"workload": w, "gpu": r["accelerator"],
                         "measured": r["measured_relative"],
                         "predicted": r["predicted_relative"], "error": r["error"]})
    return pd.DataFrame(rows)


def validation_chart():
    """Predicted against measured relative throughput, log-log, with the line of perfect prediction."""
    data = validation_points()
    scale = alt.Scale(type="log", domain=[0.2, 6])
    low, high = throughput.band()
    band = charts.error_band_area(0.2, 6.0, low, high, scale)
    points = alt.Chart(data).mark_point(filled=True, size=70).encode(
        x=alt.X("measured:Q", title="measured, relative to the A100 SXM4 80GB", scale=scale),
        y=alt.Y("predicted:Q", title="predicted (step model)", scale=scale),
        color=alt.Color("workload:N"),
        shape=alt.Shape("workload:N"),
        tooltip=["workload:N", "gpu:N", alt.Tooltip("measured:Q", format=".2f"),
                 alt.Tooltip("predicted:Q", format=".2f"), alt.Tooltip("error:Q", format="+.0%")])
    line = charts.identity_line(0.2, 6.0, scale)
    return (band + line + points).properties(
        width=360, height=320,
        description="Scatter plot, log-log: each point is one GPU and workload, measured throughput "
                    "relative to the A100 SXM4 80GB (x) against the step model's prediction (y); "
                    "colour and shape give the workload; points on the dashed diagonal are predicted "
                    f"exactly; the grey band holds errors from {low:+.0%} to {high:+.0%}, the 10th "
                    "to 90th percentile of the error of these ratios with each chip left out of "
                    "the fit.")


def post_method_frame() -> pd.DataFrame:
    """Lambda's BERT-large runs: measured at each card's batch, and corrected to the A100's batch
    with the guide's 13.6% per batch doubling."""
    rows = throughput.validation("transformer-train")
    ref = next(r for r in rows if r["accelerator"] == "A100 SXM4 80GB")
    out = []
    for r in rows:
        corrected = float(memory.batch_corrected_speedup(
            r["measured"], ref["measured"], r["batch"], ref["batch"]))
        out.append({"accelerator": r["accelerator"], "batch": r["batch"],
                    "measured": f"{r['measured_relative']:.2f}",
                    "at batch 112 (guide's rule)": f"{corrected:.2f}",
                    "model at its batch": f"{r['predicted_relative']:.2f}",
                    "model at batch 112": f"{_model_at(r['accelerator'], ref['batch']):.2f}"})
    return pd.DataFrame(out).set_index("accelerator")


def _model_at(name: str, batch: int) -> float:
    return float(throughput.relative_throughput("transformer-train", [name], "A100 SXM4 80GB",
                                                batch)[0])


# --- decoding --------------------------------------------------------------------------------

def decode_speed(model, weight_format, context):
    """Tokens/s summed over the batch against batch size for a few cards, where the batch fits."""
    arch = LLAMA3[model]
    bits = WEIGHT_BITS[weight_format]
    kv = throughput.kv_cache_bytes(context, arch["layers"], arch["d_model"], arch["heads"],
                                   arch["kv_heads"])
    weight_bytes = throughput.weight_bytes(bits, **arch)
    cards = [hardware.get(n) for n in DECODE_CARDS]
    names = [a.name for a in cards for _ in DECODE_BATCHES]
    batch = np.tile(DECODE_BATCHES, len(cards))
    speed = throughput.decode_throughput(cards, DECODE_BATCHES, context=context,
                                         weight_bits=bits, **arch).ravel()
    usable = np.repeat([a.usable_memory_bytes for a in cards], DECODE_BATCHES.size)
    fits = workloads.inference_memory_bytes(weight_bytes, kv, batch) <= usable
    gpus = [n for n, f in zip(names, fits) if f]
    batches, speeds = list(batch[fits]), list(speed[fits])
    return {"gpu": gpus, "batch": batches, "tokens_per_s": speeds}


def decode_speed_chart(base):
    return base.mark_line(point=True, clip=True).encode(
        x=alt.X("batch:Q", title="sequences decoded together (batch)",
                scale=alt.Scale(type="log", base=2, domain=[1, 256])),
        y=alt.Y("tokens_per_s:Q", title="tokens/s, all sequences (log scale)",
                scale=alt.Scale(type="log", domain=[1, 100000])),
        color=alt.Color("gpu:N", scale=alt.Scale(domain=list(DECODE_CARDS))),
        strokeDash=alt.StrokeDash("gpu:N", scale=alt.Scale(domain=list(DECODE_CARDS))),
        tooltip=["gpu:N", "batch:Q", alt.Tooltip("tokens_per_s:Q", format=",.0f")],
    ).properties(width=400, height=260)


DECODE = Exploration(
    name="decode_speed",
    compute=decode_speed,
    params=(Choice("model", "Llama 3", tuple(LLAMA3), "8B"),
            Choice("weight_format", "weights", tuple(WEIGHT_BITS), "16-bit"),
            Choice("context", "context (tokens)", (2048, 8192, 32768), 8192)),
    chart=decode_speed_chart,
    description="Line chart, log-log: modelled decoding speed (tokens/s summed over the batch, y) "
                "against the number of sequences decoded together (x), one line per card (colour and "
                "dash pattern); each line stops where weights plus the batch's key/value caches no "
                "longer fit in the card's usable memory.",
)


def memory_kind(name: str) -> str:
    """GDDR for the GeForce and workstation cards (RTX, L40S), HBM for the data-center GPUs."""
    return "GDDR" if _checks.text("name", name).startswith(("RTX", "L40")) else "HBM"


def decode_shares() -> dict:
    """llama.cpp's measured 16-bit Llama 3 8B decoding: bytes moved per second as a share of
    each card's DRAM bandwidth (the modelled bytes per token x measured tokens/s)."""
    out = {}
    for r in measured.measurements("decode.llama3_8b_f16."):
        table = throughput.kernels_for("llm-decode", 1, **throughput._decode_options(r))
        moved = r["value"] * float(table["bytes"] @ table["launches"])
        out[r["hardware"]] = moved / hardware.get(r["hardware"]).bandwidth
    return out


def decode_bound_frame() -> pd.DataFrame:
    """llama.cpp's measured 16-bit Llama 3 8B decoding against each card's bandwidth."""
    rows = []
    shares = decode_shares()
    for r in measured.measurements("decode.llama3_8b_f16."):
        options = throughput._decode_options(r)
        bound = float(throughput.throughput("llm-decode", [r["hardware"]], 1, **options)[0])
        acc = hardware.get(r["hardware"])
        rows.append({"accelerator": r["hardware"], "memory": memory_kind(acc.name),
                     "bandwidth (GB/s)": f"{acc.memory_bandwidth_gbs:,.0f}",
                     "modelled (tokens/s)": f"{bound:.1f}", "measured": f"{r['value']:.1f}",
                     "bytes read (GB/s)": f"{shares[r['hardware']] * acc.bandwidth / GB:,.0f}",
                     "share of bandwidth": f"{shares[r['hardware']]:.0%}"})
    return pd.DataFrame(rows).set_index("accelerator")


def constants_frame() -> pd.DataFrame:
    """The step model's fitted constants, as :func:`gpumodel.calibration.constants_table` lists them."""
    frame = pd.DataFrame(calibration.constants_table()).set_index("constant")
    return frame.assign(value=frame["value"].map("{:.4g}".format))


#: The calibration constant of each decoding engine's bytes in flight per SM.
IN_FLIGHT_CONSTANTS = {"llama.cpp": "llamacpp_bytes_in_flight", "compiled": "compiled_bytes_in_flight"}


def decode_cap(accelerator: str, engine: str = "llama.cpp") -> dict:
    """Little's law for a decoding kernel on one card: DRAM latency (ns), the rate its bytes in
    flight sustain (GB/s), the streaming rate (GB/s), and the rate it gets as a share of the
    datasheet bandwidth."""
    cal = calibration.default()
    acc = hardware.get(accelerator)
    key = IN_FLIGHT_CONSTANTS[_checks.choice("engine", engine, IN_FLIGHT_CONSTANTS)]
    cap = acc.sm_count * cal.constants[key] / cal.latency(acc)
    rates = throughput.achieved_rates([acc], engine=engine)
    return {"latency_ns": cal.latency(acc) * 1e9, "cap_gbs": cap / GB,
            "stream_gbs": rates["stream"][0] / GB, "share": rates["weights"][0] / acc.bandwidth}


def overrating(workload: str) -> dict:
    """Modelled over measured absolute throughput per card (how much the model overrates each)."""
    return {r["accelerator"]: r["predicted"] / r["measured"]
            for r in throughput.validation(workload)}


def graph_node_share(row_id: str) -> float:
    """Share of a llama.cpp decoding row's modelled token time that is the fixed time per
    kernel of its CUDA graph (the fitted ``llamacpp_node_seconds`` x the kernels per token)."""
    rows = [r for r in measured.measurements(_checks.text("row_id", row_id)) if r["id"] == row_id]
    if not rows or not row_id.startswith("decode."):
        raise ValueError(f"row_id must name one measured decode.* row (got {row_id!r})")
    table = throughput.decode_row_kernels(rows[0])
    step = throughput.step_parts(table, [rows[0]["hardware"]], engine="llama.cpp")["step"][0]
    node = calibration.default().constants["llamacpp_node_seconds"]
    return float(np.sum(table["launches"]) * node / step)


def reference_frame(references=("A100 SXM4 80GB", "RTX 4090")) -> pd.DataFrame:
    """Median absolute error of the model per workload, relative to each reference card."""
    references = _checks.items("references", references, _card_name)
    try:
        rows = {f"relative to the {ref}": {w: f"{throughput.median_error(w, 'model', ref):.0%}"
                                          for w in throughput.WORKLOADS} for ref in references}
    except ValueError as err:  # median_error names its own parameter, reference
        raise ValueError(f"references: {err}") from None
    return pd.DataFrame(rows).T


def elementwise_bytes_per_token() -> dict:
    """Forward bytes per token and layer of BERT-large's elementwise passes: over the
    attention scores, and over the layer's other activations."""
    arch = throughput.BERT_LARGE_SQUAD
    size = {"scores": arch["heads"] * arch["seq"], "width": arch["d_model"],
            "ffn": arch["d_ff"]}
    out = {"scores": 0.0, "other": 0.0}
    for kind, passes in throughput.TRANSFORMER_ELEMENTWISE.values():
        out["scores" if kind == "scores" else "other"] += 2.0 * size[kind] * passes
    for kind, forward, _ in throughput.ATTENTION_OPS.values():
        out["scores" if kind == "scores" else "other"] += 2.0 * size[kind] * forward
    return out


# --- memory -----------------------------------------------------------------------------------

def _lambda_batches() -> list[dict]:
    """Per Lambda BERT-large run on a card with a known usable memory: the card, its usable bytes,
    the batch run, the largest batch the memory model fits and the model's need at the batch run."""
    params = workloads.encoder_params()
    arch = throughput.BERT_LARGE_SQUAD
    shape = (arch["layers"], arch["d_model"], arch["heads"], arch["seq"])
    out = []
    for r in measured.measurements("lambda.bert_large."):
        usable = hardware.get(r["hardware"]).usable_memory_bytes
        if usable is None:
            continue
        out.append({"card": r["hardware"], "usable": usable, "batch": int(r["batch"]),
                    "fit": float(workloads.max_training_batch(usable, params, *shape)),
                    "need": float(workloads.training_memory_bytes(params, *shape, int(r["batch"])))})
    return out


def lambda_batch_fill() -> dict:
    """Per card with a known usable memory: modelled need at the batch run as a share of usable
    memory ("need"), and the largest modelled batch over the batch run ("headroom")."""
    runs = _lambda_batches()
    return {"need": [r["need"] / r["usable"] for r in runs],
            "headroom": [r["fit"] / r["batch"] for r in runs]}


def lambda_batch_frame() -> pd.DataFrame:
    """Lambda's BERT-large batch per card against the largest batch the memory model fits."""
    rows = [{"accelerator": r["card"], "usable (GiB)": f"{r['usable'] / GiB:.1f}",
             "batch run": r["batch"], "largest batch modelled": int(r["fit"]),
             "modelled need at that batch": f"{r['need'] / r['usable']:.0%} of usable"}
            for r in _lambda_batches()]
    return pd.DataFrame(rows).set_index("accelerator")


#: Jobs whose memory the chapter computes: (label, kind, settings).
JOBS = (
    ("fine-tune BERT-base, 32 x 128 tokens", "train",
     {"layers": 12, "d_model": 768, "d_ff": 3072, "heads": 12, "seq": 128, "batch": 32}),
    ("fine-tune BERT-large, 32 x 384 tokens", "train",
     {"layers": 24, "d_model": 1024, "d_ff": 4096, "heads": 16, "seq": 384, "batch": 32}),
    ("train GPT-2 XL (1.5B), 8 x 1024 tokens", "train",
     {"layers": 48, "d_model": 1600, "d_ff": 6400, "heads": 25, "seq": 1024, "batch": 8,
      "vocab": 50257, "positions": 1024}),
    ("serve Llama 3 8B, 16-bit, 8k context", "serve", {"model": "8B", "bits": 16.0}),
    ("serve Llama 3 8B, 4-bit, 8k context", "serve", {"model": "8B", "bits": 4.5}),
    ("serve Llama 3 70B, 4-bit, 8k context", "serve", {"model": "70B", "bits": 4.5}),
)


def job_memory_gib(kind: str, settings: dict) -> float:
    """Memory one job needs, GiB: training state plus activations, or weights plus one 8k KV cache."""
    kind = _checks.choice("kind", kind, ("train", "serve"))
    needed = ("layers", "d_model", "d_ff", "heads", "seq", "batch") if kind == "train" else ("model", "bits")
    if not isinstance(settings, dict) or not set(needed) <= set(settings):
        raise ValueError(f"settings must be a dict with {', '.join(needed)} for a {kind} job "
                         f"(got {settings!r:.80})")
    if kind == "serve":
        _checks.choice("settings['model']", settings["model"], LLAMA3)
    try:
        return _job_memory_gib(kind, settings)
    except ValueError as err:
        raise ValueError(f"settings: {err}") from None


@_checks.finite_result
def _job_memory_gib(kind: str, settings: dict) -> float:
    if kind == "train":
        s = dict(settings)
        params = workloads.encoder_params(s["layers"], s["d_model"], s["d_ff"],
                                          s.get("vocab", 30522), s.get("positions", 512))
        need = workloads.training_memory_bytes(params, s["layers"], s["d_model"], s["heads"],
                                               s["seq"], s["batch"])
    else:
        arch = LLAMA3[settings["model"]]
        weights = throughput.weight_bytes(settings["bits"], **arch)
        kv = throughput.kv_cache_bytes(8192, arch["layers"], arch["d_model"], arch["heads"],
                                       arch["kv_heads"])
        need = workloads.inference_memory_bytes(weights, kv)
    return float(need) / GiB


def jobs_frame(cards=("RTX 4070 Ti", "RTX 4090", "RTX 5090", "RTX 6000 Ada", "H100 SXM5")):
    """Memory each job needs and which cards' usable memory holds it: "fits" within the largest
    share of usable memory a measured run's modelled need took (the margin those runs kept),
    "tight" only without that margin, "-" not at all."""
    cards = _checks.items("cards", cards, _card_name)
    margin = throughput.fit_margin()
    rows = []
    for label, kind, settings in JOBS:
        need = job_memory_gib(kind, settings)
        row = {"job": label, "needs (GiB)": f"{need:,.1f}"}
        for name in cards:
            acc = hardware.get(name)
            have = (acc.usable_memory_bytes or acc.memory_bytes) / GiB
            row[name] = "fits" if need <= margin * have else "tight" if need <= have else "-"
        rows.append(row)
    return pd.DataFrame(rows).set_index("job")


#: The 2020 guide's rules of thumb (a reader's notes, seed 002), in GB.
MEMORY_RULES = (("Kaggle competitions", 8), ("prototyping networks", 10),
                ("applying computer vision", 10),
                ("pretrained transformers; training small ones from scratch", 11),
                ("training large transformers or CNNs in research or production", 24))


# --- money ------------------------------------------------------------------------------------

def value_frame(workload: str = "transformer-train", years: float = 5.0,
                utilization: float = 0.15, usd_per_kwh: float = 0.175,
                system_usd: float = 0.0, prices=None) -> pd.DataFrame:
    """GPUs with a price: relative throughput per $1,000 of card, and of card plus electricity."""
    years, utilization = _checks.scalar("years", years), _checks.scalar("utilization", utilization)
    usd_per_kwh = _checks.scalar("usd_per_kwh", usd_per_kwh)
    system_usd = float(_checks.non_negative("system_usd", _checks.scalar("system_usd", system_usd)))
    rows = []
    for r in throughput.rank(workload, accelerators=_gpus(), prices=prices):
        if r["price_usd"] is None or not r["batch"]:
            continue
        acc = hardware.get(r["accelerator"])
        total = cost.ownership_usd(r["price_usd"] + system_usd, acc.tdp_w, utilization, years,
                                   usd_per_kwh)
        per = float(cost.per_dollar(r["relative_throughput"], total))
        scale = per / r["relative_throughput"]
        rows.append({"accelerator": r["accelerator"], "relative": r["relative_throughput"],
                     "price ($)": r["price_usd"], "power (W)": acc.tdp_w,
                     "owned cost ($)": float(total), "per $1,000 owned": per,
                     "low": r["band_low"] * scale, "high": r["band_high"] * scale})
    frame = pd.DataFrame(rows).sort_values("per $1,000 owned", ascending=False)
    return frame.set_index("accelerator")


def show_value(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`value_frame` with its numbers formatted for printing, the value's 10th-90th
    percentile range in one column."""
    _checks.table("frame", frame, ("relative", "price ($)", "power (W)", "owned cost ($)",
                                   "per $1,000 owned", "low", "high"))
    likely = [f"{a:.3f}-{b:.3f}" for a, b in zip(frame["low"], frame["high"])]
    return frame.drop(columns=["low", "high"]).assign(**{
        "relative": frame["relative"].map("{:.2f}".format),
        "price ($)": frame["price ($)"].map("{:,.0f}".format),
        "power (W)": frame["power (W)"].map("{:.0f}".format),
        "owned cost ($)": frame["owned cost ($)"].map("{:,.0f}".format),
        "per $1,000 owned": frame["per $1,000 owned"].map("{:.3f}".format),
        "80% range": likely})


def value(workload, years, utilization, usd_per_kwh):
    """Relative throughput per $1,000 of launch price plus electricity, for the GPUs with a price."""
    frame = value_frame(workload, years, utilization, usd_per_kwh)
    return {"gpu": list(frame.index), "value": list(frame["per $1,000 owned"]),
            "owned": list(frame["owned cost ($)"])}


def value_chart(base):
    return base.mark_bar().encode(
        x=alt.X("value:Q", title="relative throughput per $1,000 (card + electricity)",
                scale=alt.Scale(domain=[0, 0.8])),
        y=alt.Y("gpu:N", title=None, sort="-x"),
        tooltip=["gpu:N", alt.Tooltip("value:Q", format=".3f"),
                 alt.Tooltip("owned:Q", format=",.0f", title="owned cost ($)")],
    ).properties(width=360, height=200)


VALUE = Exploration(
    name="gpu_value",
    compute=value,
    params=(Choice("workload", "workload", throughput.WORKLOADS, "transformer-train"),
            Choice("years", "years owned", (1, 3, 5, 7), 5),
            Slider("utilization", "utilization", 0.05, 0.95, 0.05, 0.15, grid_step=0.3),
            Slider("usd_per_kwh", "electricity", 0.05, 0.45, 0.025, 0.175, unit="$/kWh",
                   grid_step=0.1)),
    chart=value_chart,
    description="Bar chart: one bar per GPU whose launch price the table holds, best at the top, "
                "giving modelled relative throughput per $1,000 of launch price plus electricity at "
                "the card's rated power.",
)


# --- cloud or desktop --------------------------------------------------------------------------

DAYS = np.linspace(0.0, 1500.0, 16)


def cloud_vs_desktop(utilization, cloud_usd_per_hour, desktop_usd):
    """Cumulative cost of the desktop and of renting, against days of use."""
    d = cost.POST_DESKTOP
    watts = d["gpu_w"] + d["cpu_w"]
    desk = cost.desktop_usd(desktop_usd, watts, utilization, DAYS, d["usd_per_kwh"])
    cloud = cost.cloud_usd(cloud_usd_per_hour, utilization, DAYS)
    return {"days": np.concatenate([DAYS, DAYS]), "usd": np.concatenate([desk, cloud]),
            "option": ["desktop"] * DAYS.size + ["cloud"] * DAYS.size}


def cloud_vs_desktop_chart(base):
    return base.mark_line(clip=True).encode(
        x=alt.X("days:Q", title="days of ownership"),
        y=alt.Y("usd:Q", title="cumulative cost ($)", scale=alt.Scale(domain=[0, 8000])),
        color=alt.Color("option:N", scale=alt.Scale(domain=["desktop", "cloud"],
                                                    range=[charts.BLUE, charts.ORANGE])),
        strokeDash=alt.StrokeDash("option:N", scale=alt.Scale(domain=["desktop", "cloud"])),
        tooltip=["option:N", alt.Tooltip("days:Q", format=".0f"),
                 alt.Tooltip("usd:Q", format=",.0f")],
    ).properties(width=400, height=240)


CLOUD = Exploration(
    name="cloud_vs_desktop",
    compute=cloud_vs_desktop,
    params=(Slider("utilization", "utilization", 0.05, 0.95, 0.05, 0.15, grid_step=0.1),
            Slider("cloud_usd_per_hour", "cloud price", 0.5, 4.0, 0.02, 2.14,
                   unit="$/h", grid_step=0.5),
            Choice("desktop_usd", "desktop price ($)", (1500, 2200, 3500), 2200)),
    chart=cloud_vs_desktop_chart,
    description="Line chart: cumulative cost in dollars (y) against days of ownership (x) of a 450 W "
                "desktop (solid line, electricity at $0.12/kWh) and of an on-demand cloud instance "
                "used for the same hours (dashed line): the lines cross at the break-even day.",
)


def _positive_number(name: str, value) -> float:
    return float(_checks.positive(name, _checks.scalar(name, value)))


def breakeven_frame(hourly_rates=(1.0, 2.14, 4.0)) -> pd.DataFrame:
    """Break-even days of the guide's desktop against cloud prices, at the guide's utilization presets."""
    hourly_rates = _checks.items("hourly_rates", hourly_rates, _positive_number)
    d = cost.POST_DESKTOP
    watts = d["gpu_w"] + d["cpu_w"]
    rows = []
    for label, u in cost.UTILIZATION.items():
        row = {"use": label, "utilization": f"{u:.1%}"}
        for rate in hourly_rates:
            try:
                days = cost.breakeven_days(d["desktop_usd"], watts, d["usd_per_kwh"], rate, u)
            except ValueError as err:
                raise ValueError(f"hourly_rates: {err}") from None
            row[f"${rate:.2f}/h"] = f"{float(days):,.0f} days"
        rows.append(row)
    return pd.DataFrame(rows).set_index("use")


EXPLORATIONS = [RANKING, DECODE, CLOUD, VALUE]


# --- a modern case: Llama 3 8B pre-training ----------------------------------------------------

def llm_train_rows() -> list[dict]:
    """The scored Llama 3 8B pre-training rows: id, hardware, measured, predicted, rel_error."""
    return [r for r in validate.rows(chapter="choosing_a_gpu")
            if r["workload"] == "LLM pre-training"]


def llm_train_frame() -> pd.DataFrame:
    """Measured and modelled tokens/s per GPU of the Llama 3 8B pre-training runs, with each
    run's MFU (:func:`gpumodel.workloads.model_flops_utilization` with PaLM's count of model
    FLOP per token, the one torchtitan reports) against the card's dense BF16 peak."""
    cfg = workloads.LLAMA3_8B
    params = workloads.transformer_params(**cfg, input_embedding=False)
    per_token = workloads.training_flops_per_token(params, cfg["layers"], cfg["d_model"],
                                                   throughput.LLAMA_TRAIN_SEQ)
    out = []
    for r in llm_train_rows():
        row = next(m for m in measured.measurements(r["id"]) if m["id"] == r["id"])
        acc = hardware.get(r["hardware"])
        engine = "torch.compile" if "compile" in row["what"] else "eager"
        mfu = workloads.model_flops_utilization(r["measured"], per_token,
                                                acc.peak_flops("bf16"))
        out.append({"run": r["id"], "card": acc.name, "GPUs": int(row["gpus"]),
                    "batch": int(row["batch"]), "engine": engine,
                    "measured (tokens/s)": f"{r['measured']:,.0f}",
                    "model (tokens/s)": f"{r['predicted']:,.0f}",
                    "error": f"{r['rel_error']:+.0%}", "MFU": f"{mfu:.0%}"})
    return pd.DataFrame(out).set_index("run")


def fp8_linear_shares(accelerator: str = "H100 SXM5") -> dict:
    """Of a Llama 3 8B pre-training step as compiled (flash attention, recomputation), the share
    of the executed FLOP and of the modelled time in the GEMMs that float8 training converts:
    every weight GEMM but the output projection, which torchtitan keeps in BF16."""
    kernels = throughput.llm_train_kernels(1, fused=True)
    acc = hardware.get(accelerator)
    seconds = throughput.kernel_times(kernels, [acc], engine="compiled")[:, 0]
    flops = np.asarray(kernels["flops"], float) * np.asarray(kernels["launches"], float)
    fp8 = np.array([kind == "gemm" and not name.startswith("output projection")
                    for name, kind in zip(kernels["kernel"], kernels["kind"])])
    return {"flop_share": float(flops[fp8].sum() / flops.sum()),
            "time_share": float(seconds[fp8].sum() / seconds.sum())}


@_checks.finite_result
def prefill_ridge_tokens(accelerator: str, k: int, n: int, dtype: str = "bf16") -> float:
    """Prompt tokens from which a (tokens x k) @ (k x n) 16-bit GEMM, counting its activations
    too, reaches the card's ridge point: P >= R b k n / (2 k n - R b (k + n))."""
    k, n = _checks.count("k", k), _checks.count("n", n)
    acc = hardware.get(accelerator)
    ridge = acc.ridge_point(dtype)
    b = dtype_bytes(dtype)
    return float(ridge * b * k * n / (2 * k * n - ridge * b * (k + n)))


check_direct_calls(globals())
