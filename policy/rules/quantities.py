"""Kubernetes quantities for the policy pack: `kubernetes.utils.parse_quantity` plus a readable print form.

Upstream grammar: k8s.io/apimachinery/pkg/api/resource (Quantity). The pack does not import the program's
`components/quantity.py` on purpose (it must stand alone); both parse with the same library function.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Optional

from kubernetes.utils import parse_quantity

_BINARY = [("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)]


def parse(value: Any) -> Optional[Decimal]:
    """Parse a Kubernetes quantity.

    Args:
        value: "4", 4, "8Gi", "500m" (a YAML/JSON number is read as its decimal text).
    Returns:
        The exact value in base units (cores, bytes, devices) as a Decimal, or None when `value` is not a
        quantity (booleans, maps, "lots").
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON numbers arrive as floats through the gRPC Struct
    try:
        return Decimal(parse_quantity(str(value).strip()))
    except (ValueError, ArithmeticError):
        return None


def is_binary(text: Any) -> bool:
    """True when a quantity is written with a binary suffix (Ki, Mi, Gi, Ti, Pi, Ei)."""
    return isinstance(text, str) and text.strip().endswith(tuple(suffix for suffix, _ in _BINARY))


def show(value: Decimal, binary: bool = False) -> str:
    """Print a quantity for a message. With `binary` (the resource is written in binary units, like memory), whole
    multiples of a binary unit get the largest exact suffix ("34359738368" -> "32Gi"); otherwise, and for values
    that are no such multiple, plain decimals ("2048", "0.5")."""
    if binary and value == value.to_integral_value():
        whole = int(value)
        for suffix, size in _BINARY:
            if whole >= size and whole % size == 0:
                return f"{whole // size}{suffix}"
        return str(whole)
    return format(value.normalize(), "f")
