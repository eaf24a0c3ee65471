"""CLUSTER_QUEUE_SELECTOR_OVERLAP (stack policy): every namespace belongs to at most one ClusterQueue (and, by
CLUSTER_QUEUE_PINNED_SELECTOR in cluster_queue_pinned_selector.py, only to the namespaces the stack declares).

Kueue admits a workload only if its LocalQueue's ClusterQueue selects the workload's namespace
(ClusterQueue `spec.namespaceSelector`, a metav1.LabelSelector; nil selects nothing, `{}` everything). Two
ClusterQueues that can select the same namespace let that namespace's owner queue work at either quota (for
instance at inference quota from a training namespace). A selector on a tenant label alone
(`kueue.x-k8s.io/queue: <tenant>`) selects any namespace whose owner adds that label, which namespace owners may do;
the apiserver-maintained `kubernetes.io/metadata.name` label cannot be changed, so pinning it with `In` limits the
queue to the declared namespaces (upstream: Kubernetes `NamespaceDefaultLabelName`, always set to the name).
"""
from __future__ import annotations

from itertools import combinations
from typing import Iterable, Iterator

from .cluster_queue_pinned_selector import PIN
from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.namespaces import namespace_labels
from .vocabulary.objects import KubeObject, unknown_violation, violation
from .vocabulary.plain import plain
from .vocabulary.selectors import can_overlap, matches, pins_names
from .vocabulary.values import MISSING, UnknownValueError, Violation, get

__all__ = ["check_selector_overlap"]

def check_selector_overlap(objects: Iterable[KubeObject], policy: str
                           ) -> list[Violation]:
    """CLUSTER_QUEUE_SELECTOR_OVERLAP over the whole stack (every layout and cohort at once).

    Args:
        objects: every Kubernetes object of the stack (patches made effective); ClusterQueues and Namespaces are read.
        policy: the policy name for the Violations.
    Returns:
        One Violation per pair of ClusterQueues whose namespaceSelectors can both select one namespace (exact
        satisfiability, `selectors.can_overlap` over namespaces), about the later of the two in stack order, field
        `spec.namespaceSelector`; the rule names the other queue and the stack's Namespaces that both already
        select, if any. A ClusterQueue whose selector is unknown at preview gets the fail-closed violation.
    """
    objects = list(objects)
    queues: list[tuple[KubeObject, object]] = []
    found: list[Violation] = []
    for obj in objects:
        if not obj.is_kueue("ClusterQueue"):
            continue
        try:
            selector = get(obj.spec, "namespaceSelector")
            can_overlap(selector, {})  # reads the whole selector now, so that an unknown part fails here
        except UnknownValueError as err:
            found.append(unknown_violation(obj, err))
            continue
        queues.append((obj, selector))
    known = namespace_labels(objects)
    for first, a, second, b in _candidate_pairs(queues):
        if a is MISSING or b is MISSING or not can_overlap(a, b, namespaces=True):
            continue
        both = sorted(name for name, labels in known.items() if matches(a, labels) and matches(b, labels))
        where = (f"; both already select {', '.join(repr(n) for n in both)}" if both else "")
        found.append(violation(
            second, policy, "spec.namespaceSelector", plain(b),
            f"two ClusterQueues must never select the same namespace, but this namespaceSelector and that of "
            f"ClusterQueue '{_name(first)}' can both select one{where}, so its owner could queue work at either "
            f"quota",
            f"give each ClusterQueue its own namespaces and pin them with {PIN}"))
    return found


def _candidate_pairs(queues: list[tuple[KubeObject, object]]) -> Iterator[tuple[KubeObject, object, KubeObject,
                                                                             object]]:
    """The pairs (earlier, its selector, later, its selector) that may overlap, in stack order. Two selectors that
    both pin `kubernetes.io/metadata.name` (`pins_names`) can only overlap when their name sets meet, so those are
    paired through a name index; a selector that pins no name is paired with every other. Linear in the number of
    ClusterQueues when every selector pins its names (ours do), quadratic only in the unpinned ones."""
    pinned: dict[str, list[int]] = {}
    unpinned: list[int] = []
    for index, (_, selector) in enumerate(queues):
        names = pins_names(selector) if selector is not MISSING else frozenset()
        if names is None:
            unpinned.append(index)
        else:
            for name in names:
                pinned.setdefault(name, []).append(index)
    pairs: set[tuple[int, int]] = set()
    for members in pinned.values():
        pairs.update(combinations(members, 2))
    for index in unpinned:
        pairs.update((min(index, other), max(index, other)) for other in range(len(queues)) if other != index)
    for i, j in sorted(pairs):
        yield queues[i][0], queues[i][1], queues[j][0], queues[j][1]


def _name(obj: KubeObject) -> str:
    try:
        return obj.name
    except UnknownValueError:
        return obj.resource_name


CLUSTER_QUEUE_SELECTOR_OVERLAP: Declaration = Declaration(
    name="cluster-queue-selector-overlap",
    description="No two ClusterQueues can select the same namespace.",
    promise=Promise.KUEUE_COUNTS, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_selector_overlap(objects, CLUSTER_QUEUE_SELECTOR_OVERLAP.name))
