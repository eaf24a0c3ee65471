"""PROTECTED_NAMESPACES: the stack never makes a system or controller namespace a Kueue tenant.

A namespace becomes a tenant of a ClusterQueue when the queue's `namespaceSelector` selects it (Kueue admits
workloads of a LocalQueue only from namespaces its ClusterQueue selects) and, with the manager's
`manageJobsWithoutQueueName`, Kueue also suspends the unqueued pods of such namespaces. Putting a system namespace
under Kueue can stop its controllers, so these namespaces are refused as tenants: `DEFAULT_PROTECTED_NAMESPACES`
(kube-system, kube-public, kube-node-lease, kueue-system, jobset-system, kubeflow-system, kserve, default; sources
in `vocabulary/system_namespaces.py`), every `kube-*` name (`PROTECTED_PREFIXES`) and the cluster add-ons'
namespaces a stack does not allow (`system_namespaces.protected_namespaces`), which a stack extends through the
`protected` argument.

Pass `patches.effective_objects(objects)` so that a `NamespacePatch` that labels kube-system counts as labelling it.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Iterable, Mapping, Optional, Sequence

from .vocabulary.declaration import Declaration, Level, Promise, Scope, names
from .vocabulary.namespaces import is_namespace, namespace_labels
from .vocabulary.objects import KubeObject, guarded, violation
from .vocabulary.plain import plain
from .vocabulary.selectors import NAME_LABEL, requirements, selects
from .vocabulary.system_namespaces import (
    ADD_ON_NAMESPACES,
    DEFAULT_PROTECTED_NAMESPACES,
    PROTECTED_PREFIXES,
    protected_namespaces,
)
from .vocabulary.values import MISSING, UnknownValueError, Violation, format_path, get

__all__ = ["DEFAULT_PROTECTED_NAMESPACES", "check_protected_namespaces", "namespace_labels", "queue_selector_keys"]


def _fix_names(protected: list[str]) -> str:
    """The fix naming the protected namespaces; the add-ons' namespaces and ``kube-*`` are summed up in one phrase
    when the list holds them (the book's list does), so the message stays readable."""
    named = [n for n in protected if n not in ADD_ON_NAMESPACES]
    add_ons = len(protected) - len(named)
    summary = (", every kube-* name and the cluster add-ons' namespaces (gpu-operator, cert-manager, ...; "
               "allowedAddOnNamespaces allows one with a reason)") if add_ons else ""
    return ("keep system and controller namespaces out of the tenants: list only your workload namespaces (protected: "
            + ", ".join(named) + summary + ")")


def queue_selector_keys(objects: Iterable[KubeObject]) -> set[str]:
    """The label keys the stack's ClusterQueue namespaceSelectors test (matchLabels and matchExpressions keys), apart
    from `kubernetes.io/metadata.name` (which every namespace carries anyway).

    Raises UnknownValueError when a selector is unknown at preview.
    """
    keys: set[str] = set()
    for obj in objects:
        if obj.is_kueue("ClusterQueue"):
            for req in requirements(get(obj.spec, "namespaceSelector")) or []:
                if req.key and req.key != NAME_LABEL:
                    keys.add(req.key)
    return keys


def prefixed_namespaces(objects: Iterable[KubeObject]) -> list[str]:
    """The namespace names with a PROTECTED_PREFIXES prefix (``kube-*``) that the stack's objects mention: its
    Namespace objects, the namespaces of its LocalQueues, and the names a ClusterQueue's namespaceSelector pins with
    ``kubernetes.io/metadata.name`` (matchLabels or an ``In`` expression). A prefix cannot be listed name by name,
    so these join the protected names the rule judges with. Values unknown at preview are skipped (the rule reports
    them on their own object)."""
    names: list[str] = []
    for obj in objects:
        try:
            if is_namespace(obj):
                names.append(str(obj.name))
            elif obj.is_kueue("LocalQueue"):
                names.append(str(obj.namespace))
            elif obj.is_kueue("ClusterQueue"):
                for req in requirements(get(obj.spec, "namespaceSelector")) or []:
                    if req.key == NAME_LABEL:
                        names.extend(str(v) for v in (req.values or ()))
        except (UnknownValueError, AttributeError, TypeError):
            continue
    return list(dict.fromkeys(n for n in names if n.startswith(PROTECTED_PREFIXES)))


def check_protected_namespaces(objects: Iterable[KubeObject], protected: Iterable[str],
                               policy: str) -> list[Violation]:
    """PROTECTED_NAMESPACES over the whole stack.

    Args:
        objects: every Kubernetes object of the stack (patches already made effective, see the module docstring).
        protected: the protected namespace names (`system_namespaces.protected_namespaces`: the defaults, the
            add-ons the stack does not allow, its own additions); every ``kube-*`` name the objects mention is
            added (`prefixed_namespaces`).
        policy: the policy name for the Violations.
    Returns:
        One Violation for each of:
        - a Namespace object with a protected name that carries a label some ClusterQueue of the stack selects on
          (field `metadata.labels["<key>"]`): the stack would make it a tenant;
        - a LocalQueue in a protected namespace (field `metadata.namespace`);
        - a ClusterQueue whose namespaceSelector selects a protected namespace, judged on the labels that namespace
          is known to carry: its name label plus the labels the stack's own Namespace objects give it (field
          `spec.namespaceSelector`);
        and the fail-closed violation for a value unknown at preview.
    """
    objects = list(objects)
    protected_names = list(dict.fromkeys((*protected, *prefixed_namespaces(objects))))
    found: list[Violation] = []
    try:
        selector_keys = queue_selector_keys(objects)
    except UnknownValueError:
        selector_keys = None  # a ClusterQueue with an unknown selector reports itself below
    known = namespace_labels(objects)
    # The labels each protected namespace is judged with, built once (not once per ClusterQueue).
    protected_labels = [(ns, known.get(ns, {NAME_LABEL: ns})) for ns in protected_names]

    for obj in objects:
        if is_namespace(obj):
            found.extend(guarded(obj, partial(_check_namespace, obj, protected_names, selector_keys, policy)))
        elif obj.is_kueue("LocalQueue"):
            found.extend(guarded(obj, partial(_check_local_queue, obj, protected_names, policy)))
        elif obj.is_kueue("ClusterQueue"):
            found.extend(guarded(obj, partial(_check_cluster_queue, obj, protected_names, protected_labels, policy)))
    return found


def _check_namespace(obj: KubeObject, protected: list[str], selector_keys: Optional[set[str]],
                     policy: str) -> list[Violation]:
    if obj.name not in protected:
        return []
    found = []
    for key, value in obj.labels.items():
        if selector_keys is not None and key in selector_keys:
            found.append(violation(
                obj, policy, format_path(["metadata", "labels", key]), value,
                f"'{obj.name}' is a protected system or controller namespace, and label '{key}' is what this stack's "
                f"ClusterQueues select tenants by, so Kueue would manage (and may suspend) its pods",
                f"remove the label and {_fix_names(protected)}"))
    return found


def _check_local_queue(obj: KubeObject, protected: list[str], policy: str) -> list[Violation]:
    namespace = obj.namespace
    if namespace not in protected:
        return []
    return [violation(
        obj, policy, "metadata.namespace", namespace,
        f"a LocalQueue must not live in the protected system or controller namespace '{namespace}', which would "
        f"queue that namespace's workloads under Kueue",
        _fix_names(protected))]


def _check_cluster_queue(obj: KubeObject, protected: list[str],
                         protected_labels: Sequence[tuple[str, Mapping[str, str]]], policy: str) -> list[Violation]:
    """PROTECTED_NAMESPACES for one ClusterQueue: `protected_labels` is (name, the labels it is known to carry) of
    every protected namespace, in `protected` order."""
    selector = get(obj.spec, "namespaceSelector")
    if selector is MISSING:
        return []  # selects nothing (the namespace-selector policies report a missing selector)
    reqs = requirements(selector)  # parsed once, tested against every protected namespace
    caught = [ns for ns, labels in protected_labels if selects(reqs, labels)]
    if not caught:
        return []
    names = ", ".join(f"'{ns}'" for ns in caught)
    return [violation(
        obj, policy, "spec.namespaceSelector", plain(selector),
        f"a ClusterQueue's namespaceSelector must not select a protected system or controller namespace, but this "
        f"one selects {names}",
        f"pin the tenants by name with matchExpressions [{{key: {NAME_LABEL}, operator: In, values: [<your "
        f"namespaces>]}}] and {_fix_names(protected)}")]


EXTRA_PROTECTED_NAMESPACES = names(
    "protectedNamespaces",
    "Namespaces that never become tenants, in addition to the Kubernetes, Kueue, JobSet, Trainer and KServe system "
    "namespaces.")
ALLOWED_ADD_ON_NAMESPACES = names(
    "allowedAddOnNamespaces",
    "Cluster add-on namespaces (system_namespaces.ADD_ON_NAMESPACES) this stack allows as tenants; default, kube-* "
    "and the controllers' namespaces stay protected.")


def _check(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
    """The policy's check: the book's protected namespaces plus the stack's own, less the add-ons it allows."""
    extra = [str(n) for n in EXTRA_PROTECTED_NAMESPACES.read(options)]
    allowed = [str(n) for n in ALLOWED_ADD_ON_NAMESPACES.read(options)]
    return check_protected_namespaces(objects, protected_namespaces(extra, allowed), PROTECTED_NAMESPACES.name)


PROTECTED_NAMESPACES: Declaration = Declaration(
    name="protected-namespaces",
    description="System namespaces (Kubernetes, Kueue, JobSet, Trainer, KServe) never become tenant namespaces.",
    promise=Promise.WELL_FORMED, level=Level.MANDATORY, scope=Scope.STACK,
    check=_check, options=(EXTRA_PROTECTED_NAMESPACES, ALLOWED_ADD_ON_NAMESPACES))
