"""`kueue-cohorts:...inference.services[]`: the KServe InferenceServices (serving.kserve.io/v1beta1) a stack
declares, and their rollout (maxSurge / maxUnavailable).
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Optional

from pydantic import (
    BeforeValidator,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kueue_cohorts.components.settings.base import DnsLabel, DnsSubdomain, Model, ResourceList
from kueue_cohorts.components.settings.runtime import (
    WholeNumber,
)


def _int_or_percent(value: Any) -> Any:
    """Kubernetes' `ValidatePositiveIntOrPercent`: an int >= 0 or "N%" (no other string, no bool)."""
    if isinstance(value, bool) or not (isinstance(value, int) and value >= 0
                                       or isinstance(value, str) and re.fullmatch(r"[0-9]+%", value)):
        raise PydanticCustomError("int_or_percent", "must be an integer >= 0 or a percentage such as '25%'")
    return value


def _at_most_all(value: Any) -> Any:
    """maxUnavailable as a percentage is at most 100% (other shapes are `_int_or_percent`'s to refuse)."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]+%", value) and int(value[:-1]) > 100:
        raise PydanticCustomError("rolling_update", "maxUnavailable cannot be above 100%")
    return value


IntOrPercent = Annotated[Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]+%$")],
                         BeforeValidator(_int_or_percent)]
"""A Kubernetes IntOrString of a rolling update: a pod count >= 0, or a percentage of the replicas ("25%")."""


class RolloutSettings(Model):
    """`services[].rollout`: the rolling update of the predictor's Deployment (KServe `spec.predictor
    .deploymentStrategy`, an apps/v1 DeploymentStrategy of type RollingUpdate). Setting it keeps the surge you
    choose, and the rule book then requires its headroom in the inference nominalQuota."""

    max_surge: IntOrPercent
    """RollingUpdate maxSurge: pods created above the replicas during an update (an int, or a percentage of the
    replicas rounded up). Inference never borrows, so (maxReplicas + surge) x the per-replica requests must fit the
    inference nominalQuota (the rule book's policy/rules/inference_rollout_fits_nominal.py): reserve that headroom, or
    set 0."""
    max_unavailable: Optional[Annotated[IntOrPercent, BeforeValidator(_at_most_all)]] = None
    """RollingUpdate maxUnavailable: replicas that may be down during an update (an int, or a percentage rounded down,
    at most 100%). Omitted: Kubernetes' 25%. Cannot be 0 when maxSurge is 0."""

    @model_validator(mode="after")
    def _progresses(self) -> RolloutSettings:
        zero = (0, "0%")
        if self.max_surge in zero and self.max_unavailable in zero:
            raise PydanticCustomError("rolling_update", "maxSurge and maxUnavailable cannot both be 0: the rollout "
                                      "could never replace a pod")
        return self


class InferenceServiceSettings(Model):
    """A KServe InferenceService (serving.kserve.io/v1beta1) served from the inference LocalQueue."""

    name: DnsLabel
    """InferenceService name (DNS-1123 label)."""
    namespace: Optional[DnsLabel] = None
    """One of inference.namespaces. Omitted: the first."""
    model_format: str
    """The predictor's model.modelFormat.name (e.g. huggingface)."""
    model_format_version: Optional[str] = None
    """model.modelFormat.version. Omitted: none."""
    runtime: Optional[str] = None
    """A ServingRuntime name. Omitted: KServe picks one."""
    storage_uri: str
    """Where the model is (model.storageUri)."""
    requests: ResourceList = Field(min_length=1)
    """Per-replica requests (resource -> quantity). A resource with only a limit requests its limit. One replica
    must fit the inference nominalQuota (borrowingLimit 0: it could never be admitted)."""
    limits: ResourceList = Field(default_factory=dict)
    """Per-replica limits. Default none."""
    min_replicas: WholeNumber = Field(default=1, ge=0)
    """Autoscaling lower bound (>= 0). minReplicas x the per-replica requests must fit the inference nominalQuota
    (those replicas could never all run, and every update would deadlock). Default 1."""
    max_replicas: WholeNumber = Field(default=1, ge=1)
    """Autoscaling upper bound (>= 1, >= minReplicas). Replicas beyond the nominalQuota stay pending, by design (a
    warning), and an update started above the replicas that fit waits until the autoscaler scales down. Default 1."""
    deployment_mode: Literal["RawDeployment", "Standard"] = "Standard"
    """Standard (KServe >= 0.16's name for plain Deployments, which Kueue's deployment integration admits) or
    RawDeployment (the legacy name of the same mode). Default Standard: the pinned KServe v0.16.0 validator judges an
    InferenceService annotated RawDeployment as a Knative one and refuses its deploymentStrategy
    (`apis/serving/v1beta1/inference_service_validation.go` validateAutoScalingCompExtension), so RawDeployment is
    refused where the stack renders one (a rollout, or maxSurge 0 because the default surge would not fit)."""
    priority_class: Optional[DnsSubdomain] = None
    """A WorkloadPriorityClass of the stack. Omitted: the inference one."""
    rollout: Optional[RolloutSettings] = None
    """How the predictor rolls out an update (its deploymentStrategy). Omitted: KServe's default (RollingUpdate,
    maxSurge 25%) when (maxReplicas + surge) replicas fit the inference nominalQuota, else maxSurge 0 and
    maxUnavailable 1, so an update never waits for quota that the old replicas hold (one replica is down while it is
    replaced). Set it to keep a surge; the inference nominalQuota must then have the headroom."""

