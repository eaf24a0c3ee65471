"""The pack's policies: each rule wrapped as a pulumi-policy ResourceValidationPolicy or StackValidationPolicy.

This is the only module that knows the SDK's callback shapes (pulumi/pulumi-policy
`sdk/python/lib/pulumi_policy/policy.py`: `validate(args, report_violation)`, `args.get_config()`). Building these
objects is cheap and side-effect free; only `PolicyPack(...)` (in `policy/__main__.py`) starts a server.

Unknown values: the rules catch `UnknownValueError` themselves and report the field (fail closed). The adapters
catch any that a rule let through as a last resort, for the same reason: the SDK would otherwise downgrade it to
an advisory "can't run policy" note and a mandatory policy would pass.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional

from pulumi.runtime.config import get_config_env as pulumi_config_env
from pulumi_policy import (EnforcementLevel, PolicyConfigSchema, ReportViolation, ResourceValidationArgs,
                           ResourceValidationPolicy, Severity, StackValidationArgs, StackValidationPolicy)

from .api_version import check_kueue_api_version
from .checkpoint import check_checkpoint_safe_runtime
from .cluster_queue import (check_inference_borrowing_limit_zero, check_inference_reclaim_any,
                            check_namespace_selector)
from .cohort import check_cohort_nominal_within_capacity, check_single_layout_per_cohort
from .config import SCHEMAS, option
from .inference_fit import check_inference_fits_nominal
from .manager_config import check_kueue_manager_config
from .objects import KubeObject, from_resource
from .priority import check_workload_priority_class
from .stack_capacity import capacity_from_stack_config
from .values import UnknownValueError, Violation, format_path

PACK_NAME = "kueue-cohorts"

ResourceRule = Callable[[KubeObject, Mapping[str, Any]], list[Violation]]
StackRule = Callable[[list[KubeObject], Mapping[str, Any]], list[Violation]]


def _report_all(violations: Iterable[Violation], report: ReportViolation) -> None:
    for violation in violations:
        report(violation.message, violation.urn)


def _last_resort(subject: str, err: UnknownValueError, urn: Optional[str]) -> Violation:
    field = format_path(err.props)
    return Violation(f"The {subject} has {field} unknown at preview, so this policy cannot check it and fails "
                     f"closed; give {field} a value known at preview.", urn)


def _schema(name: str) -> Optional[PolicyConfigSchema]:
    properties = SCHEMAS[name]
    return PolicyConfigSchema(properties=properties) if properties else None


def resource_policy(name: str, description: str, level: EnforcementLevel, rule: ResourceRule) -> ResourceValidationPolicy:
    """Wrap a per-object rule as a ResourceValidationPolicy.

    Args:
        name: the policy name (lower-case, unique in the pack); also the key of its config in `SCHEMAS`.
        description: one sentence; the SDK prints it above every violation message.
        level: the default enforcement level (overridable per policy in the policy pack config).
        rule: `(obj, config) -> violations`; called only for Kubernetes objects.
    Returns:
        The policy object (not yet served).
    """
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        obj = from_resource(args.resource_type, args.props, args.urn, args.name)
        if obj is None:
            return
        try:
            _report_all(rule(obj, args.get_config()), report)
        except UnknownValueError as err:
            _report_all([_last_resort(f"{obj.kind} '{args.name}'", err, args.urn)], report)

    return ResourceValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                    config_schema=_schema(name), severity=_severity(level))


def stack_policy(name: str, description: str, level: EnforcementLevel, rule: StackRule) -> StackValidationPolicy:
    """Wrap a whole-stack rule as a StackValidationPolicy (arguments as for `resource_policy`; the rule gets every
    Kubernetes object of the stack, with the outputs the engine passes to stack policies)."""
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        objects = [o for o in (from_resource(r.resource_type, r.props, r.urn, r.name) for r in args.resources) if o]
        try:
            _report_all(rule(objects, args.get_config()), report)
        except UnknownValueError as err:
            _report_all([_last_resort("stack", err, None)], report)

    return StackValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                 config_schema=_schema(name), severity=_severity(level))


def _severity(level: EnforcementLevel) -> Severity:
    return Severity.HIGH if level == EnforcementLevel.MANDATORY else Severity.LOW


MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def _names(policy: str, config: Mapping[str, Any]) -> list[str]:
    return list(option(policy, config, "inferenceClusterQueues"))


def capacity(config: Mapping[str, Any], config_env: Optional[Mapping[str, Any]] = None) -> Mapping[str, Any]:
    """The capacity cohort-nominal-within-capacity checks against: the policy config's `capacity` when set, else
    the one derived from the stack's `kueue-cohorts:nodePools` (`config_env` defaults to the engine's PULUMI_CONFIG,
    which the analyzer process receives), else {} (every quota'd resource then fails)."""
    explicit = option("cohort-nominal-within-capacity", config, "capacity")
    if explicit:
        return explicit
    env = pulumi_config_env() if config_env is None else config_env
    return capacity_from_stack_config(env) or {}


def build_policies() -> list:
    """Return every policy of the pack, in README order, with its default enforcement level."""
    return [
        resource_policy(
            "inference-borrowing-limit-zero",
            "Inference ClusterQueues set borrowingLimit 0 for every resource of every flavor.", MANDATORY,
            lambda o, c: check_inference_borrowing_limit_zero(o, _names("inference-borrowing-limit-zero", c))),
        resource_policy(
            "inference-reclaim-any",
            "Inference ClusterQueues set preemption.reclaimWithinCohort to Any.", MANDATORY,
            lambda o, c: check_inference_reclaim_any(o, _names("inference-reclaim-any", c))),
        stack_policy(
            "cohort-nominal-within-capacity",
            "The nominalQuota of a cohort stays within the physical capacity of the cluster.", MANDATORY,
            lambda objs, c: check_cohort_nominal_within_capacity(objs, capacity(c))),
        resource_policy(
            "inference-namespace-selector",
            "Inference ClusterQueues select their tenant namespaces (no missing or empty namespaceSelector).",
            MANDATORY,
            lambda o, c: check_namespace_selector(o, True, _names("inference-namespace-selector", c))),
        resource_policy(
            "cluster-queue-namespace-selector",
            "ClusterQueues select their tenant namespaces (no missing or empty namespaceSelector).", ADVISORY,
            lambda o, c: check_namespace_selector(o, False, _names("cluster-queue-namespace-selector", c))),
        stack_policy(
            "workload-priority-class",
            "Queued workloads name a WorkloadPriorityClass, and inference ranks above training.", MANDATORY,
            lambda objs, c: check_workload_priority_class(
                objs, _names("workload-priority-class", c), option("workload-priority-class", c, "priorityClasses"))),
        stack_policy(
            "inference-fits-nominal",
            "An InferenceService replica fits in the nominalQuota of its ClusterQueue.", MANDATORY,
            lambda objs, c: check_inference_fits_nominal(objs)),
        stack_policy(
            "checkpoint-safe-runtime",
            "Training runtimes checkpoint to a ReadWriteMany claim, get enough grace time and start the trainer in "
            "exec form.", MANDATORY,
            lambda objs, c: check_checkpoint_safe_runtime(
                objs, option("checkpoint-safe-runtime", c, "minTerminationGracePeriodSeconds"),
                option("checkpoint-safe-runtime", c, "exemptRuntimes"))),
        resource_policy(
            "kueue-manager-config",
            "The Kueue manager Configuration limits manageJobsWithoutQueueName and sets a waitForPodsReady timeout.",
            MANDATORY,
            lambda o, c: check_kueue_manager_config(o, option("kueue-manager-config", c, "kueueNamespace"))),
        resource_policy(
            "kueue-api-version",
            "Kueue objects use kueue.x-k8s.io/v1beta2 and its field names.", MANDATORY,
            lambda o, c: check_kueue_api_version(o)),
        stack_policy(
            "single-layout-per-cohort",
            "A cohort uses one layout: asymmetric owner/borrower or symmetric floor-and-borrow.", ADVISORY,
            lambda objs, c: check_single_layout_per_cohort(objs)),
    ]
