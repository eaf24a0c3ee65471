"""Admission webhook configurations of an upstream Go module, pointed at a controller served on loopback.

An in-cluster install reaches a controller's webhook server through a Service; out of cluster the apiserver calls
``clientConfig.url: https://127.0.0.1:<port><path>`` instead, trusting our CA through ``caBundle``, as
controller-runtime's envtest does (``pkg/envtest/webhook.go``). Upstream ships the configurations as kubebuilder
output (``manifests.yaml``) plus a kustomization whose JSON 6902 patches (RFC 6902) rename them or narrow their
selectors; :func:`from_kustomization` applies those patches with the ``jsonpatch`` library before rewriting.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any, Mapping

import jsonpatch
import yaml

from kueue_cohorts.sandbox.apply import SAFE_LOADER
from kueue_cohorts.sandbox.ports import LOOPBACK

KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def url(port: int, path: str) -> str:
    """Return ``https://127.0.0.1:<port><path>`` (``path`` starts with '/')."""
    return f"https://{LOOPBACK}:{port}{path}"


def to_loopback(config: Mapping[str, Any], port: int, ca_bundle_pem: bytes, name: str,
                labels: Mapping[str, str]) -> dict[str, Any]:
    """Return a copy of one Mutating/ValidatingWebhookConfiguration with every ``clientConfig.service {path}``
    turned into ``clientConfig.url`` on ``127.0.0.1:port`` and ``caBundle`` = ``ca_bundle_pem`` (PEM bytes, stored
    base64-encoded); ``metadata`` becomes ``{name, labels}``. Raises KeyError on a webhook without a service path.
    """
    out = copy.deepcopy(dict(config))
    out["metadata"] = {"name": name, "labels": dict(labels)}
    ca = base64.b64encode(ca_bundle_pem).decode()
    for hook in out["webhooks"]:
        hook["clientConfig"] = {"url": url(port, hook["clientConfig"]["service"]["path"]), "caBundle": ca}
    return out


def _targets(patch_entry: Mapping[str, Any], doc: Mapping[str, Any]) -> bool:
    target = patch_entry.get("target", {})
    return bool(target.get("kind", doc["kind"]) == doc["kind"]
                and target.get("name", doc["metadata"]["name"]) == doc["metadata"]["name"])


def from_kustomization(kustomization_dir: Path, port: int, ca_bundle_pem: bytes, name_prefix: str,
                       labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """Return the webhook configurations of ``kustomization_dir`` (a directory with ``kustomization.yaml`` whose
    ``resources`` include the kubebuilder ``manifests.yaml``), patched and pointed at ``127.0.0.1:port``.

    Every ``patches[]`` entry with a ``path`` is applied as a JSON 6902 patch to the configurations its ``target``
    selects (kind, and name when given), in file order, as ``kustomize build`` does. The result is named
    ``name_prefix + metadata.name`` after patching (the ``namePrefix`` of the install overlay, e.g. JobSet's
    ``jobset-``; ``""`` where a patch sets the final name, as Trainer's do). Strategic-merge patches
    (``patch:`` inline) are not handled and raise ValueError, so a changed upstream layout fails loudly.
    """
    kust = yaml.load((kustomization_dir / "kustomization.yaml").read_text(), Loader=SAFE_LOADER)
    docs = []
    for res in kust.get("resources", []):
        for doc in yaml.load_all((kustomization_dir / res).read_text(), Loader=SAFE_LOADER):
            if doc and doc.get("kind") in KINDS:
                docs.append(doc)
    for entry in kust.get("patches", []):
        if "path" not in entry:
            raise ValueError(f"{kustomization_dir}/kustomization.yaml: only JSON 6902 patch files are handled")
        ops = yaml.load((kustomization_dir / entry["path"]).read_text(), Loader=SAFE_LOADER)
        docs = [jsonpatch.apply_patch(d, ops) if _targets(entry, d) else d for d in docs]
    return [to_loopback(d, port, ca_bundle_pem, name_prefix + d["metadata"]["name"], labels) for d in docs]
