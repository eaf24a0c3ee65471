"""``nothing_undeclared_in_the_tree``: every live ClusterQueue and Cohort of the guarded trees is the stack's."""
from __future__ import annotations

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import KUEUE_API, Context, meta, read_list
from kueue_cohorts.cohorts.verify.trees import declared_names, from_violation, guarded_tree, in_tree
from kueue_cohorts.policy.rules.book.admission import Identities, Request, check_cohort_membership, kube_object


def nothing_undeclared_in_the_tree(ctx: Context) -> list[Difference]:
    """Every live ClusterQueue and Cohort of the guarded trees is one the stack declares: anything else got in by
    another path (kubectl, Helm, GitOps, before or around the ``cohort-membership`` guardrail), and its quota counts
    against inference's GPUs. The rule and fix are the guardrail's own (``policy.rules.book.admission``)."""
    out: list[Difference] = []
    cohorts = read_list(ctx, KUEUE_API, "Cohort", out)
    queues = read_list(ctx, KUEUE_API, "ClusterQueue", out)
    tree = guarded_tree(ctx, cohorts)
    if not tree:
        return out
    for kind, objects in (("ClusterQueue", queues), ("Cohort", cohorts)):
        declared = declared_names(ctx, kind)
        for live in objects:
            if meta(live, "name") in declared or not in_tree(live, tree):
                continue
            out += [from_violation(v, "not declared by the stack") for v in check_cohort_membership(
                Request(kube_object(live)), sorted(tree), Identities())]
    return out
