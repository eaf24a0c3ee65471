"""The stack config schema: one typed, frozen `Settings` object, or one `SettingsError` listing every problem.

`__main__.py` reads the raw `kueue-cohorts:*` keys once and calls `load_settings`; nothing below it reads config.
Validation happens in two passes, both before any resource is registered:

1. shape: pydantic parses every key (types, DNS-1123 names, case-sensitive Kueue enums, unknown keys, quantities
   canonicalised and non-negative);
2. rules: `components.rules.check` applies the cross-field rules of our guide (inference never borrows, quota within
   capacity, priorities ordered, ...) to the parsed object.

Every problem names the config key path, the value, the rule and the fix. Field names follow Kueue's API
(kueue.x-k8s.io/v1beta2): snake_case here, camelCase in the stack file and in manifests. Every field's meaning, unit
and default is its own docstring: the configuration reference (README) and the JSON Schema are generated from them
(`python -m components.docs`).
"""
from __future__ import annotations

import difflib
import re
from decimal import Decimal
from enum import Enum
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Mapping, Optional, Sequence, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from components import quantity, stackfile
from components.errors import Problem, SettingsError
from components.runtime_settings import (
    CONFIG_KEY,
    DNS_SUBDOMAIN,
    ENV_VALUE_TAGS,
    IMAGE_FIX,
    RECIPE,
    OptionalWholeNumber,
    TrainingRuntimeSettings,
    WholeNumber,
)
from policy.rules import durations, selectors

PROJECT = "kueue-cohorts"

# --- constrained scalar types ---------------------------------------------------------------------------------------

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS_SUBDOMAIN = DNS_SUBDOMAIN

_DNS_FIX = "lower-case letters, digits and '-', starting and ending with a letter or digit"
_PATTERNS = {
    _DNS_LABEL: ("must be a DNS-1123 label (RFC 1123, at most 63 characters)", f"use {_DNS_FIX}"),
    _DNS_SUBDOMAIN: ("must be a DNS-1123 subdomain (RFC 1123)", f"use {_DNS_FIX}, dot-separated"),
    CONFIG_KEY: ("must be a Secret or ConfigMap key (Kubernetes IsConfigMapKey): letters, digits, '-', '_' or '.'",
                 "use the key's name as it appears in the Secret's data, e.g. token"),
}

DnsLabel = Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)]
"""A DNS-1123 label (namespaces, LocalQueues): lower-case alphanumerics and '-', at most 63 characters."""

DnsSubdomain = Annotated[str, Field(pattern=_DNS_SUBDOMAIN, max_length=253)]
"""A DNS-1123 subdomain (ClusterQueues, cohorts, ResourceFlavors, WorkloadPriorityClasses)."""

_RESOURCE_NAME = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
ResourceName = Annotated[str, Field(pattern=_RESOURCE_NAME)]
"""A Kubernetes resource name such as `cpu`, `memory`, `nvidia.com/gpu` or `nvidia.com/gpumem`."""


Quantity = quantity.Quantity

ResourceList = dict[ResourceName, Quantity]
"""Resource name -> quantity, e.g. {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}."""


class Model(BaseModel):
    """Base of every settings model: frozen, unknown keys refused, camelCase keys as in Kueue's API."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, use_enum_values=False,
        use_attribute_docstrings=True,
    )


# --- enums (Kueue's are case-sensitive) ------------------------------------------------------------------------------


class ReclaimWithinCohort(str, Enum):
    """ClusterQueue `spec.preemption.reclaimWithinCohort` (kueue.x-k8s.io/v1beta2 ClusterQueuePreemption)."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    ANY = "Any"


class WithinClusterQueue(str, Enum):
    """ClusterQueue `spec.preemption.withinClusterQueue`."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"


class BorrowWithinCohortPolicy(str, Enum):
    """ClusterQueue `spec.preemption.borrowWithinCohort.policy`."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


class QueueingStrategy(str, Enum):
    """ClusterQueue `spec.queueingStrategy` (Kueue default BestEffortFIFO)."""

    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class StopPolicy(str, Enum):
    """ClusterQueue / LocalQueue `spec.stopPolicy` (Kueue default None)."""

    NONE = "None"
    HOLD = "Hold"
    HOLD_AND_DRAIN = "HoldAndDrain"


class FlavorFungibilityPolicy(str, Enum):
    """ClusterQueue `spec.flavorFungibility.whenCanBorrow` / `whenCanPreempt` (kueue.x-k8s.io/v1beta2
    FlavorFungibilityPolicy, clusterqueue_types.go v0.19.2)."""

    MAY_STOP_SEARCH = "MayStopSearch"  # stop at the first flavor where the workload fits by borrowing / preempting
    TRY_NEXT_FLAVOR = "TryNextFlavor"  # try the next flavor before borrowing / preempting in this one


class ClusterMode(str, Enum):
    """Where the kubernetes provider sends the stack's objects."""

    SANDBOX = "sandbox"        # the local sandbox (python -m sandbox up); the dev default
    KUBECONFIG = "kubeconfig"  # a real cluster from a kubeconfig file and context
    RENDER = "render"          # no cluster: manifests written to renderDir (GitOps)


class NamespacePolicy(str, Enum):
    """What the layout does with the tenant namespaces that its LocalQueues live in."""

    CREATE = "Create"      # create the Namespace (labelled for the namespaceSelector, marked kueue-cohorts/owner)
    LABEL = "Label"        # the Namespace exists: only patch the selector label onto it (server-side apply)
    EXTERNAL = "External"  # someone else manages the Namespace and its label; nothing is created or patched


# --- building blocks -------------------------------------------------------------------------------------------------


CLIENT_LIMIT_MAX = 1_000_000
"""Upper bound of kubeClientSettings qps and burst. The provider reads burst as a Go int and hands qps to client-go
as a float32: a burst above the int64 range passed the settings check and a preview, then failed `up` in the
provider's configure (`cannot unmarshal number 10000000000000000000 ... of type int`, exit 1), and a qps above the
int64 range reaches the program as a float refused only inside the engine (exit 1). A million requests a second is
far beyond any API server, and exact in every one of those types."""


class KubeClientSettings(Model):
    """`kueue-cohorts:cluster.kubeClientSettings`: the kubernetes provider's client-side rate limit towards the API
    server (the provider's own `kubeClientSettings`, client-go's token bucket)."""

    qps: WholeNumber = Field(default=200, ge=1, le=CLIENT_LIMIT_MAX)
    """Requests per second the provider sends the API server (a whole number, 1 to 1,000,000). The provider's own
    default, 50, made a 500-tenant `up` wait on the limit: 83.0 s at 50, 56.9 s at 200 in one run (`python -m
    benchmarks.engine --variant qps-200`). The API server's priority and fairness still protects it."""
    burst: WholeNumber = Field(default=400, ge=1, le=CLIENT_LIMIT_MAX)
    """Requests the provider may send at once above qps (1 to 1,000,000)."""


class ClusterSettings(Model):
    """`kueue-cohorts:cluster`: the provider's target."""

    mode: ClusterMode = ClusterMode.SANDBOX
    """Where the kubernetes provider sends objects: `sandbox` (the local sandbox, `python -m sandbox up`),
    `kubeconfig` (a real cluster) or `render` (manifests into renderDir, no cluster)."""
    render_dir: Optional[str] = None
    """Directory for the rendered manifests, relative to the project root. Required in render mode, refused in
    the others."""
    kubeconfig: Optional[str] = None
    """Kubeconfig file (kubeconfig mode only). Omitted: the kubernetes client's default (~/.kube/config)."""
    context: Optional[str] = None
    """Kubeconfig context (kubeconfig mode only). Omitted: the file's current context."""
    kube_client_settings: Optional[KubeClientSettings] = None
    """The provider's rate limit towards the API server (sandbox and kubeconfig modes; render mode has no API
    server). Omitted: qps 200, burst 400."""


class NodePool(Model):
    """One entry of `kueue-cohorts:nodePools`: identical nodes that make up the physical capacity."""

    name: DnsLabel
    """Pool name (DNS-1123 label)."""
    count: WholeNumber = Field(default=1, ge=1)
    """Number of identical nodes (>= 1)."""
    capacity: ResourceList
    """Allocatable per node, resource -> Kubernetes quantity (`cpu: 8`, `memory: 32Gi`, `nvidia.com/gpu: 4`).
    Extended resources are whole numbers. The nominalQuota of every cohort, in each ResourceFlavor, must fit the
    count x capacity of the pools that flavor selects by its nodeLabels."""
    labels: dict[str, str] = Field(default_factory=dict)
    """The nodes' labels, as the real nodes carry them (the sandbox puts them on its kwok nodes). They decide which
    ResourceFlavors place pods here: a flavor selects the pools that carry every one of its nodeLabels (Kueue copies
    them into the pods' nodeSelector), and the nominalQuota of all flavors must fit the pools they select, flavors
    that select the same pools sharing them. Default none: only a flavor without nodeLabels selects the pool."""
    resource_flavor: Optional[DnsSubdomain] = None
    """The ResourceFlavor these nodes are meant for (a name of resourceFlavors, or of the one resourceFlavor): a
    flavor of resourceFlavors without nodeLabels takes the labels its pools share. The capacity counts where the
    labels say, not by this name. Omitted: the stack's one flavor (required when the stack declares several
    resourceFlavors)."""


class Taint(Model):
    """ResourceFlavor `spec.nodeTaints[]` (core/v1 Taint)."""

    key: str
    """Taint key."""
    value: Optional[str] = None
    """Taint value."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    """NoSchedule, PreferNoSchedule or NoExecute."""


class Toleration(Model):
    """ResourceFlavor `spec.tolerations[]` (core/v1 Toleration)."""

    key: Optional[str] = None
    """Toleration key (omitted with operator Exists: every taint)."""
    operator: Literal["Exists", "Equal"] = "Equal"
    """Exists or Equal."""
    value: Optional[str] = None
    """Value for operator Equal."""
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]] = None
    """Effect to tolerate; omitted: all effects."""


class ResourceFlavorSettings(Model):
    """`kueue-cohorts:resourceFlavor`: the one ResourceFlavor every ClusterQueue of the stack uses."""

    name: DnsSubdomain = "default-flavor"
    """The ResourceFlavor every ClusterQueue of the stack uses (DNS-1123 subdomain)."""
    node_labels: dict[str, str] = Field(default_factory=dict, max_length=8)
    """ResourceFlavor spec.nodeLabels: the nodes this flavor stands for (Kueue: at most 8)."""
    node_taints: list[Taint] = Field(default_factory=list, max_length=8)
    """ResourceFlavor spec.nodeTaints (at most 8)."""
    tolerations: list[Toleration] = Field(default_factory=list, max_length=8)
    """ResourceFlavor spec.tolerations, added to admitted pods (at most 8)."""


class FlavorDeclaration(Model):
    """One entry of `kueue-cohorts:resourceFlavors`: a ResourceFlavor of a stack with several GPU types
    (kueue.x-k8s.io/v1beta2 ResourceFlavor, resourceflavor_types.go)."""

    name: DnsSubdomain
    """ResourceFlavor name (DNS-1123 subdomain); node pools name it in their resourceFlavor."""
    node_labels: Optional[dict[str, str]] = Field(default=None, max_length=8)
    """ResourceFlavor spec.nodeLabels: Kueue puts them on the nodeSelector of the pods it admits in this flavor
    (at most 8). Omitted: the labels every node pool of this flavor has in common."""
    node_taints: list[Taint] = Field(default_factory=list, max_length=8)
    """ResourceFlavor spec.nodeTaints (at most 8)."""
    tolerations: list[Toleration] = Field(default_factory=list, max_length=8)
    """ResourceFlavor spec.tolerations, added to admitted pods (at most 8)."""


class FlavorFungibility(Model):
    """ClusterQueue `spec.flavorFungibility` (kueue.x-k8s.io/v1beta2 FlavorFungibility): whether a workload tries
    the next flavor before borrowing or preempting in the current one."""

    when_can_borrow: FlavorFungibilityPolicy = FlavorFungibilityPolicy.MAY_STOP_SEARCH
    """MayStopSearch (stop at the first flavor where the workload fits, borrowing if needed) or TryNextFlavor
    (try the next flavor before borrowing). Default MayStopSearch (Kueue's)."""
    when_can_preempt: FlavorFungibilityPolicy = FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
    """MayStopSearch (stop at the first flavor where the workload fits by preempting) or TryNextFlavor (try the
    next flavor before preempting). Default TryNextFlavor (Kueue's)."""


class FlavorQuota(Model):
    """One flavor of a ClusterQueue's quota (`resourceGroups[].flavors[]`): the flavor and, per resource, its
    nominalQuota, borrowingLimit and lendingLimit. The list order is the order Kueue tries the flavors in."""

    name: DnsSubdomain
    """The ResourceFlavor (a name of resourceFlavors)."""
    nominal_quota: ResourceList = Field(default_factory=dict)
    """The quota the ClusterQueue owns in this flavor (resource -> quantity). Its keys, over every flavor, are the
    covered resources; a resource a flavor leaves out gets 0 there. Default none (training)."""
    borrowing_limit: Optional[ResourceList] = None
    """How much the queue may borrow in this flavor, per resource. Inference: 0 on every resource (omitted: the
    component writes 0). Training: omitted means the inference nominalQuota of this flavor. Tenants: omitted
    means the pool total of this flavor minus the tenant's nominalQuota."""
    lending_limit: Optional[ResourceList] = None
    """At most nominalQuota per resource. Omitted: lend all idle quota of this flavor."""


class BorrowWithinCohort(Model):
    """`preemption.borrowWithinCohort`: preempt while borrowing, only below maxPriorityThreshold (int32)."""

    policy: BorrowWithinCohortPolicy = BorrowWithinCohortPolicy.NEVER
    """Never or LowerPriority: whether a borrowing workload may preempt in the cohort (needs reclaimWithinCohort
    other than Never)."""
    max_priority_threshold: OptionalWholeNumber = Field(default=None, ge=-(2**31), lt=2**31)
    """Only workloads at or below this priority (int32) may be preempted while borrowing. Omitted: no threshold."""


class Preemption(Model):
    """ClusterQueue `spec.preemption`. Defaults here are our guide's, not Kueue's (Kueue defaults to Never)."""

    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.ANY
    """ClusterQueue spec.preemption.reclaimWithinCohort: Never, LowerPriority or Any. Default Any (the guide's;
    Kueue's own default is Never). Inference must use Any."""
    borrow_within_cohort: Optional[BorrowWithinCohort] = None
    """spec.preemption.borrowWithinCohort. Omitted: Kueue's default (Never)."""
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    """spec.preemption.withinClusterQueue: Never, LowerPriority or LowerOrNewerEqualPriority. Default
    LowerPriority."""


class PriorityClass(Model):
    """A WorkloadPriorityClass: `value` (int32, higher wins) and `description` (at most 2048 characters)."""

    name: DnsSubdomain
    """WorkloadPriorityClass name (DNS-1123 subdomain)."""
    value: WholeNumber = Field(ge=-(2**31), lt=2**31)
    """Priority (int32, higher wins). Training must stay below inference."""
    description: str = Field(default="", max_length=2048)
    """Free text (at most 2048 characters)."""


class CheckpointSettings(Model):
    """The ReadWriteMany PVC that training checkpoints go to, one per training namespace."""

    claim_name: DnsSubdomain
    """Name of the ReadWriteMany PVC made in every training namespace."""
    storage_class_name: Optional[str] = None
    """A StorageClass that supports ReadWriteMany (cephfs, nfs). Omitted: the cluster's default class."""
    size: Quantity = "5Gi"
    """Requested storage (Kubernetes quantity). Default 5Gi."""
    retain_on_delete: bool = True
    """Keep the PVC and its checkpoints when the stack is destroyed. Default true."""


def _int_or_percent(value: Any) -> Any:
    """Kubernetes' `ValidatePositiveIntOrPercent`: an int >= 0 or "N%" (no other string, no bool)."""
    if isinstance(value, bool) or not (isinstance(value, int) and value >= 0
                                       or isinstance(value, str) and re.fullmatch(r"[0-9]+%", value)):
        raise PydanticCustomError("int_or_percent", "must be an integer >= 0 or a percentage such as '25%'")
    return value


def _at_most_all(value: Any) -> Any:
    """maxUnavailable as a percentage is at most 100% (other shapes are `_int_or_percent`'s to refuse)."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]+%", value) and int(value[:-1]) > 100:
        raise PydanticCustomError("rolling_update", "maxUnavailable cannot be above 100%")
    return value


IntOrPercent = Annotated[Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]+%$")],
                         BeforeValidator(_int_or_percent)]
"""A Kubernetes IntOrString of a rolling update: a pod count >= 0, or a percentage of the replicas ("25%")."""


class RolloutSettings(Model):
    """`services[].rollout`: the rolling update of the predictor's Deployment (KServe `spec.predictor
    .deploymentStrategy`, an apps/v1 DeploymentStrategy of type RollingUpdate). Setting it keeps the surge you
    choose, and the rule book then requires its headroom in the inference nominalQuota."""

    max_surge: IntOrPercent
    """RollingUpdate maxSurge: pods created above the replicas during an update (an int, or a percentage of the
    replicas rounded up). Inference never borrows, so (maxReplicas + surge) x the per-replica requests must fit the
    inference nominalQuota (rule inference-rollout-fits-nominal): reserve that headroom, or set 0."""
    max_unavailable: Optional[Annotated[IntOrPercent, BeforeValidator(_at_most_all)]] = None
    """RollingUpdate maxUnavailable: replicas that may be down during an update (an int, or a percentage rounded down,
    at most 100%). Omitted: Kubernetes' 25%. Cannot be 0 when maxSurge is 0."""

    @model_validator(mode="after")
    def _progresses(self) -> RolloutSettings:
        zero = (0, "0%")
        if self.max_surge in zero and self.max_unavailable in zero:
            raise PydanticCustomError("rolling_update", "maxSurge and maxUnavailable cannot both be 0: the rollout "
                                      "could never replace a pod")
        return self


class InferenceServiceSettings(Model):
    """A KServe InferenceService (serving.kserve.io/v1beta1) served from the inference LocalQueue."""

    name: DnsLabel
    """InferenceService name (DNS-1123 label)."""
    namespace: Optional[DnsLabel] = None
    """One of inference.namespaces. Omitted: the first."""
    model_format: str
    """The predictor's model.modelFormat.name (e.g. huggingface)."""
    model_format_version: Optional[str] = None
    """model.modelFormat.version. Omitted: none."""
    runtime: Optional[str] = None
    """A ServingRuntime name. Omitted: KServe picks one."""
    storage_uri: str
    """Where the model is (model.storageUri)."""
    requests: ResourceList = Field(min_length=1)
    """Per-replica requests (resource -> quantity). A resource with only a limit requests its limit. One replica
    must fit the inference nominalQuota (borrowingLimit 0: it could never be admitted)."""
    limits: ResourceList = Field(default_factory=dict)
    """Per-replica limits. Default none."""
    min_replicas: WholeNumber = Field(default=1, ge=0)
    """Autoscaling lower bound (>= 0). minReplicas x the per-replica requests must fit the inference nominalQuota
    (those replicas could never all run, and every update would deadlock). Default 1."""
    max_replicas: WholeNumber = Field(default=1, ge=1)
    """Autoscaling upper bound (>= 1, >= minReplicas). Replicas beyond the nominalQuota stay pending, by design (a
    warning), and an update started above the replicas that fit waits until the autoscaler scales down. Default 1."""
    deployment_mode: Literal["RawDeployment", "Standard"] = "Standard"
    """Standard (KServe >= 0.16's name for plain Deployments, which Kueue's deployment integration admits) or
    RawDeployment (the legacy name of the same mode). Default Standard: the pinned KServe v0.16.0 validator judges an
    InferenceService annotated RawDeployment as a Knative one and refuses its deploymentStrategy
    (`apis/serving/v1beta1/inference_service_validation.go` validateAutoScalingCompExtension), so RawDeployment is
    refused where the stack renders one (a rollout, or maxSurge 0 because the default surge would not fit)."""
    priority_class: Optional[DnsSubdomain] = None
    """A WorkloadPriorityClass of the stack. Omitted: the inference one."""
    rollout: Optional[RolloutSettings] = None
    """How the predictor rolls out an update (its deploymentStrategy). Omitted: KServe's default (RollingUpdate,
    maxSurge 25%) when (maxReplicas + surge) replicas fit the inference nominalQuota, else maxSurge 0 and
    maxUnavailable 1, so an update never waits for quota that the old replicas hold (one replica is down while it is
    replaced). Set it to keep a surge; the inference nominalQuota must then have the headroom."""


# --- asymmetric layout -----------------------------------------------------------------------------------------------


class InferenceQueueSettings(Model):
    """The inference side of `kueue-cohorts:inferenceTraining`."""

    cluster_queue: DnsSubdomain
    """The inference ClusterQueue name."""
    local_queue: DnsLabel
    """The LocalQueue name made in each inference namespace."""
    namespaces: list[DnsLabel] = Field(min_length=1)
    """Inference namespaces (>= 1); a namespace belongs to one ClusterQueue only."""
    tenant: Optional[DnsLabel] = None
    """Value of the namespace selector label. Omitted: the ClusterQueue name."""
    nominal_quota: Optional[ResourceList] = Field(default=None, min_length=1)
    """The quota inference owns in the stack's one flavor (resource -> quantity, each > 0). Its keys are the
    cohort's covered resources. Required unless `flavors` is given (then refused)."""
    borrowing_limit: Optional[ResourceList] = None
    """Must be 0 on every covered resource (Kueue reads a missing borrowingLimit as unlimited). Omitted: the
    component writes 0."""
    lending_limit: Optional[ResourceList] = None
    """At most nominalQuota per resource. Omitted: lend all idle quota."""
    flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """The quota per ResourceFlavor, in the order Kueue tries them (instead of nominalQuota / borrowingLimit /
    lendingLimit). Every flavor names every covered resource with a nominalQuota > 0; borrowingLimit 0."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of the inference ClusterQueue. Omitted: the layout's, else Kueue's defaults."""
    preemption: Preemption = Preemption()
    """Preemption of the inference ClusterQueue; reclaimWithinCohort must be Any."""
    priority_class: PriorityClass
    """The inference WorkloadPriorityClass."""
    services: list[InferenceServiceSettings] = Field(default_factory=list)
    """KServe InferenceServices (serving.kserve.io/v1beta1) on the inference LocalQueue. Default none."""


class TrainingQueueSettings(Model):
    """The training side of `kueue-cohorts:inferenceTraining`: nominalQuota 0, borrows idle inference quota."""

    cluster_queue: DnsSubdomain
    """The training ClusterQueue name."""
    local_queue: DnsLabel
    """The LocalQueue name made in each training namespace."""
    namespaces: list[DnsLabel] = Field(min_length=1)
    """Training namespaces (>= 1)."""
    tenant: Optional[DnsLabel] = None
    """Value of the namespace selector label. Omitted: the ClusterQueue name."""
    borrowing_limit: Optional[ResourceList] = None
    """How much training may borrow, per covered resource. Omitted: the inference nominalQuota."""
    flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """What training may borrow per ResourceFlavor, in the order Kueue tries them (each entry: name,
    borrowingLimit; nominalQuota stays 0). Omitted: the inference flavors in their order, each borrowing up to the
    inference nominalQuota of that flavor."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of the training ClusterQueue. Omitted: the layout's, else Kueue's defaults."""
    preemption: Preemption = Preemption()
    """Preemption of the training ClusterQueue."""
    priority_class: PriorityClass
    """The training WorkloadPriorityClass; its value must be below the inference one."""
    checkpoint: Optional[CheckpointSettings] = None
    """The ReadWriteMany checkpoint PVC made in every training namespace. Omitted: none (needed by
    trainingRuntime)."""


class InferenceTrainingSettings(Model):
    """`kueue-cohorts:inferenceTraining`: the asymmetric cohort of our guide."""

    cohort: DnsSubdomain
    """The cohortName both ClusterQueues share."""
    cohort_quota: Optional[ResourceList] = None
    """nominalQuota of a Cohort object: shared quota added on top, never guaranteed to inference; counts toward
    capacity. Omitted: no Cohort object."""
    namespace_policy: NamespacePolicy = NamespacePolicy.CREATE
    """What the stack does with the tenant namespaces. Create: it creates each one with the selector label and its
    mark `kueue-cohorts/owner: <project>/<stack>`, and owns it (destroy, or removing it from the config, deletes it
    with everything in it); a namespace that exists without this stack's mark is refused before any change. Label:
    the namespace must exist; the stack only adds the selector label, and destroy (or removing the namespace) removes
    only that label. External: the namespace must exist; the stack leaves it and its label alone. Create -> Label
    hands the stack's namespaces over in place (kept, mark dropped); Create -> External is refused (it would delete
    them): go through Label. Default Create."""
    namespace_label: LabelKey = "kueue.x-k8s.io/queue"
    """The label key the namespaceSelectors match, besides the pinned kubernetes.io/metadata.name. Default
    kueue.x-k8s.io/queue."""
    queueing_strategy: Optional[QueueingStrategy] = None
    """StrictFIFO or BestEffortFIFO on both ClusterQueues. Omitted: Kueue's (BestEffortFIFO)."""
    stop_policy: Optional[StopPolicy] = None
    """None, Hold or HoldAndDrain on both ClusterQueues. Omitted: Kueue's (None)."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of both ClusterQueues (a queue's own flavorFungibility wins). Omitted: Kueue's
    defaults (whenCanBorrow MayStopSearch, whenCanPreempt TryNextFlavor), not written."""
    cohort_flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """The Cohort object's nominalQuota per ResourceFlavor (instead of cohortQuota; only nominalQuota is used).
    Omitted: cohortQuota."""
    inference: InferenceQueueSettings
    """The inference side: owns the quota, never borrows, reclaims with Any."""
    training: TrainingQueueSettings
    """The training side: owns nothing, borrows the idle inference quota."""


# --- symmetric layout ------------------------------------------------------------------------------------------------


class TenantSettings(Model):
    """One tenant of `kueue-cohorts:sharedPool`."""

    name: DnsLabel
    """Tenant name (DNS-1123 label): the selector label's value."""
    cluster_queue: Optional[DnsSubdomain] = None
    """ClusterQueue name. Omitted: <name>-cq."""
    local_queue: Optional[DnsLabel] = None
    """LocalQueue name. Omitted: <name>-lq."""
    namespaces: Optional[list[DnsLabel]] = None
    """The tenant's namespaces. Omitted: [<name>]."""
    floor: Optional[ResourceList] = Field(default=None, min_length=1)
    """The tenant's nominalQuota in the stack's one flavor (guaranteed; reclaimed with reclaimWithinCohort Any).
    Every tenant names the same resources. Required unless `flavors` is given (then refused)."""
    borrowing_limit: Optional[ResourceList] = None
    """At most pool total minus floor per resource. Omitted: pool total minus floor."""
    lending_limit: Optional[ResourceList] = None
    """At most the floor. Omitted: lend all idle quota."""
    flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """The tenant's quota per ResourceFlavor, in the order Kueue tries them (instead of floor / borrowingLimit /
    lendingLimit): nominalQuota is the floor in that flavor. Every tenant names the same resources."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of the tenant's ClusterQueue. Omitted: the layout's, else Kueue's defaults."""
    priority_class: Optional[DnsSubdomain] = None
    """One of sharedPool.priorityClasses. Omitted: none."""


class SharedPoolSettings(Model):
    """`kueue-cohorts:sharedPool`: the symmetric cohort, each tenant a floor plus borrowing."""

    cohort: DnsSubdomain
    """The cohortName of every tenant ClusterQueue."""
    cohort_quota: Optional[ResourceList] = None
    """nominalQuota of a Cohort object, part of the pool total. Omitted: none."""
    namespace_policy: NamespacePolicy = NamespacePolicy.CREATE
    """Create, Label or External, as for inferenceTraining (Create refuses a namespace that exists without this
    stack's mark; Label and External need the namespace to exist). Default Create."""
    namespace_label: LabelKey = "kueue.x-k8s.io/queue"
    """The label key the namespaceSelectors match. Default kueue.x-k8s.io/queue."""
    preemption: Preemption = Preemption()
    """Preemption of every tenant ClusterQueue."""
    queueing_strategy: Optional[QueueingStrategy] = None
    """StrictFIFO or BestEffortFIFO. Omitted: Kueue's."""
    stop_policy: Optional[StopPolicy] = None
    """None, Hold or HoldAndDrain. Omitted: Kueue's."""
    flavor_fungibility: Optional[FlavorFungibility] = None
    """spec.flavorFungibility of every tenant ClusterQueue (a tenant's own wins). Omitted: Kueue's defaults, not
    written."""
    cohort_flavors: Optional[list[FlavorQuota]] = Field(default=None, min_length=1)
    """The Cohort object's nominalQuota per ResourceFlavor (instead of cohortQuota; only nominalQuota is used),
    part of the pool total of each flavor. Omitted: cohortQuota."""
    priority_classes: list[PriorityClass] = Field(default_factory=list)
    """WorkloadPriorityClasses the tenants may reference. Default none."""
    tenants: list[TenantSettings] = Field(min_length=1)
    """The tenants (>= 1, names unique). Pool total = sum of floors + cohortQuota, within capacity."""


# --- Kueue itself ----------------------------------------------------------------------------------------------------

KUEUE_FRAMEWORKS = (
    "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/rayservice", "ray.io/raycluster",
    "jobset.x-k8s.io/jobset", "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob", "kubeflow.org/jaxjob", "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper", "sparkoperator.k8s.io/sparkapplication", "pod", "deployment", "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)
"""Kueue's integration framework names (config.kueue.x-k8s.io/v1beta2 Integrations.Frameworks doc, v0.19)."""

DEFAULT_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod", "deployment")

def _go_duration(text: str) -> str:
    try:
        durations.parse_go_duration(text)
    except ValueError as err:
        raise ValueError(f"must be a Go duration ({err}) Fix: write it with units ns, us, ms, s, m or h, such as "
                         "10m, 90s, 1h30m or .5m, at most 2562047h47m16.854775807s") from None
    return text


GoDuration = Annotated[str, AfterValidator(_go_duration)]
"""A Go duration such as "10m", "1h30m", "90s" or ".5m" (metav1.Duration), parsed exactly like Go's
time.ParseDuration (the rule book's `policy.rules.durations`), within Go's range."""


def _label_key(text: str) -> str:
    problem = selectors.label_key_problem(text)
    if problem:
        raise ValueError(f"{problem} Fix: use a label key such as kueue.x-k8s.io/queue (an optional DNS subdomain "
                         "prefix and '/', then at most 63 alphanumerics, '-', '_' or '.')")
    return text


LabelKey = Annotated[str, AfterValidator(_label_key)]
"""A Kubernetes label key (k8s.io/apimachinery IsQualifiedName), checked by the rule book's `selectors`."""


def _label_selector(value: dict[str, Any]) -> dict[str, Any]:
    problems = selectors.selector_problems(value)
    if problems:
        listed = "; ".join(f"{path or 'the selector'} {problem}" for path, problem in problems)
        raise ValueError(f"not a valid LabelSelector: {listed} Fix: write {{matchLabels: {{<key>: <value>}}}} and/or "
                         "{matchExpressions: [{key, operator: In|NotIn|Exists|DoesNotExist, values}]}")
    return value


LabelSelector = Annotated[dict[str, Any], AfterValidator(_label_selector)]
"""A metav1.LabelSelector as written (matchLabels, matchExpressions), checked by the rule book's `selectors`."""


_PATTERNS[_RESOURCE_NAME] = ("must be a Kubernetes resource name such as cpu or nvidia.com/gpu", "correct the name")
_PATTERNS[RECIPE] = (
    "must be a recipe: module:function, llamafactory:/<config>.yaml, training-hub:sft|osft[:/<params>.json] or "
    "mini-trainer:/<params>.json",
    "name a function returning a Hugging Face Trainer (e.g. trainer.demo:build_trainer) or a recipe family with an "
    "absolute path inside the image (trainer/RECIPES.md)",
)


class RequeuingStrategy(Model):
    """`waitForPodsReady.requeuingStrategy`: how an evicted (pods not ready) Workload is requeued."""

    timestamp: Literal["Eviction", "Creation"] = "Eviction"
    """Eviction or Creation: which time orders a requeued Workload. Default Eviction."""
    backoff_limit_count: WholeNumber = Field(ge=0)
    """Requeues before the Workload is deactivated (required: unset means for ever, and a training pod that
    cannot start would keep taking borrowed quota)."""
    backoff_base_seconds: WholeNumber = Field(default=60, ge=1)
    """First backoff in seconds, doubling. Default 60."""
    backoff_max_seconds: WholeNumber = Field(default=3600, ge=1)
    """Longest backoff in seconds. Default 3600."""


class WaitForPodsReady(Model):
    """`waitForPodsReady` of the Kueue manager Configuration: evict a Workload whose pods are not ready in time."""

    timeout: GoDuration
    """Positive Go duration (10m, 90s, 1h30m) after which an admitted Workload whose pods are not ready is
    evicted."""
    block_admission: bool = False
    """Admit one Workload at a time until its pods are ready. Default false."""
    recovery_timeout: Optional[GoDuration] = None
    """Go duration, not negative, measured from when a running Workload's pods stop being ready (a pod failed and
    its replacement waits): past it the Workload is evicted and requeued. 0s switches the recovery timeout off.
    Omitted: Kueue sets it to timeout (apis/config/v1beta2/defaults.go, v0.19.2); a negative value stops Kueue's
    manager (pkg/config/validation.go) and is refused."""
    requeuing_strategy: RequeuingStrategy
    """How an evicted Workload is requeued."""


class KueueResources(Model):
    """`kueue.resources` of the Kueue manager Configuration (config.kueue.x-k8s.io/v1beta2 Resources)."""

    exclude_resource_prefixes: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Resource name prefixes Kueue leaves out of quota accounting (resources.excludeResourcePrefixes), e.g.
    [cpu, memory] for GPU-only quotas. Default none. A prefix of a resource a ClusterQueue quotas is refused (that
    quota would be out of play)."""


class ChartSource(str, Enum):
    """Where the Kueue Helm chart comes from (reference and version pinned in toolchain/versions.toml [charts])."""

    PUBLISHED = "Published"  # the published OCI chart (users)
    GO_MODULE = "GoModule"   # the chart directory inside the pinned Kueue Go module (offline tests)


class KueueSettings(Model):
    """`kueue-cohorts:kueue`: Kueue itself."""

    install: bool = False
    """Install Kueue with its Helm chart before the cohorts. False: the cluster already runs Kueue >= 0.16
    (kueue.x-k8s.io/v1beta2), checked before anything is created. Default false."""
    namespace: DnsLabel = "kueue-system"
    """Kueue's namespace. Default kueue-system."""
    chart_source: ChartSource = ChartSource.PUBLISHED
    """Published (the OCI chart) or GoModule (the chart in the pinned Kueue Go module, offline). Default
    Published."""
    manage_jobs_without_queue_name: bool = False
    """Let Kueue suspend jobs without a queue-name label. True needs a managedJobsNamespaceSelector that excludes
    kube-system and Kueue's namespace. Default false."""
    managed_jobs_namespace_selector: Optional[LabelSelector] = None
    """A LabelSelector of the namespaces Kueue manages at all: in Kueue 0.19 a namespace it does not select is
    ignored for every job and pod, queue-name label or not (pkg/controller/jobframework/reconciler.go), so it must
    select every tenant namespace of the stack, and never kube-system or Kueue's namespace. Omitted: Kueue's default,
    every namespace but kube-system and Kueue's."""
    wait_for_pods_ready: WaitForPodsReady = WaitForPodsReady(
        timeout="10m", requeuing_strategy=RequeuingStrategy(backoff_limit_count=5)
    )
    """Evict a Workload whose pods are not ready in time. Default timeout 10m, backoffLimitCount 5."""
    integrations: list[str] = Field(default_factory=lambda: list(DEFAULT_FRAMEWORKS), min_length=1)
    """Kueue integration frameworks. Default batch/job, jobset.x-k8s.io/jobset, trainer.kubeflow.org/trainjob,
    pod, deployment. Must hold the kind of everything the stack runs (deployment for its inference queues,
    trainer.kubeflow.org/trainjob for a training runtime): Kueue neither gates nor counts the others."""
    feature_gates: dict[str, bool] = Field(default_factory=dict)
    """Kueue feature gates, name -> on/off. Default none. Refused: a gate Kueue 0.19.2 does not know or locks, and
    one that switches off a counting protection (DisableWaitForPodsReady, FastQuotaReleaseInPodIntegration,
    KueueDRARejectWorkloadsWhenDRADisabled false, LWSImmutableGroupSize false, PodIntegrationValidateGroupOwner
    false, WorkloadValidateResourcesAreNonNegative false)."""
    resources: KueueResources = KueueResources()
    """Resource accounting of the manager Configuration."""
    values: dict[str, Any] = Field(default_factory=dict)
    """Helm values for Kueue's chart (install true only), merged under the program's: the image mirror
    (controllerManager.manager.image.repository, tag), controllerManager.replicas, controllerManager.manager.resources,
    enableKueueViz and kueueViz, ... Checked against the pinned chart's values.yaml (unknown keys, types).
    managerConfig and controllerManager.featureGates are refused: set them through the kueue keys above, which the
    rule book judges. Default none."""


# --- in-cluster guardrails ------------------------------------------------------------------------------------------

SANDBOX_ADMIN = "kueue-cohorts-admin"
"""The user of the sandbox's admin kubeconfig (its client certificate's CN; O=system:masters), which runs the dev
stack: sandbox/certs.py issues it (a unit test keeps the two equal)."""


class ValidationAction(str, Enum):
    """A ValidatingAdmissionPolicyBinding `validationActions` entry (admissionregistration.k8s.io/v1)."""

    DENY = "Deny"    # refuse the request
    WARN = "Warn"    # let it through with a warning to the client (kubectl prints it)
    AUDIT = "Audit"  # record the failure in the audit event (annotation validation.policy.admission.k8s.io/...)


class StackIdentities(Model):
    """`admission.identities`: who runs the stack (Kubernetes `request.userInfo`): only these users and the members
    of these groups may add, change or remove a layout's tenant label (namespaceLabel) on a namespace.

    users: user names (default: the sandbox's admin, `kueue-cohorts-admin`; on a real cluster, the user of the
    deploy job's kubeconfig). groups: group names (default none). At least one user or group.
    """

    users: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=lambda: [SANDBOX_ADMIN])
    """User names (request.userInfo.username). Default the sandbox's admin, kueue-cohorts-admin, refused in cluster
    mode kubeconfig: there, the user of the deploy job's kubeconfig. Never a name Kubernetes gives to many callers
    (system:anonymous, system:masters, ...)."""
    groups: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Group names (request.userInfo.groups). Default none. At least one user or group. Never a group of everyone
    (system:authenticated, system:unauthenticated, system:serviceaccounts[:<ns>], system:masters, system:nodes)."""

    @model_validator(mode="after")
    def _someone(self) -> StackIdentities:
        if not self.users and not self.groups:
            raise PydanticCustomError(
                "no_identity", "no user or group may change the tenant label, so pulumi up could not label its own "
                "namespaces")
        return self


class AdmissionSettings(Model):
    """`kueue-cohorts:admission`: the ValidatingAdmissionPolicies (CEL) the stack registers, generated from the rule
    book, so that a kubectl, Helm or GitOps change that breaks a rule is refused inside the cluster too.

    validation_actions: the bindings' validationActions: `[Deny]` (default) refuses; `[Warn, Audit]` lets the
    request through with a warning and an audit annotation (a first rollout; README "In-cluster guardrails").
    Deny and Warn never together. identities: who may change the tenant label (StackIdentities).
    """

    validation_actions: list[ValidationAction] = Field(default_factory=lambda: [ValidationAction.DENY])
    """The bindings' validationActions: [Deny] (default) refuses; [Warn, Audit] is the first rollout (warn the
    client, annotate the audit event). Never Deny with Warn, no repeats."""
    identities: StackIdentities = StackIdentities()
    """Who runs the stack: only they may add, change or remove a layout's namespaceLabel on a namespace."""

    @field_validator("validation_actions")
    @classmethod
    def _actions(cls, value: list[ValidationAction]) -> list[ValidationAction]:
        if not value or len(set(value)) != len(value) or {ValidationAction.DENY, ValidationAction.WARN} <= set(value):
            raise PydanticCustomError(
                "validation_actions", "validationActions must be a non-empty list without repeats and never hold "
                "both Deny and Warn (the apiserver refuses such a binding)")
        return value


# --- namespaces of cluster add-ons -----------------------------------------------------------------------------------


class AddOnNamespaceAllowance(Model):
    """An entry of `allowedAddOnNamespaces`: a cluster add-on namespace this stack uses as a tenant namespace."""

    name: DnsLabel
    """The add-on namespace (one of policy/rules/system_namespaces.py ADD_ON_NAMESPACES, e.g. kubeflow)."""
    reason: str = Field(min_length=1)
    """Why its pods may come under Kueue (printed by reviews; not empty)."""


# --- the pull-request preview identity -----------------------------------------------------------------------------


class PreviewSubjectKind(str, Enum):
    """The kind of an RBAC subject (rbac.authorization.k8s.io/v1 `subjects[].kind`)."""

    SERVICE_ACCOUNT = "ServiceAccount"  # a ServiceAccount in a namespace; the stack may create it
    USER = "User"                       # a user of the cluster's authenticator (OIDC claim, certificate CN)
    GROUP = "Group"                     # a group of the cluster's authenticator (OIDC groups claim, certificate O)


class PreviewIdentityCreate(str, Enum):
    """What the stack creates for a ServiceAccount preview identity."""

    SERVICE_ACCOUNT_AND_NAMESPACE = "ServiceAccountAndNamespace"  # the namespace and the ServiceAccount in it
    SERVICE_ACCOUNT = "ServiceAccount"                            # the ServiceAccount, in an existing namespace
    NOTHING = "Nothing"                                           # only the RBAC: the subject exists elsewhere


class PreviewIdentitySettings(Model):
    """`kueue-cohorts:previewIdentity`: the read-only identity the pull-request live preview runs as (README
    "Pull-request previews"). The stack grants it get, list and watch on exactly the kinds it manages: cluster-scoped
    kinds through a ClusterRole, namespaced kinds through a Role in each namespace the stack writes to, never a
    Secret, and nothing else."""

    kind: PreviewSubjectKind
    """ServiceAccount, User or Group (RBAC subject kind; User and Group as the cluster's authenticator names them,
    e.g. an OIDC claim). Names starting with `system:` are refused (Kubernetes' own users and groups)."""
    name: str = Field(max_length=253)
    """The ServiceAccount (DNS-1123 subdomain), user or group name (not empty)."""
    namespace: Optional[DnsLabel] = None
    """The ServiceAccount's namespace (ServiceAccount only, required there): a namespace of its own, never a tenant
    namespace, Kueue's, default or a kube-* one (whoever runs pods in a namespace can use its ServiceAccounts); the
    account is never `default`."""
    create: Optional[PreviewIdentityCreate] = None
    """ServiceAccountAndNamespace, ServiceAccount (its namespace exists) or Nothing (only the RBAC). Omitted:
    ServiceAccountAndNamespace for a ServiceAccount, Nothing for a User or Group (the only value they take)."""
    role_name: DnsSubdomain = "kueue-cohorts-preview"
    """metadata.name of the ClusterRole, the ClusterRoleBinding and of each Role and RoleBinding. Give each stack
    its own when several stacks share a cluster. Default kueue-cohorts-preview."""

    def effective_create(self) -> PreviewIdentityCreate:
        """`create`, or its default for the subject kind (see the field)."""
        if self.create is not None:
            return self.create
        if self.kind == PreviewSubjectKind.SERVICE_ACCOUNT:
            return PreviewIdentityCreate.SERVICE_ACCOUNT_AND_NAMESPACE
        return PreviewIdentityCreate.NOTHING


class WhatIfSettings(Model):
    """`kueue-cohorts:whatif`: the what-if section of the pull-request summary (`python -m cohorts whatif`)."""

    trace: str = Field(min_length=1, pattern=r"^[^/].*\.jsonl$")
    """A demand trace (JSON Lines, schema/demand-trace.schema.json), relative to the project root, e.g.
    traces/staging.jsonl: the pull-request summary replays it against the base and the head quotas."""


# --- the root --------------------------------------------------------------------------------------------------------


def training_covered(layout: InferenceTrainingSettings) -> list[str]:
    """The training ClusterQueue's coveredResources: the nominalQuota keys of the inference side (nominalQuota, or
    every flavor's), first-seen order, as components.plans.plan_inference_training covers both ClusterQueues."""
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
    """The stack guards real resources: `python -m deploy` refuses it a local file backend, the dev passphrase and
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


# --- loading ---------------------------------------------------------------------------------------------------------

_FIXES = {
    "extra_forbidden": "remove the key or correct its spelling",
    "missing": "add the key",
    "enum": "use exactly one of the allowed values (Kueue's enums are case-sensitive)",
    "literal_error": "use exactly one of the allowed values (case-sensitive)",
    "string_pattern_mismatch": "use a DNS-1123 name: lower-case letters, digits and '-', starting and ending "
    "with a letter or digit",
    "string_too_long": "shorten the value",
    "too_short": "add at least one entry",
    "greater_than_equal": "raise the value",
    "less_than": "lower the value", "less_than_equal": "lower the value",
    "validation_actions": "write [Deny] (refuse) or [Warn, Audit] (first rollout: warn and record)",
    "no_identity": "name the user or group of the kubeconfig that runs pulumi up",
    "value_error": "write a non-negative Kubernetes quantity such as 4, \"500m\" or \"8Gi\"",
    "dict_type": "write a mapping (key: value)",
    "list_type": "write a list",
    "int_type": "write a whole number", "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "bool_type": "write true or false", "bool_parsing": "write true or false",
    "string_type": "write a string (quote it)",
    "float_type": "write a number", "float_parsing": "write a number",
    "int_or_percent": "write a pod count such as 0 or 1, or a percentage such as \"25%\"",
    "env_value": "write the value as a string (quoted), or reference a Secret: {secretKeyRef: {name: <secret>, "
    "key: <key>}}",
    "rolling_update": "use maxSurge 0 with maxUnavailable 1 (one replica down while it is replaced), or keep a "
    "surge with maxUnavailable 0 and reserve its headroom in nominalQuota",
}


_MISSING_FIXES = {f"{PROJECT}:trainingRuntime.image": IMAGE_FIX}
"""The fix of a required key whose value the user must choose, by key path (others: "add the key")."""


def config_key(base: str, *parts: Any) -> str:
    """A config key path for messages: `config_key("kueue-cohorts:sharedPool", "tenants", 0, "floor", "nvidia.com/gpu")`
    -> `kueue-cohorts:sharedPool.tenants[0].floor["nvidia.com/gpu"]`."""
    path = base
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif "/" in str(part) or "." in str(part):
            path += f'["{part}"]'
        else:
            path += f".{part}"
    return path


def _key_path(top: str, loc: tuple[Any, ...]) -> str:
    return config_key(f"{PROJECT}:{top}", *loc)


def _value_at(raw: Mapping[str, Any], loc: tuple[Any, ...]) -> Any:
    node: Any = raw
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return "<absent>"
    return node


def _by_parent(errors: Sequence[Mapping[str, Any]], kind: str) -> dict[tuple[Any, ...], list[str]]:
    out: dict[tuple[Any, ...], list[str]] = {}
    for item in errors:
        if item["type"] == kind and item["loc"]:
            out.setdefault(tuple(item["loc"][:-1]), []).append(str(item["loc"][-1]))
    return out


def _known_keys(loc: Sequence[Any]) -> list[str]:
    """The config keys (aliases) of the model at pydantic error location `loc` (the parent of an unknown key),
    walking Settings through nested models, lists (an int part), dicts (a key part) and Optional/Union members.
    Empty when the location is not a model (a dict of free keys such as `labels`)."""
    annotations: list[Any] = [Settings]
    for part in loc:
        following: list[Any] = []
        for annotation in _unwrap(annotations):
            if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(part, str):
                following += [f.annotation for name, f in annotation.model_fields.items()
                              if part in (name, f.alias)]
            elif get_origin(annotation) is list and isinstance(part, int):
                following += list(get_args(annotation)[:1])
            elif get_origin(annotation) is dict:
                following += list(get_args(annotation)[1:2])
        annotations = following
    return sorted({f.alias or name for annotation in _unwrap(annotations)
                   if isinstance(annotation, type) and issubclass(annotation, BaseModel)
                   for name, f in annotation.model_fields.items()})


def _unwrap(annotations: Sequence[Any]) -> list[Any]:
    """`annotations` with Optional / Union / Annotated opened into their member types."""
    out: list[Any] = []
    for annotation in annotations:
        origin = get_origin(annotation)
        if origin is Annotated:
            out += _unwrap(get_args(annotation)[:1])
        elif origin in (Union, UnionType):
            out += _unwrap([a for a in get_args(annotation) if a is not type(None)])
        else:
            out.append(annotation)
    return out


def _internal(part: Any) -> bool:
    """A part of pydantic's error location that is no config key: a validator's `function-...` or a union tag of
    runtime_settings.EnvValue."""
    return isinstance(part, str) and (part.startswith("function-") or part in ENV_VALUE_TAGS)


def _shape_problems(err: ValidationError, raw: Mapping[str, Any]) -> list[Problem]:
    """Turn pydantic's errors into Problems. A misspelt required key (an unknown key next to a missing one of a
    similar name) is reported once, with the key it probably meant."""
    problems = []
    errors = err.errors()
    missing, extra = _by_parent(errors, "missing"), _by_parent(errors, "extra_forbidden")
    for item in errors:
        loc = tuple(part for part in item["loc"] if not _internal(part))
        if not loc:
            problems.append(Problem(f"{PROJECT}:*", raw, item["msg"], "check the stack config"))
            continue
        top, rest, parent, name = str(loc[0]), loc[1:], tuple(item["loc"][:-1]), str(item["loc"][-1])
        value = item.get("input") if item["type"] != "missing" else "<absent>"
        rule = item["msg"].replace("Value error, ", "")
        fix = _FIXES.get(item["type"], "correct the value")
        if " Fix: " in rule:  # our own validators carry their fix
            rule, fix = rule.split(" Fix: ", 1)
        if item["type"] == "missing" and _key_path(top, rest) in _MISSING_FIXES:
            fix = _MISSING_FIXES[_key_path(top, rest)]
        if item["type"] == "missing" and difflib.get_close_matches(name, extra.get(parent, []), n=1):
            continue  # reported once, as the misspelt key
        if item["type"] == "extra_forbidden":
            value = _value_at(raw, loc)
            # A missing key of a similar name first (the typo of a required key), then any key the model knows.
            close = (difflib.get_close_matches(name, missing.get(parent, []), n=1)
                     or difflib.get_close_matches(name, _known_keys(parent), n=1))
            if close:
                rule, fix = "unknown key (a typo?)", f"did you mean '{close[0]}'? Rename the key"
        if item["type"] == "string_pattern_mismatch":
            pattern = item.get("ctx", {}).get("pattern")
            if pattern in _PATTERNS:
                rule, fix = _PATTERNS[pattern]
        problems.append(Problem(_key_path(top, rest), value, rule, fix))
    return problems


def parse_settings(raw: Mapping[str, Any]) -> Settings:
    """Parse a stack's `kueue-cohorts:*` config into Settings: shape only (types, names, enums, unknown keys,
    quantities). The judgement (the rule book and the settings-only rules) is `components.validation.load_settings`.

    Args:
        raw: key (without the `kueue-cohorts:` prefix, camelCase, e.g. "inferenceTraining") -> parsed YAML value.
    Returns:
        The frozen, typed Settings with canonical quantities and defaults applied.
    Raises:
        SettingsError: listing every shape problem (key path, value, rule, fix).
    """
    try:
        return Settings.model_validate(dict(raw))
    except ValidationError as err:
        raise SettingsError(_shape_problems(err, raw)) from None


def raw_from_stack_file(path: Path) -> dict[str, Any]:
    """Read the `kueue-cohorts:*` keys of a stack file (stacks/Pulumi.<stack>.yaml) into the shape `load_settings`
    takes, through the one stack-file reader (`components.stackfile`). Keys of other namespaces (e.g. `kubernetes:`)
    are ignored. Raises stackfile.StackFileError (a ValueError: `file:line:col: message`)."""
    return stackfile.project_config(stackfile.read(path), PROJECT)


def config_keys() -> list[str]:
    """The top-level stack config keys (without the `kueue-cohorts:` prefix, camelCase), in schema order."""
    return [field.alias or name for name, field in Settings.model_fields.items()]
