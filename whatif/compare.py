"""One trace, two configs: simulate the base and the head quotas of a stack and put them side by side (what
`python -m cohorts whatif` prints and the pull-request summary's what-if section shows)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from components.settings import Settings
from whatif.kueue import Unsupported
from whatif.report import Comparison, compare, markdown, report
from whatif.scheduler import Result, simulate
from whatif.stack import setup_of
from whatif.trace import Trace


@dataclass(frozen=True)
class WhatIf:
    """The head's simulation, the base's (None: no base, or the simulator refuses it: `base_note` says why), and
    their Comparison (against the head itself when there is no base)."""

    trace: Trace
    head: Result
    base: Optional[Result]
    comparison: Comparison
    base_note: Optional[str] = None


def what_if(trace: Trace, head: Settings, base: Optional[Settings] = None) -> WhatIf:
    """Simulate `trace` against `head` (and `base`) and compare them.

    Raises:
        whatif.kueue.Unsupported: the head stack uses what the simulator does not model (every reason). A base the
        simulator refuses is reported in `base_note` instead (the change may be what makes it simulable).
    """
    head_result = simulate(setup_of(head), trace)
    head_report = report(head_result)
    base_result, note = None, None
    if base is not None:
        try:
            base_result = simulate(setup_of(base), trace)
        except Unsupported as exc:
            note = str(exc)
    base_report = report(base_result) if base_result is not None else head_report
    return WhatIf(trace, head_result, base_result, compare(base_report, head_report), note)


def section(result: WhatIf, source: str, base_ref: Optional[str] = None, chart: Optional[str] = None) -> str:
    """The what-if Markdown: title (trace `source`, its size and length, the base ref), the comparison
    (`whatif.report.markdown`), the chart file when one was written, and what the simulator does not model."""
    days = result.trace.horizon_seconds / 86400
    against = f" against `{base_ref}`" if base_ref and result.base is not None else ""
    title = (f"What-if: `{source}` ({len(result.trace.workloads)} workloads, {days:.3g} days) replayed on the "
             f"{'base and the head' if result.base is not None else 'head'} quotas{against}")
    text = markdown(result.comparison, title)
    if result.base_note:
        text += f"\nThe base is not simulated: {result.base_note.splitlines()[0]}\n"
    if chart:
        text += f"\nGPUs held per ClusterQueue over the trace: `{chart}`.\n"
    text += ("\n_Simulated offline as Kueue 0.19.2 admits (classical preemption, flavors in order, no Fair Sharing, "
             "TAS or admission checks); ties Kueue breaks at random are broken by name._\n")
    return text
