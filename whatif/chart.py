"""The what-if chart: GPUs held per ClusterQueue over the trace, base and head, one panel per ClusterQueue, as one
self-contained SVG file (matplotlib's SVG backend with the text drawn as paths: no font or image to fetch)."""
from __future__ import annotations

import io
from typing import Optional

import matplotlib

matplotlib.use("svg")
matplotlib.rcParams["svg.hashsalt"] = "kueue-cohorts-whatif"  # stable element ids: the same chart, the same bytes
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen

from whatif.report import gpu_series  # noqa: E402
from whatif.scheduler import Result  # noqa: E402


def chart_svg(head: Result, gpu: str, base: Optional[Result] = None, title: str = "") -> str:
    """The SVG text of the chart: per ClusterQueue of `head` (and of `base`), the GPUs (`gpu`) it holds over time in
    hours, the head as a solid step line, the base dashed, its nominalQuota as a dotted line. Deterministic: the
    same results give the same bytes (no date in the file)."""
    head_series = gpu_series(head, gpu)
    base_series = gpu_series(base, gpu) if base is not None else {}
    names = sorted(set(head_series) | set(base_series))
    fig, axes = plt.subplots(len(names), 1, figsize=(10, 1.8 * len(names) + 0.6), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        for series, style, label in ((base_series.get(name), "--", "base"), (head_series.get(name), "-", "head")):
            if series:
                ax.step([t / 3600 for t, _ in series], [v for _, v in series], style, where="post", label=label,
                        linewidth=1.2)
        cq = head.setup.cluster_queues.get(name) or (base.setup.cluster_queues.get(name) if base else None)
        if cq is not None:
            nominal = sum(q.nominal for (_, r), q in cq.quotas.items() if r == gpu)
            ax.axhline(nominal, linestyle=":", color="grey", linewidth=1, label="nominalQuota")
        ax.set_ylabel(f"{name}\n{gpu}", fontsize=8)
        ax.tick_params(labelsize=8)
    axes[0, 0].legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel("hours from the start of the trace", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()
