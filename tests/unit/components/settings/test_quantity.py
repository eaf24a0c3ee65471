"""Quantities are canonicalised the way the API server stores them, so a second `pulumi up` sees no diff."""
import pytest

from components.settings.quantity import canonical, parse


@pytest.mark.parametrize("written,stored", [
    ("1000m", "1"), ("2048Mi", "2Gi"), ("4", "4"), (4, "4"), ("8Gi", "8Gi"), ("0.5", "500m"), ("1536Mi", "1536Mi"),
    ("2048", "2048"), ("8000", "8k"), ("1.5", "1500m"), ("0", "0"), (2.5, "2500m"), ("100Gi", "100Gi"),
    ("512Mi", "512Mi"), ("1024Ki", "1Mi"), ("0.1m", "100u"),
])
def test_canonical(written, stored):
    assert canonical(written) == stored


@pytest.mark.parametrize("bad", ["two", "", "1.2.3", "4 Gi", True])
def test_parse_refuses_non_quantities(bad):
    with pytest.raises(ValueError):
        parse(bad)


def test_computed_values_keep_the_binary_suffix_when_asked():
    assert canonical(parse("32Gi") - parse("16Gi"), binary=True) == "16Gi"
    assert canonical(parse("32Gi") - parse("16Gi")) == "17179869184"
    assert canonical(parse("1"), binary=True) == "1"  # below 1024 stays decimal, as apimachinery does
