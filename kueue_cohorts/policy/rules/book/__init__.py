"""The rule book: every policy of kueue-cohorts in order (`RULES`, the declarations of the rule modules), and the
one way to judge a stack by them.

Three callers judge with these same rules:
- the policy pack (`catalog.py` wraps each rule for the CrossGuard SDK; `policy/__main__.py` serves them);
- the program's settings check (`components/checks/validation.py` renders the stack's objects and calls `run`), before
  any resource is registered;
- the cluster's ValidatingAdmissionPolicies, generated from the `cel` module next to the rules they mirror.

Every rule is declared once, in the module named after it (`vocabulary/declaration.py`: name, description, promise,
level, scope, options, check); its check is a function over `KubeObject`s returning structured `Violation`s. Stack
rules get every object of the stack; resource rules one object at a time. `options` is the rule's own section of the
policy pack config (`policy/config/<stack>.json`, generated from the stack file; the schema derives from the
declarations, `config.py`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Optional, Sequence

from ..checkpoint_safe_runtime import CHECKPOINT_SAFE_RUNTIME
from ..cluster_queue_covers_pod_resources import CLUSTER_QUEUE_COVERS_POD_RESOURCES
from ..cluster_queue_pinned_selector import CLUSTER_QUEUE_PINNED_SELECTOR
from ..cluster_queue_role import CLUSTER_QUEUE_ROLE
from ..cluster_queue_selector_overlap import CLUSTER_QUEUE_SELECTOR_OVERLAP
from ..cohort_nominal_within_capacity import COHORT_NOMINAL_WITHIN_CAPACITY
from ..inference_borrowing_limit_zero import INFERENCE_BORROWING_LIMIT_ZERO
from ..inference_fits_nominal import INFERENCE_FITS_NOMINAL
from ..inference_peak_fits_nominal import INFERENCE_PEAK_FITS_NOMINAL
from ..inference_reclaim_any import INFERENCE_RECLAIM_ANY
from ..inference_reclaim_unblocked import INFERENCE_RECLAIM_UNBLOCKED
from ..inference_rollout_fits_nominal import INFERENCE_ROLLOUT_FITS_NOMINAL
from ..judgeable_patches import JUDGEABLE_PATCHES
from ..kueue_api_version import KUEUE_API_VERSION
from ..kueue_manager_config import KUEUE_MANAGER_CONFIG
from ..multikueue_workers_ready import MULTIKUEUE_WORKERS_READY
from ..namespace_selector import CLUSTER_QUEUE_NAMESPACE_SELECTOR, INFERENCE_NAMESPACE_SELECTOR
from ..no_helm_release import NO_HELM_RELEASE
from ..pods_fit_nodes import PODS_FIT_NODES
from ..protected_namespaces import PROTECTED_NAMESPACES
from ..quantities import QUANTITIES
from ..reclaim_within_budget import RECLAIM_WITHIN_BUDGET
from ..single_layout_per_cohort import SINGLE_LAYOUT_PER_COHORT
from ..training_priority_below_inference import TRAINING_PRIORITY_BELOW_INFERENCE
from ..training_runtime_fits_queue import TRAINING_RUNTIME_FITS_QUEUE
from ..trainjob_reserved_env import TRAINJOB_RESERVED_ENV
from ..vocabulary import memo, roles
from ..vocabulary.declaration import Declaration, Option
from ..vocabulary.objects import UNKNOWN_POLICY, KubeObject, unknown_violation
from ..vocabulary.patches import as_target, effective_objects, is_patch, patch_problem
from ..vocabulary.values import MISSING, UnknownValueError, Violation, format_path
from ..workload_priority_class import WORKLOAD_PRIORITY_CLASS

RULES: tuple[Declaration, ...] = (
    INFERENCE_BORROWING_LIMIT_ZERO,
    INFERENCE_RECLAIM_ANY,
    COHORT_NOMINAL_WITHIN_CAPACITY,
    INFERENCE_NAMESPACE_SELECTOR,
    CLUSTER_QUEUE_NAMESPACE_SELECTOR,
    WORKLOAD_PRIORITY_CLASS,
    TRAINING_PRIORITY_BELOW_INFERENCE,
    CLUSTER_QUEUE_COVERS_POD_RESOURCES,
    INFERENCE_FITS_NOMINAL,
    INFERENCE_ROLLOUT_FITS_NOMINAL,
    INFERENCE_PEAK_FITS_NOMINAL,
    CHECKPOINT_SAFE_RUNTIME,
    TRAINING_RUNTIME_FITS_QUEUE,
    TRAINJOB_RESERVED_ENV,
    KUEUE_MANAGER_CONFIG,
    KUEUE_API_VERSION,
    SINGLE_LAYOUT_PER_COHORT,
    CLUSTER_QUEUE_ROLE,
    INFERENCE_RECLAIM_UNBLOCKED,
    PROTECTED_NAMESPACES,
    CLUSTER_QUEUE_SELECTOR_OVERLAP,
    CLUSTER_QUEUE_PINNED_SELECTOR,
    QUANTITIES,
    JUDGEABLE_PATCHES,
    MULTIKUEUE_WORKERS_READY,
    NO_HELM_RELEASE,
    # placement and reclaim time (issue 37): one block
    PODS_FIT_NODES,
    RECLAIM_WITHIN_BUDGET,
)
"""Every policy's declaration, in the book's (and the pack's) order. policy/README.md documents each under its
promise."""


def declaring(option: Option[Any]) -> list[Declaration]:
    """The policies that declare `option`, in book order: each is given the stack's value of it in a generated pack
    config (`components/model/pack_config.py`)."""
    return [rule for rule in RULES if rule.declares(option)]


_EFFECTIVE_MEMO: list[tuple[Sequence[KubeObject], list[KubeObject], list[Any]]] = []


def _effective(objects: Sequence[KubeObject]) -> list[KubeObject]:
    """`patches.effective_objects(objects)`, computed once per stack judged (every stack rule gets the same list)."""
    if _EFFECTIVE_MEMO and _EFFECTIVE_MEMO[0][0] is objects:
        memo.renote(_EFFECTIVE_MEMO[0][2])  # the patches left out for unknown values, reported by every rule
        return _EFFECTIVE_MEMO[0][1]
    effective, notes = memo.computed(lambda: effective_objects(objects))
    _EFFECTIVE_MEMO[:] = [(objects, effective, notes)]
    return effective


def judge(rule: Declaration, subject: Any, options: Mapping[str, Any]) -> list[Violation]:
    """Apply `rule` to a stack's objects (stack rules), to `{cluster: objects}` (rules across the clusters of a
    MultiKueue stack, `Scope.CLUSTERS`) or one object (resource rules), patches included: a stack rule sees every
    `<Kind>Patch` merged into the object it produces (`patches.effective_objects`); a resource rule judges a judgeable
    patch as that object. The catalog calls this for the pack, `run` and `run_clusters` for the program.

    Values unknown at preview fail closed, never raise (`_failing_closed`). Raises nothing for unknown values."""
    bound = rule.options_of(options)

    def check() -> list[Violation]:
        if rule.clusters:  # {cluster: objects}, each with its patches merged
            return rule.check({name: effective_objects(objs) for name, objs in subject.items()}, bound)
        if rule.stack:
            keep_patches = rule is JUDGEABLE_PATCHES  # it judges the patches themselves
            return rule.check(list(subject) if keep_patches else _effective(subject), bound)
        target = subject
        if is_patch(target):
            if patch_problem(target) is not None:
                return []  # JUDGEABLE_PATCHES reports it (fail closed)
            target = as_target(target)
        return rule.check(target, bound)

    with memo.noting() as noted:
        try:
            found = check()
        except UnknownValueError as err:
            found = [_unknown_in_stack(err) if rule.stack else unknown_violation(subject, err)]
    return _failing_closed(rule, found, noted)


def _failing_closed(rule: Declaration, found: list[Violation], noted: Sequence[Any]) -> list[Violation]:
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


def _named(rule: Declaration, violation: Violation) -> Violation:
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


def run(objects: Sequence[KubeObject], config: Mapping[str, Any]) -> list[tuple[Declaration, Violation]]:
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
        roles.forget()
        _EFFECTIVE_MEMO.clear()


def _run(objects: Sequence[KubeObject], config: Mapping[str, Any]) -> list[tuple[Declaration, Violation]]:
    found: list[tuple[Declaration, Violation]] = []
    stack = list(objects)  # one list for every stack rule, so the memos above serve them all
    subjects: Optional[list[KubeObject]] = None
    for rule in RULES:
        options = _options_of(rule, config)
        if options is None or rule.clusters:
            continue
        if rule.stack:
            found += [(rule, v) for v in judge(rule, stack, options)]
            continue
        bound = rule.options_of(options)
        if subjects is None:
            subjects = _resource_subjects(stack)
        with memo.noting() as noted:
            judged: list[Violation] = []
            for obj in subjects:
                try:
                    judged += rule.check(obj, bound)
                except UnknownValueError as err:  # fail closed, never raise
                    judged.append(unknown_violation(obj, err))
        found += [(rule, v) for v in _failing_closed(rule, judged, noted)]
    return found


def _options_of(rule: Declaration, config: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """The options of `rule` in pack config `config` (a bare string is its enforcement level), or None when the
    config disables it."""
    options = config.get(rule.name) or {}
    if isinstance(options, str):
        options = {"enforcementLevel": options}
    return None if options.get("enforcementLevel") == "disabled" else options


def run_clusters(clusters: Mapping[str, Sequence[KubeObject]],
                 config: Mapping[str, Any]) -> list[tuple[Declaration, Violation]]:
    """Judge the rules across clusters (`Scope.CLUSTERS`) as the pack would.

    Args:
        clusters: each cluster of a MultiKueue stack -> its objects (`vocabulary.multikueue.MANAGER` for the
            stack's own; patches are merged per cluster). config: the stack's pack config.
    Returns:
        (rule, violation) pairs in rule order. `run` judges each cluster by every other rule.
    """
    found: list[tuple[Declaration, Violation]] = []
    for rule in RULES:
        options = _options_of(rule, config)
        if options is None or not rule.clusters:
            continue
        with memo.judging():
            found += [(rule, v) for v in judge(rule, clusters, options)]
    return found


def _resource_subjects(objects: Sequence[KubeObject]) -> list[KubeObject]:
    """What `judge` hands a resource rule for each object, worked out once for every resource rule: the object, a
    judgeable patch as the object it produces (`patches.as_target`), nothing for an unjudgeable patch (JUDGEABLE_PATCHES
    reports it, also when a value it needs is unknown at preview)."""
    out = []
    for obj in objects:
        try:
            if is_patch(obj):
                if patch_problem(obj) is not None:
                    continue
                obj = as_target(obj)
        except UnknownValueError:
            continue  # JUDGEABLE_PATCHES reports a patch it cannot judge (fail closed)
        out.append(obj)
    return out
