"""QUANTITIES: every quantity of any object is a Kubernetes quantity, never negative, and whole for extended resources.

Where an object carries quantities is `vocabulary/resources.py` (`quantity_fields`: ClusterQueue and Cohort quotas,
container requests and limits in any pod template, node capacity); the value rules are
`vocabulary/resource_values.py` (k8s.io/apimachinery `pkg/api/resource/quantity.go`; k8s.io/kubernetes
`pkg/apis/core/validation` for extended resources).
"""
from __future__ import annotations

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import KubeObject, guarded, violation
from .vocabulary.resource_values import quantity_problem
from .vocabulary.resources import quantity_fields
from .vocabulary.values import Violation

SCHEMA_GROUPS = ("apiextensions.k8s.io",)
"""API groups whose objects are schemas (CustomResourceDefinitions), not objects with quantities."""


def check_quantities(obj: KubeObject, policy: str) -> list[Violation]:
    """Every resource quantity of `obj` (see `quantity_fields`) passes `quantity_problem`.

    Args:
        obj: any Kubernetes object of the stack; a CustomResourceDefinition (apiextensions.k8s.io) is a schema, whose
            `resources`/`requests`/`limits` keys describe fields rather than hold quantities, so it is not judged.
        policy: the policy name for the Violations.
    Returns:
        One Violation per bad quantity, naming its exact field path and raw value, with the rule and fix of
        `quantity_problem`; the fail-closed violation when a quantity is unknown at preview.
    """
    if obj.group in SCHEMA_GROUPS:
        return []

    def check() -> list[Violation]:
        found = []
        for field, resource, raw in quantity_fields(obj):
            problem = quantity_problem(resource, raw)
            if problem is not None:
                found.append(violation(obj, policy, field, raw, *problem))
        return found

    return guarded(obj, check)


QUANTITIES: Declaration = Declaration(
    name="quantities",
    description="Every quantity is a Kubernetes quantity, never negative, and whole for extended resources (GPUs).",
    promise=Promise.WELL_FORMED, level=Level.MANDATORY, scope=Scope.RESOURCE,
    check=lambda obj, options: check_quantities(obj, QUANTITIES.name))
