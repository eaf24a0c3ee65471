"""One trace, two configs: simulate the base and the head quotas of a stack and put them side by side (what
`python -m kueue_cohorts.cohorts whatif` prints and the pull-request summary's what-if section shows)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

from kueue_cohorts.components.settings import Settings
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.whatif.kueue import KueueSetup, Unsupported
from kueue_cohorts.whatif.report import (
    Comparison,
    FateChange,
    compare,
    fate_changes,
    markdown,
    over_quota_alert,
    quota_below_use,
    report,
    timeline_markdown,
)
from kueue_cohorts.whatif.scheduler import Result, simulate
from kueue_cohorts.whatif.stack import setup_of
from kueue_cohorts.whatif.trace import Trace, TraceError


@dataclass(frozen=True)
class WhatIf:
    """The head's simulation, the base's (None: no base, or the simulator refuses it: `base_note` says why), and
    their Comparison (against the head itself when there is no base)."""

    trace: Trace
    head: Result
    base: Optional[Result]
    comparison: Comparison
    base_note: Optional[str] = None
    timeline: tuple[FateChange, ...] = ()
    """The workloads whose fate changes from the base to the head (`whatif.report.fate_changes`)."""


def unknown_references(trace: Trace, setups: list[KueueSetup]) -> list[Problem]:
    """Every workload of `trace` whose LocalQueue (namespace/localQueue) or priorityClass exists in none of `setups`
    (the head, and the base when there is one: a queue only one of them has is the change itself, and is reported
    as never admitted there). One Problem per workload and field, at the workload's `file:line`, with the names the
    stack does have."""
    queues = sorted({f"{ns}/{lq}" for setup in setups for ns, lq in setup.local_queues})
    classes = sorted({name for setup in setups for name in setup.priorities})
    flavors = sorted({name for setup in setups for name in setup.flavors})
    problems = []
    for w in trace.workloads:
        if f"{w.namespace}/{w.local_queue}" not in queues:
            problems.append(Problem(
                f"{trace.where(w.name)} localQueue", f"{w.namespace}/{w.local_queue}",
                "names a LocalQueue (namespace/localQueue) the stack does not have",
                "use one of the stack's: " + (", ".join(queues[:8]) + (" ..." if len(queues) > 8 else "")
                                              if queues else "(the stack has none)")))
        for resource, flavor in sorted(w.flavors.items()):
            if flavor not in flavors:
                problems.append(Problem(
                    f"{trace.where(w.name)} flavors.{resource}", flavor,
                    "names a ResourceFlavor the stack does not have",
                    "use one of the stack's: " + (", ".join(flavors) if flavors else "(the stack has none)")
                    + "; or leave it out for the first flavor of the ClusterQueue's resource group"))
        if w.priority_class and w.priority_class not in classes:
            problems.append(Problem(
                f"{trace.where(w.name)} priorityClass", w.priority_class,
                "names a WorkloadPriorityClass the stack does not have (Kueue would never create the Workload)",
                "use one of the stack's: " + (", ".join(classes) if classes else "(the stack has none)")
                + "; or leave priorityClass out for priority 0"))
    return problems


def what_if(trace: Trace, head: Settings, base: Optional[Settings] = None) -> WhatIf:
    """Simulate `trace` against `head` (and `base`) and compare them.

    Raises:
        whatif.kueue.Unsupported: the head stack uses what the simulator does not model (every reason). A base the
        simulator refuses is reported in `base_note` instead (the change may be what makes it simulable).
        whatif.trace.TraceError: workloads name a LocalQueue or a WorkloadPriorityClass that neither the head nor
        the base has (`unknown_references`).
    """
    head_setup = setup_of(head)
    base_setup, note = None, None
    if base is not None:
        try:
            base_setup = setup_of(base)
        except Unsupported as exc:
            note = str(exc)
    problems = unknown_references(trace, [head_setup] + ([base_setup] if base_setup is not None else []))
    if problems:
        raise TraceError(trace.source or "(built)", problems)
    head_result = simulate(head_setup, trace)
    head_report = report(head_result)
    base_result = simulate(base_setup, trace) if base_setup is not None else None
    base_report = report(base_result) if base_result is not None else head_report
    first = tuple(over_quota_alert(o) for o in quota_below_use(head_result, base_result))
    timeline = tuple(fate_changes(base_result, head_result)) if base_result is not None else ()
    return WhatIf(trace, head_result, base_result, compare(base_report, head_report, first), note, timeline)


def section(result: WhatIf, source: str, base_ref: Optional[str] = None, chart: Optional[str] = None) -> str:
    """The what-if Markdown: title (trace `source`, its size and length, the base ref), the comparison
    (`whatif.report.markdown`), the chart file when one was written, and what the simulator does not model."""
    days = result.trace.horizon_seconds / 86400
    against = f" against `{base_ref}`" if base_ref and result.base is not None else ""
    title = (f"What-if: `{source}` ({len(result.trace.workloads)} workloads, {days:.3g} days) replayed on the "
             f"{'base and the head' if result.base is not None else 'head'} quotas{against}")
    text = markdown(result.comparison, title)
    timeline = timeline_markdown(list(result.timeline), result.head)
    if timeline:
        text += "\n".join(timeline) + "\n"
    if result.base_note:
        reasons = [line.strip().removeprefix("- ") for line in result.base_note.splitlines() if line.strip()]
        text += f"\nThe base is not simulated: {'; '.join(reasons)}\n"
    if chart:
        text += f"\nGPUs held per ClusterQueue over the trace: `{chart}`.\n"
    text += ("\n_Simulated offline as Kueue 0.19.2 admits (classical preemption, flavors in order, no Fair Sharing, "
             "TAS or admission checks); ties Kueue breaks at random are broken by name._\n")
    return text


def as_json(result: WhatIf, source: str, base_ref: Optional[str] = None) -> dict[str, Any]:
    """The what-if as one JSON document (`kueue-cohorts whatif --output json`): kind kueue-cohorts/whatif/v1, the
    trace (source, workloads, horizonSeconds), the base ref and whether the base was simulated (`baseNote` when
    not), the alerts, and per queue and tenant its base and head rows (`whatif.report.QueueReport` fields: times in
    seconds, work in hours; null where the queue does not exist)."""
    def row(r: Any) -> Optional[dict[str, Any]]:
        return asdict(r) if r is not None else None
    return {"kind": "kueue-cohorts/whatif/v1", "trace": {"source": source, "workloads": len(result.trace.workloads),
                                                         "horizonSeconds": result.trace.horizon_seconds},
            "base": base_ref, "baseSimulated": result.base is not None, "baseNote": result.base_note,
            "gpuResource": result.comparison.head.gpu, "alerts": list(result.comparison.alerts),
            "queues": [{"key": c.key, "base": row(c.base), "head": row(c.head)} for c in result.comparison.changes],
            "timeline": [{"workload": c.workload, "queue": c.queue, "base": asdict(c.base), "head": asdict(c.head)}
                         for c in result.timeline],
            "refusals": dict(sorted(result.head.refusals.items())),
            "unqueued": list(result.comparison.head.unqueued)}
