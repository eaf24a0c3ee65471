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

from components import quantity
from components.kueue import ClusterQueueSpec
from components.resources import ManifestResource
from components.service_manifests import inference_service_manifest
from components.settings import InferenceServiceSettings


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
        # One replica in the largest flavor (the rule book's inference-fits-nominal judges whole replicas per
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

    settings: the service definition. local_queue / priority_class: the inference LocalQueue (in the service's
    namespace) and WorkloadPriorityClass objects. cluster_queue: the inference ClusterQueue spec behind the
    LocalQueue (its nominalQuota bounds one replica).
    """

    settings: InferenceServiceSettings
    local_queue: ManifestResource
    priority_class: ManifestResource
    cluster_queue: ClusterQueueSpec


class InferenceService(pulumi.ComponentResource):
    """A KServe InferenceService queued on the inference LocalQueue with the inference priority.

    Raises ValueError when one replica cannot fit the inference nominalQuota; logs a warning when maxReplicas
    replicas do not. Attributes: `isvc` (the InferenceService resource), `manifest` (its dict).
    """

    def __init__(self, name: str, args: InferenceServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        _, warnings = quota_fit(args.settings, args.cluster_queue)
        super().__init__("kueue-cohorts:inference:InferenceService", name, None, opts)
        for warning in warnings:
            pulumi.log.warn(f"InferenceService '{args.settings.name}': {warning}", resource=self)
        namespace = args.local_queue.object_namespace
        assert namespace is not None  # a LocalQueue is namespaced
        nominal = {r: args.cluster_queue.quota(r).nominal_quota
                   for group in args.cluster_queue.resource_groups for r in group.covered_resources}
        self.manifest = inference_service_manifest(
            args.settings, namespace, args.local_queue.object_name, args.priority_class.object_name, nominal
        )
        self.isvc = ManifestResource(
            f"{name}-isvc", self.manifest,
            pulumi.ResourceOptions(parent=self, depends_on=[args.local_queue, args.priority_class]),
        )
        self.register_outputs({"name": args.settings.name, "namespace": namespace})
