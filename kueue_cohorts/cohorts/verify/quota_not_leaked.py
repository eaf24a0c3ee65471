"""``quota_not_leaked``: no evicted Workload without pods keeps its quota past ``leak_grace``."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Mapping, Optional

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import KUEUE_API, Context, condition_of, meta, read_list


def _since(condition: Mapping[str, Any]) -> Optional[datetime]:
    try:
        return datetime.fromisoformat(str(condition.get("lastTransitionTime")).replace("Z", "+00:00"))
    except ValueError:
        return None


def quota_not_leaked(ctx: Context) -> list[Difference]:
    """No Workload holds quota (condition QuotaReserved or Admitted True) while Evicted is True, for longer than
    ``ctx.leak_grace``, with no pod left: Kueue has been seen to keep such quota reserved (kueue#14811, #12656),
    and nothing else is admitted against it. A pod counts when it is not Succeeded or Failed and its owner chain
    (through Jobs and ReplicaSets) reaches the Workload's owner (Kueue v0.19.2 ``workload_types.go``
    WorkloadQuotaReserved, WorkloadAdmitted, WorkloadEvicted)."""
    out: list[Difference] = []
    workloads = read_list(ctx, KUEUE_API, "Workload", out)
    now = ctx.now or datetime.now(UTC)
    leaking = []
    for wl in workloads:
        evicted = condition_of(wl, "Evicted")
        holds = any((condition_of(wl, k) or {}).get("status") == "True" for k in ("QuotaReserved", "Admitted"))
        if not holds or not evicted or evicted.get("status") != "True":
            continue
        since = _since(evicted)
        if since is not None and now - since > ctx.leak_grace:
            leaking.append((wl, since))
    if not leaking:
        return out
    owners: dict[str, set[str]] = {}
    for api_version, kind in (("batch/v1", "Job"), ("apps/v1", "ReplicaSet")):
        for obj in read_list(ctx, api_version, kind, out):
            owners[str(meta(obj, "uid"))] = {str(r.get("uid")) for r in meta(obj, "ownerReferences") or []}
    pods = [p for p in read_list(ctx, "v1", "Pod", out)
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]

    def roots(pod: Mapping[str, Any]) -> set[str]:
        found = {str(r.get("uid")) for r in meta(pod, "ownerReferences") or []}
        frontier = set(found)
        for _ in range(3):
            frontier = set().union(*(owners.get(uid, set()) for uid in frontier)) if frontier else set()
            found |= frontier
        return found

    for wl, since in leaking:
        mine = {str(r.get("uid")) for r in meta(wl, "ownerReferences") or []}
        namespace = meta(wl, "namespace") or ""
        if any(meta(p, "namespace") == namespace and roots(p) & mine for p in pods):
            continue
        held = (wl.get("status") or {}).get("admission", {}).get("clusterQueue")
        out.append(Difference(
            "Workload", str(meta(wl, "name")), namespace, "status.conditions", None,
            {"Evicted since": since.isoformat(), "clusterQueue": held},
            f"leaked quota: evicted for more than {int(ctx.leak_grace.total_seconds())} s with no pod, yet it still "
            "holds its quota (QuotaReserved/Admitted), so nothing else is admitted against it (kueue#14811, #12656)",
            fix="delete the Workload (its job's controller recreates it) or restart Kueue's manager"))
    return out
