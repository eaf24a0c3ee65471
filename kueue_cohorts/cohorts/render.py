"""Print a StatusView: ``as_json`` (a stable document, Kueue's field names) and ``table`` (for a terminal). Pure."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from kueue_cohorts.cohorts.view import (
    PREEMPTION_REASONS,
    CohortView,
    Preemption,
    QueueView,
    ResourceRow,
    StatusView,
    WorkloadRef,
    WorkloadRow,
)

#: The ``kind`` of the JSON document, versioned so that scripts can check what they parse.
JSON_KIND = "kueue-cohorts/status/v1"
NOT_SET = "-"
LEGEND = (f"{NOT_SET} = not set (borrowingLimit: no limit; lendingLimit: lends all idle nominalQuota) · "
          "lent: the cohort's borrowing split over its idle lenders")


def _resource(r: ResourceRow) -> dict[str, Any]:
    return {"flavor": r.flavor, "resource": r.resource, "nominalQuota": r.nominal_quota,
            "borrowingLimit": r.borrowing_limit, "lendingLimit": r.lending_limit, "usage": r.usage,
            "reserved": r.reserved, "borrowed": r.borrowed, "lent": r.lent}


def _workload(w: WorkloadRow) -> dict[str, Any]:
    out = {"namespace": w.namespace, "name": w.name, "uid": w.uid, "localQueue": w.local_queue,
           "clusterQueue": w.cluster_queue, "priority": w.priority, "priorityClass": w.priority_class,
           "since": w.since, "reason": w.reason, "message": w.message, "usage": dict(w.usage)}
    if w.cluster:
        out["cluster"] = w.cluster  # the MultiKueue worker it runs on
    return out


def _ref(r: Optional[WorkloadRef]) -> Optional[dict[str, Any]]:
    if r is None:
        return None
    return {"namespace": r.namespace, "name": r.name, "uid": r.uid, "clusterQueue": r.cluster_queue}


def _preemption(p: Preemption) -> dict[str, Any]:
    return {"time": p.time, "reason": p.reason, "victim": _ref(p.victim), "preemptor": _ref(p.preemptor),
            "count": p.count, "message": p.message}


def _queue(q: QueueView) -> dict[str, Any]:
    return {"name": q.name, "role": q.role, "active": q.active, "weightedShare": q.weighted_share,
            "admittedWorkloads": q.admitted_workloads,
            "reservingWorkloads": q.reserving_workloads, "pendingWorkloads": q.pending_workloads,
            "resources": [_resource(r) for r in q.resources],
            "workloads": {"admitted": [_workload(w) for w in q.workloads if w.state == "admitted"],
                          "reserving": [_workload(w) for w in q.workloads if w.state == "reserving"],
                          "pending": [_workload(w) for w in q.workloads if w.state == "pending"]}}


def as_json(view: StatusView, header: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The view as a JSON-ready dict.

    Shape: ``{"kind": "kueue-cohorts/status/v1", "time", **header (e.g. stack, cluster), "unavailable": {...},
    "cohorts": [{"name", "weightedShare", "cohortQuota": [resource...], "clusterQueues": [{"name", "role", "active",
    "weightedShare",
    "admittedWorkloads", "reservingWorkloads", "pendingWorkloads", "resources": [{"flavor", "resource",
    "nominalQuota", "borrowingLimit", "lendingLimit", "usage", "reserved", "borrowed", "lent"}], "workloads":
    {"admitted": [...], "reserving": [...], "pending": [...]}}], "preemptions": [{"time", "reason", "victim",
    "preemptor", "count", "message"}]}]}``. Quantities are canonical quantity strings; null = not set / unknown.
    """
    doc: dict[str, Any] = {"kind": JSON_KIND, "time": view.time}
    doc.update(header or {})
    doc["unavailable"] = dict(view.unavailable)
    doc["cohorts"] = [{"name": c.name or None, "weightedShare": c.weighted_share,
                       "cohortQuota": [_resource(r) for r in c.quota],
                       "clusterQueues": [_queue(q) for q in c.cluster_queues],
                       "preemptions": [_preemption(p) for p in c.preemptions]} for c in view.cohorts]
    return doc


def _grid(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = (c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=False)))
        return "  ".join(padded).rstrip()

    return [line(headers)] + [line(r) for r in rows]


def _cohort_table(c: CohortView) -> list[str]:
    title = f"cohort {c.name}" if c.name else "ClusterQueues without a cohort"
    lines = [title]
    headers = ("CLUSTERQUEUE", "FLAVOR", "RESOURCE", "NOMINALQUOTA", "BORROWINGLIMIT", "LENDINGLIMIT", "USAGE",
               "BORROWED", "LENT")
    rows = []
    for row in c.quota:
        rows.append((f"(Cohort {c.name})", row.flavor, row.resource, row.nominal_quota,
                     row.borrowing_limit or NOT_SET, row.lending_limit or NOT_SET, NOT_SET, NOT_SET, row.lent))
    for q in c.cluster_queues:
        name = q.name + (f" ({q.role})" if q.role else "") + ("" if q.active in (None, True) else " INACTIVE")
        for i, r in enumerate(q.resources):
            rows.append((name if i == 0 else "", r.flavor, r.resource, r.nominal_quota,
                         r.borrowing_limit if r.borrowing_limit is not None else NOT_SET,
                         r.lending_limit if r.lending_limit is not None else NOT_SET, r.usage, r.borrowed, r.lent))
        if not q.resources:
            rows.append((name, "", "", "", "", "", "", "", ""))
    lines += ["  " + s for s in _grid(headers, rows, right=(3, 4, 5, 6, 7, 8))] if rows else ["  no ClusterQueue"]
    wl_rows = []
    for q in c.cluster_queues:
        for w in q.workloads:
            if w.usage:
                detail = " ".join(f"{k}={v}" for k, v in w.usage.items())
                detail += " (evicted, stopping)" if w.reason == "Evicted" else ""
            elif w.reason in PREEMPTION_REASONS.values():
                detail = f"preempted ({w.reason}), waiting for quota"
            else:
                detail = f"{w.reason}: {w.message}" if w.reason else w.message
            if w.cluster:
                detail = f"on worker {w.cluster}: {detail}"
            wl_rows.append((q.name, w.state, f"{w.namespace}/{w.name}",
                            "" if w.priority is None else str(w.priority), w.since or "", _clip(detail, 100)))
    counts = ", ".join(f"{q.name}: {q.admitted_workloads} admitted, {q.pending_workloads} pending"
                       for q in c.cluster_queues)
    lines.append(f"  workloads ({counts})" if counts else "  workloads")
    if wl_rows:
        lines += ["    " + s for s in _grid(("CLUSTERQUEUE", "STATE", "WORKLOAD", "PRIORITY", "SINCE", "DETAIL"),
                                            wl_rows, right=(3,))]
    else:
        lines.append("    none")
    lines.append("  latest preemptions")
    if c.preemptions:
        p_rows = [(p.time or "?", p.reason or "?", p.victim.label(), p.victim.cluster_queue or "?",
                   p.preemptor.label() if p.preemptor else "?",
                   (p.preemptor.cluster_queue if p.preemptor else "") or "?") for p in c.preemptions]
        lines += ["    " + s for s in _grid(("TIME", "REASON", "VICTIM", "VICTIM CQ", "PREEMPTOR", "PREEMPTOR CQ"),
                                            p_rows)]
    else:
        lines.append("    none")
    return lines


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def table(view: StatusView, header: Optional[str] = None) -> str:
    """The view as text: an optional header line, then per cohort its quota table (one row per ClusterQueue,
    flavor and resource), its unfinished Workloads and its latest preemptions; lists the cluster refused last."""
    lines = [header] if header else []
    lines.append(f"at {view.time}")
    for c in view.cohorts:
        lines.append("")
        lines += _cohort_table(c)
    if not view.cohorts:
        lines += ["", "no ClusterQueue on this cluster"]
    lines += ["", LEGEND]
    for what, why in sorted(view.unavailable.items()):
        lines.append(f"note: could not list {what}: {why}")
    return "\n".join(lines)
