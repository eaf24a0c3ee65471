"""One grammar for field paths: `parse_path` is the inverse of `format_path` (policy/rules/paths.py), for every path
kubectl explains (names, indexes, keys with '/' or '.' quoted), so a finding maps back to the field it names."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.vocabulary.paths import format_path, parse_path

NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,10}", fullmatch=True)
QUOTED = st.from_regex(r"[a-z0-9]{1,8}[./][a-z0-9./-]{0,12}", fullmatch=True)
PART = st.one_of(NAME, QUOTED, st.integers(min_value=0, max_value=999))


@given(NAME, st.lists(PART, max_size=8))
def test_parse_is_the_inverse_of_format(first, rest):
    parts = [first, *rest]
    assert parse_path(format_path(parts)) == parts


def test_the_rest_of_a_longer_path_and_single_quotes():
    assert parse_path('.containers[0].resources["nvidia.com/gpu"]') == ["containers", 0, "resources", "nvidia.com/gpu"]
    assert parse_path("[2]['a/b'].c") == [2, "a/b", "c"]
    assert parse_path("") == []
