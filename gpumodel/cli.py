"""Command line: ``python -m gpumodel <command>``; ``--json`` for machine-readable output.

Bad input exits with code 2 and one line on stderr.
Explained in :doc:`/book/about` (section "From a terminal").
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

from . import _checks, hardware, memory, throughput, validate
from .units import MiB, TFLOPS


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def _table(rows: list[dict], columns: list[str]) -> str:
    text = [[c for c in columns]] + [[_fmt(r[c]) for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in text) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in text]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return _printable(str(value))


def _printable(text: str) -> str:
    """``text`` with control characters escaped: a reader's file must not drive the terminal."""
    return text if text.isprintable() else ascii(text)[1:-1]


def _list(args) -> tuple[list[dict], list[str]]:
    rows = [r for r in hardware.records() if args.kind in (None, r["kind"])]
    return rows, ["name", "year", "memory_gib", "memory_bandwidth_gbs", "l2_cache_mib", "fp16_tflops",
                  "bf16_tflops", "fp8_tflops", "tdp_w"]


def _show(args) -> tuple[list[dict], list[str]]:
    record = next(r for r in hardware.records() if r["name"] == hardware.get(args.name).name)
    return [{"field": k, "value": v} for k, v in record.items()], ["field", "value"]


def _matmul(args) -> tuple[list[dict], list[str]]:
    acc = hardware.get(args.accelerator)
    m, k, n = args.m, args.k, args.n
    peak = acc.peak_flops(args.dtype)
    traffic = memory.matmul_tile_traffic(m, k, n, args.tile, args.dtype, args.scheme)
    load_s = memory.transfer_seconds(traffic, acc.memory_bandwidth_gbs, args.bandwidth_unit)
    intensity = memory.arithmetic_intensity(m, k, n, args.dtype)
    roof_s = memory.matmul_roofline_seconds(m, k, n, peak, acc.bandwidth, args.dtype)
    ridge = memory.ridge_point(peak, acc.bandwidth)
    row = {"accelerator": acc.name, "m": m, "k": k, "n": n, "dtype": args.dtype, "tile": args.tile,
           "scheme": args.scheme, "tile_loads": float(memory.tile_loads(m, k, n, args.tile, args.scheme)),
           "tile_traffic_mib": float(traffic / MiB), "tile_load_seconds": float(load_s),
           "flop": float(memory.matmul_flops(m, k, n)), "intensity_flop_per_byte": float(intensity),
           "ridge_flop_per_byte": float(ridge), "bound": "compute" if intensity >= ridge else "memory",
           "roofline_seconds": float(roof_s),
           "roofline_tflops": float(memory.matmul_flops(m, k, n) / roof_s / TFLOPS)}
    return [{"quantity": q, "value": v} for q, v in row.items()], ["quantity", "value"]


def _compare(args) -> tuple[list[dict], list[str]]:
    a, b = hardware.get(args.first), hardware.get(args.second)
    rows = [{"quantity": "memory bandwidth (GB/s)", a.name: a.memory_bandwidth_gbs, b.name: b.memory_bandwidth_gbs,
             "ratio": float(memory.bandwidth_ratio(a.memory_bandwidth_gbs, b.memory_bandwidth_gbs))}]
    pa, pb = a.peak_flops(args.dtype) / TFLOPS, b.peak_flops(args.dtype) / TFLOPS
    rows.append({"quantity": f"dense {args.dtype} TFLOPS", a.name: pa, b.name: pb, "ratio": pa / pb})
    ra, rb = float(a.ridge_point(args.dtype)), float(b.ridge_point(args.dtype))
    rows.append({"quantity": "ridge point (FLOP/byte)", a.name: ra, b.name: rb, "ratio": ra / rb})
    return rows, ["quantity", a.name, b.name, "ratio"]


def _rank(args) -> tuple[list[dict], list[str]]:
    rows = throughput.rank(args.workload, reference=args.reference, batch=args.batch)
    return rows, ["accelerator", "workload", "batch", "fits", "relative_throughput",
                  "band_low", "band_high",
                  "memory_gib",
                  "usable_memory_gib", "price_usd", "relative_per_1000_usd"]


def _validate(args) -> tuple[list[dict], list[str], dict]:
    if args.cv:
        if args.measurements or args.model != "book":
            raise ValueError("--cv scores the book's model on the book's data; drop --measurements "
                             "and --model")
        rows = validate.cross_validate(args.chapter)
        return rows, ["id", "chapter", "hardware", "measured", "predicted", "unit", "rel_error",
                      "cv", "left_out"], dict(validate.cv_summary(args.chapter), kind="cv")
    rows, unscored = validate._score(args.model, args.chapter, args.measurements)
    if not rows and not args.measurements:
        raise ValueError("no measured row could be scored (check the ids and hardware names; "
                         "see measurements/README.md)")
    summary = validate.summary(rows)
    if args.measurements:
        summary = dict(summary, unscored=unscored)
    return rows, ["id", "chapter", "hardware", "workload", "measured", "predicted", "unit",
                  "rel_error"], summary


def _cv_text(summary: dict) -> str:
    lines = ["", "left out: a chip (cv=chip: every row of its die withheld from the fit) or, for a "
             "chapter whose rows are all on one die, a workload (cv=workload)",
             "chapter            cv        rows  median in / out   p90 in / out   "
             "within 10% out  within 30% out"]
    items = list(summary["chapters"].items()) + [("overall", dict(summary["overall"], cv="-"))]
    for name, s in items:
        a, b = s["in_sample"], s["left_out"]
        lines.append(f"{name:18s} {s['cv']:8s} {a['rows']:5d}  {a['median']:6.1%} / {b['median']:6.1%}"
                     f"  {a['p90']:6.1%} / {b['p90']:6.1%}  {b['within_10']:14.0%}  "
                     f"{b['within_30']:14.0%}")
    for name, t in summary["tau"].items():
        lines.append(f"Kendall tau, {name} ({t['cards']} cards): in sample {t['in_sample']:.2f}, "
                     f"left out {t['left_out']:.2f}")
    return "\n".join(lines)


def _unscored_text(unscored: list[dict]) -> str:
    lines = ["", f"unscored: {len(unscored)} rows"]
    for r in unscored:
        lines.append(_printable(f"{r['file']}, line {r['line']}: {r['id']!r:.80}: {r['reason']}"))
    return "\n".join(lines)


def _summary_text(summary: dict) -> str:
    if summary.get("kind") == "cv":
        return _cv_text(summary)
    if "unscored" in summary:
        unscored = _unscored_text(summary["unscored"])
        summary = {k: v for k, v in summary.items() if k != "unscored"}
        if not summary["overall"]["rows"]:
            return "\nno row could be scored" + unscored
        return _summary_text(summary) + unscored
    lines = ["", "chapter            rows  median |err|  p90 |err|  within 30%"]
    for name, s in list(summary["chapters"].items()) + [("overall", summary["overall"])]:
        lines.append(f"{name:18s} {s['rows']:4d}  {s['median']:12.1%}  {s['p90']:9.1%}  "
                     f"{s['within_30']:10.0%}")
    for name, s in summary["chapters"].items():
        lines.append(f"worst in {name}: " + _worst_text(s["worst"]))
    lines.append("worst overall: " + _worst_text(summary["worst"]))
    return "\n".join(lines)


def _worst_text(worst: list[dict]) -> str:
    """The worst rows, their ids escaped as in the table (a reader's id may hold control characters)."""
    return ", ".join(f"{_printable(w['id'])} ({w['rel_error']:+.0%})" for w in worst)


def _reproduce(args) -> tuple[list[dict], list[str]]:
    from . import audit

    return audit.reproduce(), ["id", "seed_value", "model_value", "unit", "status", "note"]


def _named(options):
    """An argparse ``type`` reading a name as the library does (any case, ``_`` or ``-`` or a
    space alike: ``LLM-DECODE``, ``output stationary``), so that ``choices`` then matches it."""
    lookup = {_checks._normal(o): o for o in options}

    def name(text: str) -> str:
        return lookup.get(_checks._normal(text), text)
    return name


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m gpumodel", description="Estimates from the book's models.")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("list", help="list the accelerators in the hardware table")
    p.add_argument("--kind", choices=["gpu", "tpu"], type=_named(["gpu", "tpu"]))
    p.set_defaults(run=_list)
    p = sub.add_parser("show", help="every field of one accelerator")
    p.add_argument("name")
    p.set_defaults(run=_show)
    p = sub.add_parser("matmul", help="tile traffic, load time and roofline time of C[m,n] = A[m,k] @ B[k,n]")
    p.add_argument("--accelerator", "-a", required=True)
    p.add_argument("-m", type=int, required=True)
    p.add_argument("-k", type=int, required=True)
    p.add_argument("-n", type=int, required=True)
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--tile", type=int, default=128)
    p.add_argument("--scheme", default="output_stationary", choices=memory.LOAD_SCHEMES,
                   type=_named(memory.LOAD_SCHEMES))
    p.add_argument("--bandwidth-unit", default="GB/s", help="how to read the datasheet bandwidth (GB/s or GiB/s)")
    p.set_defaults(run=_matmul)
    p = sub.add_parser("compare", help="bandwidth, peak and ridge point of two accelerators")
    p.add_argument("first")
    p.add_argument("second")
    p.add_argument("--dtype", default="fp16")
    p.set_defaults(run=_compare)
    p = sub.add_parser("rank", help="every accelerator's modelled throughput relative to a reference card")
    p.add_argument("--workload", required=True, choices=throughput.WORKLOADS,
                   type=_named(throughput.WORKLOADS))
    p.add_argument("--reference", default=throughput.REFERENCE, help="the card to divide by")
    p.add_argument("--batch", type=int, help="sequences, images or decoded sequences per step "
                   "on every card (default: the largest each card holds, up to 32, 256 or 1)")
    p.set_defaults(run=_rank)
    p = sub.add_parser("validate", help="every measured row against the prediction of the chapter that owns it")
    p.add_argument("--chapter", choices=validate.CHAPTERS, type=_named(validate.CHAPTERS))
    p.add_argument("--model", default="book", choices=validate.MODELS,
                   type=_named(validate.MODELS),
                   help="book: the chapters' models; naive: datasheet peaks alone")
    p.add_argument("--measurements", help="a CSV written by measurements/run.py instead of the book's data")
    p.add_argument("--cv", action="store_true",
                   help="refit the constants with each chip (or workload) left out and score it")
    p.set_defaults(run=_validate)
    p = sub.add_parser("reproduce", help="the seed audit: every number from the posts, recomputed")
    p.set_defaults(run=_reproduce)
    for p in sub.choices.values():
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    return parser


def _check_finite(rows: list[dict]) -> None:
    """A ValueError if any number in the output is NaN or inf (the models should have raised already)."""
    for row in rows:
        for key, value in row.items():
            if isinstance(value, (float, np.floating)) and not math.isfinite(value):
                raise ValueError(f"{key} is not finite ({value}); the inputs are too large or too small")


#: Strict JSON (no NaN or Infinity: the rows and the summary are checked to be finite first).
_JSON = json.JSONEncoder(indent=2, default=float, allow_nan=False)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        rows, columns, *extra = args.run(args)
        _check_finite(rows)
        if args.json:
            payload = {"rows": rows, "summary": extra[0]} if extra else rows
            if extra and "unscored" in extra[0]:
                payload["unscored"] = payload["summary"].pop("unscored")
            if extra:
                json.dumps(payload["summary"], default=float, allow_nan=False)  # finite?
            # written piece by piece (below): 290,000 rows as one string would take 300 MB more
            chunks = _JSON.iterencode(payload)
        else:
            chunks = [_table(rows, columns) + (_summary_text(extra[0]) if extra else "")]
    except (ValueError, OverflowError, ZeroDivisionError) as err:
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"gpumodel: error: {message}", file=sys.stderr)
        return 2
    try:
        batch = []
        for chunk in chunks:
            batch.append(chunk)
            if len(batch) == 8192:
                sys.stdout.write("".join(batch))
                batch.clear()
        sys.stdout.write("".join(batch) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0
