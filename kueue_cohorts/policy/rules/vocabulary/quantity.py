"""Kubernetes quantities: the one grammar and parser of the project, and a readable print form.

Upstream grammar: k8s.io/apimachinery/pkg/api/resource (Quantity). The pack stands alone; the program's
`components/settings/quantity.py` parses with `parse` here, and `PATTERN`/`NON_NEGATIVE_PATTERN` (the JSON Schema's
patterns) and `parse_quantity_strict` are built from the same pieces, so they accept exactly the same texts.
"""
from __future__ import annotations

import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Decimal, localcontext
from functools import lru_cache
from typing import Any, Optional

_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_SUFFIX = r"(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?"
PATTERN = rf"^\s*[+-]?{_NUMBER}{_SUFFIX}\s*$"
"""The text of a Kubernetes quantity: the grammar of k8s.io/apimachinery v0.36.3 `pkg/api/resource/quantity.go`
(`<signedNumber><suffix>`: digits with an optional fraction, then a binary suffix Ki..Ei, a decimal suffix
n u m k M G T P E, or an exponent e/E with a signed integer, `parseQuantityString`), with the surrounding white space
that the API server's JSON decoding trims (`Quantity.UnmarshalJSON`). Stricter than `kubernetes.utils.parse_quantity`,
which also takes Python's `1_000`, `Infinity`, a decimal `K` and an exponent before a suffix (`1e3k`): values the
API server refuses."""
NON_NEGATIVE_PATTERN = rf"^\s*\+?{_NUMBER}{_SUFFIX}\s*$"
"""`PATTERN` without a minus sign: the quantities of the stack config (quota, capacity, requests), never negative."""
_QUANTITY = re.compile(rf"(?P<sign>[+-]?)(?P<number>{_NUMBER})"
                       r"(?:(?P<binary>[KMGTPE]i)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?")
MAX_QUANTITY = Decimal(2**63 - 1)
"""The largest quantity the apiserver keeps (it caps larger ones at this value: quantity.go `maxAllowed`)."""
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY_UNITS = [("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)]
"""The binary suffixes, largest first, with their sizes (quantity.go: Ki = 2^10 ... Ei = 2^60)."""
_BINARY_POWERS = {suffix: size for suffix, size in BINARY_UNITS}
_BINARY_SUFFIXES = tuple(suffix for suffix, _ in BINARY_UNITS)
# Exponents beyond this can only mean overflow (non-zero mantissa) or a value below 1n; judged without expanding.
_EXPONENT_BOUND = 400
_NANO = Decimal("1e-9")


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
    try:
        return parse_quantity_strict(text)
    except ValueError:
        return None


def parse_quantity_strict(raw: Any) -> Decimal:
    """Parse a Kubernetes quantity exactly as the apiserver's grammar allows, without overflowing.

    Args:
        raw: the wire value: a string ("1.5", "500m", "8Gi", "1e3"), or a JSON number (int, or a float without
            NaN/Infinity; integral floats are read as ints, since JSON numbers arrive as floats through gRPC).
    Returns:
        The exact value in base units (cores, bytes, devices), at most MAX_QUANTITY in magnitude.
    Raises:
        ValueError: not a quantity ("NaN", "Infinity", "inf", "1 Gi", "1_000", "", booleans, maps), or beyond
            MAX_QUANTITY in magnitude ("1e999999", "9Ei"), or with an exponent beyond int64 ("1e99999999999999999999",
            which the apiserver cannot parse), with a clause saying which. An exponent is read as the apiserver reads
            it (`_exponent`): leading zeros count for nothing and it is truncated to int32 ("1e4294967296" is 1).
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
        exponent = _exponent(match.group("exponent"))
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
        # Far below 1n every value rounds up to 1n: the exponent is clamped there, not expanded digit by digit.
        value = mantissa.scaleb(max(exponent, -mantissa.adjusted() - _EXPONENT_BOUND))
        if match.group("binary"):
            value *= Decimal(_BINARY_POWERS[match.group("binary")])
        # The apiserver rounds up to the next nano: 1e-10 -> 1n (the exponent is an int: value is finite).
        value_exponent = value.as_tuple().exponent
        if isinstance(value_exponent, int) and value_exponent < -9:
            value = value.quantize(_NANO, rounding=ROUND_UP)
        if match.group("sign") == "-":
            value = -value
    if value.copy_abs() > MAX_QUANTITY:
        raise ValueError("is above the largest quantity Kubernetes keeps (2^63-1)")
    return value


def _exponent(text: str) -> int:
    """The exponent of `1e<text>` as the apiserver reads it: `text` ("3", "+0003", "-12") is parsed as an int64
    (`strconv.ParseInt(suffix[1:], 10, 64)`), then truncated to int32 (`int32(parsed)`): k8s.io/apimachinery v0.36.3
    `pkg/api/resource/suffix.go` `suffixHandler.interpret`. So leading zeros count for nothing, "1e4294967296" is 1
    and "1e4294967299" is 1000, as the apiserver stores them.

    Raises:
        ValueError: the exponent lies outside int64 (the apiserver's ErrSuffix, "unable to parse quantity's
            suffix").
    """
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 19:  # int64 has 19 digits; more can only overflow (and would be slow to read as an int)
        raise ValueError("is not a Kubernetes quantity (its exponent is beyond int64)")
    value = -int(digits) if text.startswith("-") else int(digits)
    if not -2**63 <= value < 2**63:
        raise ValueError("is not a Kubernetes quantity (its exponent is beyond int64)")
    return (value + 2**31) % 2**32 - 2**31


def is_binary(text: Any) -> bool:
    """True when a quantity is written with a binary suffix (Ki, Mi, Gi, Ti, Pi, Ei)."""
    return isinstance(text, str) and text.strip().endswith(_BINARY_SUFFIXES)


def show(value: Decimal, binary: bool = False) -> str:
    """Print a quantity for a message. With `binary` (the resource is written in binary units, like memory), whole
    multiples of a binary unit get the largest exact suffix ("34359738368" -> "32Gi"); otherwise, and for values
    that are no such multiple, plain decimals ("2048", "0.5")."""
    if binary and value == value.to_integral_value():
        whole = int(value)
        for suffix, size in BINARY_UNITS:
            if whole >= size and whole % size == 0:
                return f"{whole // size}{suffix}"
        return str(whole)
    return format(value.normalize(), "f")
