"""INFERENCE_ROLLOUT_FITS_NOMINAL (mandatory; its advisory twin INFERENCE_PEAK_FITS_NOMINAL, in
inference_peak_fits_nominal.py, reads the same lifecycle model): the whole lifecycle of an inference workload
(InferenceService, Deployment, StatefulSet, LeaderWorkerSet) fits the nominalQuota of its ClusterQueue, so that an
update never deadlocks on its own quota. StatefulSets never surge (`statefulset_strategy`); a LeaderWorkerSet's
replica is a group of pods and its surge whole groups (`lws_strategy_of`).

Inference never borrows (borrowingLimit 0), so its pods can only ever use their ClusterQueue's nominalQuota. A
rolling update first creates `maxSurge` new pods; each gets its own Kueue Workload (Kueue's pod integration, which the
`deployment` integration uses), and when the old replicas hold all the quota with the same priority, nothing can be
preempted for it: the surge pod stays SchedulingGated and the rollout never finishes. Judged, per workload queued
(label `kueue.x-k8s.io/queue-name`) to an inference ClusterQueue:

- steady state: the lowest replica count (InferenceService `minReplicas`, at least 1 as KServe's autoscaler uses it;
  a Deployment's `replicas`, default 1) x the per-replica requests fits nominalQuota;
- update: the replicas holding quota when the update starts, plus the surge of the rollout strategy, fit
  nominalQuota. For a Deployment that is `replicas` + surge. For an InferenceService it is `maxReplicas` + surge,
  where `maxReplicas` is capped at the replicas that fit nominalQuota (replicas above it stay pending by design, the
  advisory rule reports them, and an update started up there waits until the autoscaler scales down);
- peak (advisory): `maxReplicas` x the per-replica requests fits nominalQuota.

The surge is Kubernetes' `RollingUpdate.maxSurge`: an int, or a percentage of the desired replicas rounded UP
(k8s.io/apimachinery `intstr.GetScaledValueFromIntOrPercent(maxSurge, replicas, true)` in the deployment controller's
`deploymentutil.ResolveFenceposts`); absent means 25% (apps/v1 defaulting, and KServe's `setDefaultDeploymentSpec`
for a predictor without `deploymentStrategy`); `Recreate` has no surge.

Upstream: KServe `pkg/apis/serving/v1beta1/component.go` (ComponentExtensionSpec `deploymentStrategy
*appsv1.DeploymentStrategy`, "only applicable for raw deployment mode"; `minReplicas` default 1),
`reconcilers/deployment/deployment_reconciler.go` (the predictor's Deployment takes `deploymentStrategy` as its
`spec.strategy`), `reconcilers/hpa/hpa_reconciler.go` (minReplicas < 1 reads as 1, maxReplicas < minReplicas reads as
minReplicas); Kubernetes `pkg/controller/deployment/rolling.go`; Kueue `pkg/controller/jobs/deployment`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterable, Mapping, Optional, Sequence

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import QUEUE_NAME_LABEL, KubeObject, guarded, unknown_violation, violation
from .vocabulary.quantity import parse, show
from .vocabulary.queues import QueueIndex
from .vocabulary.quota import quota_entries
from .vocabulary.roles import ROLE_OPTIONS, inference_queue_names
from .vocabulary.serving import KSERVE_GROUP, replica_requests_with_fields
from .vocabulary.surge import (
    DEFAULT_MAX_SURGE,
    SAFE_STRATEGY,
    max_replicas_that_fit,
    overflow,
    surge_pods,
    update_overflow,
    update_replicas,
)
from .vocabulary.values import MISSING, UnknownValueError, Violation, as_list, as_map, format_path, get

DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
RAW_MODES = ("RawDeployment", "Standard")
"""KServe deployment modes whose predictor is a plain Deployment (`deploymentStrategy` applies)."""
__all__ = ["DEFAULT_MAX_SURGE", "SAFE_STRATEGY", "INFERENCE_ROLLOUT_FITS_NOMINAL", "surge_pods", "update_overflow",
           "update_replicas", "check_inference_rollout_fits_nominal", "lifecycles", "amounts", "raise_to",
           "lifecycle_of", "queue_of", "judge", "nominal_of", "SERVING_KINDS", "LWS_GROUP"]


def nominal_of(cluster_queue: KubeObject) -> dict[str, Decimal]:
    """nominalQuota per resource of a ClusterQueue (the largest over its flavors, as INFERENCE_FITS_NOMINAL reads
    it). Raises UnknownValueError for a quota unknown at preview."""
    nominal: dict[str, Decimal] = {}
    for entry in quota_entries(cluster_queue):
        value = parse(entry.field("nominalQuota"))
        if value is not None:
            nominal[entry.resource] = max(nominal.get(entry.resource, value), value)
    return nominal


@dataclass(frozen=True)
class Strategy:
    """The rollout strategy of a workload as it decides the surge.

    field: the field path that decides the surge (`...rollingUpdate.maxSurge` when set, else the strategy or the
    `rollingUpdate` block that is missing). value: the value there (MISSING when absent). max_surge: what to scale
    (None for Recreate: no surge). error: why the strategy is invalid, else None.
    """

    field: str
    value: Any
    max_surge: Any
    error: Optional[str] = None
    capped: bool = False
    """The surge is capped at the replicas (LeaderWorkerSet's controller does; a Deployment's does not)."""
    fix: str = ("set the rolling update's maxSurge to 0 and maxUnavailable to 1 (one replica is down while it is "
                "replaced)")
    """How to drop the surge, for the message."""
    error_fix: str = "use an integer >= 0 or a percentage such as '25%' (RollingUpdate), or type Recreate"
    """How to write a valid strategy, for the message about `error`."""


def strategy_of(props: Any, path: Sequence[Any]) -> Strategy:
    """Read the apps/v1 DeploymentStrategy at `path` in `props` (`spec.strategy` of a Deployment,
    `spec.predictor.deploymentStrategy` of an InferenceService), with apps/v1 defaulting: type RollingUpdate,
    maxSurge 25%. Raises UnknownValueError for values unknown at preview."""
    strategy = get(props, *path)
    if strategy is MISSING:
        return Strategy(format_path(path), MISSING, DEFAULT_MAX_SURGE)
    kind = get(strategy, "type")
    if kind == "Recreate":
        return Strategy(format_path([*path, "type"]), kind, None)
    if kind not in (MISSING, "RollingUpdate"):
        return Strategy(format_path([*path, "type"]), kind, None, "the strategy type must be RollingUpdate or Recreate")
    rolling = get(strategy, "rollingUpdate")
    if rolling is MISSING:
        return Strategy(format_path([*path, "rollingUpdate"]), MISSING, DEFAULT_MAX_SURGE)
    value = get(rolling, "maxSurge")
    field = format_path([*path, "rollingUpdate", "maxSurge"])
    try:
        surge_pods(None if value is MISSING else value, 1)
    except ValueError as err:
        return Strategy(field, value, None, str(err))
    return Strategy(field, value, DEFAULT_MAX_SURGE if value is MISSING else value)


LWS_GROUP = "leaderworkerset.x-k8s.io"
LWS_SURGE = ("spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxSurge")


def lws_strategy_of(props: Any) -> Strategy:
    """The surge of a LeaderWorkerSet update (leaderworkerset.x-k8s.io/v1, lws@v0.9.0 `leaderworkerset_types.go`:
    `rolloutStrategy.rollingUpdateConfiguration.maxSurge`, default 0, an int or a percentage of `replicas`; the
    controller rounds it up and caps it at `replicas`, `pkg/controllers/leaderworkerset_controller.go`). Each surge
    replica is a whole group (leader + workers), admitted by Kueue as its own Workload. Raises UnknownValueError."""
    value = get(props, *LWS_SURGE)
    field = format_path(list(LWS_SURGE))
    try:
        surge_pods(0 if value is MISSING else value, 1)
    except ValueError as err:
        return Strategy(field, value, None, str(err), True, _LWS_FIX, _LWS_ERROR_FIX)
    return Strategy(field, value, 0 if value is MISSING else value, None, True, _LWS_FIX, _LWS_ERROR_FIX)


_LWS_FIX = "set spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge to 0 (LeaderWorkerSet's default)"
_LWS_ERROR_FIX = ("use an integer >= 0 or a percentage of spec.replicas such as '25%' (a LeaderWorkerSet's "
                  "rolloutStrategy has no Recreate type)")


def statefulset_strategy() -> Strategy:
    """A StatefulSet update never surges: RollingUpdate replaces pods in place (maxUnavailable, partition) and
    OnDelete waits for deletions (apps/v1 `StatefulSetUpdateStrategy`); Kueue's statefulset integration admits all
    replicas as one pod group Workload (kueue@v0.19.2 `pkg/controller/jobs/statefulset/statefulset_reconciler.go`
    `constructWorkload`, PodSet count = replicas), whose replacement pods reuse its quota."""
    return Strategy("spec.updateStrategy", MISSING, None)


@dataclass(frozen=True)
class Lifecycle:
    """One inference workload as these rules judge it.

    obj: the InferenceService or Deployment. autoscaled: True for an InferenceService (minReplicas..maxReplicas).
    steady / steady_field / steady_value: the lowest replica count, its field and the value written there.
    peak / peak_field / peak_value: the highest. requests: per-replica requests, resource -> quantity.
    strategy: its rollout strategy. cluster_queue / nominal: its inference ClusterQueue and nominalQuota.
    """

    obj: KubeObject
    autoscaled: bool
    steady: int
    steady_field: str
    steady_value: Any
    peak: int
    peak_field: str
    peak_value: Any
    requests: Mapping[str, Decimal]
    strategy: Strategy
    cluster_queue: str
    nominal: Mapping[str, Decimal]
    unit: str = "pod"
    """What one replica is: "pod", or "group of N pods" for a LeaderWorkerSet."""
    requests_field: str = "spec.template.spec"
    """Where the per-replica requests come from, for the message."""


def _int(value: Any, default: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _pod_requests(pod_spec: Any, where: str = "spec.template.spec") -> dict[str, Decimal]:
    """Per-pod requests of a PodSpec as Kueue counts them: the sum over containers, at least each init container's
    (a limit without a request requests its limit). Raises ValueError for a value that is not a quantity."""

    def of(container: Any, where: str) -> dict[str, Decimal]:
        resources = as_map(get(container, "resources"))
        merged = {**dict(as_map(get(resources, "limits"))), **dict(as_map(get(resources, "requests")))}
        out = {}
        for name, raw in merged.items():
            value = parse(raw)
            if value is None:
                raise ValueError(f"{where}.resources of '{name}' is {raw!r}, which is not a Kubernetes quantity")
            out[name] = value
        return out

    total: dict[str, Decimal] = {}
    for i, container in enumerate(as_list(get(pod_spec, "containers"))):
        for name, value in of(container, f"{where}.containers[{i}]").items():
            total[name] = total.get(name, Decimal(0)) + value
    for i, container in enumerate(as_list(get(pod_spec, "initContainers"))):
        for name, value in of(container, f"{where}.initContainers[{i}]").items():
            total[name] = max(total.get(name, Decimal(0)), value)
    return total


def queue_of(obj: KubeObject) -> Any:
    """The `kueue.x-k8s.io/queue-name` of a serving workload: on the object, on KServe's `spec.predictor.labels`, on
    the pod template, or on a LeaderWorkerSet's worker template (first found); MISSING when none."""
    for path in (("metadata", "labels"), ("spec", "predictor", "labels"), ("spec", "template", "metadata", "labels"),
                 ("spec", "leaderWorkerTemplate", "workerTemplate", "metadata", "labels")):
        queue = get(obj.props, *path, QUEUE_NAME_LABEL)
        if queue is not MISSING:
            return queue
    return MISSING


SERVING_KINDS = (("apps", "Deployment"), ("apps", "StatefulSet"), (LWS_GROUP, "LeaderWorkerSet"))
"""The workload kinds that serve inference besides KServe's InferenceService: Kueue 0.19.2 manages their pods
through its `deployment`, `statefulset` and `leaderworkerset.x-k8s.io/leaderworkerset` integrations
(`pkg/controller/jobs/<framework>`)."""


def is_serving_workload(obj: KubeObject) -> bool:
    """True for an InferenceService, Deployment, StatefulSet or LeaderWorkerSet (any version)."""
    return obj.is_kind(KSERVE_GROUP, "InferenceService") or any(obj.is_kind(g, k) for g, k in SERVING_KINDS)


def _lws_group_requests(obj: KubeObject) -> tuple[dict[str, Decimal], int]:
    """Per-group requests of a LeaderWorkerSet: the leader pod (`leaderTemplate`, else the worker template) plus
    `size - 1` worker pods (`leaderWorkerTemplate.size`, default 1). Returns (requests, size); raises ValueError for
    a quantity that does not parse."""
    lwt = get(obj.spec, "leaderWorkerTemplate")
    size = max(_int(get(lwt, "size"), 1), 1)
    worker = _pod_requests(get(lwt, "workerTemplate", "spec"), "spec.leaderWorkerTemplate.workerTemplate.spec")
    leader_spec = get(lwt, "leaderTemplate", "spec")
    leader = worker if leader_spec is MISSING else _pod_requests(
        leader_spec, "spec.leaderWorkerTemplate.leaderTemplate.spec")
    total = dict(leader)
    for name, value in worker.items():
        total[name] = total.get(name, Decimal(0)) + value * (size - 1)
    return total, size


def lifecycle_of(obj: KubeObject, cq: str, nominal: Mapping[str, Decimal]) -> Lifecycle:
    """What these rules judge of one serving workload queued to the inference ClusterQueue `cq` with nominalQuota
    `nominal` (resource -> quantity): an InferenceService, Deployment, StatefulSet or LeaderWorkerSet.

    Raises ValueError for a request that is not a quantity, UnknownValueError for values unknown at preview.
    """
    if obj.is_kind(KSERVE_GROUP, "InferenceService"):
        requests = {r: v for r, (v, _) in replica_requests_with_fields(obj).items()}
        low = get(obj.spec, "predictor", "minReplicas")
        high = get(obj.spec, "predictor", "maxReplicas")
        steady = max(_int(low, 1), 1)
        return Lifecycle(obj, True, steady, "spec.predictor.minReplicas", low, max(_int(high, 0), steady),
                         "spec.predictor.maxReplicas", high, requests,
                         strategy_of(obj.props, ("spec", "predictor", "deploymentStrategy")), cq, nominal,
                         requests_field="spec.predictor")
    replicas = get(obj.spec, "replicas")
    count = _int(replicas, 1)
    if obj.is_kind(LWS_GROUP, "LeaderWorkerSet"):
        requests, size = _lws_group_requests(obj)
        unit = "pod" if size == 1 else f"group of {size} pods (leader + {size - 1} workers)"
        return Lifecycle(obj, False, count, "spec.replicas", replicas, count, "spec.replicas", replicas, requests,
                         lws_strategy_of(obj.props), cq, nominal, unit, "spec.leaderWorkerTemplate")
    requests = _pod_requests(get(obj.spec, "template", "spec"))
    strategy = statefulset_strategy() if obj.is_kind("apps", "StatefulSet") \
        else strategy_of(obj.props, ("spec", "strategy"))
    return Lifecycle(obj, False, count, "spec.replicas", replicas, count, "spec.replicas", replicas, requests,
                     strategy, cq, nominal)


def lifecycles(objects: Sequence[KubeObject], inference_names: Iterable[str]) -> tuple[list[Lifecycle],
                                                                                          list[Violation]]:
    """Every InferenceService (raw/Standard deployment mode, or no mode: KServe >= 0.16's default Standard),
    apps/v1 Deployment and StatefulSet and LeaderWorkerSet of `objects` queued to one of the inference ClusterQueues
    `inference_names` (through a LocalQueue of the stack), with what these rules judge (`lifecycle_of`).

    Returns (lifecycles, violations): fail-closed violations for values unknown at preview and quantities that
    do not parse. Workloads whose LocalQueue is not in the stack are left to INFERENCE_FITS_NOMINAL.
    """
    names = set(inference_names)
    queues = QueueIndex.build(objects)
    found: list[Lifecycle] = []
    problems: list[Violation] = []
    for obj in objects:
        if not is_serving_workload(obj):
            continue

        def read(obj: KubeObject = obj) -> list[Violation]:
            if obj.is_kind(KSERVE_GROUP, "InferenceService") and \
                    get(obj.annotations, DEPLOYMENT_MODE_ANNOTATION) not in (MISSING, *RAW_MODES):
                return []  # Knative/ModelMesh: no Deployment, no deploymentStrategy
            queue = queue_of(obj)
            if not isinstance(queue, str):
                return []
            cq = queues.cluster_queue_of(obj.namespace, queue)
            if cq is None or cq not in names or cq not in queues.cluster_queues:
                return []
            try:
                nominal = nominal_of(queues.cluster_queues[cq])
            except UnknownValueError as err:
                return [unknown_violation(queues.cluster_queues[cq], err)]
            try:
                found.append(lifecycle_of(obj, cq, nominal))
            except ValueError as err:
                return [violation(obj, INFERENCE_ROLLOUT_FITS_NOMINAL.name,
                                  "spec", MISSING, f"has {err}", "fix the quantity",
                                  message=f"The {obj.describe()} has {err}; fix the quantity.")]
            return []

        problems.extend(guarded(obj, read))
    return found, problems


def _plural(unit: str) -> str:
    return "pod(s)" if unit == "pod" else f"group(s) of {unit.split(' ')[2]} pods"


def _binary(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def amounts(over: Mapping[str, tuple[Decimal, Decimal]]) -> str:
    """resource -> (needed, nominalQuota) as "'r' need > nominal, ..." for messages."""
    return ", ".join(f"'{r}' {show(need, _binary(r))} > {show(nominal, _binary(r))}"
                     for r, (need, nominal) in over.items())


def raise_to(over: Mapping[str, tuple[Decimal, Decimal]]) -> str:
    """resource -> (needed, nominalQuota) as the fix "'r' to need, ..."."""
    return ", ".join(f"'{r}' to {show(need, _binary(r))}" for r, (need, _) in over.items())


def judge(life: Lifecycle) -> list[Violation]:
    """The mandatory findings for one workload: its steady state, then its update (one finding each at most)."""
    obj, cq = life.obj, life.cluster_queue
    fit = max_replicas_that_fit(life.requests, life.nominal)
    if fit == 0:
        if life.autoscaled:
            return []  # one replica of an InferenceService never fits: INFERENCE_FITS_NOMINAL reports it
        one = overflow(life.requests, 1, life.nominal)
        return [violation(
            obj, INFERENCE_ROLLOUT_FITS_NOMINAL.name, life.requests_field, amounts(one),
            f"one {life.unit} asks for more than the nominalQuota of ClusterQueue '{cq}' ({amounts(one)}); "
            "inference never borrows, so it can never be admitted",
            f"lower the {life.unit}'s requests, or raise the nominalQuota of {raise_to(one)}")]
    replicas_word = "minReplicas" if life.autoscaled else "replicas"
    steady_over = overflow(life.requests, life.steady, life.nominal)
    if steady_over:
        return [violation(
            obj, INFERENCE_ROLLOUT_FITS_NOMINAL.name, life.steady_field, life.steady_value,
            f"{replicas_word} {life.steady} x the per-replica requests needs more than the nominalQuota of "
            f"ClusterQueue '{cq}' ({amounts(steady_over)}); inference never borrows, so the replicas beyond {fit} "
            "stay SchedulingGated for ever and every rollout deadlocks",
            f"lower {replicas_word} to {fit}, or raise the nominalQuota of {raise_to(steady_over)}")]
    strategy = life.strategy
    if strategy.error is not None:
        return [violation(obj, INFERENCE_ROLLOUT_FITS_NOMINAL.name, strategy.field, strategy.value, strategy.error,
                          strategy.error_fix)]
    if strategy.max_surge is None:
        return []  # Recreate: every old pod goes first
    replicas = update_replicas(life.steady, life.peak, life.requests, life.nominal) if life.autoscaled \
        else life.peak
    surge = surge_pods(strategy.max_surge, replicas)
    if strategy.capped:
        surge = min(surge, replicas)
    over = overflow(life.requests, replicas + surge, life.nominal)
    if not over:
        return []
    shown = f"the default {DEFAULT_MAX_SURGE}" if strategy.value is MISSING else repr(strategy.value)
    at = (f"{replicas} replicas (maxReplicas, capped at the {fit} that fit)" if life.autoscaled and
          replicas < life.peak else f"{replicas} replicas")
    return [violation(
        obj, INFERENCE_ROLLOUT_FITS_NOMINAL.name, strategy.field, strategy.value,
        f"an update of {at} with maxSurge {shown} starts {surge} surge {_plural(life.unit)} and needs "
        f"{replicas + surge} replicas' "
        f"worth of quota, more than the nominalQuota of ClusterQueue '{cq}' ({amounts(over)}); inference never "
        "borrows and the old replicas have the same priority, so the surge pod stays SchedulingGated and the "
        "rollout never finishes",
        f"{strategy.fix}, or reserve headroom: raise the nominalQuota of {raise_to(over)}")]


def check_inference_rollout_fits_nominal(objects: Iterable[KubeObject], inference_names: Iterable[str]
                                         ) -> list[Violation]:
    """INFERENCE_ROLLOUT_FITS_NOMINAL over the whole stack.

    Args:
        objects: every Kubernetes object of the stack. inference_names: the inference ClusterQueue names
            (`book.inference_queue_names`).
    Returns:
        Per InferenceService / Deployment on an inference ClusterQueue: a violation at minReplicas (replicas) when
        the steady state does not fit nominalQuota, else at the strategy field when an update does not; plus
        fail-closed violations for unknown values and invalid quantities or strategies.
    """
    found, problems = lifecycles(list(objects), inference_names)
    for life in found:
        problems.extend(guarded(life.obj, functools.partial(judge, life)))
    return problems


INFERENCE_ROLLOUT_FITS_NOMINAL: Declaration = Declaration(
    name="inference-rollout-fits-nominal",
    description="An inference workload's steady state and every rolling update (replicas plus maxSurge) fit the "
                "nominalQuota of its ClusterQueue, so an update never deadlocks on its own quota.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_inference_rollout_fits_nominal(
        objects, inference_queue_names(objects, options)),
    options=ROLE_OPTIONS)
