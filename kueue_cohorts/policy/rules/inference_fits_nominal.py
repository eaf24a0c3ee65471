"""INFERENCE_FITS_NOMINAL (stack policy): one InferenceService replica fits in the nominalQuota of the
ClusterQueue behind its LocalQueue, so serving never depends on borrowed (reclaimable) quota.

Upstream: KServe `pkg/apis/serving/v1beta1/predictor.go` (PredictorSpec: `model` is an inline container with
`resources`, `containers` an inline PodSpec, legacy framework specs such as `sklearn` are containers too) and
`component.go` (ComponentExtensionSpec `labels`); Kueue `pkg/workload/resources.go` (limits stand in for missing
requests); Kueue fit rule (`concepts/cluster_queue.md`: a request that is at most the unused nominal quota fits
without borrowing).
"""
from __future__ import annotations

from typing import Iterable

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import QUEUE_NAME_LABEL, KubeObject, guarded, unknown_violation, violation
from .vocabulary.quantity import parse, show
from .vocabulary.queues import QueueIndex
from .vocabulary.quota import flavor_fit, quota_entries
from .vocabulary.serving import KSERVE_GROUP, replica_requests_with_fields
from .vocabulary.values import MISSING, UnknownValueError, Violation, get


def check_inference_fits_nominal(objects: Iterable[KubeObject]) -> list[Violation]:
    """INFERENCE_FITS_NOMINAL over the whole stack.

    Args:
        objects: every Kubernetes object of the stack; InferenceServices with a `kueue.x-k8s.io/queue-name` label
            (metadata.labels or spec.predictor.labels) are judged.
    Returns:
        Violations for: a LocalQueue or ClusterQueue that is not in the stack (fail closed: the quota cannot be
        checked); a requested resource the ClusterQueue does not cover; a replica that fits no flavor: per resource
        group, no flavor whose nominalQuota holds every requested resource of the group (Kueue assigns one flavor per
        resource group), reported per resource that misses in the closest flavor; unknown values.
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
                return [violation(
                    isvc, INFERENCE_FITS_NOMINAL.name, "metadata.namespace", namespace,
                    f"an InferenceService must run where its LocalQueue is: the {missing} is not in this stack, so "
                    "its quota cannot be checked",
                    "put the InferenceService in a namespace of the inference ClusterQueue (or omit the namespace)",
                    message=
                        f"The {isvc.describe()} is queued to LocalQueue '{lq}', but the {missing} is not in "
                        "this stack, "
                    f"so its nominalQuota cannot be checked and the policy fails closed; define the queue in this "
                    f"stack or queue the InferenceService to one that is.")]
            cq = queues.cluster_queues[cq_name]
            try:
                requests = replica_requests_with_fields(isvc)
            except ValueError as err:
                return [violation(isvc, INFERENCE_FITS_NOMINAL.name,
                                  "spec.predictor", MISSING, f"has {err}", "fix the quantity",
                                  message=f"The {isvc.describe()} has {err}; fix the quantity.")]
            try:
                fit = flavor_fit(cq, {r: a for r, (a, _) in requests.items()},
                                 lambda entry: parse(entry.field("nominalQuota")))
            except UnknownValueError as err:
                return [unknown_violation(cq, err)]
            several = len({e.flavor for e in quota_entries(cq)}) > 1
            found = []
            for resource, (amount, where) in sorted(requests.items()):
                binary = resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")
                if resource in fit.uncovered:
                    shown = f"'{resource}' {show(amount, binary)} (the ClusterQueue covers no such resource)"
                    rule = (f"'{resource}' is not covered by ClusterQueue '{cq_name}', so Kueue can never admit a "
                            f"replica (a limit without a request requests its limit)")
                    fix = f"add '{resource}' to the ClusterQueue's nominalQuota, or drop it from the replica"
                elif resource in fit.short:
                    limit, flavor = fit.short[resource]
                    in_flavor = f" in its closest flavor '{flavor}' (no flavor holds the whole replica)" \
                        if several else ""
                    shown = f"'{resource}' {show(amount, binary)} (nominalQuota {show(limit, binary)}{in_flavor})"
                    rule = (f"one replica asks for {show(amount, binary)}, more than the nominalQuota "
                            f"{show(limit, binary)} of ClusterQueue '{cq_name}'{in_flavor}; with borrowingLimit 0 it "
                            "can never be admitted, and it does not trigger reclaim")
                    fix = (f"request at most {show(limit, binary)} per replica, or raise the "
                           "nominalQuota" + (f" of flavor '{flavor}'" if several else ""))
                else:
                    continue
                found.append(violation(
                    isvc, INFERENCE_FITS_NOMINAL.name, where, show(amount, binary), rule, fix,
                    message=f"The {isvc.describe()} requests per replica more than the nominalQuota of ClusterQueue "
                    f"'{cq_name}' behind LocalQueue '{lq}': {shown}; lower the predictor's requests or raise the "
                    f"ClusterQueue's nominalQuota, so that serving never runs on borrowed quota."))
            return found

        found.extend(guarded(isvc, check))
    return found


INFERENCE_FITS_NOMINAL: Declaration = Declaration(
    name="inference-fits-nominal",
    description="An InferenceService replica fits in the nominalQuota of its ClusterQueue.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_inference_fits_nominal(objects))
