"""``verify``: the live cluster against the stack's rendered objects (cohorts.expected), as a list of differences.

A check is a function ``Context -> list[Difference]``; ``CHECKS`` runs in order and a field reported by an earlier
check is not reported again. Adding a check (or a kind to ``expected_objects``) is the extension point:

- ``inference_never_borrows``: every resource of every flavor of a stack's inference ClusterQueue has an explicit
  borrowingLimit 0 (also resources added by hand), and its status borrows nothing;
- ``objects_match``: every expected object exists and every field it renders is equal on the cluster (quantities
  compared as quantities; lists item by item, by ``name`` where items have one; label maps may hold more labels).
  ``namespaceSelector`` and each quota entry (``resources[]``) must be equal as a whole: a limit added on the
  cluster is a difference. Defaults the API server or Kueue adds (e.g. ``flavorFungibility``) are not;
- ``namespaces_selected``: the namespace of every LocalQueue is selected by its ClusterQueue's live
  namespaceSelector (so that its Workloads can be admitted), whichever namespacePolicy the stack has;
- ``admission_policies_bound``: every ValidatingAdmissionPolicy the stack renders has a live
  ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1) naming it. It has nothing to do until
  ``expected_objects`` returns such policies;
- ``multikueue_connected`` (the manager of a MultiKueue stack): every MultiKueueCluster the stack registers is
  Active; otherwise Kueue's own reason (e.g. the watch the worker refused) is the difference;
- ``multikueue_identity`` (each MultiKueue worker, ``WORKER_CHECKS``): the live ClusterRoleBindings give the
  manager's identity every verb MultiKueue uses on Workloads and on each enabled job kind
  (``policy.rules.vocabulary.multikueue``); each missing grant is one difference naming the ClusterRole rule to add.
"""
from __future__ import annotations

import builtins
import json
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence

from kubernetes.client import ApiClient
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError
from kubernetes.dynamic.resource import Resource

from cohorts.expected import expected_objects
from components.model.assembly import AssembledStack, assemble
from components.model.multikueue import dispatched_namespaces
from components.model.pack_config import pack_config
from components.settings import MultiKueueWorker, Settings, quantity
from policy.rules.admission import (
    Identities,
    Request,
    check_cohort_membership,
    check_priority_ceiling,
    kube_object,
    tree_field,
)
from policy.rules.book import declaring
from policy.rules.book import run as run_book
from policy.rules.cohort_nominal_within_capacity import NODE_POOLS
from policy.rules.vocabulary import selectors
from policy.rules.vocabulary.kueue_counts import MANAGER_CONFIG_MAP
from policy.rules.vocabulary.multikueue import granted, missing_access, rule_text
from policy.rules.vocabulary.objects import MANAGED_BY, MANAGED_BY_LABEL, ROLE_LABEL
from policy.rules.vocabulary.values import MISSING, Violation

QUANTITY_KEYS = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit"})
#: Keys whose whole value must be equal (no extra keys on the cluster): a label selector changes meaning with any
#: addition.
STRICT_KEYS = frozenset({"namespaceSelector"})
VAP_API = "admissionregistration.k8s.io/v1"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
LEAK_GRACE = timedelta(minutes=5)
"""How long a Workload may hold quota while evicted with no pods before ``quota_not_leaked`` names it."""


@dataclass(frozen=True)
class Difference:
    """One way the cluster differs from the stack: the object (``kind``, ``name``, ``namespace`` or ""), the field
    ``path`` (JSON field names with list indexes as in the rendered manifest, e.g.
    ``spec.resourceGroups[0].flavors[0].resources[2].borrowingLimit``; "" for the whole object), ``item`` (the name
    of the list item the path ends in, e.g. the resource), ``expected`` / ``live`` values (None = absent) and the
    ``rule`` broken; ``fix`` (the rule book's fix) when the difference is a broken promise rather than a field
    that differs from the stack."""

    kind: str
    name: str
    namespace: str
    path: str
    expected: Any
    live: Any
    rule: str
    item: str = ""
    fix: str = ""

    cluster: str = ""
    """The MultiKueue worker the difference is on ("" for the stack's own cluster)."""

    def __str__(self) -> str:
        obj = f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"
        if self.cluster:
            obj = f"[worker {self.cluster}] {obj}"
        if self.fix:  # a broken promise: the rule book's words
            where = f" at {self.path}" if self.path else ""
            live = f" (live {_show(self.live)})" if self.live is not None else ""
            return f"{obj}{where}: {self.rule}{live}; fix: {self.fix}"
        if not self.path:  # the whole object: missing, not served or unreadable
            return f"{obj}: {self.rule}"
        where = self.path + (f" ({self.item})" if self.item else "")
        return f"{obj}: {where}: {self.rule}: expected {_show(self.expected)}, live {_show(self.live)}"

    def as_json(self) -> dict[str, Any]:
        """``{"kind", "name", "namespace", "path", "item", "expected", "live", "rule", "fix"}``, and ``"cluster"``
        for a difference on a MultiKueue worker."""
        out = {"kind": self.kind, "name": self.name, "namespace": self.namespace, "path": self.path,
               "item": self.item, "expected": self.expected, "live": self.live, "rule": self.rule, "fix": self.fix}
        if self.cluster:
            out["cluster"] = self.cluster
        return out


def _show(value: Any) -> str:
    if value is None:
        return "absent"
    return json.dumps(value, sort_keys=True, default=str)


class KindNotServed(Exception):
    """The cluster does not serve this apiVersion/kind (CRD missing)."""


class Unreadable(Exception):
    """The cluster refused to answer for this object (e.g. 403 Forbidden). The message says why."""


class LiveObjects(Protocol):
    """Read access to the cluster (``cohorts.cli`` passes one over the kubernetes dynamic client; tests pass dicts)."""

    def get(self, api_version: str, kind: str, name: str,
            namespace: Optional[str] = None) -> Optional[dict[str, Any]]:
        """The object as a dict, or None when absent. Raises KindNotServed, Unreadable."""

    def list(self, api_version: str, kind: str) -> builtins.list[dict[str, Any]]:
        """Every object of the kind (all namespaces). Raises KindNotServed, Unreadable."""


@dataclass
class Context:
    """What a check sees: the stack's ``settings``, its ``expected`` manifests and the ``live`` cluster. ``cache``
    keeps objects read once (key: (apiVersion, kind, namespace, name), or ("list", apiVersion, kind)). ``now``
    (UTC; default: the time of the check) and ``leak_grace`` are for ``quota_not_leaked``. ``stack``: the assembled
    stack (``components.model.assembly.assemble``, planned once per run): the checks read its layout scopes and
    judged objects from it, never rendering again (None: no settings, only ``expected``)."""

    settings: Optional[Settings]
    expected: list[dict[str, Any]]
    live: LiveObjects
    cache: dict[tuple[Optional[str], ...], Any] = field(default_factory=dict)
    now: Optional[datetime] = None
    leak_grace: timedelta = LEAK_GRACE
    worker: Optional[MultiKueueWorker] = None
    """On a MultiKueue worker: that worker's settings (``settings`` are then the manager's)."""
    stack: Optional[AssembledStack] = None

    def list(self, api_version: str, kind: str) -> builtins.list[dict[str, Any]]:
        """Every live object of the kind, read once. Raises KindNotServed, Unreadable."""
        key = ("list", api_version, kind)
        if key not in self.cache:
            self.cache[key] = self.live.list(api_version, kind)
        found: builtins.list[dict[str, Any]] = self.cache[key]
        return found

    def get(self, manifest: Mapping[str, Any]) -> Optional[dict[str, Any]]:
        """The live twin of ``manifest`` (None when absent). Raises KindNotServed, Unreadable."""
        meta = manifest["metadata"]
        key = (manifest["apiVersion"], manifest["kind"], meta.get("namespace"), meta["name"])
        if key not in self.cache:
            self.cache[key] = self.live.get(manifest["apiVersion"], manifest["kind"], meta["name"],
                                            meta.get("namespace"))
        found: Optional[dict[str, Any]] = self.cache[key]
        return found

    def expected_of(self, kind: str) -> builtins.list[dict[str, Any]]:
        """The expected manifests of ``kind``."""
        return [m for m in self.expected if m["kind"] == kind]


Check = Callable[[Context], list[Difference]]


def _ident(manifest: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = manifest["metadata"]
    return manifest["kind"], meta["name"], meta.get("namespace", "") or ""


def _read(ctx: Context, manifest: Mapping[str, Any]) -> dict[str, Any] | Difference:
    """The live object, or a Difference saying why it cannot be compared."""
    kind, name, ns = _ident(manifest)
    try:
        live = ctx.get(manifest)
    except KindNotServed:
        return Difference(kind, name, ns, "", "present", None,
                          f"the cluster does not serve {manifest['apiVersion']} {kind}")
    except Unreadable as err:
        return Difference(kind, name, ns, "", "present", None, f"cannot be read ({err})")
    if live is None:
        return Difference(kind, name, ns, "", "present", None, "missing on the cluster")
    return live


# --- field comparison --------------------------------------------------------------------------------------------


def _equal(key: str, want: Any, have: Any) -> bool:
    if key in QUANTITY_KEYS and want is not None and have is not None:
        try:
            return quantity.parse(want) == quantity.parse(have)
        except ValueError:
            return str(want) == str(have)
    return bool(want == have)


def _named(items: Sequence[Any]) -> bool:
    return bool(items) and all(isinstance(i, Mapping) and "name" in i for i in items)


def _child(path: str, key: str) -> str:
    """``path.key``, or ``path[key]`` for a map key that is not a field name (a label such as
    ``kueue.x-k8s.io/queue``), as k8s.io/apimachinery field.Path prints them."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


def compare_fields(want: Any, have: Any, path: str = "", key: str = "", strict: bool = False,
                   item: str = "") -> list[tuple[str, Any, Any, str, str]]:
    """Compare a rendered value with its live twin.

    Args:
        want: the rendered (expected) value. have: the live value (None = absent).
        path: the field path so far. key: the last field name (for quantity comparison).
        strict: the live mapping must not hold keys the rendered one lacks (namespaceSelector, quota entries).
        item: the name of the innermost named list item on the path.
    Returns:
        [(path, expected, live, what, item)] where what is "differs", "absent on the cluster" or "set on the cluster,
        not in the stack". Lists compare item by item (matched by ``name`` when every item has one) and must have
        the same length.
    """
    out: list[tuple[str, Any, Any, str, str]] = []
    if isinstance(want, Mapping):
        if not isinstance(have, Mapping):
            return [(path, want, have, "absent on the cluster" if have is None else "differs", item)]
        strict = strict or key in STRICT_KEYS or "nominalQuota" in want
        for k, v in want.items():
            sub = _child(path, k)
            if k not in have:
                out.append((sub, v, None, "absent on the cluster", item))
            else:
                out += compare_fields(v, have[k], sub, k, strict, item)
        if strict:
            for k in have:
                if k not in want:
                    out.append((_child(path, k), None, have[k], "set on the cluster, not in the stack", item))
        return out
    if isinstance(want, list):
        if not isinstance(have, list):
            return [(path, want, have, "absent on the cluster" if have is None else "differs", item)]
        if _named(want) and _named(have):
            live_by_name = {i["name"]: i for i in have}
            for index, w in enumerate(want):
                sub = f"{path}[{index}]"
                if w["name"] not in live_by_name:
                    out.append((sub, w, None, "absent on the cluster", w["name"]))
                else:
                    out += compare_fields(w, live_by_name[w["name"]], sub, key, strict, w["name"])
            wanted = {w["name"] for w in want}
            out += [(f"{path}[{len(want) + n}]", None, h, "set on the cluster, not in the stack", h["name"])
                    for n, h in enumerate(h for h in have if h["name"] not in wanted)]
            return out
        if len(want) != len(have):
            return [(path, want, have, "differs", item)]
        for index, (w, h) in enumerate(zip(want, have, strict=False)):
            out += compare_fields(w, h, f"{path}[{index}]", key, strict, item)
        return out
    if not _equal(key, want, have):
        out.append((path, want, have, "absent on the cluster" if have is None else "differs", item))
    return out


def _compared_part(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What ``objects_match`` compares: every top-level field but apiVersion, kind and metadata, plus
    metadata.labels (annotations and server-set metadata are not the stack's spec)."""
    out = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata")}
    labels = (manifest.get("metadata") or {}).get("labels")
    if labels:
        out["metadata"] = {"labels": dict(labels)}
    return out


# --- the checks --------------------------------------------------------------------------------------------------


def objects_match(ctx: Context) -> list[Difference]:
    """Every expected object is on the cluster with every rendered field equal (see the module doc)."""
    out = []
    for manifest in ctx.expected:
        kind, name, ns = _ident(manifest)
        live = _read(ctx, manifest)
        if isinstance(live, Difference):
            out.append(live)
            continue
        for path, want, have, what, item in compare_fields(_compared_part(manifest), _compared_part(live)):
            out.append(Difference(kind, name, ns, path, want, have, what, item))
    return out


def inference_never_borrows(ctx: Context) -> list[Difference]:
    """A stack's inference ClusterQueue (label kueue-cohorts/role=inference) has borrowingLimit 0 on every resource
    of every flavor on the cluster, and borrows nothing (status.flavorsUsage[].resources[].borrowed)."""
    rule = "the inference ClusterQueue must never borrow (an absent borrowingLimit means unlimited)"
    out = []
    for manifest in ctx.expected_of("ClusterQueue"):
        if (manifest["metadata"].get("labels") or {}).get(ROLE_LABEL) != "inference":
            continue
        try:
            live = ctx.get(manifest)
        except (KindNotServed, Unreadable):
            continue  # objects_match reports it
        if live is None:
            continue
        name = manifest["metadata"]["name"]
        for g, group in enumerate((live.get("spec") or {}).get("resourceGroups") or []):
            for f, flavor in enumerate(group.get("flavors") or []):
                for r, res in enumerate(flavor.get("resources") or []):
                    limit = res.get("borrowingLimit")
                    if limit is None or quantity.parse(limit) != 0:
                        out.append(Difference(
                            "ClusterQueue", name, "", f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                            ".borrowingLimit", "0", limit, rule, res.get("name", "")))
        for f, flavor in enumerate((live.get("status") or {}).get("flavorsUsage") or []):
            for r, res in enumerate(flavor.get("resources") or []):
                if quantity.parse(res.get("borrowed") or "0") != 0:
                    out.append(Difference("ClusterQueue", name, "", f"status.flavorsUsage[{f}].resources[{r}].borrowed",
                                          "0", res.get("borrowed"), "the inference ClusterQueue is borrowing",
                                          res.get("name", "")))
    return out


def namespaces_selected(ctx: Context) -> list[Difference]:
    """The namespace of every expected LocalQueue exists and its labels are selected by the live namespaceSelector
    of the LocalQueue's ClusterQueue."""
    out = []
    queues = {m["metadata"]["name"]: m for m in ctx.expected_of("ClusterQueue")}
    for lq in ctx.expected_of("LocalQueue"):
        ns, cq_name = lq["metadata"]["namespace"], lq["spec"]["clusterQueue"]
        if cq_name not in queues:
            continue
        try:
            cq = ctx.get(queues[cq_name])
            namespace = ctx.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        except (KindNotServed, Unreadable):
            continue
        if cq is None:
            continue
        selector = (cq.get("spec") or {}).get("namespaceSelector")
        if namespace is None:
            out.append(Difference("Namespace", ns, "", "", "present", None,
                                  f"missing: LocalQueue {ns}/{lq['metadata']['name']} lives there"))
            continue
        labels = (namespace.get("metadata") or {}).get("labels") or {}
        if not selectors.matches(selector, labels):
            out.append(Difference(
                "Namespace", ns, "", "metadata.labels", selector, labels,
                f"ClusterQueue {cq_name}'s namespaceSelector does not select this namespace: Workloads of LocalQueue "
                f"{ns}/{lq['metadata']['name']} are never admitted"))
    return out


def admission_policies_bound(ctx: Context) -> list[Difference]:
    """Every expected ValidatingAdmissionPolicy has at least one live ValidatingAdmissionPolicyBinding whose
    spec.policyName names it (a policy without a binding validates nothing)."""
    policies = ctx.expected_of("ValidatingAdmissionPolicy")
    if not policies:
        return []
    try:
        bindings = ctx.live.list(VAP_API, "ValidatingAdmissionPolicyBinding")
    except (KindNotServed, Unreadable) as err:
        return [Difference("ValidatingAdmissionPolicyBinding", "*", "", "", "readable", None,
                           f"cannot list bindings ({err or 'not served'})")]
    bound = {(b.get("spec") or {}).get("policyName") for b in bindings}
    return [Difference("ValidatingAdmissionPolicy", p["metadata"]["name"], "", "(binding)",
                       f"a ValidatingAdmissionPolicyBinding with spec.policyName {p['metadata']['name']}", None,
                       "the policy is not bound, so it validates nothing")
            for p in policies if p["metadata"]["name"] not in bound]


# --- the promises on the live cluster (issue 26 item 8) ----------------------------------------------------------


def _meta(obj: Mapping[str, Any], key: str) -> Any:
    return (obj.get("metadata") or {}).get(key)


def _read_list(ctx: Context, api_version: str, kind: str, out: list[Difference]) -> list[dict[str, Any]]:
    """``ctx.list``; a kind not served or not readable becomes one Difference in ``out`` (fail closed: what cannot be
    read cannot be vouched for) and an empty list."""
    try:
        return ctx.list(api_version, kind)
    except KindNotServed:
        out.append(Difference(kind, "*", "", "", "readable", None,
                              f"the cluster does not serve {api_version} {kind}: the promises cannot be checked"))
    except Unreadable as err:
        out.append(Difference(kind, "*", "", "", "readable", None,
                              f"cannot list {api_version} {kind} ({err}): the promises cannot be checked"))
    return []


def guarded_tree(ctx: Context, live_cohorts: Sequence[Mapping[str, Any]]) -> set[str]:
    """The cohort names of the stack's trees: every layout's cohort, and every live Cohort whose ``spec.parentName``
    chain reaches one (Kueue v1beta2 ``cohort_types.go`` ParentName, v0.19.2)."""
    tree: set[str] = set()
    if ctx.stack is not None:
        tree |= {scope.cohort for scope in ctx.stack.scopes}
    tree |= {str(name) for m in ctx.expected_of("ClusterQueue") if (name := (m.get("spec") or {}).get("cohortName"))}
    parents = {_meta(c, "name"): (c.get("spec") or {}).get("parentName") for c in live_cohorts}
    for name in parents:
        seen, node = set(), name
        while node and node not in tree and node not in seen:
            seen.add(node)
            node = parents.get(node)
        if node in tree:
            tree.add(name)
    return tree


def _in_tree(obj: Mapping[str, Any], tree: set[str]) -> bool:
    return tree_field(kube_object(obj), tree) is not None


def _declared(ctx: Context, kind: str) -> set[str]:
    return {m["metadata"]["name"] for m in ctx.expected_of(kind)}


def nothing_undeclared_in_the_tree(ctx: Context) -> list[Difference]:
    """Every live ClusterQueue and Cohort of the guarded trees is one the stack declares: anything else got in by
    another path (kubectl, Helm, GitOps, before or around the ``cohort-membership`` guardrail), and its quota counts
    against inference's GPUs. The rule and fix are the guardrail's own (``policy.rules.admission``)."""
    out: list[Difference] = []
    cohorts = _read_list(ctx, KUEUE_API, "Cohort", out)
    queues = _read_list(ctx, KUEUE_API, "ClusterQueue", out)
    tree = guarded_tree(ctx, cohorts)
    if not tree:
        return out
    for kind, objects in (("ClusterQueue", queues), ("Cohort", cohorts)):
        declared = _declared(ctx, kind)
        for live in objects:
            if _meta(live, "name") in declared or not _in_tree(live, tree):
                continue
            out += [_from_violation(v, "not declared by the stack") for v in check_cohort_membership(
                Request(kube_object(live)), sorted(tree), Identities())]
    return out


def _neighbours(obj: Mapping[str, Any]) -> bool:
    """Whether a live object the stack does not declare carries the project's mark (``app.kubernetes.io/managed-by:
    kueue-cohorts``): another kueue-cohorts stack's, or a program's built with the components, on the same cluster."""
    return bool((_meta(obj, "labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY)


def no_priority_above_inference(ctx: Context) -> list[Difference]:
    """No live WorkloadPriorityClass the stack does not declare has a value at or above the lowest inference value
    (any namespace may name any class: one above inference is admitted ahead of it and never reclaimed for it). The
    rule and fix are the ``priority-ceiling`` guardrail's. A class that carries the project's mark
    (``app.kubernetes.io/managed-by: kueue-cohorts``, components/model/kueue.py) is a neighbour's: another stack's or
    program's own inference or training class, which that stack declares (and its identities wrote, past this stack's
    guardrail); "set its value below, or declare it in this stack" would be a wrong fix, so it is not named."""
    if ctx.stack is None:
        return []
    inference: dict[str, int] = {}
    for scope in ctx.stack.scopes:
        inference.update(scope.inference_priority_classes)
    if not inference:
        return []
    out: list[Difference] = []
    declared = _declared(ctx, "WorkloadPriorityClass")
    for live in _read_list(ctx, KUEUE_API, "WorkloadPriorityClass", out):
        if _meta(live, "name") in declared or _neighbours(live):
            continue
        out += [_from_violation(v, "not declared by the stack") for v in check_priority_ceiling(
            Request(kube_object(live)), inference, Identities())]
    return out


def _from_violation(violation: Violation, why: str = "") -> Difference:
    subject = violation.subject
    value = None if violation.value is MISSING else violation.value
    rule = f"{violation.policy}: {violation.rule or violation.message}" + (f" ({why})" if why else "")
    return Difference(subject.kind if subject else "*", subject.name if subject else "*",
                      (subject.namespace or "") if subject else "", violation.field, None,
                      json.loads(json.dumps(value, default=str)), rule, fix=violation.fix or "see the rule")


def live_node_pools(nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rule book's ``nodePools`` option (``COHORT_NOMINAL_WITHIN_CAPACITY``) from the live nodes: one pool per
    Node, count 1, its labels (which decide the ResourceFlavors that select it: Kueue writes a flavor's nodeLabels
    into the pod's nodeSelector, pkg/scheduler/flavorassigner, v0.19.2) and its ``status.allocatable`` as the
    capacity. A node that is cordoned (``spec.unschedulable``) gives nothing."""
    pools = []
    for node in nodes:
        allocatable = {} if (node.get("spec") or {}).get("unschedulable") else \
            dict((node.get("status") or {}).get("allocatable") or {})
        pools.append({"name": str(_meta(node, "name")), "count": 1, "labels": dict(_meta(node, "labels") or {}),
                      "capacity": allocatable})
    return pools


def promises_hold(ctx: Context) -> list[Difference]:
    """The rule book (``policy.rules.book.run``, the pack's and the settings check's rules) over the stack's objects
    with their live twins in their place, plus every live ClusterQueue and Cohort of the guarded trees, every live
    WorkloadPriorityClass (but a neighbour's: ``_neighbours``) and ResourceFlavor, Kueue's live manager ConfigMap and
    the live TrainingRuntimes and TrainJobs of the training namespaces (``_live_trainers``), with the nodes taken from
    the live nodes (``live_node_pools``) for every rule that places quota or pods on nodes (capacity, flavors whose
    nodes overlap, pods that fit no node). Each mandatory finding the stack alone does not have is a Difference: a
    promise the live cluster breaks."""
    if ctx.settings is None or ctx.stack is None:
        return []
    out: list[Difference] = []
    rendered = [dict(r.manifest) for r in ctx.stack.judged()]
    live: dict[tuple[str, str, str], dict[str, Any]] = {}
    cohorts = _read_list(ctx, KUEUE_API, "Cohort", out)
    tree = guarded_tree(ctx, cohorts)
    for kind in ("ClusterQueue", "Cohort", "WorkloadPriorityClass", "ResourceFlavor"):
        objects = cohorts if kind == "Cohort" else _read_list(ctx, KUEUE_API, kind, out)
        declared = _declared(ctx, kind)
        for obj in objects:
            if kind in ("ClusterQueue", "Cohort") and _meta(obj, "name") not in declared and not _in_tree(obj, tree):
                continue
            if kind == "WorkloadPriorityClass" and _meta(obj, "name") not in declared and _neighbours(obj):
                continue
            live[(kind, "", str(_meta(obj, "name")))] = _as_applied(obj)
    namespace = ctx.settings.kueue.namespace
    try:
        config_map = ctx.live.get("v1", "ConfigMap", MANAGER_CONFIG_MAP, namespace)
    except (KindNotServed, Unreadable) as err:
        out.append(Difference("ConfigMap", MANAGER_CONFIG_MAP, namespace, "", "readable", None,
                              f"cannot read Kueue's manager Configuration ({err})"))
        config_map = None
    if config_map is not None:
        live[("ConfigMap", namespace, MANAGER_CONFIG_MAP)] = _as_applied(config_map)
    live.update(_live_trainers(ctx))
    merged: list[dict[str, Any]] = []
    for manifest in rendered:
        key = (manifest["kind"], _meta(manifest, "namespace") or "", _meta(manifest, "name"))
        merged.append(live.pop(key, manifest))
    merged += live.values()
    stated = pack_config(ctx.settings)
    config = dict(stated)
    nodes = _read_list(ctx, "v1", "Node", out)
    if nodes:
        pools = live_node_pools(nodes)
        for placing in declaring(NODE_POOLS):  # the capacity, the worst placement, pods on nodes: the live nodes
            own = {k: v for k, v in config.get(placing.name, {}).items()
                   if k not in ("nodePools", "capacity", "flavorCapacity")}
            config[placing.name] = {**own, NODE_POOLS.key: pools}
    baseline = {_finding_key(r.name, v)
                for r, v in run_book([kube_object(m) for m in rendered], stated)}
    for rule, violation in run_book([kube_object(m) for m in merged], config):
        if rule.mandatory and _finding_key(rule.name, violation) not in baseline:
            out.append(_from_violation(violation))
    return out


TRAINER_API = "trainer.kubeflow.org/v1alpha1"


def _live_trainers(ctx: Context) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The live TrainingRuntimes and TrainJobs of the stack's training namespaces (their grace periods, preStop
    hooks and runtime patches, judged by the rule book's reclaim-time promise), keyed as ``promises_hold`` keys
    objects; none when the stack has no training side or the cluster does not serve the Trainer's kinds."""
    if ctx.settings is None or ctx.settings.inference_training is None:
        return {}
    namespaces = set(ctx.settings.inference_training.training.namespaces)
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for kind in ("TrainingRuntime", "TrainJob"):
        try:
            objects = ctx.list(TRAINER_API, kind)
        except (KindNotServed, Unreadable):
            continue  # no Trainer: nothing of it can hold a node
        for obj in objects:
            if _meta(obj, "namespace") in namespaces:
                found[(kind, str(_meta(obj, "namespace")), str(_meta(obj, "name")))] = _as_applied(obj)
    return found


def _as_applied(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A live object as the book judges it: its spec-like fields and labels (server metadata and status dropped)."""
    out = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    meta = obj.get("metadata") or {}
    out["metadata"] = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return out


def _finding_key(rule: str, violation: Violation) -> tuple[str, Optional[str], Optional[str], str]:
    subject = violation.subject
    return (rule, subject.kind if subject else None, subject.name if subject else None, violation.field)


def guardrails_intact(ctx: Context) -> list[Difference]:
    """Every guardrail the stack renders is live and as strong as rendered: the policy's ``failurePolicy`` Fail, its
    ``matchConstraints`` (resources, operations; no exclusions, no namespace or object selector), ``matchConditions``
    and ``validations`` as rendered; its binding's ``validationActions`` still Deny when the stack's are, and no
    ``matchResources`` that narrows it. A cluster admin can always edit them: this is where it shows."""
    out: list[Difference] = []
    policies = ctx.expected_of("ValidatingAdmissionPolicy")
    if not policies:
        return out
    bindings = {m["spec"]["policyName"]: m for m in ctx.expected_of("ValidatingAdmissionPolicyBinding")}
    live_bindings = _read_list(ctx, VAP_API, "ValidatingAdmissionPolicyBinding", out)
    for policy in policies:
        name = policy["metadata"]["name"]
        live = _read(ctx, policy)
        if isinstance(live, Difference):
            out.append(Difference(live.kind, name, "", "", "present", None,
                                  "the guardrail is missing: " + live.rule))
            continue
        out += _policy_weakened(name, policy["spec"], live.get("spec") or {})
        want = bindings.get(name)
        mine = [b for b in live_bindings if (b.get("spec") or {}).get("policyName") == name]
        if want is None or not mine:
            continue  # admission_policies_bound names an unbound policy
        found = [_binding_weakened(_meta(binding, "name"), want["spec"], binding.get("spec") or {})
                 for binding in mine]
        if all(found):  # one binding at full strength is enough: another one with Warn or a selector adds nothing
            out += [d for weakened in found for d in weakened]
    return out


def _weak(kind: str, name: str, path: str, want: Any, have: Any, why: str) -> Difference:
    return Difference(kind, name, "", path, want, have, why)


def _policy_weakened(name: str, want: Mapping[str, Any], have: Mapping[str, Any]) -> list[Difference]:
    kind = "ValidatingAdmissionPolicy"
    out = []
    if have.get("failurePolicy", "Fail") != want.get("failurePolicy", "Fail"):
        out.append(_weak(kind, name, "spec.failurePolicy", want.get("failurePolicy"), have.get("failurePolicy"),
                         "the guardrail is weakened: an error in its expressions no longer refuses"))
    match = have.get("matchConstraints") or {}
    wanted = {(g, v, o, r) for rule in (want.get("matchConstraints") or {}).get("resourceRules") or []
              for g in rule["apiGroups"] for v in rule["apiVersions"] for o in rule["operations"]
              for r in rule["resources"]}
    covered = {(g, v, o, r) for rule in match.get("resourceRules") or []
               for g in rule.get("apiGroups") or [] for v in rule.get("apiVersions") or []
               for o in rule.get("operations") or [] for r in rule.get("resources") or []}
    missing = sorted(w for w in wanted if not any(_covers(c, w) for c in covered))
    if missing:
        out.append(_weak(kind, name, "spec.matchConstraints.resourceRules", [list(m) for m in missing], None,
                         "the guardrail is narrowed: it no longer matches these (group, version, operation, "
                         "resource)"))
    for key in ("excludeResourceRules", "namespaceSelector", "objectSelector"):
        if match.get(key):
            out.append(_weak(kind, name, f"spec.matchConstraints.{key}", None, match[key],
                             f"the guardrail is narrowed: matchConstraints.{key} leaves requests unjudged"))
    if match.get("matchPolicy", "Equivalent") != "Equivalent":
        out.append(_weak(kind, name, "spec.matchConstraints.matchPolicy", "Equivalent", match.get("matchPolicy"),
                         "the guardrail is narrowed: requests through another API version are not judged"))
    for key in ("matchConditions", "validations", "variables"):
        if _normalized(want.get(key)) != _normalized(have.get(key)):
            out.append(_weak(kind, name, f"spec.{key}", want.get(key), have.get(key),
                             f"the guardrail is changed: its {key} are not the rule book's"))
    return out


def _normalized(items: Any) -> Any:
    return sorted(json.dumps(i, sort_keys=True) for i in items or [])


def _covers(have: tuple[str, ...], want: tuple[str, ...]) -> bool:
    return all(h == w or h == "*" or (i == 3 and h.endswith("/*") and w.split("/")[0] == h.split("/")[0])
               for i, (h, w) in enumerate(zip(have, want, strict=True)))


def _binding_weakened(name: str, want: Mapping[str, Any], have: Mapping[str, Any]) -> list[Difference]:
    kind = "ValidatingAdmissionPolicyBinding"
    out = []
    wanted, actions = list(want.get("validationActions") or []), list(have.get("validationActions") or [])
    if "Deny" in wanted and "Deny" not in actions:
        out.append(_weak(kind, name, "spec.validationActions", wanted, actions,
                         "the guardrail is weakened: it no longer refuses (Warn or Audit only)"))
    resources = have.get("matchResources") or {}
    for key in ("namespaceSelector", "objectSelector", "excludeResourceRules", "resourceRules"):
        if resources.get(key):
            out.append(_weak(kind, name, f"spec.matchResources.{key}", None, resources[key],
                             f"the guardrail is narrowed: the binding's matchResources.{key} leaves requests "
                             "unjudged"))
    if have.get("paramRef"):
        out.append(_weak(kind, name, "spec.paramRef", None, have["paramRef"],
                         "the guardrail is changed: the binding names parameters the policy does not take"))
    return out


def _condition(obj: Mapping[str, Any], kind: str) -> Optional[Mapping[str, Any]]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _since(condition: Mapping[str, Any]) -> Optional[datetime]:
    try:
        return datetime.fromisoformat(str(condition.get("lastTransitionTime")).replace("Z", "+00:00"))
    except ValueError:
        return None


def quota_not_leaked(ctx: Context) -> list[Difference]:
    """No Workload holds quota (condition QuotaReserved or Admitted True) while Evicted is True, for longer than
    ``ctx.leak_grace``, with no pod left: Kueue has been seen to keep such quota reserved (kueue#14811, #12656),
    and nothing else is admitted against it. A pod counts when it is not Succeeded or Failed and its owner chain
    (through Jobs and ReplicaSets) reaches the Workload's owner (Kueue v0.19.2 ``workload_types.go``
    WorkloadQuotaReserved, WorkloadAdmitted, WorkloadEvicted)."""
    out: list[Difference] = []
    workloads = _read_list(ctx, KUEUE_API, "Workload", out)
    now = ctx.now or datetime.now(UTC)
    leaking = []
    for wl in workloads:
        evicted = _condition(wl, "Evicted")
        holds = any((_condition(wl, k) or {}).get("status") == "True" for k in ("QuotaReserved", "Admitted"))
        if not holds or not evicted or evicted.get("status") != "True":
            continue
        since = _since(evicted)
        if since is not None and now - since > ctx.leak_grace:
            leaking.append((wl, since))
    if not leaking:
        return out
    owners: dict[str, set[str]] = {}
    for api_version, kind in (("batch/v1", "Job"), ("apps/v1", "ReplicaSet")):
        for obj in _read_list(ctx, api_version, kind, out):
            owners[str(_meta(obj, "uid"))] = {str(r.get("uid")) for r in _meta(obj, "ownerReferences") or []}
    pods = [p for p in _read_list(ctx, "v1", "Pod", out)
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]

    def roots(pod: Mapping[str, Any]) -> set[str]:
        found = {str(r.get("uid")) for r in _meta(pod, "ownerReferences") or []}
        frontier = set(found)
        for _ in range(3):
            frontier = set().union(*(owners.get(uid, set()) for uid in frontier)) if frontier else set()
            found |= frontier
        return found

    for wl, since in leaking:
        mine = {str(r.get("uid")) for r in _meta(wl, "ownerReferences") or []}
        namespace = _meta(wl, "namespace") or ""
        if any(_meta(p, "namespace") == namespace and roots(p) & mine for p in pods):
            continue
        held = (wl.get("status") or {}).get("admission", {}).get("clusterQueue")
        out.append(Difference(
            "Workload", str(_meta(wl, "name")), namespace, "status.conditions", None,
            {"Evicted since": since.isoformat(), "clusterQueue": held},
            f"leaked quota: evicted for more than {int(ctx.leak_grace.total_seconds())} s with no pod, yet it still "
            "holds its quota (QuotaReserved/Admitted), so nothing else is admitted against it (kueue#14811, #12656)",
            fix="delete the Workload (its job's controller recreates it) or restart Kueue's manager"))
    return out


def multikueue_connected(ctx: Context) -> list[Difference]:
    """Every MultiKueueCluster the stack registers is connected (status condition Active True). Kueue's reason and
    message say why not: a kubeconfig it refuses, a worker it cannot reach, a watch the worker forbids."""
    out = []
    for manifest in ctx.expected_of("MultiKueueCluster"):
        live = _read(ctx, manifest)
        if isinstance(live, Difference):
            continue  # objects_match reports it
        condition = _condition(live, "Active") or {}
        if condition.get("status") != "True":
            why = f"{condition.get('reason', 'no Active condition yet')}: {condition.get('message', '')}".strip(": ")
            out.append(Difference("MultiKueueCluster", manifest["metadata"]["name"], "", "status.conditions", "Active",
                                  why, "the manager's Kueue is not connected to this worker, so the AdmissionCheck "
                                  "and every ClusterQueue dispatching there admit nothing",
                                  fix="see the message: the worker's kubeconfig Secret, its reachability or the "
                                      "worker identity's RBAC (cohorts verify of the worker names the rule)"))
    return out


def multikueue_identity(ctx: Context) -> list[Difference]:
    """On a MultiKueue worker (``ctx.worker``): the worker ServiceAccount (in the manager's Kueue namespace) may read
    (get, list, watch) Workloads and each job kind the manager's Kueue enables in every namespace, through the live
    ClusterRoleBindings, and write them (create, delete, update, patch) in each namespace the stack dispatches to the
    worker, through the live RoleBindings there or a ClusterRoleBinding
    (``policy.rules.vocabulary.multikueue.missing_access``, ``components.model.multikueue.dispatched_namespaces``);
    one Difference per kind (and namespace) short of a verb, on the stack's ClusterRole or Role, with the rule to
    add."""
    if ctx.worker is None or ctx.settings is None:
        return []
    rbac = "rbac.authorization.k8s.io/v1"
    try:
        live = [kube_object(o) for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
                for o in ctx.list(rbac, kind)]
    except (KindNotServed, Unreadable) as err:
        return [Difference("ClusterRole", "", "", "", "readable", None, f"the worker's RBAC cannot be read ({err})")]
    subject = f"{ctx.settings.kueue.namespace}/{ctx.worker.service_account}"
    role = f"kueue-cohorts-{ctx.worker.service_account}"
    integrations, gates = ctx.settings.kueue.integrations, ctx.settings.kueue.feature_gates
    out = []
    for access, verbs in missing_access(granted(live, subject), integrations, gates, "read"):
        out.append(Difference(
            "ClusterRole", role, "", f"rules[{access.resource}]", rule_text(access, verbs), None,
            f"the ServiceAccount {subject} may not {', '.join(verbs)} {access.resource} "
            f"({access.api_group or 'core'}) in every namespace: the manager's Kueue does so on every worker "
            f"({access.upstream}, Kueue v0.19.2), and one refused watch disconnects the worker", item=access.resource,
            fix=f"add the rule {rule_text(access, verbs)} to the ClusterRole {role} (or run `up`: the stack "
                "registers it)"))
    for ns in dispatched_namespaces(ctx.settings, ctx.worker):
        for access, verbs in missing_access(granted(live, subject, ns), integrations, gates, "write"):
            out.append(Difference(
                "Role", role, ns, f"rules[{access.resource}]", rule_text(access, verbs), None,
                f"the ServiceAccount {subject} may not {', '.join(verbs)} {access.resource} "
                f"({access.api_group or 'core'}) in {ns}: the manager's Kueue does so for the workloads it dispatches "
                f"there ({access.upstream}, Kueue v0.19.2)", item=access.resource,
                fix=f"add the rule {rule_text(access, verbs)} to the Role {ns}/{role} (or run `up`: the stack "
                    "registers it)"))
    return out


CHECKS: tuple[Check, ...] = (inference_never_borrows, guardrails_intact, objects_match, namespaces_selected,
                             admission_policies_bound, nothing_undeclared_in_the_tree, no_priority_above_inference,
                             promises_hold, multikueue_connected, quota_not_leaked)
WORKER_CHECKS: tuple[Check, ...] = (multikueue_identity, inference_never_borrows, objects_match, namespaces_selected,
                                    quota_not_leaked)
"""What ``verify`` checks on a MultiKueue worker: its identity's RBAC first, then its objects as on any cluster (the
guardrails and the preview identity live on the manager only)."""


def verify(settings: Optional[Settings], live: LiveObjects, expected: Optional[list[dict[str, Any]]] = None,
           checks: Iterable[Check] = CHECKS, now: Optional[datetime] = None, leak_grace: timedelta = LEAK_GRACE,
           worker: Optional[MultiKueueWorker] = None, stack: Optional[AssembledStack] = None) -> list[Difference]:
    """Run ``checks`` against the cluster.

    Args:
        settings: the stack's Settings (None only when ``expected`` is given).
        live: read access to the cluster.
        expected: the rendered objects (default: ``expected_objects(settings, stack)``).
        checks: the checks to run, in order.
        now: the time the leaked-quota check compares with (UTC; default: now). leak_grace: how long an evicted
            Workload may hold quota with no pod (``quota_not_leaked``).
        worker: the MultiKueue worker whose cluster ``live`` is (``settings`` stay the manager's; pass its
            ``expected`` objects and ``WORKER_CHECKS``); each Difference then names it.
        stack: ``assemble(settings)`` when the caller has it (``cohorts verify`` assembles once per run, from the
            settings check's own render); default: assembled here, once, and carried to every check in the Context.
    Returns:
        Every difference, in check order; a (kind, namespace, name, path) reported by an earlier check is not
        repeated. Empty: the cluster matches the stack.
    Raises:
        ValueError: neither ``settings`` nor ``expected`` given.
    """
    if settings is None and expected is None:
        raise ValueError("verify needs the stack's settings or its expected objects")
    if settings is not None and stack is None:
        stack = assemble(settings)
    if expected is None:
        assert settings is not None
        expected = expected_objects(settings, stack)
    ctx = Context(settings, expected, live, now=now, leak_grace=leak_grace, worker=worker, stack=stack)
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for check in checks:
        for diff in check(ctx):
            key = (diff.kind, diff.namespace, diff.name, diff.path)
            if key not in seen:
                seen.add(key)
                out.append(replace(diff, cluster=worker.name) if worker is not None else diff)
    return out


class ClusterObjects:
    """LiveObjects over the kubernetes dynamic client (any kind the cluster serves, found by discovery).
    ``timeout_seconds`` bounds each get and list (None: the client's default, no bound)."""

    def __init__(self, api: ApiClient, timeout_seconds: Optional[float] = None) -> None:
        self._dyn = DynamicClient(api)
        self._bound: dict[str, Any] = {} if timeout_seconds is None else {"_request_timeout": timeout_seconds}

    def _resource(self, api_version: str, kind: str) -> Resource:
        try:
            resource: Resource = self._dyn.resources.get(api_version=api_version, kind=kind)
            return resource
        except ResourceNotFoundError:
            raise KindNotServed(f"{api_version} {kind}") from None

    def get(self, api_version: str, kind: str, name: str,
            namespace: Optional[str] = None) -> Optional[dict[str, Any]]:
        """See LiveObjects.get."""
        resource = self._resource(api_version, kind)
        try:
            found: dict[str, Any] = resource.get(name=name, namespace=namespace, **self._bound).to_dict()
            return found
        except NotFoundError:
            return None
        except DynamicApiError as err:
            raise Unreadable(f"{err.status} {err.reason}") from None

    def list(self, api_version: str, kind: str) -> builtins.list[dict[str, Any]]:
        """See LiveObjects.list."""
        resource = self._resource(api_version, kind)
        try:
            return list(resource.get(**self._bound).to_dict().get("items") or [])
        except DynamicApiError as err:
            raise Unreadable(f"{err.status} {err.reason}") from None
