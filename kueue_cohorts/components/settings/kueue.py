"""`kueue-cohorts:kueue`: Kueue itself (install or rely on one, chart source, the manager Configuration's
frameworks, namespaces, requeuing, waitForPodsReady, resources).
"""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal, Optional

from pydantic import (
    Field,
)

from kueue_cohorts.components.settings.base import SELECTS_PROGRAM, DnsLabel, GoDuration, LabelSelector, Model
from kueue_cohorts.components.settings.runtime import (
    WholeNumber,
)

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


class LocalQueueMetrics(Model):
    """`kueue.metrics.localQueueMetrics` of the Kueue manager Configuration (config.kueue.x-k8s.io/v1beta2
    LocalQueueMetrics, apis/config/v1beta2/configuration_types.go v0.19.2): the `kueue_local_queue_*` series."""

    enable: bool = True
    """Report the LocalQueue metrics (kueue_local_queue_pending_workloads, ..._admission_wait_time_seconds,
    ..._resource_usage, ...; Kueue's LocalQueueMetrics feature gate, on by default in 0.19). Default true."""
    local_queue_selector: Optional[LabelSelector] = None
    """A LabelSelector of the LocalQueues to report. Omitted: every LocalQueue."""


class KueueMetrics(Model):
    """`kueue.metrics`: the metrics Kueue's manager reports (config.kueue.x-k8s.io/v1beta2 ControllerMetrics, v0.19.2),
    which the stack's alerts, dashboard and `kueue-cohorts report` read. Cohort metrics (kueue_cohort_*) follow
    Kueue's feature gate MetricsForCohorts (Beta, on in 0.19): `kueue.featureGates: {MetricsForCohorts: false}`
    turns them off."""

    enable_cluster_queue_resources: bool = True
    """Report the ClusterQueue quota and usage gauges (kueue_cluster_queue_nominal_quota, ..._borrowing_limit,
    ..._lending_limit, ..._resource_reservation, ..._resource_usage; off in Kueue unless set). Default true: the
    borrowing and headroom alerts, the dashboard's quota panels and the report's GPU-hours need them; false leaves
    them empty."""
    local_queue_metrics: LocalQueueMetrics = LocalQueueMetrics()
    """The LocalQueue metrics. Default: on for every LocalQueue."""


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
    chart_source: Annotated[ChartSource, SELECTS_PROGRAM] = ChartSource.PUBLISHED
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
    metrics: KueueMetrics = KueueMetrics()
    """The metrics of the manager Configuration (`metrics`). Default: ClusterQueue resource gauges and LocalQueue
    metrics on."""
    values: dict[str, Any] = Field(default_factory=dict)
    """Helm values for Kueue's chart (install true only), merged under the program's: the image mirror
    (controllerManager.manager.image.repository, tag), controllerManager.replicas, controllerManager.manager.resources,
    enableKueueViz and kueueViz, ... Checked against the pinned chart's values.yaml (unknown keys, types).
    managerConfig and controllerManager.featureGates are refused: set them through the kueue keys above, which the
    rule book judges. Default none."""

