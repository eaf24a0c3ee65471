"""Quantities are canonicalised the way the API server stores them, so a second `pulumi up` sees no diff.

The tables are written by hand from apimachinery's rules (k8s.io/apimachinery v0.36.3 `pkg/api/resource`
`Quantity.CanonicalizeBytes`): a binary-suffixed value keeps the largest binary suffix that divides it when it is a
whole number of at least 1024, anything else is printed with the largest decimal suffix (a power of 1000) that
leaves a whole mantissa, digits below 1n rounded up to the next nano."""
from decimal import Decimal

import pytest

from kueue_cohorts.components.settings.quantity import canonical, canonical_non_negative, is_binary, parse


@pytest.mark.parametrize("written,stored", [
    ("1000m", "1"), ("2048Mi", "2Gi"), ("4", "4"), (4, "4"), ("8Gi", "8Gi"), ("0.5", "500m"), ("1536Mi", "1536Mi"),
    ("2048", "2048"), ("8000", "8k"), ("1.5", "1500m"), ("0", "0"), (2.5, "2500m"), ("100Gi", "100Gi"),
    ("512Mi", "512Mi"), ("1024Ki", "1Mi"), ("0.1m", "100u"),
    # the smallest binary-suffixed value that keeps its suffix, and the ones that do not
    ("1Ki", "1Ki"), ("1023Ki", "1023Ki"), ("1025Ki", "1025Ki"), ("1024", "1024"), ("0.5Ki", "512"),
    ("1Ei", "1Ei"), ("7Ei", "7Ei"), ("1024Pi", "1Ei"), ("1536Ki", "1536Ki"),
    # the E suffix and its neighbours
    ("1E", "1E"), ("2E", "2E"), ("1000P", "1E"), ("1e18", "1E"), ("1500P", "1500P"), ("9E", "9E"), ("1P", "1P"),
    ("1G", "1G"), ("1T", "1T"), ("1M", "1M"), ("1k", "1k"), ("1u", "1u"), ("1n", "1n"), ("1000n", "1u"),
    # signs: the magnitude is printed, then the sign
    ("-1", "-1"), ("-1Gi", "-1Gi"), ("-500m", "-500m"), ("-2048Mi", "-2Gi"), ("+4", "4"), ("-0", "0"),
    # below 1n: rounded up, away from zero for a negative value (apimachinery rounds the magnitude)
    ("1e-10", "1n"), ("0.0000000015", "2n"), ("1.0000000001", "1000000001n"), ("-1e-10", "-1n"),
    # a YAML float whose text is not its value: the float's own value is kept
    (9223372036854774784.0, "9223372036854774784"), (1e18, "1E"),
])
def test_canonical(written, stored):
    assert canonical(written) == stored


@pytest.mark.parametrize("value, stored", [
    # a computed Decimal is not rounded by the parser: canonical rounds it up to nano itself
    (Decimal("1e-10"), "1n"), (Decimal("0.0000000015"), "2n"), (Decimal("-0.0000000015"), "-2n"),
    (Decimal("1.0000000001"), "1000000001n"), (Decimal("0.5"), "500m"), (Decimal("1024"), "1024"),
    (Decimal("1E+3"), "1k"), (Decimal("2048.000"), "2048"),
])
def test_canonical_of_computed_values(value, stored):
    assert canonical(value) == stored


class _Text(str):
    """A str subclass (what a YAML loader with its own string type hands over): canonicalised as its text."""


@pytest.mark.parametrize("value, binary, stored", [
    (_Text("2048Mi"), False, "2Gi"), (_Text("1024"), True, "1Ki"), (_Text("0.5"), False, "500m"),
    (_Text("1024"), False, "1024"),
])
def test_canonical_of_a_str_subclass(value, binary, stored):
    assert canonical(value, binary) == stored


@pytest.mark.parametrize("bad", ["two", "", "1.2.3", "4 Gi", True, Decimal("sNaN"), Decimal("NaN"), None, [],
                                 "9223372036854775808", "8Ei"])
def test_parse_refuses_non_quantities(bad):
    with pytest.raises(ValueError):
        parse(bad)
    with pytest.raises(ValueError):
        canonical(bad)


@pytest.mark.parametrize("bad, message", [
    ("two", "'two' is not a Kubernetes quantity"), ("4 Gi", "'4 Gi' is not a Kubernetes quantity"),
    ("", "'' is not a Kubernetes quantity"), (True, "'True' is not a Kubernetes quantity"),
    ("x" * 50, f"{'x' * 40!r} is not a Kubernetes quantity"),
])
def test_the_message_names_the_value_cut_to_40_characters(bad, message):
    with pytest.raises(ValueError) as refused:
        parse(bad)
    assert str(refused.value) == message


@pytest.mark.parametrize("bad", ["-1", "-0", " -0 ", -1, "-1Gi", "-1e-10"])
def test_canonical_non_negative_refuses_any_minus_sign(bad):
    with pytest.raises(ValueError) as refused:
        canonical_non_negative(bad)
    assert str(refused.value) == "a quantity must not be negative"


def test_computed_values_keep_the_binary_suffix_when_asked():
    assert canonical(parse("32Gi") - parse("16Gi"), binary=True) == "16Gi"
    assert canonical(parse("32Gi") - parse("16Gi")) == "17179869184"
    assert canonical(parse("1"), binary=True) == "1"  # below 1024 stays decimal, as apimachinery does
    assert canonical(Decimal(1024), binary=True) == "1Ki"
    assert canonical(Decimal(1023), binary=True) == "1023"
    assert canonical(Decimal(1536), binary=True) == "1536"


@pytest.mark.parametrize("text, binary", [("8Gi", True), (" 8Gi ", True), ("1Ki", True), ("8G", False),
                                          ("8", False), (8, False), ("8gi", False)])
def test_is_binary(text, binary):
    assert is_binary(text) is binary
