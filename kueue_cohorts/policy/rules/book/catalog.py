"""The pack's policies: each rule wrapped as a pulumi-policy ResourceValidationPolicy or StackValidationPolicy.

This is the only module that knows the SDK's callback shapes (pulumi/pulumi-policy
`sdk/python/lib/pulumi_policy/policy.py`: `validate(args, report_violation)`, `args.get_config()`). Building these
objects is cheap and side-effect free; only `PolicyPack(...)` (in `policy/__main__.py`) starts a server.

Unknown values: the rules catch `UnknownValueError` themselves and report the field (fail closed). The adapters
catch any that a rule let through as a last resort, for the same reason: the SDK would otherwise downgrade it to
an advisory "can't run policy" note and a mandatory policy would pass.
"""
from __future__ import annotations

import contextvars
import functools
import json
import os
from typing import Any, Callable, Iterable, Mapping, Optional

import pulumi.runtime
import pulumi_policy.policy as policy_sdk
from pulumi.runtime.config import get_config_env as pulumi_config_env
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _PolicyAnalyzerServicer

from ..cohort_nominal_within_capacity import LEGACY_CAPACITY, NODE_POOLS, WORKER_NODE_POOLS
from ..vocabulary import memo
from ..vocabulary.declaration import Declaration
from ..vocabulary.multikueue import MANAGER, worker_of_provider
from ..vocabulary.node_pools import node_pools_from_stack_config, worker_node_pools_from_stack_config
from ..vocabulary.objects import KubeObject, from_resource
from ..vocabulary.values import UnknownValueError, Violation, format_path
from . import RULES, judge

PACK_NAME = "kueue-cohorts"

ResourceRule = Callable[[KubeObject, Mapping[str, Any]], list[Violation]]
StackRule = Callable[[Any, Mapping[str, Any]], list[Violation]]
"""`(objects of one cluster, or {cluster: objects} for a rule across clusters, options) -> violations`."""


def _report_all(violations: Iterable[Violation], report: ReportViolation) -> None:
    for violation in violations:
        report(violation.message, violation.urn)


def _last_resort(subject: str, err: UnknownValueError, urn: Optional[str]) -> Violation:
    field = format_path(err.props)
    return Violation(f"The {subject} has {field} unknown at preview, so this policy cannot check it and fails "
                     f"closed; give {field} a value known at preview.", urn)


def _schema(properties: Mapping[str, Any]) -> Optional[PolicyConfigSchema]:
    return PolicyConfigSchema(properties=dict(properties)) if properties else None


def resource_policy(name: str, description: str, level: EnforcementLevel, rule: ResourceRule,
                    schema: Mapping[str, Any]) -> ResourceValidationPolicy:
    """Wrap a per-object rule as a ResourceValidationPolicy.

    Args:
        name: the policy name (lower-case, unique in the pack); also the key of its section of the pack config.
        description: one sentence; the SDK prints it above every violation message.
        level: the default enforcement level (overridable per policy in the policy pack config).
        rule: `(obj, config) -> violations`; called only for Kubernetes objects.
        schema: option key -> JSON schema (`Declaration.schema`); empty for a policy without options.
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
                                    config_schema=_schema(schema), severity=_severity(level))


def stack_policy(name: str, description: str, level: EnforcementLevel, rule: StackRule,
                 schema: Mapping[str, Any], clusters: bool = False,
                 worker_options: Optional[Callable[[Mapping[str, Any], str], Mapping[str, Any]]] = None
                 ) -> StackValidationPolicy:
    """Wrap a whole-stack rule as a StackValidationPolicy (arguments as for `resource_policy`; the rule gets the
    Kubernetes objects of the stack, with the outputs the engine passes to stack policies).

    A MultiKueue stack targets several clusters, one provider each (`multikueue.worker_of_provider`): the rule judges
    each cluster's objects on its own, a worker's with `worker_options(config, worker)` (default: the same config);
    with `clusters` it gets `{cluster: objects}` once instead. A stack of one cluster is judged as one list."""
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        by_cluster = _stack_clusters(args)
        config = args.get_config()
        try:
            if clusters:
                _report_all(rule(by_cluster, config), report)
            else:
                for cluster, objects in by_cluster.items():
                    own = config if cluster == MANAGER or worker_options is None else worker_options(config, cluster)
                    _report_all(rule(objects, own), report)
        except UnknownValueError as err:
            _report_all([_last_resort("stack", err, None)], report)

    return StackValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                 config_schema=_schema(schema), severity=_severity(level))


#: The AnalyzeStack call being served (a fresh object per call, see `judge_each_stack_once`), else None.
_JUDGEMENT: contextvars.ContextVar[Optional[object]] = contextvars.ContextVar("kueue_cohorts_judgement", default=None)
_STACK_MEMO: list[tuple[object, tuple[str, ...], dict[str, list[KubeObject]]]] = []


def cluster_of(resource: Any) -> str:
    """The cluster a resource of the stack targets: the worker of its provider (`k8s-worker-<name>`), else
    `multikueue.MANAGER`."""
    provider = getattr(resource, "provider", None)
    if provider is None:
        return MANAGER
    return worker_of_provider(str(getattr(provider, "name", "") or "")) or MANAGER


def _stack_clusters(args: StackValidationArgs) -> dict[str, list[KubeObject]]:
    """The stack's Kubernetes objects for a stack policy, by cluster (`cluster_of`; the manager first): within one
    AnalyzeStack call the same lists for every stack policy (same URNs), so the rule book's per-stack memos (roles,
    patches merged) serve them all; outside one, or for other URNs, new lists."""
    judgement = _JUDGEMENT.get()
    urns = tuple(r.urn for r in args.resources)
    if judgement is not None and _STACK_MEMO and _STACK_MEMO[0][0] is judgement and _STACK_MEMO[0][1] == urns:
        return _STACK_MEMO[0][2]
    clusters: dict[str, list[KubeObject]] = {MANAGER: []}
    for r in args.resources:
        obj = from_resource(r.resource_type, r.props, r.urn, r.name)
        if obj is not None:
            clusters.setdefault(cluster_of(r), []).append(obj)
    _STACK_MEMO[:] = [(judgement, urns, clusters)] if judgement is not None else []
    return clusters


def _once_per_judgement(step: str, convert: Callable[..., Any]) -> Callable[..., Any]:
    """`convert`, remembered per input object (`memo.once`) within one AnalyzeStack call (its `memo.judging()`
    scope) when called with that object alone; a plain call outside one or with more arguments (Remediate's
    `deserialize_properties(props, True)`)."""
    def remembered(value: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return convert(value, *args, **kwargs)
        return memo.once(step, value, lambda: convert(value))
    remembered._once = True  # type: ignore[attr-defined]
    return remembered


class _JsonFormatOnce:
    """`google.protobuf.json_format` as pulumi-policy's analyzer module sees it, with `MessageToDict` remembered per
    message within one AnalyzeStack call (`_once_per_judgement`); every other name is the real module's."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.MessageToDict = _once_per_judgement("MessageToDict", real.MessageToDict)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _deserialize_each_resource_once() -> None:
    """Make pulumi-policy convert each resource of an AnalyzeStack request once per call instead of once per stack
    policy.

    pulumi-policy 1.21 (`_PolicyAnalyzerServicer.AnalyzeStack` and `_get_provider_resource`) runs, for every stack
    policy and every resource, `json_format.MessageToDict`, `deserialize_properties` and `unknown_checking_proxy`
    on the same request message: with 17 stack policies that was 92% of the pack's AnalyzeStack time (py-spy of a
    500-tenant preview: 212 of 230 samples; the rules themselves 18). Within one call (the `_JUDGEMENT` context) each
    conversion is now remembered per input object, so every stack policy gets the same read-only properties (the
    rules are pure: nothing mutates them); Analyze and Remediate are untouched. Patches the names the analyzer
    module looks up; idempotent.
    """
    sdk: Any = policy_sdk  # the module's own imports, which its stubs do not export
    if not isinstance(sdk.json_format, _JsonFormatOnce):
        sdk.json_format = _JsonFormatOnce(sdk.json_format)
    for name in ("deserialize_properties", "unknown_checking_proxy"):
        current = getattr(sdk, name)
        if not getattr(current, "_once", False):
            setattr(sdk, name, _once_per_judgement(name, current))


def judge_each_stack_once() -> None:
    """Make every stack policy of one AnalyzeStack call judge the same objects, so what the rule book computes per
    stack (ClusterQueue roles, patches merged into their targets) is computed once per call, not once per policy.

    pulumi-policy's analyzer (`_PolicyAnalyzerServicer.AnalyzeStack`, pulumi-policy 1.x) hands each stack policy its
    own freshly deserialized copy of every resource, so the book's memos, which recognise a stack by the identity of
    its list, missed for all but one policy (measured: 901 resources, ClusterQueue roles classified 8 times, 16
    merges of patches). This wraps AnalyzeStack so that each call is one judgement (a context variable); inside it
    the stack policies share the list the first one built (the same URNs; the props are the same request's). A new
    call judges anew, inside one `memo.judging()` scope (each object's label sets and parsed selectors once
    for all stack policies). The SDK's conversion of each resource is shared the same way
    (`_deserialize_each_resource_once`). Idempotent; called by `policy/__main__.py` before the server starts.
    """
    servicer = _PolicyAnalyzerServicer
    if getattr(servicer.AnalyzeStack, "_judges_once", False):
        return
    original: Callable[[Any, Any, Any], Any] = servicer.AnalyzeStack
    _deserialize_each_resource_once()

    def analyze_stack(self: Any, request: Any, context: Any) -> Any:
        token = _JUDGEMENT.set(object())
        try:
            with memo.judging():  # each object's derived facts once for every stack policy, as in `book.run`
                return original(self, request, context)
        finally:
            _JUDGEMENT.reset(token)
            _STACK_MEMO.clear()

    analyze_stack._judges_once = True  # type: ignore[attr-defined]
    servicer.AnalyzeStack = analyze_stack  # type: ignore[method-assign]


def _severity(level: EnforcementLevel) -> Severity:
    return Severity.HIGH if level == EnforcementLevel.MANDATORY else Severity.LOW


MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def node_pools(config: Mapping[str, Any], config_env: Optional[Mapping[str, Any]] = None) -> list[Any]:
    """The node pools the capacity policy judges against (`NODE_POOLS`): the policy config's `nodePools` when set; else
    none when the legacy `capacity` is set (it stands for one pool of unknown labels); else the stack's
    `kueue-cohorts:nodePools` (`config_env` defaults to the engine's PULUMI_CONFIG, which the analyzer process
    receives; omitted labels there mean none); else [] (every quota then fails)."""
    explicit = NODE_POOLS.read(config)
    if explicit or LEGACY_CAPACITY.read(config):
        return list(explicit or [])
    env = pulumi_config_env() if config_env is None else config_env
    return node_pools_from_stack_config(env) or []


def worker_node_pools(config: Mapping[str, Any], worker: str,
                      config_env: Optional[Mapping[str, Any]] = None) -> list[Any]:
    """The node pools MultiKueue worker `worker`'s objects are judged against (`WORKER_NODE_POOLS`): the policy
    config's entry for it, else its `nodePools` in the stack's `kueue-cohorts:multiKueue` (`config_env` defaults to
    PULUMI_CONFIG), else the stack's own (`node_pools`)."""
    explicit = WORKER_NODE_POOLS.read(config).get(worker)
    if explicit:
        return list(explicit)
    env = pulumi_config_env() if config_env is None else config_env
    return worker_node_pools_from_stack_config(env, worker) or node_pools(config, env)


def _worker_options(config: Mapping[str, Any], worker: str) -> Mapping[str, Any]:
    """The capacity policy's options for worker `worker`: its own nodes as `nodePools`."""
    return {**config, NODE_POOLS.key: worker_node_pools(config, worker)}


def _options(rule: Declaration, config: Mapping[str, Any]) -> Mapping[str, Any]:
    if rule.declares(NODE_POOLS):
        return {**config, NODE_POOLS.key: node_pools(config)}
    return config


def _judged(rule: Declaration) -> Callable[[Any, Mapping[str, Any]], list[Violation]]:
    """`rule` as a pack rule: `judge` with the rule's options (see `_options`)."""
    def check(subject: Any, config: Mapping[str, Any]) -> list[Violation]:
        return judge(rule, subject, _options(rule, config))
    return check


@functools.lru_cache(maxsize=1)
def _parsed_config_env(raw: str) -> Mapping[str, Any]:
    parsed: Mapping[str, Any] = json.loads(raw)
    return parsed


def _config_env_once() -> dict[str, Any]:
    """`pulumi.runtime.get_config_env()`, parsing each distinct PULUMI_CONFIG value once (a fresh dict each call)."""
    raw = os.environ.get("PULUMI_CONFIG")
    return {} if raw is None else dict(_parsed_config_env(raw))


def parse_config_env_once() -> None:
    """Make the policy SDK parse the engine's PULUMI_CONFIG once instead of on every call it serves.

    pulumi-policy's analyzer (`_PolicyAnalyzerServicer._configure_runtime_settings`, pulumi-policy 1.x) runs
    `pulumi.runtime.get_config_env()`, a `json.loads` of the whole PULUMI_CONFIG, at the start of every Analyze,
    Remediate and AnalyzeStack call: twice per resource. The stack's config holds every tenant, so the pack's time
    grew with tenants x resources (measured: 0.1 ms per call at 100 tenants, 1.2 ms at 1,000, 9 ms at 5,000). This
    replaces that function in `pulumi.runtime` with one that parses each distinct PULUMI_CONFIG value once and hands
    out a fresh copy of the result, so callers see exactly what they saw before. Idempotent; called by
    `policy/__main__.py` before the server starts.
    """
    pulumi.runtime.get_config_env = _config_env_once


def build_policies() -> list[Any]:
    """Return every policy of the pack (one per declaration of `book.RULES`, in README order) with its default level
    and its options' schema."""
    policies: list[Any] = []
    for rule in RULES:
        level = MANDATORY if rule.mandatory else ADVISORY
        if rule.stack:
            worker = _worker_options if rule.declares(WORKER_NODE_POOLS) else None
            policies.append(stack_policy(rule.name, rule.description, level, _judged(rule), rule.schema(),
                                         rule.clusters, worker))
        else:
            policies.append(resource_policy(rule.name, rule.description, level, _judged(rule), rule.schema()))
    return policies
