"""TRAINING_PRIORITY_BELOW_INFERENCE (stack policy, and the in-cluster guardrail `priority-use`): a workload in a
non-inference namespace of an inference cohort tree never runs at or above inference's priority, neither by naming a
WorkloadPriorityClass at or above it nor by a pod PriorityClass at or above it.

How Kueue picks a Workload's priority (Kueue v0.19.2 `pkg/controller/jobframework/reconciler.go` `ExtractPriority`,
`pkg/util/priority/priority.go`): the job object's label `kueue.x-k8s.io/priority-class` first
(`GetPriorityFromWorkloadPriorityClass`, the WorkloadPriorityClass's `value`), else the job kind's own priority class
(MPIJob, Kubeflow jobs: `JobWithPriorityClass.PriorityClass`), else the first pod template's `priorityClassName` among
its PodSets (`extractPriorityFromPodSets` -> `GetPriorityFromPriorityClass`, the scheduling.k8s.io PriorityClass's
`value`), else the global default PriorityClass. So a training Job labelled with the inference class, or whose pods
name `system-cluster-critical` (2,000,000,000; `system-node-critical` 2,000,001,000: Kubernetes v1.36.3
`pkg/apis/scheduling/types.go` SystemCriticalPriority), is admitted ahead of inference and is never a reclaim victim of
it; and the pod priority alone lets the kube-scheduler preempt any lower pod on the GPU nodes, whatever Kueue says.
The pod side is judged whatever the label says; the label side whatever the pods say.

Where each kind carries them is declared once (`KINDS`): the object's own labels (what Kueue reads), every pod
template's labels (Kueue's pod integration reads the pods'), every pod template's `priorityClassName`, and a Kueue
Workload's own `spec.priority`. The Python walk below and the CEL of the guardrail (`policy/rules/book/admission.py`
`priority_use`) are generated from the same table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

from .inference_rollout_fits_nominal import LWS_GROUP
from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import (
    INFERENCE_ROLE,
    PRIORITY_CLASS_LABEL,
    ROLE_LABEL,
    KubeObject,
    cohort_of,
    guarded,
    violation,
)
from .vocabulary.priority import PRIORITY_CLASSES, TRAINING_PRIORITY_CLASSES, priority_value
from .vocabulary.queues import QueueIndex
from .vocabulary.roles import CLUSTER_QUEUE_ROLES, INFERENCE_CLUSTER_QUEUES, ROLE_OPTIONS, roles_of
from .vocabulary.values import MISSING, Violation, as_list, get, is_map

SYSTEM_PRIORITY_CLASSES: Mapping[str, int] = {"system-cluster-critical": 2_000_000_000,
                                              "system-node-critical": 2_000_001_000}
"""The PriorityClasses every cluster has (Kubernetes v1.36.3 `pkg/apis/scheduling/types.go`: SystemCriticalPriority
= 2 x HighestUserDefinablePriority; node-critical is 1000 above it)."""


@dataclass(frozen=True)
class WorkloadKind:
    """Where one workload kind carries its priorities.

    group / version / plural / kind: the API resource. templates: dotted paths (`*` for every list item) to each pod
    template (an object with `metadata.labels` and `spec.priorityClassName`), "" for the object itself (a Pod).
    labelled: further dotted paths to objects whose `metadata.labels` Kueue reads (a CronJob's jobTemplate, a JobSet's
    Job templates). workload_priority: whether `spec.priority` is the Workload's own (Kueue's Workload).
    """

    group: str
    version: str
    plural: str
    kind: str
    templates: tuple[str, ...] = ()
    labelled: tuple[str, ...] = ()
    workload_priority: bool = False


KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind("", "v1", "pods", "Pod", ("",)),
    WorkloadKind("batch", "v1", "jobs", "Job", ("spec.template",)),
    WorkloadKind("batch", "v1", "cronjobs", "CronJob", ("spec.jobTemplate.spec.template",), ("spec.jobTemplate",)),
    WorkloadKind("apps", "v1", "deployments", "Deployment", ("spec.template",)),
    WorkloadKind("apps", "v1", "statefulsets", "StatefulSet", ("spec.template",)),
    WorkloadKind("apps", "v1", "replicasets", "ReplicaSet", ("spec.template",)),
    WorkloadKind("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet",
                 ("spec.replicatedJobs.*.template.spec.template",), ("spec.replicatedJobs.*.template",)),
    WorkloadKind(LWS_GROUP, "v1", "leaderworkersets", "LeaderWorkerSet",
                 ("spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate")),
    WorkloadKind("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob"),
    WorkloadKind("kueue.x-k8s.io", "v1beta2", "workloads", "Workload", ("spec.podSets.*.template",),
                 workload_priority=True),
)
"""The workload kinds judged (Kueue v0.19.2's integrations that the stack enables, their pod controllers, and Kueue's
own Workload), each with where it carries priorities."""


def kind_of(obj: KubeObject) -> Optional[WorkloadKind]:
    """The WorkloadKind of `obj`, or None for any other kind."""
    return next((k for k in KINDS if k.group == obj.group and k.kind == obj.kind), None)


def _at(node: Any, parts: Sequence[str], here: str) -> Iterator[tuple[str, Any]]:
    """(field path, value) of every node at dotted `parts` below `node` (`*` expands a list)."""
    if not parts:
        yield here, node
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        for i, item in enumerate(as_list(node)):
            yield from _at(item, rest, f"{here}[{i}]")
        return
    if not is_map(node):
        return
    child = get(node, head)
    if child is not MISSING and child is not None:
        yield from _at(child, rest, f"{here}.{head}" if here else head)


def nodes(props: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(field path, node) of each node at a `KINDS` path (`""`: the object itself)."""
    return _at(props, path.split(".") if path else [], "")


def _field(base: str, tail: str) -> str:
    return f"{base}.{tail}" if base else tail


def high_priorities(obj: KubeObject, floor: int, classes: Mapping[str, int],
                    pod_classes: Mapping[str, int]) -> list[tuple[str, Any, str]]:
    """Every place `obj` asks for a priority at or above `floor`: (field, value, what it names).

    Args:
        obj: a workload (any kind of `KINDS`; others give nothing).
        floor: the lowest inference priority (a WorkloadPriorityClass value, int32).
        classes: WorkloadPriorityClass name -> value (those the caller knows).
        pod_classes: scheduling.k8s.io PriorityClass name -> value (SYSTEM_PRIORITY_CLASSES at least).
    Returns:
        One entry per label `kueue.x-k8s.io/priority-class` naming a class of value >= floor, per
        `priorityClassName` naming a PriorityClass of value >= floor, and a Workload's `spec.priority` >= floor.
        A name the caller does not know is not judged here (WORKLOAD_PRIORITY_CLASS refuses unknown classes).
    """
    kind = kind_of(obj)
    if kind is None:
        return []
    found: list[tuple[str, Any, str]] = []
    labelled = [("", obj.props)] + [n for path in (*kind.labelled, *kind.templates) for n in nodes(obj.props, path)]
    for base, node in labelled:
        name = get(node, "metadata", "labels", PRIORITY_CLASS_LABEL)
        value = classes.get(name) if isinstance(name, str) else None
        if value is not None and value >= floor:
            found.append((_field(base, f'metadata.labels["{PRIORITY_CLASS_LABEL}"]'), name,
                          f"WorkloadPriorityClass '{name}' ({value})"))
    for path in kind.templates:
        for base, template in nodes(obj.props, path):
            name = get(template, "spec", "priorityClassName")
            value = pod_classes.get(name) if isinstance(name, str) else None
            if value is not None and value >= floor:
                found.append((_field(base, "spec.priorityClassName"), name, f"PriorityClass '{name}' ({value})"))
    if kind.workload_priority:
        value = priority_value(get(obj.props, "spec", "priority"))
        if value is not None and value >= floor:
            found.append(("spec.priority", value, f"priority {value}"))
    return found


def priority_violations(obj: KubeObject, floor: int, classes: Mapping[str, int], pod_classes: Mapping[str, int],
                        policy: str) -> list[Violation]:
    """`high_priorities` of `obj` as Violations of `policy` (rule and fix shared by the pack and the guardrail)."""
    return [violation(
        obj, policy, field, value,
        f"a workload outside inference's namespaces may not run at or above inference's priority {floor} ({what}: "
        "Kueue admits it ahead of inference and never reclaims it, and its pods preempt inference's)",
        f"name a training WorkloadPriorityClass below {floor} and no PriorityClass at or above it, or run it in an "
        "inference namespace through the stack")
        for field, value, what in high_priorities(obj, floor, classes, pod_classes)]


def guarded_namespaces(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> tuple[set[str], Optional[int]]:
    """The non-inference namespaces of every inference cohort tree of the stack and the inference floor.

    Inference is what the stack declares (`kueue-cohorts/role: inference` on the ClusterQueue, or the pack config's
    `inferenceClusterQueues` / `clusterQueueRoles`), not what a workload's priority would make of a queue (the
    roles' evidence 4 and 5, `roles.py`: a training Job at inference's priority would otherwise turn its own queue
    into an inference one and escape). A namespace is in a tree when it has a LocalQueue of a ClusterQueue in the
    cohort of a declared inference ClusterQueue, and non-inference when that ClusterQueue is not declared inference.
    Returns (namespaces, floor): the floor (`roles_of(...).inference_floor`) is None when the stack defines no
    inference WorkloadPriorityClass value (nothing to compare with).
    """
    declared = {str(n) for n in INFERENCE_CLUSTER_QUEUES.read(options) or ()}
    declared |= {str(n) for n, role in (CLUSTER_QUEUE_ROLES.read(options) or {}).items() if role == INFERENCE_ROLE}
    index = QueueIndex.build(objects)
    inference = {name for name, cq in index.cluster_queues.items()
                 if name in declared or get(cq.labels, ROLE_LABEL) == INFERENCE_ROLE}
    cohorts = {cohort_of(index.cluster_queues[name]) for name in inference}
    cohorts.discard(None)
    namespaces = set()
    for (namespace, _), cq in index.local_queues.items():
        queue = index.cluster_queues.get(cq)
        if namespace and queue is not None and cq not in inference and cohort_of(queue) in cohorts:
            namespaces.add(namespace)
    return namespaces, roles_of(objects, options).inference_floor


def check_training_priority_below_inference(objects: Iterable[KubeObject],
                                            options: Mapping[str, Any]) -> list[Violation]:
    """TRAINING_PRIORITY_BELOW_INFERENCE over the whole stack.

    Args:
        objects: every Kubernetes object of the stack (ClusterQueues, LocalQueues, WorkloadPriorityClasses,
            PriorityClasses and the workloads are read).
        options: the policy's options (`ROLE_OPTIONS`, `priorityClasses`: WorkloadPriorityClasses outside the stack).
    Returns:
        The Violations of `priority_violations` for every workload in a non-inference namespace of an inference
        cohort tree (`guarded_namespaces`); none when the stack has no inference priority.
    """
    objects = objects if isinstance(objects, list) else list(objects)  # the same list: the book's memos serve it
    namespaces, floor = guarded_namespaces(objects, options)
    if floor is None or not namespaces:
        return []
    classes = {str(k): v for k, v in ((k, priority_value(v)) for k, v in PRIORITY_CLASSES.read(options).items())
               if v is not None}
    pod_classes = dict(SYSTEM_PRIORITY_CLASSES)
    for obj in objects:
        value = priority_value(get(obj.props, "value"))
        if value is not None and obj.is_kueue("WorkloadPriorityClass"):
            classes[obj.name] = value
        elif value is not None and obj.is_kind("scheduling.k8s.io", "PriorityClass"):
            pod_classes[obj.name] = value
    found: list[Violation] = []
    for obj in objects:
        if kind_of(obj) is None:
            continue

        def judge(obj: KubeObject = obj, floor: int = floor) -> list[Violation]:
            if obj.namespace not in namespaces:
                return []
            return priority_violations(obj, floor, classes, pod_classes, TRAINING_PRIORITY_BELOW_INFERENCE.name)
        found += guarded(obj, judge)
    return found


TRAINING_PRIORITY_BELOW_INFERENCE: Declaration = Declaration(
    name="training-priority-below-inference",
    description="A workload in a training namespace of an inference cohort names no WorkloadPriorityClass and no pod "
                "PriorityClass at or above inference's priority.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=check_training_priority_below_inference, options=(*ROLE_OPTIONS, TRAINING_PRIORITY_CLASSES, PRIORITY_CLASSES))
