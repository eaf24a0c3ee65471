"""kueue_cohorts/policy/rules/vocabulary/quota.py: the quota entries of a ClusterQueue
(flavor, resource, path, group) and `flavor_fit`, judged against hand tables of Kueue's flavor assignment (one
flavor per resource group, the first that holds the whole group; `pkg/scheduler/flavorassigner`, Kueue v0.19.2)."""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Optional

import pytest

from kueue_cohorts.policy.rules.vocabulary.quantity import parse
from kueue_cohorts.policy.rules.vocabulary.quota import FlavorFit, QuotaEntry, flavor_fit, quota_entries
from tests.policy.fixtures import kube


def _cq(groups: list[list[tuple[str, dict[str, str]]]]) -> Any:
    """A ClusterQueue whose resource groups are `groups`: per group, (flavor, {resource: nominalQuota}) in order."""
    return kube("cq", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"resourceGroups": [
            {"coveredResources": sorted({r for _, quotas in group for r in quotas}),
             "flavors": [{"name": flavor, "resources": [{"name": r, "nominalQuota": q} for r, q in quotas.items()]}
                         for flavor, quotas in group]}
            for group in groups]}})


def test_quota_entries_name_flavor_resource_path_and_group():
    cq = _cq([[("a", {"cpu": "1"}), ("b", {"cpu": "2"})], [("g", {"gpu": "3"})]])
    assert [(e.flavor, e.resource, e.path, e.group, e.field("nominalQuota")) for e in quota_entries(cq)] == [
        ("a", "cpu", "spec.resourceGroups[0].flavors[0].resources[0]", 0, "1"),
        ("b", "cpu", "spec.resourceGroups[0].flavors[1].resources[0]", 0, "2"),
        ("g", "gpu", "spec.resourceGroups[1].flavors[0].resources[0]", 1, "3")]


def _nominal(entry: QuotaEntry) -> Optional[Decimal]:
    return parse(entry.field("nominalQuota"))


D = Decimal


TWO_FLAVORS = [[("a", {"cpu": "4", "gpu": "1"}), ("b", {"cpu": "8", "gpu": "2"})]]


FIT_TABLE = [
    # (groups, requests, expected FlavorFit) -- written from Kueue's rule, not from the function
    (TWO_FLAVORS, {"cpu": D(2), "gpu": D(1)}, FlavorFit(True, frozenset(), {}, {0: "a"})),
    (TWO_FLAVORS, {"cpu": D(6), "gpu": D(1)}, FlavorFit(True, frozenset(), {}, {0: "b"})),
    (TWO_FLAVORS, {"cpu": D(6), "gpu": D(3)}, FlavorFit(False, frozenset(), {"gpu": (D(2), "b")}, {})),
    # a tie in misfits (a misses cpu, b misses gpu): the first flavor is the closest
    ([[("a", {"cpu": "1", "gpu": "4"}), ("b", {"cpu": "4", "gpu": "1"})]], {"cpu": D(2), "gpu": D(2)},
     FlavorFit(False, frozenset(), {"cpu": (D(1), "a")}, {})),
    # a resource the flavor lists no entry for holds 0 there; below 1 still misses
    ([[("a", {"cpu": "4"}), ("b", {"cpu": "4", "gpu": "1"})]], {"cpu": D(1), "gpu": D("0.5")},
     FlavorFit(True, frozenset(), {}, {0: "b"})),
    ([[("a", {"cpu": "4"}), ("b", {"cpu": "0"}), ("c", {"cpu": "0", "gpu": "0"})]], {"cpu": D(1), "gpu": D("0.5")},
     FlavorFit(False, frozenset(), {"gpu": (D(0), "a")}, {})),
    ([[("a", {"cpu": "0"}), ("b", {"cpu": "0", "gpu": "1"})]], {"cpu": D(1), "gpu": D("0.5")},
     FlavorFit(False, frozenset(), {"cpu": (D(0), "b")}, {})),
    # an unparsable quota holds 0
    ([[("a", {"cpu": "many"})]], {"cpu": D("0.5")}, FlavorFit(False, frozenset(), {"cpu": (D(0), "a")}, {})),
    # a zero request asks nothing: not uncovered, and no group is chosen for it
    ([[("a", {"cpu": "1"})]], {"gpu": D(0)}, FlavorFit(True, frozenset(), {}, {})),
    ([[("a", {"cpu": "1"})]], {"gpu": D(1)}, FlavorFit(False, frozenset({"gpu"}), {}, {})),
    # only the groups asked for are assigned; a later group is still judged after one not asked
    ([[("a", {"cpu": "1"})], [("g1", {"gpu": "1"}), ("g2", {"gpu": "4"})]], {"gpu": D(3)},
     FlavorFit(True, frozenset(), {}, {1: "g2"})),
    ([[("a", {"cpu": "1"})], [("g1", {"gpu": "1"})]], {"gpu": D(3)},
     FlavorFit(False, frozenset(), {"gpu": (D(1), "g1")}, {})),
    ([[("a", {"cpu": "1"})], [("g1", {"gpu": "1"})]], {"cpu": D(1), "gpu": D(1)},
     FlavorFit(True, frozenset(), {}, {0: "a", 1: "g1"})),
    # short in one group and uncovered elsewhere: does not fit
    ([[("a", {"cpu": "1"})]], {"cpu": D(2), "gpu": D(1)},
     FlavorFit(False, frozenset({"gpu"}), {"cpu": (D(1), "a")}, {})),
]


@pytest.mark.parametrize("groups, requests, expected", FIT_TABLE)
def test_flavor_fit_by_hand_table(groups, requests, expected):
    assert flavor_fit(_cq(groups), requests, _nominal) == expected
