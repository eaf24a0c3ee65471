"""KServe's controller manager out of cluster, in RawDeployment mode: its ConfigMap, runtimes, webhooks and argv.

The manager is upstream's ``cmd/manager`` of ``github.com/kserve/kserve`` v0.16.0, the module whose CRDs the
sandbox installs (``[crds.kserve]`` and ``[crds.kserve-controller]`` of toolchain/versions.toml), built by the
toolchain (``[binaries.kserve]``). What its ``main.go`` needs, and how the sandbox gives it:

* the ConfigMap ``inferenceservice-config`` in ``$POD_NAMESPACE`` (default ``kserve``,
  ``pkg/constants/constants.go``): read once at start (``deploy``, ``ingress``, ``multiNode``; the manager exits
  when it is missing or a key does not parse) and again on every reconcile (``inferenceService``, ``explainers``,
  ...). The sandbox applies upstream's own ``config/configmap/inferenceservice.yaml`` with one key changed:
  ``deploy: {"defaultDeploymentMode": "RawDeployment"}`` (``NewDeployConfig`` in
  ``pkg/apis/serving/v1beta1/configmap.go`` turns the legacy name into ``Standard``: plain Deployments, Services,
  HPAs and Ingresses, no Knative). Every other key stays upstream's, so the defaulting below is a real install's;
* the webhooks, which it always serves (``main.go`` registers them unconditionally, and ``/readyz`` is the webhook
  server's started check). They are installed too, from upstream's ``config/webhook`` kustomization pointed at
  loopback (:mod:`sandbox.webhooks`): the InferenceService defaulter and validator (the defaulter writes the
  deployment-mode annotation, the predictor's resource defaults from ``inferenceService.resource`` and the
  protocol; a real install runs it with failurePolicy Fail, so a stack's InferenceService is judged here as it
  will be there), the ServingRuntime / ClusterServingRuntime / TrainedModel / InferenceGraph / LocalModelCache
  validators and the pod mutator (storage initializer, agent, batcher; only Pods labelled
  ``serving.kserve.io/inferenceservice``). kwok never runs the pods, so what the pod mutator injects only matters
  to Kueue's accounting, as on a real cluster;
* the webhook server: ``--webhook-port`` only (no host flag: it listens on every interface of the port) and no cert
  directory flag, so controller-runtime reads ``$TMPDIR/k8s-webhook-server/serving-certs`` (``os.TempDir()``,
  ``pkg/webhook/server.go``): the manager runs with ``TMPDIR`` pointing at a copy of the sandbox's loopback pair,
  as the Trainer does (:func:`sandbox.jobcontrollers.trainer_tmpdir`);
* leader election off (``--leader-elect`` defaults to false), metrics off (``--metrics-addr=0``), health probes on
  loopback (``--health-probe-addr``), ``--kubeconfig`` (controller-runtime's flag) with the admin kubeconfig;
* the CRDs its watches and cached reads need, which must be served before it starts: InferenceService,
  ServingRuntime, ClusterServingRuntime, TrainedModel, InferenceGraph, LocalModelCache, ClusterStorageContainer
  (it exits when an informer cannot sync);
* upstream's ClusterServingRuntimes (``config/runtimes``): the controller picks the runtime of a predictor that
  names only a model format (``huggingface`` -> ``kserve-huggingfaceserver``) from them, and fails the
  reconcile when none supports the format. Applied once the manager serves their validating webhook.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import yaml

from kueue_cohorts.sandbox import webhooks
from kueue_cohorts.sandbox.apply import SAFE_LOADER
from kueue_cohorts.sandbox.ports import LOOPBACK

#: KServe's namespace (``constants.KServeNamespace``: ``$POD_NAMESPACE``, default ``kserve``).
NAMESPACE = "kserve"
#: The ConfigMap the manager reads (``constants.InferenceServiceConfigMapName``) and its upstream file.
CONFIG_MAP = "inferenceservice-config"
CONFIG_MAP_FILE = "config/configmap/inferenceservice.yaml"
#: The deployment mode the sandbox runs (the ``deploy`` key of the ConfigMap).
DEPLOY = {"defaultDeploymentMode": "RawDeployment"}
#: Upstream's webhook kustomization (``manifests.yaml``: final names, no patches) and its ClusterServingRuntimes.
WEBHOOK_DIR = "config/webhook"
RUNTIMES_DIR = "config/runtimes"
#: Label on the webhook configurations the sandbox applies.
LABELS = {"app.kubernetes.io/name": "kserve"}


def config_map(module_dir: Path) -> dict[str, Any]:
    """Return upstream's ``inferenceservice-config`` ConfigMap (``config/configmap/inferenceservice.yaml`` of the
    module at ``module_dir``) in :data:`NAMESPACE`, with ``data.deploy`` = :data:`DEPLOY` and metadata reduced to
    name and namespace. Raises KeyError when the file has no such ConfigMap or no ``data.deploy`` key (an upstream
    layout change: the manager would read another default mode)."""
    docs = yaml.load_all((module_dir / CONFIG_MAP_FILE).read_text(), Loader=SAFE_LOADER)
    [cm] = [d for d in docs if d and d.get("kind") == "ConfigMap" and d["metadata"]["name"] == CONFIG_MAP]
    data = dict(cm["data"])
    if "deploy" not in data:
        raise KeyError(f"{CONFIG_MAP_FILE} has no data.deploy key (upstream layout changed)")
    data["deploy"] = json.dumps(DEPLOY)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
            "data": data}


def webhook_configurations(module_dir: Path, port: int, ca_bundle_pem: bytes) -> list[dict[str, Any]]:
    """Return KServe's Mutating/ValidatingWebhookConfigurations (``inferenceservice.serving.kserve.io``, ...)
    pointed at ``https://127.0.0.1:port`` with ``ca_bundle_pem`` (see :func:`sandbox.webhooks.from_kustomization`)."""
    return webhooks.from_kustomization(module_dir / WEBHOOK_DIR, port, ca_bundle_pem, "", LABELS)


def serving_runtimes(module_dir: Path) -> list[dict[str, Any]]:
    """Return upstream's ClusterServingRuntimes (``config/runtimes/kustomization.yaml`` ``resources``, in order)
    with its ``images`` substitutions applied to the containers (``name`` -> ``newName:newTag``, as
    ``kustomize build`` does). The images are never pulled (kwok); they are substituted so the objects are the ones
    a real install has."""
    root = module_dir / RUNTIMES_DIR
    kust = yaml.load((root / "kustomization.yaml").read_text(), Loader=SAFE_LOADER)
    images: dict[str, str] = {}
    for image in kust.get("images", []):
        new_name = image.get("newName", image["name"])
        images[image["name"]] = f"{new_name}:{image['newTag']}" if "newTag" in image else new_name
    out: list[dict[str, Any]] = []
    for res in kust.get("resources", []):
        for doc in yaml.load_all((root / res).read_text(), Loader=SAFE_LOADER):
            if not doc or doc.get("kind") != "ClusterServingRuntime":
                continue
            for container in doc["spec"].get("containers", []):
                name, _, _tag = container["image"].partition(":")
                if name in images:
                    container["image"] = images[name]
            out.append(doc)
    return out


def manager_args(binary: Path, kubeconfig: Path, ports: Mapping[str, int]) -> list[str]:
    """Return the manager's argv: ``ports`` needs ``kserve-webhook`` and ``kserve-health``. Flags of
    ``cmd/manager/main.go`` (v0.16.0) plus controller-runtime's ``--kubeconfig`` and zap's ``--zap-log-level``."""
    return [str(binary), f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--metrics-addr=0",
            f"--webhook-port={ports['kserve-webhook']}", f"--health-probe-addr={LOOPBACK}:{ports['kserve-health']}",
            "--zap-log-level=info"]


def manager_env(tmpdir: Path) -> dict[str, str]:
    """The manager's extra environment: ``POD_NAMESPACE`` (where it reads its ConfigMap) and ``TMPDIR`` (where
    controller-runtime finds the webhook serving pair, see :func:`sandbox.jobcontrollers.trainer_tmpdir`)."""
    return {"POD_NAMESPACE": NAMESPACE, "TMPDIR": str(tmpdir)}
