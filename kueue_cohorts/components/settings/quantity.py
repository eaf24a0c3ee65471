"""Kubernetes quantities: parse with the `kubernetes` client, print in apimachinery's canonical form.

Upstream: k8s.io/apimachinery/pkg/api/resource (Quantity, CanonicalizeBytes). The API server stores every quantity
in canonical form ("2048Mi" is stored as "2Gi", "1000m" as "1"), so we emit the canonical form too: a second
`pulumi up` then sees no diff, whichever way the stack config wrote the value.
"""
from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from typing import Annotated, Any, Union

from pydantic import BeforeValidator, WithJsonSchema

from kueue_cohorts.policy.rules.vocabulary import quantity as rulebook_quantities

QuantityInput = Union[str, int, float, Decimal]

_BINARY = rulebook_quantities.BINARY_UNITS
_BINARY_SUFFIXES = tuple(suffix for suffix, _ in _BINARY)
_DECIMAL = [("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3), ("", 0), ("m", -3), ("u", -6), ("n", -9)]


def parse(value: QuantityInput) -> Decimal:
    """Parse a Kubernetes quantity with the rule book's parser (`policy.rules.vocabulary.quantity.parse`: one grammar
    for the settings and the pack).

    Args:
        value: "4", 4, "8Gi", "500m", "1e3", ... (a YAML int or float is read as its decimal text).
    Returns:
        The exact value as a Decimal, in base units (cores for cpu, bytes for memory, devices for GPUs).
    Raises:
        ValueError: not a Kubernetes quantity (k8s.io/apimachinery resource.ParseQuantity grammar), not finite, or
            beyond what the API server keeps.
    """
    if isinstance(value, Decimal) and value.is_finite():
        return value
    text = value if isinstance(value, (int, float, Decimal)) else str(value)
    if isinstance(value, str) and len(value.split()) != 1:  # empty, or whitespace inside the text
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    parsed = rulebook_quantities.parse(text)
    if parsed is None:
        raise ValueError(f"{str(value)[:40]!r} is not a Kubernetes quantity")
    return parsed


def is_binary(text: str) -> bool:
    """True when the quantity text ends with a binary suffix (Ki, Mi, Gi, Ti, Pi, Ei)."""
    return _is_binary(str(text).strip())


def _is_binary(text: str) -> bool:
    return text.endswith(_BINARY_SUFFIXES)


def canonical(value: QuantityInput, binary: bool = False) -> str:
    """Return the canonical text of a quantity, as the API server would store it.

    Binary-suffixed input (Ki..Ei) keeps a binary suffix when the value is an integer of at least 1024 and a
    whole multiple of that suffix ("2048Mi" -> "2Gi"); everything else is printed in decimal SI with the largest
    exponent (a multiple of 3) that leaves an integer mantissa ("1000m" -> "1", "8000" -> "8k", "0.5" -> "500m").
    Values are rounded up to nano units as apimachinery does. A repeated (value, binary) pair is printed once (a
    stack repeats a few quantities thousands of times: every tenant's floor, the planner's pool remainders).

    Args:
        value: any quantity accepted by `parse`.
        binary: treat the value as binary-suffixed even when it carries no suffix (for values computed from
            binary quantities, such as pool total minus floor of memory: 16Gi rather than 17179869184).
    Returns:
        The canonical string, e.g. "4", "8Gi", "500m".
    Raises:
        ValueError: not a quantity.
    """
    if type(value) in (str, int, float) or (type(value) is Decimal and value.is_finite()):  # hashable inputs
        return _canonical_cached(value, binary)
    return _canonical(value, binary)


@lru_cache(maxsize=4096, typed=True)  # typed: "1", 1, 1.0 and Decimal(1) are remembered apart
def _canonical_cached(value: QuantityInput, binary: bool) -> str:
    """`_canonical`, remembered (a string: immutable; a ValueError is raised again, never remembered)."""
    return _canonical(value, binary)


def _canonical(value: QuantityInput, binary: bool = False) -> str:
    """`canonical`, computed."""
    number = parse(value)
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    magnitude = abs(number)
    nano = magnitude.scaleb(9)
    if nano != nano.to_integral_value():
        magnitude = (nano.to_integral_value(rounding="ROUND_CEILING")).scaleb(-9)
    text = str(value).strip() if not isinstance(value, Decimal) else ""
    if (binary or _is_binary(text)) and magnitude >= 1024 and magnitude == magnitude.to_integral_value():
        whole = int(magnitude)
        for suffix, factor in _BINARY:
            if whole % factor == 0:
                return f"{sign}{whole // factor}{suffix}"
    for suffix, exponent in _DECIMAL:
        mantissa = magnitude.scaleb(-exponent)
        if mantissa == mantissa.to_integral_value():
            return f"{sign}{int(mantissa)}{suffix}"
    raise ValueError(f"{value!r} cannot be represented in nano units")  # unreachable after rounding


def canonical_non_negative(value: Any) -> str:
    """`canonical(value)`, refusing negative values and any minus sign (`-0` too, so that the stack file's JSON
    Schema, `NON_NEGATIVE_PATTERN`, and this check accept exactly the same texts). Raises ValueError (pydantic reports
    it with the key path)."""
    text = canonical(value)
    if parse(text) < 0 or (isinstance(value, str) and value.strip().startswith("-")):
        raise ValueError("a quantity must not be negative")
    return text


QUANTITY_JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": rulebook_quantities.NON_NEGATIVE_PATTERN},
        {"type": "number", "minimum": 0, "maximum": 2**63 - 1},
    ],
    "description": "A Kubernetes quantity (`8`, `500m`, `32Gi`, `1e3`), never negative; YAML numbers are read as their "
                   "decimal text.",
}
"""The JSON Schema of `Quantity`, as strict as the program: the apimachinery grammar
(`policy.rules.vocabulary.quantity`) for text, a non-negative number up to the API server's 2^63-1 for a YAML number
(a boolean is neither)."""

Quantity = Annotated[str, BeforeValidator(canonical_non_negative), WithJsonSchema(QUANTITY_JSON_SCHEMA)]
"""Pydantic type of a non-negative Kubernetes quantity in canonical text ("2048Mi" and "2Gi" both become "2Gi")."""
