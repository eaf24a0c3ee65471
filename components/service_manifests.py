"""Pure: the KServe InferenceService (serving.kserve.io/v1beta1) of a declared service, queued to Kueue.

In raw-deployment mode KServe runs the predictor as a Deployment whose pod template carries the InferenceService's
and the predictor's labels (kserve pkg/controller/v1beta1/inferenceservice/components/predictor.go), so the
`kueue.x-k8s.io/queue-name` and `kueue.x-k8s.io/priority-class` labels put here reach Kueue's deployment and pod
integrations.
"""
from __future__ import annotations

from typing import Any

from components.settings import InferenceServiceSettings

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"


def inference_service_manifest(
    isvc: InferenceServiceSettings, namespace: str, local_queue: str, priority_class: str
) -> dict[str, Any]:
    """The InferenceService manifest: predictor model (format, runtime, storageUri, per-replica resources),
    min/maxReplicas, deployment-mode annotation and the Kueue labels on the object and on the predictor."""
    labels = {QUEUE_LABEL: local_queue, PRIORITY_LABEL: priority_class}
    model: dict[str, Any] = {"modelFormat": {"name": isvc.model_format}, "storageUri": isvc.storage_uri,
                             "resources": {"requests": dict(isvc.requests)}}
    if isvc.model_format_version:
        model["modelFormat"]["version"] = isvc.model_format_version
    if isvc.runtime:
        model["runtime"] = isvc.runtime
    if isvc.limits:
        model["resources"]["limits"] = dict(isvc.limits)
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": isvc.name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "kueue-cohorts", **labels},
            "annotations": {DEPLOYMENT_MODE_ANNOTATION: isvc.deployment_mode},
        },
        "spec": {
            "predictor": {
                "minReplicas": isvc.min_replicas,
                "maxReplicas": isvc.max_replicas,
                "labels": dict(labels),
                "model": model,
            }
        },
    }
