"""KServe InferenceServices: the per-replica requests of a predictor.

Upstream: KServe `pkg/apis/serving/v1beta1/predictor.go` (PredictorSpec: `model` is an inline container with
`resources`, `containers` an inline PodSpec, legacy framework specs such as `sklearn` are containers too) and
`component.go` (ComponentExtensionSpec `labels`); Kueue `pkg/workload/resources.go` (limits stand in for missing
requests).
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping

from .objects import KubeObject
from .resources import effective_request_fields
from .values import as_list, as_map, get, is_map

KSERVE_GROUP = "serving.kserve.io"


def _containers(predictor: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(path, container) for the predictor's model, its inline containers and legacy framework specs."""
    found = []
    for key in list(predictor):
        if key == "containers":
            for i, container in enumerate(as_list(predictor[key])):
                found.append((f"spec.predictor.containers[{i}]", container))
        elif key not in ("labels", "annotations") and is_map(predictor[key]) and "resources" in predictor[key]:
            found.append((f"spec.predictor.{key}", predictor[key]))
    return found


def replica_requests_with_fields(isvc: KubeObject) -> dict[str, tuple[Decimal, str]]:
    """Per-replica requests of an InferenceService predictor, summed over its containers
    (`resources.effective_request_fields`: a limit without a request is the request), each with the field path of
    its first contributor. Returns resource -> (quantity, field path); raises ValueError naming a field that is not
    a quantity, UnknownValueError for unknown requests."""
    totals: dict[str, tuple[Decimal, str]] = {}
    for path, container in _containers(as_map(get(isvc.spec, "predictor"))):
        for name, (value, where, _) in effective_request_fields(container, path).items():
            before = totals.get(name)
            totals[name] = (value, where) if before is None else (before[0] + value, before[1])
    return totals
