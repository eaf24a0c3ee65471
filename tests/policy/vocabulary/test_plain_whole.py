"""vocabulary/plain.py: what the vocabulary-plain mutation run found no test pinning down (a list proxy at the top,
tuples kept, shared sub-values kept shared and every one filled)."""
from __future__ import annotations

from types import MappingProxyType

from pulumi_policy.proxy import unknown_checking_proxy

from kueue_cohorts.policy.rules.vocabulary.plain import plain


def test_a_list_proxy_at_the_top_becomes_a_plain_list():
    """Kills `is_list(None)` at the top (plain 4): the proxy itself came back, which compares by identity."""
    out = plain(unknown_checking_proxy([1, {"a": [2]}]))
    assert out == [1, {"a": [2]}] and type(out) is list and type(out[1]) is dict


def test_shared_sub_values_stay_shared_and_all_are_filled():
    """The docstring's promise (a YAML alias bomb stays linear): a value referenced twice is one object in the
    result (kills `id(None)` in the memo checks, plain 11 and 36), and every container after it is filled (kills
    `continue` -> `break`, plain 13)."""
    shared = {"k": [1, 2]}
    out = plain({"a": shared, "b": shared, "c": {"d": [shared, {"e": 3}]}})  # as YAML aliases load
    assert out == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}, "c": {"d": [{"k": [1, 2]}, {"e": 3}]}}
    assert out["a"] is out["b"] is out["c"]["d"][0]


def test_a_tuple_inside_is_kept_as_it_is():
    """Kills `memo.get(id(child), None)` (plain 53, 55): a tuple is never rebuilt, so it is no memo entry."""
    assert plain({"a": (1, 2), "b": [(3,)]}) == {"a": (1, 2), "b": [(3,)]}


def test_a_read_only_mapping_is_rebuilt_as_a_dict():
    """A map that is no dict (here a read-only view) is read by key, not iterated as a list of its keys (kills
    `is_map(None)` and `and False` in the non-dict branches, plain 24, 26, 42, 44)."""
    out = plain({"a": MappingProxyType({"b": [1], "c": {"d": 2}})})
    assert out == {"a": {"b": [1], "c": {"d": 2}}} and type(out["a"]) is dict


def test_every_proxy_below_a_shared_value_or_a_read_only_mapping_is_rebuilt():
    """A container visited twice stops nothing (kills `continue` -> `break`, plain 13: the containers still waiting
    were never rebuilt), and the children of a map that is no dict are walked (kills plain 24, 26): a proxy left
    below either would reach the finding as a proxy."""
    shared = {"k": [1, 2]}
    out = plain({"c": unknown_checking_proxy([1, {"x": 2}]), "a": shared, "b": shared})
    assert out == {"c": [1, {"x": 2}], "a": {"k": [1, 2]}, "b": {"k": [1, 2]}}
    assert type(out["c"]) is list and type(out["c"][1]) is dict
    view = plain({"v": MappingProxyType({"p": unknown_checking_proxy({"q": [3]})})})
    assert view == {"v": {"p": {"q": [3]}}} and type(view["v"]["p"]) is dict and type(view["v"]["p"]["q"]) is list
