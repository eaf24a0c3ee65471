"""RECLAIM_WITHIN_BUDGET (stack policy), promise 3: when inference reclaims, the victim lets its GPUs go within the
inference side's declared reclaim budget.

What inference waits for (Kueue v0.19.2, Kubernetes v1.36.3):
- Kueue evicts the borrowing Workload and suspends its job. For Job, JobSet and TrainJob victims the quota is
  released as soon as the victim's pods start terminating (`pkg/controller/jobframework/reconciler.go`: the
  reservation is cleared once `IsActive()` is false, and the Job controller does not count terminating pods in
  `status.active`; KEP-6143), so the inference Workload is admitted at once, and its pod then waits Pending until
  the trainer's containers have exited and given the node's GPUs back.
- The kubelet gives each container the pod's `terminationGracePeriodSeconds` (core/v1 default 30): it runs the
  preStop hook first, up to the whole grace period, then sends SIGTERM and SIGKILLs at the end of what is left, but
  never sooner than 2 s after the hook (`pkg/kubelet/kuberuntime/kuberuntime_container.go` killContainer,
  `minimumGracePeriodInSeconds = 2` in kuberuntime_manager.go). So a trainer pod holds its node at most
  max(grace, 2) without a hook, max(grace, N + 2) with a `lifecycle.preStop.sleep` of N seconds, and grace + 2
  with any other hook (exec, httpGet: it may take the whole grace period).
- A runtime that declares its checkpoint save time (annotation `kueue-cohorts/checkpoint-save-seconds`, from which
  our runtime derives its grace) needs that long before it exits: a save of at least the budget cannot fit in it.

The budget is the inference side's (`kueue-cohorts:inferenceTraining.inference.reclaimBudgetSeconds`, the pack
option `reclaimBudgetSeconds`, default 60 s: the guide's terminationGracePeriodSeconds, within which its 30 s save
plus one step fit). Judged: every TrainingRuntime in a namespace whose LocalQueue leads to a ClusterQueue in the
cohort tree of an inference ClusterQueue (it borrows inference's quota), every TrainJob queued there whose
`spec.runtimePatches` change the trainer pod's grace period or preStop, and the ClusterTrainingRuntime such a TrainJob
names. Not modelled: the admission cycle, image pull and model load of the inference pod, and a pod stuck
terminating beyond its grace period (a node that is gone: kueue#6143).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from .checkpoint_safe_runtime import SAVE_SECONDS_ANNOTATION, patched_runtime
from .vocabulary.declaration import Declaration, Level, Promise, Scope, integer
from .vocabulary.durations import seconds_field
from .vocabulary.objects import QUEUE_NAME_LABEL, KubeObject, cohort_of, cohort_parents, cohort_root, guarded, violation
from .vocabulary.queues import QueueIndex
from .vocabulary.reclaim import DEFAULT_BUDGET_SECONDS, DEFAULT_GRACE_SECONDS, KUBELET_MINIMUM_SECONDS
from .vocabulary.roles import ROLE_OPTIONS, inference_queue_names
from .vocabulary.trainer import RUNTIME_KINDS, TRAINER_GROUP, runtime_of, trainer_jobs
from .vocabulary.values import MISSING, Violation, as_list, as_map, get

BUDGET_KEY = "kueue-cohorts:inferenceTraining.inference.reclaimBudgetSeconds"


def _show(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(frozen=True)
class Hold:
    """How long one trainer pod may keep its node after the reclaim: `seconds`, the `field` that decides it, its
    `value` as written, and `why` (a clause)."""

    seconds: float
    field: str
    value: Any
    why: str


def pod_hold(pod: Any, pod_path: str) -> Optional[Hold]:
    """The longest a pod of spec `pod` (at `pod_path`) keeps its node after its deletion (see the module docstring):
    max over its containers; None when terminationGracePeriodSeconds is not a number (CHECKPOINT_SAFE_RUNTIME
    reports it). Raises UnknownValueError."""
    raw = get(pod, "terminationGracePeriodSeconds")
    grace = float(DEFAULT_GRACE_SECONDS) if raw is MISSING else seconds_field(raw)
    if grace is None:
        return None
    shown = f"not set (Kubernetes default {DEFAULT_GRACE_SECONDS})" if raw is MISSING else _show(grace)
    best = Hold(max(grace, KUBELET_MINIMUM_SECONDS), f"{pod_path}.terminationGracePeriodSeconds", raw,
                f"terminationGracePeriodSeconds {shown}")
    for i, container in enumerate(as_list(get(pod, "containers"))):
        hook = get(container, "lifecycle", "preStop")
        if hook is MISSING or hook is None:
            continue
        sleep = seconds_field(get(hook, "sleep", "seconds"))
        field = f"{pod_path}.containers[{i}].lifecycle.preStop"
        if sleep is not None:
            hold = max(grace, sleep + KUBELET_MINIMUM_SECONDS)
            why = (f"a preStop sleep of {_show(sleep)} s in a grace period of {_show(grace)} s (the kubelet still "
                   f"gives the container {KUBELET_MINIMUM_SECONDS} s after the hook)")
        else:
            hold = grace + KUBELET_MINIMUM_SECONDS
            why = (f"a preStop hook that may take the whole grace period of {_show(grace)} s, after which the "
                   f"kubelet still gives the container {KUBELET_MINIMUM_SECONDS} s")
        if hold > best.seconds:
            best = Hold(hold, field, hook, why)
    return best


def check_runtime_hold(runtime: KubeObject, budget: int, policy: str, where: str = "") -> list[Violation]:
    """The budget findings on one runtime's trainer pods (no queue lookup: the caller knows the runtime may borrow
    inference's quota): a declared save time at or above `budget` seconds, and a pod that may keep its node longer
    than `budget`. `where`: a clause saying why the runtime is judged. Raises UnknownValueError."""
    out: list[Violation] = []
    declared = get(runtime.annotations, SAVE_SECONDS_ANNOTATION)
    jobs = trainer_jobs(runtime)
    if declared is MISSING:
        for _, job in jobs:
            declared = get(as_map(get(job, "template", "spec", "template", "metadata", "annotations")),
                           SAVE_SECONDS_ANNOTATION)
            if declared is not MISSING:
                break
    save = seconds_field(declared) if declared is not MISSING else None
    fix_budget = f"or raise {BUDGET_KEY} (the pack option reclaimBudgetSeconds) if inference may wait that long"
    if save is not None and save >= budget:
        out.append(violation(
            runtime, policy, f'metadata.annotations["{SAVE_SECONDS_ANNOTATION}"]', declared,
            f"the trainer declares a checkpoint save of {_show(save)} s, and its grace period must outlast the save, "
            f"so when inference reclaims{where} it waits for this save, past the reclaim budget of {budget} s "
            "(the inference Workload is admitted at once; its pod stays Pending until the trainer exits)",
            f"make the save shorter than {budget} s (a smaller or sharded checkpoint, a faster volume), {fix_budget}"))
        return out
    for job_path, job in jobs:
        pod_path = f"{job_path}.template.spec.template.spec"
        hold = pod_hold(get(job, "template", "spec", "template", "spec"), pod_path)
        if hold is None or hold.seconds <= budget:
            continue
        out.append(violation(
            runtime, policy, hold.field, hold.value,
            f"a trainer pod of this runtime keeps its node up to {_show(hold.seconds)} s after inference reclaims"
            f"{where} ({hold.why}; the kubelet waits that long before it kills the container), past the reclaim "
            f"budget of {budget} s: the inference Workload is admitted at once and its pod stays Pending meanwhile",
            f"set terminationGracePeriodSeconds to at most {budget}"
            + (" and shorten or remove the preStop hook" if "preStop" in hold.field else "")
            + (f" (above the declared save of {_show(save)} s)" if save is not None else "") + f", {fix_budget}"))
    return out


def _borrowing_queues(objects: Sequence[KubeObject], queues: QueueIndex, inference: set[str]) -> dict[str, str]:
    """ClusterQueue name -> the inference ClusterQueue whose quota it can borrow: every non-inference ClusterQueue in
    the cohort tree (Cohort `spec.parentName`, followed to the root) of an inference ClusterQueue."""
    parents = cohort_parents(objects)
    tree_of: dict[str, str] = {}
    for name in sorted(inference):
        cq = queues.cluster_queues.get(name)
        cohort = cohort_of(cq) if cq is not None else None
        if cohort is not None:
            tree_of.setdefault(cohort_root(cohort, parents), name)
    out: dict[str, str] = {}
    for name, cq in queues.cluster_queues.items():
        cohort = cohort_of(cq)
        if name not in inference and cohort is not None and cohort_root(cohort, parents) in tree_of:
            out[name] = tree_of[cohort_root(cohort, parents)]
    return out


def check_trainjob_patches(trainjob: KubeObject, budget: int, policy: str) -> list[Violation]:
    """A TrainJob's `spec.runtimePatches` that give the trainer pod a grace period or a preStop hook holding the node
    past `budget` seconds (judged on the patch alone, as the cluster's admission policy sees the TrainJob).
    Raises UnknownValueError."""
    out: list[Violation] = []
    for i, patch in enumerate(as_list(get(trainjob.spec, "runtimePatches"))):
        for j, job in enumerate(as_list(get(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs"))):
            pod = get(job, "template", "spec", "template", "spec")
            if pod is MISSING or (get(pod, "terminationGracePeriodSeconds") is MISSING and not any(
                    get(c, "lifecycle", "preStop") is not MISSING for c in as_list(get(pod, "containers")))):
                continue
            path = (f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}].template.spec"
                    ".template.spec")
            hold = pod_hold(pod, path)
            if hold is None or hold.seconds <= budget:
                continue
            out.append(violation(
                trainjob, policy, hold.field, hold.value,
                f"its runtime patch lets a trainer pod keep its node up to {_show(hold.seconds)} s after inference "
                f"reclaims ({hold.why}), past the reclaim budget of {budget} s: inference's pod stays Pending "
                "meanwhile",
                f"patch terminationGracePeriodSeconds to at most {budget} (or drop the patch), or raise "
                f"{BUDGET_KEY} if inference may wait that long"))
    return out


def check_reclaim_within_budget(objects: Iterable[KubeObject], budget: int,
                                inference_names: Iterable[str]) -> list[Violation]:
    """RECLAIM_WITHIN_BUDGET over the whole stack (see the module docstring).

    Args:
        objects: every Kubernetes object of the stack. budget: the reclaim budget in seconds (`reclaimBudgetSeconds`).
        inference_names: the inference ClusterQueues.
    Returns:
        Violations at a runtime's save annotation, terminationGracePeriodSeconds or preStop hook, and at a TrainJob's
        runtime patch; fail-closed ones for values unknown at preview.
    """
    objects = list(objects)
    queues = QueueIndex.build(objects)
    borrowing = _borrowing_queues(objects, queues, set(inference_names))
    name = RECLAIM_WITHIN_BUDGET.name
    found: list[Violation] = []
    for runtime in (o for o in objects if o.group == TRAINER_GROUP and o.kind == RUNTIME_KINDS[0]):

        def judge_runtime(runtime: KubeObject = runtime) -> list[Violation]:
            if not runtime.name:  # TrainJobs find their runtime by name: an unknown one fails closed here
                return []
            targets = sorted({cq for (ns, _), cq in queues.local_queues.items()
                              if ns == runtime.namespace and cq in borrowing})
            if not targets:
                return []
            where = f" (its namespace's ClusterQueue '{targets[0]}' borrows from '{borrowing[targets[0]]}')"
            return check_runtime_hold(runtime, budget, name, where)

        found += guarded(runtime, judge_runtime)
    for job in (o for o in objects if o.group == TRAINER_GROUP and o.kind == "TrainJob"):

        def judge_job(job: KubeObject = job) -> list[Violation]:
            queue = get(job.labels, QUEUE_NAME_LABEL)
            cq = queues.cluster_queue_of(job.namespace, queue) if isinstance(queue, str) else None
            if cq not in borrowing:
                return []
            out = check_trainjob_patches(job, budget, name)
            runtime, _ = runtime_of(job, objects)
            if runtime is not None and runtime.kind == RUNTIME_KINDS[1]:
                out += check_runtime_hold(runtime, budget, name, f" (TrainJob '{job.name}' on ClusterQueue '{cq}' "
                                                                  f"uses it and borrows from '{borrowing[str(cq)]}')")
            elif runtime is not None and not out:
                patched = patched_runtime(runtime, job)
                if patched is not None:
                    before = {(v.field, v.rule) for v in check_runtime_hold(runtime, budget, name)}
                    out += [violation(job, name, "spec.runtimePatches", get(job.spec, "runtimePatches"),
                                      f"with its runtime patches applied, {v.rule}", v.fix)
                            for v in check_runtime_hold(patched, budget, name) if (v.field, v.rule) not in before]
            return out

        found += guarded(job, judge_job)
    return found


RECLAIM_BUDGET_SECONDS = integer(
    "reclaimBudgetSeconds", DEFAULT_BUDGET_SECONDS,
    "The longest inference may wait, in seconds, for a reclaimed trainer pod to give its node back (its grace period, "
    "preStop included, and its declared checkpoint save must fit). Generated from "
    "kueue-cohorts:inferenceTraining.inference.reclaimBudgetSeconds.", minimum=1)

RECLAIM_WITHIN_BUDGET: Declaration = Declaration(
    name="reclaim-within-budget",
    description="A trainer that borrows inference's quota gives its node back within the inference side's reclaim "
                "budget (grace period, preStop hook and declared checkpoint save).",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_reclaim_within_budget(
        objects, RECLAIM_BUDGET_SECONDS.read(options), inference_queue_names(objects, options)),
    options=(RECLAIM_BUDGET_SECONDS, *ROLE_OPTIONS))
