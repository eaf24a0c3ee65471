"""The rule book inside the cluster: ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, CEL) generated
from the same rules the pack and the settings check run.

A `kubectl patch`, a Helm upgrade or a GitOps sync never passes through `pulumi`, so the policy pack cannot stop it.
Each `Guardrail` here pairs one rule of the book with its CEL twin:

| guardrail                      | Python rule it mirrors                                     | object judged         |
|--------------------------------|------------------------------------------------------------|-----------------------|
| INFERENCE_BORROWING_LIMIT_ZERO | `inference_borrowing_limit_zero` (the same rule)           | ClusterQueue          |
| INFERENCE_RECLAIM_ANY          | `inference_reclaim_any` (the same rule)                    | ClusterQueue          |
| namespace-selector             | `namespace_selector.check_namespace_selector` (both roles) | ClusterQueue          |
| WORKLOAD_PRIORITY_CLASS        | `workload_priority_class` (the ranking)                    | WorkloadPriorityClass |
| tenant-label                   | `check_tenant_label` (here: admission only, needs the user) | Namespace (+ subres.) |
| cohort-membership              | `check_cohort_membership` (admission only, needs the user)  | ClusterQueue, Cohort  |
| priority-ceiling               | `check_priority_ceiling` (admission only, needs the user)   | WorkloadPriorityClass |
| kueue-manager-config-writers   | `check_manager_config_writer` (admission only)              | ConfigMap (Kueue's)   |
| INFERENCE_ROLLOUT_FITS_NOMINAL | `inference_rollout_fits_nominal`: `lifecycle_of` + `judge` | Deployment,           |
|                                | (one workload)                                             | StatefulSet, LWS      |
| priority-use                   | `check_priority_use` (TRAINING_PRIORITY_BELOW_INFERENCE's  | every workload kind   |
|                                | `priority_violations`, one workload)                       | (`KINDS`)             |
| multikueue-writers             | `check_multikueue_writer` (admission only)                 | MultiKueue objects,   |
|                                |                                                            | worker Secrets        |
| TRAINJOB_RESERVED_ENV          | `check_reserved_env_request` (`reserved_violations`)       | TrainJob              |

A guardrail that mirrors a pack policy carries its declared name (upper case above: the declaration); the others
are admission only.

Both sides are built from one `LayoutScope` (the stack's inference ClusterQueue names, ClusterQueue names, priority
class values and tenant label key: the same parameters the pack config gives the Python rules), and each
guardrail's `judge` runs the Python rule on what the apiserver would judge, so a parity test can compare the two
verdicts object by object (tests/e2e/test_10_admission.py, against the real kube-apiserver). The rule and fix
clauses of the ClusterQueue messages are taken from the Python rule's own Violation (`_clauses`), so the cluster,
the pack and the settings check speak the same words.

CEL only sees the object being written (and `oldObject`, `request`): facts about the rest of the stack (which
ClusterQueue is inference, the other side's priority) are written into the expressions as constants when the
stack is rendered; a new stack config re-renders them, and the policies are registered before the cohorts so that
a change of both priorities in one `pulumi up` is judged against the new values.

Upstream: Kubernetes `ValidatingAdmissionPolicy` (GA in 1.30; `matchConditions`, `variables`, `validations` with
`messageExpression` and `reason`, binding `validationActions` Deny | Warn | Audit, Deny and Warn never together);
the Kubernetes CEL quantity library (`quantity()`, `compareTo()`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from ..inference_borrowing_limit_zero import INFERENCE_BORROWING_LIMIT_ZERO, check_inference_borrowing_limit_zero
from ..inference_reclaim_any import INFERENCE_RECLAIM_ANY, check_inference_reclaim_any
from ..inference_rollout_fits_nominal import (
    INFERENCE_ROLLOUT_FITS_NOMINAL,
    LWS_GROUP,
    SERVING_KINDS,
    lifecycle_of,
    queue_of,
)
from ..inference_rollout_fits_nominal import judge as judge_lifecycle
from ..namespace_selector import check_namespace_selector
from ..reclaim_within_budget import RECLAIM_WITHIN_BUDGET, check_runtime_hold, check_trainjob_patches
from ..training_priority_below_inference import KINDS, SYSTEM_PRIORITY_CLASSES, priority_violations
from ..trainjob_reserved_env import (
    ENV_PATHS,
    RESERVED_ENV,
    RESERVED_PREFIXES,
    TRAINJOB_RESERVED_ENV,
    reserved_violations,
    runtime_key,
)
from ..vocabulary.kueue_counts import MANAGER_CONFIG_MAP
from ..vocabulary.objects import (
    INFERENCE_ROLE,
    MANAGED_LABELS,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    ROLE_LABEL,
    TRAINING_ROLE,
    KubeObject,
    violation,
)
from ..vocabulary.quantity import is_binary, parse, show
from ..vocabulary.reclaim import DEFAULT_GRACE_SECONDS, KUBELET_MINIMUM_SECONDS
from ..vocabulary.trainer import ANCESTOR_LABEL, TRAINER_GROUP
from ..vocabulary.values import MISSING, Violation, format_path, get
from ..workload_priority_class import WORKLOAD_PRIORITY_CLASS, check_workload_priority_class

API_VERSION = "admissionregistration.k8s.io/v1"
RULE_LABEL = "kueue-cohorts/rule"
COHORT_LABEL = "kueue-cohorts/cohort"
DENY, WARN, AUDIT = "Deny", "Warn", "Audit"
TENANT_LABEL_POLICY = "tenant-label"


@dataclass(frozen=True)
class Identities:
    """Who runs the stack: Kubernetes user names and groups (`request.userInfo.username` / `.groups`). Only they may
    add, change or remove the tenant label of a namespace."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    def includes(self, username: str, groups: Iterable[str]) -> bool:
        """True when `username` is one of `users` or one of `groups` is one of ours."""
        return username in self.users or bool(set(groups) & set(self.groups))


@dataclass(frozen=True)
class LayoutScope:
    """What one cohort layout's guardrails know about the stack.

    cohort: the layout's cohort (names the policies). cluster_queues: every ClusterQueue name of the layout.
    inference_cluster_queues: those judged as inference (the pack config's `inferenceClusterQueues`).
    inference_priority_classes / training_priority_classes: WorkloadPriorityClass name -> declared value of each
    side (the pack config's `inferencePriorityClasses` / `trainingPriorityClasses`, with the values the stack
    writes). tenant_label: the namespace label key the layout's namespaceSelectors match (`namespaceLabel`).
    """

    cohort: str
    cluster_queues: tuple[str, ...]
    inference_cluster_queues: tuple[str, ...] = ()
    inference_priority_classes: Mapping[str, int] = field(default_factory=dict)
    training_priority_classes: Mapping[str, int] = field(default_factory=dict)
    tenant_label: str = "kueue.x-k8s.io/queue"
    inference_namespaces: tuple[str, ...] = ()
    """The namespaces of the inference ClusterQueue (`inference.namespaces`): serving workloads there are judged."""
    inference_nominal: Mapping[str, str] = field(default_factory=dict)
    """The inference ClusterQueue's nominalQuota per resource (the largest over its flavors, `rollout.nominal_of`),
    as quantity strings."""
    cohort_tree: tuple[str, ...] = ()
    kueue_namespace: Optional[str] = None
    training_namespaces: tuple[str, ...] = ()
    """The non-inference namespaces of the layout's tree (`training.namespaces`; the training ClusterQueue borrows
    inference's quota): workloads there are judged by priority-use, their runtimes and TrainJobs against
    `reclaim_budget_seconds`."""
    reclaim_budget_seconds: Optional[int] = None
    """The inference side's reclaim budget (`reclaimBudgetSeconds`); None: no reclaim-time guardrail."""
    multikueue: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The MultiKueue objects the stack writes, kind -> names: MultiKueueCluster, MultiKueueConfig, AdmissionCheck
    and Secret (the workers' kubeconfig Secrets in `kueue_namespace`); multikueue-writers guards them."""
    reserved_runtimes: tuple[tuple[str, str], ...] = ()
    """(namespace, name) of each TrainingRuntime of the stack that sets the reserved trainer variables."""

    @property
    def tree(self) -> tuple[str, ...]:
        """The cohort names of the layout's guarded tree: `cohort_tree` when given, else the layout's cohort alone
        (the stack writes no Cohort `spec.parentName`, so its tree is its cohort and whatever joins it)."""
        return tuple(sorted(set(self.cohort_tree) | {self.cohort}))


@dataclass(frozen=True)
class Request:
    """What the apiserver hands a ValidatingAdmissionPolicy: the object written, the object before (None on
    CREATE) and the requesting user."""

    obj: KubeObject
    old: Optional[KubeObject] = None
    username: str = ""
    groups: tuple[str, ...] = ()
    operation: str = ""

    @property
    def op(self) -> str:
        """The admission operation: `operation` when given (DELETE: `obj` is the object deleted), else CREATE when
        there is no `old`, UPDATE when there is."""
        return self.operation or ("CREATE" if self.old is None else "UPDATE")


@dataclass(frozen=True)
class Guardrail:
    """One ValidatingAdmissionPolicy and the Python rule it mirrors.

    name: the policy and binding name (`kueue-cohorts.<cohort>.<policy>`). policy: the rule's name (a pack
    policy's declared name, or an admission-only rule's). cohort: the layout's cohort. resource: (apiGroup, version,
    plural) matched on CREATE and UPDATE. match_conditions / variables: (name, CEL) pairs. validations: dicts of the
    policy's `spec.validations` (expression, message, messageExpression, reason). check: the Python rule on a
    `Request`. ratchet: fields ("spec", "value", dotted "metadata.labels") whose being unchanged on UPDATE lets the
    request through whatever the rule says (variable `unchanged`, as Kubernetes ratchets CRD validation); `judge` is the
    verdict the apiserver must reach: deny iff it returns a Violation. operations: the admission operations
    matched on `resource` and each of `also` (CREATE and UPDATE unless the rail also judges DELETE).
    """

    name: str
    policy: str
    cohort: str
    resource: tuple[str, str, str]
    match_conditions: tuple[tuple[str, str], ...]
    variables: tuple[tuple[str, str], ...]
    validations: tuple[Mapping[str, str], ...]
    check: Callable[[Request], list[Violation]]
    ratchet: tuple[str, ...] = ()
    also: tuple[tuple[str, str, str], ...] = ()
    """More (apiGroup, version, plural) matched by the same policy (one rule over several workload kinds); a plural
    may name a subresource (`namespaces/status`)."""
    operations: tuple[str, ...] = ("CREATE", "UPDATE")

    def judge(self, request: Request) -> list[Violation]:
        """The Python verdict on `request` (the apiserver denies iff this is non-empty): an UPDATE that leaves the
        `ratchet` fields as they were passes (so an object that already breaks the rule can still get metadata
        updates, e.g. the engine's managedFields patch before its repair); anything else goes to the rule."""
        if request.op == "UPDATE" and request.old is not None and self.ratchet and all(
                get(request.old.props, *f.split(".")) == get(request.obj.props, *f.split(".")) for f in self.ratchet):
            return []
        return self.check(request)

    def labels(self) -> dict[str, str]:
        """Labels of the policy and its binding (managed-by, the rule and the cohort)."""
        return {**MANAGED_LABELS, RULE_LABEL: self.policy, COHORT_LABEL: self.cohort}

    def policy_manifest(self) -> dict[str, Any]:
        """The ValidatingAdmissionPolicy manifest (failurePolicy Fail, matchPolicy Equivalent)."""
        spec: dict[str, Any] = {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "resourceRules": [{"apiGroups": [group], "apiVersions": [version],
                                   "operations": list(self.operations), "resources": [plural]}
                                  for group, version, plural in (self.resource, *self.also)],
            },
        }
        if self.match_conditions:
            spec["matchConditions"] = [{"name": n, "expression": e} for n, e in self.match_conditions]
        variables = list(self.variables)
        validations = [dict(v) for v in self.validations]
        if self.ratchet:
            same = " && ".join(f"has(oldObject.{f}) == has(object.{f}) && (!has(object.{f}) || "
                               f"oldObject.{f} == object.{f})" for f in self.ratchet)
            variables.insert(0, ("unchanged", f"oldObject != null && {same}"))
            for v in validations:
                v["expression"] = f"variables.unchanged || ({v['expression']})"
        if variables:
            spec["variables"] = [{"name": n, "expression": e} for n, e in variables]
        spec["validations"] = validations
        return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": self.name, "labels": self.labels(), "annotations": dict(PATCH_FORCE)},
                "spec": spec}

    def binding_manifest(self, actions: Sequence[str]) -> dict[str, Any]:
        """The ValidatingAdmissionPolicyBinding of this policy with `actions` (validate_actions first)."""
        return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": self.name, "labels": self.labels(), "annotations": dict(PATCH_FORCE)},
                "spec": {"policyName": self.name, "validationActions": list(validate_actions(actions))}}


def validate_actions(actions: Sequence[str]) -> tuple[str, ...]:
    """Check a binding's validationActions as the apiserver does: non-empty, each Deny, Warn or Audit, no
    duplicate, never Deny and Warn together. Returns them as a tuple; raises ValueError naming the problem."""
    actions = tuple(actions)
    if not actions:
        raise ValueError("validationActions must not be empty")
    unknown = [a for a in actions if a not in (DENY, WARN, AUDIT)]
    if unknown:
        raise ValueError(f"validationActions {unknown} are not Deny, Warn or Audit")
    if len(set(actions)) != len(actions):
        raise ValueError(f"validationActions {list(actions)} repeat a value")
    if DENY in actions and WARN in actions:
        raise ValueError("validationActions may not hold both Deny and Warn (Deny already tells the client)")
    return actions


# --- CEL building blocks -------------------------------------------------------------------------------------------


def cel_string(text: str) -> str:
    """A CEL string literal for `text` (double-quoted; JSON's escapes are CEL's)."""
    return json.dumps(text)


def cel_list(items: Iterable[str]) -> str:
    """A CEL list of string literals, sorted: `["a", "b"]`."""
    return "[" + ", ".join(cel_string(i) for i in sorted(set(items))) + "]"


PATCH_FORCE = {"pulumi.com/patchForce": "true"}
"""pulumi-kubernetes annotation (as on every object of the stack): server-side apply takes the fields back from
another field manager, so an `up` after an interrupted one (whose objects carry the killed run's manager) succeeds."""


def _label_is(var: str, key: str, value: str) -> str:
    return f"(has({var}.metadata.labels) && {cel_string(key)} in {var}.metadata.labels && " \
           f"{var}.metadata.labels[{cel_string(key)}] == {cel_string(value)})"


def _inference_queue(scope: LayoutScope) -> str:
    """CEL twin of `objects.role_of(obj, names) == INFERENCE_ROLE`: named in the stack, or labelled."""
    return f"object.metadata.name in {cel_list(scope.inference_cluster_queues)} || " \
           + _label_is("object", ROLE_LABEL, INFERENCE_ROLE)


def _message(kind: str, policy: str, rule: str, fix: str, field_path: str, extra: str = "",
             name: str = "object.metadata.name") -> dict[str, str]:
    """`message` (static) and `messageExpression` (names the object; `extra` is a CEL string expression appended)
    of a validation: "<Kind> '<name>' breaks the kueue-cohorts rule <policy> at <field>: <rule>; fix: <fix>.".
    `name`: the CEL expression of the object's name (`request.name` where `object` is null, on DELETE)."""
    tail = f"' breaks the kueue-cohorts rule {policy} at {field_path}: {rule}; fix: {fix}"
    expression = f"{cel_string(kind + ' ' + chr(39))} + {name} + {cel_string(tail)}"
    if extra:
        expression += f" + {extra}"
    return {"message": f"This {kind}{tail[1:]}.", "messageExpression": expression + ' + "."'}


def _clauses(found: list[Violation], what: str) -> tuple[str, str]:
    """The rule and fix clauses of the first violation the Python rule returned for a probe object."""
    if not found or not found[0].rule or not found[0].fix:
        raise ValueError(f"the rule book gave no rule and fix for {what}: {found!r}")
    return found[0].rule, found[0].fix


def kube_object(manifest: Mapping[str, Any]) -> KubeObject:
    """A manifest as the rule book's `KubeObject` (group and version from its apiVersion)."""
    group, _, version = str(manifest["apiVersion"]).rpartition("/")
    return KubeObject(urn="", resource_name=str(get(manifest, "metadata", "name") or ""), group=group,
                      version=version, kind=str(manifest["kind"]), props=manifest)


def _cluster_queue_probe(name: str, cohort: str, spec: Mapping[str, Any]) -> KubeObject:
    return kube_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                        "metadata": {"name": name}, "spec": {"cohortName": cohort, **spec}})


# --- the guardrails ------------------------------------------------------------------------------------------------

_CLUSTER_QUEUES = ("kueue.x-k8s.io", "v1beta2", "clusterqueues")
_PRIORITY_CLASSES = ("kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses")
_NAMESPACES = ("", "v1", "namespaces")
_COHORTS = ("kueue.x-k8s.io", "v1beta2", "cohorts")
_CONFIG_MAPS = ("", "v1", "configmaps")
NAMESPACE_SUBRESOURCES = ("namespaces/status", "namespaces/finalize")
"""Every other path that writes a Namespace's labels: the apiserver's status and finalize strategies keep metadata
changes (k8s.io/kubernetes v1.36 pkg/registry/core/namespace/strategy.go: `namespaceStatusStrategy.PrepareForUpdate`
resets only spec, `namespaceFinalizeStrategy.PrepareForUpdate` only status), so a label set through
`PUT /api/v1/namespaces/<name>/status` or `/finalize` is stored."""
_ENTRIES = "spec.resourceGroups[*].flavors[*].resources[*].borrowingLimit"


def _name(scope: LayoutScope, policy: str) -> str:
    return f"kueue-cohorts.{scope.cohort}.{policy}"


def borrowing_limit_zero(scope: LayoutScope) -> Guardrail:
    """INFERENCE_BORROWING_LIMIT_ZERO: an inference ClusterQueue in a cohort has borrowingLimit 0 on every resource
    of every flavor (CEL `quantity(...).compareTo(quantity('0')) == 0`: `sign()` is not in the 1.36 admission
    environment); a missing borrowingLimit (unlimited) is refused."""
    policy = INFERENCE_BORROWING_LIMIT_ZERO.name
    names = scope.inference_cluster_queues
    probe = _cluster_queue_probe(names[0] if names else "probe", scope.cohort, {"resourceGroups": [{
        "coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [
            {"name": "cpu", "nominalQuota": "1", "borrowingLimit": "1"}]}]}]})
    rule, fix = _clauses(check_inference_borrowing_limit_zero(probe, names or ["probe"]), policy)
    expression = (
        "!has(object.spec.cohortName) || object.spec.cohortName == '' || !has(object.spec.resourceGroups) || "
        "object.spec.resourceGroups.all(g, !has(g.flavors) || g.flavors.all(f, !has(f.resources) || "
        "f.resources.all(r, has(r.borrowingLimit) && "
        "quantity(string(r.borrowingLimit)).compareTo(quantity('0')) == 0)))")
    return Guardrail(_name(scope, policy), policy, scope.cohort, _CLUSTER_QUEUES,
                     (("inference-cluster-queue", _inference_queue(scope)),), (),
                     ({"expression": expression, "reason": "Invalid",
                       **_message("ClusterQueue", policy, rule, fix, _ENTRIES)},),
                     lambda req: check_inference_borrowing_limit_zero(req.obj, names), ("spec",))


def reclaim_any(scope: LayoutScope) -> Guardrail:
    """INFERENCE_RECLAIM_ANY: an inference ClusterQueue sets spec.preemption.reclaimWithinCohort Any (Kueue's
    default Never arrives here already defaulted, so a missing value is refused too)."""
    policy = INFERENCE_RECLAIM_ANY.name
    names = scope.inference_cluster_queues
    probe = _cluster_queue_probe(names[0] if names else "probe", scope.cohort,
                                 {"preemption": {"reclaimWithinCohort": "Never"}})
    rule, fix = _clauses(check_inference_reclaim_any(probe, names or ["probe"]), policy)
    expression = ("has(object.spec.preemption) && has(object.spec.preemption.reclaimWithinCohort) && "
                  "object.spec.preemption.reclaimWithinCohort == 'Any'")
    return Guardrail(_name(scope, policy), policy, scope.cohort, _CLUSTER_QUEUES,
                     (("inference-cluster-queue", _inference_queue(scope)),), (),
                     ({"expression": expression, "reason": "Invalid",
                       **_message("ClusterQueue", policy, rule, fix, "spec.preemption.reclaimWithinCohort")},),
                     lambda req: check_inference_reclaim_any(req.obj, names), ("spec",))


def namespace_selector(scope: LayoutScope) -> Guardrail:
    """namespace-selector: every ClusterQueue of the layout has a namespaceSelector with at least one matchLabels
    or matchExpressions entry (missing selects nothing, `{}` selects every namespace). Mirrors both
    both namespace-selector policies (`namespace_selector.py`) on the layout's queues."""
    policy = "namespace-selector"
    names = scope.cluster_queues
    inference = scope.inference_cluster_queues
    probe = _cluster_queue_probe(names[0], scope.cohort, {"namespaceSelector": {}})

    def judge(req: Request) -> list[Violation]:
        obj = req.obj
        if not obj.is_kueue("ClusterQueue") or obj.name not in names:
            return []
        return check_namespace_selector(obj, True, inference) + check_namespace_selector(obj, False, inference)

    missing_rule, missing_fix = _clauses(judge(Request(_cluster_queue_probe(names[0], scope.cohort, {}))), policy)
    rule, fix = _clauses(judge(Request(probe)), policy)
    selector = "object.spec.namespaceSelector"
    expression = (
        f"!has({selector}) || "
        f"(has({selector}.matchLabels) && size({selector}.matchLabels) > 0) || "
        f"(has({selector}.matchExpressions) && size({selector}.matchExpressions) > 0)")
    return Guardrail(_name(scope, policy), policy, scope.cohort, _CLUSTER_QUEUES,
                     (("cluster-queue-of-the-stack", f"object.metadata.name in {cel_list(names)}"),), (),
                     ({"expression": f"has({selector})", "reason": "Invalid",
                       **_message("ClusterQueue", policy, missing_rule, missing_fix, "spec.namespaceSelector")},
                      {"expression": expression, "reason": "Invalid",
                       **_message("ClusterQueue", policy, rule, fix, "spec.namespaceSelector")}),
                     judge, ("spec",))


def _priority_class(name: str, value: int, role: Optional[str] = None) -> KubeObject:
    labels = {ROLE_LABEL: role} if role else {}
    return kube_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                        "metadata": {"name": name, "labels": labels}, "value": value})


def workload_priority_class(scope: LayoutScope) -> Optional[Guardrail]:
    """WORKLOAD_PRIORITY_CLASS (the ranking): a WorkloadPriorityClass of the inference side (declared, or labelled
    `kueue-cohorts/role: inference` and not declared training) keeps a value above the highest declared training
    value; one of the training side keeps a value below the lowest declared inference value. None when the layout
    has no class on one side (nothing to rank)."""
    policy = WORKLOAD_PRIORITY_CLASS.name
    inference, training = dict(scope.inference_priority_classes), dict(scope.training_priority_classes)
    if not inference or not training:
        return None
    low, high = min(inference.values()), max(training.values())

    def judge(req: Request) -> list[Violation]:
        obj = req.obj
        if not obj.is_kueue("WorkloadPriorityClass"):
            return []
        stack = [_priority_class(n, v) for n, v in {**inference, **training}.items() if n != obj.name] + [obj]
        return check_workload_priority_class(stack, (), None, inference, training)

    first_training = sorted(training)[0]
    rule, fix = _clauses(judge(Request(_priority_class(first_training, low))), policy)
    inf_names, trn_names = cel_list(inference), cel_list(training)
    is_inference = f"(object.metadata.name in {inf_names} || (!(object.metadata.name in {trn_names}) && " \
                   f"{_label_is('object', ROLE_LABEL, INFERENCE_ROLE)}))"
    is_training = f"(object.metadata.name in {trn_names} || (!(object.metadata.name in {inf_names}) && " \
                  f"{_label_is('object', ROLE_LABEL, TRAINING_ROLE)}))"
    inference_rule = f"an inference WorkloadPriorityClass must rank above every training one (the highest " \
                     f"training value is {high})"
    inference_fix = f"set its value above {high}, or lower the training classes through the stack first"
    return Guardrail(
        _name(scope, policy), policy, scope.cohort, _PRIORITY_CLASSES,
        (("ranked-priority-class", f"{is_inference} || {is_training}"),),
        (("inference", is_inference), ("training", is_training)),
        ({"expression": f"!variables.inference || object.value > {high}", "reason": "Invalid",
          **_message("WorkloadPriorityClass", policy, inference_rule, inference_fix, "value")},
         {"expression": f"!variables.training || variables.inference || object.value < {low}", "reason": "Invalid",
          **_message("WorkloadPriorityClass", policy, rule, fix, "value")}),
        judge, ("value",))


def check_tenant_label(request: Request, label: str, identities: Identities) -> list[Violation]:
    """tenant-label (admission only: the pack never sees who writes): only the identities that run the stack may
    add, change or remove the tenant label `label` of a Namespace.

    Args:
        request: the Namespace written (`obj`), the Namespace before (`old`, None on CREATE) and the requesting
            user. label: the layout's namespaceLabel. identities: the stack's users and groups.
    Returns:
        One Violation on `metadata.labels["<label>"]` when another identity adds, changes or removes it; else none.
    """
    obj = request.obj
    if obj.kind != "Namespace" or obj.group or identities.includes(request.username, request.groups):
        return []
    before = get(request.old.labels, label) if request.old is not None else MISSING
    after = get(obj.labels, label)
    if before == after:
        return []
    return [violation(
        obj, TENANT_LABEL_POLICY, format_path(["metadata", "labels", label]), after,
        f"only the identities that run the kueue-cohorts stack may add, change or remove the tenant label {label} "
        "(it decides which ClusterQueue a namespace's workloads may use)",
        f"leave {label} as it was, or declare the namespace in the stack config and run pulumi up")]


def tenant_label(scope: LayoutScope, identities: Identities) -> Guardrail:
    """tenant-label: the CEL twin of `check_tenant_label` for the layout's namespaceLabel."""
    key = cel_string(scope.tenant_label)
    probe = kube_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe", "labels": {
        scope.tenant_label: "probe"}}})
    rule, fix = _clauses(check_tenant_label(Request(probe, None, "probe"), scope.tenant_label, identities),
                         TENANT_LABEL_POLICY)
    ours = _stack_identity(identities)
    field_path = format_path(["metadata", "labels", scope.tenant_label])
    message = _message("Namespace", TENANT_LABEL_POLICY, rule, fix, field_path,
                       extra=f"{cel_string(' (requested by ')} + request.userInfo.username + {cel_string(')')}")
    return Guardrail(
        _name(scope, TENANT_LABEL_POLICY), TENANT_LABEL_POLICY, scope.cohort, _NAMESPACES,
        (("not-a-stack-identity", f"!({ours})"),),
        (("hadLabel", f"oldObject != null && has(oldObject.metadata.labels) && {key} in oldObject.metadata.labels"),
         ("hasLabel", f"has(object.metadata.labels) && {key} in object.metadata.labels")),
        ({"expression": f"variables.hadLabel == variables.hasLabel && "
                        f"(!variables.hasLabel || object.metadata.labels[{key}] == oldObject.metadata.labels[{key}])",
          "reason": "Forbidden", **message},),
        lambda req: check_tenant_label(req, scope.tenant_label, identities),
        also=tuple(("", "v1", sub) for sub in NAMESPACE_SUBRESOURCES))


def _stack_identity(identities: Identities) -> str:
    """CEL: the requesting user is one of the stack's identities (`Identities.includes`)."""
    return f"{USERS_IN}{cel_list(identities.users)} || (has(request.userInfo.groups) && " \
           f"{GROUPS_IN}{cel_list(identities.groups)}))"


USERS_IN = "request.userInfo.username in "
GROUPS_IN = "request.userInfo.groups.exists(g, g in "


def identities_named(expression: str) -> tuple[frozenset[str], frozenset[str]]:
    """The (users, groups) a CEL ``expression`` lets through as ``_stack_identity`` writes them: each list literal
    (``cel_list``, JSON-compatible) that follows ``request.userInfo.username in`` or
    ``request.userInfo.groups.exists(g, g in``, read with a JSON decoder so that quotes, backslashes and any other
    string literal of the expression (a ``"."`` in a message, a label key) never count. Pure; a list that does not
    decode is skipped (the expression is not one this module wrote)."""
    decoder = json.JSONDecoder()
    found: tuple[set[str], set[str]] = (set(), set())
    for prefix, into in ((USERS_IN, found[0]), (GROUPS_IN, found[1])):
        start = expression.find(prefix)
        while start >= 0:
            try:
                items, _ = decoder.raw_decode(expression, start + len(prefix))
            except ValueError:
                items = None
            if isinstance(items, list):
                into.update(str(i) for i in items if isinstance(i, str))
            start = expression.find(prefix, start + len(prefix))
    return frozenset(found[0]), frozenset(found[1])


def _requested_by() -> str:
    return f"{cel_string(' (requested by ')} + request.userInfo.username + {cel_string(')')}"


COHORT_MEMBERSHIP_POLICY = "cohort-membership"


def tree_field(obj: KubeObject, tree: Iterable[str]) -> Optional[str]:
    """The field by which `obj` belongs to the cohort tree `tree` (cohort names), or None: a ClusterQueue by
    `spec.cohortName`, a Cohort by its own name (`metadata.name`) or its `spec.parentName` (Kueue v1beta2
    `apis/kueue/v1beta2/clusterqueue_types.go` CohortName, `cohort_types.go` ParentName, v0.19.2)."""
    names = set(tree)
    spec = get(obj.props, "spec")
    if obj.is_kueue("ClusterQueue"):
        return "spec.cohortName" if get(spec, "cohortName") in names else None
    if obj.is_kueue("Cohort"):
        if obj.name in names:
            return "metadata.name"
        return "spec.parentName" if get(spec, "parentName") in names else None
    return None


def check_cohort_membership(request: Request, tree: Sequence[str], identities: Identities) -> list[Violation]:
    """cohort-membership (admission only: who writes decides): only the stack's identities may create, change the
    spec of, move into or out of the guarded cohort tree a ClusterQueue or Cohort.

    A ClusterQueue with its own nominalQuota in inference's cohort is admitted against GPUs the stack counted for
    inference (issue 26, item 7: its Job took the node's only GPU and inference stayed Unschedulable).

    Args:
        request: the ClusterQueue or Cohort written (`obj`), before (`old`) and the user. tree: the guarded cohort
            names (`LayoutScope.tree`). identities: the stack's users and groups.
    Returns:
        One Violation at the field that puts the object in the tree (`spec.cohortName`, `spec.parentName`,
        `metadata.name` for the guarded Cohort itself) when another identity writes it; else none. An UPDATE that
        leaves `spec` as it was (Kueue's finalizer, labels) passes (`Guardrail.ratchet`).
    """
    obj = request.obj
    if not (obj.is_kueue("ClusterQueue") or obj.is_kueue("Cohort")) or \
            identities.includes(request.username, request.groups):
        return []
    after = tree_field(obj, tree)
    before = tree_field(request.old, tree) if request.old is not None else None
    where = after or before
    if where is None:
        return []
    value = obj.name if where == "metadata.name" else get(obj.props, *where.split("."))
    return [violation(
        obj, COHORT_MEMBERSHIP_POLICY, where, value,
        f"only the identities that run the kueue-cohorts stack may add a ClusterQueue or Cohort to the cohort tree "
        f"of {', '.join(sorted(tree))} or change one in it (its quota and priorities count against inference's "
        "GPUs and reclaim)",
        "declare the queue in the stack config and run pulumi up, or use a cohort outside the tree")]


def cohort_membership(scope: LayoutScope, identities: Identities) -> Guardrail:
    """cohort-membership: the CEL twin of `check_cohort_membership` for the layout's cohort tree (ClusterQueues and
    Cohorts, CREATE and UPDATE; DELETE takes quota away, never adds it)."""
    tree = scope.tree
    probe = _cluster_queue_probe("probe", tree[0], {})
    rule, fix = _clauses(check_cohort_membership(Request(probe, None, "probe"), tree, Identities()),
                         COHORT_MEMBERSHIP_POLICY)
    names = cel_list(tree)

    def member(var: str) -> str:
        return (f"({var}.kind == 'Cohort' ? ({var}.metadata.name in {names} || (has({var}.spec) && "
                f"has({var}.spec.parentName) && {var}.spec.parentName in {names})) : (has({var}.spec) && "
                f"has({var}.spec.cohortName) && {var}.spec.cohortName in {names}))")

    where = (f"(object.kind != 'Cohort' ? 'spec.cohortName' : object.metadata.name in {names} ? 'metadata.name' "
             f": 'spec.parentName')")
    tail = (f"{cel_string(chr(39) + ' breaks the kueue-cohorts rule ' + COHORT_MEMBERSHIP_POLICY + ' at ')} + "
            f"{where} + {cel_string(': ' + rule + '; fix: ' + fix)}")
    return Guardrail(
        _name(scope, COHORT_MEMBERSHIP_POLICY), COHORT_MEMBERSHIP_POLICY, scope.cohort, _CLUSTER_QUEUES,
        (("not-a-stack-identity", f"!({_stack_identity(identities)})"),),
        (("member", member("object")), ("wasMember", f"oldObject != null && {member('oldObject')}")),
        ({"expression": "!variables.member && !variables.wasMember", "reason": "Forbidden",
          "message": f"This ClusterQueue or Cohort breaks the kueue-cohorts rule {COHORT_MEMBERSHIP_POLICY}: "
                     f"{rule}; fix: {fix}.",
          "messageExpression": f"object.kind + ' ' + {cel_string(chr(39))} + object.metadata.name + {tail} + "
                               f"{_requested_by()} + '.'"},),
        lambda req: check_cohort_membership(req, tree, identities), ("spec",), also=(_COHORTS,))


PRIORITY_CEILING_POLICY = "priority-ceiling"


def check_priority_ceiling(request: Request, inference: Mapping[str, int], identities: Identities) -> list[Violation]:
    """priority-ceiling (admission only): only the stack's identities may write a WorkloadPriorityClass, other than
    the stack's inference classes, whose value is at or above the lowest inference value.

    Kueue preempts and orders by the Workload's priority (`pkg/scheduler/preemption/preemption.go`, v0.19.2): a
    class at or above inference, used by any namespace of the tree, is admitted ahead of inference and is never a
    reclaim victim of it. Labels prove nothing here (anyone who writes the class writes its labels).

    Args:
        request: the WorkloadPriorityClass written. inference: inference class name -> value (the stack's).
        identities: the stack's users and groups.
    Returns:
        One Violation at `value`, else none (also when the stack declares no inference class).
    """
    obj = request.obj
    if not obj.is_kueue("WorkloadPriorityClass") or not inference or obj.name in inference or \
            identities.includes(request.username, request.groups):
        return []
    value = get(obj.props, "value")
    floor = min(inference.values())
    if isinstance(value, bool) or not isinstance(value, int) or value < floor:
        return []
    return [violation(
        obj, PRIORITY_CEILING_POLICY, "value", value,
        f"only the identities that run the kueue-cohorts stack may write a WorkloadPriorityClass at or above "
        f"inference's priority {floor} (a workload of that class is admitted ahead of inference and never "
        "reclaimed for it)",
        f"set its value below {floor}, or declare the class in the stack config and run pulumi up")]


def priority_ceiling(scope: LayoutScope, identities: Identities) -> Optional[Guardrail]:
    """priority-ceiling: the CEL twin of `check_priority_ceiling`. None when the layout has no inference class."""
    inference = dict(scope.inference_priority_classes)
    if not inference:
        return None
    floor = min(inference.values())
    rule, fix = _clauses(check_priority_ceiling(Request(_priority_class("probe", floor), None, "probe"), inference,
                                                Identities()), PRIORITY_CEILING_POLICY)
    return Guardrail(
        _name(scope, PRIORITY_CEILING_POLICY), PRIORITY_CEILING_POLICY, scope.cohort, _PRIORITY_CLASSES,
        (("not-a-stack-identity", f"!({_stack_identity(identities)})"),
         ("not-an-inference-class", f"!(object.metadata.name in {cel_list(inference)})")), (),
        ({"expression": f"object.value < {floor}", "reason": "Forbidden",
          **_message("WorkloadPriorityClass", PRIORITY_CEILING_POLICY, rule, fix, "value", extra=_requested_by())},),
        lambda req: check_priority_ceiling(req, inference, identities), ("value",))


MANAGER_CONFIG_WRITERS_POLICY = "kueue-manager-config-writers"
"""The ConfigMap that carries Kueue's manager Configuration (Kueue v0.19.2 chart
`charts/kueue/templates/manager/manager-config.yaml`: `{{ include "kueue.fullname" . }}-manager-config`)."""


def check_manager_config_writer(request: Request, namespace: str, identities: Identities) -> list[Violation]:
    """kueue-manager-config-writers (admission only): only the stack's identities may create, change the `data` or
    `binaryData` of, or delete Kueue's manager ConfigMap (`MANAGER_CONFIG_MAP` in Kueue's namespace).

    Whether a Configuration keeps promise 2 (the GPU counted, every tenant namespace managed, the integrations the
    stack runs) needs the YAML inside `data` parsed, which CEL cannot do: the rule book's `kueue_manager_config`
    judges the content in the pack, the settings check and `cohorts verify`; this guardrail keeps everyone else
    from changing it at all.

    Args:
        request: the ConfigMap written (on DELETE `obj` is the ConfigMap deleted and `operation` "DELETE").
        namespace: Kueue's namespace. identities: the stack's users and groups.
    Returns:
        One Violation at `data` when another identity creates, deletes or changes the Configuration; else none.
    """
    obj = request.obj
    if obj.kind != "ConfigMap" or obj.group or obj.namespace != namespace or obj.name != MANAGER_CONFIG_MAP or \
            identities.includes(request.username, request.groups):
        return []
    if request.op == "UPDATE" and request.old is not None and all(
            get(request.old.props, f) == get(obj.props, f) for f in ("data", "binaryData")):
        return []
    return [violation(
        obj, MANAGER_CONFIG_WRITERS_POLICY, "data", get(obj.props, "data"),
        "only the identities that run the kueue-cohorts stack may create, change or delete Kueue's manager "
        "Configuration (it decides which resources and namespaces Kueue counts)",
        "change the kueue settings of the stack config and run pulumi up, or add the identity that installs Kueue "
        "to admission.identities")]


OBJECT_NAME = "(object != null ? object.metadata.name : oldObject.metadata.name)"
"""CEL: the name of the object written or deleted. Not `request.name`: it is empty for every item of a
DELETECOLLECTION (k8s.io/apiserver v0.36.3 `pkg/registry/rest/delete.go` `AdmissionToValidateObjectDeleteFunc`: each
item is judged with the collection request's static attributes, name "", and the item as `oldObject`); `object` is
null on DELETE."""


def manager_config_writers(scope: LayoutScope, identities: Identities) -> Optional[Guardrail]:
    """kueue-manager-config-writers: the CEL twin of `check_manager_config_writer` (CREATE, UPDATE, DELETE and each
    item of a DELETECOLLECTION: matched on the object's name, `OBJECT_NAME`). None when the scope does not carry
    Kueue's namespace (one layout of the stack carries it)."""
    namespace = scope.kueue_namespace
    if namespace is None:
        return None
    probe = kube_object({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": MANAGER_CONFIG_MAP, "namespace": namespace}, "data": {}})
    rule, fix = _clauses(check_manager_config_writer(Request(probe, None, "probe"), namespace, Identities()),
                         MANAGER_CONFIG_WRITERS_POLICY)
    same = " && ".join(f"has(oldObject.{f}) == has(object.{f}) && (!has(object.{f}) || oldObject.{f} == object.{f})"
                       for f in ("data", "binaryData"))
    return Guardrail(
        _name(scope, MANAGER_CONFIG_WRITERS_POLICY), MANAGER_CONFIG_WRITERS_POLICY, scope.cohort, _CONFIG_MAPS,
        ((MANAGER_CONFIG_MAP, f"request.namespace == {cel_string(namespace)} && "
                            f"{OBJECT_NAME} == {cel_string(MANAGER_CONFIG_MAP)}"),
         ("not-a-stack-identity", f"!({_stack_identity(identities)})")), (),
        ({"expression": f"request.operation == 'UPDATE' && {same}", "reason": "Forbidden",
          **_message("ConfigMap", MANAGER_CONFIG_WRITERS_POLICY, rule, fix, "data", extra=_requested_by(),
                     name=OBJECT_NAME)},),
        lambda req: check_manager_config_writer(req, namespace, identities),
        operations=("CREATE", "UPDATE", "DELETE"))

# --- issue 38: priorities used, MultiKueue's objects, the reserved trainer environment ----------------------------


def cel_every(var: str, path: str, leaf: Callable[[str], str], depth: int = 0) -> str:
    """CEL: `leaf` holds for every node at the dotted `path` below CEL expression `var` (`*` for every list item, ""
    for `var` itself); a missing field on the way holds vacuously (each step guarded by `has()`, which errors on a
    missing parent). The twin of the Python walks over the same paths (`training_priority_below_inference.nodes`,
    `trainjob_reserved_env.ENV_PATHS`)."""
    parts = path.split(".") if path else []
    guards = []
    expr = var
    while parts and parts[0] != "*":
        expr = f"{expr}.{parts[0]}"
        guards.append(f"!has({expr})")
        parts = parts[1:]
    if parts:
        item = f"x{depth}"
        inner = f"{expr}.all({item}, {cel_every(item, '.'.join(parts[1:]), leaf, depth + 1)})"
    else:
        inner = leaf(expr)
    return "(" + " || ".join([*guards, inner]) + ")"


PRIORITY_USE_POLICY = "priority-use"


def _floor_and_classes(scope: LayoutScope) -> tuple[Optional[int], dict[str, int]]:
    inference = dict(scope.inference_priority_classes)
    if not inference:
        return None, {}
    return min(inference.values()), {**scope.training_priority_classes, **inference}


def check_priority_use(request: Request, scope: LayoutScope) -> list[Violation]:
    """priority-use: a workload written into a non-inference namespace of the layout's tree (`training_namespaces`)
    asks for no priority at or above inference's (`training_priority_below_inference.high_priorities`: the
    WorkloadPriorityClass label naming a class of the stack at or above the lowest inference value, a pod
    `priorityClassName` of `SYSTEM_PRIORITY_CLASSES`, a Workload's `spec.priority`), whoever writes it.

    Args:
        request: the workload written (CREATE or UPDATE). scope: the layout (its classes and namespaces).
    Returns:
        One Violation per such field (`priority_violations`), else none.
    """
    floor, classes = _floor_and_classes(scope)
    obj = request.obj
    if floor is None or obj.namespace not in scope.training_namespaces:
        return []
    return priority_violations(obj, floor, classes, SYSTEM_PRIORITY_CLASSES, PRIORITY_USE_POLICY)


def priority_use(scope: LayoutScope) -> Optional[Guardrail]:
    """priority-use: the CEL twin of `check_priority_use` over every kind of `training_priority_below_inference.KINDS`
    (CREATE, UPDATE; an UPDATE leaving `spec` and `metadata.labels` as they were passes, so a workload written before
    the rail still takes Kueue's finalizers). The denied names are constants: the stack's classes at or above the
    floor (only the stack's identities may write another, `priority-ceiling`) and the system PriorityClasses. None
    when the layout has no inference class or no training namespace."""
    floor, classes = _floor_and_classes(scope)
    if floor is None or not scope.training_namespaces:
        return None
    high = cel_list(n for n, v in classes.items() if v >= floor)
    pods = cel_list(n for n, v in SYSTEM_PRIORITY_CLASSES.items() if v >= floor)
    key = cel_string(PRIORITY_CLASS_LABEL)

    def labels_ok(node: str) -> str:
        return (f"!has({node}.metadata) || !has({node}.metadata.labels) || !({key} in {node}.metadata.labels) || "
                f"!({node}.metadata.labels[{key}] in {high})")

    def pod_ok(node: str) -> str:
        return f"!has({node}.spec) || !has({node}.spec.priorityClassName) || !({node}.spec.priorityClassName in {pods})"

    per_kind = []
    for kind in KINDS:
        checks = [cel_every("object", "", labels_ok)]
        checks += [cel_every("object", path, labels_ok) for path in (*kind.labelled, *kind.templates) if path]
        checks += [cel_every("object", path, pod_ok) for path in kind.templates]
        if kind.workload_priority:
            checks.append(f"(!has(object.spec.priority) || object.spec.priority < {floor})")
        per_kind.append(f"(object.kind != {cel_string(kind.kind)} || ({' && '.join(checks)}))")
    probe = kube_object({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "probe", "namespace": scope.training_namespaces[0],
        "labels": {PRIORITY_CLASS_LABEL: next(n for n, v in classes.items() if v >= floor)}}})
    _, fix = _clauses(check_priority_use(Request(probe), scope), PRIORITY_USE_POLICY)
    rule = (f"a workload outside inference's namespaces may not run at or above inference's priority {floor} (a "
            f"{PRIORITY_CLASS_LABEL} label naming {', '.join(sorted(n for n, v in classes.items() if v >= floor))}, "
            f"or pods of PriorityClass {', '.join(sorted(SYSTEM_PRIORITY_CLASSES))}: Kueue admits it ahead of "
            "inference and never reclaims it, and its pods preempt inference's)")
    tail = f"' breaks the kueue-cohorts rule {PRIORITY_USE_POLICY}: {rule}; fix: {fix}"
    resources = [(k.group, k.version, k.plural) for k in KINDS]
    return Guardrail(
        _name(scope, PRIORITY_USE_POLICY), PRIORITY_USE_POLICY, scope.cohort, resources[0],
        (("training-namespace", f"request.namespace in {cel_list(scope.training_namespaces)}"),), (),
        ({"expression": " && ".join(per_kind), "reason": "Forbidden",
          "message": f"This workload{tail[1:]}.",
          "messageExpression": f"object.kind + \" '\" + object.metadata.namespace + \"/\" + object.metadata.name + "
                               f"{cel_string(tail)} + {_requested_by()} + \".\""},),
        lambda req: check_priority_use(req, scope), ("spec", "metadata.labels"), tuple(resources[1:]))


MULTIKUEUE_WRITERS_POLICY = "multikueue-writers"
MULTIKUEUE_KINDS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    ("kueue.x-k8s.io", "v1beta2", "multikueueclusters", "MultiKueueCluster", ("spec",)),
    ("kueue.x-k8s.io", "v1beta2", "multikueueconfigs", "MultiKueueConfig", ("spec",)),
    ("kueue.x-k8s.io", "v1beta2", "admissionchecks", "AdmissionCheck", ("spec",)),
    ("", "v1", "secrets", "Secret", ("data", "type")),
)
"""(group, version, plural, kind, the fields that decide dispatch) of the objects that decide where MultiKueue sends
a dispatched job (Kueue v0.19.2 `apis/kueue/v1beta2/multikueue_types.go`: MultiKueueConfig `spec.clusters`,
MultiKueueCluster `spec.clusterSource.kubeConfig` naming a Secret of Kueue's namespace whose key `kubeconfig` is
read; `admissioncheck_types.go`: `spec.controllerName`, `spec.parameters`). The v1beta1 versions Kueue still serves
are matched as equivalent (`matchPolicy: Equivalent`, converted to v1beta2); status subresources cannot change them
(the CRDs' status strategy keeps only `status`)."""


def _dispatch_fields(kind: str) -> tuple[str, ...]:
    return next(fields for _, _, _, k, fields in MULTIKUEUE_KINDS if k == kind)


def check_multikueue_writer(request: Request, scope: LayoutScope, identities: Identities) -> list[Violation]:
    """multikueue-writers (admission only): only the stack's identities may create, delete, or change what decides
    dispatch (`MULTIKUEUE_KINDS`) of the stack's MultiKueueClusters, MultiKueueConfigs and AdmissionChecks and the
    workers' kubeconfig Secrets in Kueue's namespace (`LayoutScope.multikueue`): whoever writes one could point
    dispatch at their own cluster and receive every dispatched job.

    Args:
        request: the object written (on DELETE, `obj` is the object deleted and `operation` "DELETE").
        scope: the layout (its MultiKueue names, Kueue's namespace). identities: the stack's users and groups.
    Returns:
        One Violation at the first decisive field when another identity writes one of them; else none (an UPDATE
        leaving those fields as they were passes: Kueue's finalizers, labels).
    """
    obj = request.obj
    groups = {k: g for g, _, _, k, _ in MULTIKUEUE_KINDS}
    if obj.kind not in groups or obj.group != groups[obj.kind] or obj.name not in scope.multikueue.get(obj.kind, ()) \
            or (obj.kind == "Secret" and obj.namespace != scope.kueue_namespace) \
            or identities.includes(request.username, request.groups):
        return []
    fields = _dispatch_fields(obj.kind)
    if request.op == "UPDATE" and request.old is not None and all(
            get(request.old.props, f) == get(obj.props, f) for f in fields):
        return []
    return [violation(
        obj, MULTIKUEUE_WRITERS_POLICY, fields[0], get(obj.props, fields[0]),
        "only the identities that run the kueue-cohorts stack may create, change or delete its MultiKueue objects "
        "and worker kubeconfig Secrets (they decide which cluster receives every dispatched job)",
        "change multiKueue in the stack config and run pulumi up, or add the identity that manages the worker "
        "credentials to admission.identities")]


def multikueue_writers(scope: LayoutScope, identities: Identities) -> Optional[Guardrail]:
    """multikueue-writers: the CEL twin of `check_multikueue_writer` (CREATE, UPDATE, DELETE and each item of a
    DELETECOLLECTION, matched on the object's name `OBJECT_NAME`). None when the layout carries no MultiKueue names."""
    if not any(scope.multikueue.values()):
        return None
    namespace = scope.kueue_namespace or ""
    matches = []
    for group, _, plural, kind, _ in MULTIKUEUE_KINDS:
        names = scope.multikueue.get(kind, ())
        if names:
            where = f" && request.namespace == {cel_string(namespace)}" if kind == "Secret" else ""
            matches.append(f"(request.resource.group == {cel_string(group)} && request.resource.resource == "
                           f"{cel_string(plural)}{where} && {OBJECT_NAME} in {cel_list(names)})")
    kind = next(k for _, _, _, k, _ in MULTIKUEUE_KINDS if scope.multikueue.get(k))
    group = next(g for g, _, _, k, _ in MULTIKUEUE_KINDS if k == kind)
    probe = kube_object({"apiVersion": f"{group}/v1beta2" if group else "v1", "kind": kind,
                         "metadata": {"name": scope.multikueue[kind][0], "namespace": namespace}})
    rule, fix = _clauses(check_multikueue_writer(Request(probe, None, "probe"), scope, Identities()),
                         MULTIKUEUE_WRITERS_POLICY)

    def same(fields: tuple[str, ...]) -> str:
        return " && ".join(f"has(oldObject.{f}) == has(object.{f}) && (!has(object.{f}) || "
                           f"oldObject.{f} == object.{f})" for f in fields)

    unchanged = (f"request.operation == 'UPDATE' && (object.kind == 'Secret' ? ({same(_dispatch_fields('Secret'))}) "
                 f": ({same(('spec',))}))")
    tail = f"' breaks the kueue-cohorts rule {MULTIKUEUE_WRITERS_POLICY}: {rule}; fix: {fix}"
    resources = [(g, v, p) for g, v, p, _, _ in MULTIKUEUE_KINDS]
    return Guardrail(
        _name(scope, MULTIKUEUE_WRITERS_POLICY), MULTIKUEUE_WRITERS_POLICY, scope.cohort, resources[0],
        (("stack-multikueue-object", " || ".join(matches)),
         ("not-a-stack-identity", f"!({_stack_identity(identities)})")), (),
        ({"expression": unchanged, "reason": "Forbidden", "message": f"This MultiKueue object{tail[1:]}.",
          "messageExpression": f"(object != null ? object.kind : oldObject.kind) + \" '\" + {OBJECT_NAME} + "
                               f"{cel_string(tail)} + {_requested_by()} + \".\""},),
        lambda req: check_multikueue_writer(req, scope, identities), also=tuple(resources[1:]),
        operations=("CREATE", "UPDATE", "DELETE"))


RESERVED_ENV_POLICY = TRAINJOB_RESERVED_ENV.name


def check_reserved_env_request(request: Request, runtimes: Iterable[tuple[str, str]]) -> list[Violation]:
    """TRAINJOB_RESERVED_ENV in the cluster: a TrainJob of one of the stack's TrainingRuntimes that set the reserved
    variables (`runtimes`: (namespace, name)) names none of them in its env (`trainjob_reserved_env.ENV_PATHS`),
    whoever writes it (a tenant's own TrainJob could otherwise name another run and resume from or rotate away its
    checkpoints).

    Returns:
        The pack rule's Violations (`reserved_violations`) for such a TrainJob, else none.
    """
    obj = request.obj
    if obj.group != TRAINER_GROUP or obj.kind != "TrainJob":
        return []
    key = runtime_key(obj)
    if key[0] != "TrainingRuntime" or (key[1] or "", key[2]) not in set(runtimes):
        return []
    return reserved_violations(obj, key, RESERVED_ENV_POLICY)


def reserved_env(scope: LayoutScope) -> Optional[Guardrail]:
    """TRAINJOB_RESERVED_ENV: the CEL twin of `check_reserved_env_request` (CREATE, UPDATE; an UPDATE leaving `spec`
    as it was passes). None when the layout has no such runtime."""
    runtimes = scope.reserved_runtimes
    if not runtimes:
        return None
    ref = "object.spec.runtimeRef"
    ours = (f"has(object.spec) && has({ref}) && has({ref}.name) && has({ref}.kind) && {ref}.kind == "
            f"'TrainingRuntime' && (object.metadata.namespace + '/' + {ref}.name) in "
            f"{cel_list(f'{ns}/{name}' for ns, name in runtimes)}")
    exact = cel_list(RESERVED_ENV)

    def allowed(entry: str) -> str:
        prefixes = " && ".join(f"!{entry}.name.startsWith({cel_string(p)})" for p in RESERVED_PREFIXES)
        return f"!has({entry}.name) || (!({entry}.name in {exact}) && {prefixes})"

    expression = " && ".join(cel_every("object", path, allowed) for path in ENV_PATHS)
    namespace, name = runtimes[0]
    probe = kube_object({"apiVersion": f"{TRAINER_GROUP}/v1alpha1", "kind": "TrainJob",
                         "metadata": {"name": "probe", "namespace": namespace},
                         "spec": {"runtimeRef": {"kind": "TrainingRuntime", "name": name},
                                  "trainer": {"env": [{"name": sorted(RESERVED_ENV)[0], "value": "x"}]}}})
    found = check_reserved_env_request(Request(probe), runtimes)
    rule = (f"a TrainJob of the stack's checkpoint-safe runtime may not set the variables the runtime sets itself "
            f"({', '.join(sorted(RESERVED_ENV))}, {', '.join(p + '*' for p in RESERVED_PREFIXES)}: the Trainer lets a "
            "TrainJob's env win, so this would move the run's checkpoints, load other code or break the distributed "
            "rendezvous)")
    _clauses(found, RESERVED_ENV_POLICY)  # the Python rule refuses the probe
    fix = "remove it from spec.trainer.env and spec.runtimePatches; change the runtime (trainingRuntime settings)"
    tail = f"' breaks the kueue-cohorts rule {RESERVED_ENV_POLICY} at spec.trainer.env: {rule}; fix: {fix}"
    return Guardrail(
        _name(scope, RESERVED_ENV_POLICY), RESERVED_ENV_POLICY, scope.cohort, (TRAINER_GROUP, "v1alpha1", "trainjobs"),
        (("stack-runtime", ours),), (),
        ({"expression": expression, "reason": "Forbidden", "message": f"This TrainJob{tail[1:]}.",
          "messageExpression": f"\"TrainJob '\" + object.metadata.namespace + \"/\" + object.metadata.name + "
                               f"{cel_string(tail)} + {_requested_by()} + \".\""},),
        lambda req: check_reserved_env_request(req, runtimes), ("spec",))


_WORKLOADS = (("apps", "v1", "deployments"), ("apps", "v1", "statefulsets"), (LWS_GROUP, "v1", "leaderworkersets"))


def _request(container: str, resource: str) -> str:
    """CEL: what one container asks for of `resource` as Kueue counts it (the request, else the limit, else 0), as a
    double (`quantity(...).asApproximateFloat()`)."""
    key = cel_string(resource)
    res = f"{container}.resources"
    return (f"(has({res}) && has({res}.requests) && {key} in {res}.requests ? "
            f"quantity(string({res}.requests[{key}])).asApproximateFloat() : "
            f"(has({res}) && has({res}.limits) && {key} in {res}.limits ? "
            f"quantity(string({res}.limits[{key}])).asApproximateFloat() : 0.0))")


def _pod(spec: str, resource: str) -> str:
    """CEL twin of `rollout._pod_requests` for one resource: the containers' sum, at least each init container's."""
    total = f"{spec}.containers.map(c, {_request('c', resource)}).sum()"
    return f"(has({spec}.initContainers) ? ([{total}] + {spec}.initContainers.map(i, {_request('i', resource)}))" \
           f".max() : {total})"


def _percent_of(value: str, replicas: str) -> str:
    """CEL: an int-or-percent `value` scaled to `replicas` pods, rounded up (intstr.GetScaledValueFromIntOrPercent)."""
    return f"(type({value}) == int ? {value} : ({replicas} * int(string({value}).replace('%', '')) + 99) / 100)"


def rollout_fits_nominal(scope: LayoutScope) -> Guardrail:
    """INFERENCE_ROLLOUT_FITS_NOMINAL, one workload at a time: a Deployment, StatefulSet or LeaderWorkerSet queued
    (`kueue.x-k8s.io/queue-name` on it or its pod template) in an inference namespace fits the inference ClusterQueue's
    nominalQuota in steady state and during its update (the constants are that quota), exactly as the pack's rule
    judges it (`rollout.lifecycle_of` + `rollout.judge`): one replica fits, and (replicas + surge) x the per-replica
    requests fit, where the surge is a Deployment's `maxSurge` (apiserver-defaulted 25%, rounded up; none for
    Recreate), none for a StatefulSet, and a LeaderWorkerSet's `maxSurge` whole groups (capped at replicas), a group
    being the leader plus `size - 1` workers. A Deployment made with kubectl at full quota with the default 25% surge
    is refused (its first template change would leave the surge pod SchedulingGated); quantities are compared as
    doubles (`asApproximateFloat`)."""
    policy = INFERENCE_ROLLOUT_FITS_NOMINAL.name
    cq = scope.inference_cluster_queues[0]
    nominal = {r: v for r, v in ((r, parse(q)) for r, q in scope.inference_nominal.items()) if v is not None}
    namespaces = scope.inference_namespaces
    kinds = {k for _, k in SERVING_KINDS}

    def check(req: Request) -> list[Violation]:
        obj = req.obj
        if obj.namespace not in namespaces or obj.kind not in kinds or not any(
                obj.is_kind(g, k) for g, k in SERVING_KINDS) or not isinstance(queue_of(obj), str):
            return []
        return judge_lifecycle(lifecycle_of(obj, cq, nominal))

    key = cel_string(QUEUE_NAME_LABEL)
    lwt = "object.spec.leaderWorkerTemplate"
    queued = (f"(has(object.metadata.labels) && {key} in object.metadata.labels) || "
              f"(object.kind != 'LeaderWorkerSet' && has(object.spec.template.metadata) && "
              f"has(object.spec.template.metadata.labels) && {key} in object.spec.template.metadata.labels) || "
              f"(object.kind == 'LeaderWorkerSet' && has({lwt}.workerTemplate.metadata) && "
              f"has({lwt}.workerTemplate.metadata.labels) && {key} in {lwt}.workerTemplate.metadata.labels)")
    strategy = "object.spec.strategy"
    surge_field = "object.spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge"
    variables: list[tuple[str, str]] = [
        ("replicas", "has(object.spec.replicas) ? object.spec.replicas : 1"),
        ("size", f"object.kind == 'LeaderWorkerSet' && has({lwt}.size) && {lwt}.size > 1 ? {lwt}.size : 1"),
        ("surge",
         f"object.kind == 'StatefulSet' ? 0 : object.kind == 'LeaderWorkerSet' ? "
         f"(has(object.spec.rolloutStrategy) && has(object.spec.rolloutStrategy.rollingUpdateConfiguration) && "
         f"has({surge_field}) ? [{_percent_of(surge_field, 'variables.replicas')}, variables.replicas].min() : 0) : "
         f"(has({strategy}) && has({strategy}.type) && {strategy}.type == 'Recreate' ? 0 : "
         f"(has({strategy}) && has({strategy}.rollingUpdate) && has({strategy}.rollingUpdate.maxSurge) ? "
         f"{_percent_of(strategy + '.rollingUpdate.maxSurge', 'variables.replicas')} : "
         f"(variables.replicas * 25 + 99) / 100))"),
    ]
    checks = []
    for i, resource in enumerate(sorted(nominal)):
        worker = _pod(f"{lwt}.workerTemplate.spec", resource)
        leader = f"(has({lwt}.leaderTemplate) ? {_pod(f'{lwt}.leaderTemplate.spec', resource)} : {worker})"
        variables.append((f"need{i}", f"object.kind == 'LeaderWorkerSet' ? {leader} + double(variables.size - 1) * "
                                      f"{worker} : {_pod('object.spec.template.spec', resource)}"))
        limit = float(nominal[resource])
        bound = f"{limit!r} * 1.000000001 + 0.000001"
        checks.append(f"(variables.need{i} <= {bound} && "
                      f"double(variables.replicas + variables.surge) * variables.need{i} <= {bound})")
    quota = ", ".join(f"'{r}' {show(nominal[r], r == 'memory' or is_binary(scope.inference_nominal[r]))}"
                      for r in sorted(nominal))
    rule = (f"a serving workload's replicas plus its update surge (a Deployment's maxSurge, a LeaderWorkerSet's "
            f"maxSurge in groups; a StatefulSet never surges) must fit the nominalQuota of the inference ClusterQueue "
            f"'{cq}' ({quota}), because inference never borrows and a surge pod that does not fit stays "
            "SchedulingGated, so the rollout never finishes")
    fix = ("set maxSurge to 0 (a Deployment: RollingUpdate with maxUnavailable 1, or Recreate), or lower replicas or "
           "requests, or raise the inference nominalQuota through the stack")
    tail = f"' breaks the kueue-cohorts rule {policy} at spec: {rule}; fix: {fix}."
    return Guardrail(
        _name(scope, policy), policy, scope.cohort, _WORKLOADS[0],
        (("inference-namespace", f"object.metadata.namespace in {cel_list(namespaces)}"),
         ("queued", queued)),
        tuple(variables),
        ({"expression": " && ".join(checks) or "true", "reason": "Invalid",
          "message": f"This workload breaks the kueue-cohorts rule {policy} at spec: {rule}; fix: {fix}.",
          "messageExpression": "object.kind + \" '\" + object.metadata.namespace + \"/\" + object.metadata.name + "
                               + cel_string(tail)},),
        check, ("spec",), _WORKLOADS[1:])


def guardrails(scope: LayoutScope, identities: Identities) -> list[Guardrail]:
    """Every guardrail of one layout: the inference ones when it has inference ClusterQueues, the priority ranking
    when it declares both sides, the namespaceSelector, tenant-label and cohort-membership ones always, the
    serving workloads' rollout fit when the scope knows the inference namespaces and nominalQuota, the trainers'
    reclaim time when it knows the training namespaces and the reclaim budget, the priority
    ceiling when it declares an inference class, and the manager Configuration's writers when the scope carries
    Kueue's namespace."""
    out: list[Guardrail] = []
    if scope.inference_cluster_queues:
        out += [borrowing_limit_zero(scope), reclaim_any(scope)]
    out.append(namespace_selector(scope))
    ranking = workload_priority_class(scope)
    if ranking is not None:
        out.append(ranking)
    out.append(tenant_label(scope, identities))
    if scope.inference_cluster_queues and scope.inference_namespaces and scope.inference_nominal:
        out.append(rollout_fits_nominal(scope))
    if scope.training_namespaces and scope.reclaim_budget_seconds is not None:
        out.append(reclaim_within_budget(scope))
    out.append(cohort_membership(scope, identities))
    for optional in (priority_ceiling(scope, identities), manager_config_writers(scope, identities),
                     priority_use(scope), multikueue_writers(scope, identities), reserved_env(scope)):
        if optional is not None:
            out.append(optional)
    return out


def manifests(rails: Sequence[Guardrail], actions: Sequence[str]) -> list[dict[str, Any]]:
    """Policy then binding manifest of each guardrail, in order."""
    out: list[dict[str, Any]] = []
    for rail in rails:
        out += [rail.policy_manifest(), rail.binding_manifest(actions)]
    return out


def judge(rails: Sequence[Guardrail], request: Request) -> list[tuple[Guardrail, Violation]]:
    """What the Python rules say about `request`, guardrail by guardrail (the apiserver must deny iff this is
    non-empty, naming one of these guardrails)."""
    return [(rail, v) for rail in rails for v in rail.judge(request)]


# --- issue 37: reclaim bounded in time (one block) -----------------------------------------------------------------

_TRAINING_RUNTIMES = ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes")
_TRAINJOBS = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")


def _pod_holds_within(pod: str, budget: int) -> str:
    """CEL twin of `reclaim_within_budget.pod_hold(pod) <= budget`: max(grace, 2), a preStop sleep of N: N + 2, any
    other hook: grace + 2 (grace: terminationGracePeriodSeconds, default 30)."""
    grace = f"(has({pod}.terminationGracePeriodSeconds) ? {pod}.terminationGracePeriodSeconds : " \
            f"{DEFAULT_GRACE_SECONDS})"
    least = KUBELET_MINIMUM_SECONDS
    return (f"({grace} <= {budget} && {least} <= {budget} && (!has({pod}.containers) || {pod}.containers.all(c, "
            f"!has(c.lifecycle) || !has(c.lifecycle.preStop) || (has(c.lifecycle.preStop.sleep) ? "
            f"c.lifecycle.preStop.sleep.seconds + {least} <= {budget} : {grace} + {least} <= {budget}))))")


def check_reclaim_request(request: Request, namespaces: Sequence[str], budget: int) -> list[Violation]:
    """RECLAIM_WITHIN_BUDGET on one object written in a training namespace (one object can break it): a
    TrainingRuntime whose trainer pod may keep its node past `budget` seconds (grace period and preStop hook; the
    declared save needs a grace above it, which this bounds), or a TrainJob whose runtime patch gives the trainer pod
    such a grace period or hook (judged on the patch alone: CEL sees no runtime)."""
    obj = request.obj
    if obj.group != _TRAINING_RUNTIMES[0] or obj.namespace not in namespaces:
        return []
    if obj.kind == "TrainingRuntime":
        return [v for v in check_runtime_hold(obj, budget, RECLAIM_WITHIN_BUDGET.name)
                if not v.field.startswith("metadata.annotations")]
    if obj.kind == "TrainJob":
        return check_trainjob_patches(obj, budget, RECLAIM_WITHIN_BUDGET.name)
    return []


def reclaim_within_budget(scope: LayoutScope) -> Guardrail:
    """RECLAIM_WITHIN_BUDGET in the cluster: a TrainingRuntime or TrainJob written in a training namespace (whose
    ClusterQueue borrows inference's quota) by anyone, kubectl included, is refused when its trainer pod may keep
    its node past the reclaim budget after inference reclaims. The trainer jobs are picked as `trainer_jobs` picks
    them (the job named `node` or labelled as the trainer step, else every job)."""
    policy = RECLAIM_WITHIN_BUDGET.name
    budget = int(scope.reclaim_budget_seconds or 0)
    namespaces = scope.training_namespaces
    probe = kube_object({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
                         "metadata": {"name": "probe", "namespace": namespaces[0]},
                         "spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
                             "template": {"spec": {"terminationGracePeriodSeconds": budget + 1,
                                                   "containers": [{"name": "node"}]}}}}}]}}}})
    _clauses(check_reclaim_request(Request(probe), namespaces, budget), policy)  # the Python rule refuses the probe
    least = KUBELET_MINIMUM_SECONDS
    rule = (f"a trainer pod in a namespace that borrows inference's quota must give its node back within the "
            f"reclaim budget of {budget} s after inference reclaims (terminationGracePeriodSeconds, default "
            f"{DEFAULT_GRACE_SECONDS}; a preStop hook runs inside it and the kubelet still gives {least} s after "
            "it), or inference's pod stays Pending meanwhile")
    fix = f"set terminationGracePeriodSeconds to at most {budget} and keep any preStop sleep below it, or raise " \
          "inferenceTraining.inference.reclaimBudgetSeconds through the stack"
    jobs = "object.spec.template.spec.replicatedJobs"
    label = cel_string(ANCESTOR_LABEL)
    runtime_ok = (
        f"object.kind != 'TrainingRuntime' || !has(object.spec.template) || !has(object.spec.template.spec) || "
        f"!has({jobs}) || (size({jobs}.filter(j, j.name == 'node' || (has(j.template.metadata) && "
        f"has(j.template.metadata.labels) && {label} in j.template.metadata.labels && "
        f"j.template.metadata.labels[{label}] == 'trainer'))) > 0 ? {jobs}.filter(j, j.name == 'node' || "
        f"(has(j.template.metadata) && has(j.template.metadata.labels) && {label} in j.template.metadata.labels && "
        f"j.template.metadata.labels[{label}] == 'trainer')) : {jobs}).all(j, !has(j.template.spec) || "
        f"!has(j.template.spec.template) || !has(j.template.spec.template.spec) || "
        f"{_pod_holds_within('j.template.spec.template.spec', budget)})")
    patched = (
        "object.kind != 'TrainJob' || !has(object.spec.runtimePatches) || object.spec.runtimePatches.all(p, "
        "!has(p.trainingRuntimeSpec) || !has(p.trainingRuntimeSpec.template) || "
        "!has(p.trainingRuntimeSpec.template.spec) || !has(p.trainingRuntimeSpec.template.spec.replicatedJobs) || "
        "p.trainingRuntimeSpec.template.spec.replicatedJobs.all(j, !has(j.template) || !has(j.template.spec) || "
        "!has(j.template.spec.template) || !has(j.template.spec.template.spec) || "
        "(!has(j.template.spec.template.spec.terminationGracePeriodSeconds) && "
        "(!has(j.template.spec.template.spec.containers) || j.template.spec.template.spec.containers.all(c, "
        "!has(c.lifecycle) || !has(c.lifecycle.preStop)))) || "
        f"{_pod_holds_within('j.template.spec.template.spec', budget)}))")
    tail = f"' breaks the kueue-cohorts rule {policy} at spec: {rule}; fix: {fix}."
    return Guardrail(
        _name(scope, policy), policy, scope.cohort, _TRAINING_RUNTIMES,
        (("training-namespace", f"object.metadata.namespace in {cel_list(namespaces)}"),), (),
        ({"expression": f"({runtime_ok}) && ({patched})", "reason": "Invalid",
          "message": f"This object breaks the kueue-cohorts rule {policy} at spec: {rule}; fix: {fix}.",
          "messageExpression": "object.kind + \" '\" + object.metadata.namespace + \"/\" + object.metadata.name + "
                               + cel_string(tail)},),
        lambda req: check_reclaim_request(req, namespaces, budget), ("spec",), (_TRAINJOBS,))
