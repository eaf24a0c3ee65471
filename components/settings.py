"""The stack config schema: one typed, frozen `Settings` object, or one `SettingsError` listing every problem.

`__main__.py` reads the raw `kueue-cohorts:*` keys once and calls `load_settings`; nothing below it reads config.
Validation happens in two passes, both before any resource is registered:

1. shape: pydantic parses every key (types, DNS-1123 names, case-sensitive Kueue enums, unknown keys, quantities
   canonicalised and non-negative);
2. rules: `components.rules.check` applies the cross-field rules of our guide (inference never borrows, quota within
   capacity, priorities ordered, ...) to the parsed object.

Every problem names the config key path, the value, the rule and the fix. Field names follow Kueue's API
(kueue.x-k8s.io/v1beta2): snake_case here, camelCase in the stack file and in manifests.
"""
from __future__ import annotations

from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional

import difflib

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from components import quantity
from components.errors import Problem, SettingsError
from components.runtime_settings import TrainingRuntimeSettings

PROJECT = "kueue-cohorts"

# --- constrained scalar types ---------------------------------------------------------------------------------------

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

_DNS_FIX = "lower-case letters, digits and '-', starting and ending with a letter or digit"
_PATTERNS = {
    _DNS_LABEL: ("must be a DNS-1123 label (RFC 1123, at most 63 characters)", f"use {_DNS_FIX}"),
    _DNS_SUBDOMAIN: ("must be a DNS-1123 subdomain (RFC 1123)", f"use {_DNS_FIX}, dot-separated"),
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
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, use_enum_values=False
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


class ClusterMode(str, Enum):
    """Where the kubernetes provider sends the stack's objects."""

    SANDBOX = "sandbox"        # the local sandbox (python -m sandbox up); the dev default
    KUBECONFIG = "kubeconfig"  # a real cluster from a kubeconfig file and context
    RENDER = "render"          # no cluster: manifests written to renderDir (GitOps)


class NamespacePolicy(str, Enum):
    """What the layout does with the tenant namespaces that its LocalQueues live in."""

    CREATE = "Create"      # create the Namespace, labelled so that the ClusterQueue's namespaceSelector matches it
    LABEL = "Label"        # the Namespace exists: only patch the selector label onto it (server-side apply)
    EXTERNAL = "External"  # someone else manages the Namespace and its label; nothing is created or patched


# --- building blocks -------------------------------------------------------------------------------------------------


class ClusterSettings(Model):
    """`kueue-cohorts:cluster`: the provider's target.

    mode: sandbox (default) | kubeconfig | render.
    render_dir: directory for rendered manifests, relative to the project root; required in render mode.
    kubeconfig: kubeconfig path for kubeconfig mode; omitted means the kubernetes client's default (~/.kube/config).
    context: kubeconfig context; omitted means the current context.
    """

    mode: ClusterMode = ClusterMode.SANDBOX
    render_dir: Optional[str] = None
    kubeconfig: Optional[str] = None
    context: Optional[str] = None


class NodePool(Model):
    """One entry of `kueue-cohorts:nodePools`: identical nodes that make up the physical capacity.

    count: number of nodes (>= 1). capacity: allocatable per node. labels: node labels (the sandbox puts them on
    its fake kwok nodes; for a real cluster they document which nodes the ResourceFlavor selects).
    """

    name: DnsLabel
    count: int = Field(default=1, ge=1)
    capacity: ResourceList
    labels: dict[str, str] = Field(default_factory=dict)


class Taint(Model):
    """ResourceFlavor `spec.nodeTaints[]` (core/v1 Taint)."""

    key: str
    value: Optional[str] = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(Model):
    """ResourceFlavor `spec.tolerations[]` (core/v1 Toleration)."""

    key: Optional[str] = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: Optional[str] = None
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]] = None


class ResourceFlavorSettings(Model):
    """`kueue-cohorts:resourceFlavor`: the one ResourceFlavor every ClusterQueue of the stack uses."""

    name: DnsSubdomain = "default-flavor"
    node_labels: dict[str, str] = Field(default_factory=dict, max_length=8)
    node_taints: list[Taint] = Field(default_factory=list, max_length=8)
    tolerations: list[Toleration] = Field(default_factory=list, max_length=8)


class BorrowWithinCohort(Model):
    """`preemption.borrowWithinCohort`: preempt while borrowing, only below maxPriorityThreshold (int32)."""

    policy: BorrowWithinCohortPolicy = BorrowWithinCohortPolicy.NEVER
    max_priority_threshold: Optional[int] = Field(default=None, ge=-(2**31), lt=2**31)


class Preemption(Model):
    """ClusterQueue `spec.preemption`. Defaults here are our guide's, not Kueue's (Kueue defaults to Never)."""

    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.ANY
    borrow_within_cohort: Optional[BorrowWithinCohort] = None
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY


class PriorityClass(Model):
    """A WorkloadPriorityClass: `value` (int32, higher wins) and `description` (at most 2048 characters)."""

    name: DnsSubdomain
    value: int = Field(ge=-(2**31), lt=2**31)
    description: str = Field(default="", max_length=2048)


class CheckpointSettings(Model):
    """The ReadWriteMany PVC that training checkpoints go to, one per training namespace.

    claim_name: PVC name. storage_class_name: a class that supports ReadWriteMany (e.g. cephfs, nfs); omitted means
    the cluster default. size: requested storage (Kubernetes quantity). retain_on_delete: keep the PVC (and the
    checkpoints) when the stack is destroyed (default true).
    """

    claim_name: DnsSubdomain
    storage_class_name: Optional[str] = None
    size: Quantity = "5Gi"
    retain_on_delete: bool = True


class InferenceServiceSettings(Model):
    """A KServe InferenceService (serving.kserve.io/v1beta1) served from the inference LocalQueue.

    namespace: one of inference.namespaces (default: the first). model_format / model_format_version: the predictor's
    `model.modelFormat`; runtime: a ServingRuntime name (omitted: KServe picks one). storage_uri: where the model is.
    requests / limits: per replica (Kueue admits on requests, using limits where a request is missing).
    min_replicas / max_replicas: autoscaling bounds; replicas beyond the nominalQuota stay pending by design.
    deployment_mode: `RawDeployment` (default: plain Deployments, which Kueue's deployment integration admits) or
    `Standard` (KServe >= 0.16's name for the same mode).
    priority_class: a WorkloadPriorityClass of the stack; omitted means the inference one.
    """

    name: DnsLabel
    namespace: Optional[DnsLabel] = None
    model_format: str
    model_format_version: Optional[str] = None
    runtime: Optional[str] = None
    storage_uri: str
    requests: ResourceList = Field(min_length=1)
    limits: ResourceList = Field(default_factory=dict)
    min_replicas: int = Field(default=1, ge=0)
    max_replicas: int = Field(default=1, ge=1)
    deployment_mode: Literal["RawDeployment", "Standard"] = "RawDeployment"
    priority_class: Optional[DnsSubdomain] = None


# --- asymmetric layout -----------------------------------------------------------------------------------------------


class InferenceQueueSettings(Model):
    """The inference side of `kueue-cohorts:inferenceTraining`.

    nominal_quota: the GPU (and cpu/memory) quota inference owns; its keys are the cohort's covered resources.
    borrowing_limit: omitted means an explicit 0 on every covered resource (inference never borrows); any other
    value is refused. tenant: the value of the namespace selector label (default: the ClusterQueue name).
    services: the KServe InferenceServices that run on this quota (each per-replica request must fit nominalQuota).
    """

    cluster_queue: DnsSubdomain
    local_queue: DnsLabel
    namespaces: list[DnsLabel] = Field(min_length=1)
    tenant: Optional[DnsLabel] = None
    nominal_quota: ResourceList = Field(min_length=1)
    borrowing_limit: Optional[ResourceList] = None
    lending_limit: Optional[ResourceList] = None
    preemption: Preemption = Preemption()
    priority_class: PriorityClass
    services: list[InferenceServiceSettings] = Field(default_factory=list)


class TrainingQueueSettings(Model):
    """The training side of `kueue-cohorts:inferenceTraining`: nominalQuota 0, borrows idle inference quota.

    borrowing_limit: omitted means the inference nominalQuota of every covered resource.
    checkpoint: the RWX PVC created in every training namespace; omitted means none.
    """

    cluster_queue: DnsSubdomain
    local_queue: DnsLabel
    namespaces: list[DnsLabel] = Field(min_length=1)
    tenant: Optional[DnsLabel] = None
    borrowing_limit: Optional[ResourceList] = None
    preemption: Preemption = Preemption()
    priority_class: PriorityClass
    checkpoint: Optional[CheckpointSettings] = None


class InferenceTrainingSettings(Model):
    """`kueue-cohorts:inferenceTraining`: the asymmetric cohort of our guide.

    cohort: the cohortName both ClusterQueues share. cohort_quota: nominalQuota of an optional Cohort object
    (Kueue adds it on top as shared quota; it is never guaranteed to inference). namespace_policy: Create (default),
    Label or External. namespace_label: the label key the namespaceSelectors match.
    """

    cohort: DnsSubdomain
    cohort_quota: Optional[ResourceList] = None
    namespace_policy: NamespacePolicy = NamespacePolicy.CREATE
    namespace_label: str = "kueue.x-k8s.io/queue"
    queueing_strategy: Optional[QueueingStrategy] = None
    stop_policy: Optional[StopPolicy] = None
    inference: InferenceQueueSettings
    training: TrainingQueueSettings


# --- symmetric layout ------------------------------------------------------------------------------------------------


class TenantSettings(Model):
    """One tenant of `kueue-cohorts:sharedPool`.

    floor: the tenant's nominalQuota (guaranteed, reclaimed with reclaimWithinCohort Any).
    borrowing_limit: omitted means pool total minus floor, per resource.
    lending_limit: omitted means Kueue's default (lend all idle nominal quota); at most the floor.
    cluster_queue / local_queue: default "<name>-cq" / "<name>-lq". namespaces: default [name].
    """

    name: DnsLabel
    cluster_queue: Optional[DnsSubdomain] = None
    local_queue: Optional[DnsLabel] = None
    namespaces: Optional[list[DnsLabel]] = None
    floor: ResourceList = Field(min_length=1)
    borrowing_limit: Optional[ResourceList] = None
    lending_limit: Optional[ResourceList] = None
    priority_class: Optional[DnsSubdomain] = None


class SharedPoolSettings(Model):
    """`kueue-cohorts:sharedPool`: the symmetric cohort, each tenant a floor plus borrowing.

    pool total (per resource) = sum of the tenants' floors + cohort_quota.
    """

    cohort: DnsSubdomain
    cohort_quota: Optional[ResourceList] = None
    namespace_policy: NamespacePolicy = NamespacePolicy.CREATE
    namespace_label: str = "kueue.x-k8s.io/queue"
    preemption: Preemption = Preemption()
    queueing_strategy: Optional[QueueingStrategy] = None
    stop_policy: Optional[StopPolicy] = None
    priority_classes: list[PriorityClass] = Field(default_factory=list)
    tenants: list[TenantSettings] = Field(min_length=1)


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

_GO_DURATION = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
GoDuration = Annotated[str, Field(pattern=_GO_DURATION)]
"""A Go duration such as "10m", "1h30m" or "90s" (metav1.Duration)."""


_PATTERNS[_RESOURCE_NAME] = ("must be a Kubernetes resource name such as cpu or nvidia.com/gpu", "correct the name")
_PATTERNS[_GO_DURATION] = ("must be a Go duration such as 10m, 90s or 1h30m", "write the duration in Go syntax")


class RequeuingStrategy(Model):
    """`waitForPodsReady.requeuingStrategy`: how an evicted (pods not ready) Workload is requeued.

    backoff_limit_count: requeues before the Workload is deactivated (required here: unset means for ever, and a
    training pod that cannot start would keep taking borrowed quota). Backoff: base 60 s doubling up to 3600 s.
    """

    timestamp: Literal["Eviction", "Creation"] = "Eviction"
    backoff_limit_count: int = Field(ge=0)
    backoff_base_seconds: int = Field(default=60, ge=1)
    backoff_max_seconds: int = Field(default=3600, ge=1)


class WaitForPodsReady(Model):
    """`waitForPodsReady` of the Kueue manager Configuration: evict a Workload whose pods are not ready in time.

    timeout: Go duration (required); block_admission: admit one Workload at a time until its pods are ready.
    """

    timeout: GoDuration
    block_admission: bool = False
    recovery_timeout: Optional[GoDuration] = None
    requeuing_strategy: RequeuingStrategy


class KueueResources(Model):
    """`kueue.resources` of the Kueue manager Configuration (config.kueue.x-k8s.io/v1beta2 Resources).

    exclude_resource_prefixes: resource name prefixes Kueue leaves out of quota accounting (e.g. ["cpu", "memory"] for
    a GPU-only cohort); rendered as `resources.excludeResourcePrefixes`.
    """

    exclude_resource_prefixes: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)


class ChartSource(str, Enum):
    """Where the Kueue Helm chart comes from (reference and version pinned in toolchain/versions.toml [charts])."""

    PUBLISHED = "Published"  # the published OCI chart (users)
    GO_MODULE = "GoModule"   # the chart directory inside the pinned Kueue Go module (offline tests)


class KueueSettings(Model):
    """`kueue-cohorts:kueue`: Kueue itself.

    install: install Kueue with its Helm chart (KueueInstallation) before the cohorts; false means the cluster
    already runs Kueue >= 0.16 (serving kueue.x-k8s.io/v1beta2), which the program checks before creating anything.
    namespace: Kueue's namespace. manage_jobs_without_queue_name: false (default) leaves unlabelled jobs alone; true
    requires a managed_jobs_namespace_selector that excludes kube-system, Kueue's namespace and every namespace not
    meant for Kueue. integrations: Kueue framework names. feature_gates: Kueue feature gates.
    """

    install: bool = False
    namespace: DnsLabel = "kueue-system"
    chart_source: ChartSource = ChartSource.PUBLISHED
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: Optional[dict[str, Any]] = None
    wait_for_pods_ready: WaitForPodsReady = WaitForPodsReady(
        timeout="10m", requeuing_strategy=RequeuingStrategy(backoff_limit_count=5)
    )
    integrations: list[str] = Field(default_factory=lambda: list(DEFAULT_FRAMEWORKS), min_length=1)
    feature_gates: dict[str, bool] = Field(default_factory=dict)
    resources: KueueResources = KueueResources()


# --- the root --------------------------------------------------------------------------------------------------------


class Settings(Model):
    """Everything a stack config says, validated. Keys are `kueue-cohorts:<camelCaseName>`.

    At least one layout (inference_training, shared_pool) must be present; node_pools declare the physical
    capacity that every cohort's nominalQuota must fit in. training_runtime: the PreemptibleTrainingRuntime made in
    every training namespace of inference_training (needs its training.checkpoint).
    """

    cluster: ClusterSettings = ClusterSettings()
    node_pools: list[NodePool] = Field(min_length=1)
    resource_flavor: ResourceFlavorSettings = ResourceFlavorSettings()
    inference_training: Optional[InferenceTrainingSettings] = None
    shared_pool: Optional[SharedPoolSettings] = None
    kueue: KueueSettings = KueueSettings()
    training_runtime: Optional[TrainingRuntimeSettings] = None

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
    "less_than": "lower the value",
    "value_error": "write a non-negative Kubernetes quantity such as 4, \"500m\" or \"8Gi\"",
}


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


def _by_parent(errors: list[dict], kind: str) -> dict[tuple, list[str]]:
    out: dict[tuple, list[str]] = {}
    for item in errors:
        if item["type"] == kind and item["loc"]:
            out.setdefault(tuple(item["loc"][:-1]), []).append(str(item["loc"][-1]))
    return out


def _shape_problems(err: ValidationError, raw: Mapping[str, Any]) -> list[Problem]:
    """Turn pydantic's errors into Problems. A misspelt required key (an unknown key next to a missing one of a
    similar name) is reported once, with the key it probably meant."""
    problems = []
    errors = err.errors()
    missing, extra = _by_parent(errors, "missing"), _by_parent(errors, "extra_forbidden")
    for item in errors:
        loc = tuple(part for part in item["loc"] if not (isinstance(part, str) and part.startswith("function-")))
        if not loc:
            problems.append(Problem(f"{PROJECT}:*", raw, item["msg"], "check the stack config"))
            continue
        top, rest, parent, name = str(loc[0]), loc[1:], tuple(item["loc"][:-1]), str(item["loc"][-1])
        value = item.get("input") if item["type"] != "missing" else "<absent>"
        rule = item["msg"].replace("Value error, ", "")
        fix = _FIXES.get(item["type"], "correct the value")
        if item["type"] == "missing" and difflib.get_close_matches(name, extra.get(parent, []), n=1):
            continue  # reported once, as the misspelt key
        if item["type"] == "extra_forbidden":
            value = _value_at(raw, loc)
            close = difflib.get_close_matches(name, missing.get(parent, []), n=1)
            if close:
                rule, fix = "unknown key (a typo?)", f"did you mean '{close[0]}'? Rename the key"
        if item["type"] == "string_pattern_mismatch":
            rule, fix = _PATTERNS.get(item.get("ctx", {}).get("pattern"), (rule, fix))
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
    takes. Keys of other namespaces (e.g. `kubernetes:`) are ignored. Raises OSError / yaml.YAMLError."""
    document = yaml.safe_load(path.read_text()) or {}
    config = document.get("config") or {}
    prefix = f"{PROJECT}:"
    return {key[len(prefix):]: value for key, value in config.items() if key.startswith(prefix)}


def config_keys() -> list[str]:
    """The top-level stack config keys (without the `kueue-cohorts:` prefix, camelCase), in schema order."""
    return [field.alias or name for name, field in Settings.model_fields.items()]
