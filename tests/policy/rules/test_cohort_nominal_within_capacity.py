"""cohort-nominal-within-capacity (promise 1): the nominalQuota of every ClusterQueue and Cohort of the stack fits,
per ResourceFlavor, the nodes that flavor really selects by its nodeLabels; flavors that select the same nodes
share them (Hall's condition over every set of flavors, checked with a maximum flow).

cohort-nominal-within-capacity: the whole sentence of every kind of finding (rule and fix), written out by hand:
more holders than a message names (counted, "and 2 more"), a Topology-Aware flavor with and without nodeLabels
whose level labels no pool carries, node pools without labels (undecidable), no node pool at all, memory shown in
binary units.

Issue 13 item 11 in the pack: a malformed quantity ("NaN", "Infinity", "1e999999") in a quota or a node pool's
capacity is reported by this policy, never raised (it parses with quantities.parse); a malformed request is
inference-fits-nominal's (test_inference_fits_nominal.py)."""
from __future__ import annotations

from decimal import Decimal
from itertools import combinations
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import check_capacity_options
from kueue_cohorts.policy.rules.single_layout_per_cohort import check_single_layout_per_cohort
from tests.policy.fixtures import DEV_CAPACITY, UNKNOWN, compliant, messages, stack

GPU = "nvidia.com/gpu"


POLICY = "cohort-nominal-within-capacity"


def flavor(name: str, labels: Optional[dict] = None) -> dict:
    spec = {"nodeLabels": labels} if labels else {}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": spec}


def queue(name: str, quota: dict[str, int], cohort: Optional[str] = None, kind: str = "ClusterQueue",
          parent: Optional[str] = None) -> dict:
    """A ClusterQueue (or Cohort) holding `quota[flavor]` GPUs in each flavor."""
    spec: dict = {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
        {"name": f, "resources": [{"name": GPU, "nominalQuota": str(n)}]} for f, n in quota.items()]}]}
    if cohort is not None:
        spec["cohortName"] = cohort
    if parent is not None:
        spec["parentName"] = parent
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": name}, "spec": spec}


def pool(name: str, gpus: int, labels: Optional[dict], count: int = 1, named: Optional[str] = None) -> dict:
    out: dict = {"name": name, "count": count, "capacity": {GPU: str(gpus)}}
    if labels is not None:
        out["labels"] = labels
    if named is not None:
        out["resourceFlavor"] = named
    return out


def judge(manifests: dict, pools: list, **options) -> list:
    return check_capacity_options(stack(manifests), {"nodePools": pools, **options})


H100 = {"gpu": "h100"}


A100 = {"gpu": "a100"}


def test_quota_split_over_two_cohorts_each_fitting_alone_fails_together():
    manifests = {"f": flavor("h100", H100), "a": queue("a-cq", {"h100": 3}, "one"),
                 "b": queue("b-cq", {"h100": 3}, "two")}
    [v] = judge(manifests, [pool("h100", 4, H100)])
    assert (v.subject.name, v.field) == ("a-cq", "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota")
    assert v.rule == (
        "the nominalQuota of ResourceFlavor 'h100' over every ClusterQueue and Cohort of the stack sums to 6 of "
        "'nvidia.com/gpu' (ClusterQueue 'a-cq' 3, ClusterQueue 'b-cq' 3), above the 4 of the nodes it selects (node "
        "pool 'h100'; nodeLabels gpu=h100): reservations are guarantees and must exist on the nodes Kueue places "
        "their pods on")
    assert v.fix == ("lower the nominalQuota of 'nvidia.com/gpu' in flavor 'h100' to at most 4 in total over every "
                     "cohort, or add nodes that carry its nodeLabels")


def test_queues_in_no_cohort_and_cohort_objects_count_with_every_tree():
    base = {"f": flavor("h100", H100), "solo": queue("solo-cq", {"h100": 2}),
            "tree": queue("t-cq", {"h100": 1}, "child"),
            "child": queue("child", {"h100": 1}, kind="Cohort", parent="root"),
            "root": queue("root", {"h100": 1}, kind="Cohort")}
    assert judge(base, [pool("h100", 5, H100)]) == []
    [v] = judge(base, [pool("h100", 4, H100)])
    assert "sums to 5 of 'nvidia.com/gpu' (ClusterQueue 'solo-cq' 2, ClusterQueue 't-cq' 1, Cohort 'child' 1, " \
           "Cohort 'root' 1)" in v.rule
    # a Cohort object alone, with no ClusterQueue, still reserves its quota
    [v] = judge({"f": flavor("h100", H100), "c": queue("c", {"h100": 9}, kind="Cohort")}, [pool("h100", 8, H100)])
    assert v.subject.kind == "Cohort" and "sums to 9" in v.rule


def test_a_flavor_whose_node_labels_no_pool_carries_has_no_capacity():
    for labels, pools in [(H100, [pool("a100", 8, A100)]),  # another value
                          ({"gpu": "h100", "zone": "b"}, [pool("h100", 8, {"gpu": "h100", "zone": "a"})]),  # one of two
                          (H100, [pool("h100", 8, {})]),  # a pool without labels
                          ({"gpu": "h100", "x": "y"}, [pool("h100", 8, H100)])]:  # a pool with only some of them
        [v] = judge({"f": flavor("h100", labels), "q": queue("q", {"h100": 1})}, pools)
        assert (v.subject.kind, v.subject.name, v.field, v.value) == ("ResourceFlavor", "h100", "spec.nodeLabels",
                                                                      labels)
        assert "which no node pool carries" in v.rule and "has no nodes" in v.rule
        assert v.fix.startswith(f"put the labels {', '.join(f'{k}={x}' for k, x in labels.items())} on the node pool")


def test_a_pool_counts_where_its_labels_say_not_where_its_name_says():
    # the pool says it is h100, its nodes carry the a100 label: h100 has nothing, a100 has the GPUs
    manifests = {"h": flavor("h100", H100), "a": flavor("a100", A100), "q": queue("q", {"h100": 1, "a100": 4})}
    pools = [pool("p", 4, A100, named="h100")]
    [v] = judge(manifests, pools)
    assert (v.subject.name, v.field) == ("h100", "spec.nodeLabels")
    assert "(node pool 'p' names resourceFlavor 'h100' but lacks these labels: Kueue places pods by labels, not by " \
           "the pool's name)" in v.rule
    # and the a100 quota counts on it: 4 + 1 more is too much
    manifests["q"] = queue("q", {"a100": 5})
    [v] = judge(manifests, pools)
    assert "ResourceFlavor 'a100'" in v.rule and "above the 4 of the nodes it selects (node pool 'p'" in v.rule


def test_flavors_that_select_the_same_nodes_share_them():
    for h_labels, a_labels in [(H100, H100),  # the same labels
                               ({}, H100),  # a flavor without nodeLabels selects every node
                               ({"gpu": "h100"}, {"gpu": "h100", "zone": "a"})]:  # a subset of labels
        manifests = {"h": flavor("h100", h_labels), "a": flavor("a100", a_labels),
                     "x": queue("x-cq", {"h100": 3}, "one"), "y": queue("y-cq", {"a100": 3}, "two")}
        pools = [pool("p", 4, {"gpu": "h100", "zone": "a"})]
        [v] = judge(manifests, pools)
        assert v.rule.startswith("ResourceFlavors 'h100', 'a100' select the same nodes (node pool 'p'; ")
        assert "sums to 6 of 'nvidia.com/gpu' (ClusterQueue 'x-cq' 3 in 'h100', ClusterQueue 'y-cq' 3 in 'a100'), " \
               "above the 4 those nodes have" in v.rule
        assert v.fix == ("lower the nominalQuota of 'nvidia.com/gpu' in flavors 'h100', 'a100' to at most 4 together, "
                         "or give each flavor nodeLabels that select nodes of its own")
        assert judge(manifests, [*pools, pool("q", 2, {"gpu": "h100", "zone": "a"})]) == []


def test_a_shared_flavor_may_fit_by_using_the_nodes_the_other_leaves():
    # every: 5 over both pools; h100: 4 on its own pool. Together 9 > 8, though each fits alone
    manifests = {"e": flavor("every"), "h": flavor("h100", H100), "q": queue("q", {"every": 5, "h100": 4})}
    pools = [pool("h", 4, H100), pool("a", 4, A100)]
    [v] = judge(manifests, pools)
    assert v.rule.startswith("ResourceFlavors 'every', 'h100' select the same nodes (node pools 'h', 'a'")


def test_the_worst_placement_refuses_what_a_cooperative_planner_would_fit():
    """Issue 37 class 2: 'every' (no nodeLabels) over pools h and a, 'h100' over h only, 4 + 4 GPUs on 4 + 4. A
    planner would put every's pods on a; the kube-scheduler may put them on h, and h100's quota then has no GPU."""
    manifests = {"e": flavor("every"), "h": flavor("h100", H100), "q": queue("q", {"every": 4, "h100": 4})}
    pools = [pool("h", 4, H100), pool("a", 4, A100)]
    [v] = judge(manifests, pools)
    assert (v.subject.name, v.field) == ("every", "spec.nodeLabels")
    assert v.rule.startswith("ResourceFlavor 'every' (nodeLabels none: every node) also selects node pool 'h' of "
                             "flavor 'h100'")
    assert "can take 4 of 'nvidia.com/gpu' there, which leaves flavor 'h100' 0 of the 4 it reserves" in v.rule
    assert v.fix == ("give ResourceFlavor 'every' nodeLabels that select none of the nodes of flavor 'h100' (flavors "
                     "must select disjoint nodes), or lower the nominalQuota of 'nvidia.com/gpu' in flavor 'h100' to "
                     "at most 0")
    # disjoint selection is the fix; so is quota the shared nodes hold whatever the other flavor places there
    manifests["e"] = flavor("every", A100)
    assert judge(manifests, pools) == []
    manifests["e"] = flavor("every")
    manifests["q"] = queue("q", {"every": 2, "h100": 2})
    assert judge(manifests, pools) == []


def test_independent_shortfalls_are_named_each_on_its_own():
    manifests = {"h": flavor("h100", H100), "a": flavor("a100", A100),
                 "q": queue("q", {"h100": 3}), "r": queue("r", {"a100": 5})}
    found = judge(manifests, [pool("h", 2, H100), pool("a", 4, A100)])
    assert [(v.subject.name, "'h100'" in v.rule, "'a100'" in v.rule) for v in found] == [
        ("q", True, False), ("r", False, True)]


def test_a_resource_no_selected_pool_declares_fails():
    manifests = {"f": flavor("h100", H100), "q": queue("q", {"h100": 1})}
    [v] = judge(manifests, [{"name": "h", "labels": H100, "capacity": {"cpu": "8"}}])
    assert v.rule == ("ResourceFlavor 'h100' reserves 1 of 'nvidia.com/gpu' in nominalQuota (ClusterQueue 'q' 1) but "
                      "none of the nodes it selects (node pool 'h') declares 'nvidia.com/gpu'")
    assert v.fix == "add 'nvidia.com/gpu' to the capacity of node pool 'h' (kueue-cohorts:nodePools), or drop the " \
                    "resource from the quota"


def test_a_quota_of_an_undefined_flavor_fails_closed_unless_the_config_gives_its_labels():
    manifests = {"q": queue("q", {"h100": 1})}
    [v] = judge(manifests, [pool("h", 4, H100)])
    assert (v.subject.name, v.field, v.value) == ("q", "spec.resourceGroups[0].flavors[0].name", "h100")
    assert v.fix == ("declare the ResourceFlavor 'h100' in the stack, or give its nodeLabels in the "
                     "cohort-nominal-within-capacity config flavorNodeLabels")
    assert judge(manifests, [pool("h", 4, H100)], flavorNodeLabels={"h100": H100}) == []
    assert len(judge(manifests, [pool("h", 4, H100)], flavorNodeLabels={"h100": A100})) == 1


def test_unknown_node_labels_or_quota_fail_closed():
    manifests = {"f": flavor("h100", {"gpu": UNKNOWN}), "q": queue("q", {"h100": 1})}
    [v] = judge(manifests, [pool("h", 4, H100)])
    assert v.field == "spec.nodeLabels.gpu" and "unknown at preview" in v.message
    manifests = {"f": flavor("h100", H100), "q": queue("q", {"h100": 1})}
    manifests["q"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = UNKNOWN
    [v] = judge(manifests, [pool("h", 4, H100)])
    assert v.field.endswith("nominalQuota") and "unknown at preview" in v.message


def test_pools_without_labels_in_the_pack_config_cannot_serve_a_labelled_flavor():
    manifests = {"f": flavor("h100", H100), "q": queue("q", {"h100": 1})}
    [v] = judge(manifests, [pool("h", 4, None)])
    assert (v.subject.name, v.field) == ("h100", "spec.nodeLabels")
    assert "the policy config gives node pool 'h' (nodePools[0]) without node labels" in v.rule
    # the legacy total capacity is such a pool; a flavor without nodeLabels is judged against it
    [v] = check_capacity_options(stack(manifests), {"capacity": {GPU: "4"}})
    assert "node pool 'capacity' (capacity) without node labels" in v.rule
    plain = {"f": flavor("any"), "q": queue("q", {"any": 5})}
    [v] = check_capacity_options(stack(plain), {"capacity": {GPU: "4"}})
    assert "above the 4 of the nodes it selects (node pool 'capacity'; nodeLabels none: every node)" in v.rule
    assert "or add nodes" in v.fix and "nodeLabels" not in v.fix


def test_legacy_flavor_capacity_and_unreadable_pools_fail_closed():
    manifests = {"f": flavor("h100", H100), "q": queue("q", {"h100": 1})}
    found = check_capacity_options(stack(manifests), {"nodePools": [pool("h", 4, H100)],
                                                      "flavorCapacity": {"h100": {GPU: "4"}}})
    assert messages(found) == [
        "The cohort-nominal-within-capacity policy config is unusable: flavorCapacity gives capacity by ResourceFlavor "
        "name (h100) without node labels, while Kueue places a flavor's pods by its nodeLabels, so the nodes each "
        "flavor may use cannot be told; move them to nodePools with their labels; the quota it would hold fails. "
        "Write each pool as {name, count, labels, capacity}."]
    found = judge(manifests, [{"name": "h", "labels": H100, "capacity": {GPU: "lots"}}])
    assert [v.rule for v in found] == ["nodePools[0].capacity['nvidia.com/gpu'] is 'lots', not a non-negative "
                                       "Kubernetes quantity",
                                       "ResourceFlavor 'h100' reserves 1 of 'nvidia.com/gpu' in nominalQuota "
                                       "(ClusterQueue 'q' 1) but none of the nodes it selects (node pool 'h') declares "
                                       "'nvidia.com/gpu'"]


def test_no_nodes_at_all_fails_every_quota_and_zero_quota_needs_none():
    [v] = judge({"f": flavor("any"), "q": queue("q", {"any": 1})}, [])
    assert v.rule.startswith("no node pool is declared, so the 1 of 'nvidia.com/gpu' ResourceFlavor 'any' holds")
    assert judge({"f": flavor("any"), "q": queue("q", {"any": 0})}, []) == []


def test_the_compliant_fixture_fits_its_node():
    pools = [{"name": "gpu", "labels": {}, "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpualloc": "1",
                                                        "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"}}]
    assert judge(compliant(), pools) == []
    manifests = compliant()
    manifests["training-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][4]["nominalQuota"] = "1Ki"
    [v] = judge(manifests, pools)
    assert "sums to 3Ki of 'nvidia.com/gpumem' (ClusterQueue 'c12-inference-cq' 2048, ClusterQueue " \
           "'c12-training-cq' 1Ki), above the 2Ki of the nodes" in v.rule


KEYS = ("gpu", "zone")


VALUES = ("a", "b")


labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)


@st.composite
def clusters(draw):
    flavors = {f"f{i}": draw(labels_st) for i in range(draw(st.integers(1, 4)))}
    pools = [pool(f"p{i}", draw(st.integers(0, 4)), draw(labels_st), count=draw(st.integers(1, 3)),
                  named=draw(st.sampled_from([None, *flavors])))
             for i in range(draw(st.integers(0, 4)))]
    owners = {}
    for i in range(draw(st.integers(1, 6))):
        quota = draw(st.dictionaries(st.sampled_from(sorted(flavors)), st.integers(0, 6), min_size=1))
        kind = draw(st.sampled_from(["ClusterQueue", "ClusterQueue", "Cohort"]))
        owners[f"o{i}"] = queue(f"o{i}", quota, draw(st.sampled_from([None, "c1", "c2"])) if kind == "ClusterQueue"
                                else None, kind=kind, parent=draw(st.sampled_from([None, "c1"])) if kind == "Cohort"
                                else None)
    return flavors, pools, owners


def hall_holds(flavors: dict, pools: list, owners: dict) -> bool:
    """Every set of flavors with quota fits the pools its flavors select together (a pool is selected when it
    carries every nodeLabel of the flavor)."""
    demand = {f: Decimal(0) for f in flavors}
    for owner in owners.values():
        for entry in owner["spec"]["resourceGroups"][0]["flavors"]:
            demand[entry["name"]] += Decimal(entry["resources"][0]["nominalQuota"])
    selected = {f: {i for i, p in enumerate(pools) if all(p["labels"].get(k) == v for k, v in labels.items())}
                for f, labels in flavors.items()}
    wanting = [f for f in flavors if demand[f] > 0]
    for size in range(1, len(wanting) + 1):
        for group in combinations(wanting, size):
            nodes = set().union(*(selected[f] for f in group))
            if sum(demand[f] for f in group) > sum(pools[i]["count"] * int(pools[i]["capacity"][GPU]) for i in nodes):
                return False
    return True


def worst_placement_holds(flavors: dict, pools: list, owners: dict) -> bool:
    """Each flavor's quota fits its pools minus the most the other flavors' quota can place there, that most computed
    by the deficiency form of Hall's theorem (not a max flow): min over sets T of the other flavors of (their quota
    outside T + the capacity of the flavor's pools that T selects)."""
    demand = {f: Decimal(0) for f in flavors}
    for owner in owners.values():
        for entry in owner["spec"]["resourceGroups"][0]["flavors"]:
            demand[entry["name"]] += Decimal(entry["resources"][0]["nominalQuota"])
    selected = {f: {i for i, p in enumerate(pools) if all(p["labels"].get(k) == v for k, v in labels.items())}
                for f, labels in flavors.items()}

    def cap(nodes: set) -> int:
        return sum(pools[i]["count"] * int(pools[i]["capacity"][GPU]) for i in nodes)

    for f in flavors:
        if demand[f] == 0:
            continue
        mine = selected[f]
        others = [g for g in flavors if g != f and demand[g] > 0 and selected[g] & mine]
        taken = min(sum((demand[g] for g in others if g not in group), Decimal(0))
                    + cap(set().union(*(selected[g] & mine for g in group)) if group else set())
                    for size in range(len(others) + 1) for group in combinations(others, size))
        if demand[f] + taken > cap(mine):
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_the_verdict_is_halls_condition_and_the_worst_placement(cluster):
    """Hall's condition (the quota can be placed at all) and, per flavor, the worst placement the kube-scheduler may
    choose for the other flavors' pods (issue 37 class 2)."""
    flavors, pools, owners = cluster
    manifests = {**{f"rf-{f}": flavor(f, labels) for f, labels in flavors.items()}, **owners}
    found = judge(manifests, pools)
    holds = hall_holds(flavors, pools, owners) and worst_placement_holds(flavors, pools, owners)
    assert (found == []) == holds, messages(found)
    assert all(v.policy == POLICY and v.rule and v.fix for v in found)


def topology(name: str, *levels: str) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": level} for level in levels]}}


def test_a_topology_aware_flavor_selects_only_nodes_with_every_level_label():
    tas = flavor("h100", H100)
    tas["spec"]["topologyName"] = "default"
    manifests = {"f": tas, "t": topology("default", "cloud/block", "kubernetes.io/hostname"),
                 "q": queue("q", {"h100": 4})}
    rack = {"gpu": "h100", "cloud/block": "b1", "kubernetes.io/hostname": "n1"}
    assert judge(manifests, [pool("racked", 4, rack)]) == []
    [v] = judge(manifests, [pool("loose", 4, {"gpu": "h100", "kubernetes.io/hostname": "n1"})])
    assert (v.subject.name, v.field) == ("h100", "spec.nodeLabels")
    assert "selects nodes labelled gpu=h100 with the Topology level labels cloud/block, kubernetes.io/hostname, " \
           "which no node pool carries" in v.rule
    # only the racked pool counts: 4 on it, the loose pool's 4 do not help a quota of 6
    manifests["q"] = queue("q", {"h100": 6})
    [v] = judge(manifests, [pool("racked", 4, rack), pool("loose", 4, H100)])
    assert "above the 4 of the nodes it selects (node pool 'racked'" in v.rule
    del manifests["t"]
    [v] = judge(manifests, [pool("racked", 4, rack)])
    assert (v.field, v.value) == ("spec.topologyName", "default")
    assert v.fix == "declare the Topology 'default' in the stack, or drop topologyName"


def _leaves(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))
    else:
        yield path


def _replaced(manifest: dict, path: tuple) -> dict:
    import copy

    out = copy.deepcopy(manifest)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = UNKNOWN
    return out


READ = {  # the fields the rule reads, and so must report when unknown
    ("f", ("metadata", "name")), ("f", ("spec", "nodeLabels", "gpu")), ("f", ("spec", "topologyName")),
    ("t", ("spec", "levels", 0, "nodeLabel")),
    ("q", ("metadata", "name")), ("q", ("spec", "resourceGroups", 0, "flavors", 0, "name")),
    ("q", ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "name")),
    ("q", ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota")),
    ("c", ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota")),
}


def test_every_unknown_value_fails_closed_and_never_raises():
    tas = flavor("h100", H100)
    tas["spec"]["topologyName"] = "default"
    base = {"f": tas, "t": topology("default", "kubernetes.io/hostname"), "q": queue("q", {"h100": 2}, "one"),
            "c": queue("one", {"h100": 1}, kind="Cohort")}
    pools = [pool("h", 4, {"gpu": "h100", "kubernetes.io/hostname": "n1"})]
    assert judge(base, pools) == []
    reported = set()
    for name, manifest in base.items():
        for path in _leaves(manifest):
            found = judge({**base, name: _replaced(manifest, path)}, pools)  # never raises
            if any("unknown at preview" in v.message for v in found):
                reported.add((name, path))
    assert READ <= reported, READ - reported


SEVEN = {f"q{i}": queue(f"q{i}-cq", {"h100": 1}, "c") for i in range(7)}


RACK = ("cloud/block", "kubernetes.io/hostname")


def _one(manifests, pools):
    found = judge(manifests, pools)
    assert len(found) == 1, found
    return found[0]


def test_over_capacity_with_more_holders_than_named():
    v = _one({"f": flavor("h100", H100), **SEVEN}, [pool("h100", 4, H100)])
    assert v.rule == (
        "the nominalQuota of ResourceFlavor 'h100' over every ClusterQueue and Cohort of the stack sums to 7 of "
        "'nvidia.com/gpu' (ClusterQueue 'q0-cq' 1, ClusterQueue 'q1-cq' 1, ClusterQueue 'q2-cq' 1, ClusterQueue "
        "'q3-cq' 1, ClusterQueue 'q4-cq' 1 and 2 more), above the 4 of the nodes it selects (node pool 'h100'; "
        "nodeLabels gpu=h100): reservations are guarantees and must exist on the nodes Kueue places their pods on")
    assert v.fix == ("lower the nominalQuota of 'nvidia.com/gpu' in flavor 'h100' to at most 4 in total over every "
                     "cohort, or add nodes that carry its nodeLabels")


def test_no_nodes_with_more_holders_than_named_counts_the_rest():
    v = _one({"f": flavor("h100", H100), **SEVEN}, [pool("a100", 4, A100)])
    assert (v.field, v.value) == ("spec.nodeLabels", {"gpu": "h100"})
    assert v.rule == (
        "ResourceFlavor 'h100' selects nodes labelled gpu=h100, which no node pool carries, so the 7 of "
        "'nvidia.com/gpu' it holds in nominalQuota (ClusterQueue 'q0-cq', ClusterQueue 'q1-cq', ClusterQueue "
        "'q2-cq', ClusterQueue 'q3-cq', ClusterQueue 'q4-cq' and 2 more) has no nodes")
    assert v.fix == ("put the labels gpu=h100 on the node pool of those nodes (kueue-cohorts:nodePools[].labels), or "
                     "set the flavor's nodeLabels to labels its nodes carry")


def test_no_nodes_with_exactly_the_named_holders_counts_none():
    five = {k: v for k, v in SEVEN.items() if k not in ("q5", "q6")}
    v = _one({"f": flavor("h100", H100), **five}, [pool("a100", 4, A100)])
    assert v.rule.endswith("(ClusterQueue 'q0-cq', ClusterQueue 'q1-cq', ClusterQueue 'q2-cq', ClusterQueue 'q3-cq', "
                           "ClusterQueue 'q4-cq') has no nodes")


def test_a_topology_aware_flavor_without_node_labels_asks_for_the_level_labels():
    tas = flavor("tas")
    tas["spec"]["topologyName"] = "default"
    manifests = {"t": topology("default", *RACK), "f": tas, "a": queue("a-cq", {"tas": 2}, "c")}
    assert judge(manifests, [pool("p", 4, {"cloud/block": "b1", "kubernetes.io/hostname": "n"})]) == []
    v = _one(manifests, [pool("p", 4, {"gpu": "x", "cloud/block": "b1"})])
    assert v.rule == (
        "ResourceFlavor 'tas' selects the nodes with the Topology level labels cloud/block, kubernetes.io/hostname, "
        "which no node pool carries, so the 2 of 'nvidia.com/gpu' it holds in nominalQuota (ClusterQueue 'a-cq') "
        "has no nodes")
    assert v.fix == ("put the Topology level labels cloud/block, kubernetes.io/hostname on the node pool of those "
                     "nodes (kueue-cohorts:nodePools[].labels), or set the flavor's nodeLabels to labels its nodes "
                     "carry")


def test_a_topology_aware_flavor_with_node_labels_asks_for_both():
    tas = flavor("h100", H100)
    tas["spec"]["topologyName"] = "default"
    manifests = {"t": topology("default", *RACK), "f": tas, "a": queue("a-cq", {"h100": 2}, "c")}
    v = _one(manifests, [pool("p", 4, H100)])
    assert v.rule == (
        "ResourceFlavor 'h100' selects nodes labelled gpu=h100 with the Topology level labels cloud/block, "
        "kubernetes.io/hostname, which no node pool carries, so the 2 of 'nvidia.com/gpu' it holds in nominalQuota "
        "(ClusterQueue 'a-cq') has no nodes")
    assert v.fix == ("put the labels gpu=h100 and the Topology level labels cloud/block, kubernetes.io/hostname on "
                     "the node pool of those nodes (kueue-cohorts:nodePools[].labels), or set the flavor's "
                     "nodeLabels to labels its nodes carry")


def test_pools_without_labels_make_a_labelled_flavor_undecidable():
    v = _one({"f": flavor("h100", H100), "a": queue("a-cq", {"h100": 2}, "c")}, [pool("p", 4, None)])
    assert v.rule == (
        "ResourceFlavor 'h100' selects nodes labelled gpu=h100, and the policy config gives node pool 'p' "
        "(nodePools[0]) without node labels, so whether its 2 of 'nvidia.com/gpu' in nominalQuota has nodes cannot "
        "be decided")
    assert v.fix == ("describe the nodes in the cohort-nominal-within-capacity config nodePools with their labels "
                     "(kueue-cohorts validate --stack NAME --pack-config --write generates them from the "
                     "stack file)")


MALFORMED = ["NaN", "-NaN", "sNaN", "Infinity", "-Infinity", "inf", "1e999999", "1e9999999", "9Ei"]


@pytest.mark.timeout(10)  # a hang guard, not a timing assertion
@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_nominal_quota_is_reported_by_the_capacity_policy(raw):
    m = compliant()
    m["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = raw
    found = check_capacity_options(stack(m), {"capacity": DEV_CAPACITY})
    check_single_layout_per_cohort(stack(m))
    [v] = found
    assert (v.subject.name, v.field, v.policy) == (
        "c12-inference-cq",
        "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",
        "cohort-nominal-within-capacity",
    )
    assert f"nominalQuota {raw!r}, which is not a Kubernetes quantity" in v.message


@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_capacity_is_reported(raw):
    found = check_capacity_options(stack(compliant()), {"capacity": dict(DEV_CAPACITY, cpu=raw)})
    assert any(f"capacity['cpu'] is {raw!r}, not a non-negative Kubernetes quantity" in v.message for v in found)
    found = check_capacity_options(stack(compliant()), {"nodePools": [{"name": "n", "labels": {},
                                                                       "capacity": dict(DEV_CAPACITY, cpu=raw)}]})
    assert any(f"nodePools[0].capacity['cpu'] is {raw!r}, not a non-negative" in v.message for v in found)
