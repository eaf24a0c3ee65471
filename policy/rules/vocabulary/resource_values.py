"""Resource quantities as values, without the pulumi-policy SDK: syntax, sign, range and whole numbers for extended
resources. The settings layer checks a quantity it has not rendered yet with `quantity_problem`; the pack's
`resources.check_quantities` applies the same function to every quantity of every object.

Upstream:
- quantity grammar and range: k8s.io/apimachinery `pkg/api/resource/quantity.go` (ParseQuantity: `[+-]digits[.digits]`
  with a binary suffix Ki..Ei, a decimal suffix n u m k M G T P E, or an exponent `e<int>`/`E<int>`; a value with
  digits below 1n is rounded up to the next nano; values above 2^63-1 are silently capped, which is never what a
  stack means);
- extended resources: k8s.io/kubernetes `pkg/apis/core/helper/helpers.go` IsExtendedResourceName (fully qualified,
  outside `kubernetes.io/`, not `requests.`-prefixed) and `pkg/apis/core/validation` (an integer resource must be a
  whole number: "must be an integer").

Nothing here raises for bad input (NaN, Infinity, 1e999999, maps, booleans) except `parse_quantity_strict`'s
documented ValueError, and no number is ever expanded beyond what the check needs.
"""
from __future__ import annotations

import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Decimal, localcontext
from functools import lru_cache
from typing import Any, Optional

from .selectors import label_key_problem

__all__ = ["MAX_QUANTITY", "is_extended_resource", "parse_quantity_strict", "quantity_problem"]

MAX_QUANTITY = Decimal(2**63 - 1)
"""The largest quantity the apiserver keeps (it caps larger ones at this value: `maxAllowed`)."""

_QUANTITY = re.compile(r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                       r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?")
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_POWERS = {"Ki": 10, "Mi": 20, "Ti": 40, "Gi": 30, "Pi": 50, "Ei": 60}
# Exponents beyond this can only mean overflow (non-zero mantissa) or a value below 1n; judged without expanding.
_EXPONENT_BOUND = 400
_NANO = Decimal("1e-9")
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


def parse_quantity_strict(raw: Any) -> Decimal:
    """Parse a Kubernetes quantity exactly as the apiserver's grammar allows, without overflowing.

    Args:
        raw: the wire value: a string ("1.5", "500m", "8Gi", "1e3"), or a JSON number (int, or a float without
            NaN/Infinity; integral floats are read as ints, since JSON numbers arrive as floats through gRPC).
    Returns:
        The exact value in base units (cores, bytes, devices), at most MAX_QUANTITY in magnitude.
    Raises:
        ValueError: not a quantity ("NaN", "Infinity", "inf", "1 Gi", "1_000", "", booleans, maps), or beyond
            MAX_QUANTITY in magnitude ("1e999999", "9Ei"), with a clause saying which.
    """
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float, Decimal)):
        raise ValueError(f"is a {type(raw).__name__}, not a quantity")
    if isinstance(raw, float):
        if raw != raw or raw in (float("inf"), float("-inf")):
            raise ValueError("is not a finite number")
        text = str(int(raw)) if raw.is_integer() else repr(raw)
    elif isinstance(raw, Decimal):
        if not raw.is_finite():
            raise ValueError("is not a finite number")
        text = format(raw, "f") if abs(raw.adjusted()) < _EXPONENT_BOUND else f"{raw:e}"
    else:
        text = str(raw)
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError("is not a Kubernetes quantity")
    number = match.group("number")
    exponent = 0
    if match.group("exponent") is not None:
        exponent_text = match.group("exponent").lstrip("+-").lstrip("0") or "0"
        if len(exponent_text) > 6:
            exponent = _EXPONENT_BOUND * 10 * (-1 if match.group("exponent").startswith("-") else 1)
        else:
            exponent = int(match.group("exponent"))
    elif match.group("decimal"):
        exponent = _DECIMAL_EXPONENTS[match.group("decimal")]
    mantissa = Decimal(number)
    if mantissa == 0:
        return Decimal(0)
    if mantissa.adjusted() + exponent > _EXPONENT_BOUND:
        raise ValueError("is above the largest quantity Kubernetes keeps (2^63-1)")
    with localcontext() as ctx:
        ctx.prec = len(number) + 2 * _EXPONENT_BOUND
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        value = mantissa.scaleb(max(exponent, -10 * _EXPONENT_BOUND))
        if match.group("binary"):
            value *= Decimal(2 ** _BINARY_POWERS[match.group("binary")])
        # The apiserver rounds up to the next nano: 1e-10 -> 1n (the exponent is an int: value is finite).
        value_exponent = value.as_tuple().exponent
        if isinstance(value_exponent, int) and value_exponent < -9:
            value = value.quantize(_NANO, rounding=ROUND_UP)
        if match.group("sign") == "-":
            value = -value
    if value.copy_abs() > MAX_QUANTITY:
        raise ValueError("is above the largest quantity Kubernetes keeps (2^63-1)")
    return value


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
