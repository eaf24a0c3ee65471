"""TRAINJOB_RESERVED_ENV (stack policy): a TrainJob never overrides the variables its training runtime sets itself.

Kubeflow Trainer v2.2.1 builds the trainer container from the runtime's template and then upserts the TrainJob's
`spec.trainer.env` over it, name by name (github.com/kubeflow/trainer/v2@v2.2.1
pkg/runtime/framework/plugins/jobset/builder.go, `apply.UpsertEnvVars(env, apply.EnvVars(jobTrainer.Env...)...)`):
a TrainJob's value wins. The checkpoint-safe runtime (components/model/runtime.py) sets what makes its
checkpoints safe and where they go: PYTHONPATH (the trainer's code), KUEUE_COHORTS_RUN_NAME (the run directory),
KUEUE_COHORTS_CHECKPOINT_ROOT, KUEUE_COHORTS_RECIPE, KUEUE_COHORTS_SAVE_STEPS (`RESERVED_ENV`); the Trainer's torch
plugin sets the PET_* variables of torchrun (pkg/runtime/framework/plugins/torch/torch.go). A TrainJob of such a
runtime that sets one of them could point the run at another run's checkpoints, load other code, or break the
distributed rendezvous, so the rule refuses it.

Which runtime: `spec.runtimeRef` (name; kind ClusterTrainingRuntime by default, or TrainingRuntime in the TrainJob's
namespace; apiGroup trainer.kubeflow.org). Only a runtime of the stack whose trainer container sets a reserved
variable is judged (a runtime outside the stack, or one that sets none, is someone else's contract).
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.env_names import RESERVED_ENV, RESERVED_PREFIXES, is_reserved
from .vocabulary.objects import KubeObject, guarded, violation
from .vocabulary.trainer import RUNTIME_KINDS, TRAINER_GROUP
from .vocabulary.values import MISSING, Violation, as_list, as_map, get, is_map

__all__ = ["ENV_PATHS", "RESERVED_ENV", "RESERVED_PREFIXES", "TRAINJOB_RESERVED_ENV", "check_trainjob_reserved_env",
           "is_reserved", "reserved_entries", "reserved_violations", "runtime_key"]


def _env_names(runtime: KubeObject) -> set[str]:
    """Every env name any container of the runtime's replicatedJobs sets."""
    names: set[str] = set()
    for job in as_list(get(runtime.spec, "template", "spec", "replicatedJobs")):
        pod = get(job, "template", "spec", "template", "spec")
        for container in [*as_list(get(pod, "containers")), *as_list(get(pod, "initContainers"))]:
            names.update(str(get(e, "name")) for e in as_list(get(container, "env")) if get(e, "name"))
    return names


def _runtime_key(trainjob: KubeObject) -> tuple[str, Optional[str], str]:
    ref = as_map(get(trainjob.spec, "runtimeRef"))
    kind = str(get(ref, "kind") or "ClusterTrainingRuntime")
    return kind, (trainjob.namespace if kind == "TrainingRuntime" else None), str(get(ref, "name"))


ENV_PATHS = ("spec.trainer.env.*",
             *(f"spec.runtimePatches.*.trainingRuntimeSpec.template.spec.replicatedJobs.*.template.spec.template.spec"
               f".{containers}.*.env.*" for containers in ("containers", "initContainers")))
"""Every place a TrainJob names an environment variable of its trainer (dotted, `*` for every list item):
`spec.trainer.env` (upserted over the runtime's, builder.go) and the env of `spec.runtimePatches` (Trainer v2.2.1
`trainjob_types.go` ContainerPatch.env, "merged with the Runtime's environments"; its webhook refuses them only for the
`node` and initializer containers, pkg/runtime/framework/plugins/jobset/jobset.go, and never for initContainers)."""


def _at(node: Any, parts: list[str], here: str) -> list[tuple[str, Any]]:
    if not parts:
        return [(here, node)]
    head, rest = parts[0], parts[1:]
    if head == "*":
        return [hit for i, item in enumerate(as_list(node)) for hit in _at(item, rest, f"{here}[{i}]")]
    child = get(node, head) if is_map(node) else None
    return [] if child is None or child is MISSING else _at(child, rest, f"{here}.{head}" if here else head)


def reserved_entries(trainjob: KubeObject) -> list[tuple[str, Any]]:
    """(field of the env entry's name, the name) of every entry at `ENV_PATHS` of `trainjob` that names a reserved
    variable (`is_reserved`)."""
    return [(f"{field}.name", get(entry, "name")) for path in ENV_PATHS
            for field, entry in _at(trainjob.props, path.split("."), "") if is_reserved(get(entry, "name"))]


def runtime_key(trainjob: KubeObject) -> tuple[str, Optional[str], str]:
    """(kind, namespace or None, name) of the runtime `trainjob` names (`spec.runtimeRef`, kind default
    ClusterTrainingRuntime; a TrainingRuntime is in the TrainJob's namespace)."""
    return _runtime_key(trainjob)


def check_trainjob_reserved_env(objects: Iterable[KubeObject], policy: str) -> list[Violation]:
    """TRAINJOB_RESERVED_ENV over the whole stack.

    Args:
        objects: every Kubernetes object of the stack (training runtimes and TrainJobs are read).
        policy: the policy name for the Violations.
    Returns:
        One Violation per env entry (`ENV_PATHS`: spec.trainer.env, the env of spec.runtimePatches) of a TrainJob
        whose runtime (in the stack) sets a reserved variable and that names a reserved variable (RESERVED_ENV or
        PET_*), field the entry's name (`spec.trainer.env[i].name`, ...); the
        fail-closed violation for a value unknown at preview.
    """
    objects = list(objects)
    ours: dict[tuple[str, Optional[str], str], set[str]] = {}
    for obj in objects:
        if obj.group == TRAINER_GROUP and obj.kind in RUNTIME_KINDS:
            def read(obj: KubeObject = obj) -> list[Violation]:
                reserved = {n for n in _env_names(obj) if is_reserved(n)}
                if reserved:
                    namespace = obj.namespace if obj.kind == "TrainingRuntime" else None
                    ours[(obj.kind, namespace, obj.name)] = reserved
                return []
            guarded(obj, read)
    found: list[Violation] = []
    for obj in objects:
        if obj.group != TRAINER_GROUP or obj.kind != "TrainJob":
            continue

        def judge(obj: KubeObject = obj) -> list[Violation]:
            key = _runtime_key(obj)
            if key not in ours:
                return []
            return reserved_violations(obj, key, policy)
        found.extend(guarded(obj, judge))
    return found


def reserved_violations(trainjob: KubeObject, key: tuple[str, Optional[str], str], policy: str) -> list[Violation]:
    """One Violation of `policy` per `reserved_entries` of `trainjob`, whose runtime is `key` (`runtime_key`)."""
    return [violation(
        trainjob, policy, field, name,
        f"{name} is set by its runtime {key[0]} '{key[2]}' (the Trainer lets a TrainJob's env win, so this would "
        "move the run's checkpoints, load other code or break the distributed rendezvous)",
        f"remove it from {'spec.trainer.env' if field.startswith('spec.trainer.') else 'spec.runtimePatches'}; "
        "change the runtime (trainingRuntime settings) instead") for field, name in reserved_entries(trainjob)]


TRAINJOB_RESERVED_ENV: Declaration = Declaration(
    name="trainjob-reserved-env",
    description="A TrainJob's spec.trainer.env never overrides the variables its checkpoint-safe runtime sets "
                "itself.",
    promise=Promise.TRAINING_SURVIVES, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_trainjob_reserved_env(objects, TRAINJOB_RESERVED_ENV.name))
