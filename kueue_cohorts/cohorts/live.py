"""Read what the status view needs from a live cluster, as plain dicts (the API's JSON), into a ``Snapshot``.

Kueue objects (kueue.x-k8s.io/v1beta2): ClusterQueues, Cohorts, LocalQueues, Workloads; core/v1 Events about
Workloads with reason ``Preempted`` (on the victim) and ``PreemptedWorkload`` (on the preemptor), which Kueue's
scheduler records at each preemption (pkg/scheduler/preemption/preemption.go ``IssuePreemptions``, v0.19.2).
A list the caller may not read (RBAC) or the cluster does not serve is recorded in ``Snapshot.unavailable`` instead
of failing the whole view.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Callable

from kubernetes import client as k8s

KUEUE = ("kueue.x-k8s.io", "v1beta2")
#: Event reasons Kueue writes at a preemption (regarding the victim / the preemptor Workload).
PREEMPTION_EVENT_REASONS = ("Preempted", "PreemptedWorkload")


@dataclass
class Snapshot:
    """What the cluster said at ``time`` (UTC): lists of object dicts in the API's JSON field names.

    ``unavailable``: {what: reason} for each list that could not be read (e.g. ``{"cohorts": "Forbidden"}``).
    """

    time: datetime
    cluster_queues: list[dict[str, Any]] = field(default_factory=list)
    cohorts: list[dict[str, Any]] = field(default_factory=list)
    local_queues: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)


class ClusterUnreachable(Exception):
    """The API server did not answer (connection refused, TLS, timeout) or refused the ClusterQueue list: the view
    has nothing to show. One message."""


def _items(listed: object) -> list[dict[str, Any]]:
    """The ``items`` of a list the API returned (the client types it ``object``; it is the JSON list object)."""
    items = listed.get("items") if isinstance(listed, dict) else None
    return list(items) if isinstance(items, list) else []


def _guard(snapshot: Snapshot, what: str, read: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    try:
        return read()
    except k8s.ApiException as exc:
        snapshot.unavailable[what] = f"{exc.status} {exc.reason}"
        return []


def read_snapshot(api: k8s.ApiClient) -> Snapshot:
    """Read one Snapshot through ``api``.

    Raises:
        ClusterUnreachable: the API server is unreachable, or ClusterQueues cannot be listed (Kueue's v1beta2 API
        not served, or forbidden), since nothing else makes sense without them.
    """
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    snap = Snapshot(time=datetime.now(UTC))
    try:
        snap.cluster_queues = _items(custom.list_cluster_custom_object(*KUEUE, "clusterqueues"))
    except k8s.ApiException as exc:
        hint = " (is Kueue >= 0.16 installed?)" if exc.status == 404 else ""
        raise ClusterUnreachable(f"cannot list ClusterQueues (kueue.x-k8s.io/v1beta2): {exc.status} "
                                 f"{exc.reason}{hint}") from None
    except Exception as exc:  # urllib3 connection / TLS errors: the message is the user's answer
        raise ClusterUnreachable(f"the API server did not answer: {exc}") from None
    snap.cohorts = _guard(snap, "cohorts", lambda: _items(custom.list_cluster_custom_object(*KUEUE, "cohorts")))
    snap.local_queues = _guard(snap, "localqueues",
                               lambda: _items(custom.list_cluster_custom_object(*KUEUE, "localqueues")))
    snap.workloads = _guard(snap, "workloads",
                            lambda: _items(custom.list_cluster_custom_object(*KUEUE, "workloads")))

    def events() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for reason in PREEMPTION_EVENT_REASONS:
            found = core.list_event_for_all_namespaces(field_selector=f"involvedObject.kind=Workload,reason={reason}")
            out.extend(api.sanitize_for_serialization(e) for e in found.items)
        return out

    snap.events = _guard(snap, "events", events)
    return snap
