"""Pure: the KServe InferenceService (serving.kserve.io/v1beta1) of a declared service, queued to Kueue.

In raw-deployment mode KServe runs the predictor as a Deployment whose pod template carries the InferenceService's
and the predictor's labels (kserve pkg/controller/v1beta1/inferenceservice/components/predictor.go), so the
`kueue.x-k8s.io/queue-name` and `kueue.x-k8s.io/priority-class` labels put here reach Kueue's deployment and pod
integrations.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping, Optional

from kueue_cohorts.components.settings import InferenceServiceSettings
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_LABELS, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_cohorts.policy.rules.vocabulary.quantity import parse
from kueue_cohorts.policy.rules.vocabulary.surge import (
    DEFAULT_MAX_SURGE,
    SAFE_STRATEGY,
    update_overflow,
    update_replicas,
)

DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"


def replica_requests(isvc: InferenceServiceSettings) -> dict[str, Decimal]:
    """Per-replica requests of a declared service as Kueue counts them: `requests`, with `limits` where a request
    is missing (core/v1 defaulting). Resource -> quantity."""
    merged = {**dict(isvc.limits), **dict(isvc.requests)}
    return {name: value for name, value in ((n, parse(v)) for n, v in merged.items()) if value is not None}


def deployment_strategy(isvc: InferenceServiceSettings, nominal_quota: Mapping[str, str]) -> Optional[dict[str, Any]]:
    """The predictor's `deploymentStrategy` (apps/v1 DeploymentStrategy, KServe ComponentExtensionSpec).

    Args:
        isvc: the declared service. nominal_quota: the inference nominal (`CohortPlan.inference_nominal`),
            resource -> quantity.
    Returns:
        The team's `rollout` as a RollingUpdate when set (the rule book then requires its headroom); else None
        (KServe's default, RollingUpdate with maxSurge 25%) when an update at maxReplicas (capped at the replicas
        that fit) plus that surge fits nominal_quota; else RollingUpdate with maxSurge 0 and maxUnavailable 1
        (`policy.rules.inference_rollout_fits_nominal.SAFE_STRATEGY`), which never needs quota beyond the replicas.
    """
    if isvc.rollout is not None:
        rolling: dict[str, Any] = {"maxSurge": isvc.rollout.max_surge}
        if isvc.rollout.max_unavailable is not None:
            rolling["maxUnavailable"] = isvc.rollout.max_unavailable
        return {"type": "RollingUpdate", "rollingUpdate": rolling}
    requests = replica_requests(isvc)
    nominal = {name: value for name, value in ((n, parse(v)) for n, v in nominal_quota.items()) if value is not None}
    steady = max(isvc.min_replicas, 1)
    replicas = update_replicas(steady, max(isvc.max_replicas, steady), requests, nominal)
    if not update_overflow(requests, replicas, DEFAULT_MAX_SURGE, nominal):
        return None
    return {"type": SAFE_STRATEGY["type"], "rollingUpdate": dict(SAFE_STRATEGY["rollingUpdate"])}


def inference_service_manifest(
    isvc: InferenceServiceSettings, namespace: str, local_queue: str, priority_class: str,
    nominal_quota: Mapping[str, str],
) -> dict[str, Any]:
    """The InferenceService manifest: predictor model (format, runtime, storageUri, per-replica resources),
    min/maxReplicas, the deploymentStrategy an update needs to fit `nominal_quota` (the inference ClusterQueue's,
    resource -> quantity; see `deployment_strategy`), deployment-mode annotation and the Kueue labels on the object
    and on the predictor."""
    labels = {QUEUE_NAME_LABEL: local_queue, PRIORITY_CLASS_LABEL: priority_class}
    model: dict[str, Any] = {"modelFormat": {"name": isvc.model_format}, "storageUri": isvc.storage_uri,
                             "resources": {"requests": dict(isvc.requests)}}
    if isvc.model_format_version:
        model["modelFormat"]["version"] = isvc.model_format_version
    if isvc.runtime:
        model["runtime"] = isvc.runtime
    if isvc.limits:
        model["resources"]["limits"] = dict(isvc.limits)
    predictor: dict[str, Any] = {"minReplicas": isvc.min_replicas, "maxReplicas": isvc.max_replicas,
                                 "labels": dict(labels)}
    strategy = deployment_strategy(isvc, nominal_quota)
    if strategy is not None:
        predictor["deploymentStrategy"] = strategy
    predictor["model"] = model
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": isvc.name,
            "namespace": namespace,
            "labels": {**MANAGED_LABELS, **labels},
            "annotations": {DEPLOYMENT_MODE_ANNOTATION: isvc.deployment_mode},
        },
        "spec": {"predictor": predictor},
    }
