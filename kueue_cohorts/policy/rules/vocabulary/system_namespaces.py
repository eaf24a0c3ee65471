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
- kserve: the KServe controller (kserve/kserve `config/overlays/all/kustomization.yaml`: `namespace: kserve`);
- default: Kubernetes' (`NamespaceDefault`): every object created without a namespace lands there, so making it a
  tenant would put unrelated workloads under Kueue's webhooks;
- every `kube-*` name (`PROTECTED_PREFIXES`): Kubernetes reserves the prefix for its own and its add-ons'
  namespaces (kube-system, kube-flannel, kube-prometheus, ...), refused whatever the stack says.

Cluster add-ons (`ADD_ON_NAMESPACES`): the namespaces common add-ons install their controllers, operators and
webhooks into (their install manifests or Helm charts' documented namespace): gpu-operator / nvidia-gpu-operator
(NVIDIA GPU Operator), network-operator (NVIDIA Network Operator), cert-manager, istio-system (Istio),
knative-serving / knative-eventing (Knative), kubeflow (Kubeflow platform), calico-system / tigera-operator
(Calico), ingress-nginx, argocd (Argo CD), flux-system (Flux), monitoring (kube-prometheus-stack's usual one),
local-path-storage (local-path-provisioner). Protected by default; a stack that really runs its tenants in one
names it, with a reason, under `allowedAddOnNamespaces` (the pack option of the same name). The stack extends the
protected list with `protectedNamespaces`.
"""
from __future__ import annotations

from typing import Iterable

__all__ = ["DEFAULT_PROTECTED_NAMESPACES", "PROTECTED_PREFIXES", "ADD_ON_NAMESPACES", "protected_namespaces",
           "always_protected"]

DEFAULT_PROTECTED_NAMESPACES: tuple[str, ...] = (
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "kueue-system",
    "jobset-system",
    "kubeflow-system",
    "kserve",
    "default",
)
"""Namespaces no stack may make a Kueue tenant by default (sources in the module docstring)."""

PROTECTED_PREFIXES: tuple[str, ...] = ("kube-",)
"""Name prefixes no stack may make a Kueue tenant, ever (Kubernetes reserves `kube-`)."""

ADD_ON_NAMESPACES: tuple[str, ...] = (
    "gpu-operator",
    "nvidia-gpu-operator",
    "network-operator",
    "cert-manager",
    "istio-system",
    "knative-serving",
    "knative-eventing",
    "kubeflow",
    "calico-system",
    "tigera-operator",
    "ingress-nginx",
    "argocd",
    "flux-system",
    "monitoring",
    "local-path-storage",
)
"""Namespaces of common cluster add-ons, protected unless a stack allows one with a reason (module docstring)."""


def always_protected(name: str) -> bool:
    """Whether ``name`` is protected whatever a stack says: one of DEFAULT_PROTECTED_NAMESPACES or a name with a
    PROTECTED_PREFIXES prefix (``default``, ``kube-system``, ``kube-flannel``, ``kueue-system``, ...)."""
    return name in DEFAULT_PROTECTED_NAMESPACES or name.startswith(PROTECTED_PREFIXES)


def protected_namespaces(extra: Iterable[str] = (), allowed_add_ons: Iterable[str] = (),
                         mentioned: Iterable[str] = ()) -> tuple[str, ...]:
    """The protected namespace names a stack is judged with, in order, without repeats.

    Args:
        extra: the stack's own additions (``protectedNamespaces``, Kueue's namespace).
        allowed_add_ons: add-on namespaces the stack allows as tenants (``allowedAddOnNamespaces``); a name that is
            not in ADD_ON_NAMESPACES changes nothing (the always-protected ones stay protected).
        mentioned: namespace names the stack's objects mention; those with a PROTECTED_PREFIXES prefix are added
            (a prefix cannot be listed name by name otherwise).
    Returns:
        DEFAULT_PROTECTED_NAMESPACES, the ADD_ON_NAMESPACES not allowed, ``extra``, the prefixed ``mentioned``.
    """
    allowed = set(allowed_add_ons)
    names = [*DEFAULT_PROTECTED_NAMESPACES, *(n for n in ADD_ON_NAMESPACES if n not in allowed), *extra,
             *(n for n in mentioned if n.startswith(PROTECTED_PREFIXES))]
    return tuple(dict.fromkeys(names))
