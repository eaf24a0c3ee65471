"""``namespaces_selected``: each LocalQueue's namespace is selected by its ClusterQueue's live namespaceSelector."""
from __future__ import annotations

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import Context, KindNotServed, Unreadable
from kueue_cohorts.policy.rules.vocabulary import selectors


def namespaces_selected(ctx: Context) -> list[Difference]:
    """The namespace of every expected LocalQueue exists and its labels are selected by the live namespaceSelector
    of the LocalQueue's ClusterQueue."""
    out = []
    queues = {m["metadata"]["name"]: m for m in ctx.expected_of("ClusterQueue")}
    for lq in ctx.expected_of("LocalQueue"):
        ns, cq_name = lq["metadata"]["namespace"], lq["spec"]["clusterQueue"]
        if cq_name not in queues:
            continue
        try:
            cq = ctx.get(queues[cq_name])
            namespace = ctx.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        except (KindNotServed, Unreadable):
            continue
        if cq is None:
            continue
        selector = (cq.get("spec") or {}).get("namespaceSelector")
        if namespace is None:
            out.append(Difference("Namespace", ns, "", "", "present", None,
                                  f"missing: LocalQueue {ns}/{lq['metadata']['name']} lives there"))
            continue
        labels = (namespace.get("metadata") or {}).get("labels") or {}
        if not selectors.matches(selector, labels):
            out.append(Difference(
                "Namespace", ns, "", "metadata.labels", selector, labels,
                f"ClusterQueue {cq_name}'s namespaceSelector does not select this namespace: Workloads of LocalQueue "
                f"{ns}/{lq['metadata']['name']} are never admitted"))
    return out
