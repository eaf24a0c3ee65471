"""policy/rules/vocabulary/quantity.py `parse_quantity_strict` against hand tables of what the apiserver makes of a
quantity text: k8s.io/apimachinery v0.36.3 `pkg/api/resource/quantity.go` (`ParseQuantity`: rounds up to the next
nano, `inf.RoundUp`) and `suffix.go` (`suffixHandler.interpret`: the exponent of `e`/`E` is read with
`strconv.ParseInt(..., 10, 64)`, so leading zeros count for nothing and an exponent beyond int64 is ErrSuffix, then
truncated with `int32(parsed)`, so 1e4294967296 is 1). Each value was taken from that `ParseQuantity` (run on the
pinned module with Go), not from the product; above 2^63-1 the product refuses what the apiserver would keep
(quantity.go's `maxAllowed`: no quota or capacity is that large), with its own message, asserted whole."""
from __future__ import annotations

import math
from decimal import Decimal

import pytest

from kueue_cohorts.policy.rules.vocabulary.quantity import parse_quantity_strict

MAX = 9223372036854775807
"""2^63-1, written out (int64's largest value: the apiserver's `maxAllowed`)."""
ABOVE = "is above the largest quantity Kubernetes keeps (2^63-1)"
EXPONENT = "is not a Kubernetes quantity (its exponent is beyond int64)"
NOT_FINITE = "is not a finite number"
NANO = Decimal("1e-9")


@pytest.mark.parametrize("text, value", [
    # leading zeros of the exponent count for nothing (ParseInt), with or without a sign
    ("1e0000003", 1000), ("1e+0000003", 1000), ("1E+0000000000000000000000000018", 10**18), ("1e-0000003", "0.001"),
    ("-1e-0000000010", "-1e-9"), ("1e" + "0" * 4990 + "3", 1000), ("1e-" + "0" * 4990 + "1", "0.1"),
    ("1e000000", 1), ("5e-0", 5), ("1e000018", 10**18),
    # up to nine decimals kept, anything finer rounded up (away from zero) to the next nano
    ("1e-9", NANO), ("1e-10", NANO), ("-1e-10", -NANO), ("1.5e-9", "2e-9"), ("5e-11", NANO), ("0.0000000001", NANO),
    ("1.0000000001", "1.000000001"), ("123456789.123456789123e-3", "123456.789123457"), ("1e-500", NANO),
    ("1e-999999", NANO), ("1e-1000000", NANO), ("1e-9999999", NANO), ("1e-4000", NANO), ("1e-4001", NANO),
    ("-1e-9999999", -NANO),
    # mantissa and exponent combine exactly, however long either is
    ("0." + "0" * 500 + "1e501", 1), ("0." + "0" * 500 + "1e500", "0.1"), ("1" + "0" * 500 + "e-500", 1),
    ("1" + "0" * 500 + "e-482", 10**18), ("9223372036854775807" + "0" * 600 + "e-600", MAX),
    ("0." + "0" * 100000 + "1e100000", "0.1"), ("1" + "0" * 1000000 + "e-1000000", 1),
    ("0." + "0" * 1000000 + "1e1000000", "0.1"),
    # the largest quantity, spelled with an exponent
    ("9.223372036854775807e18", MAX), ("922337203685477580.7e1", MAX), ("0.9223372036854775807e19", MAX),
    ("9223372036854775807e0", MAX), ("-9.223372036854775807e18", -MAX),
    # the exponent is truncated to int32 (int32(parsed)): 2^32 + k reads as k
    ("1e4294967296", 1), ("-1e4294967296", -1), ("1e4294967299", 1000), ("1.5e4294967287", "2e-9"),
    ("1e-4294967306", NANO), ("1e-9223372036854775808", 1), ("1e9223372036854775807", "0.1"),
    ("9.223372036854775807e4294967314", MAX),
])
def test_exponents_as_the_apiserver_reads_them(text, value):
    assert parse_quantity_strict(text) == Decimal(value)


@pytest.mark.parametrize("text", [
    "9.223372036854775808e18", "0.9223372036854775808e19", "1e19", "-1e19", "1e399", "1e400", "0.001e402",
    "0.001e403", "1e999999", "1e9999999", "1e2147483647", "9.223372036854775808e4294967314",
    "1" + "0" * 500 + "e-481", "0." + "0" * 500 + "1e520", "1e+00000000000000000000000000000019",
])
def test_exponents_beyond_the_largest_quantity_are_refused(text):
    with pytest.raises(ValueError) as refused:
        parse_quantity_strict(text)
    assert str(refused.value) == ABOVE


@pytest.mark.parametrize("text", [
    "1e9223372036854775808", "-1e9223372036854775808", "1e-9223372036854775809", "1e-99999999999999999999",
    "1e99999999999999999999", "1e" + "9" * 5000, "1e-" + "9" * 5000, "1e+" + "1" + "0" * 19,
])
def test_exponents_beyond_int64_are_no_quantity(text):
    with pytest.raises(ValueError) as refused:
        parse_quantity_strict(text)
    assert str(refused.value) == EXPONENT


@pytest.mark.parametrize("raw", [math.nan, math.inf, -math.inf, Decimal("NaN"), Decimal("sNaN"), Decimal("Infinity"),
                                 Decimal("-Infinity")])
def test_numbers_that_are_not_finite_are_refused(raw):
    with pytest.raises(ValueError) as refused:
        parse_quantity_strict(raw)
    assert str(refused.value) == NOT_FINITE


@pytest.mark.parametrize("raw, value", [
    # a JSON number: integral floats by their integer value (ParseQuantity of "9223372036854774784")
    (9223372036854774784.0, MAX - 1023), (1e16, 10**16), (4.0, 4), (-2.0, -2), (2.5, "2.5"), (1e-10, NANO),
    # Decimals the program computes, however far their exponent
    (Decimal("1E+3"), 1000), (Decimal("1.50"), "1.5"), (Decimal("1E-500"), NANO), (Decimal(MAX), MAX),
])
def test_numbers(raw, value):
    assert parse_quantity_strict(raw) == Decimal(value)


@pytest.mark.parametrize("raw", [float(2**63), 1e300, Decimal("9.223372036854775808E+18"), Decimal("1E+500"),
                                 Decimal("1E+100000000000000000")])
def test_numbers_beyond_the_largest_quantity_are_refused(raw):
    with pytest.raises(ValueError) as refused:
        parse_quantity_strict(raw)
    assert str(refused.value) == ABOVE
