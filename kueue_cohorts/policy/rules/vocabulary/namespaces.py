"""What the stack says about its namespaces: the labels each is known to carry.

Upstream: Kubernetes v1.36 sets `kubernetes.io/metadata.name` on every namespace (the NamespaceDefaultLabelName
admission, `pkg/apis/core/v1/defaults.go`); everything else a namespace carries comes from the stack's own Namespace
objects (and their patches, once `patches.effective_objects` made them effective).
"""
from __future__ import annotations

from typing import Iterable

from . import memo
from .objects import KubeObject, skipped
from .selectors import NAME_LABEL
from .values import UnknownValueError


def is_namespace(obj: KubeObject) -> bool:
    """True for a core/v1 Namespace."""
    return obj.is_kind("", "Namespace")


def namespace_labels(objects: Iterable[KubeObject]) -> dict[str, dict[str, str]]:
    """The labels each namespace is known to carry: its `kubernetes.io/metadata.name` plus every label the stack's
    own Namespace objects put on it (merged over all objects of that name). Namespaces the stack neither creates nor
    labels are not listed (callers use `{kubernetes.io/metadata.name: <name>}` for them).

    Namespace objects whose labels are unknown at preview are left out (the rule on the Namespace reports them).
    Found once per stack within a judgement (`memo.once_over`: PROTECTED_NAMESPACES and the overlap rule ask); the
    result is shared there, so callers must not modify it.
    """
    objects = list(objects)
    return memo.once_over("namespace_labels", objects, lambda: _namespace_labels(objects))


def _namespace_labels(objects: list[KubeObject]) -> dict[str, dict[str, str]]:
    labels: dict[str, dict[str, str]] = {}
    for obj in objects:
        if not is_namespace(obj):
            continue
        try:
            name = obj.name
            own = {str(k): str(v) for k, v in obj.labels.items()}
        except UnknownValueError as err:
            skipped(obj, err)  # every rule that reads these labels reports it (fail closed)
            continue
        merged = labels.setdefault(name, {})
        merged.update(own)
        merged[NAME_LABEL] = name
    return labels
