"""CLUSTER_QUEUE_ROLE (stack policy): a ClusterQueue that shares a cohort tree with an inference queue has a decided
role.

How a role is decided is `vocabulary/roles.py` (`classify`). A queue whose role none of that evidence decides, in a
cohort tree (Kueue v0.19.2 `apis/kueue/v1beta2/cohort_types.go` `spec.parentName`, followed to the root) that holds an
inference queue, cannot be judged: whether it may borrow the inference quota depends on its role.
"""
from __future__ import annotations

from typing import Iterable

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import ROLE_LABEL, KubeObject, cohort_of, violation
from .vocabulary.roles import ROLE_OPTIONS, Roles, cohort_roots, roles_of
from .vocabulary.values import MISSING, UnknownValueError, Violation, format_path, get


def check_undecided(objects: Iterable[KubeObject], roles: Roles, policy: str) -> list[Violation]:
    """CLUSTER_QUEUE_ROLE: a ClusterQueue that shares a cohort tree with an inference queue has a decided role.

    Args:
        objects: every Kubernetes object of the stack (for the Cohort tree).
        roles: `classify(...)` of the same objects.
        policy: the policy name for the Violations.
    Returns:
        One Violation per undecided ClusterQueue in a cohort tree that holds an inference ClusterQueue, field
        `metadata.labels["kueue-cohorts/role"]` with the label's value (MISSING when unset), saying how to declare it.
        A ClusterQueue whose cohort is unknown at preview counts as sharing (fail closed).
    """
    objects = list(objects)
    roots = cohort_roots(objects)
    inference_trees: dict[str, list[str]] = {}
    for name in sorted(roles.inference()):
        try:
            cohort = cohort_of(roles.cluster_queues[name])
        except UnknownValueError:
            continue
        if cohort is not None:
            inference_trees.setdefault(roots.get(cohort, cohort), []).append(name)
    found = []
    for cq in roles.undecided():
        try:
            cohort = cohort_of(cq)
            tree = roots.get(cohort, cohort) if cohort is not None else None
            label = get(cq.labels, ROLE_LABEL)
        except UnknownValueError:
            tree, label = next(iter(inference_trees), None), MISSING
        if tree is None or tree not in inference_trees:
            continue
        names = ", ".join(f"'{n}'" for n in inference_trees[tree])
        queues = "ClusterQueues" if len(inference_trees[tree]) > 1 else "ClusterQueue"
        found.append(violation(
            cq, policy, format_path(["metadata", "labels", ROLE_LABEL]), label,
            f"a ClusterQueue in cohort '{tree}' with the inference {queues} {names} must have a known role "
            f"(inference, training or tenant), because otherwise the pack cannot judge whether it may borrow the "
            f"inference quota",
            f"label it {ROLE_LABEL}: training (or tenant, or inference), or declare its role in the policy pack "
            f"config generated from the stack file"))
    return found


CLUSTER_QUEUE_ROLE: Declaration = Declaration(
    name="cluster-queue-role",
    description="A ClusterQueue that shares a cohort with an inference queue has a decided role.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_undecided(objects, roles_of(objects, options), CLUSTER_QUEUE_ROLE.name),
    options=ROLE_OPTIONS)
