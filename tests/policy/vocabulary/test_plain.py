"""policy/rules/vocabulary/plain.py: plain values behind the SDK's proxies."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pulumi_policy.proxy import unknown_checking_proxy

from kueue_cohorts.policy.rules.vocabulary.plain import plain
from tests.policy.fixtures import UNKNOWN

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                       max_size=3), max_leaves=20)


@given(st.dictionaries(st.text(max_size=3), json_values, max_size=4))
def test_plain_of_a_proxy_equals_the_original(value):
    assert plain(unknown_checking_proxy(value)) == value


def test_unknowns_stay_as_sentinels_and_scalars_pass_through():
    assert plain(unknown_checking_proxy({"a": [UNKNOWN]})) == {"a": [UNKNOWN]}
    assert plain("x") == "x" and plain(3) == 3 and plain(None) is None


def test_deep_and_shared_values():
    deep: dict = {}
    for _ in range(5000):
        deep = {"x": deep}
    out_deep, depth = plain(deep), 0
    while out_deep:
        out_deep, depth = out_deep["x"], depth + 1
    assert depth == 5000
    shared: list = ["x"]
    for _ in range(80):
        shared = [shared, shared]
    out = plain(shared)
    assert out[0] is out[1]
