"""The rule book: every rule of kueue-cohorts, once, with its name, level and what it judges.

Three callers judge with these same rules:
- the policy pack (`catalog.py` wraps each rule for the CrossGuard SDK; `policy/__main__.py` serves them);
- the program's settings check (`components/checks/validation.py` renders the stack's objects and calls `run`), before
  any resource is registered;
- the cluster's ValidatingAdmissionPolicies, generated from the `cel` module next to the rules they mirror.

Every rule is a function over `KubeObject`s returning structured `Violation`s. Stack rules get every object of the
stack; resource rules one object at a time. `options` is the rule's own section of the policy pack config
(`policy/config/<stack>.json`, generated from the stack file; schemas and defaults in `config.py`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Callable, Mapping, Optional, Sequence

from . import memo
from .api_version import check_kueue_api_version
from .capacity import check_capacity_options
from .checkpoint import check_checkpoint_safe_runtime
from .cluster_queue import check_inference_borrowing_limit_zero, check_inference_reclaim_any, check_namespace_selector
from .cohort import check_single_layout_per_cohort
from .config import option
from .coverage import check_cluster_queue_covers_pod_resources
from .inference_fit import check_inference_fits_nominal
from .manager_config import check_kueue_manager_config
from .multikueue import check_workers_ready
from .namespaces import check_protected_namespaces
from .objects import UNKNOWN_POLICY, KubeObject, unknown_violation
from .overlap import check_pinned_selector, check_selector_overlap
from .patches import as_target, check_helm_release, check_patches, effective_objects, is_patch, patch_problem
from .priority import check_workload_priority_class
from .reclaim import check_inference_reclaim_unblocked
from .reserved_env import check_trainjob_reserved_env
from .resources import check_quantities
from .roles import Roles, check_undecided, classify
from .rollout import check_inference_peak_fits_nominal, check_inference_rollout_fits_nominal
from .runtime_fit import check_training_runtime_fits_queue
from .system_namespaces import protected_namespaces
from .values import MISSING, UnknownValueError, Violation, format_path

ResourceCheck = Callable[[KubeObject, Mapping[str, Any]], list[Violation]]
StackCheck = Callable[[Sequence[KubeObject], Mapping[str, Any]], list[Violation]]


class Promise(str, Enum):
    """The promise a rule keeps; each is one section of policy/README.md, in this order.

    A promise is judged over the whole stack (or plan, or live cluster), not object by object. `WELL_FORMED` holds
    the rules that keep the book able to judge at all (API versions, quantities, patches, Helm releases) and keep the
    stack out of namespaces it does not own.
    """

    GPUS_EXIST = "gpus-exist"
    """1. Inference's GPUs physically exist: quota against the capacity of the nodes each ResourceFlavor selects."""
    KUEUE_COUNTS = "kueue-counts-every-pod"
    """2. Kueue counts every inference and training pod: manager Configuration, namespaces, resources."""
    RECLAIM = "inference-can-reclaim"
    """3. Inference can always take its quota back: reclaim, priorities, borrowing, every serving kind's updates."""
    TRAINING_SURVIVES = "training-survives-preemption"
    """4. Preempted training loses at most one save interval: signals, grace, checkpoint volume, runtime."""
    WELL_FORMED = "well-formed"
    """The book can judge the stack, and the stack stays in its own namespaces."""

    @property
    def heading(self) -> str:
        """The heading of this promise's section in policy/README.md."""
        return PROMISE_TITLES[self]


PROMISE_TITLES: dict[Promise, str] = {
    Promise.GPUS_EXIST: "Promise 1: inference's GPUs physically exist",
    Promise.KUEUE_COUNTS: "Promise 2: Kueue counts every inference and training pod",
    Promise.RECLAIM: "Promise 3: inference can always take its quota back",
    Promise.TRAINING_SURVIVES: "Promise 4: preempted training loses at most one save interval",
    Promise.WELL_FORMED: "Well-formed stacks: what the book needs to judge at all",
}


@dataclass(frozen=True)
class Rule:
    """One rule of the book.

    name: the policy name (lower-case, unique; the key of its options in the pack config). description: one
    sentence. mandatory: the default enforcement level (the pack config may lower it; the settings check treats
    mandatory rules as errors and advisory ones as warnings). stack: True when `check` takes every object of the
    stack, False when it takes one object. check: `(objects or object, options) -> violations`. promise: the promise
    it keeps (its section of policy/README.md). clusters: True for a rule across the clusters of a MultiKueue stack:
    `check` then takes `{cluster: objects}` (`multikueue.MANAGER` for the stack's own cluster, a worker's name for
    each worker) and runs through `run_clusters`; every other stack rule judges each cluster on its own.
    """

    name: str
    description: str
    mandatory: bool
    stack: bool
    check: Callable[..., list[Violation]]
    promise: Promise
    clusters: bool = False


_ROLES_MEMO: list[tuple[Sequence[KubeObject], dict[tuple[Any, ...], tuple[Roles, list[Any]]]]] = []


def roles_of(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> Roles:
    """The role of every ClusterQueue of the stack (`roles.classify`): our role label, the roles the pack config
    declares (`inferenceClusterQueues`, `clusterQueueRoles`, generated from the stack file), an InferenceService or a
    workload of an inference priority class (`inferencePriorityClasses`, or one labelled inference) reaching it, or a
    workload at or above the inference priority."""
    declared = {str(k): str(v) for k, v in (options.get("clusterQueueRoles") or {}).items()}
    declared.update({str(name): "inference" for name in options.get("inferenceClusterQueues") or ()})
    classes = [str(n) for n in options.get("inferencePriorityClasses") or ()]
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


def inference_queue_names(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> set[str]:
    """The ClusterQueues judged as inference (see `roles_of`)."""
    return roles_of(objects, options).inference()


def _per_queue(check: Callable[[KubeObject, list[str]], list[Violation]]) -> StackCheck:
    def run(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
        names = sorted(inference_queue_names(objects, options))
        return [v for obj in objects for v in check(obj, names)]
    return run


def _undecided(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
    return check_undecided(objects, roles_of(objects, options), "cluster-queue-role")


def _protected(objects: Sequence[KubeObject], options: Mapping[str, Any]) -> list[Violation]:
    extra = [str(n) for n in option("protected-namespaces", options, "protectedNamespaces")]
    allowed = [str(n) for n in option("protected-namespaces", options, "allowedAddOnNamespaces")]
    return check_protected_namespaces(objects, protected_namespaces(extra, allowed), "protected-namespaces")


RULES: tuple[Rule, ...] = (
    Rule("inference-borrowing-limit-zero",
         "Inference ClusterQueues set borrowingLimit 0 for every resource of every flavor.", True, True,
         _per_queue(check_inference_borrowing_limit_zero),
         promise=Promise.RECLAIM),
    Rule("inference-reclaim-any", "Inference ClusterQueues set preemption.reclaimWithinCohort to Any.", True, True,
         _per_queue(check_inference_reclaim_any),
         promise=Promise.RECLAIM),
    Rule("cohort-nominal-within-capacity",
         "The nominalQuota of every ClusterQueue and Cohort of the stack fits, per ResourceFlavor, the nodes that "
         "flavor selects by its nodeLabels (flavors that select the same nodes share them).", True, True,
         check_capacity_options,
         promise=Promise.GPUS_EXIST),
    Rule("inference-namespace-selector",
         "Inference ClusterQueues select their tenant namespaces (no missing or empty namespaceSelector).", True, True,
         _per_queue(lambda obj, names: check_namespace_selector(obj, True, names)),
         promise=Promise.KUEUE_COUNTS),
    Rule("cluster-queue-namespace-selector",
         "ClusterQueues select their tenant namespaces (no missing or empty namespaceSelector).", False, True,
         _per_queue(lambda obj, names: check_namespace_selector(obj, False, names)),
         promise=Promise.KUEUE_COUNTS),
    Rule("workload-priority-class",
         "Queued workloads name a WorkloadPriorityClass, and inference ranks above training.", True, True,
         lambda objs, o: check_workload_priority_class(
             objs, sorted(inference_queue_names(objs, o)), option("workload-priority-class", o, "priorityClasses"),
             option("workload-priority-class", o, "inferencePriorityClasses"),
             option("workload-priority-class", o, "trainingPriorityClasses")),
         promise=Promise.RECLAIM),
    Rule("cluster-queue-covers-pod-resources",
         "Kueue counts every pod of the stack: its Configuration counts every resource the ClusterQueues quota, "
         "selects every tenant namespace and manages every kind the stack runs; every ClusterQueue covers cpu and "
         "memory, or the Configuration excludes them.", True, True,
         lambda objs, o: check_cluster_queue_covers_pod_resources(
             objs, option("cluster-queue-covers-pod-resources", o, "excludeResourcePrefixes"),
             inference_queue_names(objs, o)),
         promise=Promise.KUEUE_COUNTS),
    Rule("inference-fits-nominal", "An InferenceService replica fits in the nominalQuota of its ClusterQueue.", True,
         True, lambda objs, o: check_inference_fits_nominal(objs),
         promise=Promise.RECLAIM),
    Rule("inference-rollout-fits-nominal",
         "An inference workload's steady state and every rolling update (replicas plus maxSurge) fit the "
         "nominalQuota of its ClusterQueue, so an update never deadlocks on its own quota.", True, True,
         lambda objs, o: check_inference_rollout_fits_nominal(
             objs, inference_queue_names(objs, o)),
         promise=Promise.RECLAIM),
    Rule("inference-peak-fits-nominal",
         "An InferenceService's maxReplicas fit the nominalQuota of its ClusterQueue (replicas beyond it stay "
         "pending).", False, True,
         lambda objs, o: check_inference_peak_fits_nominal(
             objs, inference_queue_names(objs, o)),
         promise=Promise.RECLAIM),
    Rule("checkpoint-safe-runtime",
         "Training runtimes checkpoint to a ReadWriteMany claim, get enough grace time and start the trainer in exec "
         "form.", True, True,
         lambda objs, o: check_checkpoint_safe_runtime(
             objs, option("checkpoint-safe-runtime", o, "minTerminationGracePeriodSeconds"),
             option("checkpoint-safe-runtime", o, "exemptRuntimes")),
         promise=Promise.TRAINING_SURVIVES),
    Rule("training-runtime-fits-queue",
         "numNodes x a training runtime's per-node requests fit what its ClusterQueue can ever use.", True, True,
         lambda objs, o: check_training_runtime_fits_queue(objs),
         promise=Promise.TRAINING_SURVIVES),
    Rule("trainjob-reserved-env",
         "A TrainJob's spec.trainer.env never overrides the variables its checkpoint-safe runtime sets itself.",
         True, True, lambda objs, o: check_trainjob_reserved_env(objs),
         promise=Promise.TRAINING_SURVIVES),
    Rule("kueue-manager-config",
         "The Kueue manager Configuration limits manageJobsWithoutQueueName, sets a waitForPodsReady timeout, and "
         "switches off no counting protection (feature gates, quotaCheckStrategy) nor the manager itself.",
         True, False, lambda obj, o: check_kueue_manager_config(obj, option("kueue-manager-config", o,
                                                                             "kueueNamespace")),
         promise=Promise.KUEUE_COUNTS),
    Rule("kueue-api-version", "Kueue objects use kueue.x-k8s.io/v1beta2 and its field names.", True, False,
         lambda obj, o: check_kueue_api_version(obj),
         promise=Promise.WELL_FORMED),
    Rule("single-layout-per-cohort",
         "A cohort uses one layout: asymmetric owner/borrower or symmetric floor-and-borrow.", True, True,
         lambda objs, o: check_single_layout_per_cohort(objs),
         promise=Promise.RECLAIM),
    Rule("cluster-queue-role",
         "A ClusterQueue that shares a cohort with an inference queue has a decided role.", True, True, _undecided,
         promise=Promise.RECLAIM),
    Rule("inference-reclaim-unblocked",
         "Nothing in an inference ClusterQueue's cohort tree can block or outrank its reclaim: fair sharing without "
         "FairSharingPreemptWithinNominal over a borrowing subtree, another queue's borrowWithinCohort, or a "
         "WorkloadPriorityClass at or above inference that training namespaces can name.", True, True,
         lambda objs, o: check_inference_reclaim_unblocked(
             objs, roles_of(objs, o), option("inference-reclaim-unblocked", o, "priorityClasses"),
             option("inference-reclaim-unblocked", o, "trainingPriorityClasses")),
         promise=Promise.RECLAIM),
    Rule("protected-namespaces",
         "System namespaces (Kubernetes, Kueue, JobSet, Trainer, KServe) never become tenant namespaces.", True, True,
         _protected,
         promise=Promise.WELL_FORMED),
    Rule("cluster-queue-selector-overlap",
         "No two ClusterQueues can select the same namespace.", True, True,
         lambda objs, o: check_selector_overlap(objs, "cluster-queue-selector-overlap"),
         promise=Promise.KUEUE_COUNTS),
    Rule("cluster-queue-pinned-selector",
         "A ClusterQueue's namespaceSelector pins kubernetes.io/metadata.name, so a copied label selects nothing.",
         True, False, lambda obj, o: check_pinned_selector(obj, "cluster-queue-pinned-selector"),
         promise=Promise.KUEUE_COUNTS),
    Rule("quantities",
         "Every quantity is a Kubernetes quantity, never negative, and whole for extended resources (GPUs).", True,
         False, lambda obj, o: check_quantities(obj, "quantities"),
         promise=Promise.WELL_FORMED),
    Rule("judgeable-patches",
         "Every patch can be judged as the object it produces (kind, apiVersion and name known).", True, True,
         lambda objs, o: check_patches(objs, "judgeable-patches"),
         promise=Promise.WELL_FORMED),
    Rule("multikueue-workers-ready",
         "Every worker a ClusterQueue dispatches to (MultiKueue) has its namespaces, LocalQueues and training "
         "runtimes, and lets the manager's Kueue reach every job kind it dispatches or watches.", True, True,
         lambda clusters, o: check_workers_ready(clusters, o, "multikueue-workers-ready"),
         promise=Promise.KUEUE_COUNTS, clusters=True),
    Rule("no-helm-release",
         "No Helm v3 Release, whose objects the pack cannot see: use kubernetes:helm.sh/v4:Chart.", True, False,
         lambda obj, o: check_helm_release(obj, "no-helm-release"),
         promise=Promise.WELL_FORMED),
)
"""Every rule, in README order."""


_EFFECTIVE_MEMO: list[tuple[Sequence[KubeObject], list[KubeObject], list[Any]]] = []


def _effective(objects: Sequence[KubeObject]) -> list[KubeObject]:
    """`patches.effective_objects(objects)`, computed once per stack judged (every stack rule gets the same list)."""
    if _EFFECTIVE_MEMO and _EFFECTIVE_MEMO[0][0] is objects:
        memo.renote(_EFFECTIVE_MEMO[0][2])  # the patches left out for unknown values, reported by every rule
        return _EFFECTIVE_MEMO[0][1]
    effective, notes = memo.computed(lambda: effective_objects(objects))
    _EFFECTIVE_MEMO[:] = [(objects, effective, notes)]
    return effective


def judge(rule: Rule, subject: Any, options: Mapping[str, Any]) -> list[Violation]:
    """Apply `rule` to a stack's objects (stack rules), to `{cluster: objects}` (rules across clusters) or one object
    (resource rules), patches included: a stack rule sees every `<Kind>Patch` merged into the object it produces
    (`patches.effective_objects`); a resource rule judges a judgeable patch as that object. The catalog calls this
    for the pack, `run` for the program.

    Values unknown at preview fail closed, never raise (`_failing_closed`). Raises nothing for unknown values."""
    def check() -> list[Violation]:
        if rule.clusters:  # {cluster: objects}, each with its patches merged
            return rule.check({name: effective_objects(objs) for name, objs in subject.items()}, options)
        if rule.stack:
            keep_patches = rule.name == "judgeable-patches"
            return rule.check(list(subject) if keep_patches else _effective(subject), options)
        target = subject
        if is_patch(target):
            if patch_problem(target) is not None:
                return []  # judgeable-patches reports it (fail closed)
            target = as_target(target)
        return rule.check(target, options)

    with memo.noting() as noted:
        try:
            found = check()
        except UnknownValueError as err:
            found = [_unknown_in_stack(err) if rule.stack else unknown_violation(subject, err)]
    return _failing_closed(rule, found, noted)


def _failing_closed(rule: Rule, found: list[Violation], noted: Sequence[Any]) -> list[Violation]:
    """A rule's violations `found`, failing closed on values unknown at preview: every unknown that a shared fact
    the rule used left out (`objects.skipped`, collected in `noted` by `memo.noting`) is reported too, unless the
    rule reported that field of that object itself. Every violation carries a policy name (the rule's by default)."""
    if noted:
        seen = {(v.subject, v.field) for v in found}
        for item in noted:
            if isinstance(item, Violation) and (item.subject, item.field) not in seen:
                seen.add((item.subject, item.field))
                found.append(item)
    return [_named(rule, v) for v in found]


def _named(rule: Rule, violation: Violation) -> Violation:
    """`violation` with the rule's name when it has none."""
    return violation if violation.policy else replace(violation, policy=rule.name)


def _unknown_in_stack(err: UnknownValueError) -> Violation:
    """The fail-closed violation for a stack rule that met a value unknown at preview outside any object's guard."""
    field = format_path(err.props) or "a property"
    return Violation(
        f"The stack has {field} unknown at preview, so this policy cannot check it and fails closed; give {field} "
        "a value known at preview (a literal or stack config, not an output of another resource).",
        None, None, format_path(err.props), MISSING,
        "the value is unknown at preview, so the rule cannot check it and fails closed",
        "give it a value known at preview (a literal or stack config, not an output of another resource)",
        UNKNOWN_POLICY)


def run(objects: Sequence[KubeObject], config: Mapping[str, Any]) -> list[tuple[Rule, Violation]]:
    """Judge `objects` by every rule of the book, as the pack would with policy pack config `config`.

    Args:
        objects: every Kubernetes object of a stack. config: policy pack config, policy name -> options (a policy
            whose options set `enforcementLevel: disabled` is skipped).
    Returns:
        (rule, violation) pairs in rule order, then object order.
    """
    try:
        with memo.judging():  # each object's derived facts (label sets, parsed selectors) computed once for all rules
            return _run(objects, config)
    finally:
        # The per-stack memos served this run's rules; they would keep the whole stack alive until the next run.
        _ROLES_MEMO.clear()
        _EFFECTIVE_MEMO.clear()


def _run(objects: Sequence[KubeObject], config: Mapping[str, Any]) -> list[tuple[Rule, Violation]]:
    found: list[tuple[Rule, Violation]] = []
    stack = list(objects)  # one list for every stack rule, so the memos above serve them all
    subjects: Optional[list[KubeObject]] = None
    for rule in RULES:
        options = _options_of(rule, config)
        if options is None or rule.clusters:
            continue
        if rule.stack:
            found += [(rule, v) for v in judge(rule, stack, options)]
        else:
            if subjects is None:
                subjects = _resource_subjects(stack)
            with memo.noting() as noted:
                judged: list[Violation] = []
                for obj in subjects:
                    try:
                        judged += rule.check(obj, options)
                    except UnknownValueError as err:  # fail closed, never raise
                        judged.append(unknown_violation(obj, err))
            found += [(rule, v) for v in _failing_closed(rule, judged, noted)]
    return found


def _options_of(rule: Rule, config: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """The options of `rule` in pack config `config` (a bare string is its enforcement level), or None when the
    config disables it."""
    options = config.get(rule.name) or {}
    if isinstance(options, str):
        options = {"enforcementLevel": options}
    return None if options.get("enforcementLevel") == "disabled" else options


def run_clusters(clusters: Mapping[str, Sequence[KubeObject]],
                 config: Mapping[str, Any]) -> list[tuple[Rule, Violation]]:
    """Judge the rules across clusters (`Rule.clusters`) as the pack would: `clusters` maps each cluster of a
    MultiKueue stack to its objects (`multikueue.MANAGER` for the stack's own; patches merged per cluster), `config`
    is the stack's pack config. `run` judges each cluster by every other rule. Returns (rule, violation) pairs."""
    found: list[tuple[Rule, Violation]] = []
    for rule in RULES:
        options = _options_of(rule, config)
        if options is None or not rule.clusters:
            continue
        with memo.judging():
            found += [(rule, v) for v in judge(rule, clusters, options)]
    return found


def _resource_subjects(objects: Sequence[KubeObject]) -> list[KubeObject]:
    """What `judge` hands a resource rule for each object, worked out once for every resource rule: the object, a
    judgeable patch as the object it produces (`patches.as_target`), nothing for an unjudgeable patch (judgeable-patches
    reports it, also when a value it needs is unknown at preview)."""
    out = []
    for obj in objects:
        try:
            if is_patch(obj):
                if patch_problem(obj) is not None:
                    continue
                obj = as_target(obj)
        except UnknownValueError:
            continue  # judgeable-patches reports a patch it cannot judge (fail closed)
        out.append(obj)
    return out
