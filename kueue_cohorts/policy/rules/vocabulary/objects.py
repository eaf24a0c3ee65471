"""A Kubernetes object as the policy pack sees it, whichever way the Pulumi program wrote it.

pulumi-kubernetes registers every Kubernetes object with the type token `kubernetes:<group>/<version>:<Kind>`
(core objects use the group `core`): typed resources (`kubernetes:batch/v1:Job`), hand-written
`apiextensions.CustomResource` (`kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue`, built from its apiVersion and
kind), crd2pulumi types and the children of `yaml/v2.ConfigGroup` and `helm/v4.Chart` all look the same, with the
object's wire fields (apiVersion, kind, metadata, spec, ...) as properties. Upstream:
pulumi-kubernetes `sdk/python/pulumi_kubernetes/apiextensions/CustomResource.py` (`f"kubernetes:{api_version}:{kind}"`).
"""
from __future__ import annotations

import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Optional

from . import memo
from .plain import plain
from .values import MISSING, ObjectRef, UnknownValueError, Violation, as_map, format_path, get

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_STORAGE_VERSION = "v1beta2"
ROLE_LABEL = "kueue-cohorts/role"
"""The label the stack sets on its ClusterQueues (and WorkloadPriorityClasses): `inference`, `training` or `tenant`;
the rules read it (vocabulary/roles.py). The one definition of every label below: the model, the pack and the tools
import them from here."""
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "kueue-cohorts"
"""The value of MANAGED_BY_LABEL on every object the stack writes (Kubernetes' recommended labels)."""
MANAGED_LABELS = {MANAGED_BY_LABEL: MANAGED_BY}
"""MANAGED_BY_LABEL with its value, to spread into an object's labels (copy it: `{**MANAGED_LABELS, ...}`)."""
PART_OF_LABELS = {"app.kubernetes.io/part-of": MANAGED_BY}  # the monitoring objects' mark (not applied by the stack)
INFERENCE_ROLE = "inference"
TRAINING_ROLE = "training"
TENANT_ROLE = "tenant"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"

# The kind names a reader expects in messages, by (group, kind).
_CORE_GROUP = "core"


@dataclass(frozen=True, slots=True)
class KubeObject:
    """One Kubernetes object of the stack.

    Attributes:
        urn: the Pulumi URN ("" when unknown, e.g. in unit tests that do not care).
        resource_name: the Pulumi resource name (used when metadata.name is absent).
        group: API group, "" for the core group ("kueue.x-k8s.io", "batch", "").
        version: API version within the group ("v1beta2", "v1").
        kind: the Kubernetes kind ("ClusterQueue").
        props: the object's wire fields (a mapping; the SDK proxy at runtime).
    """

    urn: str
    resource_name: str
    group: str
    version: str
    kind: str
    props: Mapping[str, Any]

    @property
    def api_version(self) -> str:
        """`group/version`, or just `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def name(self) -> str:
        """metadata.name, else the Pulumi resource name. Raises UnknownValueError if the name is unknown."""
        value = self._metadata("name")
        return str(value) if value is not MISSING else self.resource_name

    @property
    def namespace(self) -> Optional[str]:
        """metadata.namespace, or None when not set (cluster-scoped, or the provider's default namespace)."""
        value = self._metadata("namespace")
        return None if value is MISSING else str(value)

    @property
    def labels(self) -> Mapping[str, Any]:
        """metadata.labels (empty when not set)."""
        return as_map(self._metadata("labels"))

    def _metadata(self, key: str) -> Any:
        """`get(self.props, "metadata", key)`, read directly when the properties are plain JSON (the program's
        objects; every rule reads names and namespaces, so this is the pack's most frequent read)."""
        props = self.props
        if type(props) is dict:
            metadata = props.get("metadata")
            if type(metadata) is dict:
                value = metadata.get(key)
                return MISSING if value is None else value
        return get(props, "metadata", key)

    @property
    def annotations(self) -> Mapping[str, Any]:
        """metadata.annotations (empty when not set)."""
        return as_map(get(self.props, "metadata", "annotations"))

    @property
    def spec(self) -> Mapping[str, Any]:
        """spec (empty when not set)."""
        props = self.props
        if type(props) is dict:  # plain JSON: read directly (nearly every rule reads the spec of every object)
            spec = props.get("spec")
            if type(spec) is dict:
                return spec
        return as_map(get(props, "spec"))

    def is_kind(self, group: str, kind: str) -> bool:
        """True when this object is `kind` of API `group` (any version)."""
        return self.group == group and self.kind == kind

    def is_kueue(self, kind: Optional[str] = None) -> bool:
        """True for a kueue.x-k8s.io object (of `kind`, when given), any version."""
        return self.group == KUEUE_GROUP and (kind is None or self.kind == kind)

    def describe(self) -> str:
        """The resource as messages name it: "ClusterQueue 'c12-inference-cq'" or "Job 'ns/x'"."""
        namespace = self.namespace
        qualified = f"{namespace}/{self.name}" if namespace else self.name
        return f"{self.kind} '{qualified}'"


@lru_cache(maxsize=1024)  # a stack has a few dozen type tokens over thousands of objects; the answer is immutable
def parse_type_token(type_token: str) -> Optional[tuple[str, str, str]]:
    """Split a pulumi-kubernetes type token into (group, version, kind).

    Args:
        type_token: e.g. "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "kubernetes:core/v1:ConfigMap".
    Returns:
        ("kueue.x-k8s.io", "v1beta2", "ClusterQueue"), ("", "v1", "ConfigMap"), or None for tokens that are not
        Kubernetes objects (providers, the stack, components such as "kubernetes:yaml/v2:ConfigGroup" still parse
        but match no rule).
    """
    parts = type_token.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or "/" not in parts[1]:
        return None
    group, _, version = parts[1].rpartition("/")
    if group == _CORE_GROUP:
        group = ""
    return group, version, parts[2]


def from_resource(
    type_token: str, props: Mapping[str, Any], urn: str = "", resource_name: str = ""
) -> Optional[KubeObject]:
    """Build a KubeObject from what the policy SDK passes (`args.resource_type`, `args.props`, ...).

    The type token decides group, version and kind; a CustomResource's token is built from its apiVersion and kind,
    so both agree. Returns None for anything that is not a Kubernetes object.
    """
    parsed = parse_type_token(type_token)
    if parsed is None:
        return None
    group, version, kind = parsed
    return KubeObject(urn=urn, resource_name=resource_name, group=group, version=version, kind=kind, props=props)


def role_of(cluster_queue: KubeObject, inference_names: Iterable[str] = ()) -> Optional[str]:
    """The role of a ClusterQueue: "inference" when labelled `kueue-cohorts/role: inference` or listed in
    `inference_names` (policy config `inferenceClusterQueues`), else its role label value, else None.

    Raises UnknownValueError if the role label is unknown at preview.
    """
    label = get(cluster_queue.labels, ROLE_LABEL)
    if label == INFERENCE_ROLE or cluster_queue.name in set(inference_names):
        return INFERENCE_ROLE
    return None if label is MISSING else str(label)


def cohort_of(cluster_queue: KubeObject) -> Optional[str]:
    """The cohort a ClusterQueue joins: v1beta2 `spec.cohortName`, or v1beta1's `spec.cohort`; None when unset."""
    for field in ("cohortName", "cohort"):
        value = get(cluster_queue.spec, field)
        if value not in (MISSING, ""):
            return str(value)
    return None


def cohort_parents(objects: Iterable[KubeObject], unknown: Optional[list[Violation]] = None) -> dict[str, str]:
    """Cohort name -> its parent cohort, for every Cohort object (any version) that names one: v1beta2
    `spec.parentName`, or v1alpha1's `spec.parent`.

    A parent unknown at preview is left out; with `unknown`, an unknown_violation for it is appended there, else it
    is noted for the rule being judged (`skipped`).
    """
    parents: dict[str, str] = {}
    for obj in objects:
        if not obj.is_kueue("Cohort"):
            continue
        try:
            parent = get(obj.spec, "parentName")
            if parent is MISSING:
                parent = get(obj.spec, "parent")
            if parent not in (MISSING, ""):
                parents[obj.name] = str(parent)
        except UnknownValueError as err:
            if unknown is not None:
                unknown.append(unknown_violation(obj, err))
            else:
                skipped(obj, err)
    return parents


def cohort_root(name: str, parents: Mapping[str, str]) -> str:
    """The root of cohort `name`'s tree: `parents` (see cohort_parents) followed upwards; a cycle stops at the
    first repeated name. A cohort without a parent is its own root."""
    seen = {name}
    while name in parents and parents[name] not in seen:
        name = parents[name]
        seen.add(name)
    return name


def index(objects: Iterable[KubeObject], group: str, kind: str) -> list[KubeObject]:
    """All objects of (group, kind), any version, in stack order."""
    return [o for o in objects if o.is_kind(group, kind)]


def safe_describe(obj: KubeObject) -> str:
    """`obj.describe()`, falling back to the kind and Pulumi resource name when metadata is unknown at preview."""
    try:
        return obj.describe()
    except UnknownValueError:
        return f"{obj.kind} '{obj.resource_name}'"


UNKNOWN_POLICY = "unknown-at-preview"
"""The `policy` of every fail-closed violation for a value unknown at preview (`unknown_violation`)."""


def unknown_violation(obj: KubeObject, err: UnknownValueError) -> Violation:
    """The fail-closed finding for a value unknown at preview.

    Args:
        obj: the object whose property was unknown.
        err: the SDK's exception; `err.props` is the property path from the object's root.
    Returns:
        A Violation naming the field, e.g. "The ClusterQueue 'x' has spec.resourceGroups[0].flavors[0]
        .resources[2].nominalQuota unknown at preview, ...".
    """
    return unknown_at(obj, format_path(err.props))


def unknown_at(obj: KubeObject, path: str) -> Violation:
    """`unknown_violation` for the field at `path` (kubectl style) of `obj`."""
    field = path or "its properties"
    return Violation(
        f"The {safe_describe(obj)} has {field} unknown at preview, so this policy cannot check it and fails closed; "
        f"give {field} a value known at preview (a literal or stack config, not an output of another resource).",
        obj.urn or None, ref(obj), path, MISSING,
        "the value is unknown at preview, so the rule cannot check it and fails closed",
        "give it a value known at preview (a literal or stack config, not an output of another resource)",
        UNKNOWN_POLICY,
    )


def skipped(obj: KubeObject, err: UnknownValueError) -> None:
    """Say that a shared fact (an index, the roles, a namespace's labels) leaves `obj`, or a part of it, out because
    a value is unknown at preview: the fail-closed `unknown_violation` is noted (`memo.note`), and every rule that
    used the fact reports it (`book.judge` collects the notes of each rule's run, `memo.once` replays them with the
    remembered fact). Outside a rule's run (a rule function called directly) nothing is reported."""
    memo.note(unknown_violation(obj, err))


def guarded(obj: KubeObject, check: Callable[[], list[Violation]]) -> list[Violation]:
    """Run `check()` for `obj`; turn an UnknownValueError into the fail-closed `unknown_violation`."""
    try:
        return check()
    except UnknownValueError as err:
        return [unknown_violation(obj, err)]


def ref(obj: KubeObject) -> ObjectRef:
    """The `ObjectRef` of `obj` (kind, namespace, name); the Pulumi resource name stands in for an unknown name."""
    try:
        return ObjectRef(obj.kind, obj.namespace, obj.name)
    except UnknownValueError:
        return ObjectRef(obj.kind, None, obj.resource_name)


def show_value(value: object, limit: int = 80) -> str:
    """A value for a message: "missing" for MISSING, else its repr cut to `limit` characters (never raises, never
    walks a huge structure: the repr of containers is bounded by `reprlib`)."""
    if value is MISSING:
        return "missing"
    bounded = reprlib.Repr()
    bounded.maxlevel, bounded.maxstring, bounded.maxother = 3, limit, limit
    shown = bounded.repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def violation(obj: KubeObject, policy: str, field: str, value: object, rule: str, fix: str,
              message: Optional[str] = None) -> Violation:
    """Build a fully structured Violation about `obj`.

    Args:
        obj: the object at fault. policy: the policy name ("INFERENCE_BORROWING_LIMIT_ZERO").
        field: kubectl-style field path in `obj` ("spec.preemption.reclaimWithinCohort"; "" for the whole object).
        value: the offending value as the object has it (MISSING when absent).
        rule: what must hold and why, a clause without the object's name. fix: what to write instead, a clause.
        message: the full sentence the pack prints, when a rule words it itself; default
            "The <Kind> '<ns/name>' has <field> = <value>: <rule>; <fix>."
    Returns:
        The Violation, its `value` (and the value the message shows) as plain dicts and lists: the policy SDK's
        proxies, which a rule may hand over as read, would print as "<pulumi_policy.proxy._DictProxy object at ...>".
    """
    value = plain(value)
    if message is None:
        where = f" has {field} = {show_value(value)}" if field else ""
        message = f"The {safe_describe(obj)}{where}: {rule}; {fix}."
    return Violation(message, obj.urn or None, ref(obj), field, value, rule, fix, policy)
