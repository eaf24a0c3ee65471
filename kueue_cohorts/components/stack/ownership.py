"""Before an `up` registers anything: take back, on the objects the stack created, what it declares and another field
manager owns (the rules and the upstream behaviour they follow: components/model/field_ownership.py).

`take_back_fields` reads the cluster once per kind the stack registers (a list filtered by the stack's
`app.kubernetes.io/managed-by` label), decides with the pure `take_back`, and in an `up` (not a preview) writes each
object's new `metadata.managedFields` with a JSON patch guarded by its resourceVersion (the same write
pulumi-kubernetes v4.25.0 makes in provider/pkg/await/await.go `fixCSAFieldManagers`). Nothing else of the object
changes. Objects the stack only patches (a `namespacePolicy: Label` namespace) and objects without the stack's own
field manager (`stack_manager`: not created by this stack's program) are left alone. The calls go through the
official client's DynamicClient (kubernetes 37.0.2, kubernetes/dynamic/client.py), so every kind the stack renders is
read and written the same way.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from kubernetes import config, dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError

from kueue_cohorts.components.model.assembly import AssembledStack
from kueue_cohorts.components.model.field_ownership import describe, take_back
from kueue_cohorts.components.model.render import Rendered
from kueue_cohorts.components.settings import ClusterMode, Settings
from kueue_cohorts.components.stack.target import Target
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_BY, MANAGED_BY_LABEL

RETRIES = 3
"""Attempts per object when it changes between the read and the write (the JSON patch's resourceVersion test)."""


@dataclass(frozen=True)
class Ownership:
    """What `take_back_fields` found: `taken` one line per field manager that gave fields up (or would give them up, in
    a preview), `skipped` one line per object or kind it could not read or write (the `up` goes on; the API server
    then reports what it refuses)."""

    taken: tuple[str, ...]
    skipped: tuple[str, ...]


def take_back_fields(objects: Sequence[Rendered], kubeconfig: Optional[Path], context: Optional[str], *,
                     write: bool, timeout_seconds: float = 15.0) -> Ownership:
    """Take back, on the live objects among `objects`, the declared fields other field managers own.

    Args:
        objects: the objects the stack registers on one cluster (`AssembledStack.registered()` or a MultiKueue
            worker's list); patches (`Rendered.patch`) are skipped.
        kubeconfig, context: the cluster (None: the client's default file, the file's current context).
        write: True in an `up`: write the new managedFields; False in a preview: only report.
        timeout_seconds: per request.
    Returns:
        Ownership. Never raises for the cluster: a kind the cluster does not serve yet (its CRD comes with this `up`)
        has no live object to take anything back on; a read or write the cluster refuses is listed in `skipped`.
    """
    try:
        api = dynamic.DynamicClient(config.new_client_from_config(
            config_file=str(kubeconfig) if kubeconfig else None, context=context))
    except Exception as err:  # noqa: BLE001 - no cluster to read: the preflight has said so already
        return Ownership((), (f"cannot read the cluster to take back fields: {err}",))
    by_kind: dict[tuple[str, str], list[Rendered]] = defaultdict(list)
    for obj in objects:
        if not obj.patch:
            by_kind[(str(obj.manifest["apiVersion"]), str(obj.manifest["kind"]))].append(obj)
    taken: list[str] = []
    skipped: list[str] = []
    for (api_version, kind), rendered in by_kind.items():
        try:
            resource = api.resources.get(api_version=api_version, kind=kind)
            listed = resource.get(label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}",
                                  _request_timeout=timeout_seconds).to_dict()
        except ResourceNotFoundError:
            continue  # the kind is not served yet: nothing of it exists
        except (ApiException, DynamicApiError) as err:
            skipped.append(f"{kind}: cannot list ({_reason(err)})")
            continue
        live = {(item["metadata"].get("namespace"), item["metadata"]["name"]): item for item in listed["items"]}
        for obj in rendered:
            meta = obj.manifest["metadata"]
            key = (meta.get("namespace") if resource.namespaced else None, meta["name"])
            if key in live:
                taken += _take_back_one(resource, live[key], obj, write, timeout_seconds, skipped)
    return Ownership(tuple(taken), tuple(skipped))


def _take_back_one(resource: Any, item: dict[str, Any], obj: Rendered, write: bool, timeout_seconds: float,
                   skipped: list[str]) -> list[str]:
    """Take back the fields of one live object (re-read and tried again when it changed meanwhile)."""
    meta = obj.manifest["metadata"]
    namespace, name, kind = meta.get("namespace") if resource.namespaced else None, meta["name"], obj.manifest["kind"]
    for _ in range(RETRIES):
        decision = take_back(item["metadata"].get("managedFields") or [], obj.manifest)
        if decision is None or not decision.transfers:
            return []
        lines = describe(kind, namespace, name, decision.transfers)
        if not write:
            return lines
        patch = [{"op": "test", "path": "/metadata/resourceVersion", "value": item["metadata"]["resourceVersion"]},
                 {"op": "replace", "path": "/metadata/managedFields", "value": decision.managed_fields}]
        try:
            resource.patch(body=patch, name=name, namespace=namespace, content_type="application/json-patch+json",
                           _request_timeout=timeout_seconds)
            return lines
        except (ApiException, DynamicApiError) as err:
            if getattr(err, "status", None) not in (409, 422):
                skipped.append(f"{kind} {name}: cannot write its managedFields ({_reason(err)})")
                return []
            try:  # changed since the read (the resourceVersion test failed): read it again
                item = resource.get(name=name, namespace=namespace, _request_timeout=timeout_seconds).to_dict()
            except (ApiException, DynamicApiError) as again:
                skipped.append(f"{kind} {name}: cannot read it again ({_reason(again)})")
                return []
    skipped.append(f"{kind} {name}: kept changing while its fields were taken back")
    return []


def _reason(err: Exception) -> str:
    status = getattr(err, "status", None)
    return f"HTTP {status} {getattr(err, 'reason', '')}".strip() if status else str(err)


def take_back_stack(stack: AssembledStack, settings: Settings, target: Target, *, write: bool) -> Ownership:
    """`take_back_fields` on the stack's own cluster (`stack.registered()`) and on each MultiKueue worker
    (`stack.workers()`, with the worker's kubeconfig and context). Render mode has no cluster: an empty Ownership.
    Args and Returns as `take_back_fields` (a worker's lines start with `worker <name>: `)."""
    if settings.cluster.mode == ClusterMode.RENDER:
        return Ownership((), ())
    found = take_back_fields(stack.registered(), target.kubeconfig, settings.cluster.context, write=write)
    taken, skipped = list(found.taken), list(found.skipped)
    contexts = {w.name: w.context for w in (settings.multi_kueue.workers if settings.multi_kueue else [])}
    for name, objects in stack.workers().items():
        where = target.workers.get(name)
        on_worker = take_back_fields(objects, where.kubeconfig if where else None, contexts.get(name), write=write)
        taken += [f"worker {name}: {line}" for line in on_worker.taken]
        skipped += [f"worker {name}: {line}" for line in on_worker.skipped]
    return Ownership(tuple(taken), tuple(skipped))
