"""The arithmetic of a rolling update against a quota, shared by the rule INFERENCE_ROLLOUT_FITS_NOMINAL and the
program's render of a declared service (which picks the strategy). Standard library only: the settings and plans
layers import it without loading the Pulumi SDK.

Upstream: Kubernetes `pkg/controller/deployment/util/deployment_util.go` `ResolveFenceposts` (maxSurge scaled by
`intstr.GetScaledValueFromIntOrPercent(maxSurge, replicas, roundUp=true)`), apps/v1 defaulting (RollingUpdate,
maxSurge 25%), `ValidatePositiveIntOrPercent` (an int >= 0 or "N%").
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Mapping, Optional

DEFAULT_MAX_SURGE = "25%"
"""apps/v1 default of `spec.strategy.rollingUpdate.maxSurge` (and KServe's for a predictor without a strategy)."""
SAFE_STRATEGY: Mapping[str, Any] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
"""The strategy that never needs quota beyond the replicas: one old replica goes before its successor comes."""
_PERCENT = re.compile(r"^[0-9]+%$")


def surge_pods(max_surge: Any, replicas: int) -> int:
    """The number of surge pods a RollingUpdate creates, as the Kubernetes deployment controller computes it.

    Args:
        max_surge: `rollingUpdate.maxSurge`: an int >= 0 (a whole float too: JSON numbers reach the pack as floats)
            or a percentage string "N%" of the desired replicas, rounded up. None means the default 25%.
        replicas: the desired replicas (>= 0).
    Returns:
        The surge in pods (an int >= 0).
    Raises:
        ValueError: `max_surge` is neither (Kubernetes' validation `ValidatePositiveIntOrPercent` refuses it).
    """
    if max_surge is None:
        max_surge = DEFAULT_MAX_SURGE
    if isinstance(max_surge, float) and max_surge.is_integer():
        max_surge = int(max_surge)
    if isinstance(max_surge, int) and not isinstance(max_surge, bool) and max_surge >= 0:
        return max_surge
    if isinstance(max_surge, str) and _PERCENT.match(max_surge):
        percent = int(max_surge[:-1])
        return -(-replicas * percent // 100)
    raise ValueError(f"maxSurge {max_surge!r} is neither an integer >= 0 nor a percentage such as '25%'")


def max_replicas_that_fit(requests: Mapping[str, Decimal], nominal: Mapping[str, Decimal]) -> Optional[int]:
    """How many replicas fit in nominalQuota: the least over the covered, requested resources of
    floor(nominal / request). None when no requested resource is covered (nothing bounds the count here: the
    INFERENCE_FITS_NOMINAL rule reports uncovered resources)."""
    counts = [int(nominal[r] // amount) for r, amount in requests.items() if r in nominal and amount > 0]
    return min(counts) if counts else None


def overflow(requests: Mapping[str, Decimal], replicas: int, nominal: Mapping[str, Decimal]
             ) -> dict[str, tuple[Decimal, Decimal]]:
    """The covered resources where `replicas` x the per-replica request exceeds nominalQuota: resource ->
    (needed, nominalQuota), in resource order."""
    out = {}
    for resource in sorted(requests):
        if resource in nominal and requests[resource] * replicas > nominal[resource]:
            out[resource] = (requests[resource] * replicas, nominal[resource])
    return out


def update_replicas(steady: int, peak: int, requests: Mapping[str, Decimal], nominal: Mapping[str, Decimal]) -> int:
    """The replicas an update of an autoscaled workload is judged at: `peak`, capped at the replicas that fit
    nominalQuota (never below `steady`)."""
    fit = max_replicas_that_fit(requests, nominal)
    return peak if fit is None else max(steady, min(peak, fit))


def update_overflow(requests: Mapping[str, Decimal], replicas: int, max_surge: Any, nominal: Mapping[str, Decimal]
                    ) -> dict[str, tuple[Decimal, Decimal]]:
    """Where an update of `replicas` replicas with `max_surge` (see `surge_pods`; 0 for Recreate) does not fit:
    resource -> (needed, nominalQuota); empty when it fits. Raises ValueError for an invalid `max_surge`."""
    return overflow(requests, replicas + surge_pods(max_surge, replicas), nominal)
