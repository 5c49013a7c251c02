"""Predicted against measured, per chapter: the charts and tables of each chapter's "Where this model is wrong".

The same rows and predictions as ``python -m gpumodel validate`` (:mod:`gpumodel.validate`).
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from .. import _checks, charts, validate


def points(chapter: str) -> pd.DataFrame:
    """The chapter's scored rows with their absolute error, largest first."""
    frame = pd.DataFrame(validate.rows(chapter=chapter))
    frame["abs_error"] = frame["rel_error"].abs()
    return frame.sort_values(["abs_error", "id"], ascending=[False, True]).reset_index(drop=True)


def chart(chapter: str):
    """Predicted against measured (log-log) with the line of perfect prediction and the band of
    the 10th to 90th percentile of the left-out error (:func:`gpumodel.validate.error_band`)."""
    frame = points(chapter)
    lo = float(min(frame["measured"].min(), frame["predicted"].min())) / 1.5
    hi = float(max(frame["measured"].max(), frame["predicted"].max())) * 1.5
    scale = alt.Scale(type="log", domain=[lo, hi])
    line = charts.identity_line(lo, hi, scale)
    low, high = validate.error_band(chapter)
    band = charts.error_band_area(lo, hi, low, high, scale)
    dots = alt.Chart(frame).mark_point(filled=True, size=60).encode(
        x=alt.X("measured:Q", title="measured (the row's unit, log scale)", scale=scale),
        y=alt.Y("predicted:Q", title="predicted by the chapter's model", scale=scale),
        color=alt.Color("workload:N", title=None),
        shape=alt.Shape("workload:N", title=None),
        tooltip=["id:N", "hardware:N", "unit:N", alt.Tooltip("measured:Q", format=",.4g"),
                 alt.Tooltip("predicted:Q", format=",.4g"), alt.Tooltip("rel_error:Q", format="+.0%")])
    return (band + line + dots).properties(
        width=380, height=320,
        description=f"Scatter plot, log-log: each point is one published measurement of the {chapter} "
                    f"chapter ({len(frame)} rows), its measured value (x) against the chapter model's "
                    "prediction (y) in the row's own unit; colour and marker shape give the workload; "
                    "points on the dashed diagonal are predicted exactly; the grey band holds "
                    f"errors from {low:+.0%} to {high:+.0%}, the 10th to 90th percentile of the "
                    "error with each row's chip (or workload) left out of the fit.")


def worst_frame(chapter: str, top: int = 5) -> pd.DataFrame:
    """The chapter's largest misses: measured, predicted and error, in each row's unit."""
    frame = points(chapter).head(_checks.count("top", top))
    return pd.DataFrame({"id": frame["id"], "hardware": frame["hardware"],
                         "measured": frame["measured"].map("{:,.4g}".format),
                         "predicted": frame["predicted"].map("{:,.4g}".format),
                         "unit": frame["unit"],
                         "error": frame["rel_error"].map("{:+.0%}".format)}).set_index("id")


def score(chapter: str | None = None) -> dict:
    """Median |error|, 90th percentile and share within 30% of the book's models and of the datasheet alone."""
    out = {}
    for model in validate.MODELS:
        summary = validate.summary(validate.rows(model, chapter))
        out[model] = summary["overall"]
    return out


def score_frame() -> pd.DataFrame:
    """Per chapter and overall: rows, median |error| of the book's models and of the datasheet alone."""
    rows = []
    book = validate.summary(validate.rows("book"))
    naive = validate.summary(validate.rows("naive"))
    for name, stats in list(book["chapters"].items()) + [("overall", book["overall"])]:
        base = naive["overall"] if name == "overall" else naive["chapters"][name]
        rows.append({"chapter": name, "rows": stats["rows"],
                     "median, book": f"{stats['median']:.0%}",
                     "median, datasheet alone": f"{base['median']:.0%}",
                     "within 30%, book": f"{stats['within_30']:.0%}"})
    return pd.DataFrame(rows).set_index("chapter")


def error_range(chapter: str, prefix: str, model: str = "book") -> tuple[float, float]:
    """Smallest and largest error (predicted / measured - 1) of the chapter's rows whose id starts with ``prefix``."""
    prefix = _checks.text("prefix", prefix)
    errors = [r["rel_error"] for r in validate.rows(model, chapter) if r["id"].startswith(prefix)]
    if not errors:
        raise ValueError(f"no scored row of {chapter} starts with prefix {prefix!r}")
    return min(errors), max(errors)


def error_of(chapter: str, id: str, model: str = "book") -> float:
    """The error (predicted / measured - 1) of one scored row."""
    _checks.text("id", id)
    for r in validate.rows(model, chapter):
        if r["id"] == id:
            return r["rel_error"]
    raise ValueError(f"id {id!r:.80} is not a scored row of {chapter}")


def median(chapter: str, prefix: str, model: str = "book") -> float:
    """Median |error| of the chapter's rows whose id starts with ``prefix``."""
    prefix = _checks.text("prefix", prefix)
    errors = [abs(r["rel_error"]) for r in validate.rows(model, chapter) if r["id"].startswith(prefix)]
    if not errors:
        raise ValueError(f"no scored row of {chapter} starts with prefix {prefix!r}")
    return float(pd.Series(errors).median())


def memory_range(chapter: str, prefix: str, kind: str, skip=()) -> tuple[float, float]:
    """Smallest and largest error of the rows on cards with ``kind`` memory ("HBM" or "GDDR"),
    leaving out the cards named in ``skip``."""
    from .choosing_a_gpu import memory_kind

    prefix, kind = _checks.text("prefix", prefix), _checks.choice("kind", kind, ("HBM", "GDDR"))
    skip = () if isinstance(skip, (list, tuple)) and not skip else _checks.items("skip", skip, _checks.text)
    scored = validate.rows("book", chapter)
    unknown = [s for s in skip if s not in {r["hardware"] for r in scored}]
    if unknown:
        raise ValueError(f"skip: {', '.join(map(repr, unknown))[:200]} is no card of the scored "
                         f"rows of {chapter} (known: {', '.join(sorted({r['hardware'] for r in scored}))})")
    errors = [r["rel_error"] for r in scored
              if r["id"].startswith(prefix) and memory_kind(r["hardware"]) == kind
              and r["hardware"] not in skip]
    if not errors:
        raise ValueError(f"no scored {kind} row of {chapter} starts with prefix {prefix!r}")
    return min(errors), max(errors)


def left_out_median(chapter: str | None = None, prefix: str = "") -> float:
    """Median |error| of the rows (of ``chapter``, ids starting with ``prefix``) predicted with
    their chip, or their workload, left out of the fit (:func:`gpumodel.validate.cross_validate`)."""
    prefix = _checks.text("prefix", prefix)
    errors = [abs(r["rel_error"]) for r in validate.cross_validate(chapter)
              if r["id"].startswith(prefix)]
    if not errors:
        raise ValueError(f"no scored row of {chapter} starts with prefix {prefix!r}")
    return float(pd.Series(errors).median())


def left_out_error(chapter: str, id: str) -> float:
    """The error (predicted / measured - 1) of one scored row predicted with its chip, or its
    workload, left out of the fit."""
    _checks.text("id", id)
    for r in validate.cross_validate(chapter):
        if r["id"] == id:
            return r["rel_error"]
    raise ValueError(f"id {id!r:.80} is not a scored row of {chapter}")


def cv_frame() -> pd.DataFrame:
    """Per chapter and overall: rows, how rows were left out, and the in-sample and left-out
    median and 90th percentile of |error| (``python -m gpumodel validate --cv``)."""
    summary = validate.cv_summary()
    items = list(summary["chapters"].items()) + [("overall", dict(summary["overall"], cv="-"))]
    return pd.DataFrame([{"chapter": name, "rows": s["in_sample"]["rows"], "left out": s["cv"],
                          "median in sample": f"{s['in_sample']['median']:.0%}",
                          "median left out": f"{s['left_out']['median']:.0%}",
                          "p90 left out": f"{s['left_out']['p90']:.0%}"}
                         for name, s in items]).set_index("chapter")
