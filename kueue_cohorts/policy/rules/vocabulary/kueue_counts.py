"""What the pinned Kueue (0.19.2) counts: a model of how its manager Configuration decides which pods and which
resources are held against a ClusterQueue's quota.

Every name and default here is read from sigs.k8s.io/kueue v0.19.2:
- `apis/config/v1beta2/configuration_types.go` (fields) and `defaults.go` (SetDefaults_Configuration: an empty
  `integrations.frameworks` becomes `[batch/job]`; an absent `managedJobsNamespaceSelector` becomes
  `{kubernetes.io/metadata.name NotIn [kube-system, <namespace>]}`; a transformation's strategy defaults to Retain);
- `pkg/workload/workload.go` (totalRequestsFromPodSets: a PodSet's requests minus every resource whose name starts
  with an `excludeResourcePrefixes` entry (dropExcludedResources), then `applyResourceTransformations`: per input,
  outputs = input quantity (times the `multiplyBy` resource's quantity when the pod requests it) x factor, summed
  per name and floored at 0, added to what is retained; `Retain` keeps the input, `Replace` drops it);
- `pkg/scheduler/flavorassigner/flavorassigner.go` (IgnoreUndeclaredResources: with the QuotaCheckStrategy gate on,
  `quotaCheckStrategy: IgnoreUndeclared` skips every requested resource its ClusterQueue does not cover, so a GPU
  request on a queue without GPU quota is admitted uncounted; BlockUndeclared, the default, refuses it);
- `pkg/controller/jobframework/reconciler.go` (ReconcileGenericJob: a job, pod or serving object whose namespace
  does not match `managedJobsNamespaceSelector` is ignored, queue-name label or not: the gate
  ManagedJobsNamespaceSelectorAlwaysRespected is GA and locked on in 0.19); the chart's webhook configurations
  carry the same selector as their namespaceSelector (charts/kueue/templates/webhook/manifests.yaml), so nothing
  suspends or gates a queue-named job or pod there either: it runs uncounted. (Where a webhook does see it,
  `utils.go` WorkloadShouldBeSuspended suspends a queue-named job that the reconciler then never resumes.);
- `pkg/controller/jobs/*/*_controller.go` (the framework names and `ImplicitlyEnabledFrameworkNames`: deployment,
  statefulset and leaderworkerset enable `pod`) and `pkg/config/validation.go` (an unknown framework, an unknown or
  duplicate transformation strategy or input, an unknown quotaCheckStrategy: the manager refuses to start);
- `pkg/features/kube_features.go` (the gates, their defaults and locks; component-base refuses an unknown gate or a
  locked gate set against its default, and `LoadAndValidateFeatureGates` refuses `--feature-gates` together with
  `featureGates`).

This module is pure (no SDK): the rules call it with plain values or SDK proxies (an unknown value raises the SDK's
UnknownValueError through the proxy; the callers turn it into a fail-closed violation).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Optional

from . import selectors
from .quantity import parse_quantity_strict, show

KUEUE_VERSION = "0.19.2"
MANAGER_CONFIG_MAP = "kueue-manager-config"
"""The name of the ConfigMap that holds the manager's Configuration in Kueue's chart
(`charts/kueue/templates/manager/manager-config.yaml`; the chart's `<release>-manager-config` with the release named
kueue)."""
NAME_LABEL = selectors.NAME_LABEL

DEFAULT_FRAMEWORKS = ("batch/job",)
"""`integrations.frameworks` when empty or absent (defaults.go defaultJobFrameworkName)."""

FRAMEWORKS: dict[str, tuple[str, ...]] = {
    "batch/job": (),
    "jobset.x-k8s.io/jobset": (),
    "trainer.kubeflow.org/trainjob": (),
    "kubeflow.org/mpijob": (),
    "kubeflow.org/paddlejob": (),
    "kubeflow.org/pytorchjob": (),
    "kubeflow.org/tfjob": (),
    "kubeflow.org/xgboostjob": (),
    "kubeflow.org/jaxjob": (),
    "ray.io/rayjob": (),
    "ray.io/raycluster": (),
    "ray.io/rayservice": (),
    "sparkoperator.k8s.io/sparkapplication": (),
    "workload.codeflare.dev/appwrapper": (),
    "pod": (),
    "deployment": ("pod",),
    "statefulset": ("pod",),
    "leaderworkerset.x-k8s.io/leaderworkerset": ("pod",),
}
"""Every integration framework Kueue 0.19.2 registers (pkg/controller/jobs/*: FrameworkName) -> the frameworks it
enables implicitly (ImplicitlyEnabledFrameworkNames)."""

KIND_FRAMEWORKS: dict[tuple[str, str], str] = {
    ("", "Pod"): "pod",
    ("apps", "Deployment"): "deployment",
    ("apps", "StatefulSet"): "statefulset",
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): "leaderworkerset.x-k8s.io/leaderworkerset",
    ("batch", "Job"): "batch/job",
    ("jobset.x-k8s.io", "JobSet"): "jobset.x-k8s.io/jobset",
    ("trainer.kubeflow.org", "TrainJob"): "trainer.kubeflow.org/trainjob",
    ("trainer.kubeflow.org", "TrainingRuntime"): "trainer.kubeflow.org/trainjob",
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"): "trainer.kubeflow.org/trainjob",
    ("serving.kserve.io", "InferenceService"): "deployment",
    ("serving.kserve.io", "LLMInferenceService"): "deployment",
}
"""(API group, kind) of an object the stack runs -> the framework Kueue needs to count its pods. A TrainingRuntime
stands for the TrainJobs that use it; an InferenceService (RawDeployment/Standard mode) becomes a Deployment."""

INFERENCE_FRAMEWORK = "deployment"
"""What an inference ClusterQueue serves: Deployments (KServe's RawDeployment, or a Deployment made by hand)."""


@dataclass(frozen=True)
class Gate:
    """One Kueue feature gate of 0.19.2: its default and whether it is locked to it (LockToDefault)."""

    default: bool
    locked: bool = False


FEATURE_GATES: dict[str, Gate] = {
    "PartialAdmission": Gate(True), "FlavorFungibility": Gate(True), "VisibilityOnDemand": Gate(True),
    "DisableWaitForPodsReady": Gate(False), "PrioritySortingWithinCohort": Gate(True),
    "FairSharingPreemptWithinNominal": Gate(True), "FairSharingPrioritizeNonBorrowing": Gate(True),
    "MultiKueue": Gate(True), "TopologyAwareScheduling": Gate(True), "LocalQueueMetrics": Gate(True),
    "TASProfileMixed": Gate(True), "HierarchicalCohorts": Gate(True, True), "AdmissionFairSharing": Gate(True),
    "ObjectRetentionPolicies": Gate(True, True), "TASFailedNodeReplacement": Gate(True),
    "ElasticJobsViaWorkloadSlices": Gate(True), "ElasticJobsViaWorkloadSlicesWithTAS": Gate(False),
    "TASFailedNodeReplacementFailFast": Gate(True), "TASReplaceNodeOnPodTermination": Gate(True),
    "SkipReassignmentForPodOwnedWorkloads": Gate(True), "TASReplaceNodeDueToNotReadyOverFixedTime": Gate(False),
    "ManagedJobsNamespaceSelectorAlwaysRespected": Gate(True, True), "TASBalancedPlacement": Gate(False),
    "TASAssignmentsEncodingByHostnamePrefix": Gate(True), "KueueDRAIntegration": Gate(True),
    "KueueDRAIntegrationExtendedResource": Gate(True), "KueueDRARejectWorkloadsWhenDRADisabled": Gate(True),
    "KueueDRAIntegrationPartitionableDevices": Gate(True), "KueueDRAIntegrationConsumableCapacity": Gate(False),
    "MultiKueueAdaptersForCustomJobs": Gate(True), "WorkloadRequestUseMergePatch": Gate(False),
    "MultiKueueAllowInsecureKubeconfigs": Gate(False, True), "MultiKueueKubeConfigPathValidation": Gate(False),
    "ReclaimablePods": Gate(True), "PropagateBatchJobLabelsToWorkload": Gate(True, True),
    "MultiKueueClusterProfile": Gate(False), "FailureRecoveryPolicy": Gate(False),
    "SkipFinalizersForPodsSuspendedByParent": Gate(True, True), "MultiKueueWaitForWorkloadAdmitted": Gate(True, True),
    "MultiKueueRedoAdmissionOnEvictionInWorker": Gate(True, True), "TLSOptions": Gate(True),
    "RemoveFinalizersWithStrictPatch": Gate(True), "TASReplaceNodeOnNodeTaints": Gate(True),
    "AssignQueueLabelsForPods": Gate(True), "TASMultiLayerTopology": Gate(True),
    "SchedulingEquivalenceHashing": Gate(True), "SchedulerLongRequeueInterval": Gate(False),
    "SchedulerTimestampPreemptionBuffer": Gate(False), "CustomMetricLabels": Gate(False),
    "SparkApplicationIntegration": Gate(False), "MultiKueueOrchestratedPreemption": Gate(False),
    "PriorityBoost": Gate(False), "AdmissionGatedBy": Gate(True), "ShortWorkloadNames": Gate(False),
    "FastQuotaReleaseInPodIntegration": Gate(False), "RejectUpdatesToCQWithInvalidOnFlavors": Gate(False),
    "FinishOrphanedWorkloads": Gate(True), "MultiKueueIncrementalDispatcherConfig": Gate(True),
    "MultiKueueIncrementalDispatcherRespectConfigOrder": Gate(True), "ConcurrentAdmission": Gate(False),
    "QuotaCheckStrategy": Gate(True), "MetricForWorkloadCreationLatency": Gate(True),
    "TASRespectNodeAffinityPreferred": Gate(False), "MultiKueueManagerQuotaAutomation": Gate(False),
    "WorkloadIdentifierAnnotations": Gate(True), "WorkloadPriorityClassDefaulting": Gate(False),
    "MetricsForCohorts": Gate(True), "CleanupProvisioningRequestsOnEviction": Gate(True),
    "TASHandleOverlappingFlavors": Gate(True), "UnadmittedWorkloadsObservability": Gate(False),
    "TASRecomputeAssignmentWithinSchedulingCycle": Gate(True), "UnadmittedWorkloadsExplicitStatus": Gate(False),
    "DeferRayServiceFinalizationForRedisCleanup": Gate(True), "TASCacheNodeMatchResults": Gate(True),
    "TASCachingRemainingResources": Gate(True), "TASCacheTopologyTree": Gate(False),
    "SchedulerLibraryIntegration": Gate(False), "VectorizedResourceRequests": Gate(True),
    "WorkloadValidateResourcesAreNonNegative": Gate(True), "TASValidateWorkloadSliceSize": Gate(True),
    "WorkloadValidationForPodSetMetadata": Gate(True), "PrioritizePreemptorWorkloads": Gate(False),
    "LWSImmutableGroupSize": Gate(True), "FlavorFungibilityPreserveScanProgress": Gate(True),
    "SkipAncestorCheckForDeletedWorkloads": Gate(True), "MultiKueueRemoteSpecSync": Gate(True),
    "RecomputeAssignmentUponPreemptionTargetsOverlap": Gate(False), "PodIntegrationValidateGroupOwner": Gate(True),
    "ValidateRayAndSparkJobUpdates": Gate(True),
}
"""Every gate of Kueue 0.19.2 (pkg/features/kube_features.go defaultVersionedFeatureGates, the 0.19 entry)."""

UNSAFE_GATES: dict[str, tuple[bool, str]] = {
    "DisableWaitForPodsReady": (
        True, "it switches waitForPodsReady off, so a workload admitted with pods that never start keeps its quota"),
    "KueueDRARejectWorkloadsWhenDRADisabled": (
        False, "whenever KueueDRAIntegration is off, a workload whose GPUs come from a ResourceClaim is then "
               "admitted without counting those GPUs (pkg/dra/extended_resources.go)"),
    "FastQuotaReleaseInPodIntegration": (
        True, "a preempted pod's quota is released as soon as it starts terminating, while it still holds its GPUs "
              "for its grace period (a trainer saving its checkpoint), so Kueue admits pods for GPUs in use"),
    "LWSImmutableGroupSize": (
        False, "growing a LeaderWorkerSet's size then ungates extra pods per group without counting them"),
    "PodIntegrationValidateGroupOwner": (
        False, "a pod can then join another pod group's admitted Workload by its group name and run uncounted"),
    "WorkloadValidateResourcesAreNonNegative": (
        False, "a workload with a negative request then lowers the usage Kueue counts for its queue"),
}
"""Gate -> (the value that switches a counting protection off, why). Read from the gates' doc comments in
pkg/features/kube_features.go (0.19.2)."""

BOOL_TRUE = ("1", "t", "T", "TRUE", "true", "True")
BOOL_FALSE = ("0", "f", "F", "FALSE", "false", "False")
"""Go's strconv.ParseBool, which component-base uses for `--feature-gates` values."""

STRATEGIES = ("Retain", "Replace")
QUOTA_CHECK_STRATEGIES = ("BlockUndeclared", "IgnoreUndeclared")


@dataclass(frozen=True)
class Problem:
    """One way a Kueue Configuration (or its manager's flags) takes the quota out of play.

    field: the path inside the Configuration ("resources.excludeResourcePrefixes", "featureGates"); value: the
    offending value; rule: what must hold and why (a clause); fix: what to write instead (a clause).
    """

    field: str
    value: Any
    rule: str
    fix: str


def parse_feature_gates_flag(text: str) -> tuple[dict[str, bool], list[str]]:
    """Parse a `--feature-gates` value as component-base's featuregate.Set does: `A=true,B=false`, empty pieces
    skipped, names and values trimmed, values read by strconv.ParseBool.

    Returns:
        (gate -> value, problems): one problem clause per piece that has no `=` or no boolean value (the manager
        then refuses to start).
    """
    gates: dict[str, bool] = {}
    problems: list[str] = []
    for piece in text.split(","):
        if not piece:
            continue
        name, sep, raw = piece.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep:
            problems.append(f"missing bool value for {name!r}")
        elif raw in BOOL_TRUE:
            gates[name] = True
        elif raw in BOOL_FALSE:
            gates[name] = False
        else:
            problems.append(f"invalid value of {name}: {raw!r}, not a boolean")
    return gates, problems


def gate_problems(gates: Mapping[Any, Any], where: str = "featureGates") -> list[Problem]:
    """The problems of a set of Kueue feature gates (the Configuration's `featureGates` or the manager's
    `--feature-gates`): a gate 0.19.2 does not know, a value that is not a boolean, a locked gate set against its
    default (the manager then refuses to start: component-base SetFromMap/Set), and a gate set to the value that
    switches off a counting protection (`UNSAFE_GATES`).

    Args:
        gates: gate name -> value as written. where: the field path to report.
    """
    problems = []
    for name, value in gates.items():
        gate = FEATURE_GATES.get(str(name))
        if gate is None:
            problems.append(Problem(
                where, {name: value}, f"Kueue {KUEUE_VERSION} knows no feature gate {name!r} and its manager refuses "
                "to start (unrecognized feature gate), so nothing is admitted or counted",
                f"remove {name!r} or correct its name (the gates are listed in pkg/features/kube_features.go)"))
            continue
        if not isinstance(value, bool):
            problems.append(Problem(
                where, {name: value}, f"feature gate {name} must be true or false, and the manager refuses to start "
                "on anything else", f"set {name} to true or false"))
            continue
        if gate.locked and value != gate.default:
            problems.append(Problem(
                where, {name: value}, f"feature gate {name} is locked to {str(gate.default).lower()} in Kueue "
                f"{KUEUE_VERSION} and the manager refuses to start when it is set otherwise",
                f"remove {name}"))
            continue
        unsafe = UNSAFE_GATES.get(str(name))
        if unsafe is not None and value == unsafe[0]:
            problems.append(Problem(
                where, {name: value}, f"feature gate {name}={str(value).lower()} switches off a protection the "
                f"stack relies on: {unsafe[1]}", f"remove {name} (default {str(gate.default).lower()})"))
    return problems


@dataclass(frozen=True)
class Transformation:
    """One `resources.transformations` entry: `input` resource, `strategy` (Retain or Replace, defaulted), optional
    `multiply_by` resource, `outputs` resource -> factor per unit of input."""

    input: str
    strategy: str
    multiply_by: Optional[str]
    outputs: Mapping[str, Decimal]


@dataclass(frozen=True)
class Counting:
    """What a Configuration makes Kueue count, parsed with its defaults (`parse`).

    namespace: Kueue's namespace; selector: the effective managedJobsNamespaceSelector; frameworks: the explicit
    frameworks and the ones they enable; excluded: excludeResourcePrefixes; transformations: by input;
    ignores_undeclared: quotaCheckStrategy IgnoreUndeclared with its gate on; problems: what the Configuration
    alone already breaks (unknown values, values the manager refuses, unsafe gates and strategies).
    """

    namespace: str
    selector: Mapping[str, Any]
    frameworks: frozenset[str]
    excluded: tuple[str, ...]
    transformations: Mapping[str, Transformation]
    ignores_undeclared: bool
    problems: tuple[Problem, ...] = field(default=())

    def selects(self, labels: Mapping[str, str]) -> bool:
        """True when Kueue manages jobs and pods of a namespace with these labels (managedJobsNamespaceSelector)."""
        return selectors.matches(self.selector, labels)

    def manages(self, framework: str) -> bool:
        """True when the framework is enabled, explicitly or implicitly."""
        return framework in self.frameworks

    def dropped(self, resource: str) -> Optional[str]:
        """Why Kueue counts nothing at all for a pod's request of `resource` (a clause), or None when something of it
        is counted, under its name or another: an excludeResourcePrefixes entry drops it, or a Replace
        transformation removes it and outputs nothing positive for it."""
        for prefix in self.excluded:
            if resource.startswith(prefix):
                return (f"resources.excludeResourcePrefixes entry {prefix!r} drops {resource!r} from every "
                        "workload's requests before admission")
        own = self.transformations.get(resource)
        if own is not None and own.strategy == "Replace" and not any(v > 0 for v in own.outputs.values()):
            return f"resources.transformations replaces {resource!r} (strategy Replace) with nothing"
        return None

    def uncounted(self, resource: str) -> Optional[str]:
        """Why Kueue does not count a pod's request of `resource` in full under that name (a clause), or None when
        it does: an excludeResourcePrefixes entry drops it; a Replace transformation removes it and outputs less
        than 1 of it per unit, or scales it by another request (multiplyBy); a negative factor of another
        transformation can lower what a Replace transformation generates of it."""
        for prefix in self.excluded:
            if resource.startswith(prefix):
                return (f"resources.excludeResourcePrefixes entry {prefix!r} drops {resource!r} from every "
                        "workload's requests before admission, so Kueue admits pods that use it without counting it")
        own = self.transformations.get(resource)
        if own is None or own.strategy != "Replace":
            return None  # Retain keeps the request whole; generated negatives are floored at 0 before they add
        factor = own.outputs.get(resource)
        if factor is None or factor < 1:
            outputs = ", ".join(f"{k}: {show(v)}" for k, v in own.outputs.items()) or "nothing"
            counted = "none" if factor is None or factor <= 0 else show(factor)
            return (f"resources.transformations replaces {resource!r} (strategy Replace) with {{{outputs}}}, so "
                    f"Kueue counts {counted} of it per GPU a pod uses")
        if own.multiply_by:
            return (f"resources.transformations replaces {resource!r} (strategy Replace) with itself multiplied by "
                    f"the pod's request of {own.multiply_by!r}, so a request below 1 of that undercounts it")
        for other in self.transformations.values():
            if other.input != resource and other.outputs.get(resource, Decimal(0)) < 0:
                return (f"resources.transformations outputs a negative {show(other.outputs[resource])} of {resource!r} "
                        f"per {other.input!r} while {resource!r} itself is replaced, so a pod requesting both is "
                        "counted for fewer than it uses")
        return None


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if _is_map(obj) else None


def parse(config: Mapping[str, Any], default_namespace: str = "kueue-system") -> Counting:
    """Read a Configuration (config.kueue.x-k8s.io v1beta1/v1beta2, parsed YAML) as Kueue 0.19.2 applies it.

    Args:
        config: the Configuration. default_namespace: Kueue's namespace when the Configuration has none (Kueue
            reads its service account's namespace).
    Returns:
        The Counting, its `problems` listing what the Configuration alone breaks: a feature gate (`gate_problems`),
        quotaCheckStrategy IgnoreUndeclared (with the QuotaCheckStrategy gate on) or an unknown strategy, an unknown
        integration framework, a malformed transformation or exclusion. Never raises on a malformed value (it is a
        problem) except UnknownValueError from an SDK proxy.
    """
    problems: list[Problem] = []
    namespace = _get(config, "namespace")
    namespace = namespace if isinstance(namespace, str) and namespace else default_namespace

    selector = _get(config, "managedJobsNamespaceSelector")
    if selector is None:
        selector = {"matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn",
                                          "values": ["kube-system", namespace]}]}

    gates_raw = _get(config, "featureGates")
    gates: Mapping[Any, Any] = {}
    if _is_map(gates_raw):
        gates = gates_raw
        problems += gate_problems(gates_raw)
    elif gates_raw is not None:
        problems.append(Problem("featureGates", gates_raw, "featureGates must map gate names to true or false",
                                "write featureGates as {GateName: true|false}"))

    def gate_on(name: str) -> bool:
        value = gates.get(name)
        return value if isinstance(value, bool) else FEATURE_GATES[name].default

    integrations = _get(config, "integrations")
    frameworks_raw = _get(integrations, "frameworks")
    explicit: list[str] = []
    if frameworks_raw is None or (_is_list(frameworks_raw) and not frameworks_raw):
        explicit = list(DEFAULT_FRAMEWORKS)
    elif not _is_list(frameworks_raw):
        problems.append(Problem("integrations.frameworks", frameworks_raw, "integrations.frameworks must be a list",
                                "list the framework names, e.g. [batch/job, pod, deployment]"))
    else:
        for name in frameworks_raw:
            if str(name) not in FRAMEWORKS:
                problems.append(Problem(
                    "integrations.frameworks", name, f"Kueue {KUEUE_VERSION} has no integration framework {name!r} "
                    "and its manager refuses to start (pkg/config/validation.go validateIntegrations)",
                    f"use one of {sorted(FRAMEWORKS)}"))
            else:
                explicit.append(str(name))
    frameworks = set(explicit)
    for name in explicit:
        frameworks.update(FRAMEWORKS[name])

    resources = _get(config, "resources")
    if resources is not None and not _is_map(resources):
        problems.append(Problem("resources", resources, "resources must be a map", "write resources as a map"))
        resources = {}
    excluded_raw = _get(resources, "excludeResourcePrefixes")
    excluded: list[str] = []
    if excluded_raw is not None:
        if not _is_list(excluded_raw):
            problems.append(Problem("resources.excludeResourcePrefixes", excluded_raw,
                                    "resources.excludeResourcePrefixes must be a list of strings",
                                    "list the prefixes, e.g. [cpu, memory]"))
        else:
            excluded = [str(p) for p in excluded_raw]
            if "" in excluded:
                problems.append(Problem(
                    "resources.excludeResourcePrefixes", excluded_raw, "the empty prefix excludes every resource, so "
                    "Kueue counts nothing against any quota", "remove the empty entry"))

    strategy = _get(resources, "quotaCheckStrategy")
    ignores = False
    if strategy is not None:
        if strategy not in QUOTA_CHECK_STRATEGIES:
            problems.append(Problem(
                "resources.quotaCheckStrategy", strategy, f"Kueue {KUEUE_VERSION} knows quotaCheckStrategy "
                "BlockUndeclared and IgnoreUndeclared only, and its manager refuses any other value",
                "remove quotaCheckStrategy (BlockUndeclared)"))
        elif strategy == "IgnoreUndeclared" and gate_on("QuotaCheckStrategy"):
            ignores = True
            problems.append(Problem(
                "resources.quotaCheckStrategy", strategy, "with quotaCheckStrategy IgnoreUndeclared Kueue skips every "
                "requested resource the ClusterQueue does not cover, so a GPU request on a queue without GPU quota "
                "is admitted uncounted", "remove quotaCheckStrategy, or set it to BlockUndeclared"))

    transformations: dict[str, Transformation] = {}
    raw_list = _get(resources, "transformations")
    if raw_list is not None and not _is_list(raw_list):
        problems.append(Problem("resources.transformations", raw_list, "resources.transformations must be a list",
                                "list the transformations"))
        raw_list = []
    for index, item in enumerate(raw_list or []):
        path = f"resources.transformations[{index}]"
        if not _is_map(item) or not isinstance(_get(item, "input"), str):
            problems.append(Problem(path, item, "a transformation needs an input resource name",
                                    "set input to a resource name"))
            continue
        name = str(item["input"])
        kind = _get(item, "strategy")
        kind = "Retain" if kind is None else kind
        if kind not in STRATEGIES:
            problems.append(Problem(f"{path}.strategy", kind, "a transformation's strategy is Retain or Replace, and "
                                    "the manager refuses any other value", "set strategy to Retain"))
            continue
        if name in transformations:
            problems.append(Problem(f"{path}.input", name, "two transformations of one input: the manager refuses "
                                    "to start", "merge them into one"))
            continue
        outputs: dict[str, Decimal] = {}
        raw_outputs = _get(item, "outputs")
        if raw_outputs is not None and not _is_map(raw_outputs):
            problems.append(Problem(f"{path}.outputs", raw_outputs, "outputs must map resource names to quantities",
                                    "write outputs as {resource: quantity}"))
            continue
        bad = False
        for out_name, raw in (raw_outputs or {}).items():
            try:
                outputs[str(out_name)] = parse_quantity_strict(raw)
            except ValueError as err:
                problems.append(Problem(f"{path}.outputs", {out_name: raw}, f"an output factor must be a quantity "
                                        f"(it {err})", "write a quantity such as 1 or 500m"))
                bad = True
        if bad:
            continue
        multiply = _get(item, "multiplyBy")
        transformations[name] = Transformation(name, str(kind), str(multiply) if multiply else None, outputs)

    return Counting(namespace, selector, frozenset(frameworks), tuple(excluded), transformations, ignores,
                    tuple(problems))
