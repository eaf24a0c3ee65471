"""policy/rules/vocabulary/selectors.py: LabelSelector shape, label syntax, matching, overlap and pinned names."""
from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from kueue_cohorts.policy.rules.vocabulary.selectors import (
    NAME_LABEL,
    can_overlap,
    is_label_key,
    is_label_value,
    label_key_problem,
    matches,
    pins_names,
    selector_problems,
)
from kueue_cohorts.policy.rules.vocabulary.selectors import matches as selector_matches
from tests.policy.fixtures import (
    UNKNOWN,
)

COMPLIANT = {
    "matchLabels": {"kueue.x-k8s.io/queue": "c12-inference-cq"},
    "matchExpressions": [
        {"key": NAME_LABEL, "operator": "In", "values": ["c12-inference"]},
        {"key": "team", "operator": "Exists"},
        {"key": "legacy", "operator": "DoesNotExist", "values": []},
        {"key": "tier", "operator": "NotIn", "values": ["batch"]},
    ],
}


def test_compliant_selector_has_no_problems():
    assert selector_problems(COMPLIANT) == []
    assert selector_problems({}) == []
    assert selector_problems(None) == []


def _break(mutate):
    selector = copy.deepcopy(COMPLIANT)
    mutate(selector)
    return selector


@pytest.mark.parametrize("mutate,expected", [
    (lambda s: s.update(matchLabels="yes"),
     [("matchLabels", "must be a map of label key to label value, not str 'yes'")]),
    (lambda s: s.update(matchLabels=["oops"]),
     [("matchLabels", "must be a map of label key to label value, not list ['oops']")]),
    (lambda s: s["matchLabels"].update({"bad key!": "x"}),
     [("matchLabels.bad key!", "has key 'bad key!': the name part of a label key must consist of alphanumeric "
       "characters, '-', '_' or '.', starting and ending with an alphanumeric character (e.g. 'MyName', 'my.name', "
       "'123-abc')")]),
    (lambda s: s["matchLabels"].update({"team": "a" * 64}),
     [("matchLabels.team", f"is '{'a' * 64}': a label value must be no more than 63 characters")]),
    (lambda s: s["matchLabels"].update({"team": True}),
     [("matchLabels.team", "is True: a label value must be a string, not bool")]),
    (lambda s: s.update(matchlabels={"a": "b"}),
     [("matchlabels", "is not a field of a label selector (only matchLabels and matchExpressions are; the apiserver "
       "would drop it)")]),
    (lambda s: s.update(matchExpressions={"key": "a"}),
     [("matchExpressions", "must be a list of {key, operator, values}, not dict {'key': 'a'}")]),
    (lambda s: s["matchExpressions"][0].update(values=[]),
     [("matchExpressions[0].values", "must be non-empty for operator In")]),
    (lambda s: s["matchExpressions"][0].pop("values"),
     [("matchExpressions[0].values", "must be non-empty for operator In")]),
    (lambda s: s["matchExpressions"][3].update(values=[]),
     [("matchExpressions[3].values", "must be non-empty for operator NotIn")]),
    (lambda s: s["matchExpressions"][1].update(values=["x"]),
     [("matchExpressions[1].values", "must be empty for operator Exists")]),
    (lambda s: s["matchExpressions"][2].update(values=["x"]),
     [("matchExpressions[2].values", "must be empty for operator DoesNotExist")]),
    (lambda s: s["matchExpressions"][0].update(operator="in"),
     [("matchExpressions[0].operator", "is 'in': it must be one of In, NotIn, Exists, DoesNotExist")]),
    (lambda s: s["matchExpressions"][0].pop("operator"),
     [("matchExpressions[0].operator", "is missing: it must be one of In, NotIn, Exists, DoesNotExist")]),
    (lambda s: s["matchExpressions"][0].pop("key"), [("matchExpressions[0].key", "is required")]),
    (lambda s: s["matchExpressions"][0].update(key="/x"),
     [("matchExpressions[0].key", "is '/x': the prefix part of a label key must be non-empty")]),
    (lambda s: s["matchExpressions"][0].update(values=["ok", "not ok"]),
     [("matchExpressions[0].values[1]", "is 'not ok': a label value must be empty or consist of alphanumeric "
       "characters, '-', '_' or '.', starting and ending with an alphanumeric character (e.g. 'MyName', 'my.name', "
       "'123-abc')")]),
    (lambda s: s["matchExpressions"][0].update(values="c12"),
     [("matchExpressions[0].values", "must be a list of label values, not str 'c12'")]),
    (lambda s: s["matchExpressions"].append("oops"),
     [("matchExpressions[4]", "must be a map {key, operator, values}, not str 'oops'")]),
    (lambda s: s["matchExpressions"][1].update(value=["x"]),
     [("matchExpressions[1].value", "is not a field of a label selector requirement (only key, operator and values "
       "are)")]),
])
def test_each_broken_property_is_one_problem(mutate, expected):
    assert selector_problems(_break(mutate)) == expected


@pytest.mark.parametrize("value", ["yes", ["oops"], 3, True])
def test_non_map_selector_is_one_problem(value):
    [(where, problem)] = selector_problems(value)
    assert where == "" and problem.startswith("must be a label selector")


def test_huge_value_is_shown_truncated():
    [(_, problem)] = selector_problems({"matchLabels": ["x" * 10_000]})
    assert len(problem) < 200


@pytest.mark.parametrize("key", ["team", "kueue.x-k8s.io/queue", NAME_LABEL, "a", "A_b.c-9", "x" * 63,
                                 "a.b/" + "c" * 63, ("a" * 63 + ".") * 3 + "a" * 61 + "/n"])
def test_valid_label_keys(key):
    assert is_label_key(key), label_key_problem(key)


@pytest.mark.parametrize("key", ["", "/", "a/", "/a", "a/b/c", "-a", "a-", "x" * 64, "Upper.Case/name",
                                 "a_b.com/name", "a b", ("a" * 63 + ".") * 4 + "a/n", 7, None])
def test_invalid_label_keys(key):
    assert not is_label_key(key)


@pytest.mark.parametrize("value", ["", "a", "A-b_c.9", "x" * 63])
def test_valid_label_values(value):
    assert is_label_value(value)


@pytest.mark.parametrize("value", ["x" * 64, "-a", "a-", "a/b", "a b", 1, None, True])
def test_invalid_label_values(value):
    assert not is_label_value(value)


def test_matches_semantics():
    ns = {NAME_LABEL: "c12-inference", "kueue.x-k8s.io/queue": "c12-inference-cq", "team": "x"}
    assert matches(COMPLIANT, ns)
    assert not matches(COMPLIANT, dict(ns, tier="batch"))
    assert not matches(COMPLIANT, dict(ns, legacy=""))
    assert not matches(COMPLIANT, {k: v for k, v in ns.items() if k != "team"})
    assert matches({}, {}) and matches({}, ns)
    assert not matches(None, ns)
    assert not matches({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, {"a": "1"})
    assert not matches("yes", ns)


def test_unknown_values_propagate():
    selector = unknown_checking_proxy({"matchLabels": {"team": UNKNOWN}})
    for call in (lambda: matches(selector, {}), lambda: can_overlap(selector, {}),
                 lambda: selector_problems(selector), lambda: pins_names(selector)):
        with pytest.raises(UnknownValueError):
            call()


def _in(*names):
    return {"matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": list(names)}]}


@pytest.mark.parametrize("a,b,overlap", [
    (None, {}, False),
    ({}, {}, True),
    ({"matchLabels": {"team": "a"}}, {"matchLabels": {"team": "b"}}, False),
    ({"matchLabels": {"team": "a"}}, {"matchLabels": {"other": "b"}}, True),
    (_in("x", "y"), _in("y", "z"), True),
    (_in("x"), _in("y"), False),
    # issue 13 item 5: `training.tenant: c12-inference-cq` makes both queues select by the same tenant label.
    ({"matchLabels": {"kueue.x-k8s.io/queue": "c12-inference-cq"}},
     {"matchLabels": {"kueue.x-k8s.io/queue": "c12-inference-cq"}}, True),
    ({"matchLabels": {"kueue.x-k8s.io/queue": "c12-inference-cq"}, **_in("c12-inference")},
     {"matchLabels": {"kueue.x-k8s.io/queue": "c12-inference-cq"}, **_in("c12-training")}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]},
     {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {"matchLabels": {"a": "x"}}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]},
     {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, True),
])
def test_can_overlap_table(a, b, overlap):
    assert can_overlap(a, b) is overlap
    assert can_overlap(b, a) is overlap


def test_namespaces_always_carry_their_name_label():
    no_name = {"matchExpressions": [{"key": NAME_LABEL, "operator": "DoesNotExist"}]}
    assert can_overlap(no_name, {})
    assert not can_overlap(no_name, {}, namespaces=True)


@pytest.mark.parametrize("selector,names", [
    (_in("a", "b"), frozenset({"a", "b"})),
    ({"matchLabels": {NAME_LABEL: "a"}}, frozenset({"a"})),
    ({"matchLabels": {NAME_LABEL: "a"}, **_in("a", "b")}, frozenset({"a"})),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": ["a", "b"]},
                           {"key": NAME_LABEL, "operator": "NotIn", "values": ["b"]}]}, frozenset({"a"})),
    ({"matchLabels": {"kueue.x-k8s.io/queue": "c12-inference-cq"}}, None),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn", "values": ["kube-system"]}]}, None),
    ({}, None),
    (None, frozenset()),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "DoesNotExist"}]}, frozenset()),
    ({"matchLabels": {"team": "a"}, "matchExpressions": [{"key": "team", "operator": "In", "values": ["b"]}]},
     frozenset()),
])
def test_pins_names(selector, names):
    assert pins_names(selector) == names


# --- properties --------------------------------------------------------------------------------------------------
# Selectors over keys {a, b} and values {x, y}; witnesses over the same keys with values {x, y, w} or absent. `w` is
# a value no selector mentions, standing in for the unbounded rest of the label values.
KEYS, VALUES, WITNESS_VALUES = ["a", "b"], ["x", "y"], [None, "x", "y", "w"]


requirement = st.one_of(
    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "operator": st.sampled_from(["In", "NotIn"]),
                           "values": st.lists(st.sampled_from(VALUES), min_size=1, max_size=2)}),
    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
)


selector = st.one_of(
    st.none(),
    st.builds(lambda labels, exprs: {k: v for k, v in (("matchLabels", labels), ("matchExpressions", exprs)) if v},
              st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
              st.lists(requirement, max_size=3)),
)


def _witnesses():
    for combo in itertools.product(WITNESS_VALUES, repeat=len(KEYS)):
        yield {k: v for k, v in zip(KEYS, combo, strict=True) if v is not None}


@settings(max_examples=400)
@given(selector, selector)
def test_can_overlap_iff_a_witness_exists(a, b):
    witness = any(matches(a, labels) and matches(b, labels) for labels in _witnesses())
    assert can_overlap(a, b) is witness


@settings(max_examples=300)
@given(selector)
def test_generated_selectors_are_valid_and_match_like_their_requirements(s):
    assert selector_problems(s) == []
    assert can_overlap(s, {}) is any(matches(s, labels) for labels in _witnesses())


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["n1", "n2", "n3"]), max_size=3), selector)
def test_pinned_names_bound_every_match(names, s):
    pinned_selector = {"matchLabels": dict((s or {}).get("matchLabels", {})),
                       "matchExpressions": list((s or {}).get("matchExpressions", []))
                       + ([{"key": NAME_LABEL, "operator": "In", "values": names}] if names else [])}
    pinned = pins_names(pinned_selector)
    for name in ["n1", "n2", "n3", "other"]:
        for labels in _witnesses():
            if matches(pinned_selector, dict(labels, **{NAME_LABEL: name})):
                assert pinned is None or name in pinned
    if names:
        assert pinned is not None and pinned <= set(names)


@given(st.text(max_size=70))
def test_label_syntax_never_raises(text):
    assert is_label_key(text) in (True, False)
    assert is_label_value(text) in (True, False)


def test_label_selector_semantics():
    name = {"kubernetes.io/metadata.name": "kube-system"}
    assert selector_matches({}, name)
    assert not selector_matches({"matchLabels": {"team": "a"}}, name)
    assert selector_matches({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, name)
    assert not selector_matches({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                       "values": ["kube-system"]}]}, name)
