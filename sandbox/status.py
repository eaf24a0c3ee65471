"""``python -m sandbox status``: component health and, per ClusterQueue, nominal, borrowed and admitted workloads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kubernetes.utils import parse_quantity

from sandbox.cluster import Sandbox


@dataclass(frozen=True)
class QueueUsage:
    """One ClusterQueue as ``status`` shows it: ``name``, ``cohort`` (``spec.cohortName`` or ""), ``nominal``,
    ``borrowing_limit`` and ``usage``/``borrowed`` ({resource: quantity text}, summed over flavors;
    ``status.flavorsUsage[].resources[].{total,borrowed}``), ``admitted``/``reserving``/``pending`` workload counts
    (``status.admittedWorkloads`` etc.)."""

    name: str
    cohort: str
    nominal: Mapping[str, str]
    borrowing_limit: Mapping[str, str]
    usage: Mapping[str, str]
    borrowed: Mapping[str, str]
    admitted: int
    reserving: int
    pending: int


def _sum(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    totals: dict[str, object] = {}
    for name, qty in items:
        totals[name] = totals.get(name, 0) + parse_quantity(qty)
    return {k: _fmt(v) for k, v in totals.items()}


def _fmt(value) -> str:
    """Integers as they are, whole binary multiples with their suffix (8589934592 -> 8Gi), fractions as decimals."""
    if value != int(value):
        return str(value.normalize())
    number = int(value)
    for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
        if number and number % size == 0 and number >= size:
            return f"{number // size}{suffix}"
    return str(number)


def queue_usage(cq: Mapping) -> QueueUsage:
    """Summarise one ClusterQueue object (a dict as returned by the API) into a :class:`QueueUsage`."""
    spec, status = cq.get("spec", {}), cq.get("status", {}) or {}
    nominal, limit = [], []
    for group in spec.get("resourceGroups", []):
        for flavor in group.get("flavors", []):
            for res in flavor.get("resources", []):
                nominal.append((res["name"], res["nominalQuota"]))
                if res.get("borrowingLimit") is not None:
                    limit.append((res["name"], res["borrowingLimit"]))
    usage, borrowed = [], []
    for flavor in status.get("flavorsUsage", []) or []:
        for res in flavor.get("resources", []) or []:
            usage.append((res["name"], res.get("total", "0")))
            borrowed.append((res["name"], res.get("borrowed", "0")))
    return QueueUsage(
        name=cq["metadata"]["name"], cohort=spec.get("cohortName", ""), nominal=_sum(nominal),
        borrowing_limit=_sum(limit), usage=_sum(usage), borrowed=_sum(borrowed),
        admitted=int(status.get("admittedWorkloads", 0) or 0), reserving=int(status.get("reservingWorkloads", 0) or 0),
        pending=int(status.get("pendingWorkloads", 0) or 0),
    )


def _resources(values: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "-"


def render(sandbox: Sandbox) -> tuple[str, bool]:
    """Return the status text and whether every component is healthy. Queries ClusterQueues only when the
    apiserver answers."""
    lines = [f"state dir: {sandbox.paths.root}", f"kubeconfig: {sandbox.paths.kubeconfig}"]
    st = sandbox.state()
    health = sandbox.health()
    width = max(len("component"), *(len(name) for name in health))
    lines.append(f"{'component':<{width}} {'pid':>7}  {'version':<8} health")
    for name, (running, ok, detail) in health.items():
        rec = st.processes.get(name)
        pid = str(rec.pid) if rec and running else "-"
        version = st.versions.get(name, "")
        lines.append(f"{name:<{width}} {pid:>7}  {version:<8} {'ok' if ok else 'DOWN'} ({detail[:60]})")
    all_ok = all(ok for _, ok, _ in health.values())
    if health["kube-apiserver"][1]:
        from kubernetes import client as k8s

        api = sandbox._client()
        nodes = k8s.CoreV1Api(api).list_node().items
        ready = sum(1 for n in nodes if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or []))
        lines.append(f"nodes: {ready}/{len(nodes)} Ready")
        try:
            cqs = k8s.CustomObjectsApi(api).list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues")
        except k8s.ApiException as exc:
            lines.append(f"ClusterQueues: unavailable ({exc.reason})")
        else:
            items = [queue_usage(cq) for cq in cqs.get("items", [])]
            lines.append(f"ClusterQueues: {len(items)}")
            for q in sorted(items, key=lambda q: (q.cohort, q.name)):
                lines.append(f"  {q.name} (cohort {q.cohort or '-'}): admitted {q.admitted}, reserving "
                             f"{q.reserving}, pending {q.pending}")
                lines.append(f"    nominal:  {_resources(q.nominal)}")
                lines.append(f"    in use:   {_resources(q.usage)}")
                lines.append(f"    borrowed: {_resources(q.borrowed)}")
    return "\n".join(lines), all_ok
