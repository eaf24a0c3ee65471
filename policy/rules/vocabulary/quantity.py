"""Kubernetes quantities for the policy pack: `kubernetes.utils.parse_quantity` plus a readable print form.

Upstream grammar: k8s.io/apimachinery/pkg/api/resource (Quantity). The pack does not import the program's
`components/settings/quantity.py` on purpose (it must stand alone); both parse with the same library function.
"""
from __future__ import annotations

import re
from decimal import ROUND_UP, Decimal, localcontext
from functools import lru_cache
from typing import Any, Optional

from kubernetes.utils import parse_quantity

_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_SUFFIX = r"(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?"
PATTERN = rf"^\s*[+-]?{_NUMBER}{_SUFFIX}\s*$"
"""The text of a Kubernetes quantity: the grammar of k8s.io/apimachinery v0.36.3 `pkg/api/resource/quantity.go`
(`<signedNumber><suffix>`: digits with an optional fraction, then a binary suffix Ki..Ei, a decimal suffix
n u m k M G T P E, or an exponent e/E with a signed integer, `parseQuantityString`), with the surrounding white space
that the API server's JSON decoding trims (`Quantity.UnmarshalJSON`). Stricter than `kubernetes.utils.parse_quantity`
alone, which also takes Python's `1_000`, `Infinity`, a decimal `K` and an exponent before a suffix (`1e3k`): values
the API server refuses."""
NON_NEGATIVE_PATTERN = rf"^\s*\+?{_NUMBER}{_SUFFIX}\s*$"
"""`PATTERN` without a minus sign: the quantities of the stack config (quota, capacity, requests), never negative."""
_GRAMMAR = re.compile(PATTERN)
_MAX_QUANTITY = Decimal(2**63 - 1)  # apimachinery quantity.go maxAllowed
_NANO = Decimal("1e-9")
_BINARY = [("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)]
_BINARY_SUFFIXES = tuple(suffix for suffix, _ in _BINARY)


def parse(value: Any) -> Optional[Decimal]:
    """Parse a Kubernetes quantity.

    Args:
        value: "4", 4, "8Gi", "500m" (a YAML/JSON number is read as its decimal text).
    Returns:
        The exact value in base units (cores, bytes, devices) as a Decimal, or None when `value` is not a
        quantity (booleans, maps, "lots"), is not finite ("NaN", "Infinity", "inf", float nan) or lies beyond the
        2^63-1 the apiserver keeps ("1e999999"): such values would make comparisons raise or printing hang.
    """
    if type(value) is str:  # the usual wire value
        return _parse_text(value.strip())
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON numbers arrive as floats through the gRPC Struct
    return _parse_text(str(value).strip())


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Optional[Decimal]:
    """`parse` of a stripped text, remembered (Decimals are immutable; a stack repeats a few quantities thousands
    of times)."""
    if not _GRAMMAR.match(text):
        return None
    try:
        parsed = Decimal(parse_quantity(text))
    except (ValueError, ArithmeticError):
        return None
    if not parsed.is_finite() or parsed.copy_abs() > _MAX_QUANTITY:
        return None
    # Like the apiserver, round a value with digits below 1n up to the next nano (1e-10 -> 1n): never an endless
    # string of zeros to print. 2^63 with nine decimals fits the 40 digits.
    with localcontext() as ctx:
        ctx.prec = 40
        exponent = parsed.as_tuple().exponent  # an int: parsed is finite
        return parsed.quantize(_NANO, rounding=ROUND_UP) if isinstance(exponent, int) and exponent < -9 else parsed


def is_binary(text: Any) -> bool:
    """True when a quantity is written with a binary suffix (Ki, Mi, Gi, Ti, Pi, Ei)."""
    return isinstance(text, str) and text.strip().endswith(_BINARY_SUFFIXES)


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
