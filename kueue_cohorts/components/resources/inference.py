"""InferenceService: a KServe InferenceService (serving.kserve.io/v1beta1) admitted through the inference LocalQueue.

In raw-deployment mode KServe runs the predictor as a Deployment whose pod template carries the InferenceService's
and the predictor's labels (kserve pkg/controller/v1beta1/inferenceservice/components/predictor.go), so the
`kueue.x-k8s.io/queue-name` and `kueue.x-k8s.io/priority-class` labels put here reach Kueue's deployment and pod
integrations.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional

import pulumi

from kueue_cohorts.components.model.kueue import ClusterQueueSpec
from kueue_cohorts.components.resources.layouts import InferenceTrainingCohort
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.settings import InferenceServiceSettings, quantity


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
    """Inputs of InferenceService."""

    settings: InferenceServiceSettings
    """The service (name, modelFormat, storageUri, requests, replicas, rollout, ...), as an entry of
    `inferenceTraining.inference.services` says it; required. A service the cohort's stack does not declare (or
    declares otherwise) is judged with the stack as if it did."""
    cohort: InferenceTrainingCohort
    """The InferenceTrainingCohort whose inference LocalQueue admits the service; required. Its stack (with its
    Outputs) is the one the service is judged with."""
    namespace: Optional[str] = None
    """The service's namespace: one of `cohort.inference_namespaces` (the names as the cohort's stack has them: a
    namespace given to the cohort as an Output is its stand-in there, and the service lands in the namespace it
    resolves to). Omitted: `settings.namespace`, else the cohort's first inference namespace."""
    storage_uri: Optional[pulumi.Input[str]] = None
    """Where the model is, instead of `settings.storageUri`: a URI or an Output (a bucket's `s3://...`). Omitted:
    `settings.storageUri`."""


class InferenceService(pulumi.ComponentResource):
    """A KServe InferenceService queued on the inference LocalQueue with the inference priority.

    The object is the model's (`components.model.render`, the services of the inferenceTraining layout), judged with
    the cohort's stack (the settings check: rollout and quota rules of the rule book) and registered as judged,
    Outputs applied once resolved.
    Children: `{name}-isvc` (the rendered InferenceService, after its LocalQueue and WorkloadPriorityClass). Logs a
    warning when maxReplicas replicas do not fit the nominalQuota (one replica that cannot fit is refused by the
    settings check). Attributes: `stack` (the JudgedStack it was judged with), `isvc` (the InferenceService
    resource), `manifest` (its dict, stand-ins in place of Outputs).
    Raises:
        InvalidStack: the settings check refused the stack with this service (a namespace that is not one of the
        cohort's inference namespaces, too large a replica, ...).
    """

    def __init__(self, name: str, args: InferenceServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        cohort = args.cohort
        inference = cohort.settings.inference
        service = args.settings.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if args.namespace is not None:
            service["namespace"] = args.namespace
        namespace = service.get("namespace") or inference.namespaces[0]
        declared = [s.model_dump(mode="json", by_alias=True, exclude_unset=True) for s in inference.services]
        index = next((i for i, s in enumerate(inference.services)
                      if s.name == service["name"] and (s.namespace or inference.namespaces[0]) == namespace), None)
        key = ("inferenceTraining", "inference", "services")
        inputs: dict[tuple[Any, ...], Any] = {}
        if index is None or declared[index] != service:
            if index is None:
                index = len(declared)
                declared.append(service)
            else:
                declared[index] = service
            inputs[key] = declared
        inputs[key + (index, "storageUri")] = args.storage_uri
        stack = cohort.stack.with_inputs(inputs)
        layout = stack.assembled.rendered.inference_training
        assert layout is not None  # the cohort's stack has inferenceTraining
        rendered = layout.services[index]
        judged = stack.settings.inference_training.inference.services[index]  # type: ignore[union-attr]
        _, warnings = quota_fit(judged, cohort.inference_spec)
        super().__init__("kueue-cohorts:inference:InferenceService", name, None, opts)
        if stack is not cohort.stack:
            stack.log_warnings(self)
        for warning in warnings:
            pulumi.log.warn(f"InferenceService '{judged.name}': {warning}", resource=self)
        self.stack = stack
        self.manifest = rendered.manifest
        deps: list[pulumi.Resource] = [cohort.inference_local_queues[namespace]]
        priority = cohort.priority_classes.get(judged.priority_class or inference.priority_class.name)
        if priority is not None:
            deps.append(priority)
        self.isvc = ManifestResource.of(f"{name}-isvc", rendered, pulumi.ResourceOptions(parent=self, depends_on=deps),
                                        props=stack.props(rendered))
        self.register_outputs({"name": judged.name, "namespace": stack.value_of(rendered.namespace)})

