"""InferenceService: a KServe InferenceService (serving.kserve.io/v1beta1) admitted through the inference LocalQueue.

In raw-deployment mode KServe runs the predictor as a Deployment whose pod template carries the InferenceService's
and the predictor's labels (kserve pkg/controller/v1beta1/inferenceservice/components/predictor.go), so the
`kueue.x-k8s.io/queue-name` and `kueue.x-k8s.io/priority-class` labels put here reach Kueue's deployment and pod
integrations.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Optional

import pulumi

from components.model.kueue import ClusterQueueSpec
from components.model.render import Rendered
from components.resources.manifest import ManifestResource
from components.settings import InferenceServiceSettings, quantity


def quota_fit(isvc: InferenceServiceSettings, cluster_queue: ClusterQueueSpec) -> tuple[list[str], list[str]]:
    """Check per-replica requests against the ClusterQueue's nominalQuota (largest flavor for one replica,
    all flavors together for maxReplicas).

    Returns: (errors, warnings): an error per resource whose one-replica request exceeds the nominalQuota (with
    borrowingLimit 0 it can never be admitted) or is not covered; a warning per resource where maxReplicas x request
    exceeds it (replicas beyond the quota stay pending, by design).
    """
    errors, warnings = [], []
    flavors = cluster_queue.flavor_names()
    for resource, amount in isvc.requests.items():
        try:
            per_flavor = [quantity.parse(cluster_queue.quota(resource, f).nominal_quota) for f in flavors]
        except KeyError:
            errors.append(f"'{resource}' is not covered by ClusterQueue '{cluster_queue.name}'")
            continue
        request = quantity.parse(amount)
        # One replica in the largest flavor (the rule book's INFERENCE_FITS_NOMINAL judges whole replicas per
        # flavor); maxReplicas against every flavor together (replicas may land in different flavors).
        largest, nominal = max(per_flavor), sum(per_flavor, Decimal(0))
        if request > largest:
            errors.append(f"one replica requests {amount} of '{resource}', above the nominalQuota "
                          f"{quantity.canonical(largest)} of ClusterQueue '{cluster_queue.name}'")
        elif request * Decimal(isvc.max_replicas) > nominal:
            warnings.append(f"maxReplicas {isvc.max_replicas} x {amount} of '{resource}' exceeds the nominalQuota "
                            f"{quantity.canonical(nominal)}: replicas beyond it stay pending")
    return errors, warnings


@dataclass(frozen=True)
class InferenceServiceArgs:
    """Inputs of InferenceService.

    settings: the service definition (its name, requests and maxReplicas for the quota warnings). service: the
    rendered InferenceService (`render(...).inference_training.services[i]`), registered as it is. local_queue /
    priority_class: the inference LocalQueue (in the service's namespace) and WorkloadPriorityClass resources it
    waits for. cluster_queue: the inference ClusterQueue spec behind the LocalQueue (its nominalQuota bounds one
    replica).
    """

    settings: InferenceServiceSettings
    service: Rendered
    local_queue: ManifestResource
    priority_class: ManifestResource
    cluster_queue: ClusterQueueSpec


class InferenceService(pulumi.ComponentResource):
    """A KServe InferenceService queued on the inference LocalQueue with the inference priority.

    Children: `{name}-isvc` (the rendered InferenceService, after its LocalQueue and WorkloadPriorityClass). Logs a
    warning when maxReplicas replicas do not fit the nominalQuota (one replica that cannot fit is refused by the
    settings check). Attributes: `isvc` (the InferenceService resource), `manifest` (its dict).
    """

    def __init__(self, name: str, args: InferenceServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        _, warnings = quota_fit(args.settings, args.cluster_queue)
        super().__init__("kueue-cohorts:inference:InferenceService", name, None, opts)
        for warning in warnings:
            pulumi.log.warn(f"InferenceService '{args.settings.name}': {warning}", resource=self)
        self.manifest = args.service.manifest
        self.isvc = ManifestResource.of(
            f"{name}-isvc", args.service,
            pulumi.ResourceOptions(parent=self, depends_on=[args.local_queue, args.priority_class]),
        )
        self.register_outputs({"name": args.settings.name, "namespace": args.service.namespace})
