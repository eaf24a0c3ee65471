"""The what-if chart: GPUs held per ClusterQueue over the trace, base and head, one panel per ClusterQueue, as one
self-contained HTML page (plotly, the project's chart library: `cohorts report --output html` draws with it too;
plotly.js is embedded, nothing is fetched)."""
from __future__ import annotations

import html
from typing import Optional

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kueue_cohorts.whatif.report import gpu_series
from kueue_cohorts.whatif.scheduler import Result


def chart_html(head: Result, gpu: str, base: Optional[Result] = None, title: str = "", summary: str = "") -> str:
    """The chart as one HTML page: per ClusterQueue of `head` (and of `base`), the GPUs (`gpu`) it holds over the
    trace in hours from its start, the head as a solid step line, the base dashed, the head's nominalQuota dotted;
    `summary` (the what-if Markdown section), when given, above it as preformatted text.
    Deterministic: the same results give the same text (no timestamp, a fixed div id)."""
    head_series = gpu_series(head, gpu)
    base_series = gpu_series(base, gpu) if base is not None else {}
    names = sorted(set(head_series) | set(base_series))
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, subplot_titles=names,
                        vertical_spacing=min(0.08, 0.5 / max(1, len(names))))
    for row, name in enumerate(names, start=1):
        for series, dash, label in ((base_series.get(name), "dash", "base"), (head_series.get(name), "solid",
                                                                                "head")):
            if series:
                fig.add_trace(go.Scatter(x=[t / 3600 for t, _ in series], y=[v for _, v in series], mode="lines",
                                         line={"shape": "hv", "dash": dash}, name=f"{name} {label}",
                                         legendgroup=label), row=row, col=1)
        cq = head.setup.cluster_queues.get(name) or (base.setup.cluster_queues.get(name) if base else None)
        if cq is not None:
            nominal = sum(q.nominal for (_, r), q in cq.quotas.items() if r == gpu)
            fig.add_hline(y=nominal, line={"dash": "dot", "color": "grey"}, row=row, col=1)
        fig.update_yaxes(title_text=gpu, row=row, col=1)
    fig.update_xaxes(title_text="hours from the start of the trace", row=len(names), col=1)
    fig.update_layout(title=title or "GPUs held per ClusterQueue", height=240 * len(names) + 120)
    body = fig.to_html(full_html=False, include_plotlyjs=True, div_id="whatif-chart")
    text = f"<pre>{html.escape(summary)}</pre>" if summary else ""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title or 'what-if')}"
            f"</title></head><body>{text}{body}</body></html>\n")
