"""Putting objects into the sandbox's apiserver: server-side apply, and waiting until they are usable.

Server-side apply (``application/apply-patch+yaml``) is used for everything: it is idempotent, so ``up`` can
re-run, and it has no ``last-applied-configuration`` annotation, so the Kubeflow Trainer CRDs (larger than the
262,144-byte annotation limit) apply like any other. Requests are raw (one PATCH per object, paths from
:data:`CLUSTER_SCOPED`): the dynamic client's discovery would cost seconds per ``up``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml
from kubernetes import client as k8s

FIELD_MANAGER = "kueue-cohorts-sandbox"


class SandboxError(RuntimeError):
    """The sandbox could not be brought up, checked or stopped; the message says which step and why."""


#: libyaml's safe loader when PyYAML has it (8x faster on the 2 MB of Trainer and KServe CRDs), else PyYAML's.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_documents(files: Iterable[Path], kind: str | None = None) -> list[dict[str, Any]]:
    """Return the YAML documents of ``files`` (in order), only those of ``kind`` when given (safe loader)."""
    docs = []
    for path in files:
        for doc in yaml.load_all(Path(path).read_text(), Loader=SAFE_LOADER):
            if doc and (kind is None or doc.get("kind") == kind):
                docs.append(doc)
    return docs


#: apiVersion/kind → (URL prefix, plural) of the cluster-scoped kinds the sandbox itself applies, so that applying
#: them needs no discovery (the dynamic client's discovery of every group costs seconds once the large CRDs exist).
CLUSTER_SCOPED = {
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"):
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    ("v1", "Namespace"): "/api/v1/namespaces",
    ("v1", "Node"): "/api/v1/nodes",
    ("storage.k8s.io/v1", "StorageClass"): "/apis/storage.k8s.io/v1/storageclasses",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    ("serving.kserve.io/v1alpha1", "ClusterServingRuntime"): "/apis/serving.kserve.io/v1alpha1/clusterservingruntimes",
}
#: The same for the namespaced kinds the sandbox applies (``{namespace}`` is filled in).
NAMESPACED = {
    ("v1", "ConfigMap"): "/api/v1/namespaces/{namespace}/configmaps",
}


def request_json(api: k8s.ApiClient, method: str, path: str, *, body: object = None,
                 query: list[tuple[str, str]] | None = None, content_type: str | None = None) -> dict[str, Any]:
    """Send one request to the apiserver (``path`` absolute, e.g. ``/api/v1/nodes``; ``query`` a list of
    (name, value); ``body`` JSON-serialisable, sent as ``content_type``) and return the decoded JSON answer ({} when
    empty). Raw on purpose: the typed API classes cost seconds to import (``CoreV1Api``) and the dynamic client
    a discovery of every group. Raises kubernetes.client.ApiException on a status outside 2xx."""
    headers = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
        if "json" not in content_type:
            body = json.dumps(body)  # the client serialises only *json content types itself; JSON is valid YAML
    method, url, headers, body, post = api.param_serialize(method, path, query_params=query or [],
                                                           header_params=headers, body=body,
                                                           auth_settings=["BearerToken"])
    resp = api.call_api(method, url, header_params=headers, body=body, post_params=post)
    data: bytes = resp.read()
    if not 200 <= resp.status <= 299:
        raise k8s.ApiException(status=resp.status, reason=resp.reason, http_resp=resp)
    decoded: dict[str, Any] = json.loads(data) if data else {}
    return decoded


def apply_cluster_scoped(api: k8s.ApiClient, obj: Mapping[str, Any], *, status: bool = False) -> dict[str, Any]:
    """Server-side apply the cluster-scoped ``obj`` (a kind of :data:`CLUSTER_SCOPED`; or of :data:`NAMESPACED`,
    in its ``metadata.namespace``) with one PATCH
    (``application/apply-patch+yaml`` with a JSON body, field manager ``kueue-cohorts-sandbox``, ``force=true``),
    without discovery; with ``status`` also apply its ``status`` through the status subresource. Returns the
    object as the apiserver answered. Raises KeyError for another kind, kubernetes.client.ApiException on an API
    error."""
    key = (obj["apiVersion"], obj["kind"])
    base = CLUSTER_SCOPED[key] if key in CLUSTER_SCOPED else NAMESPACED[key].format(**obj["metadata"])
    name = obj["metadata"]["name"]
    query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
    body = {k: v for k, v in obj.items() if k != "status"}
    result = request_json(api, "PATCH", f"{base}/{name}", body=body, query=query,
                      content_type="application/apply-patch+yaml")
    if status and obj.get("status"):
        result = request_json(api, "PATCH", f"{base}/{name}/status", query=query,
                          content_type="application/apply-patch+yaml",
                          body={"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": {"name": name},
                                "status": obj["status"]})
    return result


def wait_until(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    """Call ``check`` until it returns True; raise SandboxError naming ``what`` after ``timeout`` seconds.

    Exceptions raised by ``check`` count as "not yet" (the last one is quoted in the error), except SandboxError,
    which ``check`` raises to stop waiting at once (e.g. the awaited process has exited) and which propagates.
    """
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            if check():
                return
        except SandboxError:
            raise
        except Exception as exc:  # noqa: BLE001 - a component still starting answers with all sorts of errors
            last = exc
        if time.monotonic() > deadline:
            detail = f" (last error: {last})" if last else ""
            raise SandboxError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


#: Accept header that makes the apiserver return only object metadata (meta.k8s.io/v1 PartialObjectMetadataList).
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def get_json(api: k8s.ApiClient, path: str, accept: str = "application/json") -> dict[str, Any] | None:
    """GET ``path`` from the apiserver and return the decoded JSON, or None on 404. Raw on purpose: the typed and
    dynamic clients build Python objects for every field, which takes seconds for the Trainer and KServe CRDs.
    Raises kubernetes.client.ApiException for other errors."""
    method, url, headers, body, post = api.param_serialize(
        "GET", path, header_params={"Accept": accept}, auth_settings=["BearerToken"])
    resp = api.call_api(method, url, header_params=headers, body=body, post_params=post)
    data: bytes = resp.read()
    if resp.status == 404:
        return None
    if not 200 <= resp.status <= 299:
        raise k8s.ApiException(status=resp.status, reason=resp.reason)
    decoded: dict[str, Any] = json.loads(data)
    return decoded


#: The collection of CustomResourceDefinitions.
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def established(crd: Mapping[str, Any]) -> bool:
    """Return True when the CustomResourceDefinition ``crd`` (a decoded object) has condition Established=True."""
    conds = {c.get("type"): c.get("status") for c in (crd.get("status") or {}).get("conditions") or []}
    return conds.get("Established") == "True"


def watch_until(api: k8s.ApiClient, collection: str, done: Callable[[Mapping[str, dict[str, Any]]], bool],
                timeout: float,
                what: str) -> int:
    """Watch the cluster-scoped ``collection`` (a list path, e.g. :data:`CRDS`) until ``done(objects)`` is True,
    ``objects`` being every object of the collection by name as the watch last reported it; return the number of
    watch events read.

    One streaming GET (``?watch=true`` without a resourceVersion: the apiserver first sends an ADDED event per
    existing object, then every change), instead of polling whole objects: waiting for the 16 CRDs (2.4 MB) to be
    Established by polling every 50 ms fetched and decoded up to 2.4 MB per poll, CPU that the apiserver and this
    process then took from the CRDs being established. A watch that ends (its ``timeoutSeconds``, an ERROR event, a
    dropped connection) is started again until ``timeout`` seconds have passed; then SandboxError names ``what``.
    """
    deadline = time.monotonic() + timeout
    events = 0
    last: Exception | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            detail = f" (last error: {last})" if last else ""
            raise SandboxError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        objects: dict[str, dict[str, Any]] = {}
        query = [("watch", "true"), ("allowWatchBookmarks", "false"), ("timeoutSeconds", str(max(1, int(remaining))))]
        try:
            method, url, headers, body, post = api.param_serialize(
                "GET", collection, query_params=query, header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"])
            resp = api.call_api(method, url, header_params=headers, body=body, post_params=post,
                                _request_timeout=(10, remaining + 10))
            if not 200 <= resp.status <= 299:
                resp.read()
                raise k8s.ApiException(status=resp.status, reason=resp.reason)
            try:
                for line in resp.response:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    events += 1
                    obj: dict[str, Any] = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise k8s.ApiException(status=obj.get("code"), reason=obj.get("message"))
                    name = (obj.get("metadata") or {}).get("name")
                    if name and event.get("type") == "DELETED":
                        objects.pop(name, None)
                    elif name:
                        objects[name] = obj
                    if done(objects):
                        return events
            finally:
                resp.response.release_conn()
        except SandboxError:
            raise
        except Exception as exc:  # noqa: BLE001 - a restarted watch recovers from what a starting apiserver answers
            last = exc
            time.sleep(0.1)


def served(api: k8s.ApiClient, group_version: str, plural: str) -> bool:
    """Return True when the discovery document ``/apis/<group_version>`` lists resource ``plural`` (one GET; the
    check controller-runtime envtest's ``WaitForCRDs`` makes)."""
    doc = get_json(api, f"/apis/{group_version}") or {}
    return any(r.get("name") == plural for r in doc.get("resources", []))


def annotations_of(api: k8s.ApiClient, collection: str) -> dict[str, dict[str, str]]:
    """Return ``{name: annotations}`` of every object of the cluster-scoped ``collection`` path (e.g.
    ``/apis/apiextensions.k8s.io/v1/customresourcedefinitions``), fetching metadata only."""
    doc = get_json(api, collection, accept=METADATA_ONLY) or {}
    return {i["metadata"]["name"]: i["metadata"].get("annotations") or {} for i in doc.get("items") or []}


def nodes_ready(api: k8s.ApiClient, names: Iterable[str]) -> bool:
    """Return True when every node in ``names`` exists and reports condition Ready=True."""
    for name in names:
        node = get_json(api, f"/api/v1/nodes/{name}")
        if node is None:
            return False
        conds = {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []}
        if conds.get("Ready") != "True":
            return False
    return True


def names_of(api: k8s.ApiClient, collection: str, label_selector: str) -> list[str]:
    """Return the names of the objects of ``collection`` (a list path) matching ``label_selector`` (metadata only)."""
    doc = get_json(api, f"{collection}?labelSelector={label_selector}", accept=METADATA_ONLY) or {}
    return [i["metadata"]["name"] for i in doc.get("items") or []]


def delete(api: k8s.ApiClient, path: str) -> bool:
    """DELETE the object at ``path``; return False when it did not exist (404). Raises ApiException otherwise."""
    try:
        request_json(api, "DELETE", path)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True
