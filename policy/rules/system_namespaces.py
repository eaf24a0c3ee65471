"""The namespaces no stack may make a Kueue tenant by default: those of Kubernetes itself and of the controllers the
stacks run on. A stack extends the list (a Kueue installed elsewhere, a platform namespace); the settings layer and
the pack's `namespaces.check_protected_namespaces` read the same default. No SDK is loaded here.

Sources (the namespace each project's install manifests use):
- kube-system, kube-public, kube-node-lease: Kubernetes (k8s.io/api core/v1 `NamespaceSystem`, `NamespacePublic`,
  `NamespaceNodeLease`);
- kueue-system: Kueue (kubernetes-sigs/kueue `config/default/kustomization.yaml`: `namespace: kueue-system`);
- jobset-system: the JobSet controller (kubernetes-sigs/jobset `config/default/kustomization.yaml`:
  `namespace: jobset-system`);
- kubeflow-system: the Kubeflow Trainer v2 controller (kubeflow/trainer `manifests/overlays/manager/kustomization.yaml`
  and `namespace.yaml`: `namespace: kubeflow-system`);
- kserve: the KServe controller (kserve/kserve `config/overlays/all/kustomization.yaml`: `namespace: kserve`).
"""
from __future__ import annotations

__all__ = ["DEFAULT_PROTECTED_NAMESPACES"]

DEFAULT_PROTECTED_NAMESPACES: tuple[str, ...] = (
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "kueue-system",
    "jobset-system",
    "kubeflow-system",
    "kserve",
)
"""Namespaces no stack may make a Kueue tenant by default (sources in the module docstring)."""
