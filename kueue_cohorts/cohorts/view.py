"""The status view, pure: a ``Snapshot`` (cohorts.live) -> a ``StatusView`` of cohorts, ClusterQueues, resources,
Workloads and preemptions. No cluster access here, so every rule below is unit-tested on fixed objects.

Field meanings follow Kueue v0.19.2 (apis/kueue/v1beta2/clusterqueue_types.go, workload_types.go):
- ``nominalQuota`` / ``borrowingLimit`` / ``lendingLimit``: the ClusterQueue's ``spec.resourceGroups[].flavors[]
  .resources[]`` (None = not set: no borrowing limit / lends all of its idle nominalQuota);
- ``usage`` / ``borrowed``: ``status.flavorsUsage[].resources[].{total,borrowed}`` (admitted Workloads; borrowed is
  the usage above nominalQuota); ``reserved``: ``status.flavorsReservation[].resources[].total`` (quota reserved,
  admission checks included);
- ``lent``: Kueue records no per-lender figure (it pools every ClusterQueue's lendable quota in the cohort), so it
  is derived: the cohort's borrowed total, split over the lenders (ClusterQueues and the Cohort object's own
  nominalQuota) in proportion to their idle lendable quota, per flavor and resource. With one lender, as in the
  inference/training layout, this is exactly what it lends.
- preemptions: Kueue's ``Preempted`` events (on the victim Workload; the note names the preemptor's UID, the
  reason in words and the ClusterQueue paths), ``PreemptedWorkload`` events (on the preemptor, naming the victim),
  and the victims' ``Preempted`` condition (reason code; reset to False with "Previously: ..." on re-admission).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Iterable, Mapping, Optional, Sequence

from kueue_cohorts.cohorts.live import Snapshot
from kueue_cohorts.components.settings import quantity
from kueue_cohorts.policy.rules.vocabulary.objects import ROLE_LABEL

#: Kueue's HumanReadablePreemptionReasons (pkg/scheduler/preemption/preemption.go, v0.19.2), inverted.
PREEMPTION_REASONS = {
    "prioritization in the ClusterQueue": "InClusterQueue",
    "reclamation within the cohort": "InCohortReclamation",
    "Fair Sharing within the cohort": "InCohortFairSharing",
    "reclamation within the cohort while borrowing": "InCohortReclaimWhileBorrowing",
}
_PREEMPTED = re.compile(
    r"Preempted to accommodate a workload \(UID: (?P<uid>[^,]*), JobUID: (?P<job>[^)]*)\) due to (?P<why>[^;]*)"
    r"; preemptor path: (?P<preemptor_path>[^;]*); preemptee path: (?P<preemptee_path>[^;]*)")
_PREEMPTED_WORKLOAD = re.compile(
    r"Preempted workload (?P<ns>[^/\s]+)/(?P<name>\S+) \(UID: (?P<uid>[^)]*)\) in ClusterQueue (?P<cq>[^;\s]+)")
#: A condition and an event of the same preemption are written by the same manager a few milliseconds apart.
SAME_PREEMPTION_SECONDS = 5
ROLE_ORDER = {"inference": 0, "training": 1, "tenant": 2}


# --- the model ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceRow:
    """One (flavor, resource) of a ClusterQueue or Cohort object. Quantities are canonical Kubernetes quantity text;
    ``borrowing_limit`` / ``lending_limit`` None = not set."""

    flavor: str
    resource: str
    nominal_quota: str
    borrowing_limit: Optional[str]
    lending_limit: Optional[str]
    usage: str
    reserved: str
    borrowed: str
    lent: str


@dataclass(frozen=True)
class WorkloadRow:
    """One unfinished Workload: ``state`` admitted | reserving (quota reserved, admission checks pending) | pending;
    ``since``: RFC 3339 time of the last transition into that state; ``reason`` / ``message``: why it waits (the
    QuotaReserved=False condition) or, when it was preempted, the Preempted condition; for an admitted Workload
    being evicted (Evicted=True, its Pods stopping), "Evicted" and Kueue's message; ``usage``: what it holds
    ({resource: quantity}, admitted or reserving only, from status.admission.podSetAssignments[].resourceUsage);
    ``cluster``: the MultiKueue worker it was dispatched to and runs on (``status.clusterName``), "" on this one."""

    namespace: str
    name: str
    uid: str
    cluster_queue: str
    local_queue: str
    state: str
    priority: Optional[int]
    priority_class: Optional[str]
    since: Optional[str]
    reason: str = ""
    message: str = ""
    usage: Mapping[str, str] = field(default_factory=dict)
    cluster: str = ""


@dataclass(frozen=True)
class WorkloadRef:
    """A Workload named in a preemption: namespace and name ("" when no longer known), uid, ClusterQueue."""

    namespace: str
    name: str
    uid: str
    cluster_queue: str

    def label(self) -> str:
        """``namespace/name``, else ``uid <uid>``, else ``?``."""
        if self.name:
            return f"{self.namespace}/{self.name}"
        return f"uid {self.uid}" if self.uid else "?"


@dataclass(frozen=True)
class Preemption:
    """One preemption: ``time`` (RFC 3339, None when only a reset condition remembers it), ``reason`` (Kueue's
    Preempted reason: InCohortReclamation, InClusterQueue, InCohortFairSharing, InCohortReclaimWhileBorrowing),
    ``victim`` and ``preemptor`` (None when unknown), ``count`` (the event series' count), ``message`` (Kueue's)."""

    time: Optional[str]
    reason: str
    victim: WorkloadRef
    preemptor: Optional[WorkloadRef]
    count: int
    message: str


@dataclass(frozen=True)
class QueueView:
    """One ClusterQueue: ``role`` (our kueue-cohorts/role label, "" if absent), ``active`` (condition Active),
    Kueue's workload counters, its resources (spec order), its unfinished Workloads (admitted first) and
    ``weighted_share`` (status.fairSharing.weightedShare, only recorded when Fair Sharing is on; else None)."""

    name: str
    cohort: str
    role: str
    active: Optional[bool]
    admitted_workloads: int
    reserving_workloads: int
    pending_workloads: int
    resources: tuple[ResourceRow, ...]
    workloads: tuple[WorkloadRow, ...]
    weighted_share: Optional[int] = None


@dataclass(frozen=True)
class CohortView:
    """One cohort (``name`` "" for ClusterQueues without cohortName): the Cohort object's own quota when it exists
    (``quota``, with what of it is lent), its ClusterQueues, its latest preemptions, newest first, and the Cohort
    object's ``weighted_share`` (status.fairSharing.weightedShare: the only status a v1beta2 Cohort has)."""

    name: str
    quota: tuple[ResourceRow, ...]
    cluster_queues: tuple[QueueView, ...]
    preemptions: tuple[Preemption, ...]
    weighted_share: Optional[int] = None


@dataclass(frozen=True)
class StatusView:
    """The whole view at ``time`` (RFC 3339): cohorts by name; ``unavailable`` {list: reason} (see Snapshot)."""

    time: str
    cohorts: tuple[CohortView, ...]
    unavailable: Mapping[str, str] = field(default_factory=dict)


# --- helpers -----------------------------------------------------------------------------------------------------


def rfc3339(value: Any) -> Optional[str]:
    """Normalise an API time (``2026-11-30T21:00:00Z``, ``...+00:00``, fractional seconds, or a datetime) to
    ``YYYY-MM-DDTHH:MM:SSZ`` in UTC; None and unparsable text give None."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(text: Optional[str]) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else float("-inf")


def _q(value: Any) -> Decimal:
    return quantity.parse(value) if value not in (None, "") else Decimal(0)


def _text(value: Decimal, like: Iterable[Optional[str]] = ()) -> str:
    """Canonical text of ``value``, binary-suffixed when the quota it relates to was written binary (memory)."""
    return quantity.canonical(value, binary=any(t and quantity.is_binary(t) for t in like))


def _conditions(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {c.get("type"): c for c in ((obj.get("status") or {}).get("conditions") or [])}


def _flavor_totals(status: Mapping[str, Any], key: str) -> dict[tuple[str, str], dict[str, str]]:
    out: dict[tuple[str, str], dict[str, str]] = {}
    for flavor in status.get(key) or []:
        for res in flavor.get("resources") or []:
            out[(flavor.get("name", ""), res.get("name", ""))] = res
    return out


def _spec_rows(spec: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    rows = []
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                rows.append((flavor.get("name", ""), res.get("name", ""), res))
    return rows


# --- ClusterQueues and lending -----------------------------------------------------------------------------------


def _lent(cqs: Sequence[Mapping[str, Any]], cohort_obj: Optional[Mapping[str, Any]]
          ) -> tuple[dict[tuple[str, str, str], Decimal], dict[tuple[str, str], Decimal]]:
    """Per (ClusterQueue name, flavor, resource) and per (flavor, resource) of the Cohort object: the derived lent
    amount (see module doc). Returns (by_queue, by_cohort_object)."""
    idle: dict[tuple[str, str], dict[str, Decimal]] = {}
    borrowed: dict[tuple[str, str], Decimal] = {}
    for cq in cqs:
        usage = _flavor_totals(cq.get("status") or {}, "flavorsUsage")
        for flavor, res, quota in _spec_rows(cq.get("spec") or {}):
            used = usage.get((flavor, res), {})
            nominal = _q(quota.get("nominalQuota"))
            lendable = nominal if quota.get("lendingLimit") is None else min(nominal, _q(quota["lendingLimit"]))
            guaranteed = nominal - lendable
            own = _q(used.get("total"))
            own_lendable_use = max(Decimal(0), min(own, nominal) - guaranteed)
            idle.setdefault((flavor, res), {})[cq["metadata"]["name"]] = max(Decimal(0), lendable - own_lendable_use)
            borrowed[(flavor, res)] = borrowed.get((flavor, res), Decimal(0)) + _q(used.get("borrowed"))
    if cohort_obj is not None:
        for flavor, res, quota in _spec_rows(cohort_obj.get("spec") or {}):
            idle.setdefault((flavor, res), {})[""] = _q(quota.get("nominalQuota"))  # "" = the Cohort object
    by_queue: dict[tuple[str, str, str], Decimal] = {}
    by_cohort: dict[tuple[str, str], Decimal] = {}
    for key, lenders in idle.items():
        total_idle = sum(lenders.values(), Decimal(0))
        out = borrowed.get(key, Decimal(0))
        for lender, amount in lenders.items():
            share = (out * amount / total_idle) if total_idle > 0 else Decimal(0)
            if lender == "":
                by_cohort[key] = share
            else:
                by_queue[(lender, *key)] = share
    return by_queue, by_cohort


def _queue_rows(cq: Mapping[str, Any], lent: Mapping[tuple[str, str, str], Decimal]) -> tuple[ResourceRow, ...]:
    status = cq.get("status") or {}
    usage, reservation = _flavor_totals(status, "flavorsUsage"), _flavor_totals(status, "flavorsReservation")
    rows = []
    for flavor, res, quota in _spec_rows(cq.get("spec") or {}):
        used, reserved = usage.get((flavor, res), {}), reservation.get((flavor, res), {})
        like = (quota.get("nominalQuota"), quota.get("borrowingLimit"))
        rows.append(ResourceRow(
            flavor=flavor, resource=res,
            nominal_quota=_text(_q(quota.get("nominalQuota")), like),
            borrowing_limit=None if quota.get("borrowingLimit") is None else _text(_q(quota["borrowingLimit"]), like),
            lending_limit=None if quota.get("lendingLimit") is None else _text(_q(quota["lendingLimit"]), like),
            usage=_text(_q(used.get("total")), like), reserved=_text(_q(reserved.get("total")), like),
            borrowed=_text(_q(used.get("borrowed")), like),
            lent=_text(lent.get((cq["metadata"]["name"], flavor, res), Decimal(0)), like)))
    return tuple(rows)


def _cohort_rows(obj: Mapping[str, Any], lent: Mapping[tuple[str, str], Decimal]) -> tuple[ResourceRow, ...]:
    rows = []
    for flavor, res, quota in _spec_rows(obj.get("spec") or {}):
        like = (quota.get("nominalQuota"),)
        rows.append(ResourceRow(
            flavor=flavor, resource=res, nominal_quota=_text(_q(quota.get("nominalQuota")), like),
            borrowing_limit=None if quota.get("borrowingLimit") is None else _text(_q(quota["borrowingLimit"]), like),
            lending_limit=None if quota.get("lendingLimit") is None else _text(_q(quota["lendingLimit"]), like),
            usage="0", reserved="0", borrowed="0", lent=_text(lent.get((flavor, res), Decimal(0)), like)))
    return tuple(rows)


# --- Workloads ---------------------------------------------------------------------------------------------------


def _usage_of(wl: Mapping[str, Any]) -> dict[str, str]:
    totals: dict[str, Decimal] = {}
    texts: dict[str, list[str]] = {}
    admission = (wl.get("status") or {}).get("admission") or {}
    for psa in admission.get("podSetAssignments") or []:
        for res, qty in (psa.get("resourceUsage") or {}).items():
            totals[res] = totals.get(res, Decimal(0)) + _q(qty)
            texts.setdefault(res, []).append(str(qty))
    return {res: _text(v, texts[res]) for res, v in totals.items()}


def workload_row(wl: Mapping[str, Any], queue_of: Mapping[tuple[str, str], str]) -> Optional[WorkloadRow]:
    """Summarise one Workload dict; None for a finished one.

    Args:
        wl: a kueue.x-k8s.io/v1beta2 Workload as the API returns it.
        queue_of: {(namespace, LocalQueue name): ClusterQueue name} (from the LocalQueues), for pending Workloads.
    """
    conds = _conditions(wl)
    if (conds.get("Finished") or {}).get("status") == "True":
        return None
    meta, spec = wl.get("metadata") or {}, wl.get("spec") or {}
    ns, lq = meta.get("namespace", ""), spec.get("queueName", "")
    admission = (wl.get("status") or {}).get("admission") or {}
    admitted, reserved = conds.get("Admitted") or {}, conds.get("QuotaReserved") or {}
    preempted = conds.get("Preempted") or {}
    if admitted.get("status") == "True":
        state, cond = "admitted", admitted
    elif reserved.get("status") == "True":
        state, cond = "reserving", reserved
    else:
        state, cond = "pending", reserved
    reason, message = "", ""
    if state == "pending":
        if preempted.get("status") == "True":
            reason, message = preempted.get("reason", ""), preempted.get("message", "")
        else:
            reason, message = cond.get("reason", ""), cond.get("message", "")
        if spec.get("active") is False:
            reason = "Inactive"
    elif (conds.get("Evicted") or {}).get("status") == "True":  # still holds quota while its Pods stop
        reason, message = "Evicted", conds["Evicted"].get("message", "")
    ref = spec.get("priorityClassRef") or {}
    return WorkloadRow(
        namespace=ns, name=meta.get("name", ""), uid=meta.get("uid", ""),
        cluster_queue=admission.get("clusterQueue") or queue_of.get((ns, lq), ""), local_queue=lq, state=state,
        priority=spec.get("priority"), priority_class=ref.get("name"),
        since=rfc3339(cond.get("lastTransitionTime")) or rfc3339(meta.get("creationTimestamp")),
        reason=reason, message=message, usage=_usage_of(wl) if state != "pending" else {},
        cluster=str((wl.get("status") or {}).get("clusterName") or ""))


# --- preemptions -------------------------------------------------------------------------------------------------


def _event_time(ev: Mapping[str, Any]) -> Optional[str]:
    series = ev.get("series") or {}
    for value in (series.get("lastObservedTime"), ev.get("eventTime"), ev.get("lastTimestamp"),
                  ev.get("firstTimestamp"), (ev.get("metadata") or {}).get("creationTimestamp")):
        text = rfc3339(value)
        if text:
            return text
    return None


def _last(path: str, index: int) -> str:
    parts = [p for p in (path or "").split("/") if p]
    return parts[index] if len(parts) >= -index else ""


def preemptions(snapshot: Snapshot, workloads: Iterable[WorkloadRow] = ()) -> list[Preemption]:
    """Every preemption the snapshot remembers, newest first (unknown times last). See the module doc for the
    sources; a victim's Preempted condition and the event of the same preemption (same victim and preemptor,
    within SAME_PREEMPTION_SECONDS) are one preemption."""
    names: dict[str, tuple[str, str]] = {}
    for wl in snapshot.workloads:
        meta = wl.get("metadata") or {}
        names[meta.get("uid", "")] = (meta.get("namespace", ""), meta.get("name", ""))
    victim_queue: dict[tuple[str, str], str] = {}  # (victim uid, preemptor uid) -> victim's ClusterQueue
    for ev in snapshot.events:
        if ev.get("reason") != "PreemptedWorkload":
            continue
        obj = ev.get("involvedObject") or {}
        names.setdefault(obj.get("uid", ""), (obj.get("namespace", ""), obj.get("name", "")))
        m = _PREEMPTED_WORKLOAD.search(ev.get("message") or "")
        if m:
            names.setdefault(m["uid"], (m["ns"], m["name"]))
            victim_queue[(m["uid"], obj.get("uid", ""))] = m["cq"]
    admitted_in = {w.uid: w.cluster_queue for w in workloads}

    def ref(uid: str, cq: str) -> WorkloadRef:
        ns, name = names.get(uid, ("", ""))
        return WorkloadRef(ns, name, uid, cq or admitted_in.get(uid, ""))

    found: list[Preemption] = []
    for ev in snapshot.events:
        if ev.get("reason") != "Preempted":
            continue
        obj = ev.get("involvedObject") or {}
        message = ev.get("message") or ""
        m = _PREEMPTED.search(message)
        vuid = obj.get("uid", "")
        names.setdefault(vuid, (obj.get("namespace", ""), obj.get("name", "")))
        puid = m["uid"] if m else ""
        reason = PREEMPTION_REASONS.get(m["why"].strip(), m["why"].strip()) if m else ""
        vcq = victim_queue.get((vuid, puid)) or (_last(m["preemptee_path"], -1) if m else "")
        found.append(Preemption(
            time=_event_time(ev), reason=reason, victim=ref(vuid, vcq),
            preemptor=ref(puid, _last(m["preemptor_path"], -1)) if m and puid not in ("", "UNKNOWN") else None,
            count=int((ev.get("series") or {}).get("count") or ev.get("count") or 1), message=message))
    for wl in snapshot.workloads:
        cond = _conditions(wl).get("Preempted")
        if not cond:
            continue
        meta = wl.get("metadata") or {}
        message = cond.get("message") or ""
        m = _PREEMPTED.search(message)
        if cond.get("status") == "True":
            reason, time = cond.get("reason", ""), rfc3339(cond.get("lastTransitionTime"))
        elif message.startswith("Previously: ") and m:
            reason, time = PREEMPTION_REASONS.get(m["why"].strip(), m["why"].strip()), None
        else:
            continue
        vuid, puid = meta.get("uid", ""), m["uid"] if m else ""
        same = [p for p in found if p.victim.uid == vuid and (p.preemptor.uid if p.preemptor else "") == puid
                and (time is None or p.time is None
                     or abs(_seconds(p.time) - _seconds(time)) <= SAME_PREEMPTION_SECONDS)]
        if same:
            if cond.get("status") == "True":  # the condition carries Kueue's reason code itself
                found = [p if p is not same[0] else Preemption(p.time, reason, p.victim, p.preemptor, p.count,
                                                               p.message) for p in found]
            continue
        vcq = victim_queue.get((vuid, puid)) or (_last(m["preemptee_path"], -1) if m else "")
        found.append(Preemption(
            time=time, reason=reason, victim=ref(vuid, vcq),
            preemptor=ref(puid, _last(m["preemptor_path"], -1)) if m and puid not in ("", "UNKNOWN") else None,
            count=1, message=message))
    return sorted(found, key=lambda p: (_seconds(p.time), p.victim.label()), reverse=True)


# --- the whole view ----------------------------------------------------------------------------------------------


def build_view(snapshot: Snapshot, cohorts: Optional[Iterable[str]] = None, latest: int = 10) -> StatusView:
    """Build the StatusView of ``snapshot``.

    Args:
        snapshot: what the cluster said (cohorts.live.read_snapshot, or fixed dicts in tests).
        cohorts: only these cohorts (e.g. a stack's); None = every cohort on the cluster, and ClusterQueues
            without a cohort under the cohort "".
        latest: how many preemptions to keep per cohort (newest first).
    Returns:
        The StatusView; cohorts sorted by name, ClusterQueues by role (inference, training, tenant, others) and
        name, Workloads admitted first then by name.
    """
    wanted = None if cohorts is None else set(cohorts)
    by_cohort: dict[str, list[dict[str, Any]]] = {}
    for cq in snapshot.cluster_queues:
        name = (cq.get("spec") or {}).get("cohortName") or ""
        if wanted is None or name in wanted:
            by_cohort.setdefault(name, [])
            by_cohort[name].append(cq)
    if wanted is not None:
        for name in wanted:
            by_cohort.setdefault(name, [])
    objects = {(o.get("metadata") or {}).get("name"): o for o in snapshot.cohorts}
    queue_of = {((lq.get("metadata") or {}).get("namespace", ""), (lq.get("metadata") or {}).get("name", "")):
                (lq.get("spec") or {}).get("clusterQueue", "") for lq in snapshot.local_queues}
    rows = [r for r in (workload_row(wl, queue_of) for wl in snapshot.workloads) if r is not None]
    every = preemptions(snapshot, rows)
    cohort_of_queue = {cq["metadata"]["name"]: name for name, cqs in by_cohort.items() for cq in cqs}
    out = []
    for name in sorted(by_cohort):
        cqs = by_cohort[name]
        obj = objects.get(name) if name else None
        lent_q, lent_c = _lent(cqs, obj)
        queues = []
        for cq in sorted(cqs, key=lambda c: (ROLE_ORDER.get(_role(c), 9), c["metadata"]["name"])):
            qname = cq["metadata"]["name"]
            status = cq.get("status") or {}
            active = (_conditions(cq).get("Active") or {}).get("status")
            mine = sorted((w for w in rows if w.cluster_queue == qname),
                          key=lambda w: ({"admitted": 0, "reserving": 1}.get(w.state, 2), w.namespace, w.name))
            queues.append(QueueView(
                name=qname, cohort=name, role=_role(cq), active=None if active is None else active == "True",
                admitted_workloads=int(status.get("admittedWorkloads") or 0),
                reserving_workloads=int(status.get("reservingWorkloads") or 0),
                pending_workloads=int(status.get("pendingWorkloads") or 0),
                resources=_queue_rows(cq, lent_q), workloads=tuple(mine), weighted_share=_share(cq)))
        mine_p = [p for p in every
                  if cohort_of_queue.get(p.victim.cluster_queue) == name
                  or (p.victim.cluster_queue not in cohort_of_queue and _victim_cohort(p) == name and name)]
        out.append(CohortView(name=name, quota=_cohort_rows(obj, lent_c) if obj else (),
                              cluster_queues=tuple(queues), preemptions=tuple(mine_p[:latest]),
                              weighted_share=_share(obj) if obj else None))
    return StatusView(time=rfc3339(snapshot.time) or "", cohorts=tuple(out), unavailable=dict(snapshot.unavailable))


def _share(obj: Mapping[str, Any]) -> Optional[int]:
    share = ((obj.get("status") or {}).get("fairSharing") or {}).get("weightedShare")
    return None if share is None else int(share)


def _role(cq: Mapping[str, Any]) -> str:
    return str(((cq.get("metadata") or {}).get("labels") or {}).get(ROLE_LABEL, ""))


def _victim_cohort(p: Preemption) -> str:
    m = _PREEMPTED.search(p.message)
    return _last(m["preemptee_path"], -2) if m else ""
