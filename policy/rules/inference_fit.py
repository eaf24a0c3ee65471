"""inference-fits-nominal (stack policy): one InferenceService replica fits in the nominalQuota of the
ClusterQueue behind its LocalQueue, so serving never depends on borrowed (reclaimable) quota.

Upstream: KServe `pkg/apis/serving/v1beta1/predictor.go` (PredictorSpec: `model` is an inline container with
`resources`, `containers` an inline PodSpec, legacy framework specs such as `sklearn` are containers too) and
`component.go` (ComponentExtensionSpec `labels`); Kueue `pkg/workload/resources.go` (limits stand in for missing
requests); Kueue fit rule (`concepts/cluster_queue.md`: a request that is at most the unused nominal quota fits
without borrowing).
"""
from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Iterable

from .kueue import quota_entries
from .objects import QUEUE_NAME_LABEL, KubeObject, guarded, unknown_violation
from .quantities import parse, show
from .queues import QueueIndex
from .values import MISSING, UnknownValueError, Violation, as_list, as_map, get, is_map

KSERVE_GROUP = "serving.kserve.io"


def _containers(predictor) -> list[tuple[str, object]]:
    """(path, container) for the predictor's model, its inline containers and legacy framework specs."""
    found = []
    for key in list(predictor):
        if key == "containers":
            for i, container in enumerate(as_list(predictor[key])):
                found.append((f"spec.predictor.containers[{i}]", container))
        elif key not in ("labels", "annotations") and is_map(predictor[key]) and "resources" in predictor[key]:
            found.append((f"spec.predictor.{key}", predictor[key]))
    return found


def replica_requests(isvc: KubeObject) -> dict[str, Decimal]:
    """Per-replica requests of an InferenceService predictor, summed over its containers.

    A resource with only a limit counts with its limit (Kueue does the same). Returns resource -> quantity;
    unparsable quantities raise ValueError naming the field. Raises UnknownValueError for unknown requests.
    """
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for path, container in _containers(as_map(get(isvc.spec, "predictor"))):
        resources = as_map(get(container, "resources"))
        requests = dict(as_map(get(resources, "requests")).items())
        for name, value in as_map(get(resources, "limits")).items():
            requests.setdefault(name, value)
        for name, raw in requests.items():
            value = parse(raw)
            if value is None:
                raise ValueError(f"{path}.resources '{name}' is {raw!r}, which is not a Kubernetes quantity")
            totals[name] += value
    return dict(totals)


def check_inference_fits_nominal(objects: Iterable[KubeObject]) -> list[Violation]:
    """inference-fits-nominal over the whole stack.

    Args:
        objects: every Kubernetes object of the stack; InferenceServices with a `kueue.x-k8s.io/queue-name` label
            (metadata.labels or spec.predictor.labels) are judged.
    Returns:
        Violations for: a LocalQueue or ClusterQueue that is not in the stack (fail closed: the quota cannot be
        checked); a requested resource the ClusterQueue does not cover; a per-replica request above the
        ClusterQueue's nominalQuota for that resource (largest over its flavors); unknown values.
    """
    objects = list(objects)
    queues = QueueIndex.build(objects)
    found: list[Violation] = []
    for isvc in (o for o in objects if o.is_kind(KSERVE_GROUP, "InferenceService")):

        def check(isvc: KubeObject = isvc) -> list[Violation]:
            queue = get(isvc.labels, QUEUE_NAME_LABEL)
            if queue is MISSING:
                queue = get(isvc.spec, "predictor", "labels", QUEUE_NAME_LABEL)
            if queue is MISSING:
                return []
            namespace = isvc.namespace
            lq = f"{namespace}/{queue}" if namespace else str(queue)
            cq_name = queues.cluster_queue_of(namespace, str(queue))
            if cq_name is None or cq_name not in queues.cluster_queues:
                missing = f"LocalQueue '{lq}'" if cq_name is None else f"ClusterQueue '{cq_name}'"
                return [Violation(
                    f"The {isvc.describe()} is queued to LocalQueue '{lq}', but the {missing} is not in this stack, "
                    f"so its nominalQuota cannot be checked and the policy fails closed; define the queue in this "
                    f"stack or queue the InferenceService to one that is.",
                    isvc.urn or None)]
            cq = queues.cluster_queues[cq_name]
            nominal: dict[str, Decimal] = {}
            try:
                for entry in quota_entries(cq):
                    value = parse(entry.field("nominalQuota"))
                    if value is not None:
                        nominal[entry.resource] = max(nominal.get(entry.resource, value), value)
            except UnknownValueError as err:
                return [unknown_violation(cq, err)]
            try:
                requests = replica_requests(isvc)
            except ValueError as err:
                return [Violation(f"The {isvc.describe()} has {err}; fix the quantity.", isvc.urn or None)]
            problems = []
            for resource, amount in sorted(requests.items()):
                binary = resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")
                if resource not in nominal:
                    problems.append(f"'{resource}' {show(amount, binary)} (the ClusterQueue covers no such resource)")
                elif amount > nominal[resource]:
                    problems.append(f"'{resource}' {show(amount, binary)} (nominalQuota "
                                    f"{show(nominal[resource], binary)})")
            if not problems:
                return []
            return [Violation(
                f"The {isvc.describe()} requests per replica more than the nominalQuota of ClusterQueue '{cq_name}' "
                f"behind LocalQueue '{lq}': {', '.join(problems)}; lower the predictor's requests or raise the "
                f"ClusterQueue's nominalQuota, so that serving never runs on borrowed quota.",
                isvc.urn or None)]

        found.extend(guarded(isvc, check))
    return found
