"""policy/rules/vocabulary/quantity.py, the pack's quantity parser and printer, against hand tables: the 2^63-1 bound
of apimachinery's `maxAllowed` (k8s.io/apimachinery v0.36.3 `pkg/api/resource/quantity.go`) in every spelling, the
wire types a quantity may have, and the message form of `show` (largest exact binary suffix, else plain decimals)."""
from __future__ import annotations

from decimal import Decimal
from pathlib import PurePosixPath

import pytest

from kueue_cohorts.policy.rules.vocabulary.quantity import is_binary, parse, show

MAX = 9223372036854775807
"""2^63-1, written out (int64's largest value: the apiserver's `maxAllowed`)."""


@pytest.mark.parametrize("raw, value", [
    ("9223372036854775807", MAX), (MAX, MAX), ("-9223372036854775807", -MAX), ("+9223372036854775807", MAX),
    ("9223372036854775807.0", MAX), ("9.223372036854775807E", MAX), ("9223372036854775807000m", MAX),
    ("9223372036854775.807k", MAX), ("7Ei", 7 * 1024**6), ("8191Pi", 8191 * 1024**5),
    ("9223372036854775806", MAX - 1), (9223372036854774784.0, 9223372036854774784),  # the largest float below 2^63
])
def test_the_largest_quantity_in_every_spelling_is_kept(raw, value):
    assert parse(raw) == value


@pytest.mark.parametrize("raw", [
    "9223372036854775808", 9223372036854775808, "-9223372036854775808", "9.223372036854775808E", "8Ei", "8192Pi",
    "9223372036854775807.000000001", "9223372036854775807001m", 2.0**63, "1e19", "10E",
])
def test_one_nano_beyond_the_largest_quantity_is_refused(raw):
    assert parse(raw) is None


class _Text:
    """An object whose text is a quantity: still no wire value (JSON and YAML give str, int, float)."""

    def __str__(self) -> str:
        return "4"


@pytest.mark.parametrize("raw", [True, False, None, {"4": 1}, ["4"], _Text(), PurePosixPath("4"), b"4"])
def test_only_wire_values_are_quantities(raw):
    assert parse(raw) is None


@pytest.mark.parametrize("raw, value", [(" 4 ", 4), (4.0, 4), (2.5, Decimal("2.5")), (Decimal("1.5"), Decimal("1.5")),
                                        ("1Ki", 1024), ("1E", 10**18), ("1e-10", Decimal("1e-9"))])
def test_wire_values(raw, value):
    assert parse(raw) == value


@pytest.mark.parametrize("text, binary", [
    ("8Gi", True), (" 8Gi ", True), ("1Ki", True), ("1Ei", True), ("8G", False), ("8", False), ("8gi", False),
    (1024, False), (None, False), (Decimal(1024), False),
])
def test_is_binary(text, binary):
    assert is_binary(text) is binary


@pytest.mark.parametrize("value, binary, shown", [
    # binary: the largest exact binary suffix from 1Ki up, else the whole number
    (34359738368, True, "32Gi"), (1024, True, "1Ki"), (1025, True, "1025"), (1536, True, "1536"),
    (2048, True, "2Ki"), (1023, True, "1023"), (0, True, "0"), (3 * 1024**6, True, "3Ei"), (1024**5, True, "1Pi"),
    (Decimal("0.5"), True, "0.5"), (Decimal("1E+3"), True, "1000"),
    # decimal: plain digits, trailing zeros gone, never an exponent
    (1024, False, "1024"), (2048, False, "2048"), (Decimal("1E+3"), False, "1000"), (Decimal("1.50"), False, "1.5"),
    (Decimal("0.001"), False, "0.001"), (Decimal("-2"), False, "-2"), (0, False, "0"),
])
def test_show(value, binary, shown):
    assert show(Decimal(value), binary) == shown


def test_show_is_decimal_unless_asked():
    assert show(Decimal(1024)) == "1024"
