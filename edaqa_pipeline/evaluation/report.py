"""Render metrics.json as a Markdown report and a self-contained HTML report with plots.

The Markdown is for diffs and pull requests (tables only); the HTML embeds its PNG plots as
base64 so that one file can be mailed or archived. Both are pure functions of the metrics dict,
and the plots are deterministic (Agg backend, fixed sizes, no timestamp/software metadata), so
the same metrics render to the same bytes.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HEADLINE: tuple[str, ...] = (
    "ref_recall@2048t",
    "span_hit@2048t",
    "span_cover@2048t",
    "span_all@2048t",
    "wrong_release@2048t",
    "doc_recall@1",
    "doc_recall@5",
    "mrr@10",
    "ndcg@10",
    "rougeL",
    "bleu",
    "atomic_f1",
    "llm_score",
    "context_tokens_mean",
    "latency_ms_p50",
    "latency_ms_p95",
)
BAR_METRICS: tuple[str, ...] = ("ref_recall@2048t", "doc_recall@1", "doc_recall@5")
CATEGORY_METRIC_PREFERENCE: tuple[str, ...] = (
    "ref_recall@2048t",
    "span_cover@2048t",
    "doc_recall@5",
    "rougeL",
)
CURVE_FAMILIES: tuple[str, ...] = ("doc_recall", "ref_recall", "span_cover")
CURVE_KS: tuple[int, ...] = (1, 3, 5, 10)


def _fmt(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3f}"


def _present(per_method: dict[str, dict[str, float]], names: Sequence[str]) -> list[str]:
    return [n for n in names if any(n in vals for vals in per_method.values())]


def metric_sort_key(name: str) -> tuple[str, int, str]:
    """Natural order: ``doc_recall@1 < @3 < @10 < @2048t``."""
    family, _, suffix = name.partition("@")
    digits = suffix.rstrip("t")
    return (family, int(digits) if digits.isdigit() else -1, suffix)


def _all_metric_names(per_method: dict[str, dict[str, float]]) -> list[str]:
    return sorted({n for vals in per_method.values() for n in vals}, key=metric_sort_key)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def _method_rows(per_method: dict[str, dict[str, float]], cols: list[str]) -> list[list[str]]:
    return [[meth, *(_fmt(vals.get(c)) for c in cols)] for meth, vals in per_method.items()]


def _category_rows(
    by_cat: dict[str, dict[str, dict[str, float]]], cols: list[str]
) -> list[list[str]]:
    return [
        [cat, meth, *(_fmt(vals.get(c)) for c in cols)]
        for cat, per_method in by_cat.items()
        for meth, vals in per_method.items()
    ]


def _category_cols(by_cat: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    merged: dict[str, dict[str, float]] = {}
    for cat, per_method in by_cat.items():
        for meth, vals in per_method.items():
            merged[f"{cat}/{meth}"] = vals
    return _present(merged, HEADLINE)


def render_markdown(metrics: dict[str, Any], *, reproduced: str | None = None) -> str:
    """The Markdown report: headline table, all-metrics table, per-category table."""
    per_method: dict[str, dict[str, float]] = metrics.get("methods", {})
    by_cat: dict[str, dict[str, dict[str, float]]] = metrics.get("by_category", {})
    out = ["# EDAQA evaluation report", ""]
    out.append(
        f"Questions: {metrics.get('n_questions', 0)}. Methods: {', '.join(per_method) or 'none'}."
    )
    if reproduced:
        out += ["", f"How reproduced: `{reproduced}`"]
    if "bleu_signature" in metrics:
        out += ["", f"BLEU signature: `{metrics['bleu_signature']}`"]
    cols = _present(per_method, HEADLINE)
    out += ["", "## Headline metrics (evidence packed to 2048 tokens)", ""]
    out += _table(["method", *cols], _method_rows(per_method, cols))
    all_cols = _all_metric_names(per_method)
    out += ["", "## All metrics", ""]
    out += _table(
        ["metric", *per_method],
        [[c, *(_fmt(v.get(c)) for v in per_method.values())] for c in all_cols],
    )
    cat_cols = _category_cols(by_cat)
    out += ["", "## By category", ""]
    out += _table(["category", "method", *cat_cols], _category_rows(by_cat, cat_cols))
    out += [
        "",
        "Metrics are means over the questions they apply to; a dash means no question applied. "
        "`bleu` is sacrebleu corpus BLEU (0-100); latencies are in milliseconds.",
        "",
    ]
    return "\n".join(out)


# --- plots ----------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Any:
    """A figure on an explicit Agg canvas: no pyplot global state, no GUI backend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _grouped_bars(
    groups: list[str], series: dict[str, list[float]], title: str, ylabel: str
) -> str:
    fig = _figure(max(6.0, 1.2 * len(groups) * max(1, len(series)) ** 0.5), 4.0)
    ax = fig.subplots()
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        xs = [g + i * width - 0.4 + width / 2 for g in range(len(groups))]
        ax.bar(xs, values, width=width, label=label)
    ax.set_xticks(range(len(groups)), groups, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def plot_method_bars(per_method: dict[str, dict[str, float]]) -> str | None:
    """Per-method bars of ref_recall@2048t / doc_recall@1 / doc_recall@5 (base64 PNG)."""
    names = _present(per_method, BAR_METRICS)
    if not per_method or not names:
        return None
    series = {n: [per_method[meth].get(n, 0.0) for meth in per_method] for n in names}
    return _grouped_bars(list(per_method), series, "Retrieval by method", "score")


def category_metric(by_cat: dict[str, dict[str, dict[str, float]]]) -> str | None:
    present = {n for per_method in by_cat.values() for vals in per_method.values() for n in vals}
    return next((n for n in CATEGORY_METRIC_PREFERENCE if n in present), None)


def plot_category_bars(by_cat: dict[str, dict[str, dict[str, float]]]) -> tuple[str, str] | None:
    """Per-category bars, one bar per method, of the first available preferred metric."""
    metric = category_metric(by_cat)
    if metric is None:
        return None
    cats = list(by_cat)
    methods = list(dict.fromkeys(meth for pm in by_cat.values() for meth in pm))
    series = {meth: [by_cat[c].get(meth, {}).get(metric, 0.0) for c in cats] for meth in methods}
    return metric, _grouped_bars(cats, series, f"{metric} by category", metric)


def plot_recall_curves(per_method: dict[str, dict[str, float]]) -> str | None:
    """Recall-at-k curves (k = 1, 3, 5, 10) per method, one panel per recall family."""
    families = [
        f
        for f in CURVE_FAMILIES
        if any(f"{f}@{k}" in v for v in per_method.values() for k in CURVE_KS)
    ]
    if not families:
        return None
    fig = _figure(4.5 * len(families), 3.8)
    axes = fig.subplots(1, len(families), squeeze=False)
    for ax, fam in zip(axes[0], families, strict=True):
        for meth, vals in per_method.items():
            pts = [(k, vals[f"{fam}@{k}"]) for k in CURVE_KS if f"{fam}@{k}" in vals]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=meth)
        ax.set_xticks(list(CURVE_KS))
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("k")
        ax.set_title(f"{fam}@k")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


# --- HTML -----------------------------------------------------------------------------------


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(b64: str, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'


def render_html(metrics: dict[str, Any], *, reproduced: str | None = None) -> str:
    """The HTML report: the Markdown report's tables plus embedded plots."""
    per_method: dict[str, dict[str, float]] = metrics.get("methods", {})
    by_cat: dict[str, dict[str, dict[str, float]]] = metrics.get("by_category", {})
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>EDAQA evaluation report</title>',
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}img{max-width:100%}</style></head><body>",
        "<h1>EDAQA evaluation report</h1>",
        f"<p>Questions: {int(metrics.get('n_questions', 0))}. "
        f"Methods: {html.escape(', '.join(per_method) or 'none')}.</p>",
    ]
    if reproduced:
        parts.append(f"<p>How reproduced: <code>{html.escape(reproduced)}</code></p>")
    if "bleu_signature" in metrics:
        parts.append(
            f"<p>BLEU signature: <code>{html.escape(str(metrics['bleu_signature']))}</code></p>"
        )
    cols = _present(per_method, HEADLINE)
    parts += ["<h2>Headline metrics (evidence packed to 2048 tokens)</h2>"]
    parts.append(_html_table(["method", *cols], _method_rows(per_method, cols)))
    bars = plot_method_bars(per_method)
    if bars:
        parts.append(_img(bars, "per-method bars"))
    curves = plot_recall_curves(per_method)
    if curves:
        parts += ["<h2>Recall at k</h2>", _img(curves, "recall-at-k curves")]
    all_cols = _all_metric_names(per_method)
    parts += ["<h2>All metrics</h2>"]
    parts.append(
        _html_table(
            ["metric", *per_method],
            [[c, *(_fmt(v.get(c)) for v in per_method.values())] for c in all_cols],
        )
    )
    cat_cols = _category_cols(by_cat)
    parts += ["<h2>By category</h2>"]
    parts.append(_html_table(["category", "method", *cat_cols], _category_rows(by_cat, cat_cols)))
    cat_plot = plot_category_bars(by_cat)
    if cat_plot:
        parts.append(_img(cat_plot[1], f"{cat_plot[0]} by category"))
    parts += [
        "<p>Metrics are means over the questions they apply to; a dash means no question applied. "
        "<code>bleu</code> is sacrebleu corpus BLEU (0-100); latencies are in milliseconds.</p>",
        "</body></html>",
        "",
    ]
    return "\n".join(parts)


def write_report(
    out_dir: str | Path, metrics: dict[str, Any], *, reproduced: str | None = None
) -> tuple[Path, Path]:
    """Write report.md and report.html into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, page = out / "report.md", out / "report.html"
    md.write_text(render_markdown(metrics, reproduced=reproduced), encoding="utf-8")
    page.write_text(render_html(metrics, reproduced=reproduced), encoding="utf-8")
    return md, page
