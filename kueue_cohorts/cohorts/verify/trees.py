"""The stack's guarded cohort trees on the live cluster, shared by the promise checks (issue 26 item 8): which cohorts
are the stack's, what it declares, what belongs to a neighbour, and a rule book finding as a Difference."""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import Context, meta
from kueue_cohorts.policy.rules.book.admission import kube_object, tree_field
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_BY, MANAGED_BY_LABEL
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, Violation


def guarded_tree(ctx: Context, live_cohorts: Sequence[Mapping[str, Any]]) -> set[str]:
    """The cohort names of the stack's trees: every layout's cohort, and every live Cohort whose ``spec.parentName``
    chain reaches one (Kueue v1beta2 ``cohort_types.go`` ParentName, v0.19.2)."""
    tree: set[str] = set()
    if ctx.stack is not None:
        tree |= {scope.cohort for scope in ctx.stack.scopes}
    tree |= {str(name) for m in ctx.expected_of("ClusterQueue") if (name := (m.get("spec") or {}).get("cohortName"))}
    parents = {meta(c, "name"): (c.get("spec") or {}).get("parentName") for c in live_cohorts}
    for name in parents:
        seen, node = set(), name
        while node and node not in tree and node not in seen:
            seen.add(node)
            node = parents.get(node)
        if node in tree:
            tree.add(name)
    return tree


def in_tree(obj: Mapping[str, Any], tree: set[str]) -> bool:
    return tree_field(kube_object(obj), tree) is not None


def declared_names(ctx: Context, kind: str) -> set[str]:
    return {m["metadata"]["name"] for m in ctx.expected_of(kind)}


def neighbours(obj: Mapping[str, Any]) -> bool:
    """Whether a live object the stack does not declare carries the project's mark (``app.kubernetes.io/managed-by:
    kueue-cohorts``): another kueue-cohorts stack's, or a program's built with the components, on the same cluster."""
    return bool((meta(obj, "labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY)


def from_violation(violation: Violation, why: str = "") -> Difference:
    subject = violation.subject
    value = None if violation.value is MISSING else violation.value
    rule = f"{violation.policy}: {violation.rule or violation.message}" + (f" ({why})" if why else "")
    return Difference(subject.kind if subject else "*", subject.name if subject else "*",
                      (subject.namespace or "") if subject else "", violation.field, None,
                      json.loads(json.dumps(value, default=str)), rule, fix=violation.fix or "see the rule")
