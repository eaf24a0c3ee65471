"""The root of the stack config: `Settings`, one frozen object for the whole `kueue-cohorts:*` namespace.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Optional

from pydantic import (
    Field,
    model_validator,
)

from kueue_cohorts.components.settings import quantity
from kueue_cohorts.components.settings.admission import AddOnNamespaceAllowance, AdmissionSettings
from kueue_cohorts.components.settings.asymmetric import InferenceTrainingSettings
from kueue_cohorts.components.settings.base import DnsLabel, Model
from kueue_cohorts.components.settings.cluster import ClusterSettings, NodePool
from kueue_cohorts.components.settings.flavors import FlavorDeclaration, ResourceFlavorSettings
from kueue_cohorts.components.settings.kueue import KueueSettings
from kueue_cohorts.components.settings.monitoring import MonitoringSettings
from kueue_cohorts.components.settings.multikueue import MultiKueueSettings
from kueue_cohorts.components.settings.preview import PreviewIdentitySettings
from kueue_cohorts.components.settings.runtime import (
    TrainingRuntimeSettings,
)
from kueue_cohorts.components.settings.symmetric import SharedPoolSettings
from kueue_cohorts.components.settings.whatif import WhatIfSettings

# --- the root --------------------------------------------------------------------------------------------------------


def training_covered(layout: InferenceTrainingSettings) -> list[str]:
    """The training ClusterQueue's coveredResources: the nominalQuota keys of the inference side (nominalQuota, or
    every flavor's), first-seen order, as components.model.plans.plan_inference_training covers both ClusterQueues."""
    inference = layout.inference
    quotas = [inference.nominal_quota or {}] + [f.nominal_quota for f in inference.flavors or []]
    return list(dict.fromkeys(resource for quota in quotas for resource in quota))


class Settings(Model):
    """Everything a stack config says, validated. Keys are `kueue-cohorts:<camelCaseName>`."""

    cluster: ClusterSettings = ClusterSettings()
    """Where the stack's objects go."""
    node_pools: list[NodePool] = Field(min_length=1)
    """The physical capacity (>= 1 pool); the sandbox builds its nodes from it."""
    resource_flavor: ResourceFlavorSettings = ResourceFlavorSettings()
    """The stack's one ResourceFlavor (stacks with one GPU type)."""
    resource_flavors: Optional[list[FlavorDeclaration]] = Field(default=None, min_length=1)
    """The ResourceFlavors of a stack with several GPU types (instead of resourceFlavor), in the stack's
    declared order; each node pool names its flavor. Omitted: the one resourceFlavor."""
    inference_training: Optional[InferenceTrainingSettings] = None
    """The asymmetric layout: inference owns the quota, training borrows it. At least one layout per stack."""
    shared_pool: Optional[SharedPoolSettings] = None
    """The symmetric layout: every tenant a floor plus borrowing."""
    kueue: KueueSettings = KueueSettings()
    """Kueue itself: installation and manager Configuration."""
    training_runtime: Optional[TrainingRuntimeSettings] = None
    """The PreemptibleTrainingRuntime (Kubeflow Trainer v2.2 TrainingRuntime) in every training namespace; needs
    inferenceTraining.training.checkpoint and the trainjob integration; `{image: <your image>}` takes every other
    default."""
    protected: bool = False
    """The stack guards real resources: `kueue-cohorts` refuses it a local file backend, the dev passphrase and
    `--no-policy`, before any engine call. A stack of cluster mode kubeconfig is protected unless its stack file
    writes `protected: false` explicitly (a lab or kind cluster with `pulumi login --local`; every run then prints a
    warning line); a stack named prod or production (also as a part: eu-prod) stays protected whatever this says.
    Default false (sandbox and render stacks)."""
    protected_namespaces: list[DnsLabel] = Field(default_factory=list)
    """Namespaces that never become tenant namespaces, in addition to default, every kube-* name, Kueue's namespace,
    jobset-system, kubeflow-system, kserve (the system namespaces of the controllers the stack relies on) and the
    cluster add-ons' namespaces (gpu-operator, nvidia-gpu-operator, network-operator, cert-manager, istio-system,
    knative-serving, knative-eventing, kubeflow, calico-system, tigera-operator, ingress-nginx, argocd,
    flux-system, monitoring, local-path-storage). Default none."""
    allowed_add_on_namespaces: list[AddOnNamespaceAllowance] = Field(default_factory=list)
    """Cluster add-on namespaces (the list under protectedNamespaces) this stack may use as tenant namespaces after
    all, each with the reason. default, kube-* and the controllers' namespaces can never be allowed. Default none."""
    admission: AdmissionSettings = AdmissionSettings()
    """The in-cluster guardrails (ValidatingAdmissionPolicies generated from the rule book) and who runs the
    stack. Default: validationActions [Deny], the sandbox's admin."""
    preview_identity: Optional[PreviewIdentitySettings] = None
    """The read-only identity of the pull-request live preview: the stack registers its RBAC (get, list, watch on
    exactly the kinds the stack manages) and, for a ServiceAccount, the account and its namespace. Omitted: none."""
    multi_kueue: Optional[MultiKueueSettings] = None
    """MultiKueue (kueue.x-k8s.io/v1beta2, Beta and on by default in Kueue 0.19): the stack's cluster is the manager;
    the dispatching ClusterQueues get a MultiKueue AdmissionCheck and every worker cluster gets the stack's cohorts,
    LocalQueues, namespaces and runtime, and the ServiceAccount the manager's Kueue acts as (docs/multikueue.md).
    Omitted: one cluster."""
    monitoring: MonitoringSettings = MonitoringSettings()
    """The alerts and the dashboard generated from the stack: thresholds, namespace, labels, runbook. Default: the
    thresholds above, namespace monitoring."""
    whatif: Optional[WhatIfSettings] = None
    """The what-if section of the pull-request summary: a demand trace replayed against the base and the head
    quotas. Omitted: no what-if section."""

    @model_validator(mode="after")
    def _runtime_limits(self) -> Settings:
        """Resolve an omitted trainingRuntime.limits once, against the training ClusterQueue's covered resources
        (TrainingRuntimeSettings.with_accelerators): every reader then sees the same limits."""
        if self.training_runtime is not None and self.inference_training is not None:
            object.__setattr__(self, "training_runtime",
                               self.training_runtime.with_accelerators(training_covered(self.inference_training)))
        return self

    def flavor_names(self) -> list[str]:
        """The stack's ResourceFlavor names in declared order: resourceFlavors, else [resourceFlavor.name]."""
        if self.resource_flavors:
            return [flavor.name for flavor in self.resource_flavors]
        return [self.resource_flavor.name]

    def pools_of(self, flavor: str) -> list[NodePool]:
        """The node pools of ResourceFlavor `flavor`: those naming it, plus those naming none when the stack has
        one flavor."""
        single = len(self.flavor_names()) == 1
        return [pool for pool in self.node_pools
                if pool.resource_flavor == flavor or (pool.resource_flavor is None and single)]

    def capacity(self) -> dict[str, Decimal]:
        """Physical capacity per resource: sum over node pools of count x capacity (base units, Decimal)."""
        total: dict[str, Decimal] = {}
        for pool in self.node_pools:
            for resource, amount in pool.capacity.items():
                total[resource] = total.get(resource, Decimal(0)) + pool.count * quantity.parse(amount)
        return total

