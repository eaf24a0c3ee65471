"""``inference_never_borrows``: the inference ClusterQueue lends but never borrows, on the cluster too."""
from __future__ import annotations

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import Context, KindNotServed, Unreadable
from kueue_cohorts.components.settings import quantity
from kueue_cohorts.policy.rules.vocabulary.objects import ROLE_LABEL


def inference_never_borrows(ctx: Context) -> list[Difference]:
    """A stack's inference ClusterQueue (label kueue-cohorts/role=inference) has borrowingLimit 0 on every resource
    of every flavor on the cluster, and borrows nothing (status.flavorsUsage[].resources[].borrowed)."""
    rule = "the inference ClusterQueue must never borrow (an absent borrowingLimit means unlimited)"
    out = []
    for manifest in ctx.expected_of("ClusterQueue"):
        if (manifest["metadata"].get("labels") or {}).get(ROLE_LABEL) != "inference":
            continue
        try:
            live = ctx.get(manifest)
        except (KindNotServed, Unreadable):
            continue  # objects_match reports it
        if live is None:
            continue
        name = manifest["metadata"]["name"]
        for g, group in enumerate((live.get("spec") or {}).get("resourceGroups") or []):
            for f, flavor in enumerate(group.get("flavors") or []):
                for r, res in enumerate(flavor.get("resources") or []):
                    limit = res.get("borrowingLimit")
                    if limit is None or quantity.parse(limit) != 0:
                        out.append(Difference(
                            "ClusterQueue", name, "", f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                            ".borrowingLimit", "0", limit, rule, res.get("name", "")))
        for f, flavor in enumerate((live.get("status") or {}).get("flavorsUsage") or []):
            for r, res in enumerate(flavor.get("resources") or []):
                if quantity.parse(res.get("borrowed") or "0") != 0:
                    out.append(Difference("ClusterQueue", name, "", f"status.flavorsUsage[{f}].resources[{r}].borrowed",
                                          "0", res.get("borrowed"), "the inference ClusterQueue is borrowing",
                                          res.get("name", "")))
    return out
