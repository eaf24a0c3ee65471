"""WORKLOAD_PRIORITY_CLASS (stack policy): queued workloads name a WorkloadPriorityClass, and inference ranks
above training.

Upstream: Kueue `pkg/controller/constants/constants.go` (QueueLabel `kueue.x-k8s.io/queue-name`,
WorkloadPriorityClassLabel `kueue.x-k8s.io/priority-class`), WorkloadPriorityClass (`workloadpriorityclass_types.go`:
top-level `value`, int32). A workload without the priority label gets priority 0 and a missing class name leaves
the Workload unadmitted, so both are caught at preview.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import (
    INFERENCE_ROLE,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    ROLE_LABEL,
    TRAINING_ROLE,
    KubeObject,
    role_of,
    unknown_violation,
    violation,
)
from .vocabulary.priority import PRIORITY_CLASSES, TRAINING_PRIORITY_CLASSES, priority_value
from .vocabulary.queues import QueueIndex, queued_label_sets, queued_objects
from .vocabulary.roles import INFERENCE_PRIORITY_CLASSES, ROLE_OPTIONS, inference_queue_names
from .vocabulary.values import MISSING, UnknownValueError, Violation, get


def check_workload_priority_class(objects: Iterable[KubeObject], inference_names: Iterable[str] = (),
                                  priority_classes: Mapping[str, Any] | None = None,
                                  inference_priority_classes: Iterable[str] = (),
                                  training_priority_classes: Iterable[str] = ()) -> list[Violation]:
    """WORKLOAD_PRIORITY_CLASS over the whole stack.

    Args:
        objects: every Kubernetes object of the stack.
        inference_names: extra inference ClusterQueue names (policy config `inferenceClusterQueues`).
        priority_classes: WorkloadPriorityClasses that exist outside the stack, name -> value (policy config
            `priorityClasses`).
        inference_priority_classes / training_priority_classes: WorkloadPriorityClass names the stack declares for
            inference / training (policy config, generated from the stack file): they are ranked whether or not they
            carry the `kueue-cohorts/role` label, so a class written by hand (ConfigGroup, CustomResource) counts too.
    Returns:
        Violations for: a label set with `kueue.x-k8s.io/queue-name` but no `kueue.x-k8s.io/priority-class`; a
        priority class that is neither in the stack nor in the config; an inference priority (of a workload on an
        inference ClusterQueue, or a WorkloadPriorityClass labelled `kueue-cohorts/role: inference`) that is not
        above every training priority; unknown values (fail closed).
    """
    objects = list(objects)
    inference_names = list(inference_names)
    declared_inference = set(inference_priority_classes)
    declared_training = set(training_priority_classes)
    wpc_objects: dict[str, KubeObject] = {}
    found: list[Violation] = []
    classes: dict[str, int] = {}
    # role -> [(value, description, object, field)]: the priorities each side runs at
    ranked: dict[str, list[tuple[int, str, KubeObject, str]]] = {INFERENCE_ROLE: [], TRAINING_ROLE: []}
    for name, raw in (priority_classes or {}).items():
        value = priority_value(raw)
        if value is None:
            found.append(Violation(
                f"The {WORKLOAD_PRIORITY_CLASS.name} policy config gives priorityClasses['{name}'] the value {raw!r}; "
                f"give the WorkloadPriorityClass value as an integer."))
        else:
            classes[name] = value

    for wpc in (o for o in objects if o.is_kueue("WorkloadPriorityClass")):
        try:
            value = priority_value(get(wpc.props, "value"))
            if value is None:
                found.append(violation(
                    wpc, WORKLOAD_PRIORITY_CLASS.name,
                    "value", get(wpc.props, "value"), "a WorkloadPriorityClass value is an int32",
                    "set its top-level value to an integer",
                    message=f"The WorkloadPriorityClass '{wpc.name}' has no integer value; set its top-level value "
                    f"field."))
                continue
            classes[wpc.name] = value
            wpc_objects[wpc.name] = wpc
            role = get(wpc.labels, ROLE_LABEL)
            if wpc.name in declared_inference:
                role = INFERENCE_ROLE
            elif wpc.name in declared_training:
                role = TRAINING_ROLE
            if role in ranked:
                ranked[role].append((value, f"WorkloadPriorityClass '{wpc.name}' ({value})", wpc, "value"))
        except UnknownValueError as err:
            found.append(unknown_violation(wpc, err))

    queues = QueueIndex.build(objects)
    known = ", ".join(f"'{n}'" for n in sorted(classes)) or "none"
    for obj in queued_objects(objects):  # the others have no workload queued anywhere
        try:
            for path, labels, queue in queued_label_sets(obj):
                priority = get(labels, PRIORITY_CLASS_LABEL)
                label_field = f"{path}[\"{PRIORITY_CLASS_LABEL}\"]"
                if priority is MISSING:
                    found.append(violation(
                        obj, WORKLOAD_PRIORITY_CLASS.name, label_field, priority,
                        "a queued workload must name its WorkloadPriorityClass (without it Kueue gives priority 0)",
                        f"add the label {PRIORITY_CLASS_LABEL} naming a WorkloadPriorityClass of the stack",
                        message=f"The {obj.describe()} sets {QUEUE_NAME_LABEL}: {queue} in {path} but no "
                        f"{PRIORITY_CLASS_LABEL} label there; add {PRIORITY_CLASS_LABEL} naming a "
                        f"WorkloadPriorityClass of the stack (known: {known})."))
                    continue
                if priority not in classes:
                    found.append(violation(
                        obj, WORKLOAD_PRIORITY_CLASS.name, label_field, priority,
                        "names a WorkloadPriorityClass the stack does not define",
                        f"use one of {known}",
                        message=
                            f"The {obj.describe()} names WorkloadPriorityClass '{priority}' in {path}, which is "
                            "neither in "
                        f"this stack nor in the policy config priorityClasses (known: {known}); use one of those or "
                        f"add the class."))
                    continue
                cq_name = queues.cluster_queue_of(obj.namespace, str(queue))
                cq = queues.cluster_queues.get(cq_name) if cq_name else None
                if cq is None:
                    continue
                role = INFERENCE_ROLE if role_of(cq, inference_names) == INFERENCE_ROLE else TRAINING_ROLE
                wpc_obj = wpc_objects.get(str(priority))
                ranked[role].append((classes[priority], f"{obj.describe()} with WorkloadPriorityClass '{priority}' "
                                                       f"({classes[priority]})",
                                     wpc_obj or obj, "value" if wpc_obj else label_field))
        except UnknownValueError as err:
            found.append(unknown_violation(obj, err))

    if ranked[INFERENCE_ROLE] and ranked[TRAINING_ROLE]:
        low_inference = min(ranked[INFERENCE_ROLE], key=lambda item: (item[0], item[1]))
        high_training = max(ranked[TRAINING_ROLE], key=lambda item: (item[0], item[1]))
        if low_inference[0] <= high_training[0]:
            found.append(violation(
                high_training[2], WORKLOAD_PRIORITY_CLASS.name, high_training[3], high_training[0],
                f"training priority must be below the inference priority {low_inference[0]}",
                f"set it below {low_inference[0]} (the guide uses 10 against 1000)",
                message=f"The inference priority must be above every training priority, but the {low_inference[1]} "
                f"is not above the {high_training[1]}; give inference a WorkloadPriorityClass with a higher value "
                f"than any training one."))
    return found


def _check(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
    """The policy's check, with the stack's inference queues and the priority classes of its options."""
    return check_workload_priority_class(
        objects, sorted(inference_queue_names(objects, options)), PRIORITY_CLASSES.read(options),
        INFERENCE_PRIORITY_CLASSES.read(options), TRAINING_PRIORITY_CLASSES.read(options))


WORKLOAD_PRIORITY_CLASS: Declaration = Declaration(
    name="workload-priority-class",
    description="Queued workloads name a WorkloadPriorityClass, and inference ranks above training.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=_check, options=(*ROLE_OPTIONS, TRAINING_PRIORITY_CLASSES, PRIORITY_CLASSES))
