"""Finding the queue behind a workload: `kueue.x-k8s.io/queue-name` label -> LocalQueue -> ClusterQueue.

Upstream: Kueue `pkg/controller/constants/constants.go` (QueueLabel), LocalQueue `spec.clusterQueue`
(localqueue_types.go). KServe copies `metadata.labels` and `spec.predictor.labels` of an InferenceService onto
its Deployment and pods (`components/predictor.go` buildObjectMeta), so both are label sets of the workload.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

from . import memo
from .objects import QUEUE_NAME_LABEL, KubeObject, skipped
from .values import MISSING, UnknownValueError, format_path, get, is_list, is_map

# Keys whose `labels` child is a label set of a workload or pod template: object/template metadata and KServe's
# ComponentExtensionSpec (predictor, transformer, explainer).
_LABEL_PARENTS = {"metadata", "predictor", "transformer", "explainer"}


@dataclass(frozen=True)
class QueueIndex:
    """The stack's LocalQueues and ClusterQueues, to resolve a workload's queue.

    Attributes:
        local_queues: (namespace or None, name) -> ClusterQueue name, from LocalQueue `spec.clusterQueue`.
        cluster_queues: name -> ClusterQueue object.
    """

    local_queues: Mapping[tuple[Optional[str], str], str]
    cluster_queues: Mapping[str, KubeObject]

    @classmethod
    def build(cls, objects: Iterable[KubeObject]) -> QueueIndex:
        """Index every LocalQueue and ClusterQueue of the stack. Objects with unknown names or references are left
        out and noted (`objects.skipped`): every rule that uses the index reports them (fail closed)."""
        objects = objects if isinstance(objects, list) else list(objects)
        # Built once per stack within a judgement (several rules resolve queues): the same objects, the same index.
        return memo.once_over("queue_index", objects, lambda: cls._build(objects))

    @classmethod
    def _build(cls, objects: list[KubeObject]) -> QueueIndex:
        local: dict[tuple[Optional[str], str], str] = {}
        cluster: dict[str, KubeObject] = {}
        for obj in objects:
            try:
                if obj.is_kueue("LocalQueue"):
                    target = get(obj.spec, "clusterQueue")
                    if isinstance(target, str):
                        local[(obj.namespace, obj.name)] = target
                elif obj.is_kueue("ClusterQueue"):
                    cluster[obj.name] = obj
            except UnknownValueError as err:
                skipped(obj, err)  # every rule that resolves queues through this index reports it (fail closed)
                continue
        return cls(local_queues=local, cluster_queues=cluster)

    def cluster_queue_of(self, namespace: Optional[str], local_queue: str) -> Optional[str]:
        """The ClusterQueue name behind LocalQueue `local_queue` in `namespace`, or None if it is not in the stack.

        A workload without a namespace (the provider's default) matches a LocalQueue of that name only when the
        name is unique in the stack.
        """
        if (namespace, local_queue) in self.local_queues:
            return self.local_queues[(namespace, local_queue)]
        if namespace is None:
            targets = {cq for (_, name), cq in self.local_queues.items() if name == local_queue}
            if len(targets) == 1:
                return targets.pop()
        return None


def label_sets(props: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Yield (field path, labels) for every label set of an object: `metadata.labels` at the root and in every
    nested template (Job/Deployment/StatefulSet pod templates, JobSet replicatedJobs, CronJob jobTemplate, ...)
    and KServe's `spec.predictor.labels`, in document order.

    Walked iteratively (deep nesting never reaches Python's recursion limit, and a stack of thousands of objects
    costs one pass each); plain JSON of ordinary depth (the program's objects) is read by a faster recursive walk
    first, which gives up on anything else. Unknown values elsewhere in the object are skipped; an unknown
    `metadata` or `labels` value raises UnknownValueError (it could hide a queue label).
    """
    if type(props) is dict:
        plain: list[tuple[str, Mapping[str, Any]]] = []
        if _plain_label_sets(props, path, plain, 0):
            yield from plain
            return
    stack: list[tuple[tuple[Any, ...], Any]] = [(path, props)]
    while stack:
        here, node = stack.pop()
        children: list[tuple[tuple[Any, ...], Any]] = []
        if type(node) is dict:  # plain JSON (the program's objects): no value can be unknown
            for key, value in node.items():
                if key == "labels" and here and here[-1] in _LABEL_PARENTS and is_map(value):
                    yield format_path(here + (key,)), value
                elif type(value) not in _PLAIN:
                    children.append((here + (key,), value))
        elif type(node) is list:  # plain JSON: scalars hold no label set
            for i, value in enumerate(node):
                if type(value) not in _PLAIN:
                    children.append((here + (i,), value))
        elif is_map(node):
            for key in list(node):
                try:
                    value = node[key]
                except UnknownValueError:
                    if key in ("metadata", "labels"):
                        raise
                    continue
                if key == "labels" and here and here[-1] in _LABEL_PARENTS and is_map(value):
                    yield format_path(here + (key,)), value
                else:
                    children.append((here + (key,), value))
        elif is_list(node):
            for i in range(len(node)):
                try:
                    children.append((here + (i,), node[i]))
                except UnknownValueError:
                    continue
        stack.extend(reversed(children))


_PLAIN_DEPTH = 64
"""How deep the recursive walks of plain JSON go before handing the object to the iterative walk."""


def _plain_label_sets(node: Any, here: tuple[Any, ...], out: list[tuple[str, Mapping[str, Any]]], depth: int
                      ) -> bool:
    """Append what `label_sets` yields for `node` (at field path `here`) to `out`, in the same order, when `node`
    is plain JSON (dicts, lists and scalars only) at most `_PLAIN_DEPTH` deep; False (and `out` unusable) otherwise."""
    if depth > _PLAIN_DEPTH:
        return False
    if type(node) is dict:
        own = None
        if here and here[-1] in _LABEL_PARENTS:  # a node's own label set comes before those of its children
            labels = node.get("labels")
            if type(labels) is dict:
                out.append((format_path(here + ("labels",)), labels))
                own = labels
        for key, value in node.items():
            kind = type(value)
            if kind in _PLAIN or (key == "labels" and value is own):
                continue
            if not ((kind is dict or kind is list) and _plain_label_sets(value, here + (key,), out, depth + 1)):
                return False
        return True
    for i, value in enumerate(node):
        kind = type(value)
        if kind in _PLAIN:
            continue
        if not ((kind is dict or kind is list) and _plain_label_sets(value, here + (i,), out, depth + 1)):
            return False
    return True


def queued_label_sets(obj: KubeObject) -> Iterator[tuple[str, Mapping[str, Any], Any]]:
    """The label sets of `obj` that carry the `kueue.x-k8s.io/queue-name` label, as (field path, labels, queue
    name), in `label_sets` order: what WORKLOAD_PRIORITY_CLASS and the role classification read of every object.

    Walked once per object per judgement (`memo.replay`; every role-aware rule and WORKLOAD_PRIORITY_CLASS ask), so
    the same triples come in the same order and an UnknownValueError (of the walk, or of an unknown queue-name
    label) is raised after the same triples, as reading `label_sets(obj.props)` directly would.
    """
    return memo.replay("queued_label_sets", obj.props, lambda: _queued(obj.props))


def queued_objects(objects: Sequence[KubeObject]) -> list[KubeObject]:
    """The objects of `objects` (in order) that `queued_label_sets` yields anything for, or whose namespace or label
    sets cannot be read (unknown at preview): every other object has no queued workload, so the rules that resolve
    workloads to queues (role classification, WORKLOAD_PRIORITY_CLASS) skip it. Found once per stack within a
    judgement (`memo.once_over`); outside one (where the label sets are not remembered, so filtering would walk
    every object twice) all of `objects`."""
    if not memo.active():
        return list(objects)
    return memo.once_over("queued_objects", objects, lambda: [obj for obj in objects if _may_be_queued(obj)])


def _may_be_queued(obj: KubeObject) -> bool:
    try:
        _ = obj.namespace  # classify reads it first: an unknown namespace is a finding
        return any(True for _ in queued_label_sets(obj))
    except UnknownValueError:
        return True


def _queued(props: Any) -> Iterator[tuple[str, Mapping[str, Any], Any]]:
    for path, labels in label_sets(props):
        queue = get(labels, QUEUE_NAME_LABEL)
        if queue is not MISSING:
            yield path, labels, queue


_PLAIN = frozenset({str, int, float, bool, type(None)})
"""Scalar types a label set can never hide in."""
