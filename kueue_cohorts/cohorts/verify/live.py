"""``verify``'s live reader: what a check sees (``Context``: the stack, its expected objects, the live cluster read
once per object and per list) and the reader of a real cluster (``ClusterObjects``, the kubernetes dynamic client)."""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping, Optional, Protocol

from kubernetes.client import ApiClient
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError
from kubernetes.dynamic.resource import Resource

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.components.model.assembly import AssembledStack
from kueue_cohorts.components.settings import MultiKueueWorker, Settings

VAP_API = "admissionregistration.k8s.io/v1"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
LEAK_GRACE = timedelta(minutes=5)
"""How long a Workload may hold quota while evicted with no pods before ``quota_not_leaked`` names it."""
TRAINER_API = "trainer.kubeflow.org/v1alpha1"


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


def ident(manifest: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = manifest["metadata"]
    return manifest["kind"], meta["name"], meta.get("namespace", "") or ""


def read(ctx: Context, manifest: Mapping[str, Any]) -> dict[str, Any] | Difference:
    """The live object, or a Difference saying why it cannot be compared."""
    kind, name, ns = ident(manifest)
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



def meta(obj: Mapping[str, Any], key: str) -> Any:
    return (obj.get("metadata") or {}).get(key)


def read_list(ctx: Context, api_version: str, kind: str, out: list[Difference]) -> list[dict[str, Any]]:
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


def condition_of(obj: Mapping[str, Any], kind: str) -> Optional[Mapping[str, Any]]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _since(condition: Mapping[str, Any]) -> Optional[datetime]:
    try:
        return datetime.fromisoformat(str(condition.get("lastTransitionTime")).replace("Z", "+00:00"))
    except ValueError:
        return None


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
