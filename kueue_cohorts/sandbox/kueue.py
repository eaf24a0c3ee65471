"""The Kueue manager out of cluster: its Configuration, its webhooks and conversion webhooks on loopback, its argv.

What an in-cluster install gets from the Service, the cert Secret and the volume mounts is done here the way
controller-runtime envtest does it for Kueue's own integration tests (``pkg/envtest/webhook.go``):

* the webhook configurations of the Kueue module (``config/components/webhook/manifests.yaml``) are rewritten from
  ``clientConfig.service`` to ``clientConfig.url: https://127.0.0.1:<port><path>`` with our CA as ``caBundle``,
  named ``kueue-…`` as the installers do, and given the namespaceSelector the module's kustomization adds;
* the CRDs that the module's ``config/components/crd/kustomization.yaml`` patches with a conversion webhook get
  the same patch pointing at ``https://127.0.0.1:<port>/convert``;
* ``internalCertManagement.enable: false`` with ``webhook.certDir`` holding our ``tls.crt``/``tls.key``.

Kueue v0.19.2 then still opens ``/etc/kueue/metrics/certs/tls.{crt,key}``, a path hard-coded in
``cmd/kueue/main.go`` (exits when missing, whatever ``metrics.bindAddress`` says). Rather than writing into the
host's /etc, the manager runs in a private mount namespace (``unshare``) in which /etc is an overlay whose upper
layer, inside the sandbox state directory, holds those two files. Nothing outside the state dir changes and the
mount disappears with the process. The visibility API server (``/visibility`` certs, another hard-coded path) is
switched off with feature gate ``VisibilityOnDemand: false``.
"""

from __future__ import annotations

import base64
import copy
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from kueue_cohorts.components.model.manager_config import metrics_configuration
from kueue_cohorts.components.settings import KueueMetrics
from kueue_cohorts.sandbox import files, webhooks
from kueue_cohorts.sandbox.apply import SAFE_LOADER
from kueue_cohorts.sandbox.ports import LOOPBACK

NAMESPACE = "kueue-system"
#: The job integrations the sandbox enables (Kueue ``integrations.frameworks`` names).
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod", "deployment")
WEBHOOK_MANIFESTS = "config/components/webhook/manifests.yaml"
WEBHOOK_KUSTOMIZATION = "config/components/webhook/kustomization.yaml"
CRD_KUSTOMIZATION = "config/components/crd/kustomization.yaml"
#: Hard-coded in cmd/kueue/main.go (v0.19.2) for internalCertManagement.enable=false.
METRICS_CERT_PATH = Path("/etc/kueue/metrics/certs")
#: Wait for PodsReady, deliberately: on in Kueue 0.19 anyway (default timeout 30m). kwok makes Pods Ready within
#: seconds, so a workload that is not Ready after this timeout is stuck for a real reason (quota larger than the
#: nodes can hold) and gets evicted and requeued. blockAdmission stays false so admissions are not serialised.
WAIT_FOR_PODS_READY = {
    "timeout": "5m",
    "blockAdmission": False,
    "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 10, "backoffMaxSeconds": 300},
}


def configuration(ports: Mapping[str, int], webhook_cert_dir: Path,
                  frameworks: Iterable[str] = FRAMEWORKS, metrics: KueueMetrics = KueueMetrics()) -> dict[str, Any]:
    """Return the Kueue ``Configuration`` (``config.kueue.x-k8s.io/v1beta2``) for the out-of-cluster manager.

    ``ports`` needs ``kueue-webhook``, ``kueue-health`` and ``kueue-metrics``; ``metrics``: the stack's
    ``kueue.metrics`` (enableClusterQueueResources, localQueueMetrics), rendered as the stack's own manager
    Configuration renders them (``components.model.manager_config.metrics_configuration``). Field names and defaults
    follow
    ``apis/config/v1beta2/configuration_types.go`` / ``defaults.go`` of Kueue v0.19.2.
    """
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": LOOPBACK, "port": ports["kueue-webhook"], "certDir": str(webhook_cert_dir)},
        "health": {"healthProbeBindAddress": f"{LOOPBACK}:{ports['kueue-health']}"},
        "metrics": {"bindAddress": f"{LOOPBACK}:{ports['kueue-metrics']}", **metrics_configuration(metrics)},
        "waitForPodsReady": copy.deepcopy(WAIT_FOR_PODS_READY),
        "integrations": {"frameworks": list(frameworks)},
        "featureGates": {"VisibilityOnDemand": False},
    }


def _namespace_selector_patch(kustomization: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Return ``{webhook name: namespaceSelector}`` as the module's webhook kustomization sets them (its patch on
    ``vpod.kb.io`` and the replacements copying that selector to the other job webhooks). Raises KeyError when a
    replacement has no selector to copy (the module layout changed)."""
    selectors: dict[str, dict[str, Any]] = {}
    source: dict[str, Any] | None = None
    for patch in kustomization.get("patches", []):
        doc = yaml.safe_load(patch["patch"]) if "patch" in patch else None
        for hook in (doc or {}).get("webhooks", []):
            if "namespaceSelector" in hook:
                selectors[hook["name"]] = hook["namespaceSelector"]
                source = hook["namespaceSelector"]
    for replacement in kustomization.get("replacements", []):
        src = replacement["source"]["fieldPath"]  # webhooks.[name=vpod.kb.io].namespaceSelector
        name = src.split("[name=", 1)[1].split("]", 1)[0]
        value = selectors.get(name, source)
        if value is None:  # a null namespaceSelector would put the webhook on every namespace: the layout changed
            raise KeyError(f"{WEBHOOK_KUSTOMIZATION}: no namespaceSelector of webhook {name} to copy ({src})")
        for target in replacement.get("targets", []):
            for field in target.get("fieldPaths", []):
                selectors[field.split("[name=", 1)[1].split("]", 1)[0]] = value
    return selectors


def webhook_configurations(module_dir: Path, port: int, ca_bundle_pem: bytes) -> list[dict[str, Any]]:
    """Return Kueue's Mutating/ValidatingWebhookConfigurations rewritten for a manager on ``127.0.0.1:port``.

    Reads ``config/components/webhook/{manifests,kustomization}.yaml`` of the Kueue module at ``module_dir``.
    Each ``clientConfig.service {path}`` becomes ``clientConfig.url``; ``caBundle`` is ``ca_bundle_pem``
    (base64-encoded); names get the installers' ``kueue-`` prefix. Raises KeyError on a webhook without a
    service path (the module layout changed).
    """
    kustomization = yaml.load((module_dir / WEBHOOK_KUSTOMIZATION).read_text(), Loader=SAFE_LOADER)
    selectors = _namespace_selector_patch(kustomization)
    out = []
    for doc in yaml.load_all((module_dir / WEBHOOK_MANIFESTS).read_text(), Loader=SAFE_LOADER):
        if not doc or doc.get("kind") not in webhooks.KINDS:
            continue
        doc = webhooks.to_loopback(doc, port, ca_bundle_pem, f"kueue-{doc['metadata']['name']}",
                                   {"app.kubernetes.io/name": "kueue"})
        for hook in doc["webhooks"]:
            if hook["name"] in selectors:
                hook["namespaceSelector"] = copy.deepcopy(selectors[hook["name"]])
        out.append(doc)
    return out


def conversion_webhook_crds(module_dir: Path) -> set[str]:
    """Return the CRD names that the Kueue module's CRD kustomization patches with a conversion webhook
    (v0.19.2: localqueues, clusterqueues, cohorts, workloads, multikueueclusters ``.kueue.x-k8s.io``)."""
    base = module_dir / Path(CRD_KUSTOMIZATION).parent
    names = set()
    for patch in yaml.load((module_dir / CRD_KUSTOMIZATION).read_text(), Loader=SAFE_LOADER).get("patches", []):
        if "path" not in patch:
            continue
        doc = yaml.load((base / patch["path"]).read_text(), Loader=SAFE_LOADER)
        if doc.get("spec", {}).get("conversion", {}).get("strategy") == "Webhook":
            names.add(doc["metadata"]["name"])
    return names


def with_conversion_webhook(crd: Mapping[str, Any], port: int, ca_bundle_pem: bytes) -> dict[str, Any]:
    """Return a copy of ``crd`` with ``spec.conversion`` = Webhook at ``https://127.0.0.1:<port>/convert``."""

    out = copy.deepcopy(dict(crd))
    out["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"url": webhooks.url(port, "/convert"),
                             "caBundle": base64.b64encode(ca_bundle_pem).decode()},
            "conversionReviewVersions": ["v1"],
        },
    }
    return out


def prepare_etc_overlay(root: Path, metrics_cert_dir: Path) -> tuple[Path, Path]:
    """Create ``root/upper/kueue/metrics/certs/tls.{crt,key}`` (copies from ``metrics_cert_dir``) and an empty
    ``root/work``; return ``(upper, work)`` for the overlay mounted on /etc. Raises FileNotFoundError when the
    metrics pair is missing. The key is written 0600 from its first byte; every directory is 0700."""
    upper, work = root / "upper", root / "work"
    target = upper / METRICS_CERT_PATH.relative_to("/etc")
    for d in (root, upper, upper / "kueue", upper / "kueue" / "metrics", target):  # 0700, also if made 0755 before
        files.private_dir(d)
    for name in ("tls.crt", "tls.key"):
        files.copy_file(metrics_cert_dir / name, target / name, private=name.endswith(".key"))
    if work.exists():
        shutil.rmtree(work, ignore_errors=True)
    files.private_dir(work)
    return upper, work


def manager_args(binary: Path, config: Path, kubeconfig: Path, upper: Path, work: Path,
                 unshare: str = "unshare", as_root: bool | None = None) -> list[str]:
    """Return the argv that runs the Kueue manager with /etc overlaid by ``upper`` in a private mount namespace.

    As root only a mount namespace is needed; otherwise a user namespace maps the caller to root in it
    (``unshare --user --map-root-user``, needs unprivileged user namespaces). ``sh`` mounts the overlay and then
    ``exec``s the manager (no fork: ``stop`` signals the process group; ``process.restarting`` wraps this argv).
    """
    as_root = os.geteuid() == 0 if as_root is None else as_root
    ns = ["--mount", "--propagation", "private"] if as_root else ["--user", "--map-root-user", "--mount",
                                                                   "--propagation", "private"]
    script = 'mount -t overlay overlay -o "$1" /etc && shift && exec "$@"'
    options = f"lowerdir=/etc,upperdir={upper},workdir={work}"
    return [unshare, *ns, "sh", "-ec", script, "sh", options,
            str(binary), f"--config={config}", f"--kubeconfig={kubeconfig}", "--zap-log-level=2"]


def delayed(argv: list[str], seconds: float) -> list[str]:
    """Return ``argv`` unchanged when ``seconds`` <= 0, else wrapped so that it starts ``seconds`` later:
    ``sh -c 'sleep N; echo ...; exec "$@"'``. The shell ``exec``s the command, so the recorded pid (and process
    group) is the command's, and the log gets a line when the wait is over (``python -m kueue_cohorts.sandbox up
    --kueue-delay``).
    """
    if seconds <= 0:
        return list(argv)
    script = 'sleep "$1"; shift; echo "=== kueue-delay over at $(date -u +%Y-%m-%dT%H:%M:%SZ): starting"; exec "$@"'
    return ["sh", "-c", script, "sh", f"{seconds:g}", *argv]
