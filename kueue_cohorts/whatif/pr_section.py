"""The what-if section of a stack's pull-request summary: the stack's demand trace (`kueue-cohorts:whatif.trace`)
replayed offline on the base and the head quotas (whatif/compare.py), with a chart of GPUs held per ClusterQueue."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from kueue_cohorts.components.settings import Settings
from kueue_cohorts.whatif.chart import chart_html
from kueue_cohorts.whatif.compare import section, what_if
from kueue_cohorts.whatif.kueue import Unsupported
from kueue_cohorts.whatif.report import report
from kueue_cohorts.whatif.trace import Trace, TraceError


def whatif_section(repo: Path, stack: str, base_ref: str, before: Optional[Settings], after: Optional[Settings],
                   chart: Optional[Path] = None) -> tuple[list[str], list[str]]:
    """The section's Markdown lines and its alerts (inference that waits longer with the change, for the top of the
    summary); ([], []) when the head stack configures no trace (or does not validate: the summary reports that
    already). A trace that cannot be read, or a head the simulator refuses, is one paragraph saying why (the summary
    never fails on it). `chart`: where to write the HTML chart (None: no chart)."""
    if after is None or after.whatif is None:
        return [], []
    path = after.whatif.trace
    try:
        trace = Trace.read(repo / path)
        result = what_if(trace, after, before)
    except TraceError as exc:
        more = f" (and {len(exc.problems) - 1} more problems)" if len(exc.problems) > 1 else ""
        return ["#### What-if", f"The what-if replay of `{path}` did not run: {exc.problems[0]}{more}", ""], []
    except (OSError, Unsupported) as exc:
        return ["#### What-if", f"The what-if replay of `{path}` did not run: {_reasons(str(exc))}", ""], []
    written = None
    if chart is not None:
        chart.parent.mkdir(parents=True, exist_ok=True)
        chart.write_text(chart_html(result.head, report(result.head).gpu, result.base,
                                   f"{stack}: GPUs held per ClusterQueue, base (dashed) and head"))
        written = chart.name
    text = section(result, path, base_ref, written).replace("### What-if", "#### What-if", 1)
    return text.rstrip("\n").splitlines() + [""], list(result.comparison.alerts)


def _reasons(message: str) -> str:
    """A multi-line error message (a header, then `  - reason` lines) as one line: the header and every reason."""
    lines = [line.strip().removeprefix("- ") for line in message.splitlines() if line.strip()]
    return "; ".join(lines)
