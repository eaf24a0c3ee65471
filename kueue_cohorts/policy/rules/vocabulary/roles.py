"""Which ClusterQueues serve inference: decided from the whole stack, not only from our own label.

The inference rules (borrowingLimit 0, reclaimWithinCohort Any, a pinned namespaceSelector, inference fits its
nominalQuota, priority ordering) must hold for every ClusterQueue that inference actually runs on, however the stack
wrote it (our components, a raw CustomResource, a yaml ConfigGroup, a patch). A ClusterQueue is an inference queue
when any of these holds (the evidence is kept, see `Roles.why`):

1. it is labelled `kueue-cohorts/role: inference`;
2. the pack config declares it inference (generated from the stack file);
3. an InferenceService or LLMInferenceService (`serving.kserve.io`, any version) is queued to it: its
   `kueue.x-k8s.io/queue-name` (metadata.labels or spec.predictor.labels, which KServe copies onto the predictor
   pods) names a LocalQueue of the stack whose `spec.clusterQueue` is this queue;
4. any workload queued to it (any label set with the queue-name label: object metadata, pod templates of Jobs,
   Deployments, JobSets, TrainJobs, ...) names an inference priority class in `kueue.x-k8s.io/priority-class`:
   one declared in the pack config, or a WorkloadPriorityClass labelled `kueue-cohorts/role: inference`;
5. any workload queued to it has a WorkloadPriorityClass whose `value` is at or above the lowest value of those
   inference priority classes (Kueue orders admission and preemption by that value, so such a workload is served
   like inference).

Inference evidence wins over a declared or labelled training/tenant role (fail closed: the inference rules then
show the conflict). Otherwise a queue is "training" or "tenant" when declared so or labelled so; any other queue is
undecided. The policy of `cluster_queue_role.py` refuses an undecided ClusterQueue that shares a cohort tree (Cohort
`spec.parentName` links followed to the root) with an inference queue, because whether it may borrow from inference
cannot be judged.

Upstream: Kueue `pkg/controller/constants` (QueueLabel, WorkloadPriorityClassLabel), LocalQueue
`spec.clusterQueue`, WorkloadPriorityClass `value`, Cohort `spec.parentName`; KServe `components/predictor.go`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

from . import memo
from .declaration import Option, mapping, names
from .objects import (
    INFERENCE_ROLE,
    PRIORITY_CLASS_LABEL,
    ROLE_LABEL,
    TENANT_ROLE,
    TRAINING_ROLE,
    KubeObject,
    cohort_parents,
    cohort_root,
    skipped,
)
from .priority import priority_value as _priority_value
from .queues import QueueIndex, queued_label_sets, queued_objects
from .values import MISSING, UnknownValueError, Violation, get

__all__ = ["ROLES", "ROLE_OPTIONS", "Roles", "classify", "cohort_roots", "forget",
           "inference_queue_names", "per_inference_queue", "roles_of"]

ROLES = (INFERENCE_ROLE, TRAINING_ROLE, TENANT_ROLE)
"""The roles a ClusterQueue can be declared or labelled with."""
KSERVE_GROUP = "serving.kserve.io"
SERVING_KINDS = ("InferenceService", "LLMInferenceService")
"""KServe kinds whose queue makes a ClusterQueue an inference queue (any version of serving.kserve.io)."""

INFERENCE_CLUSTER_QUEUES = names(
    "inferenceClusterQueues",
    "ClusterQueue names to treat as inference in addition to those labelled kueue-cohorts/role: inference.")
CLUSTER_QUEUE_ROLES = mapping(
    "clusterQueueRoles", {"type": "string", "enum": ["inference", "training", "tenant"]},
    "ClusterQueue name -> role, generated from the stack file (kueue-cohorts validate --stack NAME "
    "--pack-config --write).")
INFERENCE_PRIORITY_CLASSES = names(
    "inferencePriorityClasses",
    "WorkloadPriorityClass names the stack declares for inference: workloads of these classes mark their "
    "ClusterQueue as inference, and they rank above training.")
ROLE_OPTIONS: tuple[Option[Any], ...] = (INFERENCE_CLUSTER_QUEUES, CLUSTER_QUEUE_ROLES, INFERENCE_PRIORITY_CLASSES)
"""The options every role-aware policy declares: how the pack knows which ClusterQueues are inference. A policy
that classifies the stack (`roles_of`) must declare them (`Option.read` refuses them otherwise), so the stack's
generated pack config gives it the same facts as every other role-aware policy."""


@dataclass
class Roles:
    """The role of every ClusterQueue of a stack (see the module docstring for how it is decided).

    Attributes:
        cluster_queues: name -> ClusterQueue object, in stack order.
        roles: name -> "inference" | "training" | "tenant" for the decided queues.
        reasons: name -> the evidence for its role, as clauses ("labelled kueue-cohorts/role: inference",
            "InferenceService 'ns/x' is queued to it through LocalQueue 'ns/lq'", ...).
        inference_priority_classes: the inference WorkloadPriorityClass names (declared or labelled).
        inference_floor: the lowest value of those classes that the stack defines, or None.
        unknown: objects skipped because a label or name they would be classified by is unknown at preview (the
            per-object policies report those).
    """

    cluster_queues: dict[str, KubeObject] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    inference_priority_classes: set[str] = field(default_factory=set)
    inference_floor: Optional[int] = None
    unknown: list[KubeObject] = field(default_factory=list)

    def role(self, cq_name: str) -> Optional[str]:
        """The role of ClusterQueue `cq_name`, or None when undecided or not in the stack."""
        return self.roles.get(cq_name)

    def inference(self) -> set[str]:
        """The names of the inference ClusterQueues."""
        return {name for name, role in self.roles.items() if role == INFERENCE_ROLE}

    def undecided(self) -> list[KubeObject]:
        """The ClusterQueues without a role, in stack order."""
        return [cq for name, cq in self.cluster_queues.items() if name not in self.roles]

    def why(self, cq_name: str) -> list[str]:
        """The evidence for the role of `cq_name` (empty when undecided)."""
        return list(self.reasons.get(cq_name, []))


def classify(objects: Iterable[KubeObject], declared: Mapping[str, str] | None = None,
             inference_priority_classes: Iterable[str] = ()) -> Roles:
    """Decide the role of every ClusterQueue of the stack.

    Args:
        objects: every Kubernetes object of the stack (patches made effective); ClusterQueues, LocalQueues,
            WorkloadPriorityClasses and every object with queue-name labels are read.
        declared: ClusterQueue name -> "inference" | "training" | "tenant" from the pack config (generated from the
            stack file); other values are ignored.
        inference_priority_classes: WorkloadPriorityClass names declared inference in the pack config.
    Returns:
        The Roles. Never raises for values unknown at preview: objects whose names, role labels or queue labels are
        unknown are skipped, listed in `Roles.unknown` and noted (`objects.skipped`: every rule that uses the roles
        reports them, fail closed).
    """
    objects = list(objects)
    declared = dict(declared or {})
    roles = Roles()
    inference_classes = set(inference_priority_classes)
    class_values: dict[str, int] = {}

    for obj in objects:
        try:
            if obj.is_kueue("ClusterQueue"):
                roles.cluster_queues.setdefault(obj.name, obj)
            elif obj.is_kueue("WorkloadPriorityClass"):
                value = _priority_value(get(obj.props, "value"))
                if value is not None:
                    class_values[obj.name] = value
                if get(obj.labels, ROLE_LABEL) == INFERENCE_ROLE:
                    inference_classes.add(obj.name)
        except UnknownValueError as err:
            roles.unknown.append(obj)
            skipped(obj, err)
    roles.inference_priority_classes = inference_classes
    floors = [class_values[name] for name in inference_classes if name in class_values]
    roles.inference_floor = min(floors) if floors else None

    def mark(name: str, role: str, reason: str) -> None:
        if name not in roles.cluster_queues:
            return
        current = roles.roles.get(name)
        if current is None or (role == INFERENCE_ROLE and current != INFERENCE_ROLE):
            roles.roles[name] = role
            roles.reasons[name] = []
        if roles.roles[name] == role:
            roles.reasons[name].append(reason)

    # Inference evidence first (it wins), then declared/labelled training and tenant roles.
    for name, cq in roles.cluster_queues.items():
        try:
            label = get(cq.labels, ROLE_LABEL)
        except UnknownValueError as err:
            roles.unknown.append(cq)
            skipped(cq, err)
            label = MISSING
        if label == INFERENCE_ROLE:
            mark(name, INFERENCE_ROLE, f"it is labelled {ROLE_LABEL}: {INFERENCE_ROLE}")
        if declared.get(name) == INFERENCE_ROLE:
            mark(name, INFERENCE_ROLE, "the policy pack config declares it inference")

    queues = QueueIndex.build(objects)
    for obj in queued_objects(objects):  # the others have no workload queued anywhere
        try:
            namespace = obj.namespace
            for path, labels, queue in queued_label_sets(obj):
                cq_name = queues.cluster_queue_of(namespace, str(queue))
                if cq_name is None:
                    continue
                lq = f"{namespace}/{queue}" if namespace else str(queue)
                if obj.group == KSERVE_GROUP and obj.kind in SERVING_KINDS:
                    mark(cq_name, INFERENCE_ROLE,
                         f"{obj.describe()} is queued to it through LocalQueue '{lq}' ({path})")
                priority = get(labels, PRIORITY_CLASS_LABEL)
                if priority is MISSING:
                    continue
                if priority in inference_classes:
                    mark(cq_name, INFERENCE_ROLE,
                         f"{obj.describe()} with inference WorkloadPriorityClass '{priority}' is queued to it through "
                         f"LocalQueue '{lq}' ({path})")
                elif (roles.inference_floor is not None and priority in class_values
                      and class_values[priority] >= roles.inference_floor):
                    mark(cq_name, INFERENCE_ROLE,
                         f"{obj.describe()} with WorkloadPriorityClass '{priority}' ({class_values[priority]}, at or "
                         f"above the lowest inference priority {roles.inference_floor}) is queued to it through "
                         f"LocalQueue '{lq}' ({path})")
        except UnknownValueError as err:
            roles.unknown.append(obj)
            skipped(obj, err)

    for name, cq in roles.cluster_queues.items():
        if name in roles.roles:
            continue
        try:
            label = get(cq.labels, ROLE_LABEL)
        except UnknownValueError:
            label = MISSING
        if label in (TRAINING_ROLE, TENANT_ROLE):
            mark(name, str(label), f"it is labelled {ROLE_LABEL}: {label}")
        elif declared.get(name) in (TRAINING_ROLE, TENANT_ROLE):
            mark(name, declared[name], f"the policy pack config declares it {declared[name]}")
    return roles


def cohort_roots(objects: Iterable[KubeObject]) -> dict[str, str]:
    """Cohort name -> the root of its cohort tree (objects.cohort_parents followed upwards by objects.cohort_root),
    for every cohort that has a parent or is one. Cohorts without a Cohort object are their own root. Parents
    unknown at preview are skipped."""
    parents = cohort_parents(objects)
    return {name: cohort_root(name, parents) for name in set(parents) | set(parents.values())}


_ROLES_MEMO: list[tuple[Sequence[KubeObject], dict[tuple[Any, ...], tuple[Roles, list[Any]]]]] = []


def roles_of(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> Roles:
    """The role of every ClusterQueue of the stack (`classify`): our role label, the roles the pack config declares
    (`ROLE_OPTIONS`, generated from the stack file), an InferenceService or a workload of an inference priority class
    reaching it, or a workload at or above the inference priority.

    Args:
        objects: every Kubernetes object of the stack (the same list for every rule of one judgement).
        options: the asking policy's options; it must declare `ROLE_OPTIONS` (KeyError otherwise, see
            `Option.read`).
    Returns:
        The Roles, computed once per stack list and options within a judgement (`forget` ends it).
    """
    declared = {str(k): str(v) for k, v in (CLUSTER_QUEUE_ROLES.read(options) or {}).items()}
    declared.update({str(name): INFERENCE_ROLE for name in INFERENCE_CLUSTER_QUEUES.read(options) or ()})
    classes = [str(n) for n in INFERENCE_PRIORITY_CLASSES.read(options) or ()]
    key = (tuple(sorted(declared.items())), tuple(classes))
    # Every role-aware rule of one judgement asks for the same stack: classify it once (the memo keeps the list, so
    # its identity cannot be reused by another one while it is remembered).
    # Rules pass different options (the same facts under each policy's name), so remember each key's answer.
    # The values unknown at preview that classifying left out are noted for every rule that uses the roles.
    if not _ROLES_MEMO or _ROLES_MEMO[0][0] is not objects:
        _ROLES_MEMO[:] = [(objects, {})]
    known = _ROLES_MEMO[0][1]
    if key in known:
        roles, notes = known[key]
        memo.renote(notes)
        return roles
    known[key] = memo.computed(lambda: classify(objects, declared, classes))
    return known[key][0]


def forget() -> None:
    """Drop the roles `roles_of` remembers (they would keep the whole stack alive until the next judgement)."""
    _ROLES_MEMO.clear()


def inference_queue_names(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> set[str]:
    """The ClusterQueues judged as inference (see `roles_of`)."""
    return roles_of(objects, options).inference()


def per_inference_queue(check: Callable[[KubeObject, list[str]], list[Violation]]
                        ) -> Callable[[Sequence[KubeObject], Mapping[str, Any]], list[Violation]]:
    """A stack check from a per-object `check(obj, inference ClusterQueue names)`: every object of the stack judged
    with the stack's inference queues (`inference_queue_names`)."""
    def run(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
        queues = sorted(inference_queue_names(objects, options))
        return [v for obj in objects for v in check(obj, queues)]
    return run
