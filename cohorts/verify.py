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
  ``expected_objects`` returns such policies.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence

from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError

from cohorts.expected import expected_objects
from components import quantity
from components.kueue import ROLE_LABEL
from components.settings import Settings

QUANTITY_KEYS = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit"})
#: Keys whose whole value must be equal (no extra keys on the cluster): a label selector changes meaning with any
#: addition.
STRICT_KEYS = frozenset({"namespaceSelector"})
VAP_API = "admissionregistration.k8s.io/v1"


@dataclass(frozen=True)
class Difference:
    """One way the cluster differs from the stack: the object (``kind``, ``name``, ``namespace`` or ""), the field
    ``path`` (JSON field names with list indexes as in the rendered manifest, e.g.
    ``spec.resourceGroups[0].flavors[0].resources[2].borrowingLimit``; "" for the whole object), ``item`` (the name
    of the list item the path ends in, e.g. the resource), ``expected`` / ``live`` values (None = absent) and the
    ``rule`` broken."""

    kind: str
    name: str
    namespace: str
    path: str
    expected: Any
    live: Any
    rule: str
    item: str = ""

    def __str__(self) -> str:
        obj = f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"
        if not self.path:  # the whole object: missing, not served or unreadable
            return f"{obj}: {self.rule}"
        where = self.path + (f" ({self.item})" if self.item else "")
        return f"{obj}: {where}: {self.rule}: expected {_show(self.expected)}, live {_show(self.live)}"

    def as_json(self) -> dict[str, Any]:
        """``{"kind", "name", "namespace", "path", "item", "expected", "live", "rule"}``."""
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace, "path": self.path,
                "item": self.item, "expected": self.expected, "live": self.live, "rule": self.rule}


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

    def get(self, api_version: str, kind: str, name: str, namespace: Optional[str] = None) -> Optional[dict]:
        """The object as a dict, or None when absent. Raises KindNotServed, Unreadable."""

    def list(self, api_version: str, kind: str) -> list[dict]:
        """Every object of the kind (all namespaces). Raises KindNotServed, Unreadable."""


@dataclass
class Context:
    """What a check sees: the stack's ``settings``, its ``expected`` manifests and the ``live`` cluster. ``cache``
    keeps objects read once (key: (apiVersion, kind, namespace, name))."""

    settings: Optional[Settings]
    expected: list[dict[str, Any]]
    live: LiveObjects
    cache: dict[tuple, Any] = field(default_factory=dict)

    def get(self, manifest: Mapping[str, Any]) -> Optional[dict]:
        """The live twin of ``manifest`` (None when absent). Raises KindNotServed, Unreadable."""
        meta = manifest["metadata"]
        key = (manifest["apiVersion"], manifest["kind"], meta.get("namespace"), meta["name"])
        if key not in self.cache:
            self.cache[key] = self.live.get(*key[:2], meta["name"], meta.get("namespace"))
        return self.cache[key]

    def expected_of(self, kind: str) -> list[dict[str, Any]]:
        """The expected manifests of ``kind``."""
        return [m for m in self.expected if m["kind"] == kind]


Check = Callable[[Context], list[Difference]]


def _ident(manifest: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = manifest["metadata"]
    return manifest["kind"], meta["name"], meta.get("namespace", "") or ""


def _read(ctx: Context, manifest: Mapping[str, Any]) -> tuple[Optional[dict], Optional[Difference]]:
    """(live object, None) or (None, a Difference saying why it cannot be compared)."""
    kind, name, ns = _ident(manifest)
    try:
        live = ctx.get(manifest)
    except KindNotServed:
        return None, Difference(kind, name, ns, "", "present", None,
                                f"the cluster does not serve {manifest['apiVersion']} {kind}")
    except Unreadable as err:
        return None, Difference(kind, name, ns, "", "present", None, f"cannot be read ({err})")
    if live is None:
        return None, Difference(kind, name, ns, "", "present", None, "missing on the cluster")
    return live, None


# --- field comparison --------------------------------------------------------------------------------------------


def _equal(key: str, want: Any, have: Any) -> bool:
    if key in QUANTITY_KEYS and want is not None and have is not None:
        try:
            return quantity.parse(want) == quantity.parse(have)
        except ValueError:
            return str(want) == str(have)
    return want == have


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
        live, problem = _read(ctx, manifest)
        if problem:
            out.append(problem)
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


def selects(selector: Optional[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """Whether a metav1.LabelSelector selects ``labels`` (matchLabels and matchExpressions In / NotIn / Exists /
    DoesNotExist; k8s.io/apimachinery LabelSelectorAsSelector). None selects nothing, {} everything."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        k, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(k) not in values:
            return False
        if op == "NotIn" and k in labels and labels[k] in values:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


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
        if not selects(selector, labels):
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


CHECKS: tuple[Check, ...] = (inference_never_borrows, objects_match, namespaces_selected, admission_policies_bound)


def verify(settings: Optional[Settings], live: LiveObjects, expected: Optional[list[dict]] = None,
           checks: Iterable[Check] = CHECKS) -> list[Difference]:
    """Run ``checks`` against the cluster.

    Args:
        settings: the stack's Settings (None only when ``expected`` is given).
        live: read access to the cluster.
        expected: the rendered objects (default: ``expected_objects(settings)``).
        checks: the checks to run, in order.
    Returns:
        Every difference, in check order; a (kind, namespace, name, path) reported by an earlier check is not
        repeated. Empty: the cluster matches the stack.
    """
    ctx = Context(settings, expected if expected is not None else expected_objects(settings), live)
    seen: set[tuple] = set()
    out = []
    for check in checks:
        for diff in check(ctx):
            key = (diff.kind, diff.namespace, diff.name, diff.path)
            if key not in seen:
                seen.add(key)
                out.append(diff)
    return out


class ClusterObjects:
    """LiveObjects over the kubernetes dynamic client (any kind the cluster serves, found by discovery)."""

    def __init__(self, api):
        self._dyn = DynamicClient(api)

    def _resource(self, api_version: str, kind: str):
        try:
            return self._dyn.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            raise KindNotServed(f"{api_version} {kind}") from None

    def get(self, api_version: str, kind: str, name: str, namespace: Optional[str] = None) -> Optional[dict]:
        """See LiveObjects.get."""
        resource = self._resource(api_version, kind)
        try:
            return resource.get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None
        except DynamicApiError as err:
            raise Unreadable(f"{err.status} {err.reason}") from None

    def list(self, api_version: str, kind: str) -> list[dict]:
        """See LiveObjects.list."""
        resource = self._resource(api_version, kind)
        try:
            return list(resource.get().to_dict().get("items") or [])
        except DynamicApiError as err:
            raise Unreadable(f"{err.status} {err.reason}") from None
