"""Resource quantities as values, without the pulumi-policy SDK: syntax, sign, range and whole numbers for extended
resources. The settings layer checks a quantity it has not rendered yet with `quantity_problem`; the pack's
`resources.check_quantities` applies the same function to every quantity of every object.

Upstream:
- quantity grammar and range: the one parser, `vocabulary.quantity.parse_quantity_strict` (k8s.io/apimachinery
  `pkg/api/resource/quantity.go`; values above 2^63-1, which the apiserver silently caps, are refused);
- extended resources: k8s.io/kubernetes `pkg/apis/core/helper/helpers.go` IsExtendedResourceName (fully qualified,
  outside `kubernetes.io/`, not `requests.`-prefixed) and `pkg/apis/core/validation` (an integer resource must be a
  whole number: "must be an integer").

Nothing here raises for bad input (NaN, Infinity, 1e999999, maps, booleans), and no number is ever expanded beyond
what the check needs.
"""
from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from typing import Any, Optional

from .quantity import parse_quantity_strict
from .selectors import label_key_problem

__all__ = ["is_extended_resource", "quantity_problem"]

_EXAMPLES = '"4", "500m" or "8Gi"'


def is_extended_resource(name: Any) -> bool:
    """Kubernetes' IsExtendedResourceName: a fully qualified resource name outside the `kubernetes.io/` domain.

    Args:
        name: a resource name ("nvidia.com/gpu", "cpu", "hugepages-2Mi", "requests.example.com/x").
    Returns:
        True for "nvidia.com/gpu", "nvidia.com/gpualloc", "example.com/foo"; False for "cpu", "memory",
        "ephemeral-storage", "hugepages-2Mi" (no '/'), "kubernetes.io/x" and "x.kubernetes.io/y" (native),
        "requests.example.com/x" (quota convention), and names that are not qualified names after "requests.".
    """
    if not isinstance(name, str) or "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return label_key_problem("requests." + name) is None


def quantity_problem(resource: Any, raw: Any) -> Optional[tuple[str, str]]:
    """Why `raw` is not an acceptable amount of `resource`, as (rule, fix); None when it is one.

    Args:
        resource: the resource name ("cpu", "nvidia.com/gpu"); extended resources must be whole numbers.
        raw: the wire value (see `parse_quantity_strict`).
    Returns:
        None, or (rule, fix) clauses for `objects.violation`, for: not a quantity (incl. NaN, Infinity, 1e999999),
        negative, or a fraction of an extended resource ("1.5" or "1500m" of nvidia.com/gpu; "2000m" is 2 and
        passes). Never raises; runs in microseconds for any input, and a repeated (resource, text or number) pair is
        judged once (a stack repeats a few quantities over thousands of objects).
    """
    if type(resource) is str and type(raw) in (str, int, float):
        return _quantity_problem_cached(resource, raw)
    return _quantity_problem(resource, raw)


@lru_cache(maxsize=4096, typed=True)  # typed: 1 and 1.0 are distinct wire values
def _quantity_problem_cached(resource: str, raw: str | int | float) -> Optional[tuple[str, str]]:
    """`_quantity_problem`, remembered (its answer is a pair of strings or None: immutable)."""
    return _quantity_problem(resource, raw)


def _quantity_problem(resource: Any, raw: Any) -> Optional[tuple[str, str]]:
    """`quantity_problem`, judged (never raises)."""
    try:
        value = parse_quantity_strict(raw)
    except ValueError as err:
        return (f"an amount of '{resource}' must be a finite Kubernetes quantity no larger than 2^63-1, and this "
                f"value {err}", f"write a plain quantity such as {_EXAMPLES}")
    if value < 0:
        return (f"an amount of '{resource}' must not be negative",
                "write zero or a positive quantity")
    if is_extended_resource(resource) and value != value.to_integral_value():
        whole = value.to_integral_value(rounding="ROUND_FLOOR")
        return (f"'{resource}' is an extended resource, which Kubernetes accepts only in whole numbers",
                f"write a whole number such as \"{max(whole, Decimal(1))}\" (device plugins cannot hand out a "
                f"fraction of a device)")
    return None
