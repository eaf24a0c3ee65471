"""The JobSet and Kubeflow Trainer controller managers out of cluster: their Configurations, webhooks and argv.

Both are the upstream managers (``sigs.k8s.io/jobset`` ``main.go`` and
``github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager``), built by the toolchain at the versions Kueue
0.19.2 is built against, and run the way the sandbox runs Kueue's manager:

* leader election off, internal certificate management off (``internalCertManagement.enable`` /
  ``certManagement.enable: false``), so neither looks for its Service, Secret or in-cluster webhook
  configuration names;
* the webhook server on ``127.0.0.1:<port>`` with the sandbox's loopback serving pair (the same ``tls.crt`` /
  ``tls.key`` as Kueue's, SAN 127.0.0.1, signed by the sandbox CA); the apiserver reaches it through the upstream
  webhook configurations rewritten by :mod:`sandbox.webhooks`;
* metrics off (``bindAddress: "0"``), health probes on loopback.

JobSet reads ``webhook.certDir`` from its Configuration. The Trainer's Configuration has no certDir, and
controller-runtime then reads ``$TMPDIR/k8s-webhook-server/serving-certs`` (``os.TempDir()``,
``pkg/webhook/server.go``), so the Trainer runs with ``TMPDIR`` pointing at a directory of its own in the state dir
that holds a copy of the pair.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from kueue_cohorts.sandbox import files, webhooks
from kueue_cohorts.sandbox.ports import LOOPBACK

#: Where the JobSet module keeps its webhook kustomization, and the install overlay's namePrefix
#: (``config/default/kustomization.yaml``).
JOBSET_WEBHOOK_DIR = "config/components/webhook"
JOBSET_NAME_PREFIX = "jobset-"
#: Where the Trainer module keeps its webhook kustomization; its patches set the final names
#: ``defaulter.trainer.kubeflow.org`` / ``validator.trainer.kubeflow.org``.
TRAINER_WEBHOOK_DIR = "manifests/base/webhook"
#: controller-runtime's default webhook cert directory below os.TempDir().
CERTS_BELOW_TMPDIR = Path("k8s-webhook-server") / "serving-certs"


def jobset_configuration(ports: Mapping[str, int], cert_dir: Path) -> dict[str, Any]:
    """Return JobSet's ``config.jobset.x-k8s.io/v1alpha1`` Configuration for the out-of-cluster manager.

    ``ports`` needs ``jobset-webhook`` and ``jobset-health``; ``cert_dir`` holds ``tls.crt``/``tls.key``. Fields
    follow ``api/config/v1alpha1/configuration_types.go`` of JobSet v0.12.0.
    """
    return {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": LOOPBACK, "port": ports["jobset-webhook"], "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"{LOOPBACK}:{ports['jobset-health']}"},
        "metrics": {"bindAddress": "0"},
    }


def trainer_configuration(ports: Mapping[str, int]) -> dict[str, Any]:
    """Return the Trainer's ``config.trainer.kubeflow.org/v1alpha1`` Configuration for the out-of-cluster manager.

    ``ports`` needs ``trainer-webhook`` and ``trainer-health``. Fields follow
    ``pkg/apis/config/v1alpha1/configuration_types.go`` of Kubeflow Trainer v2.2.1 (leader election is off when
    ``leaderElection`` is absent).
    """
    return {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "certManagement": {"enable": False},
        "webhook": {"host": LOOPBACK, "port": ports["trainer-webhook"]},
        "health": {"healthProbeBindAddress": f"{LOOPBACK}:{ports['trainer-health']}"},
        "metrics": {"bindAddress": "0", "secureServing": False},
    }


def jobset_webhooks(module_dir: Path, port: int, ca_bundle_pem: bytes) -> list[dict[str, Any]]:
    """Return JobSet's Mutating/ValidatingWebhookConfigurations (``jobset-…``) on ``127.0.0.1:port``, with the
    module's patches (the Pod webhooks only see Pods labelled ``jobset.sigs.k8s.io/jobset-name``)."""
    return webhooks.from_kustomization(module_dir / JOBSET_WEBHOOK_DIR, port, ca_bundle_pem, JOBSET_NAME_PREFIX,
                                       {"app.kubernetes.io/name": "jobset"})


def trainer_webhooks(module_dir: Path, port: int, ca_bundle_pem: bytes) -> list[dict[str, Any]]:
    """Return the Trainer's ``defaulter.trainer.kubeflow.org`` / ``validator.trainer.kubeflow.org`` on
    ``127.0.0.1:port`` (TrainJob defaulting and validation; TrainingRuntime and ClusterTrainingRuntime
    validation)."""
    return webhooks.from_kustomization(module_dir / TRAINER_WEBHOOK_DIR, port, ca_bundle_pem, "",
                                       {"app.kubernetes.io/name": "trainer"})


def trainer_tmpdir(root: Path, webhook_cert_dir: Path) -> Path:
    """Create ``root`` with ``k8s-webhook-server/serving-certs/tls.{crt,key}`` copied from ``webhook_cert_dir``
    and return it (the Trainer's ``TMPDIR``): directories 0700, the key 0600 from its first byte. Raises
    FileNotFoundError when the pair is missing."""
    target = root / CERTS_BELOW_TMPDIR
    files.private_dir(target)
    for d in (root, root / CERTS_BELOW_TMPDIR.parent):
        files.private_dir(d)
    for name in ("tls.crt", "tls.key"):
        files.copy_file(webhook_cert_dir / name, target / name, private=name.endswith(".key"))
    return root


def manager_args(binary: Path, config: Path, kubeconfig: Path) -> list[str]:
    """Return the argv of either manager: ``--config``, ``--kubeconfig`` (controller-runtime's flag) and info-level
    zap logs."""
    return [str(binary), f"--config={config}", f"--kubeconfig={kubeconfig}", "--zap-log-level=info"]
