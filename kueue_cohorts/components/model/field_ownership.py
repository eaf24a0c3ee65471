"""Field ownership: what the stack declares on an object it created is the stack's alone, whoever wrote it since.

Server-side apply (Kubernetes, https://kubernetes.io/docs/reference/using-api/server-side-apply/, "Merge strategy" and
"Transferring ownership"; structured-merge-diff v4 as vendored by kube-apiserver v1.34) merges what an applier sends
with what other field managers own: an element of a `listType=set` or `listType=map` list, or a key of a map, that
another manager owns stays when the stack applies without it. A `kubectl edit` (field manager `kubectl-edit`, an
Update) that turns a guardrail binding's `validationActions` to `[Warn]` and back to `[Deny]` leaves `Deny` owned by
`kubectl-edit` alone; the stack's next `up` with `[Warn, Audit]` then sends a list the API server merges into
`[Deny, Warn, Audit]` and refuses (Deny and Warn together), and an `up` that keeps `[Deny]` no longer owns it.
`pulumi.com/patchForce` (components.model.kueue.PATCH_FORCE) only resolves *conflicts* on fields the stack sends; it
cannot drop what another manager owns.

pulumi-kubernetes v4.25.0 (provider/pkg/await/await.go `fixCSAFieldManagers`) takes over, before every update, the
fields of a fixed list of managers (`kubectl` Apply and Update, `before-first-apply`, its own client-side-apply
names), and not those of `kubectl-edit`, `kubectl-patch`, `kubectl-client-side-apply`, a client library's default
manager or any other tool. `take_back` generalises that step to every manager, limited to what the stack declares:

- every top-level field the stack's manifest sets other than `metadata` (`spec`, `data`, `rules`, `subjects`,
  `roleRef`, `value`, ...), with everything under it: an element another manager added to a list the stack declares,
  a field it set under `spec` (e.g. a ClusterQueue's `stopPolicy`), a value it changed;
- under `metadata`, only the `labels` and `annotations` keys the stack sets. Other labels and annotations, finalizers
  (Kueue's `kueue.x-k8s.io/resource-in-use`), owner references and the identity fields stay with their managers;
- entries of a subresource (`status`, `scale`) are never touched.

Fields are taken back only from a person or another tool, never from a controller (`is_controller`): a controller
sets what it owns because the object's life needs it, e.g. the PV controller's `spec.volumeName` (and the
`pv.kubernetes.io/bind-completed` annotation) on a bound PersistentVolumeClaim (kube-controller-manager v1.36
pkg/controller/volume/persistentvolume/pv_controller.go `bindClaimToVolume`); taken to the stack, the next apply
would drop `spec.volumeName`, which the API server refuses on a bound claim (core/v1 validation: the spec of a bound
claim is immutable except resources.requests), so every later change of that claim would fail for good. A
controller is an entry of a subresource (`status`, `scale`: only controllers write those), or one whose manager
name is a controller's. The API server names an entry after the request's `fieldManager`, else after the client's
user agent up to its first `/` (k8s.io/apiserver v0.36 pkg/endpoints/handlers/rest.go `managerOrUserAgent`,
`prefixFromUserAgent`), and client-go's default user agent starts with the program's file name (k8s.io/client-go
rest/config.go `DefaultKubernetesUserAgent`): `kube-controller-manager`, `cloud-controller-manager`,
`kube-scheduler`, `kubelet`, `kube-apiserver` for Kubernetes' own; `manager` for the controller-runtime binaries of
Kueue v0.19.2, JobSet, the Kubeflow Trainer v2.2.1 and KServe (each image's entrypoint is `/manager`); `kueue` and
`kueue-admission` for Kueue's own server-side applies (pkg/controller/constants); the local sandbox's binaries keep
their program names (toolchain/paths.py `bin_path`): `kueue`, `jobset-controller-manager`,
`trainer-controller-manager`, and `kwok`, which stands in for the kubelet and the volume provisioner and patches the
checkpoint claim's `spec.volumeName` itself (sigs.k8s.io/kwok v0.8.0 kustomize/stage/volume/fast/pvc-provision.yaml;
its applies name `kwok`, pkg/utils/lifecycle/apply.go). Every other manager (`kubectl*`,
`helm`, `argocd-*`, a client library's default such as `OpenAPI-Generator` or `Python`) is a person or a tool.

The taken fields are added to the stack's own entry: the provider's server-side apply manager (`pulumi-kubernetes-`
and a random suffix, kept in the resource's state as `__fieldManager`: provider/pkg/provider/provider.go
`fieldManagerName`), found on the live object as the one Apply entry of such a name that owns the stack's
`app.kubernetes.io/managed-by` label. The next apply then sets each of them to what the stack declares and drops what
it does not (owned by the stack alone).
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_BY_LABEL

STACK_MANAGER_PREFIX = "pulumi-kubernetes-"
"""Prefix of the field manager pulumi-kubernetes v4.25.0 applies with in server-side apply mode."""

CONTROLLER_MANAGERS = frozenset({
    "kube-controller-manager", "cloud-controller-manager", "kube-scheduler", "kubelet", "kube-apiserver",
    "manager", "kueue", "kueue-admission", "jobset-controller-manager", "trainer-controller-manager", "kwok",
})
"""Field manager names of controllers (module docstring: where each name comes from). Their fields are never taken."""

_SHARED_METADATA = ("labels", "annotations")
"""The metadata maps several managers write by convention: only the keys the stack sets are taken."""

FieldsV1 = Mapping[str, Any]
"""`metadata.managedFields[].fieldsV1`: `f:<field>`, `k:<key JSON>`, `v:<value JSON>`, `i:<index>` and `.` keys
(k8s.io/apimachinery v0.34 pkg/apis/meta/v1 FieldsV1, structured-merge-diff v4 fieldpath serialisation)."""


@dataclass(frozen=True)
class Transfer:
    """What `take_back` takes from one entry: `manager` and `operation` (`Update` / `Apply`) of the entry, `paths` the
    dotted field paths taken, two levels deep below a top-level field (e.g. `spec.validationActions`, `spec.stopPolicy`,
    `value`) and each key of a shared metadata map (`metadata.labels.kueue-cohorts/tenant`)."""

    manager: str
    operation: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class TakeBack:
    """The result of `take_back`: `managed_fields`, the object's new `metadata.managedFields` (JSON-ready dicts), the
    stack's `manager` and the `transfers`, one per entry that gave something up (empty: nothing to take back)."""

    managed_fields: list[dict[str, Any]]
    manager: str
    transfers: tuple[Transfer, ...]


def stack_manager(managed_fields: Sequence[Mapping[str, Any]]) -> Optional[str]:
    """The stack's field manager on a live object: the one `Apply` entry of the object itself (no subresource) whose
    manager starts with `pulumi-kubernetes-` and that owns `metadata.labels[app.kubernetes.io/managed-by]` (the
    stack's mark). Takes the object's `metadata.managedFields`; returns None when there is no such entry or more than
    one (two Pulumi programs applied the mark: whose object it is cannot be told)."""
    found = [entry["manager"] for entry in managed_fields
             if entry.get("operation") == "Apply" and not entry.get("subresource")
             and str(entry.get("manager", "")).startswith(STACK_MANAGER_PREFIX)
             and f"f:{MANAGED_BY_LABEL}" in (entry.get("fieldsV1") or {}).get("f:metadata", {}).get("f:labels", {})]
    return found[0] if len(found) == 1 else None


def is_controller(entry: Mapping[str, Any]) -> bool:
    """Whether the `metadata.managedFields` entry `entry` was written by a controller rather than a person or a tool:
    it is an entry of a subresource (`status`, `scale`, ...), or its manager is one of CONTROLLER_MANAGERS (exact
    names, as the API server records them)."""
    return bool(entry.get("subresource")) or str(entry.get("manager", "")) in CONTROLLER_MANAGERS


def take_back(managed_fields: Sequence[Mapping[str, Any]], declared: Mapping[str, Any]) -> Optional[TakeBack]:
    """Move to the stack's field manager every field of `declared` that a person or another tool owns, never a
    controller's (`is_controller`; rules: module docstring).

    Args:
        managed_fields: the live object's `metadata.managedFields` (as the API returns them, camelCase keys).
        declared: the manifest the stack registers for the object (`components.model.render.Rendered.manifest`).
    Returns:
        None when the object has no stack manager (`stack_manager`): it is not the stack's to take anything back on.
        Otherwise a TakeBack whose `transfers` is empty when no other manager owns a declared field, and whose
        `managed_fields` keeps every other entry as it was, minus what was taken (an entry left owning nothing is
        dropped), with the stack's entry owning the union.
    """
    ours = stack_manager(managed_fields)
    if ours is None:
        return None
    taken_all: dict[str, Any] = {}
    transfers: list[Transfer] = []
    result: list[dict[str, Any]] = []
    for entry in managed_fields:
        is_ours = entry.get("manager") == ours and entry.get("operation") == "Apply" and not entry.get("subresource")
        if is_ours or is_controller(entry) or entry.get("fieldsType", "FieldsV1") != "FieldsV1":
            result.append(copy.deepcopy(dict(entry)))
            continue
        taken, kept, paths = _split_object(entry.get("fieldsV1") or {}, declared)
        if not paths:
            result.append(copy.deepcopy(dict(entry)))
            continue
        transfers.append(Transfer(str(entry.get("manager")), str(entry.get("operation")), tuple(paths)))
        taken_all = _union(taken_all, taken)
        if kept:
            result.append({**copy.deepcopy(dict(entry)), "fieldsV1": kept})
    if transfers:
        for entry in result:
            if entry.get("manager") == ours and entry.get("operation") == "Apply" and not entry.get("subresource"):
                entry["fieldsV1"] = _union(entry.get("fieldsV1") or {}, taken_all)
    return TakeBack(result, ours, tuple(transfers))


def _split_object(fields: FieldsV1, declared: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(taken, kept, paths taken) of one entry's fieldsV1 against the declared manifest."""
    taken: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    paths: list[str] = []
    for key, child in fields.items():
        name = key[2:] if key.startswith("f:") else None
        if name == "metadata" and isinstance(declared.get("metadata"), Mapping):
            meta_taken, meta_kept = _split_metadata(child, declared["metadata"], paths)
            if meta_taken:
                taken[key] = meta_taken
            if meta_kept:
                kept[key] = meta_kept
        elif name is not None and name not in ("apiVersion", "kind", "status") and name in declared:
            taken[key] = copy.deepcopy(child)
            below = [f"{name}.{inner[2:]}" for inner in child if inner.startswith("f:")]
            paths.extend(below or [name])
        else:
            kept[key] = copy.deepcopy(child)
    return taken, kept, paths


def _split_metadata(fields: FieldsV1, declared: Mapping[str, Any],
                    paths: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(taken, kept) of an entry's `f:metadata`: the declared keys of the shared maps are taken, the rest kept."""
    taken: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    for key, child in fields.items():
        name = key[2:] if key.startswith("f:") else None
        keys = declared.get(name) if name in _SHARED_METADATA else None
        if not isinstance(keys, Mapping) or not isinstance(child, Mapping):
            kept[key] = copy.deepcopy(child)
            continue
        for item, value in child.items():
            if item.startswith("f:") and item[2:] in keys:
                taken.setdefault(key, {})[item] = copy.deepcopy(value)
                paths.append(f"metadata.{name}.{item[2:]}")
            else:
                kept.setdefault(key, {})[item] = copy.deepcopy(value)
    return taken, kept


def _union(left: Mapping[str, Any], right: Mapping[str, Any]) -> dict[str, Any]:
    """The union of two fieldsV1 trees (a field owned in either is owned in the result)."""
    merged = copy.deepcopy(dict(left))
    for key, child in right.items():
        merged[key] = _union(merged[key], child) if key in merged else copy.deepcopy(child)
    return merged


def describe(kind: str, namespace: Optional[str], name: str, transfers: Sequence[Transfer]) -> list[str]:
    """One line per transfer: `<Kind> <namespace/>name: <paths> from field manager <manager> (<operation>)`."""
    where = f"{kind} {namespace + '/' if namespace else ''}{name}"
    return [f"{where}: {', '.join(t.paths)} from field manager {json.dumps(t.manager)} ({t.operation})"
            for t in transfers]
