"""Kubeflow Trainer v2.2.1 objects: the runtimes, their trainer jobs and the runtime a TrainJob names.

Upstream: Trainer v2.2.1 `pkg/apis/trainer/v1alpha1/trainingruntime_types.go` (TrainingRuntime, ClusterTrainingRuntime,
`spec.template.spec.replicatedJobs`), `trainjob_types.go` (RuntimeRef), `pkg/constants` (the `node` job and its
`trainer.kubeflow.org/trainjob-ancestor-step: trainer` label).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .objects import KubeObject
from .values import MISSING, as_list, as_map, get

TRAINER_GROUP = "trainer.kubeflow.org"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def trainer_jobs(runtime: KubeObject) -> list[tuple[str, Any]]:
    """(field path, job) of the trainer jobs of a runtime's JobSet template: the job named `node` or labelled
    `trainer.kubeflow.org/trainjob-ancestor-step: trainer`, else every replicated job. Raises UnknownValueError."""
    jobs = as_list(get(runtime.spec, "template", "spec", "replicatedJobs"))
    picked = []
    for i, job in enumerate(jobs):
        labels = as_map(get(job, "template", "metadata", "labels"))
        if get(job, "name") == "node" or get(labels, ANCESTOR_LABEL) == "trainer":
            picked.append((f"spec.template.spec.replicatedJobs[{i}]", job))
    return picked or [(f"spec.template.spec.replicatedJobs[{i}]", job) for i, job in enumerate(jobs)]


def runtime_of(trainjob: KubeObject, objects: Sequence[KubeObject]) -> tuple[Optional[KubeObject], str]:
    """The runtime a TrainJob's `spec.runtimeRef` names among `objects`, and its description.

    Trainer v2.2.1 `pkg/apis/trainer/v1alpha1/trainjob_types.go` RuntimeRef: apiGroup defaults to
    trainer.kubeflow.org, kind to ClusterTrainingRuntime; a TrainingRuntime is looked up in the TrainJob's namespace.
    Returns (None, description) when it is not in `objects` or names another API group. Raises UnknownValueError.
    """
    ref = as_map(get(trainjob.spec, "runtimeRef"))
    name = get(ref, "name")
    kind = get(ref, "kind")
    kind = "ClusterTrainingRuntime" if kind in (MISSING, None, "") else str(kind)
    group = get(ref, "apiGroup")
    group = TRAINER_GROUP if group in (MISSING, None, "") else str(group)
    shown = f"{kind} '{name if name is not MISSING else ''}'"
    if group != TRAINER_GROUP or kind not in RUNTIME_KINDS or name is MISSING:
        return None, shown
    for obj in objects:
        if obj.group == TRAINER_GROUP and obj.kind == kind and obj.name == str(name) and (
                kind == "ClusterTrainingRuntime" or obj.namespace == trainjob.namespace):
            return obj, shown
    return None, shown
