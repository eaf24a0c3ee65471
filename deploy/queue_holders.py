"""What holds a ClusterQueue that ``destroy`` would delete: the workloads that reserve its quota.

Kueue 0.19.2 puts the finalizer ``kueue.x-k8s.io/resource-in-use`` on every ClusterQueue
(apis/kueue/v1beta2/constants.go ``ResourceInUseFinalizerName``) and, once the queue is being deleted, removes it only
when its cache holds no workload with reserved quota in it (pkg/controller/core/clusterqueue_controller.go
``Reconcile``: ``r.cache.ClusterQueueEmpty``). A workload reserves quota while its ``QuotaReserved`` condition is
True (pkg/workload/workload.go ``HasQuotaReservation``), its ``status.admission.clusterQueue`` naming the queue. So a
``destroy`` (or an ``up`` that replaces a queue) while training runs waits for ever (Kueue's troubleshooting guide,
"deleting a ClusterQueue"; kueue#2921). ``holders`` finds those workloads (pure); ``message`` says which and what to
do; ``read`` is the one cluster read (two lists, bounded by a timeout).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Optional

from kubernetes import client, config

__all__ = ["RESOURCE_IN_USE", "holders", "message", "read"]

RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"


def _reserves_quota(workload: Mapping[str, Any]) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conditions)


def holders(queues: Iterable[str], workloads: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The workloads (``<namespace>/<name>``, sorted) that reserve quota in each of ``queues`` (ClusterQueue names),
    only for the queues some workload holds. ``workloads``: Workload objects as the API returns them (dicts)."""
    wanted = set(queues)
    found: dict[str, list[str]] = {}
    for workload in workloads:
        queue = ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue")
        if queue in wanted and _reserves_quota(workload):
            meta = workload.get("metadata") or {}
            found.setdefault(str(queue), []).append(f"{meta.get('namespace')}/{meta.get('name')}")
    return {queue: sorted(names) for queue, names in sorted(found.items())}


def message(stack: str, held: Mapping[str, list[str]], shown: int = 10) -> list[str]:
    """The lines ``deploy destroy`` prints instead of waiting: per queue, the workloads that hold it (at most
    ``shown`` by name, then how many more), then the three ways out."""
    lines = [f"deploy: destroy --stack {stack} would wait for ever: Kueue keeps a ClusterQueue that still has "
             f"admitted workloads ({RESOURCE_IN_USE} finalizer):"]
    for queue, names in held.items():
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        lines.append(f"  ClusterQueue {queue}: {', '.join(names[:shown])}{more}")
    first = next(iter(held))
    lines.append("deploy: nothing was destroyed. Fix: stop the queue so Kueue evicts its workloads (kubectl patch "
                 f"clusterqueue {first} --type merge -p '{{\"spec\":{{\"stopPolicy\":\"HoldAndDrain\"}}}}'), or "
                 "delete or finish those workloads, or wait for them; then run destroy again")
    return lines


def read(kubeconfig: Optional[Path], context: Optional[str], queues: Iterable[str],
         timeout_seconds: float = 15.0) -> dict[str, list[str]]:
    """``holders`` of ``queues`` on the cluster of ``kubeconfig`` / ``context`` (one list of Workloads, all
    namespaces). Raises any client error (the caller decides: it cannot tell, so it says so)."""
    api = config.new_client_from_config(
        config_file=str(kubeconfig) if kubeconfig else None, context=context)
    listed = client.CustomObjectsApi(api).list_cluster_custom_object(
        GROUP, VERSION, "workloads", _request_timeout=timeout_seconds)
    return holders(queues, listed.get("items", []) if isinstance(listed, dict) else [])
