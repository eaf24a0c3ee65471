"""``python -m kueue_cohorts.cohorts trace synth|record``: get a demand trace (whatif/trace.py) for a stack.

- ``synth``: a seeded synthetic week for the stack's queues (whatif/synth.py), offline;
- ``record``: the Workloads of the stack's live cluster, watched for a while through the Kubernetes watch API
  (``watch_workloads``), turned into trace lines (``TraceRecorder``): the trace starts when the recording starts,
  with what runs then (admitted workloads with their reservation time, flavors and priority class: the state at the
  change); then submit time = creationTimestamp, queue, priority class, pod count and per-pod requests from
  spec.podSets, duration = from the first QuotaReserved to Finished, deletedSeconds = when one deleted unfinished
  went (a workload still running when the recording stops runs until the horizon).
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping, Optional, TextIO

from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from kueue_cohorts.components.settings import Settings, quantity
from kueue_cohorts.whatif.synth import synth
from kueue_cohorts.whatif.trace import Trace, TraceWorkload, WorkloadKind

KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"


def as_object(value: object) -> dict[str, Any]:
    """A JSON object the kubernetes client returned (it types custom objects `object`); {} for anything else."""
    return value if isinstance(value, dict) else {}


def synth_trace(settings: Settings, seed: int, days: float, step_minutes: float, training_per_day: float,
                tenant_per_day: float) -> Trace:
    """`whatif.synth.synth` (the command's one call; kept here so the CLI stays a parser). Raises ValueError."""
    return synth(settings, seed=seed, days=days, step_minutes=step_minutes, training_per_day=training_per_day,
                 tenant_per_day=tenant_per_day)


def _time(text: Optional[str]) -> Optional[float]:
    if not text:
        return None
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


def _label(name: str) -> str:
    """A Workload name as a trace name (a DNS-1123 label): names beyond 63 characters keep 54 and a hash."""
    if len(name) <= 63 and "." not in name:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name.replace('.', '-')[:54].rstrip('-')}-{digest}"


def _condition(obj: Mapping[str, Any], kind: str) -> Optional[Mapping[str, Any]]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


@dataclass
class _Seen:
    obj: Mapping[str, Any]
    created: float
    reserved: Optional[float] = None
    finished: Optional[float] = None
    deleted: Optional[float] = None
    flavors: dict[str, str] = field(default_factory=dict)


def workload_priority_class(spec: Mapping[str, Any]) -> Optional[str]:
    """The WorkloadPriorityClass a Workload's spec names: `priorityClassRef` (kueue.x-k8s.io/v1beta2, group
    kueue.x-k8s.io, kind WorkloadPriorityClass: apis/kueue/v1beta2/workload_types.go l.49, v0.19.2); None for
    none, or for a Pod PriorityClass (group scheduling.k8s.io), which the trace format does not carry. A
    `priorityClassName` (v1beta1) is read too."""
    ref = spec.get("priorityClassRef") or {}
    if ref:
        return str(ref.get("name")) if ref.get("group") == KUEUE_GROUP and ref.get("name") else None
    return spec.get("priorityClassName") or None


def admitted_flavors(obj: Mapping[str, Any]) -> dict[str, str]:
    """resource -> ResourceFlavor of a Workload's first pod set admission (status.admission.podSetAssignments[0]
    .flavors, kueue.x-k8s.io/v1beta2); {} when it is not admitted."""
    assignments = ((obj.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    if not assignments:
        return {}
    return {str(r): str(f) for r, f in (assignments[0].get("flavors") or {}).items()}


@dataclass
class TraceRecorder:
    """Turns Workload objects (as the watch API sends them, in any order, each seen any number of times) into a
    Trace of the stack's LocalQueues.

    kinds: (namespace, LocalQueue) -> WorkloadKind (the stack's queues; a Workload of another queue is skipped).
    checkpoint_seconds: the training checkpoint interval to write on training lines (None: none).
    """

    kinds: Mapping[tuple[str, str], WorkloadKind]
    checkpoint_seconds: Optional[float] = None
    seen: dict[str, _Seen] = field(default_factory=dict)
    clock: Callable[[], float] = time.time
    """When an object is observed (epoch seconds): refines a creationTimestamp, which has whole seconds only."""

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Take one Workload object (ADDED or MODIFIED): remember its creation, its first quota reservation and its
        finish."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if (meta.get("namespace"), spec.get("queueName")) not in self.kinds:
            return
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        created = _time(meta.get("creationTimestamp")) or 0.0
        if key not in self.seen:
            now = self.clock()
            if created <= now < created + 2:  # seen as it was created: the order of two in one second is kept
                created = now
        entry = self.seen.setdefault(key, _Seen(obj, created))
        entry.obj = obj
        reserved = _condition(obj, "QuotaReserved")
        if reserved and reserved.get("status") == "True" and entry.reserved is None:
            entry.reserved = _time(reserved.get("lastTransitionTime"))
            entry.flavors = admitted_flavors(obj)
        finished = _condition(obj, "Finished")
        if finished and finished.get("status") == "True":
            entry.finished = _time(finished.get("lastTransitionTime"))

    def observe_deleted(self, obj: Mapping[str, Any], when: float) -> None:
        """Take a DELETED Workload seen at `when` (epoch seconds): one that never finished becomes a line with
        deletedSeconds (a replica scaled down, a job cancelled)."""
        self.observe(obj)
        meta = obj.get("metadata") or {}
        entry = self.seen.get(f"{meta.get('namespace')}/{meta.get('name')}")
        if entry is not None and entry.finished is None:
            entry.deleted = when

    def trace(self, until: float, start: Optional[float] = None) -> Trace:
        """The Trace of what was observed; `until` (epoch seconds) is the end of the recording (the horizon).

        `start` (epoch seconds): when the recording began (its list), the trace's 0, so the trace begins with the
        state at that moment: a workload whose quota was reserved before it and not finished then is a running
        line (`runningSinceSeconds` <= 0, its admitted `flavors`, submitSeconds 0), one created before it and not
        admitted is pending from 0, one finished before it is left out. None: times from the earliest creation.
        Workloads with no pod set are skipped. Raises TraceError (never for objects the API server accepted).
        """
        if not self.seen:
            return Trace.build([], 1.0)
        if start is None:
            start = min(s.created for s in self.seen.values())
        out = []
        for _key, entry in sorted(self.seen.items(), key=lambda kv: (kv[1].created, kv[0])):
            if entry.finished is not None and entry.finished <= start:
                continue
            running = entry.reserved is not None and entry.reserved <= start
            obj = entry.obj
            meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
            pod_sets = spec.get("podSets") or []
            if not pod_sets:
                continue
            first = pod_sets[0]
            totals: dict[str, Decimal] = {}
            for container in ((first.get("template") or {}).get("spec") or {}).get("containers") or []:
                for resource, value in ((container.get("resources") or {}).get("requests") or {}).items():
                    totals[resource] = totals.get(resource, Decimal(0)) + quantity.parse(value)
            requests = {r: quantity.canonical(v, binary=r == "memory") for r, v in totals.items()}
            if not requests:
                continue
            kind = self.kinds[(str(meta.get("namespace")), str(spec.get("queueName")))]
            duration = (entry.finished - entry.reserved if entry.finished is not None and entry.reserved is not None
                        else None)
            training = kind == WorkloadKind.TRAINING
            since = min(0.0, entry.reserved - start) if running and entry.reserved is not None else None
            if since is not None and duration is not None:
                duration = max(duration, 1.0 - since)  # ends after the start: it was running then
            out.append(TraceWorkload(
                # running at the start: submitted before it, whatever the creation time the recorder refined
                # from when it saw the object (a Workload created and admitted in the second before the list)
                name=_label(str(meta.get("name"))),
                submit_seconds=0.0 if since is not None else max(0.0, entry.created - start),
                namespace=str(meta.get("namespace")), local_queue=str(spec.get("queueName")), kind=kind,
                pods=int(first.get("count", 1)), requests=requests,
                duration_seconds=max(1.0, duration) if duration is not None else None,
                deleted_seconds=(max(0.0, entry.deleted - start, entry.created - start)
                                 if entry.deleted is not None else None),
                priority_class=workload_priority_class(spec),
                checkpoint_interval_seconds=self.checkpoint_seconds if training else None,
                running_since_seconds=since, flavors=entry.flavors if since is not None else {}))
        return Trace.build(out, max(1.0, until - start), "recorded from the live cluster",
                           generator="cohorts trace record")


def watch_workloads(api: k8s.ApiClient, seconds: float, observe: Callable[[Mapping[str, Any]], None],
                    clock: Callable[[], float] = time.time,
                    deleted: Optional[Callable[[Mapping[str, Any], float], None]] = None) -> float:
    """List then watch every Workload (kueue.x-k8s.io/v1beta2) for `seconds`, handing each object to `observe`
    (and a deleted one, with the time, to `deleted`); the watch is resumed from the last resourceVersion when the
    server closes it. Returns the end time (epoch seconds). Raises kubernetes ApiException, urllib3 errors."""
    custom = k8s.CustomObjectsApi(api)
    listed = as_object(custom.list_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "workloads"))
    for item in listed.get("items") or []:
        observe(item)
    version = (listed.get("metadata") or {}).get("resourceVersion")
    end = clock() + seconds
    while clock() < end:
        stream = k8s_watch.Watch()
        remaining = max(1, int(end - clock()))
        for event in stream.stream(custom.list_cluster_custom_object, KUEUE_GROUP, KUEUE_VERSION, "workloads",
                                   resource_version=version, timeout_seconds=remaining):
            obj = event["object"]
            version = (obj.get("metadata") or {}).get("resourceVersion", version)
            if event["type"] in ("ADDED", "MODIFIED"):
                observe(obj)
            elif event["type"] == "DELETED" and deleted is not None:
                deleted(obj, clock())
            if clock() >= end:
                stream.stop()
                break
    return clock()


def write_trace(trace: Trace, out: TextIO) -> None:
    """Write `trace` as JSON Lines to `out`."""
    out.write("\n".join(trace.lines()) + "\n")


def queue_kinds(local_queues: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], WorkloadKind]:
    """(namespace, LocalQueue) -> kind from (namespace, LocalQueue, ClusterQueue role) triples: inference for the
    inference role, training for training and tenant."""
    return {(ns, lq): WorkloadKind.INFERENCE if role == "inference" else WorkloadKind.TRAINING
            for ns, lq, role in local_queues}
